// view.mjs -- the terminal on screen: xterm.js with its addons, its look
// (theme, font, cursor, renderer) from the settings, and the output written
// into it with flow control.
//
// Owns: the Terminal and its addons (fit, unicode11, search, web links,
// WebGL while it works), the themes, the predictor's overlay (predict.mjs),
// the count of output written but not parsed yet and the readers waiting
// for it to drain, the replayed writes xterm.js has not parsed.  Does not
// own: the stream (link.mjs), the size (viewer.mjs), keys (keys.mjs).

import { Terminal } from './node_modules/@xterm/xterm/lib/xterm.mjs';
import { FitAddon } from './node_modules/@xterm/addon-fit/lib/addon-fit.mjs';
import { Unicode11Addon } from './node_modules/@xterm/addon-unicode11/lib/addon-unicode11.mjs';
import { SearchAddon } from './node_modules/@xterm/addon-search/lib/addon-search.mjs';
import { WebLinksAddon } from './node_modules/@xterm/addon-web-links/lib/addon-web-links.mjs';
import { WebglAddon } from './node_modules/@xterm/addon-webgl/lib/addon-webgl.mjs';

import { Predictor } from './predict.mjs';

// Flow control: output written to xterm but not parsed yet, in UTF-16
// units.  Past FLOW_HIGH the stream is not read until xterm is down to
// FLOW_LOW: the server then keeps the rest (and says `gap` if its backlog
// runs over), where xterm would hold it all and, past 50 MB, throw it away.
const FLOW_HIGH = 1 << 17;
const FLOW_LOW = 1 << 16;

// style.css's colours match these.
const DARK = {
	background: '#0e1116', foreground: '#d4d8de', cursor: '#f0c674', cursorAccent: '#0e1116',
	selectionBackground: 'rgba(88, 166, 255, 0.35)',
	black: '#545d68',        // readable on the background (was #1c2128)
	red: '#ff7b72', green: '#7ee787', yellow: '#e3b341', blue: '#79c0ff',
	magenta: '#d2a8ff', cyan: '#56d4dd', white: '#c9d1d9',
	brightBlack: '#8b949e', brightRed: '#ffa198', brightGreen: '#aff5b4', brightYellow: '#f8e3a1',
	brightBlue: '#a5d6ff', brightMagenta: '#e2c5ff', brightCyan: '#b3f0ff', brightWhite: '#f0f6fc',
};
const LIGHT = {
	background: '#ffffff', foreground: '#1f2328', cursor: '#0550ae', cursorAccent: '#ffffff',
	selectionBackground: 'rgba(84, 174, 255, 0.35)',
	black: '#24292f', red: '#cf222e', green: '#116329', yellow: '#7d4e00', blue: '#0969da',
	magenta: '#8250df', cyan: '#1b7c83', white: '#6e7781',
	brightBlack: '#57606a', brightRed: '#a40e26', brightGreen: '#1a7f37', brightYellow: '#633c01',
	brightBlue: '#218bff', brightMagenta: '#a475f9', brightCyan: '#3192aa', brightWhite: '#8c959f',
};

export class TermView {
	// host: the element to draw in; settings: the values (settings.mjs);
	// notice(text): to say the GPU went away.
	constructor(host, settings, notice) {
		this.host = host;
		this.settings = settings;
		this.notice = notice;
		this.reducedMotion = matchMedia('(prefers-reduced-motion: reduce)');
		this.lightScheme = matchMedia('(prefers-color-scheme: light)');
		this.coarsePointer = matchMedia('(pointer: coarse)');
		this.renderer = 'dom';
		this.webgl = null;
		this.unparsed = 0;       // UTF-16 units written to xterm, not parsed yet
		this.unparsedMax = 0;    // the most it has been (for the tests)
		this.replayWrites = 0;   // replayed chunks xterm has not parsed yet
		this.drainWaiters = [];  // resolvers of readers waiting for FLOW_LOW
		this.readOnly = false;   // never takes keys (setReadOnly)
		this.open();
	}

	open() {
		const s = this.settings;
		const term = new Terminal({
			theme: this.themeName() === 'light' ? LIGHT : DARK,
			fontFamily: s.fontFamily,
			fontSize: s.fontSize,
			lineHeight: 1.1,
			cursorBlink: this.blink(),
			cursorStyle: s.cursorStyle,
			scrollback: s.scrollback,
			minimumContrastRatio: 4.5,
			screenReaderMode: s.screenReaderMode,
			allowProposedApi: true,        // the unicode API (Unicode 11 widths)
			rightClickSelectsWord: false,
		});
		this.term = term;
		this.fit = new FitAddon();
		term.loadAddon(this.fit);
		term.loadAddon(new Unicode11Addon());
		term.unicode.activeVersion = '11';
		this.search = new SearchAddon();
		term.loadAddon(this.search);
		term.loadAddon(new WebLinksAddon());
		term.open(this.host);
		// Predicted local echo on a slow link (predict.mjs).
		this.predictor = new Predictor(term, this.host);
		this.predictor.mode = s.localEcho;
		term.onScroll(() => this.predictor.render());
		term.onResize(() => this.predictor.reset());
		this.useWebgl(this.wantWebgl());
		this.applyTheme();
		this.lightScheme.addEventListener('change', () => this.applyTheme());
		this.reducedMotion.addEventListener('change', () => this.apply('cursorBlink'));
	}

	blink() {
		return this.settings.cursorBlink && !this.reducedMotion.matches;
	}

	themeName() {
		if (this.settings.theme !== 'auto')
			return this.settings.theme;
		return this.lightScheme.matches ? 'light' : 'dark';
	}

	applyTheme() {
		const name = this.themeName();
		document.documentElement.dataset.theme = name;
		this.term.options.theme = name === 'light' ? LIGHT : DARK;
	}

	// auto: the GPU on desktops; the DOM on touch screens, where WebGL
	// contexts are scarce and are lost with the tab in the background.
	wantWebgl() {
		const r = this.settings.renderer;
		return r === 'webgl' || (r === 'auto' && !this.coarsePointer.matches);
	}

	// GPU rendering where WebGL2 works; the DOM renderer where it is
	// missing, refused, or its context is lost.
	useWebgl(on) {
		if (!on) {
			if (this.webgl !== null) {
				this.webgl.dispose();
				this.webgl = null;
			}
			this.renderer = 'dom';
			return;
		}
		if (this.webgl !== null)
			return;
		try {
			const probe = document.createElement('canvas').getContext('webgl2');
			if (!probe)
				throw new Error('no WebGL2');
			const addon = new WebglAddon();
			addon.onContextLoss(() => {
				this.notice('the GPU context was lost: drawing without WebGL');
				this.useWebgl(false);
			});
			this.term.loadAddon(addon);
			this.webgl = addon;
			this.renderer = 'webgl';
		} catch {
			this.renderer = 'dom';
		}
	}

	// A setting changed: what of it is the terminal's.
	apply(key) {
		const s = this.settings;
		switch (key) {
		case 'theme':
			this.applyTheme();
			break;
		case 'cursorBlink':
			this.term.options.cursorBlink = this.blink();
			break;
		case 'renderer':
			this.useWebgl(this.wantWebgl());
			break;
		case 'localEcho':
			this.predictor.mode = s.localEcho;
			this.predictor.reset();
			break;
		case 'fontSize':
		case 'fontFamily':
		case 'cursorStyle':
		case 'scrollback':
		case 'screenReaderMode':
			this.term.options[key] = s[key];
			break;
		default:
			break;
		}
	}

	// Output into xterm.js; `replayed` while the stream replays (its
	// queries are not answered while xterm parses it); parsed() once
	// xterm has parsed it.
	write(text, replayed, parsed = null) {
		if (replayed)
			this.replayWrites++;
		this.unparsed += text.length;
		this.unparsedMax = Math.max(this.unparsedMax, this.unparsed);
		this.term.write(text, () => {
			if (replayed)
				this.replayWrites--;
			this.unparsed -= text.length;
			this.predictor.check();
			if (parsed !== null)
				parsed();
			if (this.unparsed <= FLOW_LOW && this.drainWaiters.length > 0) {
				const waiting = this.drainWaiters;
				this.drainWaiters = [];
				waiting.forEach((resolve) => resolve());
			}
		});
	}

	// A recording's output (replay.mjs): written as replayed output is,
	// resolved once parsed, so the player feeds no faster than xterm.js
	// draws.
	feed(text) {
		return new Promise((resolve) => this.write(text, true, resolve));
	}

	// The terminal's size set from outside (a recording's, a share's):
	// nothing is fitted to the box.
	setSize(cols, rows) {
		if (this.term.cols !== cols || this.term.rows !== rows)
			this.term.resize(cols, rows);
	}

	// A view that never takes keys (a view-only share, the player).
	setReadOnly(on) {
		this.readOnly = on;
		this.term.options.disableStdin = on;
	}

	// xterm holds so much unparsed that the stream should wait.
	full() {
		return this.unparsed > FLOW_HIGH;
	}

	// xterm is behind by more than it parses at once.
	behind() {
		return this.unparsed > FLOW_LOW;
	}

	// Resolves once xterm has parsed its way down to FLOW_LOW.
	drained() {
		if (this.unparsed <= FLOW_LOW)
			return Promise.resolve();
		return new Promise((resolve) => this.drainWaiters.push(resolve));
	}

	// The shell is gone (stdin off, no cursor), or back (a new one).
	setEnded(over) {
		this.term.options.disableStdin = over || this.readOnly;
		this.term.options.cursorBlink = over ? false : this.blink();
		if (over)
			this.term.write('\x1b[?25l');   // hide the cursor: nothing reads keys now
	}
}
