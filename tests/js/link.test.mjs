// link.test.mjs -- node:test tests of the link's state machine
// (web/link.mjs) and the input queue (web/input.mjs), with stand-ins for
// fetch, the API, the page and a clock that moves only when told.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { Link } from '../../web/link.mjs';
import { InputQueue } from '../../web/input.mjs';

const SID = 'sid1';
const settle = () => new Promise((r) => setImmediate(r));

// A clock with timers that run only in advance().
class Clock {
	constructor() {
		this.t = 0;
		this.next = 1;
		this.timers = new Map();
	}

	setTimeout(fn, ms) {
		const id = this.next++;
		this.timers.set(id, { at: this.t + ms, fn });
		return id;
	}

	clearTimeout(id) {
		this.timers.delete(id);
	}

	async advance(ms) {
		const end = this.t + ms;
		for (;;) {
			let first = null;
			for (const [id, tm] of this.timers)
				if (tm.at <= end && (first === null || tm.at < this.timers.get(first).at))
					first = id;
			if (first === null)
				break;
			const tm = this.timers.get(first);
			this.timers.delete(first);
			this.t = tm.at;
			tm.fn();
			await settle();
		}
		this.t = end;
		await settle();
	}
}

// A response body whose chunks the test hands over.
function body() {
	const waiting = [];
	const queued = [];
	const enc = new TextEncoder();
	const give = (r) => (waiting.length ? waiting.shift()(r) : queued.push(r));
	return {
		reads: 0,
		getReader() {
			return { read: () => { this.reads++; return queued.length ? Promise.resolve(queued.shift()) : new Promise((r) => waiting.push(r)); } };
		},
		send(text) { give({ done: false, value: enc.encode(text) }); },
		end() { give({ done: true }); },
	};
}

// A deferred promise.
function later() {
	let resolve, reject;
	const p = new Promise((a, b) => { resolve = a; reject = b; });
	return Object.assign(p, { resolve, reject });
}

function setup(extra = {}) {
	const clock = new Clock();
	const log = { status: [], notices: [], output: [], ended: [], fetches: [], lists: [], posts: [] };
	const ui = {
		status: (kind, text, short) => log.status.push({ kind, text, short }),
		notice: (text, cause) => log.notices.push(text),
		clearNotice() {},
		live: () => { log.live = (log.live || 0) + 1; },
		ended: (text) => log.ended.push(text),
		restarted() {},
		output: (text, replayed) => log.output.push([text, replayed]),
		full: () => false,
		behind: () => false,
		drained: () => Promise.resolve(),
		isActive: () => true,
		adopt() {},
		size: () => ({ rows: 24, cols: 80 }),
		sizeSent() {},
	};
	const env = {
		sid: SID,
		limits: { silenceMs: 8000, inputChars: Infinity },
		setTimeout: (fn, ms) => clock.setTimeout(fn, ms),
		clearTimeout: (id) => clock.clearTimeout(id),
		now: () => clock.t,
		ui,
		fetch: (url, init) => { const d = later(); log.fetches.push({ url, init, d }); return d; },
		getJson: (ep, signal) => { const d = later(); log.lists.push({ ep, signal, d }); return d; },
		post: (ep, b) => { const d = later(); log.posts.push({ ep, b, d }); return d; },
		...extra,
	};
	return { clock, log, ui, link: new Link(env) };
}

// A link started fresh and open on a stream; returns that stream's body.
async function opened(s) {
	s.link.start(true);
	s.log.posts.at(-1).d.resolve({ status: 200, data: { ok: true }, retryAfterMs: 0 });
	await settle();
	assert.equal(s.link.state, 'connecting');
	const b = body();
	s.log.fetches.at(-1).d.resolve({ status: 200, body: b });
	await settle();
	assert.equal(s.link.state, 'open');
	return b;
}

test('start, open, output, and the position kept for the next stream', async () => {
	const s = setup();
	const b = await opened(s);
	assert.equal(s.log.live, 1);
	assert.equal(s.log.status.at(-1).kind, 'connected');
	assert.match(s.log.fetches[0].url, /attach=screen/);
	assert.doesNotMatch(s.log.fetches[0].url, /last_event_id/);
	b.send('id: 42\nevent: output\ndata: {"text":"hi"}\n\n');
	await settle();
	assert.deepEqual(s.log.output, [['hi', true]], 'replayed until the heartbeat');
	b.send('event: heartbeat\ndata: {}\n\nid: 50\nevent: output\ndata: {"text":"!"}\n\n');
	await settle();
	assert.deepEqual(s.log.output.at(-1), ['!', false]);
	assert.equal(s.link.lastId, '50');
	b.end();
	await settle();
	assert.equal(s.link.state, 'waiting');
	assert.equal(s.log.status.at(-1).short, 'reconnecting (1)');
	await s.clock.advance(250);
	assert.equal(s.link.state, 'recovering');
	s.log.lists.at(-1).d.resolve({ terminals: [{ session_id: SID, running: true, rows: 24, cols: 80 }] });
	await settle();
	assert.equal(s.link.state, 'connecting');
	assert.match(s.log.fetches.at(-1).url, /last_event_id=50/);
});

test('entering a state clears the timers of the one before', async () => {
	const s = setup();
	await opened(s);
	const armed = s.clock.timers.size;
	assert.equal(armed, 2, 'open: silence and the replay\'s end');
	s.link.drop();
	assert.equal(s.link.state, 'waiting');
	assert.equal(s.clock.timers.size, 1, 'waiting: its retry only');
	assert.equal(s.log.fetches[0].init.signal.aborted, true, 'the stream\'s request is aborted');
	s.link.closed({ reason: 'closed', exit_code: null });
	assert.equal(s.link.state, 'ended');
	assert.equal(s.clock.timers.size, 0);
	await s.clock.advance(60000);
	assert.equal(s.link.state, 'ended');
	assert.deepEqual(s.log.ended, ['The shell was closed.']);
});

test('an answer for a state already left is dropped', async () => {
	const s = setup();
	await opened(s);
	s.link.drop();
	await s.clock.advance(250);
	assert.equal(s.link.state, 'recovering');
	const list = s.log.lists.at(-1);
	s.link.closed({ reason: 'exit', exit_code: 3 });
	assert.equal(list.signal.aborted, true);
	list.d.resolve({ terminals: [{ session_id: SID, running: true }] });
	await settle();
	assert.equal(s.link.state, 'ended');
	assert.equal(s.log.fetches.length, 1, 'no stream after the end');
	assert.equal(s.log.status.at(-1).kind, 'exited');
	assert.equal(s.log.status.at(-1).text, 'ended (exit 3)');
});

test('a terminal no longer listed has ended while the page was away', async () => {
	const s = setup();
	await opened(s);
	s.log.fetches.at(-1).d.then((r) => r.body.end());
	s.link.drop();
	await s.clock.advance(250);
	s.log.lists.at(-1).d.resolve({ terminals: [] });
	await settle();
	assert.equal(s.link.state, 'ended');
	assert.deepEqual(s.log.ended, ['The shell was closed while this page was away.']);
});

test('reconnects back off, and the list\'s own words say why', async () => {
	const s = setup();
	await opened(s);
	s.link.drop();
	const waits = [];
	for (let i = 0; i < 4; i++) {
		const t0 = s.clock.t;
		await s.clock.advance(10000);
		assert.equal(s.link.state, 'recovering');
		waits.push(s.clock.t - t0);
		s.log.lists.at(-1).d.reject(Object.assign(new Error('HTTP 502'), { status: 502, why: 'host b is down' }));
		await settle();
		assert.equal(s.link.state, 'waiting');
		s.clock.t = t0 + waits.at(-1);     // measure from the entry
	}
	assert.equal(s.log.status.at(-1).text, 'host b is down, retrying (attempt 5)');
	assert.equal(s.log.status.at(-1).kind, 'unreachable');
});

test('silence on a stream that never carried a byte: a buffering proxy', async () => {
	const s = setup();
	await opened(s);
	await s.clock.advance(8000);
	assert.equal(s.link.state, 'probing');
	s.log.lists.at(-1).d.resolve({ terminals: [] });
	await settle();
	assert.equal(s.link.state, 'buffered');
	assert.equal(s.log.status.at(-1).kind, 'buffered');
	await s.clock.advance(5000);
	assert.equal(s.link.state, 'recovering');
});

test('silence after bytes: reconnect with the position', async () => {
	const s = setup();
	const b = await opened(s);
	b.send('id: 7\nevent: output\ndata: {"text":"x"}\n\n');
	await settle();
	await s.clock.advance(7999);
	assert.equal(s.link.state, 'open');
	b.send(': heartbeat\n\n');
	await settle();
	await s.clock.advance(7999);
	assert.equal(s.link.state, 'open', 'a heartbeat is life');
	await s.clock.advance(1);
	assert.equal(s.link.state, 'recovering');
	assert.equal(s.log.status.at(-1).text, 'no data from the server: reconnecting…');
});

test('start: a busy server is retried after its Retry-After, a refusal ends it', async () => {
	const s = setup();
	s.link.start(true);
	s.log.posts.at(-1).d.resolve({ status: 503, data: { error: 'busy' }, retryAfterMs: 2000 });
	await settle();
	assert.equal(s.link.state, 'start-wait');
	assert.equal(s.log.status.at(-1).short, 'busy, retry 1');
	await s.clock.advance(1999);
	assert.equal(s.link.state, 'start-wait');
	await s.clock.advance(1);
	assert.equal(s.link.state, 'starting');
	s.log.posts.at(-1).d.resolve({ status: 403, data: { error: 'not yours' }, retryAfterMs: 0 });
	await settle();
	assert.equal(s.link.state, 'ended');
	assert.deepEqual(s.log.ended, ['The shell could not be started: not yours.']);
	assert.equal(s.log.live, undefined);
});

// What lighttpd, Apache mod_fcgid and mod_cgid answer for a request their
// ptyd.fcgi died under, and ptyd.fcgi's own 500.
const GONE = { status: 500, data: { error: 'ptyd.fcgi is not running' }, retryAfterMs: 1000 };
const BROKEN = { status: 500, data: { error: 'internal error' }, retryAfterMs: 0 };
const jsonRes = (a) => ({ status: a.status, body: null, json: () => Promise.resolve(a.data) });

test('start: a front\'s 500 for a dead ptyd.fcgi is retried; ptyd.fcgi\'s own 500 ends it', async () => {
	const s = setup();
	s.link.start(true);
	s.log.posts.at(-1).d.resolve(GONE);
	await settle();
	assert.equal(s.link.state, 'start-wait');
	assert.equal(s.log.status.at(-1).text, 'server busy (ptyd.fcgi is not running), retrying (attempt 1)');
	await s.clock.advance(1000);
	assert.equal(s.link.state, 'starting');
	assert.equal(s.log.posts.length, 2);
	s.log.posts.at(-1).d.resolve(BROKEN);
	await settle();
	assert.equal(s.link.state, 'ended');
	assert.deepEqual(s.log.ended, ['The shell could not be started: internal error.']);
});

test('the stream and the list: a front\'s 500 for a dead ptyd.fcgi is a server away', async () => {
	const s = setup();
	await opened(s);
	s.link.drop();
	await s.clock.advance(250);
	assert.equal(s.link.state, 'recovering');
	s.log.lists.at(-1).d.reject(Object.assign(new Error('HTTP 500'), { status: 500, why: GONE.data.error }));
	await settle();
	assert.equal(s.link.state, 'waiting');
	assert.equal(s.log.status.at(-1).kind, 'unreachable');
	assert.equal(s.log.status.at(-1).text, 'ptyd.fcgi is not running, retrying (attempt 2)');
	await s.clock.advance(500);
	s.log.lists.at(-1).d.resolve({ terminals: [{ session_id: SID, running: true }] });
	await settle();
	assert.equal(s.link.state, 'connecting');
	s.log.fetches.at(-1).d.resolve(jsonRes(GONE));
	await settle();
	assert.equal(s.link.state, 'waiting');
	assert.equal(s.log.status.at(-1).kind, 'unreachable');
	assert.equal(s.log.status.at(-1).text, 'ptyd.fcgi is not running, retrying (attempt 3)');
	// ptyd.fcgi's own 500 on the stream: reconnected as before, not as away.
	await s.clock.advance(1000);
	s.log.lists.at(-1).d.resolve({ terminals: [{ session_id: SID, running: true }] });
	await settle();
	s.log.fetches.at(-1).d.resolve(jsonRes(BROKEN));
	await settle();
	assert.equal(s.link.state, 'waiting');
	assert.equal(s.log.status.at(-1).kind, 'reconnecting');
});

test('a running terminal is attached without start', async () => {
	const s = setup();
	const listed = Promise.resolve({ terminals: [{ session_id: SID, running: true, rows: 5, cols: 9 }] });
	s.link.start(false, listed);
	await settle();
	assert.equal(s.link.state, 'connecting');
	assert.equal(s.log.posts.length, 0);
});

test('a 404 stream asks the list; terminal_closed ends; restarted follows', async () => {
	const s = setup();
	s.link.start(true);
	s.log.posts.at(-1).d.resolve({ status: 200 });
	await settle();
	s.log.fetches.at(-1).d.resolve({ status: 404, body: body() });
	await settle();
	assert.equal(s.link.state, 'recovering');
	s.log.lists.at(-1).d.resolve({ terminals: [{ session_id: SID, running: true }] });
	await settle();
	const b = body();
	s.log.fetches.at(-1).d.resolve({ status: 200, body: b });
	await settle();
	b.send('id: 9\nevent: terminal_closed\ndata: {"reason":"restarted"}\n\n');
	await settle();
	assert.equal(s.link.state, 'connecting');
	assert.equal(s.link.lastId, null, 'a new shell: from its start');
	const b2 = body();
	s.log.fetches.at(-1).d.resolve({ status: 200, body: b2 });
	await settle();
	b2.send('event: terminal_closed\ndata: {"reason":"exit","exit_code":0}\n\nevent: output\ndata: {"text":"late"}\n\n');
	await settle();
	assert.equal(s.link.state, 'ended');
	assert.deepEqual(s.log.ended, ['The shell exited with code 0.']);
	assert.ok(!s.log.output.some(([t]) => t === 'late'), 'nothing after the end is written');
});

test('xterm behind: the stream is not read until it drains', async () => {
	const s = setup();
	let full = false;
	const drained = later();
	s.ui.full = () => full;
	s.ui.drained = () => drained;
	const b = await opened(s);
	full = true;
	b.send('event: output\ndata: {"text":"1"}\n\nevent: output\ndata: {"text":"2"}\n\n');
	await settle();
	assert.deepEqual(s.log.output.map(([t]) => t), ['1'], 'one event, then the pause');
	const reads = b.reads;
	await s.clock.advance(60000);
	assert.equal(s.link.state, 'open', 'the pause is not silence');
	assert.equal(b.reads, reads);
	full = false;
	drained.resolve();
	await settle();
	assert.deepEqual(s.log.output.map(([t]) => t), ['1', '2']);
	assert.equal(b.reads, reads + 1);
});

test('Ctrl+C in a flood attaches again for the screen, and says what it skipped', async () => {
	const s = setup();
	const b = await opened(s);
	b.send('id: 1000\nevent: output\ndata: {"text":"' + 'y'.repeat(140 * 1024) + '"}\n\n');
	await settle();
	s.link.interrupted();
	await s.clock.advance(50);
	assert.equal(s.link.state, 'connecting');
	assert.equal(s.link.skips, 1);
	assert.doesNotMatch(s.log.fetches.at(-1).url, /last_event_id/);
	const b2 = body();
	s.log.fetches.at(-1).d.resolve({ status: 200, body: b2 });
	await settle();
	b2.send('id: 5000\nevent: screen\ndata: {"text":"$ "}\n\n');
	await settle();
	assert.equal(s.log.notices.at(-1), 'skipped 4000 bytes of output after Ctrl+C');
	assert.deepEqual(s.log.output.at(-1), ['\x1bc$ ', true]);
});

test('Ctrl+C without a flood skips nothing', async () => {
	const s = setup();
	const b = await opened(s);
	b.send('event: output\ndata: {"text":"^C"}\n\n');
	await settle();
	s.link.interrupted();
	await s.clock.advance(100);
	assert.equal(s.link.state, 'open');
	assert.equal(s.link.skips, 0);
});

// ---- the input queue ----

function queue(live = true) {
	const clock = new Clock();
	const sent = [];
	const notices = [];
	const env = {
		sid: SID, viewerId: 'v', limits: { inputChars: Infinity },
		live: () => live, ended: () => false,
		notice: (t) => notices.push(t), clearNotice() {}, rtt() {},
		setTimeout: (fn, ms) => clock.setTimeout(fn, ms), clearTimeout: (id) => clock.clearTimeout(id),
		now: () => clock.t,
		post: (ep, b) => { const d = later(); sent.push({ b, d }); return d; },
	};
	return { q: new InputQueue(env), clock, sent, notices, env };
}

test('input: one request in flight, what is typed meanwhile goes next, together', async () => {
	const { q, sent } = queue();
	q.add('a');
	q.add('b');
	q.add('c');
	assert.equal(sent.length, 1);
	assert.deepEqual(sent[0].b, { session_id: SID, data: 'a', input_id: 'v:1' });
	sent[0].d.resolve({ status: 200 });
	await settle();
	assert.equal(sent.length, 2);
	assert.deepEqual(sent[1].b, { session_id: SID, data: 'bc', input_id: 'v:2' });
});

test('input: a piece with no answer goes again with its id, not merged', async () => {
	const { q, sent, clock, notices } = queue();
	q.add('ls');
	q.add('\r');
	sent[0].d.reject(new Error('network'));
	await settle();
	assert.match(notices.at(-1), /not reaching the server/);
	await clock.advance(249);
	assert.equal(sent.length, 1, 'nothing goes before the retry');
	await clock.advance(1);
	assert.deepEqual(sent[1].b, { session_id: SID, data: 'ls', input_id: 'v:1' });
	q.add('x');
	assert.equal(sent.length, 2, 'one request in flight');
	sent[1].d.resolve({ status: 429, retryAfterMs: 1000 });
	await settle();
	await clock.advance(999);
	assert.equal(sent.length, 2);
	await clock.advance(1);
	assert.deepEqual(sent[2].b.input_id, 'v:1');
	sent[2].d.resolve({ status: 200 });
	await settle();
	assert.deepEqual(sent[3].b, { session_id: SID, data: '\rx', input_id: 'v:2' });
});

test('input: a front\'s 500 for a dead ptyd.fcgi sends the piece again, same id', async () => {
	const { q, sent, clock, notices } = queue();
	q.add('ls');
	q.add('\r');
	sent[0].d.resolve(GONE);
	await settle();
	await clock.advance(999);
	assert.equal(sent.length, 1, 'nothing before its Retry-After');
	await clock.advance(1);
	assert.deepEqual(sent[1].b, { session_id: SID, data: 'ls', input_id: 'v:1' });
	sent[1].d.resolve({ status: 200 });
	await settle();
	assert.deepEqual(sent[2].b, { session_id: SID, data: '\r', input_id: 'v:2' });
	assert.deepEqual(notices, []);
});

test('input: ptyd.fcgi\'s own 500 is final: the piece is not sent again', async () => {
	const { q, sent, clock, notices } = queue();
	q.add('ls');
	q.add('\r');
	sent[0].d.resolve(BROKEN);
	await settle();
	assert.deepEqual(notices, ['input not delivered: internal error']);
	assert.deepEqual(sent[1].b, { session_id: SID, data: '\r', input_id: 'v:2' });
	sent[1].d.resolve({ status: 200 });
	await settle();
	await clock.advance(60000);
	assert.equal(sent.length, 2);
});

test('input: 413 halves the pieces and loses nothing', async () => {
	const { q, sent, env } = queue();
	q.add('abcdefgh');
	sent[0].d.resolve({ status: 413 });
	await settle();
	assert.equal(env.limits.inputChars, 4);
	assert.equal(sent[1].b.data, 'abcd');
	sent[1].d.resolve({ status: 200 });
	await settle();
	assert.equal(sent[2].b.data, 'efgh');
});

test('input: typed before the shell is there, it waits; cleared at the end', async () => {
	let live = false;
	const { q, sent, env } = queue();
	env.live = () => live;
	q.add('early');
	assert.equal(sent.length, 0);
	live = true;
	q.pump();
	assert.equal(sent[0].b.data, 'early');
	q.clear();
	sent[0].d.resolve({ status: 200 });
	await settle();
	assert.equal(sent.length, 1);
});

test('a watchers event goes to the page and moves no position', async () => {
	const s = setup();
	const seen = [];
	s.ui.watchers = (w) => seen.push(w);
	const b = await opened(s);
	b.send('event: watchers\ndata: {"watchers": [{"actor": "bob", "role": "view", "share": 3, "since": 5}]}\n\n');
	await settle();
	assert.equal(s.link.lastId, null, 'no id before: none after');
	b.send('id: 77\nevent: output\ndata: {"text":"x"}\n\n');
	b.send('event: watchers\ndata: {"watchers": []}\n\n');
	await settle();
	assert.equal(s.link.lastId, '77');
	assert.deepEqual(seen, [[{ actor: 'bob', role: 'view', share: 3, since: 5 }], []]);
	assert.deepEqual(s.log.output, [['x', true]]);
	assert.equal(s.link.state, 'open');
});

// A link opened from a share link, attached through GET shared.
async function sharedOpen(s) {
	s.link.start(false);
	await settle();
	assert.equal(s.log.lists.at(-1).ep, 'shared');
	s.log.lists.at(-1).d.resolve({ session_id: SID, role: 'view', running: true, rows: 30, cols: 100 });
	await settle();
	assert.equal(s.link.state, 'connecting');
	const b = body();
	s.log.fetches.at(-1).d.resolve({ status: 200, body: b });
	await settle();
	assert.equal(s.link.state, 'open');
	return b;
}

test('a share link: GET shared, never start or list; its size adopted', async () => {
	const s = setup({ shared: true });
	const sizes = [];
	s.ui.isActive = () => false;
	s.ui.adopt = (rows, cols) => sizes.push([rows, cols]);
	const b = await sharedOpen(s);
	assert.deepEqual(sizes, [[30, 100]]);
	assert.equal(s.log.posts.length, 0, 'no start');
	assert.ok(s.log.lists.every((l) => l.ep === 'shared'), 'no list');
	// A dropped stream asks shared again, then resumes.
	b.send('id: 9\nevent: output\ndata: {"text":"a"}\n\n');
	await settle();
	b.end();
	await settle();
	await s.clock.advance(250);
	assert.equal(s.link.state, 'recovering');
	assert.equal(s.log.lists.at(-1).ep, 'shared');
	s.log.lists.at(-1).d.resolve({ session_id: SID, role: 'view', running: true, rows: 31, cols: 101 });
	await settle();
	assert.equal(s.link.state, 'connecting');
	assert.match(s.log.fetches.at(-1).url, /last_event_id=9/);
	assert.deepEqual(sizes.at(-1), [31, 101]);
	assert.equal(s.log.posts.length, 0);
});

test('a share ended (revoked or expired) ends the page, with no reconnect', async () => {
	for (const [reason, words] of [['revoked', /stopped sharing/], ['expired', /expired/]]) {
		const s = setup({ shared: true });
		const b = await sharedOpen(s);
		b.send('event: share_ended\ndata: {"reason": "' + reason + '"}\n\n');
		await settle();
		assert.equal(s.link.state, 'ended');
		assert.match(s.log.ended[0], words);
		const n = s.log.fetches.length + s.log.lists.length;
		await s.clock.advance(60000);
		assert.equal(s.log.fetches.length + s.log.lists.length, n, 'nothing asked after the end');
	}
});

test('a share refused (403) ends the page at once, from GET shared or the stream', async () => {
	const s = setup({ shared: true });
	s.link.start(false);
	await settle();
	s.log.lists.at(-1).d.reject(Object.assign(new Error('HTTP 403'), { status: 403, why: 'share not valid' }));
	await settle();
	assert.equal(s.link.state, 'ended');
	assert.match(s.log.ended[0], /not valid/);
	await s.clock.advance(60000);
	assert.equal(s.log.lists.length, 1);
	assert.equal(s.log.fetches.length, 0);

	const t = setup({ shared: true });
	t.link.start(false);
	await settle();
	t.log.lists.at(-1).d.resolve({ session_id: SID, role: 'view', running: true, rows: 24, cols: 80 });
	await settle();
	t.log.fetches.at(-1).d.resolve({ status: 403, body: body() });
	await settle();
	assert.equal(t.link.state, 'ended');
	await t.clock.advance(60000);
	assert.equal(t.log.fetches.length, 1);
	assert.equal(t.log.lists.length, 1);
});

test('a shared shell restarted by its owner ends the share; one not running has ended', async () => {
	const s = setup({ shared: true });
	const b = await sharedOpen(s);
	b.send('id: 5\nevent: terminal_closed\ndata: {"reason": "restarted", "exit_code": null}\n\n');
	await settle();
	assert.equal(s.link.state, 'ended');
	assert.match(s.log.ended[0], /restarted/);

	const t = setup({ shared: true });
	t.link.start(false);
	await settle();
	t.log.lists.at(-1).d.resolve({ session_id: SID, role: 'view', running: false, rows: 24, cols: 80 });
	await settle();
	assert.equal(t.link.state, 'ended');
	assert.equal(t.log.fetches.length, 0);
});

test('a resize event goes to the page in its place among the output and moves no position', async () => {
	// A view-only page asked GET shared every 10 s for the owner's size;
	// the stream's resize event now says it, where it falls in the output.
	const s = setup();
	const seen = [];
	s.ui.output = (text) => seen.push(text);
	s.ui.resized = (rows, cols) => seen.push({ rows, cols });
	const b = await opened(s);
	b.send('id: 10\nevent: output\ndata: {"text":"before"}\n\n');
	b.send('event: resize\ndata: {"rows": 30, "cols": 100}\n\n');
	b.send('id: 15\nevent: output\ndata: {"text":"after"}\n\n');
	b.send('event: resize\ndata: {"rows": "x", "cols": 100}\n\n');
	await settle();
	assert.deepEqual(seen, ['before', { rows: 30, cols: 100 }, 'after']);
	assert.equal(s.link.lastId, '15');
	b.send('event: resize\ndata: {"rows": 31, "cols": 100}\n\n');
	await settle();
	assert.equal(s.link.lastId, '15', 'no id of its own');
	assert.deepEqual(seen.at(-1), { rows: 31, cols: 100 });
	assert.equal(s.link.state, 'open');
});
