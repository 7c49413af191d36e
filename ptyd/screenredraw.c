/*
 * screenredraw.c -- the redraw text of attach=screen and its MSG_SCREEN
 * frames (screen.h).
 *
 * Owns: cells encoded as text (UTF-8, the whole pen as SGR, trailing
 * blanks trimmed), for the scrollback's lines as for the screen's rows;
 * the redraw built from the scrollback, the normal screen, the alternate
 * one over it and the state (scroll region, modes, cursor, pen); its
 * MSG_SCREEN frames, and the one cached shot that viewers attaching at
 * the same position share, let go when the screen changes.  Does not
 * own: the cells (screen.c, grid.c), the scrollback's storage
 * (scrollback.c), the modes (screenscan.c) or sending the frames
 * (connstream.c).
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
#include "screen.h"
#include "screen_int.h"
#include "scrollback.h"
#include "xmalloc.h"

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
void
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

/* The shot's cache. */

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

void
screen_changed(struct screen *s)
{
	struct screen_shot *shot = s->shot;

	if (shot == NULL)
		return;
	s->shot = NULL;
	shot->owner = NULL;
	screen_shot_unref(shot);
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
