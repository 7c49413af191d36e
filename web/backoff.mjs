// backoff.mjs -- when to try again: pure functions of an attempt's number
// and the server's answer, no DOM and no state, so node:test can load them.
//
// Owns: the retry delays of every request the page repeats (start, the
// stream, input, resize), which statuses are worth repeating, and how a
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

// The server may come back: ptyd restarting (503), nginx between workers
// (502/504), a limit (429).  Everything else is an answer to respect.
export function transient(status) {
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
