/*
 * vtfeed.c -- what libvterm is fed (vtfeed.h).
 *
 * Text without ESC goes on in runs.  An escape or CSI sequence is held in
 * seq until its final byte, then given whole (or, for REP, expanded).  C0
 * controls inside a sequence go on at once (libvterm executes them there
 * too); ESC starts a new sequence; CAN and SUB cancel.  Strings are
 * swallowed up to BEL or ST.
 */
#include <string.h>

#include "vtfeed.h"

/* Copies of a repeated character given to libvterm in one call. */
#define VTFEED_REP_RUN 256

enum {
	VTFEED_GROUND,
	VTFEED_ESC,	/* ESC and intermediates, held in seq */
	VTFEED_CSI,	/* ESC [ and parameters, held in seq */
	VTFEED_DROP,	/* a malformed or too long CSI: dropped to its end */
	VTFEED_STR,	/* OSC, DCS, APC, PM, SOS: dropped to BEL or ST */
	VTFEED_STR_ESC, /* ESC inside a string: ST if '\' follows */
};

void
vtfeed_reset(struct vtfeed *f)
{
	memset(f, 0, sizeof(*f));
}

/* Everything libvterm is given goes through here: the calls are counted
 * (screen.c charges each, beyond its bytes). */
static void
vtfeed_put(struct vtfeed *f, VTerm *vt, const char *p, size_t n)
{
	f->calls++;
	vterm_input_write(vt, p, n);
}

/*
 * A tab, and CHT/CBT's count of them, walk the row to the next stop one
 * column at a time in libvterm, up to a row's width each (with no stops
 * set): counted, since bytes do not say it (a review found ESC[999I on a
 * 1000-column screen at 42 ns a unit counted).
 */
static void
vtfeed_tabs(struct vtfeed *f, VTerm *vt, unsigned n)
{
	int rows, cols;

	vterm_get_size(vt, &rows, &cols);
	if (n == 0)
		n = 1;
	/* Past a row's width of stops a move walks no further. */
	if (n > (unsigned)cols)
		n = (unsigned)cols;
	f->tabs += (uint64_t)n * (uint64_t)cols;
}

/* A byte of text: the last character's bytes. */
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
	uint8_t	 run[VTFEED_REP_RUN * sizeof(f->last)];
	unsigned n = f->count != 0 ? f->count : 1, i, j, k;
	int	 rows, cols;

	if (f->lastlen == 0)
		return;
	vterm_get_size(vt, &rows, &cols);
	vterm_state_get_cursorpos(vterm_obtain_state(vt), &pos);
	if (pos.col >= cols)
		return;
	if (n > (unsigned)(cols - pos.col))
		n = (unsigned)(cols - pos.col);
	/* In runs: a call into libvterm a copy cost 4 times the copy. */
	for (i = 0; i < n; i += k) {
		k = n - i < VTFEED_REP_RUN ? n - i : VTFEED_REP_RUN;
		for (j = 0; j < k; j++)
			memcpy(run + j * f->lastlen, f->last, f->lastlen);
		vtfeed_put(f, vt, (const char *)run, k * f->lastlen);
	}
}

static void
vtfeed_hold(struct vtfeed *f, uint8_t c)
{
	/* One byte is always left for the final. */
	if (f->seqlen + 1 < sizeof(f->seq))
		f->seq[f->seqlen++] = c;
	else
		f->state = VTFEED_DROP;
}

static void
vtfeed_csi_param(struct vtfeed *f, uint8_t c)
{
	if (c <= ';' && f->nargs > VTFEED_ARGS_MAX)
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
	vtfeed_hold(f, c);
}

/* The final byte of a held sequence. */
static void
vtfeed_final(struct vtfeed *f, VTerm *vt, uint8_t c)
{
	if (f->state == VTFEED_CSI && (c == 'I' || c == 'Z') && f->rep)
		vtfeed_tabs(f, vt, f->count);
	if (f->state == VTFEED_CSI && c == 'b' && f->rep)
		vtfeed_rep(f, vt);
	else if (f->state != VTFEED_DROP) {
		f->seq[f->seqlen++] = c; /* room: see vtfeed_hold */
		vtfeed_put(f, vt, (const char *)f->seq, f->seqlen);
	}
	f->state = VTFEED_GROUND;
}

static void
vtfeed_esc_start(struct vtfeed *f)
{
	f->state = VTFEED_ESC;
	f->seq[0] = 0x1b;
	f->seqlen = 1;
}

/* After ESC: '[' a CSI, a string's introducer, an intermediate, a final.
 * libvterm takes '[' and the introducers after intermediates too (a CSI
 * it would then parse unfiltered): the intermediates are dropped here. */
static void
vtfeed_esc(struct vtfeed *f, VTerm *vt, uint8_t c)
{
	if (c == '[' || strchr("]P_^X", c) != NULL)
		f->seqlen = 1;
	if (f->seqlen == 1 && c == '[') {
		f->state = VTFEED_CSI;
		f->seq[f->seqlen++] = c;
		f->rep = f->counting = 1;
		f->count = 0;
		f->nargs = 1;
	} else if (f->seqlen == 1 && strchr("]P_^X", c) != NULL)
		f->state = VTFEED_STR;
	else if (c >= 0x20 && c <= 0x2f)
		vtfeed_hold(f, c);
	else
		vtfeed_final(f, vt, c);
}

/* A byte inside a held sequence (ESC, CSI or a dropped CSI). */
static void
vtfeed_seq(struct vtfeed *f, VTerm *vt, uint8_t c)
{
	if (c >= 0x80 || c == 0x7f)
		f->state = VTFEED_DROP; /* malformed: dropped to its end */
	else if (c < 0x20)
		vtfeed_put(f, vt, (const char *)&c, 1);
	else if (f->state == VTFEED_ESC)
		vtfeed_esc(f, vt, c);
	else if (c < 0x40) {
		if (f->state == VTFEED_CSI)
			vtfeed_csi_param(f, c);
	} else
		vtfeed_final(f, vt, c);
}

/* A byte inside a string: BEL or ST end it; ESC then anything but '\'
 * ends it too and starts a new sequence, as xterm does. */
static void
vtfeed_str(struct vtfeed *f, VTerm *vt, uint8_t c)
{
	if (f->state == VTFEED_STR_ESC && c == '\\')
		f->state = VTFEED_GROUND; /* ST */
	else if (f->state == VTFEED_STR_ESC) {
		vtfeed_esc_start(f);
		vtfeed_seq(f, vt, c);
	} else if (c == 0x07)
		f->state = VTFEED_GROUND; /* BEL ends an OSC */
}

static void
vtfeed_byte(struct vtfeed *f, VTerm *vt, uint8_t c)
{
	if (c == 0x18 || c == 0x1a) { /* CAN, SUB: the sequence is off */
		f->state = VTFEED_GROUND;
		return;
	}
	if (c == 0x1b && f->state == VTFEED_STR)
		f->state = VTFEED_STR_ESC;
	else if (c == 0x1b)
		vtfeed_esc_start(f);
	else if (f->state == VTFEED_STR || f->state == VTFEED_STR_ESC)
		vtfeed_str(f, vt, c);
	else
		vtfeed_seq(f, vt, c);
}

void
vtfeed_write(struct vtfeed *f, VTerm *vt, const uint8_t *p, size_t n)
{
	size_t i = 0, run;

	while (i < n) {
		/* The common case: text without ESC, given in one write. */
		for (run = 0; f->state == VTFEED_GROUND && i + run < n &&
		     p[i + run] != 0x1b;
		     run++) {
			if (p[i + run] == '\t')
				vtfeed_tabs(f, vt, 1);
			vtfeed_graphic(f, p[i + run]);
		}
		if (run != 0) {
			vtfeed_put(f, vt, (const char *)p + i, run);
			i += run;
			continue;
		}
		vtfeed_byte(f, vt, p[i++]);
	}
}
