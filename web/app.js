// app.js -- the ptyd terminal page: one xterm.js terminal bound to one ptyd
// session through the HTTP API (DESIGN sections 2 and 3).  This module
// only puts the parts together and starts them; each part owns one job:
//
//   link.mjs      the link: start, the output stream, reconnects (a state machine)
//   sse.mjs       the event stream's format
//   input.mjs     the keystroke queue, its pieces, exactly once
//   viewer.mjs    the active tab of the session, the terminal's size
//   view.mjs      xterm.js, its look, output with flow control
//   keys.mjs      shortcuts, xterm.js's answers, the key bar
//   clipboard.mjs copy and paste          paste.mjs  what a paste may hold
//   dialogs.mjs   find, settings, the picker of terminals, the bell
//   status.mjs    the status line and notices
//   settings.mjs  the settings' rules and storage
//   api.mjs       requests and the server's limits
//   backoff.mjs   retry delays               predict.mjs  predicted echo
//   fragment.mjs  #share=TOKEN and #play=ID   watchers.mjs who is watching
//   share.mjs     the share dialog           player.mjs   recordings, the player
//   cast.mjs      the asciicast format       replay.mjs   playing one
//
// The page is one of three things, by its address: the owner's terminal
// (?session=ID), a terminal shared with this user (#share=TOKEN: the token
// is read, kept in memory and taken out of the address at once; view
// only or control, as the share says), or a recording's player
// (#play=ID).
//
// Owns: the page's mode, the session id in the URL, this tab's viewer id,
// the Close button, the warning on leaving, the first steps (limits, list,
// start; GET shared; the recording), and window.ptyd (for the console and
// the browser tests).  Does not own:
// rendering (xterm.js), the terminal itself (ptyd keeps it; closing the
// tab leaves it running until the reaper or the Close button ends it).
//
// Every URL is relative to the document, so the page works under any
// sub-path nginx mounts it at.

import { DEFAULTS, Settings } from './settings.mjs';
import { apiHeaders, defaultLimits, errorText, getJson, loadLimits, post, useShare } from './api.mjs';
import { backoffMs, transient } from './backoff.mjs';
import { parseFragment, withoutShare } from './fragment.mjs';
import { WatchersPanel } from './watchers.mjs';
import { ShareDialog } from './share.mjs';
import { Player, RecordingsDialog } from './player.mjs';
import { Status } from './status.mjs';
import { TermView } from './view.mjs';
import { Viewer } from './viewer.mjs';
import { InputQueue, INPUT_TIMEOUT_MS } from './input.mjs';
import { Link } from './link.mjs';
import { Keys } from './keys.mjs';
import { Clipboard } from './clipboard.mjs';
import { Dialogs } from './dialogs.mjs';

const $ = (id) => document.getElementById(id);

// The id lives in the address (?session=ID), so a reload or a second tab
// with the same address attaches to the same shell.
function randomId() {
	const bytes = new Uint8Array(9);
	crypto.getRandomValues(bytes);
	return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

// The id from the address, or a new one put there; made: no terminal can
// have it yet.  Its rule is the server's (GET limits, checked before start).
function sessionFromUrl() {
	const params = new URLSearchParams(location.search);
	const sid = params.get('session');
	if (sid !== null && sid !== '')
		return { sid, made: false };
	params.set('session', randomId());
	history.replaceState(null, '', '?' + params.toString() + location.hash);
	return { sid: params.get('session'), made: true };
}

// localStorage, or null where the page may not have it (a sandboxed frame).
function storage() {
	try {
		return window.localStorage;
	} catch {
		return null;
	}
}

// What the address asks.  A share link's token leaves the address before
// anything else happens (history.replaceState: not in the bar, not in
// the history); from here on only api.mjs has it.
const frag = parseFragment(location.hash);
const mode = frag.share !== null || frag.shared ? 'share' : frag.play !== null ? 'play' : 'owner';
if (frag.share !== null) {
	useShare(frag.share);
	history.replaceState(null, '', location.pathname + location.search + withoutShare(location.hash));
}

const settings = new Settings(storage(), new URLSearchParams(location.search));
const status = new Status({ status: $('status'), text: $('status-text'), notice: $('notice') });
const notice = (text, cause) => status.notice(text, cause);
const view = new TermView($('term'), settings.values, notice);
const term = view.term;

// Tells the user why nothing more happens here: the overlay, no restart.
function dead(kind, short, text) {
	status.set(kind, text, short);
	view.setEnded(true);
	$('close').disabled = true;
	$('restart').hidden = true;
	$('ended-text').textContent = text;
	$('ended').hidden = false;
}

// A page from a share link: which terminal, and what it may do (GET
// shared; a busy or unreachable server is asked again).  null: the share
// is not valid or this page has lost its token (a reload).
async function askShared() {
	if (frag.share === null) {
		dead('closed', 'open the link again', 'This page was opened from a share link, which it does not keep: ' +
		    'open the link again to watch.');
		return null;
	}
	for (let n = 0; ; n++) {
		try {
			return await getJson('shared');
		} catch (e) {
			if (e.status !== undefined && !transient(e.status, e.why)) {
				dead('closed', 'share not valid', e.status === 403
				    ? 'This share link is not valid (any more): it was revoked, it expired, its terminal ended, or it is for another user.'
				    : 'The share could not be opened: ' + (e.why || e.message) + '.');
				return null;
			}
			status.set('unreachable', 'server unreachable, retrying (attempt ' + (n + 1) + ')', 'offline, retry ' + (n + 1));
			await new Promise((r) => setTimeout(r, backoffMs(n)));
		}
	}
}

// The bar's parts each mode has, shown from the start: nothing in the
// bar appears later, so the terminal's size never jumps.
for (const id of ['share-open', 'watchers-open'])
	$(id).hidden = mode !== 'owner';
if (mode === 'share') {
	// The owner's terminals are not this user's to list, open or close.
	for (const id of ['new', 'terminals'])
		$(id).hidden = true;
	$('session').disabled = true;
}
if (mode !== 'owner') {
	$('close').hidden = true;
	if (mode === 'play')
		document.body.dataset.fixedSize = '';
	view.setReadOnly(true);   // until a control share says otherwise
}

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

const shared = mode === 'share' ? await askShared() : null;
if (mode === 'play')
	await playMode(frag.play);
else if (mode === 'owner' || shared !== null)
	await terminalMode();

// ---- a recording ----

async function playMode(id) {
	$('session').textContent = 'recording ' + id;
	document.title = 'ptyd \u2014 recording ' + id;
	new Clipboard({ term, host: $('term'), $, settings: settings.values, notice, claim: () => {}, readOnly: true });
	new Dialogs({ $, term, search: view.search, host: $('term-wrap'), sid: null, settings,
		newId: randomId, layoutChanged: () => {} });
	new RecordingsDialog({ $, term });
	const player = new Player({ $, view, status, id });
	window.ptyd = { term, player, get replay() { return player.replay; } };
	await player.load();
	term.focus();
}

// ---- a terminal: the owner's, or one shared with this user ----

async function terminalMode() {
	const role = shared === null ? 'owner' : shared.role === 'control' ? 'control' : 'view';
	const readOnly = role === 'view';
	const { sid, made } = shared === null ? sessionFromUrl() : { sid: String(shared.session_id), made: false };
	const viewerId = randomId();
	const limits = defaultLimits();
	view.setReadOnly(readOnly);
	if (readOnly)
		document.body.dataset.fixedSize = '';
	else
		delete document.body.dataset.fixedSize;
	const now = () => Date.now();
	const timers = { setTimeout: (fn, ms) => setTimeout(fn, ms), clearTimeout: (t) => clearTimeout(t), now };
	const page = { live: () => false, ended: () => false };   // the link's, once it is made

	const viewer = new Viewer({ term, fit: view.fit, sid, viewerId, post, live: () => page.live(), readOnly });
	const input = new InputQueue({
		...timers, post, sid, viewerId, limits, notice, readOnly,
		clearNotice: (cause) => status.clearNotice(cause),
		live: () => page.live(), ended: () => page.ended(),
		rtt: (ms) => view.predictor.observe(ms),
		now: () => performance.now(),
	});

	const watchers = new WatchersPanel({ button: $('watchers-open'), count: $('watchers-count'),
		panel: $('watchers'), rows: $('watchers-rows'), empty: $('watchers-empty') });
	let watchersAsked = false;

	const link = new Link({
		...timers, sid, limits, getJson, post, shared: shared !== null,
		// The stream is fetched (not an EventSource), so it carries the
		// share's header like every other request.
		fetch: (url, init) => fetch(url, { ...init, headers: apiHeaders(init.headers) }),
		ui: {
			watchers: (list) => {
				if (role === 'owner')
					watchers.show(list);
			},
			status: (kind, text, short) => status.set(kind, text, short),
			notice,
			clearNotice: (cause) => status.clearNotice(cause),
			live() {
				input.pump();
				viewer.pump();
				if (role === 'owner' && !watchersAsked) {
					// Who watches, before the stream's first event says.
					watchersAsked = true;
					getJson('watchers?session_id=' + encodeURIComponent(sid))
					    .then((d) => watchers.show(d.watchers), () => { watchersAsked = false; });
				}
			},
			ended,
			restarted() {
				term.reset();
				notice('the shell was restarted from another tab');
			},
			output: (text, replayed) => view.write(text, replayed),
			// The stream's resize: once xterm has parsed the output
			// before it, so that is drawn at the size it was written
			// for.  A tab that sizes the terminal itself (the active
			// one) takes nothing from it: adoptSize sets only an
			// inactive tab's, so two tabs never resize each other.
			resized(rows, cols) {
				view.write('', false, () => viewer.adoptSize(rows, cols));
			},
			full: () => view.full(),
			behind: () => view.behind(),
			drained: () => view.drained(),
			isActive: () => viewer.active,
			adopt: (rows, cols) => viewer.adoptSize(rows, cols),
			size: () => ({ rows: term.rows, cols: term.cols }),
			sizeSent(size) {
				viewer.sentSize = size;
			},
		},
	});
	page.live = () => link.live;
	page.ended = () => link.state === 'ended';

	const clipboard = new Clipboard({ term, host: $('term'), $, settings: settings.values, notice,
		claim: () => viewer.claim(), readOnly });
	if (role === 'owner') {
		new ShareDialog({ $, sid, term, notice, copy: (text) => clipboard.copy(text),
			opening: () => watchers.close() });
		new RecordingsDialog({ $, term });
	}
	const layoutChanged = () => viewer.layoutChanged();
	const dialogs = new Dialogs({ $, term, search: view.search, host: $('term-wrap'), sid, settings,
		newId: randomId, layoutChanged });
	const keys = new Keys({ term, view, keybar: $('keybar'), input, viewer, link, readOnly,
		isMac: /Mac|iPhone|iPad/.test(navigator.platform || navigator.userAgent),
		coarse: view.coarsePointer, settings: settings.values,
		copySelection: () => clipboard.copySelection(),
		openFind: () => dialogs.openFind(),
		zoom: (delta) => settings.set('fontSize', delta === 0 ? DEFAULTS.fontSize : settings.values.fontSize + delta),
		layoutChanged });

	settings.onChange = (key) => {
		view.apply(key);
		if (key === 'keybar')
			keys.showBar();
		if (key === 'fontSize' || key === 'fontFamily')
			viewer.refit();
	};

	// ---- the shell's end, and a new one ----

	function ended(text) {
		input.clear();
		view.setEnded(true);
		$('close').disabled = true;
		$('ended-text').textContent = text;
		$('ended').hidden = false;
		// A shared terminal is its owner's to start again.
		$('restart').hidden = shared !== null;
		if (shared === null)
			$('restart').focus();
	}

	$('restart').addEventListener('click', () => {
		$('ended').hidden = true;
		$('close').disabled = false;
		view.setEnded(false);
		term.reset();
		viewer.claim();
		term.focus();
		link.start(true);
	});

	$('close').addEventListener('click', async () => {
		if (link.state === 'ended')
			return;
		let r;
		try {
			r = await post('close', { session_id: sid }, INPUT_TIMEOUT_MS);
		} catch {
			notice('could not reach the server to close the shell');
			return;
		}
		if (r.status !== 200) {
			notice('close failed: ' + errorText(r));
			return;
		}
		// The stream normally brings terminal_closed; when it is not open
		// (or there was nothing to close), say it here.
		if (!r.data || !r.data.closed || link.state !== 'open')
			link.closed({ reason: 'closed', exit_code: null });
	});

	// ---- the page around the terminal ----

	$('session').textContent = shared === null ? sid : shared.owner ? shared.owner + ': ' + sid : sid;
	const baseTitle = (shared === null ? '' : 'watching ') + sid;
	document.title = 'ptyd \u2014 ' + baseTitle;
	term.onTitleChange((title) => {
		document.title = title ? title + ' \u2014 ptyd' : 'ptyd \u2014 ' + baseTitle;
	});
	if (shared !== null) {
		const badge = $('badge');
		badge.textContent = readOnly ? 'view only' : 'shared: control';
		badge.title = (shared.owner ? shared.owner + '\u2019s terminal, ' : 'A terminal ') +
		    (readOnly ? 'shared with you to watch: this page cannot type or resize it.'
			: 'shared with you: you may type into it.');
		badge.hidden = false;
	}
	if (readOnly) {
		// The terminal's size is its owner's: a view-only page follows it
		// (GET shared now and at each reattach, then the stream's resize
		// events) and never sends one.
		viewer.adoptSize(shared.rows, shared.cols);
	}

	// Closing the tab leaves the shell running, but a full-screen program (an
	// editor: the alternate screen) is easy to lose track of: ask first.
	window.addEventListener('beforeunload', (e) => {
		const w = settings.values.warnOnLeave;
		const live = link.state === 'open';
		if ((w === 'connected' && live) ||
		    (w === 'program' && live && term.buffer.active.type === 'alternate')) {
			e.preventDefault();
			e.returnValue = '';
		}
	});

	// Focus, a click or typing in a tab makes it the active viewer.
	window.addEventListener('focus', () => viewer.claim());
	document.addEventListener('visibilitychange', () => {
		if (document.visibilityState === 'visible' && document.hasFocus())
			viewer.claim();
	});
	$('term').addEventListener('pointerdown', () => viewer.claim(), true);
	$('term').addEventListener('focusin', () => {
		if (document.hasFocus())
			viewer.claim();
	});
	new ResizeObserver(layoutChanged).observe($('term-wrap'));


	// ---- go ----

	// For debugging from the console, and for the browser tests.
	window.ptyd = {
		term,
		mode,
		role,
		search: view.search,
		sessionId: sid,
		viewerId,
		settings: settings.values,
		limits,
		link,
		predictor: view.predictor,
		get phase() { return link.state === 'ended' ? 'ended' : link.live ? 'live' : 'starting'; },
		get active() { return viewer.active; },
		get lastEventId() { return link.lastId; },
		get streams() { return link.streams; },
		get sentSize() { return viewer.sentSize; },
		get renderer() { return view.renderer; },
		get unparsedMax() { return view.unparsedMax; },
		get repliesSent() { return keys.repliesSent; },
		get repliesDropped() { return keys.repliesDropped; },
		get skips() { return link.skips; },
		get status() { return status.kind; },
		dropStream() {
			// The tests' way to a link that died under the open stream.
			link.drop();
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
		viewer.claim();
	else
		viewer.refit();
	term.focus();
	if (shared !== null) {
		// GET shared has answered: no more to ask (GET limits is not for a
		// share; the defaults do, 413 halving the pieces).
		link.start(false, Promise.resolve(shared));
		return;
	}
	// The first prompt waits on as few round trips as can be: an id made here
	// is a new terminal's (randomId's are valid by any rule of the server's),
	// so it starts at once beside the limits; an id from the address needs
	// the limits (is it valid?) and the list (is it running?), asked at once.
	if (made) {
		link.start(true);
		await loadLimits(limits);
	} else {
		const listed = getJson('list');
		listed.catch(() => null);
		await loadLimits(limits);
		if (limits.sidPattern !== null && !limits.sidPattern.test(sid)) {
			// Not an id the server takes: a new one, in the address too.
			const params = new URLSearchParams(location.search);
			params.set('session', randomId());
			location.replace('?' + params.toString() + location.hash);
		} else {
			link.start(false, listed);
		}
	}
}
