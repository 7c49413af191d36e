// dialogs.mjs -- the page's panels: find, the settings dialog, the picker
// of terminals; and the bell.
//
// Owns: their DOM (index.html's #find, #settings, #picker), the picker's
// rows (ago, pure), the bell's flash and sound.  Does not own: the
// settings' rules (settings.mjs), the search (xterm.js's addon), the
// requests (api.mjs).

import { DEFAULTS } from './settings.mjs';
import { getJson, post, PROBE_TIMEOUT_MS } from './api.mjs';

const FIND_DECO = {
	matchBackground: '#7d5c00', activeMatchBackground: '#e3b341',
	matchOverviewRuler: '#e3b341', activeMatchColorOverviewRuler: '#ff7b72',
};

// How long ago a time (seconds since the epoch) was, in one short unit;
// '' for none.
export function ago(t, nowMs) {
	if (!Number.isFinite(t) || t <= 0)
		return '';
	const s = Math.max(0, Math.round(nowMs / 1000 - t));
	if (s < 60)
		return s + ' s';
	if (s < 3600)
		return Math.round(s / 60) + ' min';
	if (s < 86400)
		return Math.round(s / 3600) + ' h';
	return Math.round(s / 86400) + ' d';
}

// This page's address for another session id.
export function pageUrl(search, id) {
	const params = new URLSearchParams(search);
	params.set('session', id);
	return '?' + params.toString();
}

function button(text, label, fn) {
	const b = document.createElement('button');
	b.type = 'button';
	b.className = 'btn';
	b.textContent = text;
	b.setAttribute('aria-label', label);
	b.addEventListener('click', fn);
	return b;
}

export class Dialogs {
	// env: {$, term, search (the addon), host (#term-wrap), sid,
	// settings (Settings), newId(), layoutChanged()}.
	constructor(env) {
		this.env = env;
		this.audio = null;
		this.find();
		this.settingsDialog();
		this.picker();
		env.term.onBell(() => this.bell());
	}

	bell() {
		const { host, settings } = this.env;
		const bell = settings.values.bell;
		if (bell === 'none')
			return;
		host.classList.remove('bell');
		void host.offsetWidth;
		host.classList.add('bell');
		setTimeout(() => host.classList.remove('bell'), 300);
		if (bell !== 'sound')
			return;
		try {
			this.audio = this.audio || new AudioContext();
			const o = this.audio.createOscillator();
			const g = this.audio.createGain();
			g.gain.value = 0.05;
			o.frequency.value = 880;
			o.connect(g).connect(this.audio.destination);
			o.start();
			o.stop(this.audio.currentTime + 0.08);
		} catch {
			// no audio here
		}
	}

	// ---- find ----

	find() {
		const { $, search } = this.env;
		search.onDidChangeResults((r) => {
			$('find-count').textContent = r.resultCount === 0 ? 'no matches'
			    : (r.resultIndex + 1) + ' of ' + r.resultCount;
		});
		$('find-open').addEventListener('click', () => this.openFind());
		$('find-close').addEventListener('click', () => this.closeFind());
		$('find-next').addEventListener('click', () => this.findStep(true));
		$('find-prev').addEventListener('click', () => this.findStep(false));
		$('find-text').addEventListener('input', () => this.findStep(true));
		$('find-text').addEventListener('keydown', (e) => {
			if (e.key === 'Enter') {
				e.preventDefault();
				this.findStep(!e.shiftKey);
			} else if (e.key === 'Escape') {
				e.preventDefault();
				this.closeFind();
			}
		});
	}

	openFind() {
		const { $, term } = this.env;
		$('find').hidden = false;
		const sel = term.getSelection();
		if (sel && !sel.includes('\n'))
			$('find-text').value = sel;
		$('find-text').focus();
		$('find-text').select();
		this.env.layoutChanged();
	}

	closeFind() {
		const { $, term, search } = this.env;
		$('find').hidden = true;
		search.clearDecorations();
		term.focus();
		this.env.layoutChanged();
	}

	findStep(forward) {
		const { $, search } = this.env;
		const q = $('find-text').value;
		if (!q)
			return;
		const opts = { caseSensitive: $('find-case').checked, decorations: FIND_DECO };
		if (forward)
			search.findNext(q, opts);
		else
			search.findPrevious(q, opts);
	}

	// ---- settings ----

	settingsDialog() {
		const { $, settings, term } = this.env;
		const form = $('settings-form');
		$('settings-open').addEventListener('click', () => {
			for (const el of form.elements) {
				if (!el.name || !(el.name in DEFAULTS))
					continue;
				if (el.type === 'checkbox')
					el.checked = settings.values[el.name];
				else
					el.value = String(settings.values[el.name]);
			}
			$('settings').showModal();
		});
		form.addEventListener('change', (e) => {
			const el = e.target;
			if (el.name && el.name in DEFAULTS)
				settings.set(el.name, el.type === 'checkbox' ? el.checked : el.value);
		});
		$('settings').addEventListener('close', () => term.focus());
	}

	// ---- the picker of terminals ----

	picker() {
		const { $, term } = this.env;
		const open = () => {
			this.fillPicker();
			$('picker').showModal();
		};
		$('terminals').addEventListener('click', open);
		$('session').addEventListener('click', open);
		$('picker-new').addEventListener('click', () => {
			location.href = pageUrl(location.search, this.env.newId());
		});
		$('picker').addEventListener('close', () => term.focus());
	}

	async fillPicker() {
		const { $ } = this.env;
		const rows = $('picker-rows');
		let list;
		try {
			list = await getJson('list');
		} catch {
			rows.textContent = '';
			$('picker-empty').hidden = false;
			$('picker-empty').textContent = 'The server did not answer.';
			return;
		}
		const terms = (list.terminals || []).slice().sort((a, b) => (b.last_activity || 0) - (a.last_activity || 0));
		rows.textContent = '';
		$('picker-empty').hidden = terms.length > 0;
		$('picker-empty').textContent = 'No terminals.';
		for (const t of terms)
			rows.appendChild(this.row(t));
	}

	row(t) {
		const now = Date.now();
		const url = pageUrl(location.search, t.session_id);
		const tr = document.createElement('tr');
		const name = document.createElement('td');
		const a = document.createElement('a');
		a.href = url;
		a.textContent = t.session_id;
		if (t.session_id === this.env.sid)
			a.setAttribute('aria-current', 'page');
		name.appendChild(a);
		if (!t.running)
			name.append(' (ended' + (t.exit_code !== null && t.exit_code !== undefined ? ', exit ' + t.exit_code : '') + ')');
		tr.appendChild(name);
		for (const v of [ago(t.started_at, now), t.running ? ago(t.last_activity, now) : '', String(t.subscribers ?? 0)]) {
			const td = document.createElement('td');
			td.textContent = v;
			tr.appendChild(td);
		}
		const acts = document.createElement('td');
		acts.className = 'acts';
		acts.appendChild(button('Attach', 'Attach to ' + t.session_id, () => { location.href = url; }));
		acts.appendChild(button('New tab', 'Open ' + t.session_id + ' in a new tab', () => window.open(url, '_blank', 'noopener')));
		acts.appendChild(button('Close', 'Close ' + t.session_id, async () => {
			await post('close', { session_id: t.session_id }, PROBE_TIMEOUT_MS).catch(() => null);
			this.fillPicker();
		}));
		tr.appendChild(acts);
		return tr;
	}
}
