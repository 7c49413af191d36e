/*
 * grid.h -- the cells of one screen buffer (screen.c keeps two: the normal
 * and the alternate screen), compact, with scrolling by moving row
 * pointers.
 *
 * Owns: the cells, the row order, erasing, moving, scrolling and resizing
 * them; the table of pens the cells point into.  Does not own: what goes
 * into them (screen.c, from libvterm's state layer) or the scrollback
 * (scrollback.c).
 *
 * libvterm's own screen layer keeps 36 bytes a cell and scrolls by copying
 * every row: a line of `seq` output then cost a copy of the whole screen
 * (2.6 MB/s fed).  Here a cell is 8 bytes (its pen an id into a table of
 * the screen's pens) and a scroll moves pointers.
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

/* A wide character's right half (no character is past U+10FFFF). */
#define GRID_RIGHT 0x1fffffu
#define GRID_CH	   0x1fffffu

/*
 * A cell, 8 bytes: a character (0: never written; GRID_RIGHT), one
 * combining mark, whether it is wide, and its pen: an id in the screen's
 * table of pens (struct pens), 21 bits cut in two.
 *   a: ch (21 bits) | wide << 21 | low 10 bits of the pen << 22
 *   b: combining mark (21 bits) | high 11 bits of the pen << 21
 * All zero is a blank cell of the default pen.
 */
struct gcell {
	uint32_t a, b;
};

static inline uint32_t
gcell_ch(const struct gcell *c)
{
	return (c->a & GRID_CH);
}

static inline uint32_t
gcell_comb(const struct gcell *c)
{
	return (c->b & GRID_CH);
}

static inline int
gcell_wide(const struct gcell *c)
{
	return ((c->a >> 21) & 1);
}

static inline uint32_t
gcell_pen(const struct gcell *c)
{
	return ((c->a >> 22) | (c->b >> 21) << 10);
}

static inline void
gcell_set_pen(struct gcell *c, uint32_t pen)
{
	c->a = (c->a & 0x3fffffu) | (pen & 0x3ffu) << 22;
	c->b = (c->b & GRID_CH) | (pen >> 10) << 21;
}

/* Characters past U+10FFFF are U+FFFD, as the redraw writes them. */
static inline struct gcell
gcell_make(uint32_t ch, uint32_t comb, int wide, uint32_t pen)
{
	struct gcell c;

	if (ch > 0x10ffff && ch != GRID_RIGHT)
		ch = 0xfffd;
	if (comb > 0x10ffff)
		comb = 0xfffd;
	c.a = ch | (uint32_t)(wide != 0) << 21;
	c.b = comb;
	gcell_set_pen(&c, pen);
	return (c);
}

/* A pen: attributes and colours, normalized (what SGR cannot tell apart is
 * zero) so that equal pens are equal bytes. */
struct gpen {
	VTermColor fg, bg;
	uint8_t	   attrs; /* GRID_* */
};

/* A screen's pens, each once: id 0 is the default pen. */
struct pens {
	struct gpen *p;
	uint32_t     n, cap;
	uint32_t    *hash; /* id + 1, or 0; hcap slots, twice cap */
	uint32_t     hcap;
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

void gpen_default(struct gpen *);
void pens_init(struct pens *);
void pens_free(struct pens *);
/*
 * The id of a pen, added if new.  A full table first drops the pens no cell
 * of the ng grids uses (nor the ids at keep[0..nkeep), UINT32_MAX: none),
 * renumbering those cells and ids.
 */
uint32_t pens_id(struct pens *, const struct gpen *, struct grid *, int ng,
    uint32_t *keep, int nkeep);
size_t	 pens_bytes(const struct pens *);

#endif /* PTYD_GRID_H */
