// correctness.mjs -- browser tests of the page's correctness (issue 15):
// answers to the terminal's queries leave only the active tab and never
// for replayed output; one tab sets the size; keys arrive once while
// ptyd.fcgi stands still; the status line tells a dead link, a buffering
// proxy and an exit; Unicode 11 widths; a layout that clips no row.
//
// Owns: these tests.  Does not own: the runner, the stacks, the helpers
// (run.mjs passes them in as `h`).

import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

// Input requests a page sends, with their data, in order.
function recordInput(page) {
	const sent = [];
	page.on('request', (r) => {
		if (r.method() === 'POST' && r.url().endsWith('/api/terminal/input')) {
			try {
				sent.push(JSON.parse(r.postData()));
			} catch (e) {
				sent.push({ data: '' });
			}
		}
	});
	return sent;
}

// A query the terminal must answer: device attributes (xterm.js says
// ESC [ ? 1 ; 2 c).  The shell reads the answer up to its final `c` and
// prints it, so a live answer shows as "da:[?1;2".
const DA_CMD = 'printf \'\\e[c\'; read -rs -d c -t 5 r; echo "da:${r:1}"';
const DA_REPLY = '\u001b[?1;2c';
const answers = (sent) => sent.filter((s) => (s.data || '').includes(DA_REPLY)).length;

// ptyd.fcgi and the processes it forked for streams: its own process group.
function fcgiGroup(stack) {
	return Number(fs.readFileSync(path.join(stack.state, 'run', 'fcgi.pid'), 'utf8'));
}

export function correctnessTests(test, h) {
	test('a reload never types the replayed queries\' answers into the shell', async ({ ctx, errors }) => {
		const url = `${h.main().base}?session=${h.newSid('replay')}`;
		const page = await h.openPage(ctx, errors, url);
		const before = recordInput(page);
		await h.type(page, DA_CMD);
		await h.waitLine(page, 'da:[?1;2');
		if (answers(before) !== 1)
			throw new Error(`the live query was answered ${answers(before)} times, not once`);
		// The backlog now holds the query: a reload replays it.
		await page.reload();
		const after = recordInput(page);
		await h.ready(page);
		await new Promise((r) => setTimeout(r, 1500));
		if (after.length !== 0)
			throw new Error(`the reloaded page typed ${JSON.stringify(after.map((s) => s.data))}`);
		await h.type(page, 'echo after-replay');
		await h.waitLine(page, 'after-replay');
		if (after.some((s) => (s.data || '').includes('\u001b[')))
			throw new Error(`an answer was typed: ${JSON.stringify(after.map((s) => s.data))}`);
	});

	test('a reload inside a full-screen program attaches in one screen, the shell behind it', async ({ ctx, errors }) => {
		const url = `${h.main().base}?session=${h.newSid('screen')}`;
		const page = await h.openPage(ctx, errors, url);
		await h.type(page, 'echo before-$((1+1))');
		await h.waitLine(page, 'before-2');
		await h.type(page, 'printf \'\\e[?1049h\\e[2J\\e[5;3Hfull-%s\\e[H\' $((6*7)); read -rsn1; printf \'\\e[?1049l\'');
		await h.waitLine(page, 'full-42');
		const streams = [];
		page.on('request', (r) => r.url().includes('/api/terminal/output') && streams.push(r.url()));
		await page.reload();
		await page.waitForSelector('#status[data-kind="connected"]', { timeout: 30000 });
		await h.waitLine(page, 'full-42');
		if (!/[?&]attach=screen/.test(streams[0] || '') || /last_event_id/.test(streams[0]))
			throw new Error(`the reloaded page asked for ${streams[0]}`);
		if (await page.evaluate(() => window.ptyd.term.buffer.active.type) !== 'alternate')
			throw new Error('the redraw is not on the alternate screen');
		// Leaving the program shows the shell's screen behind it.
		await page.evaluate(() => window.ptyd.term.focus());
		await page.keyboard.press('q');
		await h.waitLine(page, 'before-2');
		if (await page.evaluate(() => window.ptyd.term.buffer.active.type) !== 'normal')
			throw new Error('still on the alternate screen');
	});

	test('with two tabs only the active one answers queries and sets the size', async ({ browser, errors }) => {
		// Two windows of one browser (one context: they share the
		// BroadcastChannel), of different sizes.
		const ctx = await browser.newContext({ viewport: { width: 1000, height: 600 } });
		try {
			const url = `${h.main().base}?session=${h.newSid('twotabs')}`;
			const a = await h.openPage(ctx, errors, url);
			const b = await h.openPage(ctx, errors, url);
			await b.setViewportSize({ width: 700, height: 420 });
			const sentA = recordInput(a);
			const sentB = recordInput(b);
			await h.type(a, DA_CMD);        // typing makes A the active tab
			await h.waitLine(a, 'da:[?1;2');
			await h.waitLine(b, 'da:[?1;2');
			await new Promise((r) => setTimeout(r, 500));
			if (answers(sentA) !== 1 || answers(sentB) !== 0)
				throw new Error(`answers: tab A ${answers(sentA)}, tab B ${answers(sentB)} (want 1 and 0)`);
			if (!await a.evaluate(() => window.ptyd.active) || await b.evaluate(() => window.ptyd.active))
				throw new Error('tab A should be the active one');
			// A set the size: the shell has A's, and B shows it.
			const sizeA = await a.evaluate(() => [window.ptyd.term.rows, window.ptyd.term.cols]);
			await h.type(a, 'stty size');
			await h.waitLine(a, `${sizeA[0]} ${sizeA[1]}`);
			await h.poll(() => b.evaluate((s) => window.ptyd.term.rows === s[0] && window.ptyd.term.cols === s[1], sizeA),
			    'tab B to show tab A\'s size', 5000);
			// Focusing B (a click in its terminal) takes the size back.
			await b.bringToFront();
			await b.click('#term');
			const sizeB = await h.poll(() => b.evaluate(() => {
				const s = window.ptyd.sentSize;
				const t = window.ptyd.term;
				return window.ptyd.active && s && s.rows === t.rows && s.cols === t.cols ? [t.rows, t.cols] : null;
			}), 'tab B to send its size', 5000);
			if (sizeB[0] === sizeA[0] && sizeB[1] === sizeA[1])
				throw new Error('the two tabs have the same size: the test shows nothing');
			await h.type(b, 'stty size');
			await h.waitLine(b, `${sizeB[0]} ${sizeB[1]}`);
			if (await a.evaluate(() => window.ptyd.active))
				throw new Error('tab A is still active after B took over');
			const resizesA = [];
			a.on('request', (r) => r.url().endsWith('/resize') && resizesA.push(r));
			await a.setViewportSize({ width: 900, height: 500 });
			await new Promise((r) => setTimeout(r, 600));
			if (resizesA.length !== 0)
				throw new Error('an inactive tab sent a resize');
		} finally {
			await ctx.close();
		}
	});

	test('ptyd.fcgi stopped: the page says so within 10 s, and keys typed meanwhile arrive once', async ({ ctx, errors }) => {
		const page = await h.openPage(ctx, errors, `${h.main().base}?session=${h.newSid('stop')}`);
		await page.evaluate(() => window.ptyd.term.focus());
		await page.keyboard.type('echo stop-');
		await h.poll(async () => (await h.screenLines(page)).some((l) => l.includes('echo stop-')),
		    'the first keys echoed');
		const pg = fcgiGroup(h.main());
		const t0 = Date.now();
		process.kill(-pg, 'SIGSTOP');
		let saidAt = 0;
		let said = '';
		try {
			await page.keyboard.type('xyz');
			await page.keyboard.press('Enter');
			await h.poll(async () => (await page.evaluate(() => window.ptyd.status)) !== 'connected',
			    'the status to leave "connected"', 12000);
			saidAt = Date.now() - t0;
			said = await h.statusText(page);
			await h.poll(async () => /unreachable/.test(await h.statusText(page)),
			    'the status "server unreachable"', 15000);
		} finally {
			process.kill(-pg, 'SIGCONT');
		}
		console.log(`# ${saidAt} ms after SIGSTOP the status said "${said}"`);
		if (saidAt > 10000)
			throw new Error(`the page took ${saidAt} ms to notice`);
		await page.waitForSelector('#status[data-kind="connected"]', { timeout: 20000 });
		await h.waitLine(page, 'stop-xyz', 30000);
		await h.type(page, 'echo after-stop');
		await h.waitLine(page, 'after-stop');
		const lines = await h.screenLines(page);
		if (lines.filter((l) => l.trim() === 'stop-xyz').length !== 1 || lines.some((l) => /xyzxyz|xyz: command not found/.test(l)))
			throw new Error(`typed more or less than once:\n${lines.filter((l) => l.trim()).join('\n')}`);
		for (let i = errors.length - 1; i >= 0; i--) {
			if (/status of 50[234]|net::ERR_/.test(errors[i]))
				console.log(`# expected: ${errors.splice(i, 1)[0]}`);
		}
	});

	test('a proxy that buffers the stream is named in the status line', async ({ ctx, errors }) => {
		// Between the browser and nginx: everything passes, except that
		// the output stream's body is held back (as proxy_buffering on).
		const up = new URL(h.main().base);
		const held = [];
		const proxy = http.createServer((req, res) => {
			const preq = http.request({ host: up.hostname, port: up.port, path: req.url,
				method: req.method, headers: req.headers }, (pres) => {
				res.writeHead(pres.statusCode, pres.headers);
				if (req.url.includes('/api/terminal/output')) {
					res.flushHeaders();
					pres.on('data', (c) => held.push(c));
					req.on('close', () => pres.destroy());
				} else {
					pres.pipe(res);
				}
			});
			preq.on('error', () => res.destroy());
			req.pipe(preq);
		});
		await new Promise((r) => proxy.listen(0, '127.0.0.1', r));
		try {
			const page = h.watchPage(await ctx.newPage(), errors);
			await page.goto(`http://127.0.0.1:${proxy.address().port}/?session=${h.newSid('buffered')}`);
			await h.poll(async () => (await page.evaluate(() => window.ptyd && window.ptyd.status)) === 'buffered',
			    'the status "buffered"', 20000);
			const text = await h.statusText(page);
			if (!/buffers the stream/.test(text))
				throw new Error(`status: ${text}`);
		} finally {
			proxy.closeAllConnections();
			proxy.close();
		}
		for (let i = errors.length - 1; i >= 0; i--) {
			if (/net::ERR_/.test(errors[i]))
				errors.splice(i, 1);
		}
	});

	test('a flood is read only as fast as xterm parses it: nothing thrown, at most 256 Ki units held plus one event', async ({ ctx, errors }) => {
		// The page wrote all it read to xterm, which holds what it has
		// not parsed and throws it away past 50 MB ("write data
		// discarded"): `yes` through a fast stack to a slow renderer
		// lost output and threw in the page.  Now the page stops
		// reading past 256 Ki units unparsed and the server keeps the rest.
		const page = await h.openPage(ctx, errors, `${h.main().base}?session=${h.newSid('flood')}`);
		// yes killed by timeout may leave its last line half written.
		await h.type(page, 'timeout 5 yes; echo; echo flood-done');
		await h.waitLine(page, 'flood-done', 60000);
		const max = await page.evaluate(() => window.ptyd.unparsedMax);
		console.log(`# the most xterm held unparsed during the flood: ${max} UTF-16 units`);
		// 256 Ki units, and one event past it at most.
		if (!(max > 0 && max <= (1 << 18) + (1 << 17)))
			throw new Error(`xterm held ${max} units unparsed`);
	});

	test('exit 0 says "ended (exit 0)"', async ({ ctx, errors }) => {
		const page = await h.openPage(ctx, errors, `${h.main().base}?session=${h.newSid('exit0')}`);
		await h.type(page, 'exit');
		await h.poll(async () => (await h.statusText(page)) === 'ended (exit 0)', 'status "ended (exit 0)"');
	});

	test('emoji and CJK take two cells (Unicode 11)', async ({ ctx, errors }) => {
		const page = await h.openPage(ctx, errors, `${h.main().base}?session=${h.newSid('wide')}`);
		await h.type(page, 'printf "W:\\xf0\\x9f\\x98\\x80|\\xe4\\xb8\\xad|\\xf0\\x9f\\xa5\\xb3|x\\n"');
		await h.waitLine(page, 'W:\u{1F600}|\u4e2d|\u{1F973}|x');
		const cols = await page.evaluate(() => {
			const b = window.ptyd.term.buffer.active;
			for (let y = 0; y < b.length; y++) {
				const line = b.getLine(y);
				if (!line.translateToString(true).startsWith('W:'))
					continue;
				const at = [];
				for (let x = 0; x < line.length; x++) {
					const c = line.getCell(x);
					if (c.getChars() === '|' || c.getChars() === 'x')
						at.push(x);
				}
				return at;
			}
			return null;
		});
		// W : 😀 😀 | 中 中 | 🥳 🥳 | x
		if (JSON.stringify(cols) !== JSON.stringify([4, 7, 10, 11]))
			throw new Error(`the separators are in columns ${JSON.stringify(cols)}, not [4,7,10,11]`);
	});

	test('the layout never clips the bottom row nor scrolls the body', async ({ ctx, errors }) => {
		const page = await h.openPage(ctx, errors, `${h.main().base}?session=${h.newSid('layout')}`);
		for (const vp of [{ width: 1100, height: 680 }, { width: 803, height: 431 }, { width: 640, height: 517 }]) {
			await page.setViewportSize(vp);
			// Past the debounce: the page has fitted and sent its size.
			await new Promise((r) => setTimeout(r, 400));
			await h.poll(() => page.evaluate(() => {
				const s = window.ptyd.sentSize;
				const t = window.ptyd.term;
				return s && s.rows === t.rows && s.cols === t.cols;
			}), 'the size to settle');
			const m = await page.evaluate(() => {
				const box = document.getElementById('term-wrap') || document.getElementById('term');
				const wrap = box.getBoundingClientRect();
				const pad = parseFloat(getComputedStyle(box).paddingBottom);
				const screen = document.querySelector('#term .xterm-screen').getBoundingClientRect();
				return { wrapBottom: wrap.bottom - pad, screenBottom: screen.bottom,
					scroll: document.documentElement.scrollHeight - innerHeight, bodyScroll: document.body.scrollHeight - innerHeight,
					wrapRight: wrap.right, screenRight: screen.right };
			});
			if (m.screenBottom > m.wrapBottom + 0.5 || m.screenRight > m.wrapRight + 0.5 || m.scroll > 0 || m.bodyScroll > 0)
				throw new Error(`at ${vp.width}x${vp.height}: ${JSON.stringify(m)}`);
		}
		await page.setViewportSize({ width: 1100, height: 680 });
	});
}
