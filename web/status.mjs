// status.mjs -- what the page tells the user in its bar: the link's status
// (a kind for the dot's colour, words in full and short) and notices that
// go after a while or with their cause.
//
// Owns: the status's kind and words, fitting them to the bar, the notice
// and its timer, the words for how a terminal ended (endText, pure).
// Does not own: when the status changes (the link, link.mjs) or the bar's
// layout (style.css).

const NOTICE_MS = 8000;

export class Status {
	// el: {status, text, notice}: the status, its text span, the notice.
	constructor(el) {
		this.el = el;
		this.kind = 'connecting';
		this.words = ['connecting…', 'connecting'];
		this.noticeTimer = 0;
		this.noticeCause = null;
		new ResizeObserver(() => this.fit()).observe(el.status);
	}

	// The status in full where it fits, else its short form; the whole
	// text is always the tooltip.
	set(kind, text, short = text) {
		this.kind = kind;
		this.words = [text, short];
		this.el.status.dataset.kind = kind;
		this.el.status.title = text;
		this.fit();
	}

	fit() {
		const t = this.el.text;
		t.textContent = this.words[0];
		if (t.scrollWidth > t.clientWidth + 1)
			t.textContent = this.words[1];
	}

	// A notice says what went wrong; one with a cause goes as soon as that
	// cause does (clearNotice), not only when its time is up.
	notice(text, cause = null) {
		const n = this.el.notice;
		n.textContent = text;
		n.title = text;
		n.classList.add('shown');
		this.noticeCause = cause;
		clearTimeout(this.noticeTimer);
		this.noticeTimer = setTimeout(() => this.hideNotice(), NOTICE_MS);
	}

	clearNotice(cause) {
		if (cause !== null && cause === this.noticeCause)
			this.hideNotice();
	}

	hideNotice() {
		clearTimeout(this.noticeTimer);
		this.noticeCause = null;
		this.el.notice.classList.remove('shown');
	}
}

// How a terminal ended (terminal_closed's {reason, exit_code}): [the
// status, the sentence after "The shell "].
export function endText(d) {
	switch (d.reason) {
	case 'exit':
		if (d.exit_code === null || d.exit_code === undefined)
			return ['ended', 'exited'];
		if (d.exit_code < 0)
			return ['ended (signal ' + -d.exit_code + ')', 'was killed by signal ' + -d.exit_code];
		return ['ended (exit ' + d.exit_code + ')', 'exited with code ' + d.exit_code];
	case 'closed':
		return ['closed', 'was closed'];
	case 'reaped':
		return ['closed (idle)', 'was closed after being idle'];
	case 'evicted':
		return ['closed (evicted)', 'was closed to make room for another terminal'];
	case 'shutdown':
		return ['closed (server shut down)', 'was closed: the server shut down'];
	case 'gone':
		return ['closed', 'was closed while this page was away'];
	default:
		return ['closed (' + d.reason + ')', 'was closed (' + d.reason + ')'];
	}
}
