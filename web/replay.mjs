// replay.mjs -- a recording played into a screen: its clock, pause and
// play, speed, skipping idle stretches, seeking, and feeding the screen in
// chunks so the page stays responsive.  Pure: the screen (a sink) and the
// timers are given, so node:test drives it with stand-ins.
//
// Owns: the play position (Clock), which events the screen has been given
// (index), the one queue of feeding work (a seek, a tick), the timer of
// the next event.  Does not own: the file's format (cast.mjs), the screen
// (view.mjs through the sink), the controls (player.mjs).
//
// The screen is a terminal emulator fed in order: what it shows at time p
// is the header's size and every event due by p, from the start.  Playing
// forward feeds the events as they fall due; a seek forward feeds those
// between; a seek back resets the screen and feeds from the start.  A feed
// gives the screen at most CHUNK_CHARS of output at a time and waits until
// it has parsed it (the screen's promise), so a long recording never
// freezes the page and a resize never overtakes output before it.  Each
// seek bumps a generation: feeding work of an older one stops at its next
// chunk, and the newest seek wins.

import { dueAt, mapPosition, timeline } from './cast.mjs';

// Skipping idle: a pause between two events longer than this is cut to it.
export const IDLE_DEFAULT = 2;
export const SPEEDS = [0.5, 1, 2, 4];
export const CHUNK_CHARS = 64 * 1024;

// Play time in seconds on a timeline, from the real clock now() in ms.
export class Clock {
	constructor(now) {
		this.now = now;
		this.base = 0;           // the time when stopped, or when started
		this.at = null;          // now() when started; null: stopped
		this.speed = 1;
	}

	get running() {
		return this.at !== null;
	}

	get time() {
		return this.at === null ? this.base : this.base + (this.now() - this.at) * this.speed / 1000;
	}

	start() {
		if (this.at === null)
			this.at = this.now();
	}

	stop() {
		this.base = this.time;
		this.at = null;
	}

	set(t) {
		this.base = t;
		if (this.at !== null)
			this.at = this.now();
	}

	setSpeed(s) {
		const t = this.time;
		this.speed = s;
		this.set(t);
	}

	// Real ms until the clock reads t (0 if it has; Infinity while stopped).
	until(t) {
		if (this.at === null)
			return Infinity;
		return Math.max(0, (t - this.time) * 1000 / this.speed);
	}
}

// The next step of feeding events[from..to): {end, text} (the output of
// consecutive events joined up to max characters; input and markers are
// passed over), or {end, size} for a resize.
export function nextStep(events, from, to, max = CHUNK_CHARS) {
	let text = '';
	let k = from;
	for (; k < to; k++) {
		const e = events[k];
		if (e.code === 'r') {
			if (text !== '')
				break;
			return { end: k + 1, size: e.size };
		}
		if (e.code === 'o') {
			if (text !== '' && text.length + e.data.length > max)
				break;
			text += e.data;
		}
	}
	return { end: k, text };
}

export class Replay {
	// cast: parseCast's answer.  env: {now(), setTimeout, clearTimeout,
	// sink: {reset() and write(text), each a promise resolved once the
	// screen has parsed it; resize(cols, rows)}, changed() (the state
	// changed: for the controls), failed(error)}.
	constructor(cast, env) {
		this.env = env;
		this.sink = env.sink;
		this.cols = cast.header.width;
		this.rows = cast.header.height;
		this.events = cast.events;
		this.skipIdle = false;
		this.times = timeline(this.events);
		this.clock = new Clock(env.now);
		this.index = 0;          // events given to the screen
		this.gen = 0;
		this.timer = null;
		this.ended = false;
		this.work = Promise.resolve();
		this.queue(() => this.rewind(this.gen));
	}

	get duration() {
		return this.times.length === 0 ? 0 : this.times[this.times.length - 1];
	}

	get position() {
		return Math.min(this.clock.time, this.duration);
	}

	get playing() {
		return this.clock.running;
	}

	get speed() {
		return this.clock.speed;
	}

	// Resolves when the work queued so far is done (for the tests and
	// for a caller that must wait for the screen).
	settled() {
		return this.work;
	}

	queue(fn) {
		this.work = this.work.then(fn).catch((e) => {
			if (this.env.failed)
				this.env.failed(e);
		});
		return this.work;
	}

	changed() {
		if (this.env.changed)
			this.env.changed();
	}

	play() {
		if (this.playing)
			return;
		if (this.ended || this.position >= this.duration) {
			this.ended = false;
			this.seek(0, true);
			return;
		}
		this.clock.start();
		this.schedule();
		this.changed();
	}

	pause() {
		this.clock.stop();
		this.cancel();
		this.changed();
	}

	toggle() {
		if (this.playing)
			this.pause();
		else
			this.play();
	}

	setSpeed(s) {
		if (!(s > 0))
			return;
		this.clock.setSpeed(s);
		this.schedule();
		this.changed();
	}

	// Pauses longer than IDLE_DEFAULT seconds cut to it, or kept.
	setSkipIdle(on) {
		if (on === this.skipIdle)
			return;
		const times = timeline(this.events, on ? IDLE_DEFAULT : Infinity);
		const p = mapPosition(this.times, times, this.position);
		this.skipIdle = on;
		this.times = times;
		this.clock.set(p);
		this.schedule();
		this.changed();
	}

	// Go to time p (seconds on the timeline); play after if play, else as
	// before.  Resolves once the screen shows p (or a newer seek took over).
	seek(p, play = this.playing) {
		const t = Math.max(0, Math.min(Number(p) || 0, this.duration));
		const g = ++this.gen;
		this.cancel();
		this.clock.stop();
		this.clock.set(t);
		this.ended = false;
		this.changed();
		return this.queue(async () => {
			if (g !== this.gen)
				return;
			const want = dueAt(this.times, t);
			if (want < this.index)
				await this.rewind(g);
			if (!(await this.feed(g, want)))
				return;
			if (play) {
				this.clock.start();
				this.schedule();
			}
			this.changed();
		});
	}

	// ---- inside ----

	cancel() {
		if (this.timer !== null)
			this.env.clearTimeout(this.timer);
		this.timer = null;
	}

	// The screen as at the start: reset, at the header's size.
	async rewind(g) {
		this.index = 0;
		await this.sink.reset();
		if (g === this.gen)
			this.sink.resize(this.cols, this.rows);
	}

	// Events up to want to the screen, a step at a time; false if a newer
	// seek took over.
	async feed(g, want) {
		while (this.index < want) {
			if (g !== this.gen)
				return false;
			const step = nextStep(this.events, this.index, want);
			this.index = step.end;
			if (step.size)
				this.sink.resize(step.size.cols, step.size.rows);
			else if (step.text !== '')
				await this.sink.write(step.text);
		}
		return g === this.gen;
	}

	// The timer for the next event due (or the end).
	schedule() {
		this.cancel();
		if (!this.playing)
			return;
		const next = this.index < this.times.length ? this.times[this.index] : this.duration;
		this.timer = this.env.setTimeout(() => {
			this.timer = null;
			this.tick();
		}, this.clock.until(next));
	}

	tick() {
		const g = this.gen;
		this.queue(async () => {
			if (g !== this.gen || !this.playing)
				return;
			const now = this.clock.time;
			if (!(await this.feed(g, dueAt(this.times, now))) || !this.playing)
				return;
			if (this.index >= this.events.length && this.clock.time >= this.duration) {
				this.clock.stop();
				this.clock.set(this.duration);
				this.ended = true;
				this.changed();
				return;
			}
			this.schedule();
		});
	}
}
