// watch.mjs -- browser tests of watching, sharing and replaying (issue
// 34): the owner's watchers list, the share dialog, a view-only page that
// cannot type or resize and keeps no token in its address, one that
// follows its owner's size from the stream, a share that ends, and the
// player of a recording.
//
// Owns: these tests and their stack (two users, alice and bob, behind
// nginx's auth_basic, so ptyd.fcgi runs with auth = front; recording on).
// Does not own: the runner, the helpers (run.mjs passes them in as `h`).

import fs from 'node:fs';
import path from 'node:path';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function shot(h, page, name) {
	fs.mkdirSync(h.OUT, { recursive: true });
	const file = path.join(h.OUT, name);
	await page.screenshot({ path: file });
	console.log(`# screenshot: ${file}`);
}

const ALICE = { username: 'alice', password: 'alice-pw-34' };
const BOB = { username: 'bob', password: 'bob-pw-34' };

let stackP = null;

// The stack these tests share, started by the first that needs it.
function stack(h) {
	if (stackP === null)
		stackP = h.startStack('watch', ['--user', `${ALICE.username}:${ALICE.password}`,
			'--user', `${BOB.username}:${BOB.password}`, '--env', 'PTYD_RECORD=on']);
	return stackP;
}

async function context(browser, h, who) {
	return browser.newContext({ viewport: h.VIEWPORT, httpCredentials: who,
		permissions: ['clipboard-read', 'clipboard-write'] });
}

// The visible rows of a page's terminal, right-trimmed.
function viewport(page) {
	return page.evaluate(() => {
		const t = window.ptyd.term;
		const b = t.buffer.active;
		const rows = [];
		for (let y = 0; y < t.rows; y++) {
			const l = b.getLine(b.viewportY + y);
			rows.push(l ? l.translateToString(true) : '');
		}
		return { cols: t.cols, rows: t.rows, text: rows.join('\n').replace(/\n+$/, '') };
	});
}

// A share of the page's terminal made through its Share dialog: the link.
// The Share dialog, from the watchers' panel.
async function openShare(page) {
	if (await page.evaluate(() => document.getElementById('watchers').hidden))
		await page.click('#watchers-open');
	await page.click('#share-open');
}

async function shareByDialog(page, role, user) {
	await openShare(page);
	await page.selectOption('#share-role', role);
	await page.fill('#share-user', user);
	await page.click('#share-create');
	await page.waitForSelector('#share-result:not([hidden])', { timeout: 10000 });
	const link = await page.inputValue('#share-link');
	if (!/#share=[A-Za-z0-9_-]{43}$/.test(link))
		throw new Error(`the dialog's link is not a share link: ${link}`);
	return link;
}

// Every request a page sends to the API, with its headers.
function recordApi(page) {
	const seen = [];
	page.on('request', (r) => {
		if (r.url().includes('/api/terminal/'))
			seen.push({ url: r.url(), method: r.method(), headers: r.headers() });
	});
	return seen;
}

export function watchTests(test, h) {
	test('watchers: the owner sees bob join through a share and leave', async ({ browser, errors }) => {
		const st = await stack(h);
		const actx = await context(browser, h, ALICE);
		const bctx = await context(browser, h, BOB);
		try {
			const alice = await h.openPage(actx, errors, `${st.base}?session=${h.newSid('watchers')}`);
			await alice.waitForSelector('#watchers-open:not([hidden])', { timeout: 10000 });
			if ((await alice.textContent('#watchers-count')) !== '0')
				throw new Error('someone watches before anyone joined');
			const link = await shareByDialog(alice, 'view', 'bob');
			// The token leaves the DOM when the dialog closes.
			await alice.keyboard.press('Escape');
			await h.poll(() => alice.evaluate(() => !document.getElementById('share').open), 'the dialog to close', 5000);
			// The dialog's close event comes a moment after it closes.
			const token = link.split('#share=')[1];
			await h.poll(async () => (await alice.inputValue('#share-link')) === '' && !(await alice.content()).includes(token),
			    'the share\'s token to leave the page once the dialog closed', 3000);
			const bob = h.watchPage(await bctx.newPage(), errors);
			await bob.goto(link);
			await bob.waitForSelector('#status[data-kind="connected"]', { timeout: 30000 });
			await h.poll(async () => (await alice.textContent('#watchers-count')) === '1', 'the count to say 1', 10000);
			await alice.click('#watchers-open');
			await h.poll(async () => {
				const rows = await alice.$$eval('#watchers-rows tr', (trs) => trs.map((tr) => tr.textContent));
				return rows.some((r) => /^bob · share \d+view/.test(r));
			}, 'bob in the list, view', 5000);
			await shot(h, alice, 'watchers.png');
			// The terminal's size did not change for the panel.
			await bob.close();
			await h.poll(async () => (await alice.textContent('#watchers-count')) === '0', 'the count back to 0', 15000);
			const rows = await alice.$$eval('#watchers-rows tr', (trs) => trs.map((tr) => tr.textContent));
			if (rows.some((r) => r.startsWith('bob')))
				throw new Error(`bob still listed after leaving: ${rows.join(' | ')}`);
			await alice.keyboard.press('Escape');
			await h.poll(() => alice.evaluate(() => document.getElementById('watchers').hidden), 'Escape to close the panel', 5000);
		} finally {
			await actx.close();
			await bctx.close();
		}
	});

	test('a view-only page shows output, sends no input or resize, keeps no token in its address, ends when revoked', async ({ browser, errors }) => {
		const st = await stack(h);
		const actx = await context(browser, h, ALICE);
		const bctx = await context(browser, h, BOB);
		try {
			const alice = await h.openPage(actx, errors, `${st.base}?session=${h.newSid('viewonly')}`);
			await h.type(alice, 'echo before-bob');
			await h.waitLine(alice, 'before-bob');
			const link = await shareByDialog(alice, 'view', 'bob');
			const token = link.split('#share=')[1];
			await alice.keyboard.press('Escape');

			const bob = h.watchPage(await bctx.newPage(), errors);
			const api = recordApi(bob);
			await bob.goto(link);
			await bob.waitForSelector('#status[data-kind="connected"]', { timeout: 30000 });
			await h.waitLine(bob, 'before-bob');
			if (bob.url().includes(token) || (await bob.evaluate(() => location.href)).includes(token))
				throw new Error(`the token is still in the address: ${bob.url()}`);
			if ((await bob.textContent('#badge')).trim() !== 'view only')
				throw new Error('no "view only" badge');
			for (const id of ['#close', '#share-open', '#watchers-open', '#terminals'])
				if (await bob.isVisible(id))
					throw new Error(`${id} is shown on a view-only page`);

			// Typing, pasting and a window resize send nothing and change nothing.
			const before = await viewport(bob);
			await bob.click('#term');
			await bob.keyboard.type('echo typed-by-bob');
			await bob.keyboard.press('Enter');
			await bob.evaluate(() => window.ptyd.term.paste('echo pasted-by-bob\r'));
			await bob.setViewportSize({ width: 700, height: 420 });
			await sleep(1500);
			const sent = api.filter((r) => /\/api\/terminal\/(input|resize|start|close)/.test(r.url));
			if (sent.length > 0)
				throw new Error(`the view-only page sent ${sent.map((r) => r.url).join(', ')}`);
			const after = await viewport(bob);
			if (after.text !== before.text || after.cols !== before.cols || after.rows !== before.rows)
				throw new Error(`the view-only terminal changed:\n${before.text}\n---\n${after.text}`);
			const aliceSees = await h.screenLines(alice);
			if (aliceSees.some((l) => /typed-by-bob|pasted-by-bob/.test(l)))
				throw new Error('bob\'s keys reached the shell');
			// Output still flows to bob.
			await h.type(alice, 'echo after-bob-typed');
			await h.waitLine(bob, 'after-bob-typed');
			await shot(h, bob, 'view-only.png');

			// Every request carried the token in its header, none in its URL.
			for (const r of api) {
				if (r.url.includes(token))
					throw new Error(`a request had the token in its URL: ${r.method} ${r.url}`);
				if (r.headers['ptyd-share'] !== token)
					throw new Error(`a request went without the share's header: ${r.method} ${r.url}`);
			}
			if (!api.some((r) => /\/api\/terminal\/output/.test(r.url)))
				throw new Error('no stream request was seen');
			if (await bob.evaluate((t) => JSON.stringify(localStorage).includes(t) || JSON.stringify(sessionStorage).includes(t), token))
				throw new Error('the token is in the browser\'s storage');

			// Revoked: bob's page says so and asks nothing more.
			await openShare(alice);
			await alice.waitForSelector('#share-rows button', { timeout: 10000 });
			await alice.click('#share-rows button');
			await bob.waitForSelector('#ended:not([hidden])', { timeout: 15000 });
			const text = await bob.textContent('#ended-text');
			if (!/stopped sharing|not valid/.test(text))
				throw new Error(`the end says: ${text}`);
			if (await bob.isVisible('#restart'))
				throw new Error('a shared page offers to start a shell');
			const n = api.length;
			await sleep(3000);
			if (api.length !== n)
				throw new Error(`requests after the end: ${api.slice(n).map((r) => r.url).join(', ')}`);
			// A reload has no token: it says so, and starts nothing.
			await bob.reload();
			await bob.waitForSelector('#ended:not([hidden])', { timeout: 10000 });
			if (!/open the link again/.test(await bob.textContent('#ended-text')))
				throw new Error('a reloaded share page does not say to open the link again');
			if (api.slice(n).some((r) => /\/api\/terminal\/(start|input|list)/.test(r.url)))
				throw new Error('the reloaded page asked for a shell of its own');
			// The revoked stream may report its cut on the console.
			for (let i = errors.length - 1; i >= 0; i--) {
				if (/status of 403|net::ERR_(INCOMPLETE_CHUNKED_ENCODING|EMPTY_RESPONSE)/.test(errors[i]))
					console.log(`# expected: ${errors.splice(i, 1)[0]}`);
			}
		} finally {
			await actx.close();
			await bctx.close();
		}
	});

	test('a view-only page takes the owner\'s new size within a second, asking nothing', async ({ browser, errors }) => {
		// It asked GET shared every 10 s; the stream's resize event says it now.
		const st = await stack(h);
		const actx = await context(browser, h, ALICE);
		const bctx = await context(browser, h, BOB);
		try {
			const alice = await h.openPage(actx, errors, `${st.base}?session=${h.newSid('follow')}`);
			await h.type(alice, 'echo follow-me');
			await h.waitLine(alice, 'follow-me');
			const link = await shareByDialog(alice, 'view', 'bob');
			await alice.keyboard.press('Escape');
			const bob = h.watchPage(await bctx.newPage(), errors);
			await bob.goto(link);
			await bob.waitForSelector('#status[data-kind="connected"]', { timeout: 30000 });
			await h.waitLine(bob, 'follow-me');
			const size = (p) => p.evaluate(() => [window.ptyd.term.rows, window.ptyd.term.cols]);
			const was = await size(alice);
			if (JSON.stringify(await size(bob)) !== JSON.stringify(was))
				throw new Error(`bob does not start at alice's size: ${await size(bob)} vs ${was}`);
			const api = recordApi(bob);

			// Alice's window shrinks: her page sends its new size.
			await alice.setViewportSize({ width: 760, height: 460 });
			const now = await h.poll(async () => {
				const s = await alice.evaluate(() => window.ptyd.sentSize);
				return s && (s.rows !== was[0] || s.cols !== was[1]) ? [s.rows, s.cols] : null;
			}, 'alice\'s page to send its new size', 10000);
			const t0 = Date.now();
			await h.poll(async () => JSON.stringify(await size(bob)) === JSON.stringify(now),
			    `bob's terminal to take ${now}`, 5000);
			const took = Date.now() - t0;
			console.log(`# the view-only page followed ${was} -> ${now} in ${took} ms`);
			if (took > 1000)
				throw new Error(`bob took ${took} ms to follow the owner's size`);
			if (api.some((r) => /\/api\/terminal\/shared/.test(r.url)))
				throw new Error('the view-only page asked GET shared for the size');
			// Output after the change is drawn at the new size.
			await h.type(alice, 'echo drawn-after');
			await h.waitLine(bob, 'drawn-after');
			if (JSON.stringify(await size(bob)) !== JSON.stringify(now))
				throw new Error('bob\'s size moved again');
		} finally {
			await actx.close();
			await bctx.close();
		}
	});

	test('the player plays a recording, pauses, seeks back and forward, and ends at the live screen', async ({ browser, errors }) => {
		const st = await stack(h);
		const actx = await context(browser, h, ALICE);
		try {
			const sid = h.newSid('play');
			const live = await h.openPage(actx, errors, `${st.base}?session=${sid}`);
			await h.type(live, 'for i in 1 2 3 4 5; do printf "line-%s \\e[1;3%sm colour\\e[0m\\n" $i $i; sleep 0.3; done; echo played-end');
			await h.waitLine(live, 'played-end');
			await h.type(live, 'printf "\\e[2J\\e[Hcleared\\n"; seq 1 40 | tail -n 5; echo last-line');
			await h.waitLine(live, 'last-line');
			await sleep(300);
			const want = await viewport(live);
			// Closing the shell finishes the recording.
			await live.click('#close');
			await h.poll(async () => (await h.statusText(live)) === 'closed', 'status "closed"');
			const rec = await h.poll(() => live.evaluate(async (s) => {
				const r = await fetch('api/terminal/recordings?session_id=' + encodeURIComponent(s));
				if (!r.ok)
					return null;
				const d = await r.json();
				const mine = d.recordings.filter((x) => x.session_id === s);
				return mine.length > 0 && mine[0].state === 'finished' ? mine[0] : null;
			}, sid), 'a finished recording of the terminal', 20000);

			const page = h.watchPage(await actx.newPage(), errors);
			const api = recordApi(page);
			await page.goto(`${st.base}#play=${rec.id}`);
			await page.waitForSelector('#player:not([hidden])', { timeout: 15000 });
			if (api.some((r) => /\/api\/terminal\/(start|input|resize|output)/.test(r.url)))
				throw new Error('the player started or attached to a terminal');
			const duration = await page.evaluate(() => window.ptyd.replay.duration);
			if (!(duration > 1))
				throw new Error(`the recording lasts ${duration} s`);
			await page.selectOption('#play-speed', '2');
			await page.click('#play-toggle');
			await h.poll(() => page.evaluate(() => window.ptyd.replay.position > 0.5), 'the position to move', 10000);
			await page.click('#play-toggle');
			const paused = await page.evaluate(() => [window.ptyd.replay.playing, window.ptyd.replay.position]);
			await sleep(700);
			const still = await page.evaluate(() => window.ptyd.replay.position);
			if (paused[0] || still !== paused[1])
				throw new Error(`pause did not hold: ${JSON.stringify(paused)} then ${still}`);
			// Seek forward to the end, back to the start, forward again.
			await page.fill('#play-seek', String(duration));
			await h.poll(async () => (await viewport(page)).text === want.text, 'the end screen after a seek forward', 15000);
			await page.fill('#play-seek', '0');
			await h.poll(() => page.evaluate(() => window.ptyd.replay.index <= 2 && !(window.ptyd.term.buffer.active
			    .getLine(0).translateToString(true).includes('cleared'))), 'the start after a seek back', 15000);
			await page.fill('#play-seek', String(duration / 2));
			await page.click('#play-toggle');
			await h.poll(() => page.evaluate(() => window.ptyd.replay.ended), 'the end of the recording', 30000);
			const got = await viewport(page);
			await shot(h, page, 'player.png');
			if (got.text !== want.text || got.cols !== want.cols || got.rows !== want.rows)
				throw new Error(`the player ends on another screen (${got.cols}x${got.rows}, live ${want.cols}x${want.rows}):\n${got.text}\n--- live:\n${want.text}`);
			if ((await page.getAttribute('#player', 'data-state')) !== 'ended')
				throw new Error('the controls do not say it ended');
		} finally {
			await actx.close();
		}
	});
}
