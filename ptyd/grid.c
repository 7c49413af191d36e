/*
 * grid.c -- the cells of one screen buffer (grid.h).
 *
 * Owns: one block of rows x cols cells and the row pointers into it.  Does
 * not own: the pen or the characters (screen.c decides what to write).
 */
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
		if (n.row[r][keep - 1].width == 2)
			n.row[r][keep - 1] = *blank;
	grid_free(g);
	*g = n;
}

void
grid_erase(struct grid *g, VTermRect rc, const struct gcell *blank)
{
	int r;

	for (r = rc.start_row; r < rc.end_row; r++)
		if (r >= 0 && r < (int)g->rows && rc.start_col < rc.end_col)
			grid_blank_row(g->row[r], (unsigned int)rc.start_col,
			    (unsigned int)rc.end_col, blank);
}

void
grid_move(struct grid *g, VTermRect dest, VTermRect src)
{
	int    n = dest.end_row - dest.start_row, i, r, s;
	size_t w = (size_t)(dest.end_col - dest.start_col);

	/* Copy in the order that never reads a row already overwritten. */
	for (i = 0; i < n; i++) {
		r = dest.start_row < src.start_row ? i : n - 1 - i;
		s = src.start_row + r;
		memmove(g->row[dest.start_row + r] + dest.start_col,
		    g->row[s] + src.start_col, w * sizeof(struct gcell));
	}
}

void
grid_scroll(struct grid *g, int top, int bottom, int n,
    const struct gcell *blank)
{
	struct gcell **tmp, *small[64];
	int	       h = bottom - top, k, i;

	if (h <= 0 || n == 0)
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
