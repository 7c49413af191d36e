// clipboard.mjs -- copy and paste: the selection to the clipboard, and
// every paste, whichever way it comes, through one function (DESIGN 6).
//
// Owns: the paste listeners (the browser's paste event, a phone keyboard's
// clipboard suggestion, right click), the question before a paste of more
// than one line, copy on selection.  Does not own: what a paste may hold
// (paste.mjs), the bracketing (xterm.js), the settings (settings.mjs).

import { sanitizePaste, isMultiLine, pasteLines, hasControl } from './paste.mjs';

const PASTE_PREVIEW_LINES = 8;
const PASTE_PREVIEW_CHARS = 160;

// The first lines of a paste, cut to a width, for the question.
export function pastePreview(text) {
	const n = pasteLines(text);
	const lines = text.replace(/\r\n?/g, '\n').split('\n').slice(0, PASTE_PREVIEW_LINES)
	    .map((l) => (l.length > PASTE_PREVIEW_CHARS ? l.slice(0, PASTE_PREVIEW_CHARS) + '…' : l));
	return lines.join('\n') + (n > PASTE_PREVIEW_LINES ? '\n…' : '');
}

export class Clipboard {
	// env: {term, host (the terminal's element), $ (an element by id),
	// settings (values), notice(text), claim(), readOnly (a page that
	// never types: a view-only share, the player; copy only)}.
	constructor(env) {
		this.env = env;
		this.listen();
	}

	async copy(text) {
		if (!text)
			return false;
		try {
			await navigator.clipboard.writeText(text);
			return true;
		} catch {
			// Not a secure context, or refused: the old way.
			const ta = document.createElement('textarea');
			ta.value = text;
			ta.style.position = 'fixed';
			ta.style.opacity = '0';
			document.body.appendChild(ta);
			ta.select();
			let ok = false;
			try {
				ok = document.execCommand('copy');
			} catch {
				ok = false;
			}
			ta.remove();
			this.env.term.focus();
			return ok;
		}
	}

	copySelection() {
		const term = this.env.term;
		this.copy(term.getSelection());
		term.clearSelection();
	}

	// Every paste goes through here: the text loses its control
	// characters (paste.mjs: an ESC[201~ in it would end xterm.js's
	// bracket, and what followed ran as typed), and a paste of more than
	// one line waits for a yes when pasteConfirm is on, as a program may
	// run each line at its line break.  Then xterm.js brackets it.
	async paste(raw) {
		const env = this.env;
		if (env.readOnly) {
			env.notice('this page only watches: nothing can be pasted into the terminal');
			return;
		}
		const text = sanitizePaste(raw);
		if (text !== raw)
			env.notice('control characters were removed from the paste');
		if (!text)
			return;
		if (env.settings.pasteConfirm && isMultiLine(text) && !(await this.confirm(text))) {
			env.term.focus();
			return;
		}
		env.claim();
		env.term.paste(text);
		env.term.focus();
	}

	// The question before a paste of more than one line: its first lines
	// as text, Paste or Cancel (Escape).  Resolves true for Paste.
	confirm(text) {
		const $ = this.env.$;
		const dlg = $('paste-confirm');
		const n = pasteLines(text);
		$('paste-count').textContent = `The paste has ${n} line${n === 1 ? '' : 's'}` +
		    (n === 1 ? ' and ends with a line break' : '') +
		    ': a program that does not wait for Enter runs each one at its line break.';
		$('paste-preview').textContent = pastePreview(text);
		dlg.returnValue = '';
		return new Promise((resolve) => {
			dlg.addEventListener('close', () => resolve(dlg.returnValue === 'paste'), { once: true });
			dlg.showModal();
			// Enter pastes, as it would have without the question;
			// Escape or Cancel does not.  (No autofocus attribute:
			// Chromium refuses it in a frame of another origin, and
			// says so on the console.)
			$('paste-ok').focus();
		});
	}

	async fromClipboard() {
		try {
			const text = await navigator.clipboard.readText();
			if (text)
				await this.paste(text);
			return true;
		} catch {
			this.env.notice('the browser does not let this page read the clipboard: use Ctrl+V');
			return false;
		}
	}

	listen() {
		const { term, host, settings } = this.env;
		// The browser's paste, whichever way it comes (Ctrl+V, Cmd+V, the
		// browser's own context menu, a middle click on Linux, which
		// xterm.js turns into a paste into its textarea): taken in the
		// capture phase, before xterm.js's own listeners on the textarea
		// and the terminal see it.
		host.addEventListener('paste', (e) => {
			e.preventDefault();
			e.stopPropagation();
			this.paste(e.clipboardData ? e.clipboardData.getData('text/plain') : '');
		}, true);
		// A phone keyboard's clipboard suggestion arrives as typed text (an
		// input event), which xterm.js sends as it is: one that holds a
		// control character is a paste, and goes the same way.  Typing
		// never puts one there (Enter, Tab and Escape are keys xterm.js
		// takes before any input).
		host.addEventListener('input', (e) => {
			if (!e.data || e.isComposing || !hasControl(e.data))
				return;
			e.stopPropagation();
			if (e.target && 'value' in e.target)
				e.target.value = '';
			this.paste(e.data);
		}, true);
		term.onSelectionChange(() => {
			if (settings.copyOnSelect && term.hasSelection())
				this.copy(term.getSelection());
		});
		host.addEventListener('contextmenu', (e) => {
			if (!settings.rightClickPaste || !navigator.clipboard || !navigator.clipboard.readText)
				return;
			e.preventDefault();
			if (term.hasSelection())
				this.copySelection();
			else
				this.fromClipboard();
		});
	}
}
