// share.mjs -- the share dialog of the owner's page (DESIGN 2, "Shares"):
// create a link (view or control, an expiry, optionally the one user who
// may use it), show it once with a copy button, list the live shares and
// revoke them.
//
// Owns: the dialog's DOM (index.html's #share), the link shown (and
// cleared from the DOM when the dialog closes: the token is never kept,
// stored or logged), the words for an expiry (expiresIn, pure).  Does not
// own: the requests' form (api.mjs), the clipboard (clipboard.mjs), the
// link's form (fragment.mjs).

import { errorText, getJson, post, PROBE_TIMEOUT_MS } from './api.mjs';
import { shareLink } from './fragment.mjs';

// How long until t (seconds since the epoch), in one short unit.
export function expiresIn(t, nowMs) {
	if (!Number.isFinite(t))
		return '';
	const s = Math.round(t - nowMs / 1000);
	if (s <= 0)
		return 'now';
	if (s < 60)
		return 'in ' + s + ' s';
	if (s < 3600)
		return 'in ' + Math.round(s / 60) + ' min';
	if (s < 86400)
		return 'in ' + Math.round(s / 3600) + ' h';
	return 'in ' + Math.round(s / 86400) + ' d';
}

// A share's user in words: the one name that may use it, or anyone the
// web server lets in.
export function shareUser(u) {
	return typeof u === 'string' && u !== '' ? u : 'anyone (anonymous link)';
}

export class ShareDialog {
	// env: {$, sid, copy(text) (a promise of true when copied),
	// notice(text), term (to focus after), opening() (before it opens)}.
	constructor(env) {
		this.env = env;
		const { $ } = env;
		this.dlg = $('share');
		// Opened from the watchers' panel, which closes (env.opening).
		$('share-open').addEventListener('click', () => {
			env.opening();
			this.open();
		});
		$('share-create').addEventListener('click', () => this.create());
		$('share-copy').addEventListener('click', () => this.copy());
		this.dlg.addEventListener('close', () => {
			this.forget();
			env.term.focus();
		});
	}

	open() {
		const { $ } = this.env;
		this.forget();
		this.error('');
		$('share-user').value = '';
		this.fill();
		this.dlg.showModal();
		$('share-role').focus();
	}

	// The link leaves the DOM: nothing of the token stays on the page.
	forget() {
		const { $ } = this.env;
		$('share-link').value = '';
		$('share-result').hidden = true;
	}

	error(text) {
		const el = this.env.$('share-error');
		el.textContent = text;
		el.hidden = text === '';
	}

	async create() {
		const { $, sid } = this.env;
		const body = {
			session_id: sid,
			role: $('share-role').value === 'control' ? 'control' : 'view',
			expires_in: Number($('share-expiry').value),
		};
		const user = $('share-user').value.trim();
		if (user !== '')
			body.user = user;
		this.forget();
		this.error('');
		const b = $('share-create');
		b.disabled = true;
		let r;
		try {
			r = await post('share', body, PROBE_TIMEOUT_MS * 3);
		} catch {
			r = null;
		} finally {
			b.disabled = false;
		}
		if (r === null) {
			this.error('The server did not answer: no link was made.');
			return;
		}
		if (r.status !== 200 || !r.data || typeof r.data.token !== 'string') {
			this.error('No link was made: ' + errorText(r));
			return;
		}
		const link = $('share-link');
		link.value = shareLink(location.origin, location.pathname, r.data.token);
		$('share-result-text').textContent = 'Share ' + r.data.share_id + ' (' + r.data.role + ', ' +
		    shareUser(r.data.user) + ', expires ' + expiresIn(r.data.expires_at, Date.now()) +
		    '). Copy the link now: it is shown only this once.';
		$('share-result').hidden = false;
		link.focus();
		link.select();
		this.fill();
	}

	async copy() {
		const { $ } = this.env;
		const text = $('share-link').value;
		if (text === '')
			return;
		const ok = await this.env.copy(text);
		const b = $('share-copy');
		b.textContent = ok ? 'Copied' : 'Copy failed';
		setTimeout(() => {
			b.textContent = 'Copy';
		}, 1500);
		if (!ok)
			this.error('The browser refused the clipboard: select the link and copy it.');
	}

	async fill() {
		const { $, sid } = this.env;
		const rows = $('share-rows');
		const empty = $('share-empty');
		let d;
		try {
			d = await getJson('shares?session_id=' + encodeURIComponent(sid));
		} catch (e) {
			rows.textContent = '';
			empty.hidden = false;
			empty.textContent = e.why ? 'Shares cannot be listed: ' + e.why : 'The server did not answer.';
			return;
		}
		const list = Array.isArray(d.shares) ? d.shares : [];
		rows.textContent = '';
		empty.hidden = list.length > 0;
		empty.textContent = 'No live shares.';
		const now = Date.now();
		for (const s of list) {
			const tr = document.createElement('tr');
			for (const v of [String(s.share_id), s.role, shareUser(s.user), expiresIn(s.expires_at, now),
				String(s.viewers ?? 0)]) {
				const td = document.createElement('td');
				td.textContent = v;
				tr.appendChild(td);
			}
			const acts = document.createElement('td');
			const b = document.createElement('button');
			b.type = 'button';
			b.className = 'btn danger';
			b.textContent = 'Revoke';
			b.setAttribute('aria-label', 'Revoke share ' + s.share_id);
			b.addEventListener('click', () => this.revoke(s.share_id));
			acts.appendChild(b);
			tr.appendChild(acts);
			rows.appendChild(tr);
		}
	}

	async revoke(id) {
		let r;
		try {
			r = await post('unshare', { session_id: this.env.sid, share_id: id }, PROBE_TIMEOUT_MS * 3);
		} catch {
			r = null;
		}
		if (r === null || r.status !== 200)
			this.error('Share ' + id + ' was not revoked: ' + (r === null ? 'the server did not answer' : errorText(r)));
		else
			this.env.notice('share ' + id + (r.data && r.data.revoked ? ' revoked' : ' had already ended'));
		await this.fill();
		this.env.$('share-role').focus();
	}
}
