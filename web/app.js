// app.js -- the ptyd terminal page: one xterm.js terminal bound to one ptyd
// session through the HTTP API (DESIGN sections 2 and 3).
//
// Owns: the session id in the URL, starting the shell, the output stream and
// its reconnects, the keystroke queue, resizes, the status line and the
// offer of a new shell.  Does not own: rendering (xterm.js), the terminal
// itself (ptyd keeps it; closing the tab leaves it running until the reaper
// or the Close button ends it).
//
// Every URL is relative to the document, so the page works under any
// sub-path nginx mounts it at.

import { Terminal } from './node_modules/@xterm/xterm/lib/xterm.mjs';
import { FitAddon } from './node_modules/@xterm/addon-fit/lib/addon-fit.mjs';

const API = 'api/terminal/';
const SID_RE = /^[A-Za-z0-9._:-]{1,128}$/;
const INPUT_MAX = 8192;          // code points per input request (DESIGN 2)
const PENDING_MAX = 1 << 20;     // UTF-16 units queued at most (a huge paste)
const RESIZE_DEBOUNCE_MS = 120;
const RETRY_MIN_MS = 250;
const RETRY_MAX_MS = 5000;
const NOTICE_MS = 8000;
const INPUT_TIMEOUT_MS = 10000;  // an input request that hangs is retried

const THEME = {
	background: '#0e1116',
	foreground: '#d4d8de',
	cursor: '#f0c674',
	cursorAccent: '#0e1116',
	selectionBackground: 'rgba(88, 166, 255, 0.30)',
	black: '#1c2128',
	red: '#ff7b72',
	green: '#7ee787',
	yellow: '#e3b341',
	blue: '#79c0ff',
	magenta: '#d2a8ff',
	cyan: '#56d4dd',
	white: '#c9d1d9',
	brightBlack: '#6e7681',
	brightRed: '#ffa198',
	brightGreen: '#aff5b4',
	brightYellow: '#f8e3a1',
	brightBlue: '#a5d6ff',
	brightMagenta: '#e2c5ff',
	brightCyan: '#b3f0ff',
	brightWhite: '#f0f6fc',
};

const $ = (id) => document.getElementById(id);

// ---- the session id ------------------------------------------------------

// The id lives in the address (?session=ID), so a reload or a second tab
// with the same address attaches to the same shell.
function randomId() {
	const bytes = new Uint8Array(9);
	crypto.getRandomValues(bytes);
	return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

function sessionFromUrl() {
	const params = new URLSearchParams(location.search);
	let sid = params.get('session');
	if (sid === null || !SID_RE.test(sid)) {
		sid = randomId();
		params.set('session', sid);
		history.replaceState(null, '', '?' + params.toString() + location.hash);
	}
	return sid;
}

const sid = sessionFromUrl();

// ---- HTTP ------------------------------------------------------------------

// POST a JSON body; resolves to {status, data, retryAfterMs}.  Rejects
// (TypeError) only when no answer came at all.
async function post(endpoint, body, timeoutMs) {
	const ctl = new AbortController();
	const timer = timeoutMs ? setTimeout(() => ctl.abort(), timeoutMs) : 0;
	let res;
	try {
		res = await fetch(API + endpoint, {
			method: 'POST',
			headers: { 'Content-Type': 'application/json' },
			body: JSON.stringify(body),
			cache: 'no-store',
			credentials: 'same-origin',
			signal: ctl.signal,
		});
	} finally {
		clearTimeout(timer);
	}
	let data = null;
	try {
		data = await res.json();
	} catch (e) {
		data = null;
	}
	const ra = Number(res.headers.get('Retry-After'));
	return {
		status: res.status,
		data,
		retryAfterMs: Number.isFinite(ra) && ra > 0 ? ra * 1000 : 0,
	};
}

async function getJson(endpoint) {
	const res = await fetch(API + endpoint, { cache: 'no-store', credentials: 'same-origin' });
	if (!res.ok)
		throw new Error('HTTP ' + res.status);
	return res.json();
}

function errorText(r) {
	if (r.data && typeof r.data.error === 'string')
		return r.data.error;
	return 'HTTP ' + r.status;
}

// The server may come back: ptyd restarting (503), nginx between workers
// (502/504), a limit (429).  Everything else is an answer to respect.
function transient(status) {
	return status === 429 || status === 502 || status === 503 || status === 504;
}

function backoffMs(attempt) {
	return Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** Math.min(attempt, 5));
}

// ---- status line ---------------------------------------------------------

function setStatus(kind, text) {
	$('status').dataset.kind = kind;
	$('status-text').textContent = text;
}

let noticeTimer = 0;
function notice(text) {
	const el = $('notice');
	el.textContent = text;
	el.title = text;
	el.classList.add('shown');
	clearTimeout(noticeTimer);
	noticeTimer = setTimeout(() => el.classList.remove('shown'), NOTICE_MS);
}

// ---- the terminal ----------------------------------------------------------

const term = new Terminal({
	theme: THEME,
	fontFamily: '"DejaVu Sans Mono", "JetBrains Mono", Menlo, Consolas, "Liberation Mono", monospace',
	fontSize: 14,
	lineHeight: 1.1,
	cursorBlink: true,
	scrollback: 10000,
	allowProposedApi: false,
});
const fit = new FitAddon();
term.loadAddon(fit);
term.open($('term'));
fit.fit();

$('session').textContent = sid;
document.title = 'ptyd \u2014 ' + sid;
term.onTitleChange((title) => {
	document.title = title ? title + ' \u2014 ptyd' : 'ptyd \u2014 ' + sid;
});

// phase: 'starting' until start answered, 'live' while the shell runs,
// 'ended' once it is gone (until the user asks for a new one).
let phase = 'starting';

// ---- starting a shell ------------------------------------------------------

let startAttempt = 0;
let startTimer = 0;

async function start() {
	clearTimeout(startTimer);
	phase = 'starting';
	setStatus('connecting', 'starting');
	const size = { rows: term.rows, cols: term.cols };
	let r;
	try {
		r = await post('start', { session_id: sid, rows: size.rows, cols: size.cols });
	} catch (e) {
		r = null;
	}
	if (r !== null && r.status === 200) {
		startAttempt = 0;
		phase = 'live';
		sentSize = size;
		attach();
		pumpInput();
		pumpResize();
		return;
	}
	if (r === null || transient(r.status)) {
		const wait = Math.max(r ? r.retryAfterMs : 0, backoffMs(startAttempt++));
		setStatus('reconnecting', r ? 'server busy (' + errorText(r) + '), retrying'
		    : 'server unreachable, retrying');
		startTimer = setTimeout(start, wait);
		return;
	}
	setStatus('error', 'cannot start: ' + errorText(r));
	ended('The shell could not be started: ' + errorText(r) + '.');
}

// ---- the output stream -----------------------------------------------------

// lastId is the id of the last event seen: the stream position to resume
// from.  Every reconnect is ours (see onerror below): a new EventSource that
// carries it as last_event_id in the query, so the server replays exactly
// what came after it, or says `gap`.
let lastId = null;
let source = null;
let generation = 0;     // bumped per EventSource: late events of an old one are ignored
let streamAttempt = 0;
let streamTimer = 0;
let streams = 0;        // EventSources opened so far (for the tests)

function closeStream() {
	clearTimeout(streamTimer);
	if (source !== null) {
		source.close();
		source = null;
	}
	generation++;
}

function attach() {
	closeStream();
	const gen = generation;
	let url = API + 'output?session_id=' + encodeURIComponent(sid);
	if (lastId !== null)
		url += '&last_event_id=' + encodeURIComponent(lastId);
	const es = new EventSource(url);
	source = es;
	streams++;
	const mine = (fn) => (e) => {
		if (gen === generation)
			fn(e);
	};

	es.onopen = mine(() => {
		streamAttempt = 0;
		setStatus('connected', 'connected');
	});
	es.addEventListener('output', mine((e) => {
		lastId = e.lastEventId || lastId;
		const d = JSON.parse(e.data);
		term.write(d.text);
	}));
	es.addEventListener('gap', mine((e) => {
		lastId = e.lastEventId || lastId;
		const d = JSON.parse(e.data);
		notice('history gap: ' + d.lost + ' bytes of output were lost while disconnected');
	}));
	es.addEventListener('terminal_closed', mine((e) => {
		lastId = e.lastEventId || lastId;
		closeStream();
		closed(JSON.parse(e.data));
	}));
	es.addEventListener('terminal_error', mine((e) => {
		const d = JSON.parse(e.data);
		closeStream();
		notice('stream error: ' + d.error);
		reconnectLater();
	}));
	// The stream ended or failed.  The browser would retry by itself after
	// a fixed delay, and not at all after an HTTP error (404, 502); take it
	// over in both cases: ask whether the terminal is still there, then
	// resume from lastId with a growing delay.
	es.onerror = mine(() => {
		closeStream();
		reconnectLater();
	});
}

function reconnectLater() {
	if (phase === 'ended')
		return;
	setStatus('reconnecting', 'reconnecting');
	clearTimeout(streamTimer);
	streamTimer = setTimeout(recover, backoffMs(streamAttempt++));
}

async function recover() {
	let list;
	try {
		list = await getJson('list');
	} catch (e) {
		reconnectLater();
		return;
	}
	if (phase === 'ended')
		return;
	const mineTerm = (list.terminals || []).find((t) => t.session_id === sid);
	if (mineTerm === undefined) {
		// Gone while we were away: closed elsewhere, reaped, or its exit
		// lingered past the linger time.
		closed({ reason: 'gone', exit_code: null });
		return;
	}
	attach();
}

function closed(d) {
	if (d.reason === 'restarted') {
		// Another tab replaced the shell under this id: follow it.
		term.reset();
		lastId = null;
		notice('the shell was restarted from another tab');
		attach();
		return;
	}
	let text;
	switch (d.reason) {
	case 'exit':
		if (d.exit_code === null || d.exit_code === undefined)
			text = 'exited';
		else if (d.exit_code < 0)
			text = 'killed by signal ' + -d.exit_code;
		else
			text = 'exited with code ' + d.exit_code;
		break;
	case 'closed':
		text = 'closed';
		break;
	case 'reaped':
		text = 'closed after being idle';
		break;
	case 'evicted':
		text = 'closed to make room for another terminal';
		break;
	case 'shutdown':
		text = 'closed: the server shut down';
		break;
	case 'gone':
		text = 'closed while this page was away';
		break;
	default:
		text = 'closed (' + d.reason + ')';
	}
	setStatus(d.reason === 'exit' ? 'exited' : 'closed', text);
	ended('The shell ' + text + '.');
}

function ended(text) {
	phase = 'ended';
	closeStream();
	clearTimeout(inputTimer);
	pending = '';
	sending = null;
	term.options.disableStdin = true;
	term.options.cursorBlink = false;
	term.write('\x1b[?25l');      // hide the cursor: nothing reads keys now
	$('close').disabled = true;
	$('ended-text').textContent = text;
	$('ended').hidden = false;
	$('restart').focus();
}

function newShell() {
	$('ended').hidden = true;
	$('close').disabled = false;
	term.options.disableStdin = false;
	term.options.cursorBlink = true;
	term.reset();
	lastId = null;
	term.focus();
	start();
}

$('restart').addEventListener('click', newShell);

// ---- keystrokes --------------------------------------------------------------

// Keystrokes go out in order, one request in flight at a time.  What is
// typed while a request travels waits in `pending` and leaves with the next
// request, so on a slow link each round trip carries everything typed
// during the previous one: order is kept and a fast typist is never held
// to one key per round trip.  A paste goes the same way, in pieces of at
// most INPUT_MAX code points.
//
// Exactly once (DESIGN 2): every piece gets an input_id, this page's own id
// and a sequence number, and a piece that got no clear answer (a network
// error, a timeout, 503, 429) goes again with the same id and the same
// text, never merged with what was typed since.  ptyd drops a repeated id
// and answers it as done, so a piece that did reach the shell before its
// answer was lost is not typed twice.
const viewerId = randomId();
let inputSeq = 0;
let sending = null;         // {id, data}: the piece in flight or to retry
let pending = '';
let inflight = false;
let inputAttempt = 0;
let inputTimer = 0;

// The longest prefix of s with at most n code points (a surrogate pair is
// one code point and is never split).
function takeCodePoints(s, n) {
	let i = 0;
	for (let k = 0; k < n && i < s.length; k++) {
		const c = s.charCodeAt(i);
		i += c >= 0xd800 && c <= 0xdbff && i + 1 < s.length ? 2 : 1;
	}
	return s.slice(0, i);
}

function queueInput(data) {
	if (phase === 'ended')
		return;
	if (pending.length + data.length > PENDING_MAX) {
		let cut = Math.max(0, PENDING_MAX - pending.length);
		const c = data.charCodeAt(cut - 1);
		if (cut > 0 && c >= 0xd800 && c <= 0xdbff)
			cut--;          // never keep half of a surrogate pair
		data = data.slice(0, cut);
		notice('paste too large: only the first ' + PENDING_MAX + ' characters are sent');
	}
	pending += data;
	pumpInput();
}

async function pumpInput() {
	if (inflight || phase !== 'live')
		return;
	if (sending === null) {
		if (pending === '')
			return;
		const data = takeCodePoints(pending, INPUT_MAX);
		pending = pending.slice(data.length);
		sending = { id: viewerId + ':' + ++inputSeq, data };
	}
	inflight = true;
	let r;
	try {
		r = await post('input', { session_id: sid, data: sending.data,
		    input_id: sending.id }, INPUT_TIMEOUT_MS);
	} catch (e) {
		// No answer (a dropped link, nginx or ptyd.fcgi restarting, a
		// timeout): the piece may or may not have reached ptyd.  Its
		// id makes sending it again safe.
		r = null;
	}
	inflight = false;
	if (phase !== 'live')
		return;
	if (r !== null && r.status === 200) {
		sending = null;
		inputAttempt = 0;
		pumpInput();
		return;
	}
	if (r === null || transient(r.status)) {
		// 429: the shell is not reading; 503: ptyd is away.  The same
		// piece with the same id goes again, later.
		const wait = Math.max(r ? r.retryAfterMs : 0, backoffMs(inputAttempt++));
		clearTimeout(inputTimer);
		inputTimer = setTimeout(pumpInput, wait);
		return;
	}
	sending = null;
	if (r.status === 404) {
		// The shell is gone; the stream says how.
		pending = '';
		return;
	}
	notice('input not delivered: ' + errorText(r));
	pumpInput();
}

term.onData(queueInput);

// ---- resize ------------------------------------------------------------------

// The terminal follows its box (window resizes, the bar wrapping), debounced;
// the newest size is sent, one request at a time.
let sentSize = null;
let resizeInflight = false;
let resizeTimer = 0;
let resizeRetry = 0;

function pumpResize() {
	if (resizeInflight || phase !== 'live')
		return;
	const want = { rows: term.rows, cols: term.cols };
	if (sentSize !== null && sentSize.rows === want.rows && sentSize.cols === want.cols)
		return;
	resizeInflight = true;
	post('resize', { session_id: sid, rows: want.rows, cols: want.cols })
	    .then((r) => r, () => null)
	    .then((r) => {
		resizeInflight = false;
		if (r !== null && r.status === 200) {
			sentSize = want;
			resizeRetry = 0;
			pumpResize();
		} else if (r === null || transient(r.status)) {
			setTimeout(pumpResize, backoffMs(resizeRetry++));
		}
	});
}

term.onResize(pumpResize);
new ResizeObserver(() => {
	clearTimeout(resizeTimer);
	resizeTimer = setTimeout(() => fit.fit(), RESIZE_DEBOUNCE_MS);
}).observe($('term'));

// ---- close -------------------------------------------------------------------

$('close').addEventListener('click', async () => {
	if (phase === 'ended')
		return;
	let r;
	try {
		r = await post('close', { session_id: sid });
	} catch (e) {
		notice('could not reach the server to close the shell');
		return;
	}
	if (r.status !== 200) {
		notice('close failed: ' + errorText(r));
		return;
	}
	// The stream normally brings terminal_closed; when it is not connected
	// (or there was nothing to close), say it here.
	if (!r.data || !r.data.closed || source === null || source.readyState !== EventSource.OPEN) {
		closeStream();
		closed({ reason: 'closed', exit_code: null });
	}
});

// ---- go ------------------------------------------------------------------------

// For debugging from the console, and for the browser tests.
window.ptyd = {
	term,
	sessionId: sid,
	get phase() { return phase; },
	get lastEventId() { return lastId; },
	get streams() { return streams; },
	get sentSize() { return sentSize; },
};

term.focus();
start();
