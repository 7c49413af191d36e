// link.mjs -- the link between this page and its terminal, a state
// machine: starting the shell, the output stream, and what happens when
// the stream is lost (DESIGN 2 and 3).  No DOM: the page's side is a set of
// hooks (ui), and node:test drives it with stand-ins for fetch and timers.
//
// Owns: the link's state and the one function that changes it (enter),
// each state's timers and requests, the stream's position (lastId, sent
// as last_event_id so the server resumes right after it, or says `gap`),
// the attempt counters of start and reconnect, the skip after Ctrl+C.
// Does not own: reading an open stream (stream.mjs: events, flow control,
// the replay's end), what is drawn (view.mjs, through ui.output), input
// (input.mjs, told by ui.live and ui.ended), the status's words on screen
// (status.mjs, through ui.status).
//
// The states (LIVE: a shell is there to type into):
//   idle        nothing yet
//   starting    is the terminal running (list)?  Else POST start
//   start-wait  start got no answer or a busy one: retry timer -> starting
//   connecting  LIVE  GET output sent; silence timer; 404 -> recovering
//   open        LIVE  the stream is read: silence, replay and skip timers;
//                     the end or an error -> waiting; silence -> recovering,
//                     or probing when no byte ever came (a buffering proxy)
//   waiting     LIVE  backoff timer -> recovering ("reconnecting", "offline")
//   recovering  LIVE  list: running -> connecting, gone -> ended
//   probing     LIVE  list answered -> buffered, else waiting
//   buffered    LIVE  the server holds the stream back: timer -> recovering
//   ended             the shell is gone; the user may start a new one
//
// enter() is the only place the state changes.  A state's timers (after)
// and requests (its signal) are its own: entering the next state clears
// every timer and aborts every request of the one before, and an answer
// that comes for a state already left is dropped by when(), the one place
// that asks.  Only the stream's own request passes from connecting to open.
//
// A page opened from a share link (env.shared) never starts a shell and
// cannot list the owner's terminals: it asks GET shared where others ask
// list, and a share that is no longer valid (403, or the stream's last
// event share_ended) ends the link at once, with no reconnect.

import { Stream } from './stream.mjs';
import { RETRY_MAX_MS, backoffMs, retryDelay, transient } from './backoff.mjs';
import { errorText } from './api.mjs';
import { endText } from './status.mjs';

const START_TIMEOUT_MS = 15000;
// A flood (yes, a big cat) fills the buffers between ptyd and xterm.js with
// seconds of output: Ctrl+C stops the program at once, but the screen
// would go on until they drained.  Ctrl+C typed while the stream floods
// skips them, by the user's choice: once the interrupt has had time to
// reach the shell, the stream is attached again for the screen as it is
// now (attach=screen, no resume position), and a notice says how many
// bytes were skipped.  Nothing else ever skips output.
const SKIP_AFTER_MS = 50;        // for the ^C to reach the shell

const LIVE = new Set(['connecting', 'open', 'waiting', 'recovering', 'probing', 'buffered']);

// One stay in one state: its timers by name, and its requests' signal.
class State {
	constructor(name, env, ctl) {
		this.name = name;
		this.env = env;
		this.ctl = ctl;
		this.timers = new Map();
	}

	get signal() {
		return this.ctl.signal;
	}

	// Run fn after ms, replacing this state's timer of the same name.
	after(what, ms, fn) {
		this.cancel(what);
		this.timers.set(what, this.env.setTimeout(() => {
			this.timers.delete(what);
			fn();
		}, ms));
	}

	cancel(what) {
		if (this.timers.has(what))
			this.env.clearTimeout(this.timers.get(what));
		this.timers.delete(what);
	}

	// Leaving: every timer goes, and every request unless it is kept.
	leave(keepRequests) {
		for (const t of this.timers.values())
			this.env.clearTimeout(t);
		this.timers.clear();
		if (!keepRequests)
			this.ctl.abort();
	}
}

export class Link {
	// env: {sid, shared (opened from a share link), limits, fetch(url, init), getJson(endpoint, signal),
	// post(endpoint, body, timeoutMs), setTimeout, clearTimeout, now(),
	// ui}.  ui: status(kind, text, short), notice(text, cause),
	// clearNotice(cause), live() (the shell is there: send what waits),
	// ended(text), restarted(), output(text, replayed), full(), behind(),
	// drained() (a promise), isActive(), adopt(rows, cols), size(),
	// sizeSent(size); optional: watchers(list), resized(rows, cols)
	// (the stream's resize event, in order with output).
	constructor(env) {
		this.env = env;
		this.ui = env.ui;
		this.st = new State('idle', env, new AbortController());
		this.lastId = null;      // the id of the last event seen
		this.startAttempt = 0;
		this.streamAttempt = 0;
		this.streams = 0;        // streams opened so far (for the tests)
		this.bytesEver = 0;      // body bytes received on any stream
		this.skips = 0;          // skips after Ctrl+C (for the tests)
		this.skipFrom = null;    // the position skipped from, until the screen
	}

	get state() {
		return this.st.name;
	}

	get live() {
		return LIVE.has(this.st.name);
	}

	// The one way to another state: the old one's timers and requests end
	// here, then the new one's entry runs.
	enter(name, arg) {
		const keep = name === 'open';   // open reads what connecting asked for
		this.st.leave(keep);
		const st = new State(name, this.env, keep ? this.st.ctl : new AbortController());
		this.st = st;
		ENTRY[name].call(this, st, arg);
	}

	// promise's outcome to ok or fail, only while st is still the state.
	when(st, promise, ok, fail = () => {}) {
		promise.then((v) => {
			if (st === this.st)
				ok(v);
		}, (e) => {
			if (st === this.st)
				fail(e);
		});
	}

	// ---- what the page asks ----

	// Start (fresh: a new shell; else attach if it runs; listed: a list
	// request already on its way).
	start(fresh, listed = null) {
		if (fresh)
			this.lastId = null;
		this.enter('starting', { fresh, listed });
	}

	// The shell ended or was closed: d as terminal_closed says it.
	closed(d) {
		if (d.reason === 'restarted' && this.env.shared) {
			// A share is for one run of the shell: it ended with it.
			this.ui.status('closed', 'share ended');
			this.enter('ended', 'The shell was restarted by its owner: this share has ended.');
			return;
		}
		if (d.reason === 'restarted') {
			// Another tab replaced the shell under this id: follow it.
			this.lastId = null;
			this.ui.restarted();
			this.enter('connecting');
			return;
		}
		const [status, text] = endText(d);
		this.ui.status(d.reason === 'exit' ? 'exited' : 'closed', status);
		this.enter('ended', 'The shell ' + text + '.');
	}

	// The stream's share_ended {reason}: revoked or expired.
	shareEnded(d) {
		this.ui.status('closed', 'share ended');
		this.enter('ended', d && d.reason === 'expired' ? 'This share link has expired.'
		    : 'The owner stopped sharing this terminal.');
	}

	// The share is refused (403 share not valid): unknown, revoked,
	// expired, its terminal ended, or for another user.  Nothing will
	// change that by retrying.
	shareInvalid() {
		this.ui.status('closed', 'share not valid');
		this.enter('ended', 'This share link is not valid (any more): it was revoked, it expired, ' +
		    'its terminal ended, or it is for another user.');
	}

	// GET shared's answer as the terminal's {running, rows, cols}
	// (answered: the page's own, already on its way).
	askShared(st, ok, answered = null) {
		this.when(st, answered ?? this.env.getJson('shared', st.signal), ok, (e) => {
			if (e.status === 403)
				this.shareInvalid();
			else
				this.enter('waiting', {
					kind: e.status === undefined || transient(e.status, e.why) ? 'unreachable' : 'reconnecting',
					why: e.why || null,
				});
		});
	}

	// Ctrl+C was typed: skip a flood (above; stream.mjs says what one is).
	interrupted() {
		const st = this.st;
		if (st.name !== 'open' && st.name !== 'connecting')
			return;
		if (!(st.stream && st.stream.flooding()) && !this.ui.behind())
			return;
		st.after('skip', SKIP_AFTER_MS, () => {
			this.skips++;
			this.skipFrom = this.lastId;
			this.lastId = null;
			this.enter('connecting');
		});
	}

	// The tests' way to a link that died under the open stream.
	drop() {
		if (this.st.name === 'open' || this.st.name === 'connecting')
			this.lost('network');
	}

	// ---- inside ----

	begin(size) {
		this.startAttempt = 0;
		if (size !== null)
			this.ui.adopt(size.rows, size.cols);
		this.enter('connecting');
		this.ui.live();
	}

	postStart(st, fresh) {
		const size = this.ui.size();
		const body = { session_id: this.env.sid, rows: size.rows, cols: size.cols };
		this.when(st, this.env.post('start', body, START_TIMEOUT_MS).catch(() => null), (r) => {
			if (r !== null && r.status === 200) {
				this.ui.sizeSent(size);
				this.begin(null);
			} else if (r === null || transient(r.status, r.data?.error)) {
				this.enter('start-wait', { fresh, r });
			} else {
				this.ui.status('error', 'cannot start: ' + errorText(r), 'cannot start');
				this.enter('ended', 'The shell could not be started: ' + errorText(r) + '.');
			}
		});
	}

	// attach=screen: without a usable position (a fresh page, or one whose
	// position has left the backlog) the server sends the screen as it is,
	// not the raw backlog; with one it still resumes byte for byte.
	streamUrl() {
		let url = 'api/terminal/output?session_id=' + encodeURIComponent(this.env.sid) +
			'&heartbeat=event&attach=screen';
		if (this.lastId !== null)
			url += '&last_event_id=' + encodeURIComponent(this.lastId);
		return url;
	}

	// Something arrived (or the stream just opened): the link is alive.
	// The stream is read with fetch rather than EventSource, which hides
	// the heartbeat comments: a dead or half-open link would look like a
	// quiet shell forever.
	alive(st) {
		st.after('silence', this.env.limits.silenceMs, () => this.silent(st));
	}

	// Nothing for limits.silenceMs: a dead or half-open link, a stopped
	// server, or one that holds the stream back (the headers came, the
	// body never did: a proxy that buffers).
	silent(st) {
		if (st.name === 'open' && st.stream.bytes === 0 && this.bytesEver === 0) {
			this.enter('probing');
			return;
		}
		this.ui.status('reconnecting', 'no data from the server: reconnecting…', 'reconnecting');
		this.enter('recovering');
	}

	lost(why, words = null) {
		this.enter('waiting', { kind: why === 'unreachable' ? 'unreachable' : 'reconnecting', why: words });
	}

	refused(st, res) {
		if (res.status === 403 && this.env.shared) {
			this.shareInvalid();
			return;
		}
		if (res.status === 404) {
			// Not running: closed elsewhere, reaped, or lingered past.
			this.enter('recovering');
			return;
		}
		if (res.status === 429)
			this.ui.notice('too many viewers on this terminal: retrying', 'stream');
		if (res.status === 500 && typeof res.json === 'function') {
			// A front's 500 for a ptyd.fcgi that died under the request
			// says so in its body: the server is away, not broken.
			this.when(st, res.json().catch(() => null), (d) => {
				const why = d && typeof d.error === 'string' ? d.error : null;
				this.lost(transient(res.status, why) ? 'unreachable' : 'network', why);
			});
			return;
		}
		this.lost(transient(res.status) ? 'unreachable' : 'network');
	}

}

// Each state's entry: what it shows, asks and arms.
const ENTRY = {
	idle() {},

	// A tab that finds its terminal running attaches without `start`
	// (start resizes a running terminal: only the active tab may); the
	// active one then sends its size.  Otherwise start it, at this tab's
	// size.
	starting(st, { fresh, listed }) {
		this.ui.status('connecting', 'starting…', 'starting');
		if (this.env.shared) {
			this.askShared(st, (s) => {
				if (s.running)
					this.begin(this.ui.isActive() ? null : { rows: s.rows, cols: s.cols });
				else
					this.closed({ reason: 'gone', exit_code: null });
			}, listed);
			return;
		}
		if (fresh) {
			this.postStart(st, fresh);
			return;
		}
		const list = (listed ?? this.env.getJson('list', st.signal)).catch(() => null);
		this.when(st, list, (l) => {
			const t = l && (l.terminals || []).find((x) => x.session_id === this.env.sid && x.running);
			if (t)
				this.begin(this.ui.isActive() ? null : { rows: t.rows, cols: t.cols });
			else
				this.postStart(st, fresh);
		});
	},

	'start-wait'(st, { fresh, r }) {
		const n = ++this.startAttempt;
		if (r)
			this.ui.status('reconnecting', 'server busy (' + errorText(r) + '), retrying (attempt ' + n + ')',
			    'busy, retry ' + n);
		else
			this.ui.status('unreachable', 'server unreachable, retrying (attempt ' + n + ')', 'offline, retry ' + n);
		st.after('retry', retryDelay(r, n - 1), () => this.enter('starting', { fresh, listed: null }));
	},

	connecting(st) {
		this.streams++;
		this.alive(st);
		const init = { cache: 'no-store', credentials: 'same-origin', signal: st.signal,
			headers: { Accept: 'text/event-stream' } };
		this.when(st, this.env.fetch(this.streamUrl(), init), (res) => {
			if (res.status === 200)
				this.enter('open', res);
			else
				this.refused(st, res);
		}, () => this.lost('network'));
	},

	open(st, res) {
		st.stream = new Stream(this, st, res.body);
		this.ui.status('connected', 'connected');
		this.ui.clearNotice('stream');
		st.stream.start();
	},

	waiting(st, { kind, why = null }) {
		const n = ++this.streamAttempt;
		if (kind === 'unreachable')
			this.ui.status('unreachable', (why || 'server unreachable') + ', retrying (attempt ' + n + ')',
			    'offline, retry ' + n);
		else
			this.ui.status('reconnecting', 'reconnecting… (attempt ' + n + ')', 'reconnecting (' + n + ')');
		st.after('retry', backoffMs(n - 1), () => this.enter('recovering'));
	},

	// Is the terminal still there?  Then resume; else say how it ended.
	recovering(st) {
		if (this.env.shared) {
			this.askShared(st, (s) => {
				if (!s.running) {
					this.closed({ reason: 'gone', exit_code: null });
					return;
				}
				if (!this.ui.isActive())
					this.ui.adopt(s.rows, s.cols);
				this.enter('connecting');
			});
			return;
		}
		this.when(st, this.env.getJson('list', st.signal), (list) => {
			const mine = (list.terminals || []).find((t) => t.session_id === this.env.sid);
			if (mine === undefined) {
				this.closed({ reason: 'gone', exit_code: null });
				return;
			}
			if (!this.ui.isActive() && mine.running)
				this.ui.adopt(mine.rows, mine.cols);
			this.enter('connecting');
		}, (e) => this.enter('waiting', {
			kind: e.status === undefined || transient(e.status, e.why) ? 'unreachable' : 'reconnecting',
			why: e.why || null,
		}));
	},

	// Silence on a stream that never carried a byte: if the server
	// answers otherwise, something between holds the stream back.
	probing(st) {
		this.when(st, this.env.getJson(this.env.shared ? 'shared' : 'list', st.signal), () => this.enter('buffered'),
		    () => this.enter('waiting', { kind: 'unreachable' }));
	},

	buffered(st) {
		this.ui.status('buffered', 'this server buffers the stream: see docs/deploy.md, section Buffering',
		    'buffered: see docs/deploy.md');
		st.after('retry', RETRY_MAX_MS, () => this.enter('recovering'));
	},

	ended(st, text) {
		this.ui.ended(text);
	},
};
