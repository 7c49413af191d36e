// front.mjs -- browser tests of the page behind a front other than nginx:
// lighttpd with mod_fastcgi (lighttpd/ptyd-fastcgi.conf, as shipped), which
// starts ptyd.fcgi itself and answers 500 {"error": "ptyd.fcgi is not
// running"} for a request ptyd.fcgi died under.
//
// Owns: these tests and the lighttpd they start: its config, log and
// socket in a temp dir of its own, the lighttpd process and the ptyd.fcgi
// it runs, all gone when the test ends (or the runner exits).  Does not
// own: the runner, the stacks, the helpers (run.mjs passes them in as
// `h`).  lighttpd's ptyd.fcgi reads the main stack's ptyd.conf, so it
// talks to the main stack's ptyd.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const BUILDDIR = process.env.PTYD_BUILDDIR || REPO;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The children of pid (lighttpd's: the ptyd.fcgi it started).
function children(pid) {
	try {
		return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/)
		    .filter((s) => s !== '').map(Number);
	} catch {
		return [];
	}
}

function comm(pid) {
	try {
		return fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
	} catch {
		return null;
	}
}

function signal(pid, sig) {
	try {
		process.kill(pid, sig);
	} catch {
		// gone already
	}
}

// lighttpd -D on a free port in front of the stack's ptyd: the page from
// web/ and the API through the shipped ptyd-fastcgi.conf.
async function startLighttpd(h, stack) {
	const bin = ['/usr/sbin/lighttpd', '/usr/bin/lighttpd'].find((p) => fs.existsSync(p));
	if (bin === undefined)
		throw new Error('lighttpd is not installed (Debian package lighttpd; scripts/setup installs it)');
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ptyd-browser-lighttpd-'));
	const port = await h.freePort();
	const conf = path.join(dir, 'lighttpd.conf');
	fs.writeFileSync(conf, [
		`server.document-root = "${REPO}/web"`,
		'server.bind = "127.0.0.1"',
		`server.port = ${port}`,
		`server.errorlog = "${dir}/error.log"`,
		'index-file.names = ( "index.html" )',
		'mimetype.assign = ( ".html" => "text/html; charset=utf-8", ".mjs" => "text/javascript; charset=utf-8",',
		'    ".js" => "text/javascript; charset=utf-8", ".css" => "text/css; charset=utf-8",',
		'    ".svg" => "image/svg+xml" )',
		`var.ptyd_fcgi = "${BUILDDIR}/fcgi/ptyd.fcgi"`,
		`var.ptyd_socket = "${dir}/fcgi.sock"`,
		`var.ptyd_lighttpd = "${REPO}/lighttpd"`,
		`include "${REPO}/lighttpd/ptyd-fastcgi.conf"`,
		'',
	].join('\n'));
	const out = fs.openSync(path.join(dir, 'stdout.log'), 'a');
	// lighttpd passes its environment to the ptyd.fcgi it starts.
	const child = spawn(bin, ['-D', '-f', conf], {
		env: { ...stack.env, PTYD_CONFIG: path.join(stack.state, 'ptyd.conf') },
		stdio: ['ignore', out, out],
	});
	fs.closeSync(out);
	const fcgis = new Set();
	const kill = () => {
		for (const p of [...fcgis, ...children(child.pid)])
			if (comm(p) === 'ptyd.fcgi')
				signal(p, 'SIGKILL');
		signal(child.pid, 'SIGKILL');
	};
	process.on('exit', kill);
	const lt = {
		base: `http://127.0.0.1:${port}/`,
		// The ptyd.fcgi lighttpd runs now (one: --processes 1).
		fcgi() {
			const p = children(child.pid).find((k) => comm(k) === 'ptyd.fcgi');
			if (p !== undefined)
				fcgis.add(p);
			return p;
		},
		async stop() {
			lt.fcgi();
			signal(child.pid, 'SIGTERM');
			for (let i = 0; i < 50 && child.exitCode === null && child.signalCode === null; i++)
				await sleep(100);
			kill();
			process.removeListener('exit', kill);
			fs.rmSync(dir, { recursive: true, force: true });
		},
		log: () => fs.readFileSync(path.join(dir, 'error.log'), 'utf8'),
	};
	try {
		await h.poll(async () => {
			if (child.exitCode !== null)
				throw new Error(`lighttpd exited: ${fs.readFileSync(path.join(dir, 'stdout.log'), 'utf8')}`);
			const r = await fetch(`${lt.base}api/terminal/health`).catch(() => null);
			return r !== null && r.status === 200;
		}, 'lighttpd to serve the API', 10000);
	} catch (e) {
		await lt.stop();
		throw e;
	}
	return lt;
}

export function frontTests(test, h) {
	test('behind lighttpd, keys typed while ptyd.fcgi is killed under their request arrive once each', async ({ ctx, errors }) => {
		// Regression: lighttpd answers a request ptyd.fcgi died under
		// with 500 "ptyd.fcgi is not running" (nginx with 502), and
		// the page dropped that piece of input: the keys were lost.
		const lt = await startLighttpd(h, h.main());
		let page = null;
		try {
			page = await h.openPage(ctx, errors, `${lt.base}?session=${h.newSid('lt500')}`);
			const answers = [];
			page.on('response', (r) => {
				if (r.url().endsWith('/api/terminal/input'))
					r.text().then((t) => answers.push(`${r.status()} ${t}`), () => {});
			});
			await page.evaluate(() => window.ptyd.term.focus());
			await page.keyboard.type('echo lt500-');
			await h.poll(async () => (await h.screenLines(page)).some((l) => l.includes('echo lt500-')),
			    'the first keys echoed');
			const fcgi = lt.fcgi();
			if (fcgi === undefined)
				throw new Error('lighttpd runs no ptyd.fcgi');
			// Stopped, ptyd.fcgi takes no request: the next keys' request
			// waits in its socket, sent by lighttpd, unread.  Killed then,
			// it dies under that request: lighttpd answers it 500.
			signal(fcgi, 'SIGSTOP');
			let killed = false;
			try {
				const sent = page.waitForRequest((r) => r.url().endsWith('/api/terminal/input'), { timeout: 5000 });
				await page.keyboard.type('xyz');
				await page.keyboard.press('Enter');
				await sent;
				await sleep(300);
				signal(fcgi, 'SIGKILL');
				killed = true;
			} finally {
				if (!killed)
					signal(fcgi, 'SIGCONT');
			}
			const line = await h.poll(async () => (await h.screenLines(page)).find((l) => /^lt500-/.test(l.trim())),
			    'the echo\'s output', 15000).catch(() => null);
			const lines = await h.screenLines(page);
			const shown = lines.filter((l) => l.trim() !== '').join('\n');
			if (!answers.some((a) => a.startsWith('500 ') && a.includes('"ptyd.fcgi is not running"')))
				throw new Error(`no input was answered lighttpd's 500: ${JSON.stringify(answers)}\n${lt.log()}`);
			if (line === null || line.trim() !== 'lt500-xyz')
				throw new Error(`the keys did not arrive whole (answers ${JSON.stringify(answers)}):\n${shown}`);
			await h.type(page, 'echo after-lt500');
			await h.waitLine(page, 'after-lt500');
			const again = await h.screenLines(page);
			const outs = again.map((l) => l.trim()).filter((l) => /^lt500-/.test(l));
			if (outs.length !== 1 || again.some((l) => /command not found/.test(l)))
				throw new Error(`typed more than once:\n${again.filter((l) => l.trim()).join('\n')}`);
			// The 500, the 503s while lighttpd starts ptyd.fcgi again and
			// the stream it cut are expected on the console, nothing else.
			const expected = /status of 50[03]|net::ERR_(INCOMPLETE_CHUNKED_ENCODING|EMPTY_RESPONSE|CONNECTION_(RESET|REFUSED|CLOSED))/;
			for (let i = errors.length - 1; i >= 0; i--) {
				if (expected.test(errors[i]))
					console.log(`# expected: ${errors.splice(i, 1)[0]}`);
			}
		} finally {
			// Closed first: lighttpd's stop would cut its stream.
			if (page !== null)
				await page.close().catch(() => {});
			await lt.stop();
		}
	});
}
