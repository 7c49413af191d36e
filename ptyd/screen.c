/*
 * screen.c -- a terminal emulator's view of one terminal, and the redraw
 * text a new viewer gets instead of the raw backlog (screen.h).
 *
 * Owns: the libvterm instance (its parser and state layer, allocated
 * through a counting allocator, so its memory per terminal is measured,
 * not guessed), the two screen buffers it draws into (grid.c: libvterm's
 * own screen layer copies the whole screen on every scroll), the pen,
 * encoding the rows that leave the screen for the scrollback (kept by
 * scrollback.c), a scanner for the modes libvterm keeps
 * to itself, and the cached framed redraw.  Does not own: the ring, the
 * pty, the viewers.
 *
 * libvterm answers terminal queries (DA, DSR) through its output callback:
 * those answers are dropped here, the shell got its own from the viewers.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vterm.h>

#include "frame.h"
#include "grid.h"
#include "log.h"
#include "proto.h"
#include "ring.h"
#include "screen.h"
#include "scrollback.h"
#include "vtfeed.h"
#include "xmalloc.h"

/*
 * Work units (screen.h) beyond a unit a byte and a cell: a call into
 * libvterm (a sequence dispatched, or a run of text), a pen looked up, a
 * line encoded for the scrollback.  fuzz_screen_cost found output made of
 * these at 40 to 70 ns a unit while they were free.
 */
#define SCREEN_CALL_UNITS 16
#define SCREEN_LINE_UNITS 32

/* Modes tracked by the scanner. */
#define SCREEN_M_CKM	 0x01 /* ?1: application cursor keys */
#define SCREEN_M_KEYPAD	 0x02 /* ESC =: application keypad */
#define SCREEN_M_FOCUS	 0x04 /* ?1004 */
#define SCREEN_M_UTF8MS	 0x08 /* ?1005 */
#define SCREEN_M_SGRMS	 0x10 /* ?1006 */
#define SCREEN_M_URXVTMS 0x20 /* ?1015 */
#define SCREEN_M_PASTE	 0x40 /* ?2004: bracketed paste */

#define SCAN_NPARAM 16
#define PEN_NONE    UINT32_MAX
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

struct sbuf {
	uint8_t *p;
	size_t	 len;
	size_t	 cap;
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

static void sbuf_reserve(struct sbuf *, size_t);

static void
sbuf_add(struct sbuf *b, const void *p, size_t n)
{
	if (n == 0)
		return; /* b->p may still be NULL */
	sbuf_reserve(b, n);
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

static void
sbuf_reserve(struct sbuf *b, size_t n)
{
	size_t ncap;

	if (b->p != NULL && b->len + n <= b->cap)
		return; /* once reserved, never NULL */
	ncap = b->cap != 0 ? b->cap : 256;
	while (ncap < b->len + n)
		ncap *= 2;
	b->p = xreallocarray(b->p, 1, ncap);
	b->cap = ncap;
}

static void
sbuf_str(struct sbuf *b, const char *s)
{
	sbuf_add(b, s, strlen(s));
}

static void
sbuf_utf8(struct sbuf *b, uint32_t c)
{
	uint8_t u[4];
	size_t	n;

	if (c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		c = 0xfffd;
	if (c < 0x80) {
		u[0] = (uint8_t)c;
		n = 1;
	} else if (c < 0x800) {
		u[0] = (uint8_t)(0xc0 | (c >> 6));
		u[1] = (uint8_t)(0x80 | (c & 0x3f));
		n = 2;
	} else if (c < 0x10000) {
		u[0] = (uint8_t)(0xe0 | (c >> 12));
		u[1] = (uint8_t)(0x80 | ((c >> 6) & 0x3f));
		u[2] = (uint8_t)(0x80 | (c & 0x3f));
		n = 3;
	} else {
		u[0] = (uint8_t)(0xf0 | (c >> 18));
		u[1] = (uint8_t)(0x80 | ((c >> 12) & 0x3f));
		u[2] = (uint8_t)(0x80 | ((c >> 6) & 0x3f));
		u[3] = (uint8_t)(0x80 | (c & 0x3f));
		n = 4;
	}
	sbuf_add(b, u, n);
}

/* Pens and SGR. */

static void
screen_sgr_color(struct sbuf *b, const VTermColor *c, int bg)
{
	char s[32];
	int  idx;

	if (bg ? VTERM_COLOR_IS_DEFAULT_BG(c) : VTERM_COLOR_IS_DEFAULT_FG(c))
		return;
	if (VTERM_COLOR_IS_INDEXED(c)) {
		idx = c->indexed.idx;
		if (idx < 8)
			snprintf(s, sizeof(s), ";%d", (bg ? 40 : 30) + idx);
		else if (idx < 16)
			snprintf(s, sizeof(s), ";%d",
			    (bg ? 100 : 90) + idx - 8);
		else
			snprintf(s, sizeof(s), ";%d;5;%d", bg ? 48 : 38, idx);
	} else
		snprintf(s, sizeof(s), ";%d;2;%u;%u;%u", bg ? 48 : 38,
		    c->rgb.red, c->rgb.green, c->rgb.blue);
	sbuf_str(b, s);
}

/* The whole pen from a reset one: "ESC[0;...m". */
static void
screen_sgr(struct sbuf *b, const struct gpen *p)
{
	unsigned int ul = (p->attrs >> GRID_UL_SHIFT) & 3;

	sbuf_str(b, "\033[0");
	if (p->attrs & GRID_BOLD)
		sbuf_str(b, ";1");
	if (p->attrs & GRID_ITALIC)
		sbuf_str(b, ";3");
	if (ul == VTERM_UNDERLINE_DOUBLE)
		sbuf_str(b, ";21");
	else if (ul != 0)
		sbuf_str(b, ";4");
	if (p->attrs & GRID_BLINK)
		sbuf_str(b, ";5");
	if (p->attrs & GRID_REVERSE)
		sbuf_str(b, ";7");
	if (p->attrs & GRID_STRIKE)
		sbuf_str(b, ";9");
	screen_sgr_color(b, &p->fg, 0);
	screen_sgr_color(b, &p->bg, 1);
	sbuf_str(b, "m");
}

/* Cells to text. */

static int
screen_cell_blank(const struct screen *s, const struct gcell *c)
{
	const struct gpen *p = &s->pens.p[gcell_pen(c)];

	return ((gcell_ch(c) == 0 || gcell_ch(c) == ' ') &&
	    VTERM_COLOR_IS_DEFAULT_BG(&p->bg) &&
	    (p->attrs & ~(GRID_BOLD | GRID_ITALIC | GRID_BLINK)) == 0);
}

/* A cell that is not plain ASCII of the pen at hand: its character(s). */
static void
screen_encode_char(struct sbuf *b, const struct gcell *cells, int i, int n)
{
	const struct gcell *c = &cells[i];

	/* A wide character whose right half was written over is gone: a
	 * space, as a terminal shows it. */
	if (gcell_ch(c) == 0 || gcell_ch(c) == GRID_RIGHT ||
	    (gcell_wide(c) &&
		!(i + 1 < n && gcell_ch(&cells[i + 1]) == GRID_RIGHT)))
		sbuf_add(b, " ", 1);
	else {
		sbuf_utf8(b, gcell_ch(c));
		if (gcell_comb(c) != 0)
			sbuf_utf8(b, gcell_comb(c));
	}
}

/* One line of cells, trailing blanks trimmed, ending with the pen reset
 * if it was changed. */
static void
screen_encode_cells(const struct screen *s, struct sbuf *b,
    const struct gcell *cells, int n)
{
	uint32_t cur = 0, ch; /* the default pen */
	int	 i, end = n;

	while (end > 0 && screen_cell_blank(s, &cells[end - 1]))
		end--;
	/* Room for every character's bytes; SGR checks its own. */
	sbuf_reserve(b, (size_t)end * 8);
	for (i = 0; i < end; i++) {
		ch = gcell_ch(&cells[i]);
		if (ch < 0x80 && ch != 0 && gcell_comb(&cells[i]) == 0 &&
		    gcell_pen(&cells[i]) == cur) {
			b->p[b->len++] = (uint8_t)ch; /* plain */
			continue;
		}
		if (gcell_pen(&cells[i]) != cur) {
			cur = gcell_pen(&cells[i]);
			screen_sgr(b, &s->pens.p[cur]);
			/* The SGR took from the room kept for the cells
			 * (fuzz_screen: the plain path then wrote past it). */
			sbuf_reserve(b, (size_t)(end - i) * 8);
		}
		screen_encode_char(b, cells, i, n);
		if (gcell_wide(&cells[i]) && i + 1 < n &&
		    gcell_ch(&cells[i + 1]) == GRID_RIGHT)
			i++; /* its right half */
	}
	if (cur != 0)
		sbuf_str(b, "\033[0m");
}

/* Rows of a buffer, joined by CR LF: written after the scrollback, the
 * last rows lines are the screen whatever came before. */
static void
screen_encode_rows(const struct screen *s, const struct grid *g, struct sbuf *b)
{
	unsigned int r;

	for (r = 0; r < g->rows; r++) {
		if (r > 0)
			sbuf_add(b, "\r\n", 2);
		screen_encode_cells(s, b, g->row[r], (int)g->cols);
	}
}

/* libvterm's state layer draws into the grids. */

static struct grid *
screen_grid(struct screen *s)
{
	return (&s->g[s->alt]);
}

/* The id of a pen: kept ids and cells are renumbered if the table is
 * collected. */
static uint32_t
screen_pen_id(struct screen *s, const struct gpen *p)
{
	/* A lookup, and the table's collection amortized. */
	s->work += SCREEN_CALL_UNITS;
	return (pens_id(&s->pens, p, s->g, 2, s->pen_ids, 2));
}

/* The cell putglyph writes, and what erasing leaves: the pen's background
 * on the default pen, as a terminal does. */
static struct gcell
screen_cell(struct screen *s, int blank, uint32_t ch, uint32_t comb, int wide)
{
	struct gpen p;

	if (s->pen_ids[blank] == PEN_NONE) {
		if (blank) {
			gpen_default(&p);
			p.bg = s->pen.bg;
		} else
			p = s->pen;
		s->pen_ids[blank] = screen_pen_id(s, &p);
	}
	return (gcell_make(ch, comb, wide, s->pen_ids[blank]));
}

static void
screen_pen_changed(struct screen *s)
{
	s->pen_ids[0] = s->pen_ids[1] = PEN_NONE;
}

/* Rows leaving the top of the normal screen go to the scrollback. */
static void
screen_push_rows(struct screen *s, unsigned int n)
{
	struct sbuf  b = { NULL, 0, 0 };
	unsigned int r;

	for (r = 0; r < n && r < s->g[0].rows; r++) {
		s->work += s->g[0].cols + SCREEN_LINE_UNITS;
		b.len = 0;
		screen_encode_cells(s, &b, s->g[0].row[r], (int)s->g[0].cols);
		scrollback_push(&s->sb, b.p != NULL ? b.p : (const uint8_t *)"",
		    b.len);
	}
	free(b.p);
}

static int
screen_putglyph_cb(VTermGlyphInfo *info, VTermPos pos, void *arg)
{
	struct screen *s = arg;
	struct grid   *g = screen_grid(s);
	struct gcell   c;
	size_t	       n;

	if (pos.row < 0 || pos.row >= (int)g->rows || pos.col < 0 ||
	    pos.col >= (int)g->cols)
		return (1);
	/* libvterm decodes up to U+7FFFFFFF (6-byte forms): past Unicode is
	 * U+FFFD here, before it could pass for the right half of a wide
	 * character (GRID_RIGHT). */
	c = screen_cell(s, 0,
	    (uint32_t)info->chars[0] > 0x10ffff ? 0xfffd :
						  (uint32_t)info->chars[0],
	    info->chars[0] != 0 ? info->chars[1] : 0, info->width == 2);
	g->row[pos.row][pos.col] = c;
	/* libvterm gives a run of combining marks whole, again with each new
	 * one (it scans it each time): the run counts, or a flood of U+0301
	 * costs seconds a step while its units say nothing. */
	for (n = 0; info->chars[n] != 0; n++)
		;
	s->work += (uint64_t)n + (uint64_t)(info->width > 0 ? info->width : 1);
	if (info->width == 2 && pos.col + 1 < (int)g->cols)
		g->row[pos.row][pos.col + 1] = screen_cell(s, 0, GRID_RIGHT, 0,
		    0);
	return (1);
}

static int
screen_scrollrect_cb(VTermRect rc, int down, int right, void *arg)
{
	struct screen *s = arg;
	struct gcell   blank;

	/* Whole lines only; the rest libvterm does with moverect and
	 * erase. */
	if (right != 0 || rc.start_col != 0 || rc.end_col != (int)s->cols)
		return (0);
	if (down > 0 && rc.start_row == 0 && !s->alt)
		screen_push_rows(s, (unsigned int)down);
	/* Rows move by pointer; the rows that come in are blanked. */
	s->work += (uint64_t)(rc.end_row - rc.start_row) +
	    (uint64_t)(down < 0 ? -down : down) * s->cols;
	blank = screen_cell(s, 1, 0, 0, 0);
	grid_scroll(screen_grid(s), rc.start_row, rc.end_row, down, &blank);
	return (1);
}

/* The cells of a rectangle: what moving or erasing it costs. */
static uint64_t
screen_rect_cells(VTermRect rc)
{
	if (rc.end_row <= rc.start_row || rc.end_col <= rc.start_col)
		return (1);
	return ((uint64_t)(rc.end_row - rc.start_row) *
	    (uint64_t)(rc.end_col - rc.start_col));
}

static int
screen_moverect_cb(VTermRect dest, VTermRect src, void *arg)
{
	struct screen *s = arg;

	s->work += screen_rect_cells(dest);
	grid_move(screen_grid(s), dest, src);
	return (1);
}

static int
screen_erase_cb(VTermRect rc, int selective, void *arg)
{
	struct screen *s = arg;
	struct gcell   blank;

	(void)selective;
	s->work += screen_rect_cells(rc);
	blank = screen_cell(s, 1, 0, 0, 0);
	grid_erase(screen_grid(s), rc, &blank);
	return (1);
}

static int
screen_initpen_cb(void *arg)
{
	struct screen *s = arg;

	gpen_default(&s->pen);
	screen_pen_changed(s);
	return (1);
}

static void
screen_attr_bit(struct gpen *p, uint8_t bit, int on)
{
	p->attrs = (uint8_t)(on ? p->attrs | bit : p->attrs & ~bit);
}

static int
screen_setpenattr_cb(VTermAttr attr, VTermValue *val, void *arg)
{
	struct screen *s = arg;
	struct gpen   *p = &s->pen;

	switch (attr) {
	case VTERM_ATTR_BOLD:
		screen_attr_bit(p, GRID_BOLD, val->boolean);
		break;
	case VTERM_ATTR_ITALIC:
		screen_attr_bit(p, GRID_ITALIC, val->boolean);
		break;
	case VTERM_ATTR_BLINK:
		screen_attr_bit(p, GRID_BLINK, val->boolean);
		break;
	case VTERM_ATTR_REVERSE:
		screen_attr_bit(p, GRID_REVERSE, val->boolean);
		break;
	case VTERM_ATTR_STRIKE:
		screen_attr_bit(p, GRID_STRIKE, val->boolean);
		break;
	case VTERM_ATTR_UNDERLINE:
		p->attrs = (uint8_t)((p->attrs & ~(3 << GRID_UL_SHIFT)) |
		    ((val->number & 3) << GRID_UL_SHIFT));
		break;
	case VTERM_ATTR_FOREGROUND:
		p->fg = val->color;
		break;
	case VTERM_ATTR_BACKGROUND:
		p->bg = val->color;
		break;
	default:
		return (1);
	}
	screen_pen_changed(s);
	return (1);
}

static int
screen_termprop_cb(VTermProp prop, VTermValue *val, void *arg)
{
	struct screen *s = arg;
	struct gcell   blank;

	switch (prop) {
	case VTERM_PROP_CURSORVISIBLE:
		s->cursor_visible = val->boolean;
		break;
	case VTERM_PROP_ALTSCREEN:
		if (val->boolean && !s->alt) {
			/* Where 1049 saves the cursor: it is still there. */
			vterm_state_get_cursorpos(s->st, &s->behind_cursor);
			memset(&blank, 0, sizeof(blank));
			grid_init(&s->g[1], s->rows, s->cols, &blank);
		} else if (!val->boolean && s->alt)
			/* libvterm erases the alternate screen each time it
			 * comes up (1047, 1049; it has no 47): what is left on
			 * it is never seen again. */
			grid_free(&s->g[1]);
		s->alt = val->boolean;
		break;
	default:
		break;
	}
	return (1);
}

/* The state resized: so do the grids.  Rows that no longer fit above the
 * cursor leave the normal screen for the scrollback. */
static int
screen_resize_cb(int rows, int cols, VTermPos *delta, void *arg)
{
	struct screen *s = arg;
	struct gcell   blank;
	VTermPos       cur;
	unsigned int   drop = 0, i;

	vterm_state_get_cursorpos(s->st, &cur);
	if (cur.row >= rows)
		drop = (unsigned int)(cur.row - rows + 1);
	if (drop > 0 && !s->alt)
		screen_push_rows(s, drop);
	memset(&blank, 0, sizeof(blank)); /* the default pen's */
	s->work += 2 * (uint64_t)rows * (unsigned int)cols;
	for (i = 0; i < 2; i++)
		if (s->g[i].cells != NULL)
			grid_resize(&s->g[i], (unsigned int)rows,
			    (unsigned int)cols, (int)i == s->alt ? drop : 0,
			    &blank);
	delta->row -= (int)drop;
	return (1);
}

static void
screen_output_cb(const char *p, size_t n, void *arg)
{
	/* Answers to queries: the viewers answered the shell already. */
	(void)p;
	(void)n;
	(void)arg;
}

static const VTermStateCallbacks screen_cbs = {
	.putglyph = screen_putglyph_cb,
	.scrollrect = screen_scrollrect_cb,
	.moverect = screen_moverect_cb,
	.erase = screen_erase_cb,
	.initpen = screen_initpen_cb,
	.setpenattr = screen_setpenattr_cb,
	.settermprop = screen_termprop_cb,
	.resize = screen_resize_cb,
};

/* libvterm's memory, counted (it wants it zeroed). */
#define SCREEN_HDR sizeof(max_align_t)

static void *
screen_vt_malloc(size_t n, void *arg)
{
	struct screen *s = arg;
	uint8_t	      *p;

	p = xcalloc(1, SCREEN_HDR + n);
	memcpy(p, &n, sizeof(n));
	s->vt_bytes += n;
	return (p + SCREEN_HDR);
}

static void
screen_vt_free(void *q, void *arg)
{
	struct screen *s = arg;
	uint8_t	      *p;
	size_t	       n;

	if (q == NULL)
		return;
	p = (uint8_t *)q - SCREEN_HDR;
	memcpy(&n, p, sizeof(n));
	s->vt_bytes -= n;
	free(p);
}

static VTermAllocatorFunctions screen_alloc = {
	.malloc = screen_vt_malloc,
	.free = screen_vt_free,
};

/* The emulator: libvterm, the normal screen and an empty scrollback. */
static void
screen_emu_start(struct screen *s)
{
	struct gcell blank;

	s->cursor_visible = 1;
	s->alt = 0;
	pens_init(&s->pens);
	gpen_default(&s->pen);
	screen_pen_changed(s);
	memset(&blank, 0, sizeof(blank)); /* the default pen's */
	grid_init(&s->g[0], s->rows, s->cols, &blank);
	s->vt = vterm_new_with_allocator((int)s->rows, (int)s->cols,
	    &screen_alloc, s);
	if (s->vt == NULL)
		fatalx("screen: libvterm");
	vterm_set_utf8(s->vt, 1);
	vterm_output_set_callback(s->vt, screen_output_cb, s);
	s->st = vterm_obtain_state(s->vt);
	vterm_state_set_callbacks(s->st, &screen_cbs, s);
	vterm_state_reset(s->st, 1);
	vtfeed_reset(&s->vf);
}

static void
screen_emu_stop(struct screen *s)
{
	if (s->vt != NULL)
		vterm_free(s->vt);
	s->vt = NULL;
	s->st = NULL;
	grid_free(&s->g[0]);
	grid_free(&s->g[1]);
	pens_free(&s->pens);
	scrollback_free(&s->sb);
}

int
screen_fits(unsigned int rows, unsigned int cols)
{
	return ((size_t)rows * cols <= SCREEN_CELLS_MAX);
}

struct screen *
screen_new(unsigned int rows, unsigned int cols)
{
	struct screen *s;

	s = xcalloc(1, sizeof(*s));
	s->rows = rows;
	s->cols = cols;
	s->cursor_visible = 1;
	s->cursor_hist.cur = 1;
	return (s);
}

/* The cache holds a shot only while a viewer is still sending it (a storm
 * of attaches shares one), not for as long as the terminal is quiet. */
void
screen_shot_unref(struct screen_shot *shot)
{
	if (shot == NULL)
		return;
	if (--shot->refs == 1 && shot->owner != NULL) {
		shot->owner->shot = NULL;
		shot->refs = 0;
	}
	if (shot->refs == 0)
		free(shot);
}

static void
screen_changed(struct screen *s)
{
	struct screen_shot *shot = s->shot;

	if (shot == NULL)
		return;
	s->shot = NULL;
	shot->owner = NULL;
	screen_shot_unref(shot);
}

void
screen_free(struct screen *s)
{
	if (s == NULL)
		return;
	screen_changed(s);
	screen_emu_stop(s);
	free(s);
}

void
screen_resize(struct screen *s, const struct ring *r, unsigned int rows,
    unsigned int cols, uint64_t budget)
{
	if (rows == s->rows && cols == s->cols)
		return;
	/*
	 * What came before the resize is drawn at the old size, if the
	 * emulator catches up within a turn's share; if not (output that
	 * costs more than its bytes say), it is dropped, and the next sync
	 * rebuilds it from the ring at the new size: a resize must never
	 * cost what a full sync may.
	 */
	if (r != NULL && s->synced &&
	    (budget == 0 || !screen_sync_step(s, r, ring_end(r), budget)) &&
	    s->fed < ring_end(r)) {
		screen_emu_stop(s);
		s->synced = 0;
	}
	screen_changed(s);
	s->rows = rows;
	s->cols = cols;
	if (!screen_fits(rows, cols)) {
		/* Too big to keep: the next sync at a size that fits
		 * starts again from the ring. */
		screen_emu_stop(s);
		s->synced = 0;
	} else if (s->vt != NULL) {
		vterm_set_size(s->vt, (int)rows, (int)cols);
		/*
		 * The scroll region back to the whole screen, as xterm does
		 * on a resize (and as s->top, s->bottom say): libvterm 0.1.4
		 * keeps a region past a smaller screen's last row and then
		 * scrolls with a negative length (fuzz_screen).  DECSTBM
		 * homes the cursor, hence the save and restore around it.
		 */
		vterm_input_write(s->vt, "7[r8", 7);
		scrollback_pack(&s->sb);
	}
	s->top = s->bottom = 0;
}

size_t
screen_memory(const struct screen *s)
{
	return (sizeof(*s) + s->vt_bytes + grid_bytes(&s->g[0]) +
	    grid_bytes(&s->g[1]) + pens_bytes(&s->pens) +
	    scrollback_memory(&s->sb));
}

unsigned int
screen_sb_lines(const struct screen *s)
{
	return (scrollback_lines(&s->sb));
}

/* The scanner: the modes libvterm does not tell, and the changes of those
 * it keeps that a rebuild must start from. */

static void
mode_hist_set(struct mode_hist *h, int val, uint64_t at)
{
	if ((uint8_t)val == h->cur)
		return;
	h->cur = (uint8_t)val;
	if (h->n == MODE_HIST) {
		memmove(h->at, h->at + 1, sizeof(h->at[0]) * (MODE_HIST - 1));
		memmove(h->val, h->val + 1, MODE_HIST - 1);
		h->n--;
	}
	h->at[h->n] = at;
	h->val[h->n] = (uint8_t)val;
	h->n++;
}

/* Its value where the byte at pos is about to be read.  Every change kept
 * is a real one, so before the oldest kept the value was the other one. */
static int
mode_hist_at(const struct mode_hist *h, uint64_t pos)
{
	int i;

	for (i = h->n - 1; i >= 0; i--)
		if (h->at[i] <= pos)
			return (h->val[i]);
	return (h->n > 0 ? !h->val[0] : h->cur);
}

static void
screen_modes_reset(struct screen *s)
{
	s->modes = 0;
	s->mouse = 0;
	s->top = s->bottom = 0;
	mode_hist_set(&s->alt_hist, 0, s->scan_at);
	mode_hist_set(&s->cursor_hist, 1, s->scan_at);
}

static unsigned int
screen_mode_bit(int n)
{
	switch (n) {
	case 1:
		return (SCREEN_M_CKM);
	case 1004:
		return (SCREEN_M_FOCUS);
	case 1005:
		return (SCREEN_M_UTF8MS);
	case 1006:
		return (SCREEN_M_SGRMS);
	case 1015:
		return (SCREEN_M_URXVTMS);
	case 2004:
		return (SCREEN_M_PASTE);
	}
	return (0);
}

/* CSI ? Pm h/l. */
static void
screen_decset(struct screen *s, int set)
{
	int i, n;

	for (i = 0; i < s->sc.np; i++) {
		n = s->sc.param[i];
		if (n == 9 || n == 1000 || n == 1002 || n == 1003)
			s->mouse = set ? n : 0;
		else if (n == 1047 || n == 1049) /* libvterm has no 47 */
			mode_hist_set(&s->alt_hist, set, s->scan_at);
		else if (n == 25)
			mode_hist_set(&s->cursor_hist, set, s->scan_at);
		else if (set)
			s->modes |= screen_mode_bit(n);
		else
			s->modes &= ~screen_mode_bit(n);
	}
}

/* A whole CSI sequence. */
static void
screen_csi(struct screen *s, int final)
{
	struct scan *sc = &s->sc;

	if (sc->priv == '?' && sc->inter == 0 && (final == 'h' || final == 'l'))
		screen_decset(s, final == 'h');
	else if (sc->priv == 0 && sc->inter == 0 && final == 'r') {
		s->top = sc->np > 0 ? sc->param[0] : 0;
		s->bottom = sc->np > 1 ? sc->param[1] : 0;
		if (s->top <= 1 &&
		    (s->bottom == 0 || s->bottom >= (int)s->rows))
			s->top = s->bottom = 0;
	} else if (sc->priv == 0 && sc->inter == '!' && final == 'p') {
		/* DECSTR */
		s->modes &= ~(SCREEN_M_CKM | SCREEN_M_KEYPAD);
		s->top = s->bottom = 0;
		mode_hist_set(&s->cursor_hist, 1, s->scan_at);
	}
}

static void
screen_scan_param(struct scan *sc, int c)
{
	if (sc->np == 0)
		sc->np = 1;
	if (c == ';' || c == ':') {
		if (sc->np < SCAN_NPARAM)
			sc->param[sc->np++] = 0;
		return;
	}
	if (sc->param[sc->np - 1] < 100000)
		sc->param[sc->np - 1] = sc->param[sc->np - 1] * 10 + (c - '0');
}

/* One byte. */
static void
screen_scan(struct screen *s, uint8_t c)
{
	struct scan *sc = &s->sc;

	if (c == 0x1b) {
		sc->state = SCAN_ESC;
		return;
	}
	if (c == 0x18 || c == 0x1a) { /* CAN, SUB */
		sc->state = SCAN_GROUND;
		return;
	}
	switch (sc->state) {
	case SCAN_GROUND:
		return;
	case SCAN_ESC:
		sc->state = SCAN_GROUND;
		if (c == '[') {
			memset(sc->param, 0, sizeof(sc->param));
			sc->np = sc->priv = sc->inter = 0;
			sc->state = SCAN_CSI;
		} else if (c == 'c')
			screen_modes_reset(s);
		else if (c == '=')
			s->modes |= SCREEN_M_KEYPAD;
		else if (c == '>')
			s->modes &= ~SCREEN_M_KEYPAD;
		return;
	case SCAN_CSI:
		if (c >= '0' && c <= ';')
			screen_scan_param(sc, c);
		else if (c >= '<' && c <= '?' && sc->np == 0 && sc->priv == 0)
			sc->priv = c;
		else if (c >= 0x20 && c <= 0x2f)
			sc->inter = c;
		else if (c >= 0x40 && c <= 0x7e) {
			sc->state = SCAN_GROUND;
			screen_csi(s, c);
		}
		return;
	}
}

void
screen_scan_output(struct screen *s, uint64_t pos, const uint8_t *p, size_t n)
{
	const uint8_t *q = p, *e = p + n;

	screen_changed(s);
	/* Only escape sequences interest the scanner: skip to them. */
	while (q < e) {
		if (s->sc.state == SCAN_GROUND &&
		    (q = memchr(q, 0x1b, (size_t)(e - q))) == NULL)
			break;
		s->scan_at = pos + (uint64_t)(q - p) + 1;
		screen_scan(s, *q++);
	}
	s->scan_end = pos + n;
}

void
screen_feed(struct screen *s, const uint8_t *p, size_t n)
{
	screen_scan_output(s, s->scan_end, p, n);
	if (s->vt == NULL)
		screen_emu_start(s);
	vtfeed_write(&s->vf, s->vt, p, n);
	scrollback_pack(&s->sb);
}

/*
 * A new emulator about to be fed from pos on: the alternate screen and a
 * hidden cursor as they were there.  Without it, a full-screen program
 * that came up before pos would be drawn on the normal screen (and left
 * there when it ends, its last screen in place of the shell's), with the
 * cursor showing.  What the normal screen held then is not known: the
 * alternate one comes up over a blank one.
 */
static void
screen_prime(struct screen *s, uint64_t pos)
{
	if (mode_hist_at(&s->alt_hist, pos))
		vtfeed_write(&s->vf, s->vt, (const uint8_t *)"\033[?1049h", 8);
	if (!mode_hist_at(&s->cursor_hist, pos))
		vtfeed_write(&s->vf, s->vt, (const uint8_t *)"\033[?25l", 6);
}

/*
 * At most how many bytes to feed before the cost is looked at again: the
 * most one byte can cost is about a screen's cells (a line feed scrolling
 * a region inside left and right margins moves every cell of it; ESC # 8
 * writes every cell in 3 bytes), so a step overshoots its budget by at
 * most that.
 */
static size_t
screen_chunk(const struct screen *s, uint64_t left, uint64_t avail)
{
	uint64_t per = 2 * (uint64_t)s->rows * s->cols + 1, n;

	n = left / per;
	if (n < 1)
		n = 1;
	return ((size_t)(n < avail ? n : avail));
}

/* Feed the ring's bytes from fed on until target or until budget units
 * are spent; 1 if target was reached. */
static int
screen_feed_ring(struct screen *s, const struct ring *r, uint64_t target,
    uint64_t budget)
{
	struct iovec iov[2];
	uint64_t     stop = s->work + budget, calls, tabs;
	size_t	     n;
	int	     i, cnt;

	while (s->fed < target && s->work < stop) {
		screen_changed(s);
		n = ring_peek(r, s->fed,
		    screen_chunk(s, stop - s->work, target - s->fed), iov,
		    &cnt);
		if (n == 0)
			break;
		calls = s->vf.calls;
		tabs = s->vf.tabs;
		for (i = 0; i < cnt; i++)
			vtfeed_write(&s->vf, s->vt, iov[i].iov_base,
			    iov[i].iov_len);
		s->work += n + (s->vf.calls - calls) * SCREEN_CALL_UNITS +
		    (s->vf.tabs - tabs);
		s->fed += n;
	}
	return (s->fed >= target);
}

int
screen_sync_step(struct screen *s, const struct ring *r, uint64_t target,
    uint64_t budget)
{
	int done;

	if (target > ring_end(r))
		target = ring_end(r);
	/*
	 * Bytes the emulator never saw have left the ring (or it never ran):
	 * it starts again from the oldest character kept.  The modes come
	 * from the scanner, which saw every byte.
	 */
	if (s->vt == NULL || !s->synced || s->fed < ring_start(r)) {
		screen_changed(s);
		screen_emu_stop(s);
		screen_emu_start(s);
		s->fed = ring_boundary(r, ring_start(r));
		s->synced = 1;
		screen_prime(s, s->fed);
	}
	done = screen_feed_ring(s, r, target, budget);
	/* Only the blocks still kept: a megabyte fed at once scrolls
	 * most of its lines out again. */
	scrollback_pack(&s->sb);
	return (done);
}

void
screen_sync(struct screen *s, const struct ring *r)
{
	while (!screen_sync_step(s, r, ring_end(r), SCREEN_SLICE_WORK))
		;
}

uint64_t
screen_fed(const struct screen *s)
{
	return (s->fed);
}

int
screen_valid(const struct screen *s, const struct ring *r)
{
	return (s->vt != NULL && s->synced && s->fed >= ring_start(r));
}

uint64_t
screen_work(const struct screen *s)
{
	return (s->work);
}

/* The redraw. */

static void
screen_cup(struct sbuf *b, int row, int col)
{
	char s[32];

	snprintf(s, sizeof(s), "\033[%d;%dH", row + 1, col + 1);
	sbuf_str(b, s);
}

/* The alternate screen over the normal one: row by row, by position. */
static void
screen_redraw_alt(struct screen *s, struct sbuf *b)
{
	struct sbuf  row = { NULL, 0, 0 };
	unsigned int r;

	screen_cup(b, s->behind_cursor.row, s->behind_cursor.col);
	sbuf_str(b, "\033[?1049h\033[H\033[2J");
	for (r = 0; r < s->g[1].rows; r++) {
		row.len = 0;
		screen_encode_cells(s, &row, s->g[1].row[r], (int)s->g[1].cols);
		if (row.len == 0)
			continue;
		screen_cup(b, (int)r, 0);
		sbuf_add(b, row.p, row.len);
	}
	free(row.p);
}

/* Modes, cursor and pen: the state after the text. */
static void
screen_redraw_state(struct screen *s, struct sbuf *b)
{
	static const struct {
		unsigned int bit;
		const char  *seq;
	} m[] = {
		{ SCREEN_M_CKM, "\033[?1h" },
		{ SCREEN_M_KEYPAD, "\033=" },
		{ SCREEN_M_FOCUS, "\033[?1004h" },
		{ SCREEN_M_UTF8MS, "\033[?1005h" },
		{ SCREEN_M_SGRMS, "\033[?1006h" },
		{ SCREEN_M_URXVTMS, "\033[?1015h" },
		{ SCREEN_M_PASTE, "\033[?2004h" },
	};
	VTermPos cur;
	char	 t[32];
	size_t	 i;

	if (s->top != 0 || s->bottom != 0) {
		snprintf(t, sizeof(t), "\033[%d;%dr", s->top, s->bottom);
		sbuf_str(b, t);
	}
	for (i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		if (s->modes & m[i].bit)
			sbuf_str(b, m[i].seq);
	if (s->mouse != 0) {
		snprintf(t, sizeof(t), "\033[?%dh", s->mouse);
		sbuf_str(b, t);
	}
	vterm_state_get_cursorpos(s->st, &cur);
	screen_cup(b, cur.row, cur.col);
	if (!s->cursor_visible)
		sbuf_str(b, "\033[?25l");
	/* The pen the next output is drawn with. */
	screen_sgr(b, &s->pen);
}

static void
screen_sb_line(const uint8_t *p, size_t n, void *arg)
{
	sbuf_add(arg, p, n);
	sbuf_add(arg, "\r\n", 2);
}

uint8_t *
screen_redraw(struct screen *s, size_t *len)
{
	struct sbuf b = { NULL, 0, 0 };

	/* Nothing fed yet: the redraw of a reset terminal. */
	if (s->vt == NULL)
		screen_emu_start(s);
	/* The scrollback, oldest first, each line ending CR LF. */
	scrollback_each(&s->sb, screen_sb_line, &b);
	screen_encode_rows(s, &s->g[0], &b);
	if (s->alt)
		screen_redraw_alt(s, &b);
	screen_redraw_state(s, &b);
	*len = b.len;
	return (b.p);
}

/* Frames. */

static void
screen_shot_frames(struct sbuf *out, const uint8_t *text, size_t len,
    uint64_t pos, unsigned int rows, unsigned int cols)
{
	struct frame_out  fo;
	struct msg_screen m;
	size_t		  off = 0, e;

	while (off < len) {
		e = len - off > PROTO_SCREEN_CHUNK ? off + PROTO_SCREEN_CHUNK :
						     len;
		/* Never inside a character (the text is ours: valid). */
		while (e < len && e > off + 1 && (text[e] & 0xc0) == 0x80)
			e--;
		memset(&m, 0, sizeof(m));
		m.pos = pos;
		m.rows = (uint16_t)rows;
		m.cols = (uint16_t)cols;
		m.last = e == len;
		m.data = text + off;
		m.len = e - off;
		frame_out_init(&fo);
		if (msg_encode(&fo, MSG_SCREEN, &m) == -1)
			fatalx("screen: encoding MSG_SCREEN");
		sbuf_add(out, fo.buf, fo.len);
		frame_out_free(&fo);
		off = e;
	}
}

struct screen_shot *
screen_shot_get(struct screen *s, uint64_t pos)
{
	struct screen_shot *shot;
	struct sbuf	    fr = { NULL, 0, 0 };
	uint8_t		   *text;
	size_t		    len;

	if (s->shot == NULL || s->shot->pos != pos) {
		screen_changed(s);
		text = screen_redraw(s, &len);
		screen_shot_frames(&fr, text, len, pos, s->rows, s->cols);
		shot = xmalloc(sizeof(*shot) + fr.len);
		shot->refs = 1;
		shot->owner = s;
		shot->pos = pos;
		shot->textlen = len;
		shot->len = fr.len;
		if (fr.len != 0)
			memcpy(shot->data, fr.p, fr.len);
		free(fr.p);
		free(text);
		s->shot = shot;
	}
	s->shot->refs++;
	return (s->shot);
}
