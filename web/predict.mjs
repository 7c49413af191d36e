// predict.mjs -- predicted local echo, as mosh does it (issue 32): on a
// slow link, printable keys typed at a prompt show at once, underlined,
// until the shell's own echo confirms them.
//
// Owns: the predictions (a key, the cell it should land in, its epoch),
// when they are shown, how they are reconciled with what the terminal
// really holds, and the overlay that draws them.  Does not own: sending
// keys (input.mjs), the terminal's contents (xterm.js: a prediction is never
// written into it, only drawn over it, so a wrong one leaves no trace).
//
// The rules, mosh's:
// - Only printable characters are predicted, each in the cell after the
//   previous one, on one row.  Any other key (Enter, a control key, an
//   arrow, Backspace) starts a new epoch and drops what is still
//   predicted.
// - A prediction is shown only once some prediction of its epoch was
//   confirmed: the first key after Enter waits for its echo.  So what is
//   typed where the shell does not echo (a password prompt) is never
//   shown: nothing of its epoch is ever confirmed.
// - Confirmed: the cell holds the key.  Wrong: the cell holds something
//   else once the cursor has passed it, or no echo came in time; then
//   everything predicted goes, and prediction waits for the next epoch.
// - Never on the alternate screen (a full-screen program draws what it
//   likes), never in mode 'never'; in 'auto' only while the measured
//   round trip is over ON_MS (off again under OFF_MS).

const ON_MS = 30;
const OFF_MS = 20;
const EXPIRE_MIN_MS = 1000;     // no echo this long (or 3 round trips): wrong

// Printable: no C0, DEL or C1 control, no escape sequence.
export function printable(data) {
	return data.length > 0 && !/[\x00-\x1f\x7f-\x9f]/.test(data);
}

export class Predictor {
	constructor(term, host) {
		this.term = term;
		this.mode = 'auto';
		this.rtt = 0;            // smoothed round trip of input, ms
		this.slow = false;       // auto: the link is slow enough
		this.preds = [];         // {ch, row, col, epoch, at}
		this.epoch = 0;
		this.confirmed = -1;     // the newest epoch with a confirmed key
		this.shown = 0;          // predictions drawn now (for the tests)
		this.wrong = 0;          // predictions found wrong, ever
		this.layer = document.createElement('div');
		this.layer.className = 'predict';
		this.layer.setAttribute('aria-hidden', 'true');
		host.appendChild(this.layer);
	}

	// A round trip of an input request, in ms.
	observe(ms) {
		this.rtt = this.rtt === 0 ? ms : this.rtt * 0.8 + ms * 0.2;
		if (this.rtt > ON_MS)
			this.slow = true;
		else if (this.rtt < OFF_MS)
			this.slow = false;
	}

	active() {
		if (this.mode === 'never' || (this.mode === 'auto' && !this.slow))
			return false;
		return this.term.buffer.active.type === 'normal';
	}

	// Keys the user typed, before they are sent.
	key(data) {
		if (!this.active() || !printable(data)) {
			this.reset();
			return;
		}
		const b = this.term.buffer.active;
		for (const ch of data) {
			const last = this.preds[this.preds.length - 1];
			const row = last ? last.row : b.baseY + b.cursorY;
			const col = last ? last.col + 1 : b.cursorX;
			if (col >= this.term.cols) {
				// The row is full: what wraps is not predicted.
				this.reset();
				return;
			}
			this.preds.push({ ch, row, col, epoch: this.epoch, at: performance.now() });
		}
		this.render();
	}

	// Nothing predicted any more; the next keys are a new epoch.
	reset() {
		this.epoch++;
		if (this.preds.length > 0) {
			this.preds = [];
			this.render();
		}
	}

	// xterm parsed output: confirm, or find wrong, what it covers.
	check() {
		if (this.preds.length === 0)
			return;
		if (this.term.buffer.active.type !== 'normal') {
			this.reset();
			return;
		}
		const b = this.term.buffer.active;
		const cursor = [b.baseY + b.cursorY, b.cursorX];
		const expire = Math.max(EXPIRE_MIN_MS, 3 * this.rtt);
		const now = performance.now();
		while (this.preds.length > 0) {
			const p = this.preds[0];
			const line = b.getLine(p.row);
			const cell = line ? line.getCell(p.col) : null;
			const passed = cursor[0] > p.row || (cursor[0] === p.row && cursor[1] > p.col);
			// An erased cell reads '', a space written in it ' '.
			if (cell && (cell.getChars() || ' ') === p.ch && passed) {
				this.confirmed = Math.max(this.confirmed, p.epoch);
				this.preds.shift();
				continue;
			}
			if (passed || now - p.at > expire) {
				this.wrong++;
				this.preds = [];
				this.epoch++;
			}
			break;
		}
		this.render();
	}

	// The shown predictions, drawn over their cells.
	render() {
		const screen = this.term.element && this.term.element.querySelector('.xterm-screen');
		const shown = this.preds.filter((p) => p.epoch <= this.confirmed);
		this.shown = shown.length;
		this.layer.replaceChildren();
		if (!screen || shown.length === 0)
			return;
		const cw = screen.clientWidth / this.term.cols;
		const ch = screen.clientHeight / this.term.rows;
		const top0 = this.term.buffer.active.viewportY;
		const opt = this.term.options;
		this.layer.style.left = screen.offsetLeft + 'px';
		this.layer.style.top = screen.offsetTop + 'px';
		for (const p of shown) {
			const y = p.row - top0;
			if (y < 0 || y >= this.term.rows)
				continue;
			const el = document.createElement('span');
			el.textContent = p.ch;
			el.style.left = (p.col * cw) + 'px';
			el.style.top = (y * ch) + 'px';
			el.style.width = cw + 'px';
			el.style.height = ch + 'px';
			el.style.lineHeight = ch + 'px';
			el.style.fontFamily = opt.fontFamily;
			el.style.fontSize = opt.fontSize + 'px';
			el.style.color = (opt.theme && opt.theme.foreground) || '';
			el.style.background = (opt.theme && opt.theme.background) || '';
			this.layer.appendChild(el);
		}
	}
}
