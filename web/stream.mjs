// stream.mjs -- one open output stream of the link (link.mjs, state
// `open`): its body read chunk by chunk, parsed (sse.mjs), each event
// handed on, with flow control and the end of the replay.
//
// Owns: the reader and the parser of one response, its byte and flood
// counts, whether what it carries is still replay, the pause while xterm
// is behind.  Does not own: its timers (the link's state `open` has them:
// silence, replay, skip; leaving the state ends them with the request) or
// any change of state (it asks the link: lost, closed).
//
// Replayed output: what a stream sends first (the backlog, or what was
// missed) has the shell's old queries in it; answering them now would type
// junk at the prompt.  The server marks where the replay ends: with
// heartbeat=event its first `heartbeat` follows the last byte that was
// already there when the stream began (a `screen` event is replay whole).
// Output before it counts as replayed, and no answer leaves this page
// while xterm parses it; live output after it is answered (by the active
// tab).  An unmarked replay ends after REPLAY_MAX_MS.

import { SseParser } from './sse.mjs';

const REPLAY_MAX_MS = 10000;
// A flood: this much read within FLOOD_MS (see Link.interrupted).
const FLOOD_BYTES = 128 * 1024;
const FLOOD_MS = 500;

export class Stream {
	// link: the Link; st: its state `open`, whose timers these are;
	// body: the response's ReadableStream.
	constructor(link, st, body) {
		this.link = link;
		this.ui = link.ui;
		this.now = link.env.now;
		this.st = st;
		this.reader = body.getReader();
		this.parser = new SseParser();
		this.bytes = 0;
		this.replaying = true;
		this.quietAt = this.now() + REPLAY_MAX_MS;
		this.floodAt = 0;
		this.floodBytes = 0;
	}

	start() {
		this.link.alive(this.st);
		this.st.after('replay', REPLAY_MAX_MS, () => this.endReplay());
		this.read();
	}

	read() {
		this.link.when(this.st, this.reader.read(), (r) => this.chunk(r), () => this.link.lost('network'));
	}

	chunk(r) {
		if (r.done) {
			// The server ended it (a stuck viewer cut off, nginx
			// reloading): resume at once.
			this.link.lost('ended');
			return;
		}
		this.link.alive(this.st);
		const n = r.value.length;
		this.bytes += n;
		this.link.bytesEver += n;
		const now = this.now();
		if (now - this.floodAt > FLOOD_MS) {
			this.floodAt = now;
			this.floodBytes = 0;
		}
		this.floodBytes += n;
		this.parser.push(r.value);
		this.drain();
	}

	flooding() {
		return this.now() - this.floodAt <= FLOOD_MS && this.floodBytes >= FLOOD_BYTES;
	}

	// What the parser holds, event by event; then read on.  xterm behind
	// (ui.full): read no more until it has parsed its way down, and the
	// rest waits with the server.
	drain() {
		for (let m = this.parser.next(); m !== null; m = this.parser.next()) {
			if (!this.message(m))
				return;
			if (this.ui.full()) {
				this.pause();
				return;
			}
		}
		this.read();
	}

	// The silence meanwhile is ours, not the link's, and the replay's
	// time does not run while the page takes none of it.
	pause() {
		const from = this.now();
		this.st.cancel('silence');
		this.st.cancel('replay');
		this.link.when(this.st, this.ui.drained(), () => {
			this.link.alive(this.st);
			if (this.replaying) {
				this.quietAt += this.now() - from;
				this.st.after('replay', Math.max(0, this.quietAt - this.now()), () => this.endReplay());
			}
			this.drain();
		});
	}

	endReplay() {
		this.replaying = false;
		this.st.cancel('replay');
	}

	// One event or comment of the stream; false if it moved the link on.
	message(m) {
		const link = this.link;
		if (m.comment !== undefined) {
			// `: heartbeat`: nothing more was queued.  (Other comments,
			// such as a CGI run's padding, say nothing.)
			if (m.comment.startsWith('heartbeat'))
				this.endReplay();
			return true;
		}
		let d;
		try {
			d = JSON.parse(m.data);
		} catch {
			return true;
		}
		// Events without an id of their own stand for no position (the
		// parser repeats the last id seen on them, as EventSource does):
		// they never move the position a resume starts from.
		switch (m.event) {
		case 'heartbeat':
			this.endReplay();
			return true;
		case 'watchers':
			if (this.ui.watchers && d !== null && typeof d === 'object')
				this.ui.watchers(d.watchers);
			return true;
		case 'resize':
			// The terminal's size from here on in the output (after
			// what came before it): the page decides what it sets.
			if (this.ui.resized && d !== null && Number.isInteger(d.rows) && Number.isInteger(d.cols))
				this.ui.resized(d.rows, d.cols);
			return true;
		case 'share_ended':
			link.shareEnded(d);
			return false;
		default:
			break;
		}
		if (m.id !== null && m.id !== '')
			link.lastId = m.id;
		switch (m.event) {
		case 'output':
			link.streamAttempt = 0;
			if (typeof d.text === 'string')
				this.ui.output(d.text, this.replaying);
			return true;
		case 'screen':
			this.screen(d, m.id);
			return true;
		case 'gap':
			this.ui.notice('history gap: ' + d.lost + ' bytes of output were lost while this page was away or behind');
			return true;
		case 'terminal_closed':
			link.closed(d);
			return false;
		case 'terminal_error':
			this.ui.notice('stream error: ' + d.error, 'stream');
			link.lost('error');
			return false;
		default:
			return true;
		}
	}

	// The screen as it is now, then live output (DESIGN 3).  The reset is
	// written too (RIS), so it comes after what xterm has not parsed yet of
	// the stream before, not ahead of it.
	screen(d, id) {
		const link = this.link;
		if (link.skipFrom !== null && id !== null) {
			this.ui.notice('skipped ' + Math.max(0, Number(id) - Number(link.skipFrom)) +
			    ' bytes of output after Ctrl+C', 'skip');
			link.skipFrom = null;
		}
		if (Number.isInteger(d.rows) && Number.isInteger(d.cols) && !this.ui.isActive())
			this.ui.adopt(d.rows, d.cols);
		this.ui.output('\x1bc' + (d.text || ''), true);
		this.endReplay();
	}
}
