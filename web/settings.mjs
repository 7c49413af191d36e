// settings.mjs -- the page's settings: their defaults, the values each may
// take, and where they come from.  The rules are pure functions (node:test
// loads them); only Settings touches storage, and only the storage and the
// address it is given.
//
// Owns: DEFAULTS and the checks of a value, which settings a link may set,
// the stored copy (localStorage under STORE_KEY).  Does not own: applying a
// setting to the terminal (view.mjs) or the dialog (dialogs.mjs).
//
// Defaults, then what this browser remembers, then the address
// (?fontSize=16&theme=light, as ttyd's client options): the address wins
// for this page and is not remembered; a change made here is.

export const DEFAULTS = Object.freeze({
	fontSize: 14,
	fontFamily: '"DejaVu Sans Mono", "JetBrains Mono", Menlo, Consolas, "Liberation Mono", monospace',
	theme: 'auto',
	cursorStyle: 'block',
	cursorBlink: true,
	scrollback: 10000,
	copyOnSelect: false,
	rightClickPaste: true,
	pasteConfirm: true,
	bell: 'visual',
	renderer: 'auto',
	warnOnLeave: 'program',
	keybar: 'auto',
	screenReaderMode: false,
	localEcho: 'auto',
});
const CHOICES = {
	theme: ['auto', 'dark', 'light'],
	cursorStyle: ['block', 'bar', 'underline'],
	bell: ['visual', 'sound', 'none'],
	renderer: ['auto', 'webgl', 'dom'],
	warnOnLeave: ['program', 'connected', 'never'],
	keybar: ['auto', 'on', 'off'],
	localEcho: ['auto', 'always', 'never'],
};
const RANGES = { fontSize: [6, 48], scrollback: [0, 100000] };
// What a link may not set: any page could send a visitor here with them
// (an attacker's review: ?pasteConfirm=off turned the paste question off).
export const NOT_FROM_ADDRESS = Object.freeze(['pasteConfirm', 'rightClickPaste', 'copyOnSelect']);
// A font family is a list of names: no CSS beyond it (xterm.js writes it
// into a <style> element, and the CSP allows inline styles).
const FONT_FAMILY = /^[\w\s,"'.-]{1,200}$/;
export const STORE_KEY = 'ptyd.settings';

// A setting's value from a string or a stored value; undefined if invalid
// (or not a setting).
export function settingValue(key, v) {
	if (!Object.hasOwn(DEFAULTS, key))
		return undefined;
	const def = DEFAULTS[key];
	if (typeof def === 'number') {
		if (v === null || v === '' || typeof v === 'boolean')
			return undefined;
		const n = Number(v);
		const [lo, hi] = RANGES[key];
		return Number.isFinite(n) ? Math.min(hi, Math.max(lo, Math.round(n))) : undefined;
	}
	if (typeof def === 'boolean') {
		if (v === true || v === 'true' || v === '1' || v === 'on' || v === '')
			return true;
		if (v === false || v === 'false' || v === '0' || v === 'off')
			return false;
		return undefined;
	}
	if (typeof v !== 'string')
		return undefined;
	if (CHOICES[key])
		return CHOICES[key].includes(v) ? v : undefined;
	if (key === 'fontFamily')
		return FONT_FAMILY.test(v) ? v : undefined;
	return v.length > 0 && v.length <= 200 ? v : undefined;
}

// The stored object from its JSON text: {} for anything but an object.
export function parseStored(text) {
	try {
		const o = JSON.parse(text || '{}');
		return o !== null && typeof o === 'object' && !Array.isArray(o) ? o : {};
	} catch {
		return {};
	}
}

// The settings in force: the defaults, then each valid stored value, then
// each valid one of params (URLSearchParams) a link may set.
export function resolveSettings(stored, params) {
	const s = { ...DEFAULTS };
	for (const key of Object.keys(DEFAULTS)) {
		const from = [stored[key]];
		if (!NOT_FROM_ADDRESS.includes(key))
			from.push(params.get(key));
		for (const v of from) {
			const ok = v === undefined || v === null ? undefined : settingValue(key, v);
			if (ok !== undefined)
				s[key] = ok;
		}
	}
	return s;
}

// The settings of this page: `values` is the object the page reads; set()
// remembers a change in storage (a Storage, or null) and tells onChange.
export class Settings {
	constructor(storage, params) {
		this.storage = storage;
		this.values = resolveSettings(this.stored(), params);
		this.onChange = () => {};
	}

	stored() {
		try {
			return parseStored(this.storage ? this.storage.getItem(STORE_KEY) : null);
		} catch {
			return {};       // storage refused (a sandboxed frame)
		}
	}

	// A new value for key, from the dialog or a key; false if invalid.
	set(key, value) {
		const v = settingValue(key, value);
		if (v === undefined)
			return false;
		this.values[key] = v;
		const stored = this.stored();
		stored[key] = v;
		try {
			this.storage.setItem(STORE_KEY, JSON.stringify(stored));
		} catch {
			// private mode, or full: the setting lasts for this page only
		}
		this.onChange(key);
		return true;
	}
}
