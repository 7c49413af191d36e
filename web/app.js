// app.js -- the ptyd terminal page: one xterm.js terminal bound to one ptyd
// session through the HTTP API (DESIGN sections 2 and 3).
//
// Owns: the session id in the URL, starting the shell, the output stream
// (read with fetch, so heartbeats are seen) and its reconnects, which tab
// of the session is the active viewer (it answers the terminal's queries
// and sets the size), the keystroke queue, resizes, the status line, the
// settings, copy and paste, find, the picker of terminals, the key bar.
// Does not own: rendering (xterm.js and its addons), the terminal itself
// (ptyd keeps it; closing the tab leaves it running until the reaper or the
// Close button ends it).
//
// Every URL is relative to the document, so the page works under any
// sub-path nginx mounts it at.

import { Terminal } from './node_modules/@xterm/xterm/lib/xterm.mjs';
import { FitAddon } from './node_modules/@xterm/addon-fit/lib/addon-fit.mjs';
import { Unicode11Addon } from './node_modules/@xterm/addon-unicode11/lib/addon-unicode11.mjs';
import { SearchAddon } from './node_modules/@xterm/addon-search/lib/addon-search.mjs';
import { WebLinksAddon } from './node_modules/@xterm/addon-web-links/lib/addon-web-links.mjs';
import { WebglAddon } from './node_modules/@xterm/addon-webgl/lib/addon-webgl.mjs';

import { sanitizePaste, isMultiLine, pasteLines, hasControl } from './paste.mjs';
import { Predictor } from './predict.mjs';

const API = 'api/terminal/';
const PENDING_MAX = 1 << 20;     // UTF-16 units queued at most (a huge paste)
const RESIZE_DEBOUNCE_MS = 120;
const RETRY_MIN_MS = 250;
const RETRY_MAX_MS = 5000;
const NOTICE_MS = 8000;
const INPUT_TIMEOUT_MS = 10000;  // an input request that hangs is retried
const PROBE_TIMEOUT_MS = 3000;   // list, limits: a server that does not answer
const REPLAY_MAX_MS = 10000;     // the replay's end unmarked this long: live
// Flow control: output written to xterm but not parsed yet, in UTF-16
// units.  Past FLOW_HIGH the stream is not read until xterm is down to
// FLOW_LOW: the server then keeps the rest (and says `gap` if its backlog
// runs over), where xterm would hold it all and, past 50 MB, throw it away.
const FLOW_HIGH = 1 << 17;
const FLOW_LOW = 1 << 16;

// The server's limits, from GET limits: the page keeps no copy of the API's
// numbers.  Until it answers (or on a server without it) a piece of input
// is as long as it is, and one answered 413 goes again in halves.
const limits = {
	inputChars: Infinity,
	sidPattern: null,	// the session id's rule, a RegExp
	// A live stream carries something at least every heartbeat (5 s by
	// default): silence past this means a dead or half-open link.
	silenceMs: 8000,
};

const DARK = {
	background: '#0e1116',
	foreground: '#d4d8de',
	cursor: '#f0c674',
	cursorAccent: '#0e1116',
	selectionBackground: 'rgba(88, 166, 255, 0.35)',
	black: '#545d68',        // readable on the background (was #1c2128)
	red: '#ff7b72',
	green: '#7ee787',
	yellow: '#e3b341',
	blue: '#79c0ff',
	magenta: '#d2a8ff',
	cyan: '#56d4dd',
	white: '#c9d1d9',
	brightBlack: '#8b949e',
	brightRed: '#ffa198',
	brightGreen: '#aff5b4',
	brightYellow: '#f8e3a1',
	brightBlue: '#a5d6ff',
	brightMagenta: '#e2c5ff',
	brightCyan: '#b3f0ff',
	brightWhite: '#f0f6fc',
};

const LIGHT = {
	background: '#ffffff',
	foreground: '#1f2328',
	cursor: '#0550ae',
	cursorAccent: '#ffffff',
	selectionBackground: 'rgba(84, 174, 255, 0.35)',
	black: '#24292f',
	red: '#cf222e',
	green: '#116329',
	yellow: '#7d4e00',
	blue: '#0969da',
	magenta: '#8250df',
	cyan: '#1b7c83',
	white: '#6e7781',
	brightBlack: '#57606a',
	brightRed: '#a40e26',
	brightGreen: '#1a7f37',
	brightYellow: '#633c01',
	brightBlue: '#218bff',
	brightMagenta: '#a475f9',
	brightCyan: '#3192aa',
	brightWhite: '#8c959f',
};

const $ = (id) => document.getElementById(id);

// ---- settings -----------------------------------------------------------------

// Defaults, then what this browser remembers, then the address
// (?fontSize=16&theme=light, as ttyd's client options): the address wins
// for this page and is not remembered; a change made here is.
const DEFAULTS = {
	fontSize: 14,
	fontFamily: '"DejaVu Sans Mono", "JetBrains Mono", Menlo, Consolas, "Liberation Mono", monospace',
	theme: 'auto',
	cursorStyle: 'block',
	cursorBlink: true,
	scrollback: 10000,
	copyOnSelect: false,
	rightClickPaste: true,
	pasteConfirm: true,
	bell: 'visual',
	renderer: 'auto',
	warnOnLeave: 'program',
	keybar: 'auto',
	screenReaderMode: false,
	localEcho: 'auto',
};
const CHOICES = {
	theme: ['auto', 'dark', 'light'],
	cursorStyle: ['block', 'bar', 'underline'],
	bell: ['visual', 'sound', 'none'],
	renderer: ['auto', 'webgl', 'dom'],
	warnOnLeave: ['program', 'connected', 'never'],
	keybar: ['auto', 'on', 'off'],
	localEcho: ['auto', 'always', 'never'],
};
const RANGES = { fontSize: [6, 48], scrollback: [0, 100000] };
// What a link may not set: any page could send a visitor here with them
// (an attacker's review: ?pasteConfirm=off turned the paste question off).
const NOT_FROM_ADDRESS = ['pasteConfirm', 'rightClickPaste', 'copyOnSelect'];
// A font family is a list of names: no CSS beyond it (xterm.js writes it
// into a <style> element, and the CSP allows inline styles).
const FONT_FAMILY = /^[\w\s,"'.-]{1,200}$/;
const STORE_KEY = 'ptyd.settings';

// A setting's value from a string or a stored value; undefined if invalid.
function settingValue(key, v) {
	const def = DEFAULTS[key];
	if (typeof def === 'number') {
		const n = Number(v);
		const [lo, hi] = RANGES[key];
		return Number.isFinite(n) ? Math.min(hi, Math.max(lo, Math.round(n))) : undefined;
	}
	if (typeof def === 'boolean') {
		if (v === true || v === 'true' || v === '1' || v === 'on' || v === '')
			return true;
		if (v === false || v === 'false' || v === '0' || v === 'off')
			return false;
		return undefined;
	}
	if (typeof v !== 'string')
		return undefined;
	if (CHOICES[key])
		return CHOICES[key].includes(v) ? v : undefined;
	if (key === 'fontFamily')
		return FONT_FAMILY.test(v) ? v : undefined;
	return v.length > 0 && v.length <= 200 ? v : undefined;
}

function loadSettings() {
	const s = { ...DEFAULTS };
	let stored = {};
	try {
		stored = JSON.parse(localStorage.getItem(STORE_KEY) || '{}') || {};
	} catch (e) {
		stored = {};
	}
	const params = new URLSearchParams(location.search);
	for (const key of Object.keys(DEFAULTS)) {
		const from = NOT_FROM_ADDRESS.includes(key) ? [stored[key]] : [stored[key], params.get(key)];
		for (const v of from) {
			const ok = v === undefined || v === null ? undefined : settingValue(key, v);
			if (ok !== undefined)
				s[key] = ok;
		}
	}
	return s;
}

const settings = loadSettings();

function saveSetting(key, value) {
	const v = settingValue(key, value);
	if (v === undefined)
		return;
	settings[key] = v;
	let stored = {};
	try {
		stored = JSON.parse(localStorage.getItem(STORE_KEY) || '{}') || {};
	} catch (e) {
		stored = {};
	}
	stored[key] = v;
	try {
		localStorage.setItem(STORE_KEY, JSON.stringify(stored));
	} catch (e) {
		// private mode, or full: the setting lasts for this page only
	}
	applySetting(key);
}

// ---- the session id ------------------------------------------------------

// The id lives in the address (?session=ID), so a reload or a second tab
// with the same address attaches to the same shell.
function randomId() {
	const bytes = new Uint8Array(9);
	crypto.getRandomValues(bytes);
	return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

let sidMadeHere = false;         // no terminal can have it yet

function sessionFromUrl() {
	const params = new URLSearchParams(location.search);
	let sid = params.get('session');
	// The id's rule is the server's (GET limits, checked before start).
	if (sid === null || sid === '') {
		sid = randomId();
		sidMadeHere = true;
		params.set('session', sid);
		history.replaceState(null, '', '?' + params.toString() + location.hash);
	}
	return sid;
}

const sid = sessionFromUrl();
const viewerId = randomId();

// ---- HTTP ------------------------------------------------------------------

// fetch with a deadline: rejects (AbortError) when no answer came in time.
async function fetchTimed(url, init, timeoutMs) {
	const ctl = new AbortController();
	const timer = timeoutMs ? setTimeout(() => ctl.abort(), timeoutMs) : 0;
	try {
		const res = await fetch(url, { ...init, signal: ctl.signal });
		let data = null;
		try {
			data = await res.json();
		} catch (e) {
			data = null;
		}
		return { res, data };
	} finally {
		clearTimeout(timer);
	}
}

// POST a JSON body; resolves to {status, data, retryAfterMs}.  Rejects
// only when no answer came at all (network error, timeout).
async function post(endpoint, body, timeoutMs) {
	const { res, data } = await fetchTimed(API + endpoint, {
		method: 'POST',
		headers: { 'Content-Type': 'application/json' },
		body: JSON.stringify(body),
		cache: 'no-store',
		credentials: 'same-origin',
	}, timeoutMs);
	const ra = Number(res.headers.get('Retry-After'));
	return {
		status: res.status,
		data,
		retryAfterMs: Number.isFinite(ra) && ra > 0 ? ra * 1000 : 0,
	};
}

async function getJson(endpoint, timeoutMs = PROBE_TIMEOUT_MS) {
	const { res, data } = await fetchTimed(API + endpoint,
	    { cache: 'no-store', credentials: 'same-origin' }, timeoutMs);
	if (!res.ok || data === null)
		throw Object.assign(new Error('HTTP ' + res.status), {
			status: res.status,
			// The API's own words (a host that is down says which).
			why: data && typeof data.error === 'string' ? data.error : null,
		});
	return data;
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

// The server's limits, where it says them (GET limits); the defaults above
// stay where it does not.
async function loadLimits() {
	let d;
	try {
		d = await getJson('limits');
	} catch (e) {
		return;
	}
	if (Number.isInteger(d.input_chars) && d.input_chars > 0)
		limits.inputChars = d.input_chars;
	if (d.session_id && typeof d.session_id.pattern === 'string') {
		try {
			limits.sidPattern = new RegExp(d.session_id.pattern);
		} catch (e) {
			limits.sidPattern = null;
		}
	}
	const hb = Number(d.heartbeat_ms ?? (d.heartbeat ? d.heartbeat * 1000 : NaN));
	if (Number.isFinite(hb) && hb > 0)
		limits.silenceMs = Math.max(3000, Math.round(hb * 1.5) + 500);
}

// ---- status line ---------------------------------------------------------

let statusKind = 'connecting';
let statusWords = ['connecting…', 'connecting'];

// The status in full where it fits, else its short form; the whole text
// is always the tooltip.
function setStatus(kind, text, short = text) {
	statusKind = kind;
	statusWords = [text, short];
	$('status').dataset.kind = kind;
	$('status').title = text;
	fitStatus();
}

function fitStatus() {
	const el = $('status-text');
	el.textContent = statusWords[0];
	if (el.scrollWidth > el.clientWidth + 1)
		el.textContent = statusWords[1];
}

new ResizeObserver(fitStatus).observe($('status'));

// A notice says what went wrong; one with a cause goes as soon as that
// cause does (clearNotice), not only when its time is up.
let noticeTimer = 0;
let noticeCause = null;
function notice(text, cause = null) {
	const el = $('notice');
	el.textContent = text;
	el.title = text;
	el.classList.add('shown');
	noticeCause = cause;
	clearTimeout(noticeTimer);
	noticeTimer = setTimeout(() => clearNotice(noticeCause), NOTICE_MS);
}

function clearNotice(cause) {
	if (cause === null || cause !== noticeCause)
		return;
	clearTimeout(noticeTimer);
	noticeCause = null;
	$('notice').classList.remove('shown');
}

// ---- the terminal ----------------------------------------------------------

const reducedMotion = matchMedia('(prefers-reduced-motion: reduce)');
const lightScheme = matchMedia('(prefers-color-scheme: light)');
const coarsePointer = matchMedia('(pointer: coarse)');

function themeName() {
	if (settings.theme !== 'auto')
		return settings.theme;
	return lightScheme.matches ? 'light' : 'dark';
}

const term = new Terminal({
	theme: themeName() === 'light' ? LIGHT : DARK,
	fontFamily: settings.fontFamily,
	fontSize: settings.fontSize,
	lineHeight: 1.1,
	cursorBlink: settings.cursorBlink && !reducedMotion.matches,
	cursorStyle: settings.cursorStyle,
	scrollback: settings.scrollback,
	minimumContrastRatio: 4.5,
	screenReaderMode: settings.screenReaderMode,
	allowProposedApi: true,        // the unicode API (Unicode 11 widths)
	rightClickSelectsWord: false,
});
const fit = new FitAddon();
term.loadAddon(fit);
const unicode11 = new Unicode11Addon();
term.loadAddon(unicode11);
term.unicode.activeVersion = '11';
const search = new SearchAddon();
term.loadAddon(search);
term.loadAddon(new WebLinksAddon());
term.open($('term'));
// Predicted local echo on a slow link (predict.mjs).
const predictor = new Predictor(term, $('term'));
predictor.mode = settings.localEcho;
term.onScroll(() => predictor.render());
term.onResize(() => predictor.reset());

// GPU rendering where WebGL2 works; the DOM renderer where it is missing,
// refused, or its context is lost.
let renderer = 'dom';
let webgl = null;

function useWebgl(on) {
	if (!on) {
		if (webgl !== null) {
			webgl.dispose();
			webgl = null;
		}
		renderer = 'dom';
		return;
	}
	if (webgl !== null)
		return;
	try {
		const probe = document.createElement('canvas').getContext('webgl2');
		if (!probe)
			throw new Error('no WebGL2');
		const addon = new WebglAddon();
		addon.onContextLoss(() => {
			notice('the GPU context was lost: drawing without WebGL');
			useWebgl(false);
		});
		term.loadAddon(addon);
		webgl = addon;
		renderer = 'webgl';
	} catch (e) {
		renderer = 'dom';
	}
}
// auto: the GPU on desktops; the DOM on touch screens, where WebGL
// contexts are scarce and are lost with the tab in the background.
function wantWebgl() {
	return settings.renderer === 'webgl' || (settings.renderer === 'auto' && !coarsePointer.matches);
}
useWebgl(wantWebgl());

function applyTheme() {
	const name = themeName();
	document.documentElement.dataset.theme = name;
	term.options.theme = name === 'light' ? LIGHT : DARK;
}
applyTheme();
lightScheme.addEventListener('change', applyTheme);

function applySetting(key) {
	switch (key) {
	case 'theme':
		applyTheme();
		break;
	case 'cursorBlink':
		term.options.cursorBlink = settings.cursorBlink && !reducedMotion.matches;
		break;
	case 'renderer':
		useWebgl(wantWebgl());
		break;
	case 'keybar':
		showKeybar();
		break;
	case 'localEcho':
		predictor.mode = settings.localEcho;
		predictor.reset();
		break;
	case 'fontSize':
	case 'fontFamily':
	case 'cursorStyle':
	case 'scrollback':
	case 'screenReaderMode':
		term.options[key] = settings[key];
		if (key === 'fontSize' || key === 'fontFamily')
			refit();
		break;
	default:
		break;
	}
}

$('session').textContent = sid;
document.title = 'ptyd \u2014 ' + sid;
term.onTitleChange((title) => {
	document.title = title ? title + ' \u2014 ptyd' : 'ptyd \u2014 ' + sid;
});

// phase: 'starting' until start answered, 'live' while the shell runs,
// 'ended' once it is gone (until the user asks for a new one).
let phase = 'starting';

// ---- the active viewer ---------------------------------------------------------

// Every tab on this session shows the same shell, but only one is its
// active viewer: the one with focus, or the last that typed.  Only it sets
// the terminal's size and answers the terminal's queries (device
// attributes, cursor position, colours): with two tabs each query would be
// answered twice.  Tabs of this browser tell each other on a
// BroadcastChannel; focusing or typing in a tab takes the role back.
let active = false;
let sharedSize = null;           // the size the active tab set, when known
const channel = 'BroadcastChannel' in window ? new BroadcastChannel('ptyd:' + sid) : null;

function claim() {
	if (!active) {
		active = true;
		sentSize = null;          // another tab may have changed it
	}
	refit();
	announce();
}

function announce() {
	if (channel !== null && active)
		channel.postMessage({ t: 'active', v: viewerId, rows: term.rows, cols: term.cols });
}

if (channel !== null) {
	channel.onmessage = (e) => {
		const m = e.data;
		if (!m || m.t !== 'active' || m.v === viewerId)
			return;
		active = false;
		adoptSize(m.rows, m.cols);
	};
}

// An inactive tab shows the terminal at the size the active one gave it,
// so lines wrap where the shell thinks they do.
function adoptSize(rows, cols) {
	if (!Number.isInteger(rows) || !Number.isInteger(cols))
		return;
	sharedSize = { rows, cols };
	if (!active && (term.rows !== rows || term.cols !== cols))
		term.resize(cols, rows);
}

window.addEventListener('focus', claim);
document.addEventListener('visibilitychange', () => {
	if (document.visibilityState === 'visible' && document.hasFocus())
		claim();
});
$('term').addEventListener('pointerdown', claim, true);
$('term').addEventListener('focusin', () => {
	if (document.hasFocus())
		claim();
});

// ---- starting a shell ------------------------------------------------------

let startAttempt = 0;
let startTimer = 0;

// A tab that finds its terminal running attaches without `start` (start
// resizes a running terminal: only the active tab may); the active one
// then sends its size.  Otherwise start it, at this tab's size.
async function start(fresh, listed = null) {
	clearTimeout(startTimer);
	phase = 'starting';
	setStatus('connecting', 'starting…', 'starting');
	if (!fresh) {
		let list = null;
		try {
			list = await (listed ?? getJson('list'));
		} catch (e) {
			list = null;
		}
		const t = list && (list.terminals || []).find((x) => x.session_id === sid && x.running);
		if (t) {
			begin(active ? null : { rows: t.rows, cols: t.cols });
			return;
		}
	}
	const size = { rows: term.rows, cols: term.cols };
	let r;
	try {
		r = await post('start', { session_id: sid, rows: size.rows, cols: size.cols }, 15000);
	} catch (e) {
		r = null;
	}
	if (r !== null && r.status === 200) {
		sentSize = size;
		begin(null);
		return;
	}
	if (r === null || transient(r.status)) {
		const wait = Math.max(r ? r.retryAfterMs : 0, backoffMs(startAttempt++));
		setStatus(r ? 'reconnecting' : 'unreachable', r ? 'server busy (' + errorText(r) +
		    '), retrying (attempt ' + startAttempt + ')' :
		    'server unreachable, retrying (attempt ' + startAttempt + ')',
		    (r ? 'busy' : 'offline') + ', retry ' + startAttempt);
		startTimer = setTimeout(() => start(fresh), wait);
		return;
	}
	setStatus('error', 'cannot start: ' + errorText(r), 'cannot start');
	ended('The shell could not be started: ' + errorText(r) + '.');
}

function begin(size) {
	startAttempt = 0;
	phase = 'live';
	if (size !== null)
		adoptSize(size.rows, size.cols);
	attach();
	pumpInput();
	pumpResize();
}

// ---- the output stream -----------------------------------------------------

// The stream is read with fetch rather than EventSource: EventSource hides
// the heartbeat comments, so a dead or half-open link would look like a
// quiet shell forever.  Any byte (an event or `: heartbeat`) proves the
// link alive; silence past limits.silenceMs ends the stream and the page
// says so.
//
// lastId is the id of the last event seen: the stream position to resume
// from, sent as last_event_id, so the server replays exactly what came
// after it, or says `gap`.
//
// Replayed output: what a stream sends first (the backlog, or what was
// missed) has the shell's old queries in it; answering them now would type
// junk at the prompt.  The server marks where the replay ends: with
// heartbeat=event its first `heartbeat` follows the last byte that was
// already there when the stream began (a `screen` event is replay whole).
// Output before it counts as replayed, and no answer leaves this page
// while xterm parses it; live output after it is answered (by the active
// tab).  An unmarked replay ends after REPLAY_MAX_MS.
let lastId = null;
let stream = null;       // {ctl, gen, bytes, replaying, ...} of the open stream
let generation = 0;      // bumped per stream: late events of an old one are ignored
let streamAttempt = 0;
let streamTimer = 0;
let streams = 0;         // streams opened so far (for the tests)
let bytesEver = 0;       // body bytes received on any stream
let replayWrites = 0;    // replayed chunks xterm has not parsed yet
let unparsed = 0;        // UTF-16 units written to xterm, not parsed yet
let unparsedMax = 0;     // the most it has been (for the tests)
let drained = [];        // resolvers of readers waiting for FLOW_LOW

function closeStream() {
	clearTimeout(streamTimer);
	if (stream !== null) {
		clearTimeout(stream.silence);
		clearTimeout(stream.quiet);
		stream.ctl.abort();
		stream = null;
	}
	generation++;
}

// attach=screen: without a usable position (a fresh page, or one whose
// position has left the backlog) the server sends the screen as it is,
// not the raw backlog; with one it still resumes byte for byte.
function streamUrl() {
	let url = API + 'output?session_id=' + encodeURIComponent(sid) +
		'&heartbeat=event&attach=screen';
	if (lastId !== null)
		url += '&last_event_id=' + encodeURIComponent(lastId);
	return url;
}

// Something arrived (or the stream just opened): the link is alive.
function alive(s) {
	clearTimeout(s.silence);
	s.silence = setTimeout(() => silent(s), limits.silenceMs);
}

function endReplay(s) {
	s.replaying = false;
	clearTimeout(s.quiet);
}

async function attach() {
	closeStream();
	const s = { ctl: new AbortController(), gen: generation, bytes: 0,
		replaying: true, silence: 0, quiet: 0, quietAt: 0, opened: 0 };
	stream = s;
	streams++;
	alive(s);
	let res;
	try {
		res = await fetch(streamUrl(), {
			cache: 'no-store', credentials: 'same-origin', signal: s.ctl.signal,
			headers: { Accept: 'text/event-stream' },
		});
	} catch (e) {
		if (s.gen === generation)
			streamLost(s, 'network');
		return;
	}
	if (s.gen !== generation)
		return;
	if (res.status !== 200) {
		s.ctl.abort();
		streamRefused(s, res);
		return;
	}
	s.opened = Date.now();
	setStatus('connected', 'connected');
	clearNotice('stream');
	s.quietAt = Date.now() + REPLAY_MAX_MS;
	s.quiet = setTimeout(() => endReplay(s), REPLAY_MAX_MS);
	readStream(s, res.body.getReader());
}

function streamRefused(s, res) {
	if (res.status === 404) {
		// Not running: closed elsewhere, reaped, or lingered past.
		recover();
		return;
	}
	if (res.status === 429)
		notice('too many viewers on this terminal: retrying', 'stream');
	streamLost(s, transient(res.status) ? 'unreachable' : 'network');
}

async function readStream(s, reader) {
	const dec = new TextDecoder();
	const ev = { id: null, event: '', data: [] };
	let buf = '';
	for (;;) {
		let r;
		try {
			r = await reader.read();
		} catch (e) {
			if (s.gen === generation)
				streamLost(s, 'network');
			return;
		}
		if (s.gen !== generation)
			return;
		if (r.done) {
			// The server ended it (a stuck viewer cut off, nginx
			// reloading): resume at once.
			streamLost(s, 'ended');
			return;
		}
		alive(s);
		s.bytes += r.value.length;
		bytesEver += r.value.length;
		floodCount(s, r.value.length);
		buf += dec.decode(r.value, { stream: true });
		let nl;
		while ((nl = buf.search(/\r\n|\r|\n/)) !== -1) {
			const line = buf.slice(0, nl);
			buf = buf.slice(nl + (buf[nl] === '\r' && buf[nl + 1] === '\n' ? 2 : 1));
			sseLine(s, ev, line);
			if (s.gen !== generation)
				return;
			if (unparsed > FLOW_HIGH && !(await flowPause(s)))
				return;
		}
	}
}

// ---- Ctrl+C in a flood ----------------------------------------------------

// A flood (yes, a big cat) fills the buffers between ptyd and xterm.js with
// seconds of output: Ctrl+C stops the program at once, but the screen
// would go on until they drained.  Ctrl+C typed while the stream floods
// skips them, by the user's choice: once the interrupt has had time to
// reach the shell, the stream is attached again for the screen as it is
// now (attach=screen, no resume position), and a notice says how many
// bytes were skipped.  Nothing else ever skips output.
const FLOOD_BYTES = 128 * 1024;  // read within FLOOD_MS: a flood
const FLOOD_MS = 500;
const SKIP_AFTER_MS = 50;        // for the ^C to reach the shell
let skipFrom = null;             // the position skipped from, until the screen
let skipTimer = 0;
let skips = 0;                   // for the tests

function floodCount(s, n) {
	const now = Date.now();
	if (now - (s.floodAt || 0) > FLOOD_MS) {
		s.floodAt = now;
		s.floodBytes = 0;
	}
	s.floodBytes += n;
}

function flooding() {
	const s = stream;
	return s !== null && ((Date.now() - (s.floodAt || 0) <= FLOOD_MS &&
	    s.floodBytes >= FLOOD_BYTES) || unparsed > FLOW_LOW);
}

function interrupted() {
	if (!flooding() || phase !== 'live')
		return;
	clearTimeout(skipTimer);
	skipTimer = setTimeout(() => {
		if (phase !== 'live' || stream === null)
			return;
		skips++;
		skipFrom = lastId;
		lastId = null;
		attach();
	}, SKIP_AFTER_MS);
}

// One line of the event stream (the SSE format, as EventSource reads it).
function sseLine(s, ev, line) {
	if (line === '') {
		if (ev.data.length > 0 || ev.event !== '')
			dispatch(s, ev.event || 'message', ev.id, ev.data.join('\n'));
		ev.event = '';
		ev.data = [];
		return;
	}
	if (line[0] === ':') {
		// `: heartbeat`: nothing more was queued.  (Other comments,
		// such as a CGI run's padding, say nothing.)
		if (line.startsWith(': heartbeat'))
			endReplay(s);
		return;
	}
	const c = line.indexOf(':');
	const field = c === -1 ? line : line.slice(0, c);
	let value = c === -1 ? '' : line.slice(c + 1);
	if (value[0] === ' ')
		value = value.slice(1);
	if (field === 'event')
		ev.event = value;
	else if (field === 'data')
		ev.data.push(value);
	else if (field === 'id' && !value.includes('\0'))
		ev.id = value;
}

function write(s, text) {
	const replayed = s.replaying;

	if (replayed)
		replayWrites++;
	unparsed += text.length;
	unparsedMax = Math.max(unparsedMax, unparsed);
	term.write(text, () => {
		if (replayed)
			replayWrites--;
		unparsed -= text.length;
		predictor.check();
		if (unparsed <= FLOW_LOW && drained.length > 0) {
			const waiting = drained;
			drained = [];
			waiting.forEach((resolve) => resolve());
		}
	});
}

// xterm is behind: read no more until it has parsed down to FLOW_LOW, and
// the rest waits with the server.  The silence meanwhile is ours, not the
// link's, and the replay's time does not run while the page takes none of
// it.  False if another stream took over meanwhile.
async function flowPause(s) {
	const from = Date.now();

	clearTimeout(s.silence);
	clearTimeout(s.quiet);
	await flowDrained();
	if (s.gen !== generation)
		return false;
	alive(s);
	if (s.replaying) {
		s.quietAt += Date.now() - from;
		s.quiet = setTimeout(() => endReplay(s), Math.max(0, s.quietAt - Date.now()));
	}
	return true;
}

// Resolves once xterm has parsed its way down to FLOW_LOW.
function flowDrained() {
	if (unparsed <= FLOW_LOW)
		return Promise.resolve();
	return new Promise((resolve) => drained.push(resolve));
}

function dispatch(s, name, id, data) {
	let d;
	try {
		d = JSON.parse(data);
	} catch (e) {
		return;
	}
	if (id !== null && id !== '')
		lastId = id;
	switch (name) {
	case 'output':
		streamAttempt = 0;
		if (typeof d.text === 'string')
			write(s, d.text);
		break;
	case 'screen':
		if (skipFrom !== null && id !== null) {
			notice('skipped ' + Math.max(0, Number(id) - Number(skipFrom)) +
			    ' bytes of output after Ctrl+C', 'skip');
			skipFrom = null;
		}
		// The screen as it is now, then live output (DESIGN 3).  The
		// reset is written too (RIS), so it comes after what xterm has
		// not parsed yet of the stream before, not ahead of it.
		if (Number.isInteger(d.rows) && Number.isInteger(d.cols) && !active)
			adoptSize(d.rows, d.cols);
		s.replaying = true;
		write(s, '\x1bc' + (d.text || ''));
		endReplay(s);
		break;
	case 'heartbeat':
		endReplay(s);
		break;
	case 'gap':
		notice('history gap: ' + d.lost + ' bytes of output were lost while this page was away or behind');
		break;
	case 'terminal_closed':
		closeStream();
		closed(d);
		break;
	case 'terminal_error':
		closeStream();
		notice('stream error: ' + d.error, 'stream');
		reconnectLater('reconnecting');
		break;
	default:
		break;
	}
}

// Nothing for limits.silenceMs: a dead or half-open link, a stopped
// server, or one that holds the stream back.
function silent(s) {
	if (s.gen !== generation)
		return;
	const buffered = s.opened !== 0 && s.bytes === 0 && bytesEver === 0;
	closeStream();
	if (buffered) {
		// The headers came, the body never did: a proxy that buffers.
		probe().then((ok) => {
			if (ok) {
				setStatus('buffered', 'this server buffers the stream: see the README, section Buffering',
				    'buffered: see README');
				streamTimer = setTimeout(recover, RETRY_MAX_MS);
			} else {
				reconnectLater('unreachable');
			}
		});
		return;
	}
	setStatus('reconnecting', 'no data from the server: reconnecting…', 'reconnecting');
	recover();
}

async function probe() {
	try {
		await getJson('list');
		return true;
	} catch (e) {
		return false;
	}
}

function streamLost(s, why) {
	closeStream();
	if (phase === 'ended')
		return;
	reconnectLater(why === 'unreachable' ? 'unreachable' : 'reconnecting');
}

function reconnectLater(kind, why = null) {
	if (phase === 'ended')
		return;
	const n = ++streamAttempt;
	if (kind === 'unreachable' && why)
		setStatus('unreachable', why + ', retrying (attempt ' + n + ')', 'offline, retry ' + n);
	else if (kind === 'unreachable')
		setStatus('unreachable', 'server unreachable, retrying (attempt ' + n + ')', 'offline, retry ' + n);
	else
		setStatus('reconnecting', 'reconnecting… (attempt ' + n + ')', 'reconnecting (' + n + ')');
	clearTimeout(streamTimer);
	streamTimer = setTimeout(recover, backoffMs(n - 1));
}

// Is the terminal still there?  Then resume; else say how it ended.
async function recover() {
	clearTimeout(streamTimer);
	let list;
	try {
		list = await getJson('list');
	} catch (e) {
		reconnectLater(e.status === undefined || transient(e.status) ? 'unreachable' : 'reconnecting',
		    e.why || null);
		return;
	}
	if (phase === 'ended')
		return;
	const mine = (list.terminals || []).find((t) => t.session_id === sid);
	if (mine === undefined) {
		closed({ reason: 'gone', exit_code: null });
		return;
	}
	if (!active && mine.running)
		adoptSize(mine.rows, mine.cols);
	attach();
}

function endText(d) {
	switch (d.reason) {
	case 'exit':
		if (d.exit_code === null || d.exit_code === undefined)
			return ['ended', 'exited'];
		if (d.exit_code < 0)
			return ['ended (signal ' + -d.exit_code + ')', 'was killed by signal ' + -d.exit_code];
		return ['ended (exit ' + d.exit_code + ')', 'exited with code ' + d.exit_code];
	case 'closed':
		return ['closed', 'was closed'];
	case 'reaped':
		return ['closed (idle)', 'was closed after being idle'];
	case 'evicted':
		return ['closed (evicted)', 'was closed to make room for another terminal'];
	case 'shutdown':
		return ['closed (server shut down)', 'was closed: the server shut down'];
	case 'gone':
		return ['closed', 'was closed while this page was away'];
	default:
		return ['closed (' + d.reason + ')', 'was closed (' + d.reason + ')'];
	}
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
	const [status, text] = endText(d);
	setStatus(d.reason === 'exit' ? 'exited' : 'closed', status);
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
	term.options.cursorBlink = settings.cursorBlink && !reducedMotion.matches;
	term.reset();
	lastId = null;
	claim();
	term.focus();
	start(true);
}

$('restart').addEventListener('click', newShell);

// ---- keystrokes --------------------------------------------------------------

// Keystrokes go out in order, one request in flight at a time.  What is
// typed while a request travels waits in `pending` and leaves with the next
// request, so on a slow link each round trip carries everything typed
// during the previous one: order is kept and a fast typist is never held
// to one key per round trip.  A paste goes the same way, in pieces of at
// most limits.inputChars code points (halved when the server says 413).
//
// Exactly once (DESIGN 2): every piece gets an input_id, this page's own id
// and a sequence number, and a piece that got no clear answer (a network
// error, a timeout, 503, 429) goes again with the same id and the same
// text, never merged with what was typed since.  ptyd drops a repeated id
// and answers it as done, so a piece that did reach the shell before its
// answer was lost is not typed twice.
let inputSeq = 0;
let sending = null;         // {id, data}: the piece in flight or to retry
let pending = '';
let inflight = false;
let inputAttempt = 0;
let inputTimer = 0;
let repliesSent = 0;        // answers to the terminal's queries (for the tests)
let repliesDropped = 0;

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
		const data = takeCodePoints(pending, limits.inputChars);
		pending = pending.slice(data.length);
		sending = { id: viewerId + ':' + ++inputSeq, data };
	}
	inflight = true;
	let r;
	const t0 = performance.now();
	try {
		r = await post('input', { session_id: sid, data: sending.data,
		    input_id: sending.id }, INPUT_TIMEOUT_MS);
		if (r.status === 200)
			predictor.observe(performance.now() - t0);
	} catch (e) {
		// No answer (a dropped link, nginx or ptyd.fcgi restarting, a
		// timeout): the piece may or may not have reached ptyd.  Its
		// id makes sending it again safe.
		r = null;
	}
	inflight = false;
	if (phase !== 'live')
		return;
	inputAnswered(r);
}

function inputAnswered(r) {
	if (r !== null && r.status === 200) {
		sending = null;
		inputAttempt = 0;
		clearNotice('input');
		pumpInput();
		return;
	}
	if (r === null || transient(r.status)) {
		// 429: the shell is not reading; 503: ptyd is away.  The same
		// piece with the same id goes again, later.
		const wait = Math.max(r ? r.retryAfterMs : 0, backoffMs(inputAttempt++));
		if (r === null)
			notice('typing is not reaching the server: retrying (attempt ' + inputAttempt + ')', 'input');
		clearTimeout(inputTimer);
		inputTimer = setTimeout(pumpInput, wait);
		return;
	}
	if (r.status === 413 && sending.data.length > 1) {
		// Nothing was written: send it again in smaller pieces.
		const n = [...sending.data].length;
		limits.inputChars = Math.max(1, Math.min(limits.inputChars, Math.floor(n / 2)));
		pending = sending.data + pending;
		sending = null;
		pumpInput();
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

// xterm.js hands over keys, pastes and its answers to the terminal's
// queries alike (onData).  The answers are told apart by parser hooks:
// each query's handler marks "answering" for the synchronous rest of the
// parse (xterm's own handler answers right after ours, which returns false
// to let it), and no user input can come within that task.
let answering = false;
function markAnswer() {
	if (!answering) {
		answering = true;
		queueMicrotask(() => {
			answering = false;
		});
	}
	return false;
}
for (const id of [{ final: 'c' }, { prefix: '>', final: 'c' }, { final: 'n' },
	{ prefix: '?', final: 'n' }, { intermediates: '$', final: 'p' },
	{ prefix: '?', intermediates: '$', final: 'p' }, { final: 't' },
	{ prefix: '?', final: 'h' }, { prefix: '>', final: 'q' }, { prefix: '?', final: 'u' }])
	term.parser.registerCsiHandler(id, markAnswer);
term.parser.registerDcsHandler({ intermediates: '$', final: 'q' }, markAnswer);
for (const osc of [4, 10, 11, 12, 17, 19])
	term.parser.registerOscHandler(osc, markAnswer);

function onTermData(data) {
	if (answering) {
		// Only the active tab answers, and never replayed output.
		if (active && replayWrites === 0) {
			repliesSent++;
			queueInput(data);
		} else {
			repliesDropped++;
		}
		return;
	}
	if (!active)
		claim();
	const keys = modified(data);
	predictor.key(keys);
	queueInput(keys);
	if (keys.includes('\x03'))
		interrupted();
}
term.onData(onTermData);
term.onBinary(onTermData);

// ---- resize ------------------------------------------------------------------

// The active tab's terminal follows its box (window resizes, the bar
// wrapping, the on-screen keyboard), debounced; the newest size is sent,
// one request at a time.  Other tabs send nothing.
let sentSize = null;
let resizeInflight = false;
let resizeTimer = 0;
let resizeRetry = 0;

function refit() {
	if (active || sharedSize === null) {
		try {
			fit.fit();
		} catch (e) {
			// not laid out yet
		}
	} else {
		adoptSize(sharedSize.rows, sharedSize.cols);
	}
	pumpResize();
}

function pumpResize() {
	if (resizeInflight || phase !== 'live' || !active)
		return;
	const want = { rows: term.rows, cols: term.cols };
	if (sentSize !== null && sentSize.rows === want.rows && sentSize.cols === want.cols)
		return;
	resizeInflight = true;
	post('resize', { session_id: sid, rows: want.rows, cols: want.cols }, INPUT_TIMEOUT_MS)
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

term.onResize(() => {
	announce();
	pumpResize();
});
function layoutChanged() {
	clearTimeout(resizeTimer);
	resizeTimer = setTimeout(refit, RESIZE_DEBOUNCE_MS);
}
new ResizeObserver(layoutChanged).observe($('term-wrap'));

// The on-screen keyboard of a phone shrinks the visual viewport, not the
// layout one: the page follows the visual one, so the prompt stays above
// the keyboard.
if (window.visualViewport) {
	const vv = window.visualViewport;
	const follow = () => {
		document.documentElement.style.setProperty('--vh', vv.height + 'px');
		window.scrollTo(0, 0);
	};
	vv.addEventListener('resize', follow);
	follow();
}

// ---- copy and paste, keys ---------------------------------------------------------

const isMac = /Mac|iPhone|iPad/.test(navigator.platform || navigator.userAgent);

async function copyText(text) {
	if (!text)
		return false;
	try {
		await navigator.clipboard.writeText(text);
		return true;
	} catch (e) {
		// Not a secure context, or refused: the old way.
		const ta = document.createElement('textarea');
		ta.value = text;
		ta.style.position = 'fixed';
		ta.style.opacity = '0';
		document.body.appendChild(ta);
		ta.select();
		let ok = false;
		try {
			ok = document.execCommand('copy');
		} catch (e2) {
			ok = false;
		}
		ta.remove();
		term.focus();
		return ok;
	}
}

// Every paste goes through here, whichever way it came (DESIGN 6): the
// text loses its control characters (paste.mjs: an ESC[201~ in it would
// end xterm.js's bracket, and what followed ran as typed), and a paste of
// more than one line waits for a yes when pasteConfirm is on, as a
// program may run each line at its line break.  Then xterm.js brackets it.
async function pasteText(raw) {
	const text = sanitizePaste(raw);
	if (text !== raw)
		notice('control characters were removed from the paste');
	if (!text)
		return;
	if (settings.pasteConfirm && isMultiLine(text) && !(await confirmPaste(text))) {
		term.focus();
		return;
	}
	claim();
	term.paste(text);
	term.focus();
}

// The question before a paste of more than one line: its first lines as
// text, Paste or Cancel (Escape).  Resolves true for Paste.
const PASTE_PREVIEW_LINES = 8;
const PASTE_PREVIEW_CHARS = 160;
function confirmPaste(text) {
	const dlg = $('paste-confirm');
	const n = pasteLines(text);
	$('paste-count').textContent = `The paste has ${n} line${n === 1 ? '' : 's'}` +
	    (n === 1 ? ' and ends with a line break' : '') +
	    ': a program that does not wait for Enter runs each one at its line break.';
	const lines = text.replace(/\r\n?/g, '\n').split('\n').slice(0, PASTE_PREVIEW_LINES)
	    .map((l) => (l.length > PASTE_PREVIEW_CHARS ? l.slice(0, PASTE_PREVIEW_CHARS) + '…' : l));
	$('paste-preview').textContent = lines.join('\n') + (n > PASTE_PREVIEW_LINES ? '\n…' : '');
	dlg.returnValue = '';
	return new Promise((resolve) => {
		dlg.addEventListener('close', () => resolve(dlg.returnValue === 'paste'), { once: true });
		dlg.showModal();
		// Enter pastes, as it would have without the question; Escape
		// or Cancel does not.  (No autofocus attribute: Chromium refuses
		// it in a frame of another origin, and says so on the console.)
		$('paste-ok').focus();
	});
}

async function pasteFromClipboard() {
	try {
		const text = await navigator.clipboard.readText();
		if (text)
			await pasteText(text);
		return true;
	} catch (e) {
		notice('the browser does not let this page read the clipboard: use Ctrl+V');
		return false;
	}
}

function copySelection() {
	const text = term.getSelection();
	copyText(text);
	term.clearSelection();
}

function zoom(delta) {
	const size = delta === 0 ? DEFAULTS.fontSize : settings.fontSize + delta;
	saveSetting('fontSize', size);
}

// Keys the page takes before xterm.js: false means "not for the shell".
// Ctrl+V (Cmd+V) and Ctrl+Shift+V are left to the browser, whose paste
// event xterm.js turns into a (bracketed) paste: never a raw ^V.
function pageKey(e) {
	if (e.type !== 'keydown')
		return !(e.ctrlKey || e.metaKey) || !pageKeyName(e);
	const name = pageKeyName(e);
	switch (name) {
	case 'copy':
		e.preventDefault();
		copySelection();
		return false;
	case 'paste':
		return false;
	case 'find':
		e.preventDefault();
		openFind();
		return false;
	case 'zoom-in':
	case 'zoom-out':
	case 'zoom-reset':
		e.preventDefault();
		zoom(name === 'zoom-in' ? 1 : name === 'zoom-out' ? -1 : 0);
		return false;
	default:
		return true;
	}
}

function pageKeyName(e) {
	const k = e.key.length === 1 ? e.key.toLowerCase() : e.key;
	const mod = isMac ? e.metaKey : e.ctrlKey;
	if (e.altKey)
		return null;
	if (isMac && e.metaKey && !e.ctrlKey) {
		if (k === 'c')
			return term.hasSelection() ? 'copy' : null;
		if (k === 'v')
			return 'paste';
	}
	if (!e.ctrlKey && !mod)
		return null;
	if (e.ctrlKey && e.shiftKey) {
		if (k === 'c')
			return 'copy';
		if (k === 'v')
			return 'paste';
		if (k === 'f')
			return 'find';
	}
	if (e.ctrlKey && !e.shiftKey) {
		if (k === 'c' && term.hasSelection())
			return 'copy';
		if (k === 'v')
			return 'paste';
	}
	if (mod && (k === '=' || k === '+'))
		return 'zoom-in';
	if (mod && (k === '-' || k === '_'))
		return 'zoom-out';
	if (mod && k === '0')
		return 'zoom-reset';
	return null;
}
term.attachCustomKeyEventHandler(pageKey);

// The browser's paste, whichever way it comes (Ctrl+V, Cmd+V, the browser's
// own context menu, a middle click on Linux, which xterm.js turns into a
// paste into its textarea): taken in the capture phase, before xterm.js's
// own listeners on the textarea and the terminal see it, and sent through
// pasteText.
$('term').addEventListener('paste', (e) => {
	e.preventDefault();
	e.stopPropagation();
	pasteText(e.clipboardData ? e.clipboardData.getData('text/plain') : '');
}, true);
// A phone keyboard's clipboard suggestion arrives as typed text (an input
// event), which xterm.js sends as it is: one that holds a control
// character is a paste, and goes the same way.  Typing never puts one
// there (Enter, Tab and Escape are keys xterm.js takes before any input).
$('term').addEventListener('input', (e) => {
	if (!e.data || e.isComposing || !hasControl(e.data))
		return;
	e.stopPropagation();
	if (e.target && 'value' in e.target)
		e.target.value = '';
	pasteText(e.data);
}, true);

term.onSelectionChange(() => {
	if (settings.copyOnSelect && term.hasSelection())
		copyText(term.getSelection());
});

$('term').addEventListener('contextmenu', (e) => {
	if (!settings.rightClickPaste || !navigator.clipboard || !navigator.clipboard.readText)
		return;
	e.preventDefault();
	if (term.hasSelection())
		copySelection();
	else
		pasteFromClipboard();
});

// ---- the bell -------------------------------------------------------------------

let audio = null;
term.onBell(() => {
	if (settings.bell === 'none')
		return;
	const el = $('term-wrap');
	el.classList.remove('bell');
	void el.offsetWidth;
	el.classList.add('bell');
	setTimeout(() => el.classList.remove('bell'), 300);
	if (settings.bell === 'sound') {
		try {
			audio = audio || new AudioContext();
			const o = audio.createOscillator();
			const g = audio.createGain();
			g.gain.value = 0.05;
			o.frequency.value = 880;
			o.connect(g).connect(audio.destination);
			o.start();
			o.stop(audio.currentTime + 0.08);
		} catch (e) {
			// no audio here
		}
	}
});

// ---- find --------------------------------------------------------------------------

const FIND_DECO = {
	matchBackground: '#7d5c00', activeMatchBackground: '#e3b341',
	matchOverviewRuler: '#e3b341', activeMatchColorOverviewRuler: '#ff7b72',
};
let findResults = { resultIndex: -1, resultCount: 0 };
search.onDidChangeResults((r) => {
	findResults = r;
	$('find-count').textContent = r.resultCount === 0 ? 'no matches'
	    : (r.resultIndex + 1) + ' of ' + r.resultCount;
});

function openFind() {
	$('find').hidden = false;
	const sel = term.getSelection();
	if (sel && !sel.includes('\n'))
		$('find-text').value = sel;
	$('find-text').focus();
	$('find-text').select();
	layoutChanged();
}

function closeFind() {
	$('find').hidden = true;
	search.clearDecorations();
	term.focus();
	layoutChanged();
}

function findStep(forward) {
	const q = $('find-text').value;
	if (!q)
		return;
	const opts = { caseSensitive: $('find-case').checked, decorations: FIND_DECO };
	if (forward)
		search.findNext(q, opts);
	else
		search.findPrevious(q, opts);
}

$('find-open').addEventListener('click', openFind);
$('find-close').addEventListener('click', closeFind);
$('find-next').addEventListener('click', () => findStep(true));
$('find-prev').addEventListener('click', () => findStep(false));
$('find-text').addEventListener('input', () => findStep(true));
$('find-text').addEventListener('keydown', (e) => {
	if (e.key === 'Enter') {
		e.preventDefault();
		findStep(!e.shiftKey);
	} else if (e.key === 'Escape') {
		e.preventDefault();
		closeFind();
	}
});

// ---- the key bar (phones, tablets) --------------------------------------------------

const mods = { ctrl: false, alt: false };

function setMod(name, on) {
	mods[name] = on;
	const b = document.querySelector('#keybar [data-mod="' + name + '"]');
	b.setAttribute('aria-pressed', String(on));
}

// A sticky Ctrl or Alt applies to the next key typed, then lets go.
function modified(data) {
	if (!mods.ctrl && !mods.alt)
		return data;
	let out = data;
	if (mods.ctrl && data.length === 1) {
		const c = data.toUpperCase().charCodeAt(0);
		if (c >= 0x40 && c <= 0x5f)
			out = String.fromCharCode(c & 0x1f);
		else if (data === '?')
			out = '\x7f';
		else if (data === ' ')
			out = '\0';
	}
	if (mods.alt)
		out = '\x1b' + out;
	setMod('ctrl', false);
	setMod('alt', false);
	return out;
}

function keySeq(name) {
	const app = term.modes.applicationCursorKeysMode;
	const arrow = (c) => '\x1b' + (app ? 'O' : '[') + c;
	switch (name) {
	case 'esc': return '\x1b';
	case 'tab': return '\t';
	case 'up': return arrow('A');
	case 'down': return arrow('B');
	case 'right': return arrow('C');
	case 'left': return arrow('D');
	default: return '';
	}
}

function showKeybar() {
	const on = settings.keybar === 'on' || (settings.keybar === 'auto' && coarsePointer.matches);
	$('keybar').hidden = !on;
	layoutChanged();
}
showKeybar();
coarsePointer.addEventListener('change', showKeybar);

// The bar's buttons never take the focus from the terminal (the on-screen
// keyboard would close).
$('keybar').addEventListener('pointerdown', (e) => {
	if (e.target.closest('button'))
		e.preventDefault();
});
$('keybar').addEventListener('click', (e) => {
	const b = e.target.closest('button');
	if (!b)
		return;
	claim();
	if (b.dataset.mod) {
		setMod(b.dataset.mod, !mods[b.dataset.mod]);
	} else if (b.dataset.key) {
		const seq = keySeq(b.dataset.key);
		queueInput(mods.alt ? '\x1b' + seq : seq);
		setMod('ctrl', false);
		setMod('alt', false);
	} else if (b.dataset.text) {
		queueInput(modified(b.dataset.text));
	}
	term.focus();
});

// ---- settings dialog ---------------------------------------------------------------

function openSettings() {
	const form = $('settings-form');
	for (const el of form.elements) {
		if (!el.name || !(el.name in DEFAULTS))
			continue;
		if (el.type === 'checkbox')
			el.checked = settings[el.name];
		else
			el.value = String(settings[el.name]);
	}
	$('settings').showModal();
}

$('settings-form').addEventListener('change', (e) => {
	const el = e.target;
	if (!el.name || !(el.name in DEFAULTS))
		return;
	saveSetting(el.name, el.type === 'checkbox' ? el.checked : el.value);
});
$('settings-open').addEventListener('click', openSettings);
$('settings').addEventListener('close', () => term.focus());

// ---- the picker of terminals ----------------------------------------------------------

function ago(t) {
	if (!Number.isFinite(t) || t <= 0)
		return '';
	const s = Math.max(0, Math.round(Date.now() / 1000 - t));
	if (s < 60)
		return s + ' s';
	if (s < 3600)
		return Math.round(s / 60) + ' min';
	if (s < 86400)
		return Math.round(s / 3600) + ' h';
	return Math.round(s / 86400) + ' d';
}

function pageUrl(id) {
	const params = new URLSearchParams(location.search);
	params.set('session', id);
	return '?' + params.toString();
}

function button(text, label, fn) {
	const b = document.createElement('button');
	b.type = 'button';
	b.className = 'btn';
	b.textContent = text;
	b.setAttribute('aria-label', label);
	b.addEventListener('click', fn);
	return b;
}

async function fillPicker() {
	const rows = $('picker-rows');
	let list;
	try {
		list = await getJson('list');
	} catch (e) {
		rows.textContent = '';
		$('picker-empty').hidden = false;
		$('picker-empty').textContent = 'The server did not answer.';
		return;
	}
	const terms = (list.terminals || []).slice().sort((a, b) => (b.last_activity || 0) - (a.last_activity || 0));
	rows.textContent = '';
	$('picker-empty').hidden = terms.length > 0;
	$('picker-empty').textContent = 'No terminals.';
	for (const t of terms) {
		const tr = document.createElement('tr');
		const name = document.createElement('td');
		const a = document.createElement('a');
		a.href = pageUrl(t.session_id);
		a.textContent = t.session_id;
		if (t.session_id === sid)
			a.setAttribute('aria-current', 'page');
		name.appendChild(a);
		if (!t.running)
			name.append(' (ended' + (t.exit_code !== null && t.exit_code !== undefined ? ', exit ' + t.exit_code : '') + ')');
		tr.appendChild(name);
		for (const v of [ago(t.started_at), t.running ? ago(t.last_activity) : '', String(t.subscribers ?? 0)]) {
			const td = document.createElement('td');
			td.textContent = v;
			tr.appendChild(td);
		}
		const acts = document.createElement('td');
		acts.className = 'acts';
		acts.appendChild(button('Attach', 'Attach to ' + t.session_id, () => { location.href = pageUrl(t.session_id); }));
		acts.appendChild(button('New tab', 'Open ' + t.session_id + ' in a new tab', () => window.open(pageUrl(t.session_id), '_blank', 'noopener')));
		acts.appendChild(button('Close', 'Close ' + t.session_id, async () => {
			await post('close', { session_id: t.session_id }, PROBE_TIMEOUT_MS).catch(() => null);
			fillPicker();
		}));
		tr.appendChild(acts);
		rows.appendChild(tr);
	}
}

function openPicker() {
	fillPicker();
	$('picker').showModal();
}
$('terminals').addEventListener('click', openPicker);
$('session').addEventListener('click', openPicker);
$('picker-new').addEventListener('click', () => {
	location.href = pageUrl(randomId());
});
$('picker').addEventListener('close', () => term.focus());

// ---- close -------------------------------------------------------------------

$('close').addEventListener('click', async () => {
	if (phase === 'ended')
		return;
	let r;
	try {
		r = await post('close', { session_id: sid }, INPUT_TIMEOUT_MS);
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
	if (!r.data || !r.data.closed || stream === null || statusKind !== 'connected') {
		closeStream();
		closed({ reason: 'closed', exit_code: null });
	}
});

// ---- leaving -----------------------------------------------------------------

// Closing the tab leaves the shell running, but a full-screen program (an
// editor: the alternate screen) is easy to lose track of: ask first.
window.addEventListener('beforeunload', (e) => {
	const w = settings.warnOnLeave;
	const live = phase === 'live' && statusKind === 'connected';
	if ((w === 'connected' && live) ||
	    (w === 'program' && live && term.buffer.active.type === 'alternate')) {
		e.preventDefault();
		e.returnValue = '';
	}
});

// ---- reduced motion ---------------------------------------------------------------

reducedMotion.addEventListener('change', () => applySetting('cursorBlink'));

// ---- go ------------------------------------------------------------------------

// For debugging from the console, and for the browser tests.
window.ptyd = {
	term,
	search,
	sessionId: sid,
	viewerId,
	settings,
	limits,
	get phase() { return phase; },
	get active() { return active; },
	get lastEventId() { return lastId; },
	get streams() { return streams; },
	get sentSize() { return sentSize; },
	get renderer() { return renderer; },
	get unparsedMax() { return unparsedMax; },
	get repliesSent() { return repliesSent; },
	get skips() { return skips; },
	predictor,
	get repliesDropped() { return repliesDropped; },
	get status() { return statusKind; },
	dropStream() {
		// The tests' way to a link that died under the open stream.
		if (stream !== null)
			streamLost(stream, 'network');
	},
	loseContext() {
		// The tests' way to a lost context: the WebGL canvas's own.
		for (const c of document.querySelectorAll('#term canvas')) {
			const gl = c.getContext('webgl2');
			const ext = gl && gl.getExtension('WEBGL_lose_context');
			if (ext) {
				ext.loseContext();
				return true;
			}
		}
		return false;
	},
};

if (document.visibilityState === 'visible' && document.hasFocus())
	claim();
else
	refit();
term.focus();
// The first prompt waits on as few round trips as can be: an id made here
// is a new terminal's (randomId's are valid by any rule of the server's),
// so it starts at once beside the limits; an id from the address needs
// the limits (is it valid?) and the list (is it running?), asked at once.
if (sidMadeHere) {
	start(true);
	await loadLimits();
} else {
	const listed = getJson('list');
	listed.catch(() => null);
	await loadLimits();
	if (limits.sidPattern !== null && !limits.sidPattern.test(sid)) {
		// Not an id the server takes: a new one, in the address too.
		const params = new URLSearchParams(location.search);
		params.set('session', randomId());
		location.replace('?' + params.toString() + location.hash);
	} else
		start(false, listed);
}
