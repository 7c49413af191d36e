// api.mjs -- the HTTP API as the page calls it (DESIGN 2): requests with a
// deadline, their answers as plain objects, and the server's limits.
//
// Owns: the API's path (relative to the page, so it works under any
// sub-path), fetch with a deadline, the shape of an answer, the limits the
// server states (GET limits) and how they are read, and a share link's
// token (in memory only: every request of a page opened from the link
// carries it as the Ptyd-Share header, never in its URL).  Does not own:
// what to do with an answer (its caller), retrying (backoff.mjs and the
// caller).

import { retryAfterMs } from './backoff.mjs';

export const API = 'api/terminal/';
export const PROBE_TIMEOUT_MS = 3000;  // list, limits: a server that does not answer

// The share link's token this page was opened with, or null (DESIGN 2,
// "Shares").  Set once by app.js from the address's fragment; kept here
// only, never stored, logged or put in a URL.
let shareToken = null;

export function useShare(token) {
	shareToken = token;
}

export function sharing() {
	return shareToken !== null;
}

// headers (an object) with the share's header added, when there is one.
export function apiHeaders(headers = {}) {
	return shareToken === null ? headers : { ...headers, 'Ptyd-Share': shareToken };
}

// fetch with a deadline (and the caller's signal, if any): rejects
// (AbortError) when no answer came in time or the caller gave up.
// asText: the answer's text, else its JSON (null when it is not JSON).
async function fetchTimed(url, init, timeoutMs, signal, asText = false) {
	const ctl = new AbortController();
	const timer = timeoutMs ? setTimeout(() => ctl.abort(), timeoutMs) : 0;
	const give = () => ctl.abort();
	if (signal)
		signal.addEventListener('abort', give, { once: true });
	try {
		const res = await fetch(url, { ...init, headers: apiHeaders(init.headers), signal: ctl.signal });
		let data = null;
		try {
			data = asText ? await res.text() : await res.json();
		} catch {
			data = null;
		}
		return { res, data };
	} finally {
		clearTimeout(timer);
		if (signal)
			signal.removeEventListener('abort', give);
	}
}

// POST a JSON body; resolves to {status, data, retryAfterMs}.  Rejects
// only when no answer came at all (network error, timeout).
export async function post(endpoint, body, timeoutMs, signal = null) {
	const { res, data } = await fetchTimed(API + endpoint, {
		method: 'POST',
		headers: { 'Content-Type': 'application/json' },
		body: JSON.stringify(body),
		cache: 'no-store',
		credentials: 'same-origin',
	}, timeoutMs, signal);
	return { status: res.status, data, retryAfterMs: retryAfterMs(res.headers.get('Retry-After')) };
}

// GET a JSON answer; rejects unless it is 200 with JSON, the error with
// the status and the API's own words (a host that is down says which).
export async function getJson(endpoint, signal = null, timeoutMs = PROBE_TIMEOUT_MS) {
	const { res, data } = await fetchTimed(API + endpoint,
	    { cache: 'no-store', credentials: 'same-origin' }, timeoutMs, signal);
	if (!res.ok || data === null)
		throw Object.assign(new Error('HTTP ' + res.status), {
			status: res.status,
			why: data && typeof data.error === 'string' ? data.error : null,
		});
	return data;
}

// GET a text answer (a recording): resolves to its text, rejects as
// getJson does.
export async function getText(endpoint, signal = null, timeoutMs = 60000) {
	const { res, data } = await fetchTimed(API + endpoint,
	    { cache: 'no-store', credentials: 'same-origin' }, timeoutMs, signal, true);
	if (!res.ok || data === null) {
		let why = null;
		try {
			why = JSON.parse(data).error;
		} catch {
			why = null;
		}
		throw Object.assign(new Error('HTTP ' + res.status), { status: res.status, why });
	}
	return data;
}

// The words of a refusal: the API's error, else the status.
export function errorText(r) {
	if (r.data && typeof r.data.error === 'string')
		return r.data.error;
	return 'HTTP ' + r.status;
}

// The server's limits, from GET limits: the page keeps no copy of the API's
// numbers.  Until it answers (or on a server without it) a piece of input
// is as long as it is, and one answered 413 goes again in halves.
export function defaultLimits() {
	return {
		inputChars: Infinity,
		sidPattern: null,	// the session id's rule, a RegExp
		// A live stream carries something at least every heartbeat (5 s
		// by default): silence past this means a dead or half-open link.
		silenceMs: 8000,
	};
}

// Into limits, what the answer d of GET limits says; the rest stays.
export function applyLimits(limits, d) {
	if (d === null || typeof d !== 'object')
		return limits;
	if (Number.isInteger(d.input_chars) && d.input_chars > 0)
		limits.inputChars = d.input_chars;
	if (d.session_id && typeof d.session_id.pattern === 'string') {
		try {
			limits.sidPattern = new RegExp(d.session_id.pattern);
		} catch {
			limits.sidPattern = null;
		}
	}
	const hb = Number(d.heartbeat_ms ?? (d.heartbeat ? d.heartbeat * 1000 : NaN));
	if (Number.isFinite(hb) && hb > 0)
		limits.silenceMs = Math.max(3000, Math.round(hb * 1.5) + 500);
	return limits;
}

// The server's limits into limits, where it says them.
export async function loadLimits(limits) {
	try {
		applyLimits(limits, await getJson('limits'));
	} catch {
		// the defaults stay
	}
}
