// watchers.mjs -- who watches this terminal, as its owner's page shows
// it: an indicator in the bar (how many others watch) and a panel over
// the terminal that lists them (name or "anonymous link", view or
// control, since when), fed by the stream's `watchers` event and GET
// watchers (DESIGN 3).
//
// Owns: the words for a watcher (watcherRows, pure), the indicator, the
// panel and its keyboard (Escape closes it, the focus goes back), the
// refresh of its relative times.  Does not own: the event (stream.mjs
// hands it over) or the request (app.js).
//
// The panel floats over the terminal: opening it, or a watcher coming or
// going, never changes the terminal's size (which would resize the shell).

import { ago } from './dialogs.mjs';

const REFRESH_MS = 15000;

// The watchers list (the event's `watchers`) as rows for people, others
// first, the longest watching first: {who, role, since, own}.  own: one
// of the owner's own viewers (no share: this or another of the owner's
// tabs).  who: the user's name, or "anonymous link" for a share's viewer
// the server names no user for.
export function watcherRows(list, nowMs) {
	if (!Array.isArray(list))
		return [];
	const rows = [];
	for (const w of list) {
		if (w === null || typeof w !== 'object')
			continue;
		const own = w.share === null || w.share === undefined;
		const actor = typeof w.actor === 'string' ? w.actor : '';
		let who;
		if (own)
			who = 'you' + (actor !== '' ? ' (' + actor + ')' : '');
		else
			who = actor !== '' ? actor : 'anonymous link';
		if (!own)
			who += ' \u00b7 share ' + w.share;
		rows.push({
			who,
			role: w.role === 'control' ? 'control' : 'view',
			since: Number.isFinite(w.since) ? ago(w.since, nowMs) : '',
			sinceAt: Number.isFinite(w.since) ? w.since : 0,
			own,
		});
	}
	rows.sort((a, b) => (a.own - b.own) || (a.sinceAt - b.sinceAt));
	return rows;
}

// How many watch through shares (the indicator's number).
export function othersCount(list) {
	return Array.isArray(list) ? list.filter((w) => w && w.share !== null && w.share !== undefined).length : 0;
}

export class WatchersPanel {
	// el: {button (the indicator), count (its number), panel, rows
	// (the list's tbody), empty (the "no one" line)}.
	constructor(el) {
		this.el = el;
		this.list = null;
		this.timer = 0;
		el.button.addEventListener('click', () => this.toggle());
		el.panel.addEventListener('keydown', (e) => {
			if (e.key === 'Escape') {
				e.preventDefault();
				this.close();
				el.button.focus();
			}
		});
	}

	get open() {
		return !this.el.panel.hidden;
	}

	// A new list (the event's, or GET watchers's).
	show(list) {
		this.list = Array.isArray(list) ? list : [];
		const n = othersCount(this.list);
		const b = this.el.button;
		b.hidden = false;
		this.el.count.textContent = String(n);
		b.dataset.watched = n > 0 ? 'yes' : 'no';
		const words = n === 0 ? 'No one else is watching' : n === 1 ? '1 other is watching' : n + ' others are watching';
		b.title = words;
		b.setAttribute('aria-label', 'Watchers: ' + words);
		if (this.open)
			this.fill();
	}

	toggle() {
		if (this.open)
			this.close();
		else
			this.openPanel();
	}

	openPanel() {
		this.el.panel.hidden = false;
		this.el.button.setAttribute('aria-expanded', 'true');
		this.fill();
		this.el.panel.focus();
		this.timer = setInterval(() => this.fill(), REFRESH_MS);
	}

	close() {
		clearInterval(this.timer);
		this.el.panel.hidden = true;
		this.el.button.setAttribute('aria-expanded', 'false');
	}

	fill() {
		const rows = watcherRows(this.list, Date.now());
		const tbody = this.el.rows;
		tbody.textContent = '';
		for (const r of rows) {
			const tr = document.createElement('tr');
			if (r.own)
				tr.className = 'own';
			for (const v of [r.who, r.role, r.since ? r.since + ' ago' : '']) {
				const td = document.createElement('td');
				td.textContent = v;
				tr.appendChild(td);
			}
			tbody.appendChild(tr);
		}
		this.el.empty.hidden = rows.length > 0;
	}
}
