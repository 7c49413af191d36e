// player.mjs -- recordings on the page (DESIGN 2, "Recordings"): the
// list (GET recordings) and the player of one (`#play=ID`): its controls
// (play and pause, the position as a slider, speed, skipping idle) around
// replay.mjs, drawing through the same view (view.mjs) as live output.
//
// Owns: the recordings dialog's DOM (#recordings) and the player bar's
// (#player), the keyboard of the player (Space plays or pauses, the
// slider's arrows seek), the words for a recording (pure: fmtClock,
// fmtBytes, recordingRow).  Does not own: the file's format (cast.mjs),
// playing (replay.mjs), the terminal (view.mjs), the requests (api.mjs).

import { getJson, getText } from './api.mjs';
import { parseCast } from './cast.mjs';
import { Replay } from './replay.mjs';
import { ago } from './dialogs.mjs';
import { playLink } from './fragment.mjs';

const UI_TICK_MS = 250;

// Seconds as m:ss (h:mm:ss past an hour).
export function fmtClock(sec) {
	const s = Math.max(0, Math.floor(Number(sec) || 0));
	const h = Math.floor(s / 3600);
	const m = Math.floor((s % 3600) / 60);
	const ss = String(s % 60).padStart(2, '0');
	return h > 0 ? h + ':' + String(m).padStart(2, '0') + ':' + ss : m + ':' + ss;
}

export function fmtBytes(n) {
	if (!Number.isFinite(n) || n < 0)
		return '';
	if (n < 1024)
		return n + ' B';
	if (n < 1024 * 1024)
		return (n / 1024).toFixed(1) + ' KiB';
	if (n < 1024 * 1024 * 1024)
		return (n / 1024 / 1024).toFixed(1) + ' MiB';
	return (n / 1024 / 1024 / 1024).toFixed(1) + ' GiB';
}

// One recording of GET recordings in words: {id, terminal, started,
// length, size, state, playable}.
export function recordingRow(r, nowMs) {
	const end = Number.isFinite(r.ended_at) ? r.ended_at : nowMs / 1000;
	let state = String(r.state || '');
	if (r.state === 'cut' && r.cut_reason)
		state += ' (' + r.cut_reason + ')';
	return {
		id: r.id,
		terminal: String(r.session_id ?? '') + (r.part > 1 ? ' part ' + r.part : '') +
		    (r.owner ? ' \u00b7 ' + r.owner : ''),
		started: Number.isFinite(r.started_at) ? ago(r.started_at, nowMs) + ' ago' : '',
		length: Number.isFinite(r.started_at) ? fmtClock(end - r.started_at) : '',
		size: fmtBytes(r.bytes),
		state,
		playable: r.state !== 'removed',
	};
}

// The list of recordings, from the bar's Recordings button.
export class RecordingsDialog {
	// env: {$, term}.  Opened from the picker of terminals.
	constructor(env) {
		this.env = env;
		const { $ } = env;
		$('recordings-open').hidden = false;
		$('recordings-open').addEventListener('click', () => {
			$('picker').close();
			this.fill();
			$('recordings').showModal();
		});
		$('recordings').addEventListener('close', () => env.term.focus());
	}

	async fill() {
		const { $ } = this.env;
		const rows = $('recordings-rows');
		const empty = $('recordings-empty');
		let d;
		try {
			d = await getJson('recordings');
		} catch (e) {
			rows.textContent = '';
			empty.hidden = false;
			empty.textContent = e.status === 404 && !e.why ? 'This server keeps no recordings.'
			    : e.why ? 'Recordings cannot be listed: ' + e.why : 'The server did not answer.';
			return;
		}
		const list = Array.isArray(d.recordings) ? d.recordings : [];
		rows.textContent = '';
		empty.hidden = list.length > 0;
		empty.textContent = 'No recordings.';
		const now = Date.now();
		for (const rec of list) {
			const r = recordingRow(rec, now);
			const tr = document.createElement('tr');
			for (const v of [r.terminal, r.started, r.length, r.size, r.state]) {
				const td = document.createElement('td');
				td.textContent = v;
				tr.appendChild(td);
			}
			const acts = document.createElement('td');
			if (r.playable) {
				const a = document.createElement('a');
				a.className = 'btn';
				a.href = playLink(location.pathname, r.id);
				a.target = '_blank';
				a.rel = 'noopener';
				a.textContent = 'Play';
				a.setAttribute('aria-label', 'Play recording ' + r.id + ' in a new tab');
				acts.appendChild(a);
			}
			tr.appendChild(acts);
			rows.appendChild(tr);
		}
	}
}

// The player of one recording: the page opened at #play=ID.
export class Player {
	// env: {$, view (TermView), status (Status), id}.
	constructor(env) {
		this.env = env;
		this.replay = null;
		this.timer = 0;
		this.dragging = false;
	}

	async load() {
		const { $, view, status, id } = this.env;
		status.set('connecting', 'loading recording ' + id + '…', 'loading');
		let cast;
		try {
			cast = parseCast(await getText('recording?id=' + id));
		} catch (e) {
			const why = e.why || e.message;
			status.set('error', 'recording ' + id + ': ' + why, 'no recording');
			return false;
		}
		const r = new Replay(cast, {
			now: () => performance.now(),
			setTimeout: (fn, ms) => setTimeout(fn, ms),
			clearTimeout: (t) => clearTimeout(t),
			sink: {
				reset: () => view.feed('\x1bc'),
				write: (text) => view.feed(text),
				resize: (cols, rows) => view.setSize(cols, rows),
			},
			changed: () => this.update(),
			failed: (e) => status.set('error', 'player: ' + e.message, 'player error'),
		});
		this.replay = r;
		let words = 'recording ' + id;
		if (cast.cut !== null)
			words += ' (cut: ' + cast.cut + ')';
		else if (cast.partial)
			words += ' (still recording, or cut short)';
		status.set('connected', words, 'recording ' + id);
		$('player').hidden = false;
		this.controls();
		await r.settled();
		this.update();
		return true;
	}

	controls() {
		const { $ } = this.env;
		const r = this.replay;
		$('play-toggle').addEventListener('click', () => r.toggle());
		const seek = $('play-seek');
		seek.max = String(r.duration);
		seek.addEventListener('input', () => {
			this.dragging = true;
			$('play-time').textContent = fmtClock(Number(seek.value)) + ' / ' + fmtClock(r.duration);
			r.seek(Number(seek.value)).then(() => {
				this.dragging = false;
				this.update();
			});
		});
		$('play-speed').addEventListener('change', (e) => r.setSpeed(Number(e.target.value)));
		$('play-idle').addEventListener('change', (e) => {
			r.setSkipIdle(e.target.checked);
			seek.max = String(r.duration);
		});
		// Space plays or pauses, unless a control has the key.
		document.addEventListener('keydown', (e) => {
			if (e.key !== ' ' || e.ctrlKey || e.altKey || e.metaKey)
				return;
			const t = e.target;
			if (t && t.closest && t.closest('button, select, input, a, dialog'))
				return;
			e.preventDefault();
			r.toggle();
		});
	}

	update() {
		const { $ } = this.env;
		const r = this.replay;
		if (r === null)
			return;
		const b = $('play-toggle');
		b.textContent = r.playing ? '\u23f8' : '\u25b6';
		const what = r.playing ? 'Pause' : r.ended ? 'Play again' : 'Play';
		b.setAttribute('aria-label', what + ' (Space)');
		b.title = what + ' (Space)';
		$('player').dataset.state = r.playing ? 'playing' : r.ended ? 'ended' : 'paused';
		if (!this.dragging) {
			$('play-seek').value = String(r.position);
			$('play-time').textContent = fmtClock(r.position) + ' / ' + fmtClock(r.duration);
		}
		if (r.playing && this.timer === 0) {
			this.timer = setInterval(() => this.update(), UI_TICK_MS);
		} else if (!r.playing && this.timer !== 0) {
			clearInterval(this.timer);
			this.timer = 0;
		}
	}
}
