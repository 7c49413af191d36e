// viewer.mjs -- which tab of the session is its active viewer, and the
// terminal's size.
//
// Every tab on this session shows the same shell, but only one is its
// active viewer: the one with focus, or the last that typed.  Only it sets
// the terminal's size and answers the terminal's queries (device
// attributes, cursor position, colours): with two tabs each query would be
// answered twice.  Tabs of this browser tell each other on a
// BroadcastChannel; focusing or typing in a tab takes the role back.
//
// Owns: the active flag, the channel, the size the active tab gave, the
// size last sent and the resize requests (one at a time, the newest size,
// debounced), the debounce and retry timers.  Does not own: the terminal
// (view.mjs) or whether a shell is there (the link: live()).

import { backoffMs, transient } from './backoff.mjs';
import { INPUT_TIMEOUT_MS } from './input.mjs';

const RESIZE_DEBOUNCE_MS = 120;

export class Viewer {
	// env: {term, fit (the fit addon), sid, viewerId, post, live(),
	// readOnly (a view-only share: never the active tab, never a resize:
	// the view takes the terminal's size, from GET shared, the screen and
	// the stream's resize events)}.
	constructor(env) {
		this.env = env;
		this.active = false;
		this.sharedSize = null;  // the size the active tab set, when known
		this.sentSize = null;    // the size the server has from us
		this.inflight = false;
		this.retry = 0;
		this.debounce = 0;
		this.retryTimer = 0;
		this.channel = 'BroadcastChannel' in window ? new BroadcastChannel('ptyd:' + env.sid) : null;
		if (this.channel !== null)
			this.channel.onmessage = (e) => this.heard(e.data);
		env.term.onResize(() => {
			this.announce();
			this.pump();
		});
	}

	claim() {
		if (this.env.readOnly)
			return;
		if (!this.active) {
			this.active = true;
			this.sentSize = null;   // another tab may have changed it
		}
		this.refit();
		this.announce();
	}

	announce() {
		const t = this.env.term;
		if (this.channel !== null && this.active)
			this.channel.postMessage({ t: 'active', v: this.env.viewerId, rows: t.rows, cols: t.cols });
	}

	heard(m) {
		if (!m || m.t !== 'active' || m.v === this.env.viewerId)
			return;
		this.active = false;
		this.adoptSize(m.rows, m.cols);
	}

	// An inactive tab shows the terminal at the size the active one gave
	// it, so lines wrap where the shell thinks they do (told by the
	// channel, the list, the screen or the stream's resize event).  The
	// active tab keeps its own: it is the one that sizes the terminal.
	adoptSize(rows, cols) {
		if (!Number.isInteger(rows) || !Number.isInteger(cols))
			return;
		this.sharedSize = { rows, cols };
		const t = this.env.term;
		if (!this.active && (t.rows !== rows || t.cols !== cols))
			t.resize(cols, rows);
	}

	// The active tab's terminal follows its box (window resizes, the bar
	// wrapping, the on-screen keyboard); other tabs keep the shared size.
	refit() {
		if (this.env.readOnly) {
			if (this.sharedSize !== null)
				this.adoptSize(this.sharedSize.rows, this.sharedSize.cols);
		} else if (this.active || this.sharedSize === null) {
			try {
				this.env.fit.fit();
			} catch {
				// not laid out yet
			}
		} else {
			this.adoptSize(this.sharedSize.rows, this.sharedSize.cols);
		}
		this.pump();
	}

	// The box changed: refit once it has settled.
	layoutChanged() {
		clearTimeout(this.debounce);
		this.debounce = setTimeout(() => this.refit(), RESIZE_DEBOUNCE_MS);
	}

	// The newest size to the server, one request at a time; only the
	// active tab sends.
	async pump() {
		const env = this.env;
		if (this.inflight || !env.live() || !this.active || env.readOnly)
			return;
		const want = { rows: env.term.rows, cols: env.term.cols };
		const s = this.sentSize;
		if (s !== null && s.rows === want.rows && s.cols === want.cols)
			return;
		clearTimeout(this.retryTimer);
		this.inflight = true;
		let r;
		try {
			r = await env.post('resize', { session_id: env.sid, rows: want.rows, cols: want.cols }, INPUT_TIMEOUT_MS);
		} catch {
			r = null;
		}
		this.inflight = false;
		if (r !== null && r.status === 200) {
			this.sentSize = want;
			this.retry = 0;
			this.pump();
		} else if (r === null || transient(r.status, r.data?.error)) {
			this.retryTimer = setTimeout(() => this.pump(), backoffMs(this.retry++));
		}
	}
}
