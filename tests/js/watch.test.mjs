// watch.test.mjs -- node:test tests of the pure parts of watching, sharing
// and replaying (issue 34): the asciicast reader (whole, cut, malformed),
// the player's timeline, clock and seek, the fragment's token, the
// watchers' words.  Run by scripts/test (suite js); needs only node.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { parseCast, parseSize, outputText, timeline, dueAt, mapPosition } from '../../web/cast.mjs';
import { Clock, Replay, nextStep, IDLE_DEFAULT, CHUNK_CHARS } from '../../web/replay.mjs';
import { parseFragment, withoutShare, shareLink, playLink, TOKEN_RE } from '../../web/fragment.mjs';
import { watcherRows, othersCount } from '../../web/watchers.mjs';
import { expiresIn, shareUser } from '../../web/share.mjs';
import { fmtClock, fmtBytes, recordingRow } from '../../web/player.mjs';

const HEADER = '{"version": 2, "width": 80, "height": 24, "timestamp": 1700000000, "env": {"TERM": "xterm-256color"}}';
const TOKEN = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123_-9';

function cast(lines, end = '\n') {
	return [HEADER, ...lines.map((l) => JSON.stringify(l))].join('\n') + end;
}

// ---- cast.mjs ----

test('a whole recording: header, events in order, output joined', () => {
	const c = parseCast(cast([[0.1, 'o', 'a'], [0.5, 'r', '100x30'], [1.25, 'o', 'b\u00e9'], [1.5, 'i', 'ls\r']]));
	assert.equal(c.header.width, 80);
	assert.equal(c.header.height, 24);
	assert.equal(c.events.length, 4);
	assert.deepEqual(c.events[1].size, { cols: 100, rows: 30 });
	assert.equal(outputText(c.events), 'ab\u00e9');
	assert.equal(c.cut, null);
	assert.equal(c.skipped, 0);
	assert.equal(c.partial, false);
});

test('a cut recording: its m line gives the reason, and output before it stays', () => {
	const c = parseCast(cast([[0.1, 'o', 'x'], [2, 'o', 'y'], [2.5, 'm', 'cut: disk']]));
	assert.equal(c.cut, 'disk');
	assert.equal(outputText(c.events), 'xy');
	assert.equal(c.skipped, 0);
});

test('a recording cut in the middle of its last line: what came before plays', () => {
	const whole = cast([[0.1, 'o', 'one'], [0.2, 'o', 'two']], '');
	const c = parseCast(whole + '\n[0.3, "o", "thr');
	assert.equal(c.partial, true);
	assert.equal(c.skipped, 0);
	assert.equal(outputText(c.events), 'onetwo');
	// Cut in the middle of its m line too.
	const m = parseCast(whole + '\n[0.4, "m", "cut: beh');
	assert.equal(m.partial, true);
	assert.equal(m.cut, null);
	assert.equal(outputText(m.events), 'onetwo');
});

test('malformed lines are skipped and counted, never played', () => {
	const text = HEADER + '\n' + [
		'[0.1, "o", "ok1"]', 'not json', '{"a": 1}', '[0.2, "o"]', '[-1, "o", "neg"]',
		'["x", "o", "t"]', '[0.3, "o", 5]', '[0.4, "r", "axb"]', '[0.5, "", "e"]', '[0.6, "o", "ok2"]',
	].join('\n') + '\n';
	const c = parseCast(text);
	assert.equal(outputText(c.events), 'ok1ok2');
	assert.equal(c.skipped, 8);
	assert.equal(c.partial, false);
});

test('times never go back, CRLF-free blank lines are passed over', () => {
	const c = parseCast(HEADER + '\n\n[1, "o", "a"]\n\n[0.5, "o", "b"]\n[2, "o", "c"]\n');
	assert.deepEqual(c.events.map((e) => e.t), [1, 1, 2]);
});

test('a file that is not asciicast v2 is refused with words', () => {
	assert.throws(() => parseCast(''), /empty/);
	assert.throws(() => parseCast('hello\n'), /not an asciicast/);
	assert.throws(() => parseCast('[1, "o", "x"]\n'), /not an asciicast/);
	assert.throws(() => parseCast('{"version": 1, "width": 80, "height": 24}\n'), /version 1/);
	assert.throws(() => parseCast('{"version": 2, "width": 0, "height": 24}\n'), /width and height/);
	assert.throws(() => parseCast('{"version": 2, "height": 24}\n'), /width and height/);
	// A header alone is an empty recording, not an error.
	assert.equal(parseCast(HEADER + '\n').events.length, 0);
});

test('sizes are COLSxROWS, positive', () => {
	assert.deepEqual(parseSize('80x24'), { cols: 80, rows: 24 });
	for (const bad of ['80x', 'x24', '0x24', '80x0', '80X24', ' 80x24', '80x24x1', '-1x2', '1e3x2', 7, null])
		assert.equal(parseSize(bad), null, String(bad));
});

test('the timeline keeps times, or cuts each pause to the idle limit', () => {
	const ev = [0.5, 1, 10, 10.5, 40].map((t) => ({ t, code: 'o', data: '' }));
	assert.deepEqual([...timeline(ev)], [0.5, 1, 10, 10.5, 40]);
	assert.deepEqual([...timeline(ev, 2)], [0.5, 1, 3, 3.5, 5.5]);
	assert.deepEqual([...timeline([], 2)], []);
	// The first event's own time is a pause from the start too.
	assert.deepEqual([...timeline([{ t: 30, code: 'o', data: '' }], 2)], [2]);
});

test('dueAt counts the events at or before a time', () => {
	const times = Float64Array.from([0, 1, 1, 2, 5]);
	assert.equal(dueAt(times, -1), 0);
	assert.equal(dueAt(times, 0), 1);
	assert.equal(dueAt(times, 0.99), 1);
	assert.equal(dueAt(times, 1), 3);
	assert.equal(dueAt(times, 4.9), 4);
	assert.equal(dueAt(times, 5), 5);
	assert.equal(dueAt(times, 99), 5);
	assert.equal(dueAt(new Float64Array(0), 3), 0);
});

test('a position maps between timelines at the same event', () => {
	const ev = [1, 10, 11].map((t) => ({ t, code: 'o', data: '' }));
	const full = timeline(ev);
	const idle = timeline(ev, 2);       // [1, 3, 4]
	assert.equal(mapPosition(full, idle, 1.5), 1.5);
	// 9 s after the first event, in a pause cut to 2 s: just before the next.
	const p = mapPosition(full, idle, 9.5);
	assert.ok(p < 3 && p > 2.9, String(p));
	assert.equal(dueAt(idle, p), dueAt(full, 9.5));
	assert.equal(mapPosition(idle, full, 3.5), 10.5);
	assert.equal(mapPosition(full, idle, 11), 4);
});

// ---- replay.mjs ----

test('the clock runs at its speed, stops, and is set', () => {
	let now = 1000;
	const c = new Clock(() => now);
	assert.equal(c.time, 0);
	c.start();
	now += 1500;
	assert.equal(c.time, 1.5);
	c.setSpeed(2);
	now += 1000;
	assert.equal(c.time, 3.5);
	assert.equal(c.until(4.5), 500);
	c.stop();
	now += 5000;
	assert.equal(c.time, 3.5);
	assert.equal(c.until(9), Infinity);
	c.set(1);
	assert.equal(c.time, 1);
	c.setSpeed(0.5);
	c.start();
	now += 1000;
	assert.equal(c.time, 1.5);
});

test('a feed step joins output up to its size and stops at a resize', () => {
	const ev = [
		{ t: 0, code: 'o', data: 'ab' }, { t: 0, code: 'i', data: 'k' }, { t: 0, code: 'o', data: 'cd' },
		{ t: 1, code: 'r', data: '10x5', size: { cols: 10, rows: 5 } }, { t: 2, code: 'o', data: 'x'.repeat(CHUNK_CHARS) },
		{ t: 2, code: 'o', data: 'y' },
	];
	assert.deepEqual(nextStep(ev, 0, 6), { end: 3, text: 'abcd' });
	assert.deepEqual(nextStep(ev, 3, 6), { end: 4, size: { cols: 10, rows: 5 } });
	assert.deepEqual(nextStep(ev, 4, 6), { end: 5, text: 'x'.repeat(CHUNK_CHARS) });
	assert.deepEqual(nextStep(ev, 5, 6), { end: 6, text: 'y' });
	assert.deepEqual(nextStep(ev, 0, 1), { end: 1, text: 'ab' });
});

// A screen that keeps what it was given, and timers run by hand.
function harness(text) {
	const log = [];
	const screen = { text: '', size: null };
	let now = 0;
	let timers = [];
	let seq = 0;
	const env = {
		now: () => now,
		setTimeout(fn, ms) {
			const t = { id: ++seq, at: now + ms, fn };
			timers.push(t);
			return t.id;
		},
		clearTimeout(id) {
			timers = timers.filter((t) => t.id !== id);
		},
		sink: {
			reset() {
				log.push('reset');
				screen.text = '';
				return Promise.resolve();
			},
			write(s) {
				log.push('write');
				screen.text += s;
				return new Promise((r) => setImmediate(r));
			},
			resize(cols, rows) {
				log.push('resize ' + cols + 'x' + rows);
				screen.size = cols + 'x' + rows;
			},
		},
		changed() {},
		failed(e) {
			throw e;
		},
	};
	const r = new Replay(parseCast(text), env);
	// Advance the real clock by ms, running each timer when due and the
	// work it queues.
	async function advance(ms) {
		const end = now + ms;
		for (;;) {
			await r.settled();
			timers.sort((a, b) => a.at - b.at);
			const t = timers[0];
			if (!t || t.at > end)
				break;
			timers.shift();
			now = Math.max(now, t.at);
			t.fn();
		}
		now = end;
		await r.settled();
	}
	return { r, log, screen, advance };
}

const REC = cast([[0.5, 'o', 'a'], [1, 'o', 'b'], [1, 'r', '90x30'], [3, 'o', 'c'], [30, 'o', 'd'], [31, 'o', 'e']]);

test('playing feeds each event when it falls due, then ends', async () => {
	const { r, screen, log, advance } = harness(REC);
	await r.settled();
	assert.deepEqual(log, ['reset', 'resize 80x24']);
	assert.equal(r.duration, 31);
	r.play();
	await advance(400);
	assert.equal(screen.text, '');
	await advance(200);
	assert.equal(screen.text, 'a');
	await advance(500);
	assert.equal(screen.text, 'ab');
	assert.equal(screen.size, '90x30');
	await advance(2000);
	assert.equal(screen.text, 'abc');
	await advance(27000);
	assert.equal(screen.text, 'abcd');
	assert.equal(r.ended, false);
	await advance(1000);
	assert.equal(screen.text, 'abcde');
	assert.equal(r.ended, true);
	assert.equal(r.playing, false);
	assert.equal(r.position, 31);
});

test('pause stops the clock and the feeding; play goes on from there', async () => {
	const { r, screen, advance } = harness(REC);
	r.play();
	await advance(1200);
	r.pause();
	const p = r.position;
	await advance(10000);
	assert.equal(r.position, p);
	assert.equal(screen.text, 'ab');
	r.play();
	await advance(1900);
	assert.equal(screen.text, 'abc');
});

test('speed 4x and skipping idle shorten the wait', async () => {
	const { r, screen, advance } = harness(REC);
	r.setSpeed(4);
	r.play();
	await advance(760);             // 3.04 s of recording
	assert.equal(screen.text, 'abc');
	r.setSkipIdle(true);            // 27 s pause -> 2 s
	assert.equal(r.duration, 3 + IDLE_DEFAULT + 1);
	await advance(500);             // 2 s more
	assert.equal(screen.text, 'abcd');
	r.setSpeed(0.5);
	await advance(1900);
	assert.equal(screen.text, 'abcd');
	await advance(200);
	assert.equal(screen.text, 'abcde');
});

test('seeking back resets and feeds from the start; forward feeds what is between', async () => {
	const { r, screen, log, advance } = harness(REC);
	await r.seek(30.5);
	assert.equal(screen.text, 'abcd');
	assert.equal(screen.size, '90x30');
	assert.equal(r.playing, false);
	log.length = 0;
	await r.seek(0.7);
	assert.deepEqual(log, ['reset', 'resize 80x24', 'write']);
	assert.equal(screen.text, 'a');
	assert.equal(screen.size, '80x24');
	log.length = 0;
	await r.seek(3);
	assert.equal(log[0], 'write');
	assert.ok(!log.includes('reset'));
	assert.equal(screen.text, 'abc');
	// Past the end is the end; before the start is the start.
	await r.seek(99);
	assert.equal(screen.text, 'abcde');
	assert.equal(r.position, 31);
	await r.seek(-5);
	assert.equal(screen.text, '');
	// A seek while playing plays on from there.
	r.play();
	await r.seek(29.9);
	assert.equal(r.playing, true);
	await advance(200);
	assert.equal(screen.text, 'abcd');
});

test('the newest of several seeks wins, and play after the end starts again', async () => {
	const { r, screen, advance } = harness(REC);
	r.seek(31);
	r.seek(1);
	await r.seek(3.5);
	assert.equal(screen.text, 'abc');
	await r.seek(30.95);
	r.play();
	await advance(100);
	assert.equal(r.ended, true);
	assert.equal(screen.text, 'abcde');
	r.play();
	await advance(600);
	assert.equal(r.playing, true);
	assert.equal(screen.text, 'a');
});

test('a long recording is fed in chunks, each parsed before the next', async () => {
	const lines = [];
	for (let k = 0; k < 400; k++)
		lines.push([k * 0.001, 'o', 'y'.repeat(1000) + '\r\n']);
	const { r, screen, log } = harness(cast(lines));
	await r.seek(r.duration);
	const writes = log.filter((l) => l === 'write').length;
	assert.ok(writes >= Math.ceil(400 * 1002 / CHUNK_CHARS), String(writes));
	assert.equal(screen.text.length, 400 * 1002);
});

// ---- fragment.mjs ----

test('a share link\'s token is read from the fragment, and only a well-formed one', () => {
	assert.equal(TOKEN.length, 43);
	assert.deepEqual(parseFragment('#share=' + TOKEN), { share: TOKEN, play: null, shared: false, bad: null });
	assert.deepEqual(parseFragment('share=' + TOKEN), { share: TOKEN, play: null, shared: false, bad: null });
	assert.deepEqual(parseFragment(''), { share: null, play: null, shared: false, bad: null });
	assert.deepEqual(parseFragment('#'), { share: null, play: null, shared: false, bad: null });
	assert.deepEqual(parseFragment('#other=1'), { share: null, play: null, shared: false, bad: null });
	for (const bad of [TOKEN.slice(1), TOKEN + 'x', TOKEN.slice(1) + '=', TOKEN.slice(1) + '+', '', TOKEN.slice(1) + '%'])
		assert.deepEqual(parseFragment('#share=' + bad), { share: null, play: null, shared: false, bad: 'share' }, bad);
	assert.deepEqual(parseFragment('#share'), { share: null, play: null, shared: false, bad: 'share' });
	assert.ok(TOKEN_RE.test(TOKEN));
});

test('#play=ID names a recording; a share link never plays one', () => {
	assert.deepEqual(parseFragment('#play=12'), { share: null, play: 12, shared: false, bad: null });
	for (const bad of ['0', '-1', '1.5', 'x', '', '01', '99999999999999999'])
		assert.equal(parseFragment('#play=' + bad).bad, 'play', bad);
	assert.deepEqual(parseFragment('#play=3&share=' + TOKEN), { share: TOKEN, play: null, shared: false, bad: null });
});

test('the address keeps no token: `shared` stands in its place', () => {
	assert.equal(withoutShare('#share=' + TOKEN), '#shared');
	assert.equal(withoutShare('#a=1&share=' + TOKEN + '&b=2'), '#shared&a=1&b=2');
	assert.equal(withoutShare('#shared&share=' + TOKEN), '#shared');
	assert.ok(!withoutShare('#x&share=' + TOKEN).includes(TOKEN));
	assert.deepEqual(parseFragment(withoutShare('#share=' + TOKEN)), { share: null, play: null, shared: true, bad: null });
	assert.equal(parseFragment('#shared=1').shared, false);
});

test('a share link is the page\'s address with the token in the fragment', () => {
	const l = shareLink('https://h.example', '/term/', TOKEN);
	assert.equal(l, 'https://h.example/term/#share=' + TOKEN);
	assert.equal(new URL(l).search, '');
	assert.equal(parseFragment(new URL(l).hash).share, TOKEN);
	assert.equal(playLink('/term/', 7), '/term/#play=7');
});

// ---- watchers.mjs ----

test('watchers in words: names, anonymous links, the owner\'s own tabs', () => {
	const now = 1000000 * 1000;
	const rows = watcherRows([
		{ actor: 'alice', role: 'control', share: null, since: 1000000 - 30 },
		{ actor: '', role: 'view', share: 4, since: 1000000 - 7200 },
		{ actor: 'bob', role: 'view', share: 3, since: 1000000 - 90 },
		{ actor: 'carol', role: 'control', share: 5, since: 1000000 - 5 },
		null,
	], now);
	assert.deepEqual(rows.map((r) => [r.who, r.role, r.since, r.own]), [
		['anonymous link \u00b7 share 4', 'view', '2 h', false],
		['bob \u00b7 share 3', 'view', '2 min', false],
		['carol \u00b7 share 5', 'control', '5 s', false],
		['you (alice)', 'control', '30 s', true],
	]);
	assert.equal(watcherRows([{ actor: '', role: 'x', share: null }], now)[0].who, 'you');
	assert.equal(watcherRows([{ actor: '', role: 'x', share: null }], now)[0].role, 'view');
	assert.deepEqual(watcherRows(undefined, now), []);
	assert.equal(othersCount([{ share: null }, { share: 1 }, { share: 2 }]), 2);
	assert.equal(othersCount(null), 0);
});

// ---- share.mjs, player.mjs: words ----

test('a share\'s expiry and user in words', () => {
	const now = 5000 * 1000;
	assert.equal(expiresIn(5000 + 30, now), 'in 30 s');
	assert.equal(expiresIn(5000 + 3599, now), 'in 60 min');
	assert.equal(expiresIn(5000 + 3600, now), 'in 1 h');
	assert.equal(expiresIn(5000 + 3 * 3600, now), 'in 3 h');
	assert.equal(expiresIn(5000 + 2 * 86400, now), 'in 2 d');
	assert.equal(expiresIn(4000, now), 'now');
	assert.equal(expiresIn(undefined, now), '');
	assert.equal(shareUser('bob'), 'bob');
	assert.equal(shareUser(null), 'anyone (anonymous link)');
	assert.equal(shareUser(''), 'anyone (anonymous link)');
});

test('a recording in words: clock, size, state, what can be played', () => {
	assert.deepEqual([0, 5.9, 65, 3600, 3725, -3, NaN].map(fmtClock), ['0:00', '0:05', '1:05', '1:00:00', '1:02:05', '0:00', '0:00']);
	assert.deepEqual([0, 1023, 2048, 5 * 1024 * 1024, 3 * 1024 ** 3].map(fmtBytes), ['0 B', '1023 B', '2.0 KiB', '5.0 MiB', '3.0 GiB']);
	assert.equal(fmtBytes(-1), '');
	const now = 10000 * 1000;
	const r = recordingRow({ id: 4, session_id: 'abc', owner: 'alice', part: 2, started_at: 10000 - 125,
		ended_at: 10000 - 5, bytes: 4096, state: 'cut', cut_reason: 'disk' }, now);
	assert.deepEqual(r, { id: 4, terminal: 'abc part 2 \u00b7 alice', started: '2 min ago', length: '2:00', size: '4.0 KiB',
		state: 'cut (disk)', playable: true });
	const live = recordingRow({ id: 5, session_id: 's', owner: '', part: 1, started_at: 10000 - 10, ended_at: null,
		bytes: 10, state: 'recording', cut_reason: null }, now);
	assert.equal(live.length, '0:10');
	assert.equal(live.terminal, 's');
	assert.equal(recordingRow({ id: 6, state: 'removed' }, now).playable, false);
});
