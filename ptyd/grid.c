/*
 * grid.c -- the cells of one screen buffer (grid.h).
 *
 * Owns: one block of rows x cols cells and the row pointers into it; a
 * screen's table of pens, interned through a hash and collected when full.
 * Does not own: the current pen or the characters (screen.c decides what
 * to write).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grid.h"
#include "xmalloc.h"

static void
grid_blank_row(struct gcell *r, unsigned int from, unsigned int to,
    const struct gcell *blank)
{
	unsigned int c;

	for (c = from; c < to; c++)
		r[c] = *blank;
}

void
grid_init(struct grid *g, unsigned int rows, unsigned int cols,
    const struct gcell *blank)
{
	unsigned int r;

	g->rows = rows;
	g->cols = cols;
	g->cells = xreallocarray(NULL, (size_t)rows * cols, sizeof(*g->cells));
	g->row = xreallocarray(NULL, rows, sizeof(*g->row));
	for (r = 0; r < rows; r++) {
		g->row[r] = g->cells + (size_t)r * cols;
		grid_blank_row(g->row[r], 0, cols, blank);
	}
}

void
grid_free(struct grid *g)
{
	free(g->cells);
	free(g->row);
	memset(g, 0, sizeof(*g));
}

void
grid_resize(struct grid *g, unsigned int rows, unsigned int cols,
    unsigned int drop, const struct gcell *blank)
{
	struct grid  n;
	unsigned int r, keep;

	grid_init(&n, rows, cols, blank);
	keep = cols < g->cols ? cols : g->cols;
	for (r = 0; r < rows && r + drop < g->rows; r++)
		memcpy(n.row[r], g->row[r + drop], keep * sizeof(*n.row[r]));
	/* A wide character cut in half at the new edge is blank. */
	for (r = 0; r < rows && keep > 0 && keep < g->cols; r++)
		if (gcell_wide(&n.row[r][keep - 1]))
			n.row[r][keep - 1] = *blank;
	grid_free(g);
	*g = n;
}

/*
 * A rect of libvterm's cut to the grid; 0 if nothing is left.  The grid
 * trusts no rect: output can drive libvterm 0.1.4 to rects past the edge
 * (fuzz_screen found a move of one: insert mode, then a glyph after a C1
 * single shift).
 */
static int
grid_clip(const struct grid *g, VTermRect *rc)
{
	if (rc->start_row < 0)
		rc->start_row = 0;
	if (rc->start_col < 0)
		rc->start_col = 0;
	if (rc->end_row > (int)g->rows)
		rc->end_row = (int)g->rows;
	if (rc->end_col > (int)g->cols)
		rc->end_col = (int)g->cols;
	return (rc->start_row < rc->end_row && rc->start_col < rc->end_col);
}

void
grid_erase(struct grid *g, VTermRect rc, const struct gcell *blank)
{
	int r;

	if (!grid_clip(g, &rc))
		return;
	for (r = rc.start_row; r < rc.end_row; r++)
		grid_blank_row(g->row[r], (unsigned int)rc.start_col,
		    (unsigned int)rc.end_col, blank);
}

void
grid_move(struct grid *g, VTermRect dest, VTermRect src)
{
	int	  dr = src.start_row - dest.start_row, n, i, r;
	int	  dc = src.start_col - dest.start_col;
	VTermRect from;
	size_t	  w;

	/* Only where both the cell and its source lie in the grid. */
	if (!grid_clip(g, &dest))
		return;
	from.start_row = dest.start_row + dr;
	from.end_row = dest.end_row + dr;
	from.start_col = dest.start_col + dc;
	from.end_col = dest.end_col + dc;
	if (!grid_clip(g, &from))
		return;
	dest.start_row = from.start_row - dr;
	dest.end_row = from.end_row - dr;
	dest.start_col = from.start_col - dc;
	n = dest.end_row - dest.start_row;
	w = (size_t)(from.end_col - from.start_col);
	/* Copy in the order that never reads a row already overwritten. */
	for (i = 0; i < n; i++) {
		r = dr > 0 ? i : n - 1 - i;
		memmove(g->row[dest.start_row + r] + dest.start_col,
		    g->row[from.start_row + r] + from.start_col,
		    w * sizeof(struct gcell));
	}
}

void
grid_scroll(struct grid *g, int top, int bottom, int n,
    const struct gcell *blank)
{
	struct gcell **tmp, *small[64];
	int	       h, k, i;

	top = top < 0 ? 0 : top;
	bottom = bottom > (int)g->rows ? (int)g->rows : bottom;
	if ((h = bottom - top) <= 0 || n == 0)
		return;
	k = n > 0 ? n : -n;
	if (k >= h) {
		for (i = top; i < bottom; i++)
			grid_blank_row(g->row[i], 0, g->cols, blank);
		return;
	}
	tmp = k <= 64 ? small : xreallocarray(NULL, (size_t)k, sizeof(*tmp));
	if (n > 0) {
		memcpy(tmp, g->row + top, k * sizeof(*tmp));
		memmove(g->row + top, g->row + top + k, (h - k) * sizeof(*tmp));
		memcpy(g->row + bottom - k, tmp, k * sizeof(*tmp));
		for (i = bottom - k; i < bottom; i++)
			grid_blank_row(g->row[i], 0, g->cols, blank);
	} else {
		memcpy(tmp, g->row + bottom - k, k * sizeof(*tmp));
		memmove(g->row + top + k, g->row + top, (h - k) * sizeof(*tmp));
		memcpy(g->row + top, tmp, k * sizeof(*tmp));
		for (i = top; i < top + k; i++)
			grid_blank_row(g->row[i], 0, g->cols, blank);
	}
	if (tmp != small)
		free(tmp);
}

size_t
grid_bytes(const struct grid *g)
{
	return ((size_t)g->rows * g->cols * sizeof(struct gcell) +
	    g->rows * sizeof(*g->row));
}

/* Pens. */

void
gpen_default(struct gpen *p)
{
	memset(p, 0, sizeof(*p));
	p->fg.type = VTERM_COLOR_DEFAULT_FG;
	p->bg.type = VTERM_COLOR_DEFAULT_BG;
}

/* What SGR does not write is zero: a default colour's RGB, an indexed
 * one's unused bytes. */
static void
gpen_color_norm(VTermColor *c)
{
	if (VTERM_COLOR_IS_DEFAULT_FG(c) || VTERM_COLOR_IS_DEFAULT_BG(c))
		c->rgb.red = c->rgb.green = c->rgb.blue = 0;
	else if (VTERM_COLOR_IS_INDEXED(c))
		c->rgb.green = c->rgb.blue = 0;
}

/* The bytes of a normalized pen, one by one: its colours through their
 * RGB view (the union's four bytes). */
static void
gpen_bytes(const struct gpen *p, uint8_t b[9])
{
	b[0] = p->fg.rgb.type;
	b[1] = p->fg.rgb.red;
	b[2] = p->fg.rgb.green;
	b[3] = p->fg.rgb.blue;
	b[4] = p->bg.rgb.type;
	b[5] = p->bg.rgb.red;
	b[6] = p->bg.rgb.green;
	b[7] = p->bg.rgb.blue;
	b[8] = p->attrs;
}

static uint32_t
gpen_hash(const struct gpen *p)
{
	uint8_t	 b[9];
	uint32_t h = 2166136261u;
	size_t	 i;

	gpen_bytes(p, b);
	for (i = 0; i < sizeof(b); i++)
		h = (h ^ b[i]) * 16777619u;
	return (h);
}

static int
gpen_eq(const struct gpen *x, const struct gpen *y)
{
	uint8_t a[9], b[9];

	gpen_bytes(x, a);
	gpen_bytes(y, b);
	return (memcmp(a, b, sizeof(a)) == 0);
}

static void
pens_rehash(struct pens *t)
{
	uint32_t i, j;

	free(t->hash);
	t->hcap = t->cap * 2;
	t->hash = xcalloc(t->hcap, sizeof(*t->hash));
	for (i = 0; i < t->n; i++) {
		j = gpen_hash(&t->p[i]) & (t->hcap - 1);
		while (t->hash[j] != 0)
			j = (j + 1) & (t->hcap - 1);
		t->hash[j] = i + 1;
	}
}

void
pens_init(struct pens *t)
{
	memset(t, 0, sizeof(*t));
	t->cap = 16;
	t->p = xreallocarray(NULL, t->cap, sizeof(*t->p));
	gpen_default(&t->p[0]);
	t->n = 1;
	pens_rehash(t);
}

void
pens_free(struct pens *t)
{
	free(t->p);
	free(t->hash);
	memset(t, 0, sizeof(*t));
}

size_t
pens_bytes(const struct pens *t)
{
	return ((size_t)t->cap * sizeof(*t->p) +
	    (size_t)t->hcap * sizeof(*t->hash));
}

/* The pens no cell and no kept id uses go; the rest are renumbered in
 * order (the default pen stays 0). */
static void
pens_collect(struct pens *t, struct grid *g, int ng, uint32_t *keep, int nkeep)
{
	uint32_t    *map, i, n = 0;
	unsigned int r, c;
	int	     k;

	map = xcalloc(t->n, sizeof(*map));
	map[0] = 1;
	for (k = 0; k < nkeep; k++)
		if (keep[k] < t->n)
			map[keep[k]] = 1;
	for (k = 0; k < ng; k++)
		for (r = 0; g[k].cells != NULL && r < g[k].rows; r++)
			for (c = 0; c < g[k].cols; c++)
				map[gcell_pen(&g[k].row[r][c])] = 1;
	for (i = 0; i < t->n; i++)
		if (map[i] != 0) {
			t->p[n] = t->p[i];
			map[i] = n++;
		}
	for (k = 0; k < ng; k++)
		for (r = 0; g[k].cells != NULL && r < g[k].rows; r++)
			for (c = 0; c < g[k].cols; c++)
				gcell_set_pen(&g[k].row[r][c],
				    map[gcell_pen(&g[k].row[r][c])]);
	for (k = 0; k < nkeep; k++)
		if (keep[k] < t->n)
			keep[k] = map[keep[k]];
	t->n = n;
	free(map);
}

/*
 * Full: collect, and grow if that freed less than half.  The pens in use
 * are at most every cell's of both grids and the kept ones (2 x 65,536
 * cells + 2: SCREEN_CELLS_MAX), so the table stays under 2^19 ids, inside
 * the 21 bits a cell has for one.
 */
uint32_t
pens_id(struct pens *t, const struct gpen *pen, struct grid *g, int ng,
    uint32_t *keep, int nkeep)
{
	struct gpen p = *pen;
	uint32_t    j;

	gpen_color_norm(&p.fg);
	gpen_color_norm(&p.bg);
	j = gpen_hash(&p) & (t->hcap - 1);
	for (; t->hash[j] != 0; j = (j + 1) & (t->hcap - 1))
		if (gpen_eq(&t->p[t->hash[j] - 1], &p))
			return (t->hash[j] - 1);
	if (t->n == t->cap) {
		pens_collect(t, g, ng, keep, nkeep);
		if (t->n > t->cap / 2) {
			t->cap *= 2;
			t->p = xreallocarray(t->p, t->cap, sizeof(*t->p));
		} else if (t->n < t->cap / 4 && t->cap > 16) {
			/* A burst of pens has gone: give back what it took
			 * (n < cap / 2 after, so there is room). */
			while (t->cap > 16 && t->n < t->cap / 4)
				t->cap /= 2;
			t->p = xreallocarray(t->p, t->cap, sizeof(*t->p));
		}
		pens_rehash(t);
		j = gpen_hash(&p) & (t->hcap - 1);
		while (t->hash[j] != 0)
			j = (j + 1) & (t->hcap - 1);
	}
	t->p[t->n] = p;
	t->hash[j] = t->n + 1;
	return (t->n++);
}
