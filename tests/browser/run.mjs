// run.mjs -- browser tests of the ptyd page: Debian's headless chromium,
// driven by playwright-core, against a real stack (nginx, ptyd.fcgi, ptyd,
// bash) started with scripts/ptyd-stack on a free loopback port.
//
// Owns: the browser, the stacks of this run (temp state dir and HOME, stopped
// in `finally` and on signals), the tests, and the report: one `ok N - name`
// or `not ok N - name` line per test, then `browser: N passed, N failed`.
// Does not own: the page (web/) or the stack script (scripts/).
//
// Environment: PTYD_BUILDDIR (binaries; default the repository),
// PTYD_TEST_OUT (output dir; default <repo>/test-out), PTYD_CHROMIUM
// (default /usr/bin/chromium), PTYD_TEST_PORT_BASE (first port, default
// 18200), PTYD_BROWSER_ONLY (a regex: run only tests
// whose name matches).
//
// Run: node tests/browser/run.mjs

import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';

import { correctnessTests } from './correctness.mjs';
import { featureTests } from './features.mjs';
import { frontTests } from './front.mjs';
import { securityTests } from './security.mjs';
import { statusTests } from './status.mjs';
import { watchTests } from './watch.mjs';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const STACK = path.join(REPO, 'scripts', 'ptyd-stack');
const OUT = path.join(process.env.PTYD_TEST_OUT || path.join(REPO, 'test-out'), 'browser');
const CHROMIUM = process.env.PTYD_CHROMIUM || '/usr/bin/chromium';
// PTYD_TEST_PORT_BASE: the first of 100 loopback ports to try.
const PORT_BASE = Number(process.env.PTYD_TEST_PORT_BASE || 18200);
const PORTS = [PORT_BASE, PORT_BASE + 99];
const SHELL_ARGS = ['--shell', '/bin/bash', '--shell-arg', '--norc',
	'--shell-arg', '--noprofile', '--shell-arg', '-i'];
const TEST_TIMEOUT_MS = 90000;     // generous: CI's 2 cores may be busy
const RUN_TIMEOUT_MS = 8 * 60 * 1000;
const VIEWPORT = { width: 1100, height: 680 };

// ---- stacks -----------------------------------------------------------------

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'ptyd-browser-'));
const stacks = [];
const portsTaken = new Set();

function portFree(port) {
	return new Promise((resolve) => {
		const srv = net.createServer();
		srv.once('error', () => resolve(false));
		srv.listen({ port, host: '127.0.0.1', exclusive: true }, () => srv.close(() => resolve(true)));
	});
}

async function freePort() {
	for (let p = PORTS[0]; p <= PORTS[1]; p++) {
		if (portsTaken.has(p))
			continue;
		if (await portFree(p)) {
			portsTaken.add(p);
			return p;
		}
	}
	throw new Error(`no free port in ${PORTS[0]}-${PORTS[1]}`);
}

// The caller's environment, minus any PTYD_* or XDG_* setting of the
// machine's own, with a HOME of our own so no rc file or history leaks in.
function stackEnv(home) {
	const env = {};
	for (const [k, v] of Object.entries(process.env)) {
		if (!k.startsWith('PTYD_') && !k.startsWith('XDG_'))
			env[k] = v;
	}
	if (process.env.PTYD_BUILDDIR)
		env.PTYD_BUILDDIR = process.env.PTYD_BUILDDIR;
	env.HOME = home;
	env.SHELL = '/bin/bash';
	env.LANG = 'C.UTF-8';
	delete env.LC_ALL;
	return env;
}

function runStack(args, env) {
	const r = spawnSync(STACK, args, {
		env, stdio: ['ignore', 'pipe', 'pipe'], timeout: 60000, encoding: 'utf8',
	});
	return { ok: r.status === 0, out: (r.stdout || '') + (r.stderr || '') + (r.error ? String(r.error) : '') };
}

async function startStack(name, extra = []) {
	const dir = path.join(tmpRoot, name);
	const state = path.join(dir, 'state');
	const home = path.join(dir, 'home');
	fs.mkdirSync(state, { recursive: true });
	fs.mkdirSync(home, { recursive: true });
	const port = await freePort();
	const env = stackEnv(home);
	const stack = { name, port, state, env, base: `http://127.0.0.1:${port}/` };
	stacks.push(stack);
	const r = runStack(['start', '--port', String(port), '--state', state, ...extra, '--', ...SHELL_ARGS], env);
	if (!r.ok)
		throw new Error(`ptyd-stack start failed:\n${r.out}`);
	return stack;
}

function stopStacks() {
	while (stacks.length > 0) {
		const s = stacks.pop();
		const r = runStack(['stop', '--state', s.state], s.env);
		if (!r.ok)
			console.log(`# ptyd-stack stop ${s.name}: ${r.out.trim()}`);
	}
	fs.rmSync(tmpRoot, { recursive: true, force: true });
}

// ---- page helpers -------------------------------------------------------------

function newSid(tag) {
	return `bt-${tag}-${crypto.randomBytes(4).toString('hex')}`;
}

// Console errors and uncaught exceptions of every page of a test.
function watchPage(page, errors) {
	page.on('console', (m) => {
		// A server without GET limits (older than the page) answers
		// 404 there; the page goes on with DESIGN's limits.
		if (m.type() === 'error' && /\/api\/terminal\/limits$/.test(m.location().url || ''))
			return;
		if (m.type() === 'error')
			errors.push(`console: ${m.text()}`);
	});
	page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
	return page;
}

// The terminal's whole buffer as logical lines (soft-wrapped rows joined).
function screenLines(page) {
	return page.evaluate(() => {
		const b = window.ptyd.term.buffer.active;
		const lines = [];
		for (let i = 0; i < b.length; i++) {
			const line = b.getLine(i);
			const text = line.translateToString(true);
			if (line.isWrapped && lines.length > 0)
				lines[lines.length - 1] += text;
			else
				lines.push(text);
		}
		return lines;
	});
}

async function poll(fn, what, timeoutMs = 20000) {
	const deadline = Date.now() + timeoutMs;
	let last;
	for (;;) {
		last = await fn();
		if (last)
			return last;
		if (Date.now() > deadline)
			throw new Error(`timed out waiting for ${what}`);
		await new Promise((r) => setTimeout(r, 100));
	}
}

// Wait for a line that is exactly `text` (an output line, not the command
// line that typed it).
function waitLine(page, text, timeoutMs) {
	return poll(async () => (await screenLines(page)).some((l) => l.trim() === text),
	    `a line "${text}"`, timeoutMs);
}

// Wait for a line ending in `text` (output that follows an echo on its line).
function waitLineEnd(page, text, timeoutMs) {
	return poll(async () => (await screenLines(page)).some((l) => l.trimEnd().endsWith(text)),
	    `a line ending in "${text}"`, timeoutMs);
}

async function countLines(page, text) {
	return (await screenLines(page)).filter((l) => l.trim() === text).length;
}

async function statusText(page) {
	return page.textContent('#status-text');
}

// Page loaded, shell started, stream connected, prompt shown.
async function ready(page) {
	await page.waitForSelector('#status[data-kind="connected"]', { timeout: 30000 });
	await poll(async () => (await screenLines(page)).some((l) => /[$#] ?$/.test(l.trimEnd())),
	    'the shell prompt', 30000);
}

async function type(page, text) {
	await page.evaluate(() => window.ptyd.term.focus());
	await page.keyboard.type(text);
	await page.keyboard.press('Enter');
}

async function openPage(ctx, errors, url) {
	const page = watchPage(await ctx.newPage(), errors);
	await page.goto(url);
	await ready(page);
	return page;
}

// ---- tests ------------------------------------------------------------------------

const tests = [];
function test(name, fn) {
	tests.push({ name, fn });
}

let main;               // the stack most tests share
let browser;

// The ptyd that serves: the pid file names its keeper (DESIGN 10), whose
// child of that name it is; without a keeper, the pid file's own.
function servingPtyd(stack) {
	const keeper = Number(fs.readFileSync(path.join(stack.state, 'run', 'ptyd.pid'), 'utf8'));
	let kids = [];
	try {
		kids = fs.readFileSync(`/proc/${keeper}/task/${keeper}/children`, 'utf8').trim().split(/\s+/).map(Number);
	} catch { /* no children file: no keeper */ }
	for (const k of kids) {
		try {
			if (fs.readFileSync(`/proc/${k}/comm`, 'utf8').trim() === 'ptyd') return k;
		} catch { /* gone meanwhile */ }
	}
	return keeper;
}

test('typing echo hello-browser shows its output', async ({ ctx, errors }) => {
	const page = await openPage(ctx, errors, `${main.base}?session=${newSid('hello')}`);
	await type(page, 'echo hello-browser');
	await waitLine(page, 'hello-browser');
});

test('a reload shows the earlier output again and typing still works', async ({ ctx, errors }) => {
	const url = `${main.base}?session=${newSid('reload')}`;
	const page = await openPage(ctx, errors, url);
	await type(page, 'echo before-reload');
	await waitLine(page, 'before-reload');
	await page.reload();
	await ready(page);
	await waitLine(page, 'before-reload');
	await type(page, 'echo after-reload');
	await waitLine(page, 'after-reload');
	if (await countLines(page, 'before-reload') !== 1)
		throw new Error('the replay after reload duplicated output');
});

test('two tabs on one session see each other\'s output', async ({ ctx, errors }) => {
	const url = `${main.base}?session=${newSid('tabs')}`;
	const a = await openPage(ctx, errors, url);
	const b = await openPage(ctx, errors, url);
	await type(a, 'echo from-tab-a');
	await waitLine(b, 'from-tab-a');
	await type(b, 'echo from-tab-b');
	await waitLine(a, 'from-tab-b');
	await waitLine(b, 'from-tab-b');
});

test('exit 3 shows the exit code, and a new shell can be started', async ({ ctx, errors }) => {
	const page = await openPage(ctx, errors, `${main.base}?session=${newSid('exit')}`);
	await type(page, 'exit 3');
	await poll(async () => /^ended \(exit 3\)$/.test(await statusText(page)), 'status "ended (exit 3)"');
	if (!/exited with code 3/.test(await page.textContent('#ended-text')))
		throw new Error('the overlay does not say the exit code');
	await page.waitForSelector('#ended:not([hidden])', { timeout: 5000 });
	await page.click('#restart');
	await ready(page);
	await type(page, 'echo second-shell');
	await waitLine(page, 'second-shell');
});

test('resizing the window resizes the shell (stty size)', async ({ ctx, errors }) => {
	const page = await openPage(ctx, errors, `${main.base}?session=${newSid('resize')}`);
	const before = await page.evaluate(() => [window.ptyd.term.rows, window.ptyd.term.cols]);
	await page.setViewportSize({ width: 760, height: 430 });
	// The page debounces, fits, then POSTs the size: wait until it has.
	const after = await poll(() => page.evaluate(() => {
		const t = window.ptyd.term;
		const s = window.ptyd.sentSize;
		return s && s.rows === t.rows && s.cols === t.cols ? [t.rows, t.cols] : null;
	}).then((v) => (v && (v[0] !== before[0] || v[1] !== before[1]) ? v : null)),
	'the new size to be sent');
	await type(page, 'stty size');
	await waitLine(page, `${after[0]} ${after[1]}`);
	await page.setViewportSize(VIEWPORT);
});

test('a large paste arrives whole and in order, in pieces', async ({ ctx, errors }) => {
	const page = await openPage(ctx, errors, `${main.base}?session=${newSid('paste')}`);
	// 20,000 characters: three input requests of at most 8,192.  Canonical
	// mode would cut lines at 4 KiB, so the shell reads raw.
	let text = '';
	for (let i = 0; text.length < 20000; i++)
		text += `${i}:abcdefghijklmnopqrstuvwxyz;`;
	text = text.slice(0, 20000);
	const want = crypto.createHash('sha256').update(text).digest('hex');
	await type(page, 'stty -icanon; echo paste-ready; head -c 20000 | sha256sum; stty icanon');
	await waitLine(page, 'paste-ready');
	await page.evaluate((t) => window.ptyd.term.paste(t), text);
	// The echoed paste has no newline: the sum ends the same line.
	await waitLineEnd(page, `${want}  -`, 40000);
});

test('on a slow link keystrokes are batched, one request in flight, in order', async ({ ctx, errors }) => {
	const page = await openPage(ctx, errors, `${main.base}?session=${newSid('slow')}`);
	const cdp = await ctx.newCDPSession(page);
	await cdp.send('Network.emulateNetworkConditions', {
		offline: false, latency: 400, downloadThroughput: -1, uploadThroughput: -1,
	});
	let inFlight = 0;
	let maxInFlight = 0;
	let requests = 0;
	page.on('request', (r) => {
		if (r.url().endsWith('/api/terminal/input')) {
			requests++;
			maxInFlight = Math.max(maxInFlight, ++inFlight);
		}
	});
	const done = (r) => {
		if (r.url().endsWith('/api/terminal/input'))
			inFlight--;
	};
	page.on('requestfinished', done);
	page.on('requestfailed', done);
	const marker = 'slow-link-0123456789-abcdefghijklmnopqrstuvwxyz';
	await page.evaluate(() => window.ptyd.term.focus());
	await page.keyboard.type(`echo ${marker}`, { delay: 10 });
	await page.keyboard.press('Enter');
	await waitLine(page, marker, 30000);
	const keys = `echo ${marker}`.length + 1;
	console.log(`# ${keys} keystrokes went in ${requests} requests at 400 ms latency`);
	if (maxInFlight > 1)
		throw new Error(`${maxInFlight} input requests were in flight at once`);
	if (requests > keys / 4)
		throw new Error(`${requests} requests for ${keys} keystrokes: not batched`);
	await cdp.send('Network.emulateNetworkConditions', {
		offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1,
	});
});

test('the Close button ends the shell and the list no longer has it', async ({ ctx, errors }) => {
	const sid = newSid('close');
	const page = await openPage(ctx, errors, `${main.base}?session=${sid}`);
	await page.click('#close');
	await poll(async () => (await statusText(page)) === 'closed', 'status "closed"');
	const listed = await page.evaluate(async (id) => {
		const r = await fetch('api/terminal/list');
		return (await r.json()).terminals.some((t) => t.session_id === id && t.running);
	}, sid);
	if (listed)
		throw new Error('the terminal is still running after Close');
});

test('a new page gets a random session id in its address', async ({ ctx, errors }) => {
	const page = await openPage(ctx, errors, main.base);
	const sid = new URL(page.url()).searchParams.get('session');
	if (!sid || !/^[A-Za-z0-9._:-]{1,128}$/.test(sid))
		throw new Error(`no session id in ${page.url()}`);
	await type(page, 'echo fresh-session');
	await waitLine(page, 'fresh-session');
});

test('the page works under a sub-path', async ({ ctx, errors }) => {
	const page = await openPage(ctx, errors, `${main.base}sub/?session=${newSid('sub')}`);
	await type(page, 'echo under-sub-path');
	await waitLine(page, 'under-sub-path');
});

test('an nginx reload: the stream resumes, no output lost or doubled', async ({ ctx, errors }) => {
	const page = await openPage(ctx, errors, `${main.base}?session=${newSid('nginx')}`);
	await type(page, 'echo before-nginx-reload');
	await waitLine(page, 'before-nginx-reload');
	const streams = await page.evaluate(() => window.ptyd.streams);
	const r = runStack(['reload', '--state', main.state], main.env);
	if (!r.ok)
		throw new Error(r.out);
	// The old worker drops its streams within worker_shutdown_timeout.
	await poll(() => page.evaluate((n) => window.ptyd.streams > n, streams), 'a new stream', 15000);
	await page.waitForSelector('#status[data-kind="connected"]', { timeout: 15000 });
	await type(page, 'for i in 1 2 3; do echo after-nginx-reload-$i; done');
	for (const i of [1, 2, 3])
		await waitLine(page, `after-nginx-reload-${i}`);
	for (const m of ['before-nginx-reload', 'after-nginx-reload-1', 'after-nginx-reload-3']) {
		const n = await countLines(page, m);
		if (n !== 1)
			throw new Error(`"${m}" shown ${n} times`);
	}
	// The cut stream is a network error the browser reports on its console;
	// it is expected here and nothing else may be.
	const cut = /net::ERR_(INCOMPLETE_CHUNKED_ENCODING|EMPTY_RESPONSE|CONNECTION_(RESET|REFUSED|CLOSED))/;
	for (let i = errors.length - 1; i >= 0; i--) {
		if (cut.test(errors[i]))
			console.log(`# expected: ${errors.splice(i, 1)[0]}`);
	}
});

test('keys typed while ptyd stands still arrive once each, in order', async ({ ctx, errors }) => {
	// Regression: an input answered 503 (ptyd stopped past ptyd.fcgi's
	// 5 s deadline) ran anyway when ptyd went on, and the page's retry
	// typed it again.  The page now retries with the same input_id.
	const page = await openPage(ctx, errors, `${main.base}?session=${newSid('once')}`);
	const pid = servingPtyd(main);
	await page.evaluate(() => window.ptyd.term.focus());
	await page.keyboard.type('echo once-');
	await poll(async () => (await screenLines(page)).some((l) => l.includes('echo once-')),
	    'the first keys echoed');
	process.kill(pid, 'SIGSTOP');
	try {
		await page.keyboard.type('abc');
		await page.keyboard.press('Enter');
		// Past ptyd.fcgi's deadline: the pending requests answer 503.
		await new Promise((r) => setTimeout(r, 7000));
	} finally {
		process.kill(pid, 'SIGCONT');
	}
	await waitLine(page, 'once-abc', 30000);
	await type(page, 'echo after-once');
	await waitLine(page, 'after-once');
	const lines = await screenLines(page);
	const n = lines.filter((l) => l.trim() === 'once-abc').length;
	if (n !== 1 || lines.some((l) => /abc: command not found|once-abcabc/.test(l)))
		throw new Error(`typed more than once:\n${lines.filter((l) => l.trim()).join('\n')}`);
	// The 503s are expected on the console here, nothing else.
	for (let i = errors.length - 1; i >= 0; i--) {
		if (/status of 503/.test(errors[i]))
			console.log(`# expected: ${errors.splice(i, 1)[0]}`);
	}
});

test('with auth_basic the page works, and without credentials nothing does', async ({ browser: b, errors }) => {
	const authStack = await startStack('auth', ['--user', 'alice:s3cret-pw']);
	const ctx = await b.newContext({ viewport: VIEWPORT, httpCredentials: { username: 'alice', password: 's3cret-pw' } });
	try {
		const page = await openPage(ctx, errors, `${authStack.base}?session=${newSid('auth')}`);
		await type(page, 'echo as-alice');
		await waitLine(page, 'as-alice');
		const anon = await fetch(`${authStack.base}api/terminal/health`);
		if (anon.status !== 401)
			throw new Error(`without credentials the API answered ${anon.status}, not 401`);
	} finally {
		await ctx.close();
	}
});

test('screenshot of a terminal in use', async ({ ctx, errors }) => {
	const page = await openPage(ctx, errors, `${main.base}?session=${newSid('shot')}`);
	// Each command waits for the prompt after it, so no type-ahead is
	// echoed into the previous command's output.
	const prompts = async () => (await screenLines(page)).filter((l) => l.startsWith('demo@ptyd:')).length;
	const run = async (cmd) => {
		const n = await prompts();
		await type(page, cmd);
		await poll(async () => (await prompts()) > n, `the prompt after ${cmd}`);
	};
	await run('PS1=\'\\[\\e[1;32m\\]demo@ptyd\\[\\e[0m\\]:\\[\\e[1;34m\\]\\w\\[\\e[0m\\]\\$ \'; cd /usr/share');
	await run('ls -F -C --color=always | head -n 8');
	await run('printf "\\e[1mbold\\e[0m \\e[3mitalic\\e[0m \\e[4munderline\\e[0m  \\e[31mred \\e[32mgreen \\e[33myellow \\e[34mblue \\e[35mmagenta \\e[36mcyan\\e[0m  utf-8: héllo wörld ✓ →\\n"');
	await run('stty size; echo screenshot-done');
	fs.mkdirSync(OUT, { recursive: true });
	const file = path.join(OUT, 'terminal.png');
	await page.screenshot({ path: file });
	console.log(`# screenshot: ${file}`);
});

// The other files' tests, with the helpers above.
const helpers = {
	main: () => main, startStack, runStack, newSid, watchPage, screenLines, poll,
	waitLine, waitLineEnd, countLines, statusText, ready, type, openPage,
	freePort, OUT, VIEWPORT,
};
correctnessTests(test, helpers);
featureTests(test, helpers);
securityTests(test, helpers);
statusTests(test, helpers);
watchTests(test, helpers);
frontTests(test, helpers);

// ---- runner ---------------------------------------------------------------------

function withTimeout(promise, ms, what) {
	let timer;
	const t = new Promise((_, reject) => {
		timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms / 1000}s`)), ms);
	});
	return Promise.race([promise, t]).finally(() => clearTimeout(timer));
}

const results = { passed: 0, failed: 0 };

async function run() {
	const only = process.env.PTYD_BROWSER_ONLY ? new RegExp(process.env.PTYD_BROWSER_ONLY) : null;
	const selected = tests.filter((t) => !only || only.test(t.name));
	console.log(`1..${selected.length}`);
	try {
		main = await startStack('main');
		// playwright-core gives each launch a fresh temporary profile
		// (its own --user-data-dir), removed when the browser closes.
		browser = await chromium.launch({
			executablePath: CHROMIUM,
			headless: true,
			args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
				'--disable-background-networking', '--disable-component-update',
				'--disable-sync'],
		});
	} catch (e) {
		console.log(`not ok 1 - setup: ${e.message.split('\n')[0]}`);
		for (const line of String(e.message).split('\n').slice(1))
			console.log(`  # ${line}`);
		results.failed = Math.max(1, selected.length);
		return results;
	}
	let n = 0;
	for (const t of selected) {
		n++;
		const errors = [];
		const ctx = await browser.newContext({ viewport: VIEWPORT });
		const t0 = Date.now();
		let failure = null;
		try {
			await withTimeout(t.fn({ ctx, errors, browser }), TEST_TIMEOUT_MS, 'the test');
			if (errors.length > 0)
				failure = new Error(`errors in the browser console:\n${errors.join('\n')}`);
		} catch (e) {
			failure = e;
			if (errors.length > 0)
				failure.message += `\nbrowser console:\n${errors.join('\n')}`;
		}
		await ctx.close().catch(() => {});
		const secs = ((Date.now() - t0) / 1000).toFixed(1);
		if (failure === null) {
			results.passed++;
			console.log(`ok ${n} - ${t.name} (${secs}s)`);
		} else {
			results.failed++;
			console.log(`not ok ${n} - ${t.name} (${secs}s)`);
			for (const line of String(failure.message).split('\n'))
				console.log(`  # ${line}`);
		}
	}
	return results;
}

let finished = false;
async function finish(result) {
	if (finished)
		return;
	finished = true;
	if (browser)
		await browser.close().catch(() => {});
	stopStacks();
	console.log(`browser: ${result.passed} passed, ${result.failed} failed`);
	process.exit(result.failed === 0 && result.passed > 0 ? 0 : 1);
}

for (const sig of ['SIGINT', 'SIGTERM']) {
	process.on(sig, () => {
		console.log(`# ${sig}: stopping`);
		finish({ passed: results.passed, failed: results.failed + 1 });
	});
}
const watchdog = setTimeout(() => {
	console.log(`not ok - the run exceeded ${RUN_TIMEOUT_MS / 1000}s`);
	finish({ passed: results.passed, failed: results.failed + 1 });
}, RUN_TIMEOUT_MS);
watchdog.unref();

run().then(finish, (e) => {
	console.log(`not ok - runner: ${e.stack || e}`);
	finish({ passed: results.passed, failed: results.failed + 1 });
});
