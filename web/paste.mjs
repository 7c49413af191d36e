// paste.mjs -- what of a paste may reach the shell (DESIGN 6): pure
// functions of the text, no DOM and no state, so node:test can load them.
//
// Owns: which characters a paste loses, and when a paste counts as more
// than one line.  Does not own: the paste events and the question before a
// paste (clipboard.mjs), or the bracketing (xterm.js wraps a paste in ESC[200~ and
// ESC[201~ when the program asked for it, and turns CR LF and LF into CR).
//
// Clipboard text is text, never control: an ESC[201~ inside a paste ended
// the bracket early, and what followed it (a ^U to clear the line, a
// command, a CR) ran as if typed.  So, as alacritty strips ESC from a
// bracketed paste and kitty refuses or replaces control codes, every C0
// control but tab, LF and CR, DEL, and every C1 control (U+0080-U+009F,
// CSI U+009B among them) is removed, bracketed or not.

// The controls a paste loses, and (without g) a test for any of them.
const UNSAFE = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/g;
// Any control character at all: tab, LF and CR too.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

// text without the controls a paste may not carry.
export function sanitizePaste(text) {
	return String(text).replace(UNSAFE, '');
}

// True if text holds a line break: pasted at a prompt that does not
// bracket pastes, every line but the last would run at once.
export function isMultiLine(text) {
	return /[\r\n]/.test(String(text));
}

// The number of lines text shows (a line break at the very end starts no
// new line).
export function pasteLines(text) {
	const t = String(text).replace(/\r\n/g, '\n').replace(/[\r\n]$/, '');
	return t.split(/[\r\n]/).length;
}

// True if text holds any control character, tab, LF and CR included:
// typing never sends one through the textarea's input event, a paste does.
export function hasControl(text) {
	return CONTROL.test(String(text));
}
