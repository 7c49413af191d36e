/*
 * screen_int.h -- what screen.c, screenscan.c and screenredraw.c share and
 * nothing else may call: struct screen, the scanner's state and the modes
 * it tracks.
 */
#ifndef PTYD_SCREEN_INT_H
#define PTYD_SCREEN_INT_H

#include <stddef.h>
#include <stdint.h>

#include <vterm.h>

#include "grid.h"
#include "screen.h"
#include "scrollback.h"
#include "vtfeed.h"

/* Modes tracked by the scanner. */
#define SCREEN_M_CKM	 0x01 /* ?1: application cursor keys */
#define SCREEN_M_KEYPAD	 0x02 /* ESC =: application keypad */
#define SCREEN_M_FOCUS	 0x04 /* ?1004 */
#define SCREEN_M_UTF8MS	 0x08 /* ?1005 */
#define SCREEN_M_SGRMS	 0x10 /* ?1006 */
#define SCREEN_M_URXVTMS 0x20 /* ?1015 */
#define SCREEN_M_PASTE	 0x40 /* ?2004: bracketed paste */

#define SCAN_NPARAM 16
/* Changes of a primed mode remembered (struct mode_hist). */
#define MODE_HIST 4

enum scan_state {
	SCAN_GROUND,
	SCAN_ESC,
	SCAN_CSI
};

struct scan {
	enum scan_state state;
	int		priv;  /* '?', '>', ... or 0 */
	int		inter; /* an intermediate byte, or 0 */
	int		np;    /* params seen (the current one included) */
	int		param[SCAN_NPARAM];
};

/*
 * A mode the emulator keeps that a rebuild would lose when the sequence
 * that set it has left the bytes it is fed (screen_sync): its value now
 * and its last changes, each with the ring position just after it, so its
 * value at any position since the oldest of them is known.
 */
struct mode_hist {
	uint64_t at[MODE_HIST];
	uint8_t	 val[MODE_HIST];
	uint8_t	 n;
	uint8_t	 cur;
};
struct screen {
	VTerm	    *vt;
	VTermState  *st;
	unsigned int rows, cols;
	size_t	     vt_bytes;	    /* libvterm's, live */
	struct grid  g[2];	    /* the normal screen, the alternate one */
	int	     alt;	    /* g[1] is up */
	struct pens  pens;	    /* the cells' pens */
	struct gpen  pen;	    /* what putglyph writes with */
	uint32_t     pen_ids[2]; /* its id, the blank's (PEN_NONE: unknown) */
	VTermPos     behind_cursor; /* where the alternate screen came up */

	struct scrollback sb;

	struct vtfeed vf; /* what libvterm is fed (REP expanded) */
	struct scan  sc;
	unsigned int modes;
	int	     mouse;	  /* 0, 9, 1000, 1002, 1003 */
	int	     top, bottom; /* DECSTBM, 1-based; 0: none */
	int	     cursor_visible;
	/* The alternate screen (1047, 1049) and the cursor's visibility
	 * (25) as the scanner saw them, for a rebuild to start from. */
	struct mode_hist alt_hist, cursor_hist;
	uint64_t	 scan_at;  /* position after the byte being scanned */
	uint64_t	 scan_end; /* position after the last byte scanned */

	uint64_t fed;	 /* the ring position the emulator stands for */
	int	 synced; /* fed is a ring position (screen_sync_step) */
	uint64_t work;	 /* units spent, ever (screen.h) */

	struct screen_shot *shot;
};

/* A growing buffer of encoded text: the redraw, a scrollback line
 * (screenredraw.c writes it). */
struct sbuf {
	uint8_t *p;
	size_t	 len;
	size_t	 cap;
};

/* screen.c: the emulator (libvterm, the normal screen and an empty
 * scrollback), started when first fed or redrawn. */
void screen_emu_start(struct screen *);
/* screenscan.c: a new emulator about to be fed from pos on takes the
 * modes the scanner saw there. */
void screen_scan_prime(struct screen *, uint64_t pos);
/* screenredraw.c: one line of cells as text (the scrollback's lines, the
 * redraw's rows); the cached shot let go, since the screen changed. */
void screen_encode_cells(const struct screen *, struct sbuf *,
    const struct gcell *, int);
void screen_changed(struct screen *);

#endif /* PTYD_SCREEN_INT_H */
