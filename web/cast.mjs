// cast.mjs -- a recording's file, asciicast v2 (DESIGN 3, "Recordings";
// the format of asciinema), read into a header and a list of events, and
// the timeline those events are played on.  Pure: no DOM, no I/O, so
// node:test loads it.
//
// Owns: the format's rules as the page reads them (the header line, one
// JSON array a line, `o` output, `r` resize as COLSxROWS, `i` input, `m`
// marker), what a damaged file still yields (a cut file's last line,
// half-written or its `m` line "cut: REASON"; a line that is not an event
// is counted and skipped), the times the player uses (skipping idle
// stretches) and the search of an event by time.  Does not own: playing
// (replay.mjs), the screen (view.mjs).

export const CAST_VERSION = 2;

// "COLSxROWS" as {cols, rows}, or null.
export function parseSize(s) {
	const m = typeof s === 'string' ? /^([1-9][0-9]{0,4})x([1-9][0-9]{0,4})$/.exec(s) : null;
	return m === null ? null : { cols: Number(m[1]), rows: Number(m[2]) };
}

function isSize(n) {
	return Number.isInteger(n) && n > 0 && n < 100000;
}

// The header line as an object; throws when the text is not asciicast v2.
function header(line) {
	let h;
	try {
		h = JSON.parse(line);
	} catch {
		h = null;
	}
	if (h === null || typeof h !== 'object' || Array.isArray(h))
		throw new Error('not an asciicast file');
	if (h.version !== CAST_VERSION)
		throw new Error('asciicast version ' + String(h.version) + ' is not 2');
	if (!isSize(h.width) || !isSize(h.height))
		throw new Error('the asciicast header has no width and height');
	return h;
}

// One event line as {t, code, data}, or null when it is not one.
function event(line) {
	let e;
	try {
		e = JSON.parse(line);
	} catch {
		return null;
	}
	if (!Array.isArray(e) || e.length < 3 || typeof e[0] !== 'number' || !Number.isFinite(e[0]) ||
	    e[0] < 0 || typeof e[1] !== 'string' || e[1] === '' || typeof e[2] !== 'string')
		return null;
	return { t: e[0], code: e[1], data: e[2] };
}

// The text of a recording as {header, events, cut, skipped, partial}:
// events in file order with times never going back (a time before the
// one before it is taken as that one), `r` events with their size as
// `size` (dropped when malformed); cut: the reason of a cut file's `m`
// line ("cut: REASON"), else null; skipped: lines that were not events;
// partial: the last line was not whole (a file read while being written,
// or cut in the middle of a line).  Throws when the header is not v2.
export function parseCast(text) {
	const lines = text.split('\n');
	let i = 0;
	while (i < lines.length && lines[i].trim() === '')
		i++;
	if (i === lines.length)
		throw new Error('the recording is empty');
	const h = header(lines[i++]);
	const out = { header: h, events: [], cut: null, skipped: 0, partial: false };
	let last = 0;
	for (; i < lines.length; i++) {
		const line = lines[i];
		if (line.trim() === '')
			continue;
		const e = event(line);
		if (e === null) {
			// The last line without its end is one being written or
			// cut short: not an error of the file's.
			if (i === lines.length - 1)
				out.partial = true;
			else
				out.skipped++;
			continue;
		}
		e.t = Math.max(e.t, last);
		last = e.t;
		if (e.code === 'r') {
			e.size = parseSize(e.data);
			if (e.size === null) {
				out.skipped++;
				continue;
			}
		} else if (e.code === 'm' && e.data.startsWith('cut: ')) {
			out.cut = e.data.slice(5);
		}
		out.events.push(e);
	}
	return out;
}

// The concatenated output of events (what the live stream's text was).
export function outputText(events) {
	let s = '';
	for (const e of events)
		if (e.code === 'o')
			s += e.data;
	return s;
}

// Each event's time on the player's timeline, in seconds: its own, or
// with every pause between two events cut to idleLimit (asciinema's
// idle time limit; Infinity keeps them).  The first event's own time
// counts as a pause from the start.
export function timeline(events, idleLimit = Infinity) {
	const times = new Float64Array(events.length);
	let prev = 0;
	let at = 0;
	for (let k = 0; k < events.length; k++) {
		at += Math.min(events[k].t - prev, idleLimit);
		prev = events[k].t;
		times[k] = at;
	}
	return times;
}

// How many events are due at time p of times (ascending): the index of
// the first one after p.
export function dueAt(times, p) {
	let lo = 0;
	let hi = times.length;
	while (lo < hi) {
		const mid = (lo + hi) >> 1;
		if (times[mid] <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

// A position p on timeline `from` at the same place on timeline `to`
// (skipping idle turned on or off): as far past the last event due as
// before, but never past the next event.
export function mapPosition(from, to, p) {
	const k = dueAt(from, p);
	const base = k === 0 ? 0 : to[k - 1];
	const since = p - (k === 0 ? 0 : from[k - 1]);
	const next = k < to.length ? to[k] : Infinity;
	return Math.max(base, Math.min(base + since, next - 1e-6));
}
