// firstprompt.mjs -- page load to first shell prompt, our page beside
// another web terminal's (ttyd) in the same run (issue 32).
//
// Owns: the browser, the loads and the figures; with --start-stacks also the
// stacks it starts (ours with scripts/ptyd-stack, ttyd as a child), their
// temporary state and HOMEs, stopped in `finally` and on signals.  Does not
// own: the page (web/), the stack script (scripts/), ttyd.
//
// Each load: a fresh browser context (no cache, no cookies, no storage), a
// new page, navigation to the URL.  The time is from navigation start
// (performance.timeOrigin) to the first moment the prompt's marker is in
// xterm.js's buffer (term.buffer.active, read through window.ptyd.term on
// our page, window.term on ttyd's: both pages expose their Terminal), and
// `paint`: the next animation frame after that.  An init script finds the
// Terminal as soon as the page makes it (a 4 ms interval), then checks the
// buffer on each onWriteParsed and on the interval.  The shells' prompt
// is set by the same rc file (--rcfile, --noprofile, a HOME of their own),
// so the marker is the same on every target.
//
// Targets load interleaved, in an order that rotates each round (A B C,
// B C A, C A B, ...), so drift of a shared machine falls on all alike.
// After each load of our page its terminal is closed (POST close), so
// terminals do not pile up; ttyd ends its shell when the socket closes.
// A target whose label holds "ttyd" is the baseline of the ratios.  The
// other columns: html (the document's responseEnd), DCL
// (DOMContentLoaded's end), term (when the page's Terminal first
// existed), and each request's median sent / headers / server wait
// (responseStart - requestStart) / done times.
//
// usage:
//   node bench/firstprompt/firstprompt.mjs [options] LABEL=URL...
//   node bench/firstprompt/firstprompt.mjs --start-stacks [--ttyd BIN] [options]
// options:
//   -n N            loads per target (default 10)
//   --marker TEXT   the prompt text to wait for (default fp-ready); with
//                   LABEL=URL targets the shells must already print it
//   --warm          also a warm load per round: a second page in the same
//                   context (cached assets), its own figures
//   --trace DIR     one more cold load of each target, after the measured
//                   ones and not in their figures, traced (Chrome trace in
//                   DIR/LABEL.json), and its main thread before the prompt
//   --profile K     K more cold loads of each target, after the measured
//                   ones and not in their figures, under V8's sampling
//                   profiler (100 us): the JavaScript time before the
//                   prompt by script and by function, the mean of the K
//   --start-stacks  start ours (--page built, as scripts/demo serves it,
//                   and --page source) and, with --ttyd BIN, ttyd, each
//                   on a free loopback port in 19800-19899
//   --ttyd BIN      ttyd's binary (with --start-stacks)
//   --repo DIR      start the stacks of another tree (its scripts/,
//                   nginx/, web/; binaries from PTYD_BUILDDIR or that
//                   tree), e.g. a `git archive` of a commit, so that work
//                   in progress in this one is not what is measured
// environment: PTYD_CHROMIUM (default /usr/bin/chromium), PTYD_BUILDDIR
// (passed to ptyd-stack).

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
// playwright-core as the browser tests have it installed.
const { chromium } = createRequire(path.join(REPO, 'tests', 'browser', 'package.json'))('playwright-core');
const CHROMIUM = process.env.PTYD_CHROMIUM || '/usr/bin/chromium';
const PORTS = [19800, 19899];
const VIEWPORT = { width: 1100, height: 680 };
const LOAD_TIMEOUT_MS = 30000;

// ---- arguments ----------------------------------------------------------------

function usage(msg) {
	if (msg)
		console.error(`firstprompt: ${msg}`);
	console.error('usage: firstprompt.mjs [-n N] [--marker TEXT] [--warm] [--trace DIR] [--profile K] ' +
	    '(LABEL=URL... | --start-stacks [--ttyd BIN] [--repo DIR])');
	process.exit(2);
}

const opt = { repo: REPO, n: 10, marker: 'fp-ready', warm: false, trace: null, profile: 0, start: false, ttyd: null, targets: [] };
{
	const a = process.argv.slice(2);
	for (let i = 0; i < a.length; i++) {
		const v = () => (i + 1 < a.length ? a[++i] : usage(`${a[i]} needs a value`));
		switch (a[i]) {
		case '-n': opt.n = Number(v()); break;
		case '--marker': opt.marker = v(); break;
		case '--warm': opt.warm = true; break;
		case '--trace': opt.trace = v(); break;
		case '--profile': opt.profile = Number(v()); break;
		case '--start-stacks': opt.start = true; break;
		case '--ttyd': opt.ttyd = v(); break;
		case '--repo': opt.repo = path.resolve(v()); break;
		case '-h': case '--help': usage(); break;
		default: {
			const m = /^([^=]+)=(https?:\/\/.+)$/.exec(a[i]);
			if (!m)
				usage(`not LABEL=URL: ${a[i]}`);
			opt.targets.push({ label: m[1], url: m[2] });
		}
		}
	}
	if (!Number.isInteger(opt.n) || opt.n < 1)
		usage('-n wants a positive integer');
	if (!opt.start && opt.targets.length === 0)
		usage('no targets');
	if (opt.ttyd && !opt.start)
		usage('--ttyd goes with --start-stacks');
}
// The tree whose stack script (and so whose web/ and nginx/) is started.
const STACK = path.join(opt.repo, 'scripts', 'ptyd-stack');

// ---- stacks ---------------------------------------------------------------------

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'ptyd-firstprompt-'));
const ours = [];   // { label, state, env }
const children = [];   // ttyd processes we started
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
		if (!portsTaken.has(p) && await portFree(p)) {
			portsTaken.add(p);
			return p;
		}
	}
	throw new Error(`no free port in ${PORTS[0]}-${PORTS[1]}`);
}

// A HOME of its own with the rc file every shell here reads: the prompt
// and nothing else.
function makeHome(name) {
	const home = path.join(tmpRoot, name, 'home');
	fs.mkdirSync(home, { recursive: true });
	const rc = path.join(home, '.fprc');
	fs.writeFileSync(rc, `PS1='${opt.marker}\\$ '\n`);
	return { home, rc };
}

function shellEnv(home) {
	const env = {};
	for (const [k, v] of Object.entries(process.env)) {
		if (!k.startsWith('PTYD_') && !k.startsWith('XDG_') && !k.startsWith('LC_'))
			env[k] = v;
	}
	if (process.env.PTYD_BUILDDIR)
		env.PTYD_BUILDDIR = process.env.PTYD_BUILDDIR;
	env.HOME = home;
	env.SHELL = '/bin/bash';
	env.LANG = 'C.UTF-8';
	return env;
}

function runStack(args, env) {
	const r = spawnSync(STACK, args, { env, stdio: ['ignore', 'pipe', 'pipe'], timeout: 60000, encoding: 'utf8' });
	return { ok: r.status === 0, out: (r.stdout || '') + (r.stderr || '') + (r.error ? String(r.error) : '') };
}

async function startOurs(label, page) {
	const { home, rc } = makeHome(label);
	const state = path.join(tmpRoot, label, 'state');
	const port = await freePort();
	const env = shellEnv(home);
	ours.push({ label, state, env });
	const r = runStack(['start', '--port', String(port), '--state', state, '--page', page, '--',
		'--shell', '/bin/bash', '--shell-arg', '--rcfile', '--shell-arg', rc,
		'--shell-arg', '--noprofile', '--shell-arg', '-i'], env);
	if (!r.ok)
		throw new Error(`ptyd-stack start (${label}) failed:\n${r.out}`);
	return { label, url: `http://127.0.0.1:${port}/`, kind: 'ptyd' };
}

async function startTtyd(label, bin) {
	const { home, rc } = makeHome(label);
	const port = await freePort();
	const env = shellEnv(home);
	const log = fs.openSync(path.join(tmpRoot, label, 'ttyd.log'), 'w');
	const child = spawn(bin, ['-p', String(port), '-i', '127.0.0.1',
		'bash', '--rcfile', rc, '--noprofile', '-i'], { env, cwd: home, stdio: ['ignore', log, log] });
	children.push(child);
	const deadline = Date.now() + 10000;
	for (;;) {
		try {
			const res = await fetch(`http://127.0.0.1:${port}/token`);
			if (res.ok)
				break;
		} catch (e) { /* not yet */ }
		if (child.exitCode !== null || Date.now() > deadline)
			throw new Error(`ttyd did not come up on ${port}: ` +
			    fs.readFileSync(path.join(tmpRoot, label, 'ttyd.log'), 'utf8').slice(-2000));
		await new Promise((r) => setTimeout(r, 50));
	}
	return { label, url: `http://127.0.0.1:${port}/`, kind: 'ttyd' };
}

let stopped = false;
function stopAll() {
	if (stopped)
		return;
	stopped = true;
	for (const c of children) {
		if (c.exitCode === null)
			c.kill('SIGTERM');
	}
	for (const s of ours.reverse()) {
		const r = runStack(['stop', '--state', s.state], s.env);
		if (!r.ok)
			console.error(`# ptyd-stack stop ${s.label}: ${r.out.trim()}`);
	}
	fs.rmSync(tmpRoot, { recursive: true, force: true });
}
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
	process.on(sig, () => {
		stopAll();
		process.exit(130);
	});
}

// ---- the machine -----------------------------------------------------------------

function cpuTimes() {
	const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
	const idle = f[3] + (f[4] || 0);
	return { idle, total: f.reduce((a, b) => a + b, 0) };
}

function busiest() {
	const r = spawnSync('ps', ['-eo', 'pcpu,comm', '--sort=-pcpu', '--no-headers'], { encoding: 'utf8' });
	return (r.stdout || '').split('\n').slice(0, 5).map((l) => l.trim()).filter(Boolean).join(', ');
}

// ---- one load ----------------------------------------------------------------------

// Runs in the page before its own scripts.  Finds the Terminal, then
// notes when the marker is first in the buffer and the frame after.
function watcherScript(marker) {
	/* eslint-disable no-undef */
	const fp = { found: 0, buffer: 0, paint: 0, how: '' };
	window.__fp = fp;
	const termOf = () => (window.ptyd && window.ptyd.term) || window.term || null;
	const seen = (term) => {
		const b = term.buffer.active;
		const end = Math.min(b.length, b.baseY + term.rows);
		for (let y = 0; y < end; y++) {
			const l = b.getLine(y);
			if (l && l.translateToString(true).includes(marker))
				return true;
		}
		return false;
	};
	const check = (how) => {
		const term = termOf();
		if (fp.buffer || !term)
			return;
		if (!fp.found) {
			fp.found = performance.now();
			if (term.onWriteParsed)
				term.onWriteParsed(() => check('writeParsed'));
		}
		if (seen(term)) {
			fp.buffer = performance.now();
			fp.how = how;
			clearInterval(timer);
			requestAnimationFrame(() => { fp.paint = performance.now(); });
		}
	};
	const timer = setInterval(() => check('interval'), 4);
}

function pct(xs, p) {
	const s = [...xs].sort((a, b) => a - b);
	return s[Math.min(s.length - 1, Math.max(0, Math.ceil(p / 100 * s.length) - 1))];
}
const median = (xs) => {
	const s = [...xs].sort((a, b) => a - b);
	const m = s.length >> 1;
	return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

// The requests of a load: name, start, headers, end (ms from navigation start).
function watchRequests(page, list) {
	page.on('requestfinished', (req) => list.push({ req, done: true }));
	page.on('requestfailed', (req) => list.push({ req, done: false }));
	page.on('response', (res) => {
		// The event stream never finishes while the page lives.
		if ((res.headers()['content-type'] || '').startsWith('text/event-stream'))
			list.push({ req: res.request(), done: false });
	});
}

function requestRows(list, origin) {
	const rows = [];
	for (const { req } of list) {
		const t = req.timing();
		if (!(t.startTime > 0))
			continue;
		const start = t.startTime - origin;
		let name = new URL(req.url()).pathname.replace(/^.*\//, '') || '/';
		name = name.replace(/\.[0-9a-f]{12}\./, '.');
		rows.push({
			name: `${req.method()} ${name}`,
			start,
			headers: t.responseStart >= 0 ? start + t.responseStart : NaN,
			server: t.responseStart >= 0 && t.requestStart >= 0 ? t.responseStart - t.requestStart : NaN,
			end: t.responseEnd >= 0 ? start + t.responseEnd : NaN,
		});
	}
	return rows;
}

async function closeOurs(page) {
	await page.evaluate(async () => {
		if (!window.ptyd)
			return;
		await fetch('api/terminal/close', {
			method: 'POST', headers: { 'Content-Type': 'application/json' },
			body: JSON.stringify({ session_id: window.ptyd.sessionId }), credentials: 'same-origin',
		}).catch(() => null);
	}).catch(() => null);
}

async function loadOnce(ctx, target, traceFile, browser, prof = null) {
	const page = await ctx.newPage();
	let cdp = null;
	if (prof) {
		cdp = await ctx.newCDPSession(page);
		await cdp.send('Profiler.enable');
		await cdp.send('Profiler.setSamplingInterval', { interval: 100 });
		await cdp.send('Profiler.start');
	}
	const reqs = [];
	watchRequests(page, reqs);
	const errors = [];
	page.on('pageerror', (e) => errors.push(e.message));
	if (traceFile)
		await browser.startTracing(page, { path: traceFile, screenshots: false });
	try {
		await page.goto(target.url, { waitUntil: 'commit', timeout: LOAD_TIMEOUT_MS });
		await page.waitForFunction(() => window.__fp && window.__fp.paint > 0,
			null, { timeout: LOAD_TIMEOUT_MS, polling: 50 });
	} catch (e) {
		throw new Error(`${target.label}: no prompt (${e.message.split('\n')[0]})` +
		    (errors.length ? `; page errors: ${errors.join('; ')}` : ''));
	}
	const r = await page.evaluate(() => {
		const nav = performance.getEntriesByType('navigation')[0];
		return {
			origin: performance.timeOrigin,
			...window.__fp,
			html: nav ? nav.responseEnd : NaN,
			dcl: nav ? nav.domContentLoadedEventEnd : NaN,
		};
	});
	if (traceFile)
		await browser.stopTracing();
	if (cdp) {
		const { profile } = await cdp.send('Profiler.stop');
		addProfile(prof, profile, r.origin, r.buffer);
		await cdp.detach();
	}
	r.requests = requestRows(reqs, r.origin);
	if (target.kind !== 'ttyd')
		await closeOurs(page);
	await page.close();
	return r;
}

// ---- profile ---------------------------------------------------------------------

// Adds a CPU profile's samples up to the prompt to prof: self time by
// script and by function (ms).  The profile's clock is the monotonic one
// performance.now() is on, its origin not: the first sample's time is
// taken as the profile's start (Profiler.start ran just before goto).
function addProfile(prof, profile, origin, untilMs) {
	const byId = new Map(profile.nodes.map((n) => [n.id, n]));
	let t = profile.startTime;
	const end = profile.startTime + untilMs * 1000;
	prof.loads++;
	for (let i = 0; i < profile.samples.length; i++) {
		t += profile.timeDeltas[i];
		if (t > end)
			break;
		const dt = (profile.timeDeltas[i + 1] || 0) / 1000;
		const n = byId.get(profile.samples[i]);
		const cf = n.callFrame;
		if (cf.functionName === '(idle)')
			continue;
		// No url: the browser's own work ((program), (garbage
		// collector)), a native function, or an inline script.
		const url = (cf.url || '').replace(/^.*\//, '').replace(/\.[0-9a-f]{12}\./, '.') ||
		    (/^\(/.test(cf.functionName) ? cf.functionName : '(no url)');
		prof.byUrl.set(url, (prof.byUrl.get(url) || 0) + dt);
		const fn = `${cf.functionName || '(anonymous)'} ${url}:${cf.lineNumber + 1}`;
		prof.byFn.set(fn, (prof.byFn.get(fn) || 0) + dt);
	}
}

// ---- trace summary ----------------------------------------------------------------

// The renderer main thread before the prompt: its busy time, the time of
// each kind of work (the first event under the scheduler's own wrappers:
// ParseHTML, EvaluateScript, v8.evaluateModule, FunctionCall, Layout,
// Commit, ...) and a timeline of the pieces of 5 ms or more, with the
// script a FunctionCall ran in.
const WRAPPERS = new Set(['RunTask', 'ThreadControllerImpl::RunTask', 'Receive mojo message',
	'SimpleWatcher::OnHandleReady', 'BlinkScheduler_PerformMicrotaskCheckpoint', 'RunMicrotasks',
	'ThreadPool_RunTask', 'RunNormalPriorityTask']);
function traceSummary(file, untilMs) {
	const ev = JSON.parse(fs.readFileSync(file, 'utf8'));
	const events = Array.isArray(ev) ? ev : ev.traceEvents;
	const names = new Map();
	for (const e of events) {
		if (e.ph === 'M' && e.name === 'thread_name')
			names.set(`${e.pid}:${e.tid}`, e.args.name);
	}
	const navStart = events.find((e) => e.name === 'navigationStart' && e.args && e.args.data &&
	    e.args.data.isLoadingMainFrame && /^http/.test(e.args.data.documentLoaderURL || ''));
	if (!navStart)
		return null;
	const t0 = navStart.ts;
	const until = t0 + untilMs * 1000;
	const xs = events.filter((e) => e.ph === 'X' && e.pid === navStart.pid && e.tid === navStart.tid &&
	    e.ts >= t0 && e.ts < until).sort((a, b) => a.ts - b.ts || b.dur - a.dur);
	const kinds = new Map();
	const pieces = [];
	let busy = 0;
	let topEnd = 0;
	let workEnd = 0;
	for (const e of xs) {
		const dur = e.dur || 0;
		if (e.ts >= topEnd) {
			topEnd = e.ts + dur;
			busy += dur;
		}
		if (WRAPPERS.has(e.name) || e.ts < workEnd)
			continue;
		workEnd = e.ts + dur;
		kinds.set(e.name, (kinds.get(e.name) || 0) + dur);
		if (dur >= 5000) {
			const d = (e.args && (e.args.data || e.args)) || {};
			const url = String(d.url || '').replace(/^.*\//, '').replace(/\.[0-9a-f]{12}\./, '.');
			pieces.push(`${((e.ts - t0) / 1000).toFixed(0)} ${e.name}${url ? `(${url})` : ''} ${(dur / 1000).toFixed(0)}`);
		}
	}
	return { busy: busy / 1000, kinds: [...kinds].sort((a, b) => b[1] - a[1]).slice(0, 10), pieces };
}

// ---- main ---------------------------------------------------------------------------

const fmt = (x) => (Number.isFinite(x) ? x.toFixed(0) : '-');

async function main() {
	let targets = opt.targets;
	if (opt.start) {
		targets = [await startOurs('ptyd-built', 'built'), await startOurs('ptyd-source', 'source')];
		if (opt.ttyd)
			targets.push(await startTtyd('ttyd', opt.ttyd));
		targets.push(...opt.targets);
	}
	for (const t of targets) {
		t.kind = t.kind || (/ttyd/i.test(t.label) ? 'ttyd' : 'ptyd');
		t.cold = [];
		t.warm = [];
		console.log(`# ${t.label}: ${t.url}`);
	}
	if (opt.trace)
		fs.mkdirSync(opt.trace, { recursive: true });

	const browser = await chromium.launch({
		executablePath: CHROMIUM, headless: true,
		args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
			'--disable-background-networking', '--disable-component-update', '--disable-sync'],
	});
	console.log(`# chromium ${browser.version()}, ${opt.n} loads per target, interleaved; ` +
	    `prompt marker '${opt.marker}' in term.buffer.active`);
	const load0 = os.loadavg();
	const cpu0 = cpuTimes();
	console.log(`# machine: ${os.cpus().length} cpus, load ${load0.map((x) => x.toFixed(2)).join(' ')}; busiest: ${busiest()}`);
	try {
		// One unmeasured load each first: the browser's own start-up
		// (its network service, its first renderer) is nobody's page.
		for (const t of targets) {
			const ctx = await browser.newContext({ viewport: VIEWPORT });
			await ctx.addInitScript(watcherScript, opt.marker);
			await loadOnce(ctx, t, null, browser);
			await ctx.close();
		}
		for (let round = 0; round < opt.n; round++) {
			for (let k = 0; k < targets.length; k++) {
				const t = targets[(round + k) % targets.length];
				const ctx = await browser.newContext({ viewport: VIEWPORT });
				await ctx.addInitScript(watcherScript, opt.marker);
				t.cold.push(await loadOnce(ctx, t, null, browser));
				if (opt.warm)
					t.warm.push(await loadOnce(ctx, t, null, browser));
				await ctx.close();
			}
		}
		for (const t of (opt.profile ? targets : [])) {
			t.prof = { loads: 0, byUrl: new Map(), byFn: new Map() };
			for (let i = 0; i < opt.profile; i++) {
				const ctx = await browser.newContext({ viewport: VIEWPORT });
				await ctx.addInitScript(watcherScript, opt.marker);
				await loadOnce(ctx, t, null, browser, t.prof);
				await ctx.close();
			}
		}
		// The traced loads come after, outside the figures: tracing
		// slows the page.
		for (const t of (opt.trace ? targets : [])) {
			const ctx = await browser.newContext({ viewport: VIEWPORT });
			await ctx.addInitScript(watcherScript, opt.marker);
			t.traceFile = path.join(opt.trace, `${t.label}.json`);
			t.traceAt = (await loadOnce(ctx, t, t.traceFile, browser)).buffer;
			await ctx.close();
		}
	} finally {
		await browser.close();
	}
	const cpu1 = cpuTimes();
	const load1 = os.loadavg();
	const busy = 100 * (1 - (cpu1.idle - cpu0.idle) / Math.max(1, cpu1.total - cpu0.total));
	console.log(`# machine during the run: ${busy.toFixed(0)}% of all cpus busy (everyone's, this run's included); ` +
	    `load ${load1.map((x) => x.toFixed(2)).join(' ')}`);

	const report = (kind) => {
		console.log(`\n${kind} loads: ms from navigation start to the prompt in the buffer (paint: next frame)`);
		console.log(`${'target'.padEnd(18)} ${'n'.padStart(3)} ${'median'.padStart(7)} ${'p90'.padStart(6)} ` +
		    `${'min'.padStart(6)} ${'max'.padStart(6)}   ${'paint med'.padStart(9)}  ${'html'.padStart(5)} ${'DCL'.padStart(5)} ${'term'.padStart(5)}`);
		for (const t of targets) {
			const rs = t[kind];
			const b = rs.map((r) => r.buffer);
			console.log(`${t.label.padEnd(18)} ${String(rs.length).padStart(3)} ${fmt(median(b)).padStart(7)} ` +
			    `${fmt(pct(b, 90)).padStart(6)} ${fmt(Math.min(...b)).padStart(6)} ${fmt(Math.max(...b)).padStart(6)}   ` +
			    `${fmt(median(rs.map((r) => r.paint))).padStart(9)}  ${fmt(median(rs.map((r) => r.html))).padStart(5)} ` +
			    `${fmt(median(rs.map((r) => r.dcl))).padStart(5)} ${fmt(median(rs.map((r) => r.found))).padStart(5)}`);
		}
		const base = targets.find((t) => t.kind === 'ttyd');
		if (base) {
			const bb = base[kind].map((r) => r.buffer);
			for (const t of targets) {
				if (t === base)
					continue;
				const b = t[kind].map((r) => r.buffer);
				// Paired: each round's load against the same round's ttyd load.
				const paired = b.map((x, i) => x / bb[i]);
				console.log(`ratio ${t.label}/${base.label}: median ${(median(b) / median(bb)).toFixed(2)}x, ` +
				    `p90 ${(pct(b, 90) / pct(bb, 90)).toFixed(2)}x, median of paired rounds ${median(paired).toFixed(2)}x`);
			}
		}
		// The median request timeline of each target.
		for (const t of targets) {
			const by = new Map();
			for (const r of t[kind]) {
				const seen = new Map();
				for (const q of r.requests) {
					const n = (seen.get(q.name) || 0) + 1;
					seen.set(q.name, n);
					const k = n > 1 ? `${q.name} #${n}` : q.name;
					if (!by.has(k))
						by.set(k, []);
					by.get(k).push(q);
				}
			}
			const rows = [...by].map(([k, qs]) => ({ k, n: qs.length,
				start: median(qs.map((q) => q.start)), headers: median(qs.map((q) => q.headers)),
				server: median(qs.map((q) => q.server)), end: median(qs.map((q) => q.end)) }))
				.sort((a, b) => a.start - b.start);
			console.log(`  ${t.label} requests (medians, ms: sent, headers in, server wait, done):`);
			for (const r of rows)
				console.log(`    ${r.k.padEnd(34)} ${fmt(r.start).padStart(5)} ${fmt(r.headers).padStart(5)} ` +
				    `${fmt(r.server).padStart(5)} ${fmt(r.end).padStart(5)}${r.n < t[kind].length ? ` (${r.n} loads)` : ''}`);
		}
	};
	report('cold');
	if (opt.warm)
		report('warm');
	for (const t of targets) {
		if (!t.prof)
			continue;
		const per = (m) => [...m].sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, v / t.prof.loads]);
		const total = per(t.prof.byUrl).reduce((a, [, v]) => a + v, 0);
		console.log(`\nprofile ${t.label} (${t.prof.loads} loads, mean ms before the prompt): ${total.toFixed(0)} sampled`);
		console.log('  by script: ' + per(t.prof.byUrl).slice(0, 12).map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', '));
		console.log('  by function: ' + per(t.prof.byFn).slice(0, 15).map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', '));
	}
	if (opt.trace) {
		for (const t of targets) {
			if (!t.traceFile)
				continue;
			const s = traceSummary(t.traceFile, t.traceAt);
			if (!s)
				continue;
			console.log(`\ntrace ${t.traceFile} (prompt at ${fmt(t.traceAt)} ms): main thread busy ${fmt(s.busy)} ms before it`);
			console.log('  by kind (ms): ' + s.kinds.map(([n, d]) => `${n} ${(d / 1000).toFixed(0)}`).join(', '));
			console.log('  pieces of 5 ms or more (at ms, what, ms): ' + s.pieces.join('; '));
		}
	}
}

try {
	await main();
} catch (e) {
	console.error(`firstprompt: ${e.stack || e.message}`);
	process.exitCode = 1;
} finally {
	stopAll();
}
