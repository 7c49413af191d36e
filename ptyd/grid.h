/*
 * grid.h -- the cells of one screen buffer (screen.c keeps two: the normal
 * and the alternate screen), compact, with scrolling by moving row
 * pointers.
 *
 * Owns: the cells, the row order, erasing, moving, scrolling and resizing
 * them.  Does not own: what goes into them (screen.c, from libvterm's state
 * layer) or the scrollback (screen.c, as encoded lines).
 *
 * libvterm's own screen layer keeps 36 bytes a cell and scrolls by copying
 * every row: a line of `seq` output then cost a copy of the whole screen
 * (2.6 MB/s fed).  Here a cell is 20 bytes and a scroll moves pointers.
 */
#ifndef PTYD_GRID_H
#define PTYD_GRID_H

#include <stddef.h>
#include <stdint.h>

#include <vterm.h>

#define GRID_BOLD     0x01
#define GRID_ITALIC   0x02
#define GRID_BLINK    0x04
#define GRID_REVERSE  0x08
#define GRID_STRIKE   0x10
#define GRID_UL_SHIFT 5 /* 2 bits: VTERM_UNDERLINE_* */

/* A cell: a character and one combining mark (ch[0] 0: never written;
 * (uint32_t)-1: the right half of a wide character), its pen. */
struct gcell {
	uint32_t   ch[2];
	VTermColor fg, bg;
	uint8_t	   attrs; /* GRID_* */
	uint8_t	   width;
	uint8_t	   pad[2];
};

struct grid {
	unsigned int   rows, cols;
	struct gcell **row; /* rows pointers into cells, in screen order */
	struct gcell  *cells;
};

void grid_init(struct grid *, unsigned int rows, unsigned int cols,
    const struct gcell *blank);
void grid_free(struct grid *);
/* New size: the first `drop` rows go, the rest keep their place from the
 * top; new cells are blank. */
void grid_resize(struct grid *, unsigned int rows, unsigned int cols,
    unsigned int drop, const struct gcell *blank);
void grid_erase(struct grid *, VTermRect, const struct gcell *blank);
void grid_move(struct grid *, VTermRect dest, VTermRect src);
/* Rows [top, bottom) scroll up by n (down if n < 0); the rows that come in
 * are blank. */
void   grid_scroll(struct grid *, int top, int bottom, int n,
      const struct gcell *blank);
size_t grid_bytes(const struct grid *);

#endif /* PTYD_GRID_H */
