// keys.mjs -- what the keyboard does: keys the page takes before xterm.js
// (copy, find, zoom), what xterm.js hands over (keys, and its answers to
// the terminal's queries, told apart), the key bar of phones and tablets.
//
// Owns: the page's shortcuts (pageKeyName, pure), the sticky Ctrl and Alt
// of the key bar and their effect on a key (withMods, pure), the key bar's
// sequences (keySeq, pure), the parser hooks that mark an answer, the
// counts of answers sent and dropped.  Does not own: sending (input.mjs),
// the clipboard (clipboard.mjs), which tab answers (viewer.mjs).

// A sticky Ctrl or Alt on data (one key): Ctrl makes @ to _ and letters
// their control character (? is DEL, space NUL); Alt puts ESC before it.
export function withMods(data, mods) {
	let out = data;
	if (mods.ctrl && data.length === 1) {
		const c = data.toUpperCase().charCodeAt(0);
		if (c >= 0x40 && c <= 0x5f)
			out = String.fromCharCode(c & 0x1f);
		else if (data === '?')
			out = '\x7f';
		else if (data === ' ')
			out = '\0';
	}
	if (mods.alt)
		out = '\x1b' + out;
	return out;
}

// A key bar button's sequence; app: the cursor keys' application mode.
export function keySeq(name, app) {
	const arrow = (c) => '\x1b' + (app ? 'O' : '[') + c;
	switch (name) {
	case 'esc': return '\x1b';
	case 'tab': return '\t';
	case 'up': return arrow('A');
	case 'down': return arrow('B');
	case 'right': return arrow('C');
	case 'left': return arrow('D');
	default: return '';
	}
}

// Which of the page's shortcuts a key event is (copy, paste, find,
// zoom-in, zoom-out, zoom-reset), or null: the shell's.  Ctrl+C copies
// only with a selection; Ctrl+V is left to the browser's paste.
export function pageKeyName(e, isMac, hasSelection) {
	const k = e.key.length === 1 ? e.key.toLowerCase() : e.key;
	const mod = isMac ? e.metaKey : e.ctrlKey;
	if (e.altKey)
		return null;
	if (isMac && e.metaKey && !e.ctrlKey) {
		if (k === 'c')
			return hasSelection ? 'copy' : null;
		if (k === 'v')
			return 'paste';
	}
	if (!e.ctrlKey && !mod)
		return null;
	if (e.ctrlKey && e.shiftKey) {
		if (k === 'c')
			return 'copy';
		if (k === 'v')
			return 'paste';
		if (k === 'f')
			return 'find';
	}
	if (e.ctrlKey && !e.shiftKey) {
		if (k === 'c' && hasSelection)
			return 'copy';
		if (k === 'v')
			return 'paste';
	}
	if (mod && (k === '=' || k === '+'))
		return 'zoom-in';
	if (mod && (k === '-' || k === '_'))
		return 'zoom-out';
	if (mod && k === '0')
		return 'zoom-reset';
	return null;
}

// The queries whose answers xterm.js sends through onData.
const ANSWERED_CSI = [{ final: 'c' }, { prefix: '>', final: 'c' }, { final: 'n' },
	{ prefix: '?', final: 'n' }, { intermediates: '$', final: 'p' },
	{ prefix: '?', intermediates: '$', final: 'p' }, { final: 't' },
	{ prefix: '?', final: 'h' }, { prefix: '>', final: 'q' }, { prefix: '?', final: 'u' }];
const ANSWERED_OSC = [4, 10, 11, 12, 17, 19];

export class Keys {
	// env: {term, view, keybar (element), isMac, input (the queue),
	// readOnly (no keys go anywhere: no key bar),
	// viewer, link, coarse (the pointer query), settings (values),
	// copySelection(), openFind(), zoom(delta), layoutChanged()}.
	constructor(env) {
		this.env = env;
		this.mods = { ctrl: false, alt: false };
		this.answering = false;
		this.repliesSent = 0;    // answers to the terminal's queries (for the tests)
		this.repliesDropped = 0;
		const term = env.term;
		// xterm.js hands over keys, pastes and its answers to the
		// terminal's queries alike (onData).  The answers are told apart
		// by parser hooks: each query's handler marks "answering" for the
		// synchronous rest of the parse (xterm's own handler answers
		// right after ours, which returns false to let it), and no user
		// input can come within that task.
		const mark = () => this.markAnswer();
		for (const id of ANSWERED_CSI)
			term.parser.registerCsiHandler(id, mark);
		term.parser.registerDcsHandler({ intermediates: '$', final: 'q' }, mark);
		for (const osc of ANSWERED_OSC)
			term.parser.registerOscHandler(osc, mark);
		term.onData((d) => this.data(d));
		term.onBinary((d) => this.data(d));
		term.attachCustomKeyEventHandler((e) => this.pageKey(e));
		this.bar();
	}

	markAnswer() {
		if (!this.answering) {
			this.answering = true;
			queueMicrotask(() => {
				this.answering = false;
			});
		}
		return false;
	}

	data(data) {
		const env = this.env;
		if (this.answering) {
			// Only the active tab answers, and never replayed output.
			if (env.viewer.active && env.view.replayWrites === 0) {
				this.repliesSent++;
				env.input.add(data);
			} else {
				this.repliesDropped++;
			}
			return;
		}
		if (!env.viewer.active)
			env.viewer.claim();
		const keys = this.modified(data);
		env.view.predictor.key(keys);
		env.input.add(keys);
		if (keys.includes('\x03'))
			env.link.interrupted();
	}

	// Keys the page takes before xterm.js: false means "not for the
	// shell".  Ctrl+V (Cmd+V) and Ctrl+Shift+V are left to the browser,
	// whose paste event xterm.js turns into a (bracketed) paste: never a
	// raw ^V.
	pageKey(e) {
		const env = this.env;
		const name = pageKeyName(e, env.isMac, env.term.hasSelection());
		if (e.type !== 'keydown')
			return !(e.ctrlKey || e.metaKey) || !name;
		switch (name) {
		case 'copy':
			e.preventDefault();
			env.copySelection();
			return false;
		case 'paste':
			return false;
		case 'find':
			e.preventDefault();
			env.openFind();
			return false;
		case 'zoom-in':
		case 'zoom-out':
		case 'zoom-reset':
			e.preventDefault();
			env.zoom(name === 'zoom-in' ? 1 : name === 'zoom-out' ? -1 : 0);
			return false;
		default:
			return true;
		}
	}

	setMod(name, on) {
		this.mods[name] = on;
		const b = this.env.keybar.querySelector('[data-mod="' + name + '"]');
		b.setAttribute('aria-pressed', String(on));
	}

	// A sticky Ctrl or Alt applies to the next key typed, then lets go.
	modified(data) {
		if (!this.mods.ctrl && !this.mods.alt)
			return data;
		const out = withMods(data, this.mods);
		this.setMod('ctrl', false);
		this.setMod('alt', false);
		return out;
	}

	showBar() {
		const k = this.env.settings.keybar;
		this.env.keybar.hidden = this.env.readOnly || !(k === 'on' || (k === 'auto' && this.env.coarse.matches));
		this.env.layoutChanged();
	}

	bar() {
		const env = this.env;
		this.showBar();
		env.coarse.addEventListener('change', () => this.showBar());
		// The bar's buttons never take the focus from the terminal (the
		// on-screen keyboard would close).
		env.keybar.addEventListener('pointerdown', (e) => {
			if (e.target.closest('button'))
				e.preventDefault();
		});
		env.keybar.addEventListener('click', (e) => {
			const b = e.target.closest('button');
			if (!b)
				return;
			env.viewer.claim();
			if (b.dataset.mod) {
				this.setMod(b.dataset.mod, !this.mods[b.dataset.mod]);
			} else if (b.dataset.key) {
				const seq = keySeq(b.dataset.key, env.term.modes.applicationCursorKeysMode);
				env.input.add(this.mods.alt ? '\x1b' + seq : seq);
				this.setMod('ctrl', false);
				this.setMod('alt', false);
			} else if (b.dataset.text) {
				env.input.add(this.modified(b.dataset.text));
			}
			env.term.focus();
		});
	}
}
