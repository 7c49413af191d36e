// features.mjs -- browser tests of what users expect of the page (issue
// 15): copy and paste, find, links, the bell, WebGL and its fallback,
// settings in the address and remembered, the picker, the title, the
// warning on leaving, the phone layout and its key bar, accessibility, the
// built page (compressed, cached, nothing else reachable), and the figures
// (load sizes, key-to-echo latency, frame rate under `yes`).
//
// Owns: these tests and their screenshots.  Does not own: the runner, the
// stacks, the helpers (run.mjs passes them in as `h`).

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

function recordInput(page) {
	const sent = [];
	page.on('request', (r) => {
		if (r.method() === 'POST' && r.url().endsWith('/api/terminal/input'))
			sent.push(JSON.parse(r.postData()).data);
	});
	return sent;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Select the first buffer line that starts with `text` (its first
// text.length cells).
function selectLine(page, text) {
	return page.evaluate((t) => {
		const term = window.ptyd.term;
		const b = term.buffer.active;
		for (let y = 0; y < b.length; y++) {
			if (b.getLine(y).translateToString(true) === t) {
				term.select(0, y, t.length);
				return true;
			}
		}
		return false;
	}, text);
}

async function shot(page, name) {
	fs.mkdirSync(h0.OUT, { recursive: true });
	const file = path.join(h0.OUT, name);
	await page.screenshot({ path: file });
	console.log(`# screenshot: ${file}`);
}

let h0;

export function featureTests(test, h) {
	h0 = h;

	test('copy and paste: Ctrl+Shift+C/V, Ctrl+C copies or interrupts, Ctrl+V pastes bracketed', async ({ browser, errors }) => {
		const ctx = await browser.newContext({ viewport: h.VIEWPORT, permissions: ['clipboard-read', 'clipboard-write'] });
		try {
			const page = await h.openPage(ctx, errors, `${h.main().base}?session=${h.newSid('clip')}`);
			const sent = recordInput(page);
			await h.type(page, 'echo copy-me-42');
			await h.waitLine(page, 'copy-me-42');
			if (!await selectLine(page, 'copy-me-42'))
				throw new Error('no line to select');
			await page.keyboard.press('Control+Shift+C');
			await h.poll(async () => (await page.evaluate(() => navigator.clipboard.readText())) === 'copy-me-42',
			    'the clipboard to hold the selection', 5000);
			// Ctrl+C with a selection copies and sends nothing.
			await page.evaluate(() => navigator.clipboard.writeText(''));
			await selectLine(page, 'copy-me-42');
			const n = sent.length;
			await page.keyboard.press('Control+C');
			await h.poll(async () => (await page.evaluate(() => navigator.clipboard.readText())) === 'copy-me-42',
			    'Ctrl+C to copy the selection', 5000);
			await sleep(300);
			if (sent.slice(n).some((d) => d.includes('\x03')))
				throw new Error('Ctrl+C with a selection sent ^C');
			// Without one it interrupts.
			await h.type(page, 'sleep 30; echo not-interrupted');
			await sleep(300);
			await page.keyboard.press('Control+C');
			await h.type(page, 'echo interrupted-ok');
			await h.waitLine(page, 'interrupted-ok', 5000);
			// Ctrl+V pastes (bracketed, as bash asks), never a raw ^V.
			await page.evaluate(() => navigator.clipboard.writeText('echo pasted-ctrl-v'));
			await page.keyboard.press('Control+V');
			await page.keyboard.press('Enter');
			await h.waitLine(page, 'pasted-ctrl-v');
			await page.evaluate(() => navigator.clipboard.writeText('echo pasted-shift-v'));
			await page.keyboard.press('Control+Shift+V');
			await page.keyboard.press('Enter');
			await h.waitLine(page, 'pasted-shift-v');
			const all = sent.join('');
			if (all.includes('\x16'))
				throw new Error('a raw ^V was sent');
			if (!all.includes('\x1b[200~echo pasted-ctrl-v\x1b[201~'))
				throw new Error(`the paste was not bracketed: ${JSON.stringify(sent.slice(-4))}`);
		} finally {
			await ctx.close();
		}
	});

	test('find (Ctrl+Shift+F), clickable links, the bell, the title', async ({ ctx, errors }) => {
		const page = await h.openPage(ctx, errors, `${h.main().base}?session=${h.newSid('find')}`);
		await h.type(page, 'for i in 1 2 3; do echo needle-$i; done; echo https://example.invalid/x');
		await h.waitLine(page, 'needle-3');
		await page.keyboard.press('Control+Shift+F');
		await page.waitForSelector('#find:not([hidden])', { timeout: 3000 });
		await page.keyboard.type('needle-');
		await h.poll(async () => /of [34]$/.test(await page.textContent('#find-count')), 'the match count', 5000);
		await page.keyboard.press('Escape');
		await page.waitForSelector('#find[hidden]', { state: 'attached', timeout: 3000 });
		// A URL becomes a link: hovering it shows the pointer.
		const pos = await page.evaluate(() => {
			const t = window.ptyd.term;
			const b = t.buffer.active;
			for (let y = b.length - 1; y >= 0; y--) {
				if (b.getLine(y).translateToString(true) === 'https://example.invalid/x') {
					const r = document.querySelector('#term .xterm-screen').getBoundingClientRect();
					return { x: r.left + 5 * (r.width / t.cols), y: r.top + (y - b.viewportY + 0.5) * (r.height / t.rows) };
				}
			}
			return null;
		});
		await page.mouse.move(pos.x, pos.y);
		await h.poll(() => page.evaluate(() => !!document.querySelector('#term .xterm-cursor-pointer')), 'a link under the mouse', 5000);
		// The bell flashes; OSC 2 sets the title.
		await page.evaluate(() => {
			window.bells = 0;
			new MutationObserver(() => {
				if (document.getElementById('term-wrap').classList.contains('bell'))
					window.bells++;
			}).observe(document.getElementById('term-wrap'), { attributes: true });
		});
		await h.type(page, 'printf "\\a\\e]2;my-title-7\\a"; echo bell-done');
		await h.waitLine(page, 'bell-done');
		await h.poll(() => page.evaluate(() => window.bells > 0), 'the visual bell', 3000);
		await h.poll(async () => (await page.title()).startsWith('my-title-7'), 'the title', 3000);
	});

	test('WebGL where it works, the DOM renderer without it or after a lost context', async ({ browser, errors }) => {
		const plain = await browser.newContext({ viewport: h.VIEWPORT });
		const nogl = await browser.newContext({ viewport: h.VIEWPORT });
		await nogl.addInitScript(() => {
			const get = HTMLCanvasElement.prototype.getContext;
			HTMLCanvasElement.prototype.getContext = function (kind, ...rest) {
				return /webgl/.test(kind) ? null : get.call(this, kind, ...rest);
			};
		});
		try {
			const a = await h.openPage(nogl, errors, `${h.main().base}?session=${h.newSid('nogl')}`);
			if (await a.evaluate(() => window.ptyd.renderer) !== 'dom')
				throw new Error('without WebGL the renderer is not the DOM one');
			await h.type(a, 'echo without-webgl');
			await h.waitLine(a, 'without-webgl');
			const b = await h.openPage(plain, errors, `${h.main().base}?session=${h.newSid('gl')}`);
			const r = await b.evaluate(() => window.ptyd.renderer);
			console.log(`# renderer in this chromium: ${r}`);
			if (r === 'webgl') {
				await b.evaluate(() => window.ptyd.loseContext());
				await h.poll(() => b.evaluate(() => window.ptyd.renderer === 'dom'), 'the fallback to DOM', 5000);
				await h.type(b, 'echo after-context-loss');
				await h.waitLine(b, 'after-context-loss');
			}
			for (let i = errors.length - 1; i >= 0; i--) {
				if (/WebGL|GL_|context lost/i.test(errors[i]))
					errors.splice(i, 1);
			}
		} finally {
			await plain.close();
			await nogl.close();
		}
	});

	test('settings: address parameters, Ctrl+= remembered, light and dark screenshots', async ({ ctx, errors }) => {
		const sid = h.newSid('settings');
		const page = await h.openPage(ctx, errors, `${h.main().base}?session=${sid}&fontSize=17&theme=light&cursorStyle=bar&scrollback=500`);
		const o = await page.evaluate(() => {
			const t = window.ptyd.term.options;
			return [t.fontSize, t.cursorStyle, t.scrollback, document.documentElement.dataset.theme, t.minimumContrastRatio];
		});
		if (JSON.stringify(o) !== JSON.stringify([17, 'bar', 500, 'light', 4.5]))
			throw new Error(`options from the address: ${JSON.stringify(o)}`);
		await h.type(page, 'printf "\\e[30mblack\\e[0m \\e[31mred\\e[0m \\e[32mgreen\\e[0m \\e[34mblue\\e[0m 中文 😀\\n"; echo light-shot');
		await h.waitLine(page, 'light-shot');
		await shot(page, 'light.png');
		// Without parameters: Ctrl+= makes it larger, and a reload keeps it.
		await page.goto(`${h.main().base}?session=${sid}&theme=dark`);
		await h.ready(page);
		const before = await page.evaluate(() => window.ptyd.term.options.fontSize);
		await page.evaluate(() => window.ptyd.term.focus());
		await page.keyboard.press('Control+Equal');
		await h.poll(() => page.evaluate((b) => window.ptyd.term.options.fontSize === b + 1, before), 'a larger font', 3000);
		await page.reload();
		await h.ready(page);
		if (await page.evaluate(() => window.ptyd.term.options.fontSize) !== before + 1)
			throw new Error('the font size was not remembered');
		await page.keyboard.press('Control+0');
		await h.type(page, 'printf "\\e[30mblack\\e[0m \\e[31mred\\e[0m \\e[32mgreen\\e[0m \\e[34mblue\\e[0m 中文 😀\\n"; echo dark-shot');
		await h.waitLine(page, 'dark-shot');
		await shot(page, 'dark.png');
		// The settings dialog: every control named, a change applied.
		await page.click('#settings-open');
		await page.selectOption('select[name="cursorStyle"]', 'underline');
		if (await page.evaluate(() => window.ptyd.term.options.cursorStyle) !== 'underline')
			throw new Error('the settings dialog did not apply');
		await page.keyboard.press('Escape');
	});

	test('the picker lists terminals, opens and closes them; a new one in one click', async ({ ctx, errors }) => {
		const other = h.newSid('other');
		const o = await h.openPage(ctx, errors, `${h.main().base}?session=${other}`);
		await o.close();
		const sid = h.newSid('picker');
		const page = await h.openPage(ctx, errors, `${h.main().base}?session=${sid}`);
		await page.click('#terminals');
		await page.waitForSelector(`#picker-rows a[href*="${other}"]`, { timeout: 5000 });
		const row = await page.evaluate((id) => {
			const a = document.querySelector(`#picker-rows a[aria-current="page"]`);
			return a && a.textContent === id ? a.closest('tr').cells[3].textContent : null;
		}, sid);
		if (row !== '1')
			throw new Error(`this terminal's row says ${row} viewers, not 1`);
		await page.click(`button[aria-label="Close ${other}"]`);
		await page.waitForSelector(`#picker-rows a[href*="${other}"]`, { state: 'detached', timeout: 5000 });
		// "New terminal" opens one in this tab.
		await page.click('#picker-new');
		await page.waitForURL((u) => !u.searchParams.get('session').startsWith('bt-'), { timeout: 5000 });
		await h.ready(page);
	});

	test('leaving warns while a full-screen program runs', async ({ ctx, errors }) => {
		const page = await h.openPage(ctx, errors, `${h.main().base}?session=${h.newSid('leave')}`);
		let asked = 0;
		page.on('dialog', (d) => {
			if (d.type() === 'beforeunload')
				asked++;
			d.accept();
		});
		await h.type(page, 'printf "\\e[?1049h"; sleep 30');
		await h.poll(() => page.evaluate(() => window.ptyd.term.buffer.active.type === 'alternate'), 'the alternate screen');
		await page.close({ runBeforeUnload: true });
		await h.poll(async () => asked === 1, 'the beforeunload question', 5000);
	});

	test('phone: key bar with sticky Ctrl, 44 px targets, no horizontal overflow, screenshot', async ({ browser, errors }) => {
		const ctx = await browser.newContext({ viewport: { width: 390, height: 700 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 });
		try {
			const page = await h.openPage(ctx, errors, `${h.main().base}?session=${h.newSid('phone')}`);
			await page.waitForSelector('#keybar:not([hidden])', { timeout: 3000 });
			const small = await page.evaluate(() => [...document.querySelectorAll('#keybar button, .bar button, .bar a')]
				.filter((b) => b.offsetParent !== null)
				.map((b) => [b.textContent, b.getBoundingClientRect()])
				.filter(([, r]) => r.width < 44 || r.height < 44).map(([t]) => t));
			if (small.length > 0)
				throw new Error(`touch targets under 44 px: ${small.join(', ')}`);
			if (await page.evaluate(() => document.documentElement.scrollWidth > innerWidth))
				throw new Error('the page scrolls sideways');
			await page.evaluate(() => window.ptyd.term.focus());
			await page.keyboard.type('echo phone-a ');
			await page.tap('#keybar [data-text="|"]');
			await page.keyboard.type(' tr a b');
			await page.keyboard.press('Enter');
			await h.waitLine(page, 'phone-b');
			await h.type(page, 'sleep 30; echo not-interrupted');
			await sleep(300);
			await page.tap('#keybar [data-mod="ctrl"]');
			if (await page.getAttribute('#keybar [data-mod="ctrl"]', 'aria-pressed') !== 'true')
				throw new Error('Ctrl is not shown held');
			await page.keyboard.type('c');
			await h.type(page, 'echo after-ctrl-c');
			await h.waitLine(page, 'after-ctrl-c', 5000);
			await shot(page, 'phone.png');
		} finally {
			await ctx.close();
		}
	});

	test('accessibility: named controls, keyboard reach, screen reader mode, reduced motion', async ({ browser, errors }) => {
		const ctx = await browser.newContext({ viewport: h.VIEWPORT, reducedMotion: 'reduce' });
		try {
			const page = await h.openPage(ctx, errors, `${h.main().base}?session=${h.newSid('a11y')}&screenReaderMode=1`);
			const unnamed = await page.evaluate(() => [...document.querySelectorAll('button, a, input, select')]
				.filter((e) => {
					const name = e.getAttribute('aria-label') || (e.labels && [...e.labels].map((l) => l.textContent).join('')) ||
					    e.textContent || e.title;
					return !name || !name.trim();
				}).map((e) => e.outerHTML.slice(0, 80)));
			if (unnamed.length > 0)
				throw new Error(`controls without a name:\n${unnamed.join('\n')}`);
			// Tab from the start of the page reaches every control of the bar.
			await page.evaluate(() => document.activeElement.blur());
			const reached = new Set();
			for (let i = 0; i < 9; i++) {
				await page.keyboard.press('Tab');
				reached.add(await page.evaluate(() => document.activeElement.id));
			}
			for (const id of ['session', 'watchers-open', 'find-open',
				'settings-open', 'terminals', 'new', 'close']) {
				if (!reached.has(id))
					throw new Error(`Tab does not reach #${id} (reached ${[...reached].join(' ')})`);
			}
			const o = await page.evaluate(() => [window.ptyd.term.options.screenReaderMode,
				!!document.querySelector('#term .xterm-accessibility'), window.ptyd.term.options.cursorBlink]);
			if (JSON.stringify(o) !== '[true,true,false]')
				throw new Error(`screen reader mode, its tree, cursor blink: ${JSON.stringify(o)}`);
		} finally {
			await ctx.close();
		}
	});

	test('the built page: versioned, gzip, immutable, nothing else reachable; a second load fetches only index.html', async ({ browser, errors }) => {
		const stack = await h.startStack('dist');
		const dist = path.join(stack.state, '..', 'dist');
		const b = spawnSync(path.join(REPO, 'scripts', 'build-web'), [path.join(REPO, 'web'), dist], { encoding: 'utf8' });
		if (b.status !== 0)
			throw new Error(`build-web: ${b.stderr}`);
		// ptyd-page.conf as the operator includes it, mounted at /dist/
		// as its comment says.
		const conf = fs.readFileSync(path.join(REPO, 'nginx', 'ptyd-page.conf.in'), 'utf8')
			.replace('location / {', 'location /dist/ {')
			.replace('root "@pkgdatadir@/web";', `alias "${dist}/";`)
			.replace('location /assets/ {', 'location /dist/assets/ {');
		fs.writeFileSync(path.join(stack.state, 'nginx', 'page.conf'), conf);
		const main = path.join(stack.state, 'nginx', 'nginx.conf');
		fs.writeFileSync(main, fs.readFileSync(main, 'utf8').replace('        location /sub/ {',
		    `        location /dist/api/ { rewrite ^/dist(/.*)$ $1 last; }\n        include "${stack.state}/nginx/page.conf";\n        location /sub/ {`));
		const r = h.runStack(['reload', '--state', stack.state], stack.env);
		if (!r.ok)
			throw new Error(r.out);
		await sleep(500);
		const ctx = await browser.newContext({ viewport: h.VIEWPORT });
		try {
			const page = h.watchPage(await ctx.newPage(), errors);
			const cdp = await ctx.newCDPSession(page);
			await cdp.send('Network.enable');
			const seen = new Map();
			cdp.on('Network.responseReceived', (e) => seen.set(e.requestId, { url: e.response.url, status: e.response.status,
				headers: e.response.headers, cached: e.response.fromDiskCache || e.response.fromMemoryCache, bytes: 0 }));
			cdp.on('Network.loadingFinished', (e) => {
				if (seen.has(e.requestId))
					seen.get(e.requestId).bytes = e.encodedDataLength;
			});
			cdp.on('Network.requestServedFromCache', (e) => seen.set(e.requestId, { url: '?', cached: true, bytes: 0 }));
			const url = `${stack.base}dist/?session=${h.newSid('dist')}`;
			let t0 = Date.now();
			await page.goto(url);
			await h.ready(page);
			const coldMs = Date.now() - t0;
			const page1 = [...seen.values()].filter((s) => !/\/api\//.test(s.url));
			const cold = page1.reduce((n, s) => n + s.bytes, 0);
			for (const s of page1) {
				const hd = Object.fromEntries(Object.entries(s.headers).map(([k, v]) => [k.toLowerCase(), v]));
				if (/\/assets\/.*\.(js|css)$/.test(s.url)) {
					if (hd['content-encoding'] !== 'gzip' || !/immutable/.test(hd['cache-control'] || ''))
						throw new Error(`${s.url}: ${hd['content-encoding']}, ${hd['cache-control']}`);
					if (!/\.[0-9a-f]{12}\.(js|css)$/.test(s.url))
						throw new Error(`${s.url} has no hash in its name`);
				} else if (/\/dist\/(\?|$)/.test(s.url) && hd['cache-control'] !== 'no-cache') {
					throw new Error(`index.html: Cache-Control ${hd['cache-control']}`);
				}
			}
			await h.type(page, 'echo from-the-built-page');
			await h.waitLine(page, 'from-the-built-page');
			seen.clear();
			t0 = Date.now();
			await page.goto(url);
			await h.ready(page);
			const warmMs = Date.now() - t0;
			const page2 = [...seen.values()].filter((s) => !/\/api\//.test(s.url));
			// From the memory or disk cache: nothing on the wire.
			const fetched = page2.filter((s) => !s.cached && s.bytes > 0);
			const warm = fetched.reduce((n, s) => n + s.bytes, 0);
			console.log(`# cold load: ${page1.length} files, ${cold} bytes on the wire, ${coldMs} ms to a prompt`);
			console.log(`# warm load: ${fetched.length} fetched (${fetched.map((s) => `${s.url.replace(stack.base, '')} ${s.status}`).join(', ')}), ${warm} bytes, ${warmMs} ms to a prompt`);
			if (fetched.length !== 1 || !/\/dist\/\?/.test(fetched[0].url))
				throw new Error('the second load fetched more than index.html');
			for (const p of ['dist/package.json', 'dist/node_modules/@xterm/xterm/package.json', 'dist/assets/xterm.js.map', 'package.json', 'node_modules/@xterm/xterm/lib/xterm.mjs.map']) {
				const res = await fetch(stack.base + p);
				if (res.status !== 404)
					throw new Error(`${p} answered ${res.status}`);
			}
		} finally {
			await ctx.close();
		}
	});

	test('figures: key-to-echo latency over 200 keys, frame rate under yes', async ({ ctx, errors }) => {
		const page = await h.openPage(ctx, errors, `${h.main().base}?session=${h.newSid('figures')}`);
		await h.type(page, 'stty -icanon; cat >/dev/null');
		await sleep(500);
		// Each key goes through the page, nginx, ptyd.fcgi, ptyd, the pty's
		// echo and back; timed from term.input to the write that shows it.
		const lat = await page.evaluate(async () => {
			const t = window.ptyd.term;
			const out = [];
			for (let i = 0; i < 200; i++) {
				const x = t.buffer.active.cursorX;
				const y = t.buffer.active.cursorY;
				const t0 = performance.now();
				await new Promise((resolve) => {
					const d = t.onWriteParsed(() => {
						if (t.buffer.active.cursorX !== x || t.buffer.active.cursorY !== y) {
							d.dispose();
							resolve();
						}
					});
					t.input(String.fromCharCode(97 + (i % 26)), true);
				});
				out.push(performance.now() - t0);
			}
			return out.sort((a, b) => a - b);
		});
		const p = (q) => lat[Math.min(lat.length - 1, Math.floor(q * lat.length))].toFixed(1);
		console.log(`# key-to-echo over 200 keys: p50 ${p(0.5)} ms, p99 ${p(0.99)} ms`);
		await page.keyboard.press('Control+C');
		// yes killed by timeout may leave its last line half written (a
		// write cut short by the signal), so a newline goes first.
		await h.type(page, 'stty icanon; timeout 3 yes; echo; echo yes-done');
		const fps = await page.evaluate(() => new Promise((resolve) => {
			let frames = 0;
			const t0 = performance.now();
			const tick = () => {
				frames++;
				if (performance.now() - t0 < 5000)
					requestAnimationFrame(tick);
				else
					resolve(frames / ((performance.now() - t0) / 1000));
			};
			requestAnimationFrame(tick);
		}));
		console.log(`# frame rate while yes runs: ${fps.toFixed(1)} fps (renderer ${await page.evaluate(() => window.ptyd.renderer)})`);
		const t0 = Date.now();
		await h.waitLine(page, 'yes-done', 60000);
		console.log(`# the page caught up ${Date.now() - t0} ms after the frame count`);
	});
}
