// security.mjs -- browser tests of the page's part of DESIGN 6 (issue 29,
// second round): another site may not frame the terminal, and a paste is
// text, never control.
//
// Owns: these tests, the other origin's little server of the framing test,
// the temp folders of the paste tests.  Does not own: the runner, the
// stacks, the helpers (run.mjs passes them in as `h`).

import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The paste question off, as the user turns it off (remembered in this
// browser): an address can no longer turn it off.
function noPasteQuestion(ctx) {
	return ctx.addInitScript(() => localStorage.setItem('ptyd.settings', JSON.stringify({ pasteConfirm: false })));
}

// The review's clipboard: the end of a bracketed paste, ^U to clear the
// line, a command and its CR.
const attack = (file) => `echo harmless \x1b[201~\x15touch ${file}\r`;

// A page of another origin (another loopback port) that frames url
// nearly invisibly, as the review's did.  Resolves to the server.
async function otherOrigin(port, url) {
	const srv = http.createServer((req, res) => {
		res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
		res.end(`<!doctype html><title>prize</title><p>Click to win</p>
<iframe id="t" src="${url}" width="900" height="500" style="opacity:0.01"></iframe>`);
	});
	await new Promise((resolve, reject) => {
		srv.once('error', reject);
		srv.listen(port, '127.0.0.1', resolve);
	});
	return srv;
}

// Is the session listed by the API (a terminal started for it)?
async function listed(stack, sid) {
	const r = await fetch(`${stack.base}api/terminal/list`);
	return (await r.json()).terminals.some((t) => t.session_id === sid);
}

// The framing page's console says the browser refused the frame: expected.
function dropRefusals(errors) {
	for (let i = errors.length - 1; i >= 0; i--) {
		if (/Refused to (display|frame)|frame-ancestors|X-Frame-Options/.test(errors[i]))
			console.log(`# expected: ${errors.splice(i, 1)[0].slice(0, 160)}`);
	}
}

// What the terminal's frame holds: the page (true) or nothing of it.
async function frameHasTerminal(page) {
	const f = page.frames().find((fr) => fr !== page.mainFrame());
	if (!f || f.url().startsWith('chrome-error:'))
		return false;
	return f.evaluate(() => Boolean(window.ptyd)).catch(() => false);
}

// A paste event into xterm.js's textarea, as Ctrl+V makes, with text.
function dispatchPaste(page, text) {
	return page.evaluate((t) => {
		const ta = document.querySelector('#term textarea');
		const dt = new DataTransfer();
		dt.setData('text/plain', t);
		ta.dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
	}, text);
}

// Wait until the program reading the terminal no longer asked for
// bracketed paste (bash turns it off before it runs a command), so a
// paste reaches `cat` as it is.
function waitUnbracketed(page, h) {
	return h.poll(() => page.evaluate(() => !window.ptyd.term.modes.bracketedPasteMode),
	    'bash to run the command (bracketed paste off)', 10000);
}

function tempDir(tag) {
	return fs.mkdtempSync(path.join(os.tmpdir(), `ptyd-bt-${tag}-`));
}

export function securityTests(test, h) {
	test('a link cannot turn the paste question off nor put CSS in the font', async ({ ctx, errors }) => {
		// An attacker's review: ?pasteConfirm=off, and a fontFamily that
		// closed xterm's style rule and hid the paste question.
		const css = 'monospace; } body::before{content:"INJECTED"} #paste-confirm{display:none !important} .x {';
		const page = await h.openPage(ctx, errors, `${h.main().base}?session=${h.newSid('link')}` +
		    `&pasteConfirm=off&renderer=dom&fontFamily=${encodeURIComponent(css)}`);
		const got = await page.evaluate(() => [window.ptyd.settings.pasteConfirm, window.ptyd.settings.fontFamily]);
		if (got[0] !== true)
			throw new Error('the address turned the paste question off');
		if (/INJECTED|\{/.test(got[1]))
			throw new Error(`the address set the font to ${got[1]}`);
		const injected = await page.evaluate(() => getComputedStyle(document.body, '::before').content);
		if (/INJECTED/.test(injected))
			throw new Error('CSS from the address reached the page');
	});

	test('framing: a page of another origin gets nothing in its frame, unless the setting names it', async ({ ctx, errors }) => {
		// Regression (issue 29): a page on another origin framed the
		// terminal at opacity 0.01 and the visitor's clicks ran in
		// their shell.
		const sid = h.newSid('framed');
		const port = await h.freePort();
		const evil = await otherOrigin(port, `${h.main().base}?session=${sid}`);
		try {
			const page = h.watchPage(await ctx.newPage(), errors);
			await page.goto(`http://127.0.0.1:${port}/`);
			// Long enough for a frame that loads to start its shell.
			await sleep(4000);
			if (await frameHasTerminal(page))
				throw new Error('the terminal page loaded in a frame of another origin');
			if (await listed(h.main(), sid))
				throw new Error('the framed page started a terminal');
			dropRefusals(errors);
		} finally {
			evil.close();
		}

		// With the one setting naming that origin, the frame works:
		// the setting is what lets it in.
		const port2 = await h.freePort();
		const origin = `http://127.0.0.1:${port2}`;
		const open = await h.startStack('framing-allowed', ['--frame-ancestors', `'self' ${origin}`]);
		const sid2 = h.newSid('framed-ok');
		const portal = await otherOrigin(port2, `${open.base}?session=${sid2}`);
		try {
			const page = h.watchPage(await ctx.newPage(), errors);
			await page.goto(`${origin}/`);
			await h.poll(() => frameHasTerminal(page), 'the terminal in the allowed frame', 20000);
			await h.poll(() => listed(open, sid2), 'the framed terminal to start', 20000);
		} finally {
			portal.close();
		}
	});

	test('paste: clipboard text with ESC[201~ does not run what follows it, typed-text pastes too', async ({ ctx, errors }) => {
		// Regression (issue 29): xterm.js bracketed the clipboard
		// text without removing an ESC[201~ inside it, and "echo
		// harmless ESC[201~ ^U touch X CR" ran touch X.
		const dir = tempDir('paste');
		try {
			const x = path.join(dir, 'X');
			const y = path.join(dir, 'Y');
			// No question before the paste: only the sanitiser stands
			// between the text and the shell here.
			await noPasteQuestion(ctx);
			const page = await h.openPage(ctx, errors, `${h.main().base}?session=${h.newSid('escpaste')}`);
			// Whatever the paste left on the line runs with Enter; the
			// marker's echo after it says the shell is done with both.
			const settle = async (tag) => {
				await sleep(500);
				await page.keyboard.press('Enter');
				await h.type(page, `echo ${tag}-done`);
				await h.waitLine(page, `${tag}-done`);
			};
			await dispatchPaste(page, attack(x));
			await settle('paste');
			if (fs.existsSync(x))
				throw new Error(`the paste ran a command: ${x} exists`);
			// What arrived is text: echo printed it, ESC and ^U gone.
			await h.waitLine(page, `harmless [201~touch ${x}`, 5000);
			// A phone keyboard's clipboard chip types the text instead
			// (an input event, which xterm.js would send raw).
			await page.evaluate((t) => {
				const ta = document.querySelector('#term textarea');
				ta.dispatchEvent(new InputEvent('input', { data: t, inputType: 'insertText', bubbles: true }));
			}, attack(y));
			await settle('typed');
			if (fs.existsSync(y))
				throw new Error(`the typed paste ran a command: ${y} exists`);
			await h.waitLine(page, `harmless [201~touch ${y}`, 5000);
		} finally {
			fs.rmSync(dir, { recursive: true, force: true });
		}
	});

	test('paste: ordinary text arrives intact, tabs and line breaks kept', async ({ ctx, errors }) => {
		const dir = tempDir('plain');
		try {
			const out = path.join(dir, 'out');
			await noPasteQuestion(ctx);
			const page = await h.openPage(ctx, errors, `${h.main().base}?session=${h.newSid('plainpaste')}`);
			await h.type(page, `cat > ${out}; echo plain-cat-done`);
			await waitUnbracketed(page, h);
			await dispatchPaste(page, 'col1\tcol2\nhéllo wörld ✓ [201~ 100%\n');
			await sleep(500);
			await page.keyboard.press('Control+D');
			await h.waitLine(page, 'plain-cat-done');
			const got = fs.readFileSync(out, 'utf8');
			if (got !== 'col1\tcol2\nhéllo wörld ✓ [201~ 100%\n')
				throw new Error(`the paste arrived as ${JSON.stringify(got)}`);
		} finally {
			fs.rmSync(dir, { recursive: true, force: true });
		}
	});

	test('paste: more than one line asks first (Cancel sends nothing, Paste sends it); the setting off, it goes at once', async ({ ctx, errors }) => {
		const dir = tempDir('confirm');
		const sid = h.newSid('confirm');
		const url = `${h.main().base}?session=${sid}`;
		const isOpen = (page) => page.evaluate(() => document.getElementById('paste-confirm')?.open === true);
		const catRound = async (page, file, tag) => {
			await h.type(page, `cat > ${file}; echo ${tag}-done`);
			await waitUnbracketed(page, h);
		};
		const catEnd = async (page, tag) => {
			await page.keyboard.press('Control+D');
			await h.waitLine(page, `${tag}-done`);
		};
		try {
			const page = await h.openPage(ctx, errors, url);
			// The default asks; Cancel sends nothing.
			const f1 = path.join(dir, 'f1');
			await catRound(page, f1, 'cancel');
			await dispatchPaste(page, 'rm -rf one\ntwo\n');
			await h.poll(() => isOpen(page), 'the question before a paste of two lines', 5000);
			const preview = await page.textContent('#paste-preview');
			if (!preview.includes('rm -rf one'))
				throw new Error(`the question does not show the paste: ${JSON.stringify(preview)}`);
			await page.click('#paste-cancel');
			await h.poll(async () => !(await isOpen(page)), 'the question to close', 5000);
			await page.keyboard.type('kept');
			await page.keyboard.press('Enter');
			await catEnd(page, 'cancel');
			if (fs.readFileSync(f1, 'utf8') !== 'kept\n')
				throw new Error(`Cancel sent the paste: ${JSON.stringify(fs.readFileSync(f1, 'utf8'))}`);
			// Paste sends it.
			const f2 = path.join(dir, 'f2');
			await catRound(page, f2, 'ok');
			await dispatchPaste(page, 'one\ntwo\n');
			await h.poll(() => isOpen(page), 'the question', 5000);
			await page.click('#paste-ok');
			await sleep(500);
			await catEnd(page, 'ok');
			if (fs.readFileSync(f2, 'utf8') !== 'one\ntwo\n')
				throw new Error(`Paste did not send it: ${JSON.stringify(fs.readFileSync(f2, 'utf8'))}`);
			// One line asks nothing.
			await dispatchPaste(page, 'echo one-line-paste');
			await sleep(500);
			if (await isOpen(page))
				throw new Error('a paste of one line asked');
			await page.keyboard.press('Enter');
			await h.waitLine(page, 'one-line-paste');

			// Off in the settings dialog: remembered, and a paste of
			// two lines goes at once.
			await page.click('#settings-open');
			await page.uncheck('#settings-form input[name="pasteConfirm"]');
			await page.click('#settings-form button[value="cancel"]');
			await page.reload();
			await h.ready(page);
			if (await page.evaluate(() => window.ptyd.settings.pasteConfirm) !== false)
				throw new Error('the setting was not remembered');
			const f3 = path.join(dir, 'f3');
			await catRound(page, f3, 'off');
			await dispatchPaste(page, 'three\nfour\n');
			await sleep(700);
			if (await isOpen(page))
				throw new Error('the setting is off and the paste still asked');
			await catEnd(page, 'off');
			if (fs.readFileSync(f3, 'utf8') !== 'three\nfour\n')
				throw new Error(`the paste did not go at once: ${JSON.stringify(fs.readFileSync(f3, 'utf8'))}`);
		} finally {
			fs.rmSync(dir, { recursive: true, force: true });
		}
	});
}
