/*
 * vtfeed.h -- what libvterm is fed: output bytes, filtered so that faults
 * in libvterm 0.1.4's parser cannot be reached from a terminal's output.
 *
 * Owns: a small parser's state between two writes, the sequence it holds
 * back until it knows it is complete, and the last graphic character
 * seen.  libvterm is only ever given text, C0 controls, and escape and CSI
 * sequences already complete and well formed.  What 0.1.4 gets wrong, and
 * what is done about it here:
 *
 * - REP (CSI n b) repeats the last glyph in a loop that advances by that
 *   glyph's width, zero before anything was printed (a fresh or rebuilt
 *   emulator) or after a zero-width character: the loop never ends, and
 *   ptyd's one thread with it.  REP is expanded here into copies of the
 *   last character, bounded by the row: ncurses (xterm-256color's `rep`)
 *   sends it right after the character it repeats.
 * - A 17th CSI parameter is written past its array (a crash): parameters
 *   after the 16th are dropped, as terminals drop what overflows theirs.
 * - Its string collection (OSC, DCS, APC, PM, SOS) reads past the bytes
 *   it is given: strings are dropped whole (the redraw needs none).
 * - Malformed sequences (a byte of 0x80 or more, or DEL, inside one) put
 *   its parser in states the filter above cannot follow: such a sequence
 *   is dropped whole.
 *
 * Does not own the emulator (screen.c).
 */
#ifndef PTYD_VTFEED_H
#define PTYD_VTFEED_H

#include <stddef.h>
#include <stdint.h>

#include <vterm.h>

#define VTFEED_SEQ_MAX	128 /* a longer sequence is dropped whole */
#define VTFEED_ARGS_MAX 16  /* libvterm's CSI_ARGS_MAX: it has no check */

struct vtfeed {
	int	 state;		      /* VTFEED_* in vtfeed.c */
	uint8_t	 seq[VTFEED_SEQ_MAX]; /* the sequence held back */
	size_t	 seqlen;
	int	 rep;	   /* CSI: no private marker nor intermediate */
	int	 counting; /* CSI: still in the first parameter */
	unsigned count;	   /* CSI: the first parameter */
	unsigned nargs;	   /* CSI: parameters so far, this one included */
	uint8_t	 last[4];  /* the last graphic character's UTF-8 */
	size_t	 lastlen;
	uint64_t calls; /* into libvterm, ever */
	uint64_t tabs;	/* columns tab moves may walk, ever (screen.c) */
};

void vtfeed_reset(struct vtfeed *);
void vtfeed_write(struct vtfeed *, VTerm *, const uint8_t *, size_t);

#endif /* PTYD_VTFEED_H */
