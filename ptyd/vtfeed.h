/*
 * vtfeed.h -- what libvterm is fed: output bytes, with REP (CSI n b)
 * expanded here instead of by libvterm.
 *
 * Owns: a small parser's state between two writes, enough to find REP,
 * and the last graphic character seen.  libvterm 0.1.4 repeats the
 * previous glyph in a loop that advances by that glyph's width, which is
 * zero before any character was printed (a fresh or rebuilt emulator) or
 * after a zero-width one: the loop never ends, and ptyd's one thread with
 * it.  ncurses emits REP (xterm-256color's `rep`) right after the character
 * it repeats, so expanding it into copies of that character, bounded by
 * the row, draws what the program meant.  libvterm 0.1.4 also writes past
 * its array of CSI parameters when a sequence has more than 16 (a crash
 * at the 17th): the parameters after the 16th are dropped here, as
 * terminals ignore what overflows their own array.  Does not own the emulator
 * (screen.c).
 */
#ifndef PTYD_VTFEED_H
#define PTYD_VTFEED_H

#include <stddef.h>
#include <stdint.h>

#include <vterm.h>

#define VTFEED_SEQ_MAX 128 /* a CSI longer than this is dropped whole */
#define VTFEED_ARGS_MAX 16 /* libvterm's CSI_ARGS_MAX: it has no check */

struct vtfeed {
	int	 state;	 /* VTFEED_* in vtfeed.c */
	uint8_t	 seq[VTFEED_SEQ_MAX]; /* ESC [ ... held back until its end */
	size_t	 seqlen;
	int	 rep;      /* no private marker nor intermediate so far */
	int	 counting; /* still in the first parameter */
	unsigned count;	   /* the first parameter */
	unsigned nargs;	   /* parameters so far, the current one included */
	uint8_t	 last[4]; /* the last graphic character's UTF-8 */
	size_t	 lastlen;
};

void vtfeed_reset(struct vtfeed *);
void vtfeed_write(struct vtfeed *, VTerm *, const uint8_t *, size_t);

#endif /* PTYD_VTFEED_H */
