// backoff.mjs -- when to try again: pure functions of an attempt's number
// and the server's answer, no DOM and no state, so node:test can load them.
//
// Owns: the retry delays of every request the page repeats (start, the
// stream, input, resize), which answers are worth repeating, and how a
// Retry-After header is read.  Does not own: the timers themselves (each
// is its owner's: the link's state, the input queue, the resize pump).

export const RETRY_MIN_MS = 250;
export const RETRY_MAX_MS = 5000;

// The delay before attempt number `attempt` (0 first) goes again:
// doubling from RETRY_MIN_MS, never past RETRY_MAX_MS.
export function backoffMs(attempt) {
	const n = Number.isInteger(attempt) && attempt > 0 ? Math.min(attempt, 5) : 0;
	return Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** n);
}

// What a front server answers, in the API's JSON, for a request the
// ptyd.fcgi it runs died under (killed, crashed, upgraded): 500 under
// lighttpd, Apache mod_fcgid and mod_cgid (lighttpd/ptyd-error.json,
// apache/*.conf), 503 elsewhere.  ptyd.fcgi never says these words itself.
export const FCGI_GONE = 'ptyd.fcgi is not running';

// The server may come back: ptyd restarting (503), nginx between workers
// (502/504), a limit (429), a front whose ptyd.fcgi died under the request
// (500 with FCGI_GONE as its error).  Everything else, ptyd.fcgi's own 500
// included, is an answer to respect.  error: the answer's JSON `error`, if
// any.
export function transient(status, error = null) {
	if (status === 500)
		return error === FCGI_GONE;
	return status === 429 || status === 502 || status === 503 || status === 504;
}

// A Retry-After header (seconds) in ms; 0 when absent or not a positive
// number (an HTTP date is not used by the API).
export function retryAfterMs(header) {
	if (header === null || header === undefined || header === '')
		return 0;
	const s = Number(header);
	return Number.isFinite(s) && s > 0 ? s * 1000 : 0;
}

// How long to wait before attempt `attempt` after answer r ({retryAfterMs}
// or null for no answer): the longer of the server's word and the backoff.
export function retryDelay(r, attempt) {
	return Math.max(r ? r.retryAfterMs : 0, backoffMs(attempt));
}
