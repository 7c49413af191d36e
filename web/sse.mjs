// sse.mjs -- the event stream's text format (Server-Sent Events, as the
// HTML standard's EventSource reads it), parsed one piece at a time: pure,
// no DOM and no I/O, so node:test can load it.
//
// Owns: bytes to text (UTF-8, a character split between chunks held back),
// lines (CR, LF or CR LF, the pair split between chunks too), fields, and
// when an event is whole.  Does not own: reading the stream, or what an
// event means (link.mjs).
//
// The parser is pulled, not pushed: next() hands over one event or comment
// at a time, so its reader may stop between two events (flow control) and
// take the rest later without losing or reordering anything.

const LINE_END = /[\r\n]/g;

export class SseParser {
	constructor() {
		this.dec = new TextDecoder();
		this.buf = '';
		this.pos = 0;            // the start of the first line not taken
		this.skipLf = false;     // the last line ended in CR: a LF next is its
		this.event = '';
		this.data = [];
		this.id = null;          // the last id seen: it stays for later events
	}

	// A chunk of the stream: a Uint8Array of UTF-8, or a string.
	push(chunk) {
		const text = typeof chunk === 'string' ? chunk : this.dec.decode(chunk, { stream: true });
		this.buf = this.buf.slice(this.pos) + text;
		this.pos = 0;
	}

	// The next complete line, without its end; null if none is whole yet.
	line() {
		const b = this.buf;
		if (this.skipLf && this.pos < b.length) {
			if (b[this.pos] === '\n')
				this.pos++;
			this.skipLf = false;
		}
		LINE_END.lastIndex = this.pos;
		const m = LINE_END.exec(b);
		if (m === null)
			return null;
		const l = b.slice(this.pos, m.index);
		this.pos = m.index + 1;
		if (b[m.index] === '\r') {
			if (this.pos === b.length)
				this.skipLf = true;
			else if (b[this.pos] === '\n')
				this.pos++;
		}
		return l;
	}

	// The next thing the stream says: {event, id, data} for an event (id:
	// the last id seen so far, or null), {comment} for a comment line;
	// null when what has come so far holds no more.
	next() {
		for (let l = this.line(); l !== null; l = this.line()) {
			const out = this.take(l);
			if (out !== null)
				return out;
		}
		return null;
	}

	// One line: what it completes, or null.
	take(l) {
		if (l === '') {
			const whole = this.data.length > 0 || this.event !== '';
			const ev = { event: this.event || 'message', id: this.id, data: this.data.join('\n') };
			this.event = '';
			this.data = [];
			return whole ? ev : null;
		}
		if (l[0] === ':')
			return { comment: l.slice(1).trimStart() };
		const c = l.indexOf(':');
		const field = c === -1 ? l : l.slice(0, c);
		let value = c === -1 ? '' : l.slice(c + 1);
		if (value[0] === ' ')
			value = value.slice(1);
		if (field === 'event')
			this.event = value;
		else if (field === 'data')
			this.data.push(value);
		else if (field === 'id' && !value.includes('\0'))
			this.id = value;
		return null;
	}
}
