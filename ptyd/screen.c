/*
 * screen.c -- a terminal emulator's view of one terminal (screen.h), fed
 * lazily from the ring in steps of bounded work.
 *
 * Owns: the libvterm instance (its parser and state layer, allocated
 * through a counting allocator, so its memory per terminal is measured,
 * not guessed), its state callbacks drawing into the two screen buffers
 * (grid.c: libvterm's own screen layer copies the whole screen on every
 * scroll), the pen, the rows that leave the screen handed to the
 * scrollback (kept by scrollback.c), and the feeding: steps bounded in
 * work units, the rebuild from the ring when bytes it never saw have left
 * it, the resize.  Does not own: the modes libvterm keeps to itself
 * (screenscan.c), the redraw text and its cached frames (screenredraw.c),
 * the ring, the pty, the viewers.
 *
 * libvterm answers terminal queries (DA, DSR) through its output callback:
 * those answers are dropped here, the shell got its own from the viewers.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vterm.h>

#include "grid.h"
#include "log.h"
#include "ring.h"
#include "screen.h"
#include "screen_int.h"
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

/* A pen id not looked up yet (struct screen's pen_ids). */
#define PEN_NONE UINT32_MAX

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
void
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
		screen_scan_prime(s, s->fed);
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
