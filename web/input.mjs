// input.mjs -- keystrokes to the shell: the queue, its pieces, and their
// delivery exactly once (DESIGN 2).  No DOM: node:test loads it, with a
// stand-in for the request and the timers.
//
// Owns: the text waiting to go, the piece in flight or to retry and its
// input_id, the one retry timer, splitting the text into pieces of at most
// limits.inputChars code points (halved when the server says 413).  Does
// not own: where keys come from (keys.mjs, clipboard.mjs, xterm.js's
// answers), the request (api.mjs), when the shell is there to type into
// (the link: live()).
//
// Keystrokes go out in order, one request in flight at a time.  What is
// typed while a request travels waits in `pending` and leaves with the next
// request, so on a slow link each round trip carries everything typed
// during the previous one: order is kept and a fast typist is never held
// to one key per round trip.  A paste goes the same way, in pieces.
//
// Exactly once: every piece gets an input_id, this page's own id and a
// sequence number, and a piece that got no clear answer (a network error,
// a timeout, 503, 429, a front's 500 for a ptyd.fcgi that died under it)
// goes again with the same id and the same text, never merged with what
// was typed since.  ptyd drops a repeated id and answers
// it as done, so a piece that did reach the shell before its answer was
// lost is not typed twice.

import { errorText } from './api.mjs';
import { retryDelay, transient } from './backoff.mjs';

export const PENDING_MAX = 1 << 20;  // UTF-16 units queued at most (a huge paste)
export const INPUT_TIMEOUT_MS = 10000;  // an input request that hangs is retried

const highSurrogate = (c) => c >= 0xd800 && c <= 0xdbff;

// The longest prefix of s with at most n code points (a surrogate pair is
// one code point and is never split).
export function takeCodePoints(s, n) {
	let i = 0;
	for (let k = 0; k < n && i < s.length; k++)
		i += highSurrogate(s.charCodeAt(i)) && i + 1 < s.length ? 2 : 1;
	return s.slice(0, i);
}

// What of data fits after pending within max UTF-16 units, never half of
// a surrogate pair: {data, cut} (cut: something was left out).
export function fitQueue(pending, data, max = PENDING_MAX) {
	if (pending.length + data.length <= max)
		return { data, cut: false };
	let n = Math.max(0, max - pending.length);
	if (n > 0 && highSurrogate(data.charCodeAt(n - 1)))
		n--;
	return { data: data.slice(0, n), cut: true };
}

// The smaller piece size after a 413 for a piece of `text`: half its code
// points, at least 1, never more than before.
export function halvedLimit(limit, text) {
	return Math.max(1, Math.min(limit, Math.floor([...text].length / 2)));
}

export class InputQueue {
	// env: {post(endpoint, body, timeoutMs), sid, viewerId, limits,
	// readOnly (a view-only share: nothing is ever sent),
	// live() (is there a shell to type into), ended() (is it gone), notice(text, cause),
	// clearNotice(cause), rtt(ms), setTimeout, clearTimeout, now()}.
	constructor(env) {
		this.env = env;
		this.seq = 0;
		this.sending = null;     // {id, data}: the piece in flight or to retry
		this.pending = '';
		this.inflight = false;
		this.attempt = 0;
		this.timer = 0;
	}

	add(text) {
		if (this.env.readOnly || this.env.ended())
			return;
		const { data, cut } = fitQueue(this.pending, text);
		if (cut)
			this.env.notice('paste too large: only the first ' + PENDING_MAX + ' characters are sent');
		this.pending += data;
		this.pump();
	}

	// The shell is gone: nothing waits to be typed into it.
	clear() {
		this.env.clearTimeout(this.timer);
		this.pending = '';
		this.sending = null;
		this.attempt = 0;
	}

	async pump() {
		const env = this.env;
		if (this.inflight || !env.live())
			return;
		if (this.sending === null) {
			if (this.pending === '')
				return;
			const data = takeCodePoints(this.pending, env.limits.inputChars);
			this.pending = this.pending.slice(data.length);
			this.sending = { id: env.viewerId + ':' + ++this.seq, data };
		}
		this.env.clearTimeout(this.timer);
		this.inflight = true;
		let r;
		const t0 = env.now();
		try {
			r = await env.post('input', { session_id: env.sid, data: this.sending.data,
			    input_id: this.sending.id }, INPUT_TIMEOUT_MS);
			if (r.status === 200)
				env.rtt(env.now() - t0);
		} catch {
			// No answer (a dropped link, nginx or ptyd.fcgi restarting,
			// a timeout): the piece may or may not have reached ptyd.
			// Its id makes sending it again safe.
			r = null;
		}
		this.inflight = false;
		if (env.live() && this.sending !== null)
			this.answered(r);
	}

	answered(r) {
		const env = this.env;
		if (r !== null && r.status === 200) {
			this.sending = null;
			this.attempt = 0;
			env.clearNotice('input');
			this.pump();
			return;
		}
		if (r === null || transient(r.status, r.data?.error)) {
			// 429: the shell is not reading; 503: ptyd is away; 500
			// "ptyd.fcgi is not running": it died under this request,
			// which may or may not have reached ptyd.  The same piece
			// with the same id goes again, later.
			const wait = retryDelay(r, this.attempt++);
			if (r === null)
				env.notice('typing is not reaching the server: retrying (attempt ' + this.attempt + ')', 'input');
			this.timer = env.setTimeout(() => this.pump(), wait);
			return;
		}
		if (r.status === 413 && this.sending.data.length > 1) {
			// Nothing was written: send it again in smaller pieces.
			env.limits.inputChars = halvedLimit(env.limits.inputChars, this.sending.data);
			this.pending = this.sending.data + this.pending;
			this.sending = null;
			this.pump();
			return;
		}
		this.sending = null;
		if (r.status === 404) {
			// The shell is gone; the stream says how.
			this.pending = '';
			return;
		}
		env.notice('input not delivered: ' + errorText(r));
		this.pump();
	}
}
