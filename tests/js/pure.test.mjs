// pure.test.mjs -- node:test tests of the page's pure functions: backoff,
// settings, input splitting, paste, keys, limits, the end words, the
// picker's times.  Run by scripts/test (suite js); needs only node.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { backoffMs, transient, retryAfterMs, retryDelay, RETRY_MIN_MS, RETRY_MAX_MS, FCGI_GONE } from '../../web/backoff.mjs';
import { settingValue, resolveSettings, parseStored, Settings, DEFAULTS, STORE_KEY } from '../../web/settings.mjs';
import { takeCodePoints, fitQueue, halvedLimit } from '../../web/input.mjs';
import { sanitizePaste, isMultiLine, pasteLines, hasControl } from '../../web/paste.mjs';
import { withMods, keySeq, pageKeyName } from '../../web/keys.mjs';
import { applyLimits, defaultLimits, errorText } from '../../web/api.mjs';
import { endText } from '../../web/status.mjs';
import { ago, pageUrl } from '../../web/dialogs.mjs';
import { pastePreview } from '../../web/clipboard.mjs';

test('backoff doubles from the minimum and stops at the maximum', () => {
	assert.deepEqual([0, 1, 2, 3, 4, 5, 6, 50].map(backoffMs), [250, 500, 1000, 2000, 4000, 5000, 5000, 5000]);
	assert.equal(backoffMs(-1), RETRY_MIN_MS);
	assert.equal(backoffMs(undefined), RETRY_MIN_MS);
	assert.equal(backoffMs(1e9), RETRY_MAX_MS);
});

test('only 429, 502, 503 and 504 are worth repeating', () => {
	for (const s of [429, 502, 503, 504])
		assert.equal(transient(s), true, s);
	for (const s of [200, 400, 403, 404, 409, 413, 500])
		assert.equal(transient(s), false, s);
});

test('a 500 is repeated only when a front says ptyd.fcgi died under it', () => {
	// lighttpd, Apache mod_fcgid and mod_cgid answer this for a request
	// their ptyd.fcgi died under (lighttpd/ptyd-error.json, apache/).
	assert.equal(FCGI_GONE, 'ptyd.fcgi is not running');
	assert.equal(transient(500, 'ptyd.fcgi is not running'), true);
	// ptyd.fcgi's own 500s are final: retrying them would loop.
	for (const e of [undefined, null, '', 'internal error', 'could not start the shell',
		'ptyd.fcgi cannot read its settings: see the web server\'s error log',
		'ptyd.fcgi is not running ', 'PTYD.FCGI IS NOT RUNNING', 'ptyd is not running', 42])
		assert.equal(transient(500, e), false, String(e));
	// The words change nothing for any other status.
	assert.equal(transient(503, 'ptyd.fcgi is not running'), true);
	assert.equal(transient(503, 'internal error'), true);
	for (const s of [200, 400, 404, 413, 501])
		assert.equal(transient(s, 'ptyd.fcgi is not running'), false, s);
});

test('Retry-After is seconds; anything else is no wait', () => {
	assert.equal(retryAfterMs('3'), 3000);
	assert.equal(retryAfterMs('0.5'), 500);
	for (const h of [null, undefined, '', '0', '-2', 'soon', 'Wed, 21 Oct 2015 07:28:00 GMT'])
		assert.equal(retryAfterMs(h), 0, String(h));
	assert.equal(retryDelay(null, 2), 1000);
	assert.equal(retryDelay({ retryAfterMs: 3000 }, 0), 3000);
	assert.equal(retryDelay({ retryAfterMs: 100 }, 3), 2000);
});

test('a setting takes only its own kind of value', () => {
	assert.equal(settingValue('fontSize', '16'), 16);
	assert.equal(settingValue('fontSize', '1000'), 48);
	assert.equal(settingValue('fontSize', '2'), 6);
	assert.equal(settingValue('fontSize', '15.6'), 16);
	assert.equal(settingValue('fontSize', 'big'), undefined);
	assert.equal(settingValue('fontSize', ''), undefined);
	assert.equal(settingValue('scrollback', 'Infinity'), undefined);
	assert.equal(settingValue('cursorBlink', 'off'), false);
	assert.equal(settingValue('cursorBlink', ''), true);
	assert.equal(settingValue('cursorBlink', 'maybe'), undefined);
	assert.equal(settingValue('theme', 'light'), 'light');
	assert.equal(settingValue('theme', 'pink'), undefined);
	assert.equal(settingValue('theme', 7), undefined);
	assert.equal(settingValue('fontFamily', '"Fira Code", monospace'), '"Fira Code", monospace');
	assert.equal(settingValue('fontFamily', 'x; } body { display: none'), undefined);
	assert.equal(settingValue('nosuch', 'x'), undefined);
	assert.equal(settingValue('__proto__', 'x'), undefined);
});

test('the address overrides storage, except what a link may not set', () => {
	const stored = { fontSize: 18, pasteConfirm: false, theme: 'nonsense' };
	const params = new URLSearchParams('fontSize=20&pasteConfirm=on&copyOnSelect=on&theme=light');
	const s = resolveSettings(stored, params);
	assert.equal(s.fontSize, 20);
	assert.equal(s.theme, 'light');
	assert.equal(s.pasteConfirm, false, 'from storage, not the address');
	assert.equal(s.copyOnSelect, DEFAULTS.copyOnSelect, 'a link may not turn it on');
	assert.deepEqual(resolveSettings({}, new URLSearchParams('')), { ...DEFAULTS });
});

test('stored settings that are not an object are none', () => {
	for (const t of [null, '', 'nonsense', '[1,2]', 'null', '42', '"x"'])
		assert.deepEqual(parseStored(t), {}, String(t));
	assert.deepEqual(parseStored('{"theme":"dark"}'), { theme: 'dark' });
});

test('Settings remembers a valid change and refuses an invalid one', () => {
	const mem = new Map();
	const storage = { getItem: (k) => mem.get(k) ?? null, setItem: (k, v) => mem.set(k, v) };
	const s = new Settings(storage, new URLSearchParams('theme=light'));
	const seen = [];
	s.onChange = (k) => seen.push(k);
	assert.equal(s.set('fontSize', '17'), true);
	assert.equal(s.set('fontSize', 'huge'), false);
	assert.equal(s.values.fontSize, 17);
	assert.deepEqual(JSON.parse(mem.get(STORE_KEY)), { fontSize: 17 }, 'the address is not remembered');
	assert.deepEqual(seen, ['fontSize']);
	const full = new Settings({ getItem: () => null, setItem: () => { throw new Error('full'); } }, new URLSearchParams(''));
	assert.equal(full.set('theme', 'dark'), true, 'a full storage keeps it for the page');
	assert.equal(full.values.theme, 'dark');
});

test('input pieces never split a surrogate pair', () => {
	assert.equal(takeCodePoints('abcdef', 3), 'abc');
	assert.equal(takeCodePoints('ab', 5), 'ab');
	assert.equal(takeCodePoints('😀😀😀', 2), '😀😀');
	assert.equal(takeCodePoints('a😀b', 2), 'a😀');
	assert.equal(takeCodePoints('x', Infinity), 'x');
	assert.equal(takeCodePoints('\ud83d', 1), '\ud83d', 'a lone high surrogate is one');
});

test('the queue keeps at most its maximum, never half a pair', () => {
	assert.deepEqual(fitQueue('ab', 'cd', 4), { data: 'cd', cut: false });
	assert.deepEqual(fitQueue('ab', 'cde', 4), { data: 'cd', cut: true });
	assert.deepEqual(fitQueue('abc', '😀', 4), { data: '', cut: true });
	assert.deepEqual(fitQueue('abcde', 'x', 4), { data: '', cut: true });
	assert.equal(halvedLimit(Infinity, 'abcdefgh'), 4);
	assert.equal(halvedLimit(2, 'abcdefgh'), 2);
	assert.equal(halvedLimit(10, '😀😀😀😀'), 2, 'code points, not units');
	assert.equal(halvedLimit(10, 'a'), 1);
});

test('a paste loses every control but tab, LF and CR', () => {
	assert.equal(sanitizePaste('ls\x1b[201~; rm -rf ~\r'), 'ls[201~; rm -rf ~\r');
	assert.equal(sanitizePaste('a\tb\nc\r\n'), 'a\tb\nc\r\n');
	assert.equal(sanitizePaste('x\u009by\x7fz\x00'), 'xyz');
	assert.equal(isMultiLine('one'), false);
	assert.equal(isMultiLine('one\r'), true);
	assert.equal(pasteLines('a\nb\n'), 2);
	assert.equal(pasteLines('a\r\nb\r\nc'), 3);
	assert.equal(hasControl('plain'), false);
	assert.equal(hasControl('tab\there'), true);
	const long = Array.from({ length: 12 }, (_, i) => 'line' + i + 'x'.repeat(i === 0 ? 200 : 0)).join('\n');
	const p = pastePreview(long).split('\n');
	assert.equal(p.length, 9);
	assert.equal(p[8], '…');
	assert.ok(p[0].endsWith('…') && p[0].length === 161);
});

test('the key bar\'s sticky keys and arrows', () => {
	assert.equal(withMods('c', { ctrl: true, alt: false }), '\x03');
	assert.equal(withMods('C', { ctrl: true, alt: false }), '\x03');
	assert.equal(withMods('[', { ctrl: true, alt: false }), '\x1b');
	assert.equal(withMods('?', { ctrl: true, alt: false }), '\x7f');
	assert.equal(withMods(' ', { ctrl: true, alt: false }), '\0');
	assert.equal(withMods('x', { ctrl: false, alt: true }), '\x1bx');
	assert.equal(withMods('ab', { ctrl: true, alt: false }), 'ab');
	assert.equal(keySeq('up', false), '\x1b[A');
	assert.equal(keySeq('left', true), '\x1bOD');
	assert.equal(keySeq('nosuch', false), '');
});

test('the page\'s shortcuts, and Ctrl+C left to the shell without a selection', () => {
	const k = (key, mods = {}) => ({ key, ctrlKey: false, metaKey: false, shiftKey: false, altKey: false, ...mods });
	assert.equal(pageKeyName(k('c', { ctrlKey: true }), false, false), null);
	assert.equal(pageKeyName(k('c', { ctrlKey: true }), false, true), 'copy');
	assert.equal(pageKeyName(k('C', { ctrlKey: true, shiftKey: true }), false, false), 'copy');
	assert.equal(pageKeyName(k('V', { ctrlKey: true, shiftKey: true }), false, false), 'paste');
	assert.equal(pageKeyName(k('F', { ctrlKey: true, shiftKey: true }), false, false), 'find');
	assert.equal(pageKeyName(k('=', { ctrlKey: true }), false, false), 'zoom-in');
	assert.equal(pageKeyName(k('-', { metaKey: true }), true, false), 'zoom-out');
	assert.equal(pageKeyName(k('0', { ctrlKey: true }), false, false), 'zoom-reset');
	assert.equal(pageKeyName(k('c', { metaKey: true }), true, true), 'copy');
	assert.equal(pageKeyName(k('c', { metaKey: true }), true, false), null);
	assert.equal(pageKeyName(k('f', { ctrlKey: true, altKey: true, shiftKey: true }), false, false), null);
	assert.equal(pageKeyName(k('a'), false, false), null);
});

test('the server\'s limits are taken where valid', () => {
	const l = applyLimits(defaultLimits(), { input_chars: 4096, session_id: { pattern: '^[a-z]+$' }, heartbeat_ms: 5000 });
	assert.equal(l.inputChars, 4096);
	assert.ok(l.sidPattern.test('abc') && !l.sidPattern.test('ABC'));
	assert.equal(l.silenceMs, 8000);
	assert.equal(applyLimits(defaultLimits(), { heartbeat: 1 }).silenceMs, 3000, 'never under 3 s');
	const bad = applyLimits(defaultLimits(), { input_chars: -1, session_id: { pattern: '(' }, heartbeat_ms: 'x' });
	assert.deepEqual(bad, { ...defaultLimits(), sidPattern: null });
	assert.deepEqual(applyLimits(defaultLimits(), null), defaultLimits());
	assert.equal(errorText({ status: 503, data: { error: 'ptyd is restarting' } }), 'ptyd is restarting');
	assert.equal(errorText({ status: 502, data: null }), 'HTTP 502');
});

test('how a shell ended, in words', () => {
	assert.deepEqual(endText({ reason: 'exit', exit_code: 0 }), ['ended (exit 0)', 'exited with code 0']);
	assert.deepEqual(endText({ reason: 'exit', exit_code: -9 }), ['ended (signal 9)', 'was killed by signal 9']);
	assert.deepEqual(endText({ reason: 'exit', exit_code: null }), ['ended', 'exited']);
	assert.deepEqual(endText({ reason: 'gone' }), ['closed', 'was closed while this page was away']);
	assert.deepEqual(endText({ reason: 'odd' }), ['closed (odd)', 'was closed (odd)']);
});

test('the picker\'s times and addresses', () => {
	const now = 1_000_000 * 1000;
	assert.equal(ago(1_000_000 - 5, now), '5 s');
	assert.equal(ago(1_000_000 - 600, now), '10 min');
	assert.equal(ago(1_000_000 - 7200, now), '2 h');
	assert.equal(ago(1_000_000 - 86400 * 3, now), '3 d');
	assert.equal(ago(0, now), '');
	assert.equal(ago(NaN, now), '');
	assert.equal(pageUrl('?session=a&theme=light', 'b c'), '?session=b+c&theme=light');
});
