/*
 * vtfeed.c -- what libvterm is fed: REP expanded here (vtfeed.h).
 *
 * libvterm sees a CSI sequence only once its final byte is known, so a REP
 * never reaches it; C0 controls inside a sequence go on at once (libvterm
 * executes them there too); ESC, CAN and SUB end it.  A sequence longer
 * than VTFEED_SEQ_MAX is dropped whole, as terminals drop what overflows
 * their parameter space.
 */
#include <string.h>

#include "vtfeed.h"

enum {
	VTFEED_GROUND,
	VTFEED_ESC,  /* after ESC */
	VTFEED_CSI,  /* after ESC [, held back in seq */
	VTFEED_DROP, /* a CSI too long to hold: dropped to its end */
};

void
vtfeed_reset(struct vtfeed *f)
{
	memset(f, 0, sizeof(*f));
}

/* A graphic byte in the ground state: the last character's bytes. */
static void
vtfeed_graphic(struct vtfeed *f, uint8_t c)
{
	if (c < 0x20 || c == 0x7f)
		return;
	if (c < 0x80 || c >= 0xc0)
		f->lastlen = 0; /* ASCII or a lead byte starts a character */
	if (f->lastlen < sizeof(f->last))
		f->last[f->lastlen++] = c;
}

/* REP: copies of the last character, never past the row's end. */
static void
vtfeed_rep(struct vtfeed *f, VTerm *vt)
{
	VTermPos pos;
	unsigned n = f->count != 0 ? f->count : 1, i;
	int	 rows, cols;

	if (f->lastlen == 0)
		return;
	vterm_get_size(vt, &rows, &cols);
	vterm_state_get_cursorpos(vterm_obtain_state(vt), &pos);
	if (pos.col >= cols)
		return;
	if (n > (unsigned)(cols - pos.col))
		n = (unsigned)(cols - pos.col);
	for (i = 0; i < n; i++)
		vterm_input_write(vt, (const char *)f->last, f->lastlen);
}

static void
vtfeed_csi_start(struct vtfeed *f)
{
	f->state = VTFEED_CSI;
	f->seq[0] = 0x1b;
	f->seq[1] = '[';
	f->seqlen = 2;
	f->rep = f->counting = 1;
	f->count = 0;
	f->nargs = 1;
}

/* A parameter, leader or intermediate byte of a held CSI. */
static void
vtfeed_csi_param(struct vtfeed *f, uint8_t c)
{
	if (c >= '0' && c <= ';' && f->nargs > VTFEED_ARGS_MAX)
		return; /* a parameter past libvterm's array: dropped */
	if (c >= '0' && c <= '9') {
		if (f->counting && f->count < 100000)
			f->count = f->count * 10 + (unsigned)(c - '0');
	} else if (c == ';' || c == ':') {
		f->counting = 0;
		if (++f->nargs > VTFEED_ARGS_MAX)
			return;
	} else
		f->rep = 0; /* a private marker or an intermediate */
	if (f->seqlen + 1 < sizeof(f->seq)) /* and one for the final */
		f->seq[f->seqlen++] = c;
	else
		f->state = VTFEED_DROP;
}

/* One byte inside a CSI.  Returns 1 if it was taken, 0 if the sequence
 * ended without it (ESC, CAN, SUB: the caller handles the byte). */
static int
vtfeed_csi(struct vtfeed *f, VTerm *vt, uint8_t c)
{
	if (c == 0x1b || c == 0x18 || c == 0x1a) {
		if (f->state == VTFEED_CSI)
			vterm_input_write(vt, (const char *)f->seq, f->seqlen);
		f->state = VTFEED_GROUND;
		return (0);
	}
	if (c < 0x20 || c == 0x7f) {
		vterm_input_write(vt, (const char *)&c, 1);
		return (1);
	}
	if (c < 0x40) {
		if (f->state == VTFEED_CSI)
			vtfeed_csi_param(f, c);
		return (1);
	}
	if (f->state == VTFEED_CSI) {
		if (c == 'b' && f->rep)
			vtfeed_rep(f, vt);
		else {
			f->seq[f->seqlen++] = c; /* room: see csi_param */
			vterm_input_write(vt, (const char *)f->seq, f->seqlen);
		}
	}
	f->state = VTFEED_GROUND;
	return (1);
}

static void
vtfeed_byte(struct vtfeed *f, VTerm *vt, uint8_t c)
{
	switch (f->state) {
	case VTFEED_ESC:
		f->state = VTFEED_GROUND;
		if (c == '[') {
			vtfeed_csi_start(f);
			return;
		}
		vterm_input_write(vt, "\033", 1);
		break;
	case VTFEED_CSI:
	case VTFEED_DROP:
		if (vtfeed_csi(f, vt, c))
			return;
		break;
	}
	if (c == 0x1b) {
		f->state = VTFEED_ESC;
		return;
	}
	vtfeed_graphic(f, c);
	vterm_input_write(vt, (const char *)&c, 1);
}

void
vtfeed_write(struct vtfeed *f, VTerm *vt, const uint8_t *p, size_t n)
{
	size_t i = 0, run;

	while (i < n) {
		/* The common case: a run without ESC in the ground state goes
		 * to libvterm in one write. */
		for (run = 0; f->state == VTFEED_GROUND && i + run < n &&
		     p[i + run] != 0x1b;
		     run++)
			vtfeed_graphic(f, p[i + run]);
		if (run != 0) {
			vterm_input_write(vt, (const char *)p + i, run);
			i += run;
			continue;
		}
		vtfeed_byte(f, vt, p[i++]);
	}
}
