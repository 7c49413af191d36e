/*
 * screen.c -- a terminal emulator's view of one terminal, and the redraw
 * text a new viewer gets instead of the raw backlog (screen.h).
 *
 * Owns: the libvterm instance (allocated through a counting allocator, so
 * its memory per terminal is measured, not guessed), the scrollback ring of
 * encoded lines, a scanner for the modes libvterm keeps to itself, the
 * normal screen's backdrop while the alternate one is up, and the cached
 * framed redraw.  Does not own: the ring, the pty, the viewers.
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
#include "log.h"
#include "proto.h"
#include "screen.h"
#include "xmalloc.h"

/* Modes tracked by the scanner. */
#define SCREEN_M_CKM	 0x01 /* ?1: application cursor keys */
#define SCREEN_M_KEYPAD	 0x02 /* ESC =: application keypad */
#define SCREEN_M_FOCUS	 0x04 /* ?1004 */
#define SCREEN_M_UTF8MS	 0x08 /* ?1005 */
#define SCREEN_M_SGRMS	 0x10 /* ?1006 */
#define SCREEN_M_URXVTMS 0x20 /* ?1015 */
#define SCREEN_M_PASTE	 0x40 /* ?2004: bracketed paste */

#define SCAN_NPARAM 16
#define SCREEN_SB_STEP (8 * 1024) /* the scrollback grows by this */

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
	size_t		start;	 /* the sequence's ESC in this chunk */
	int		started; /* start is valid (ESC in this chunk) */
};

struct sbuf {
	uint8_t *p;
	size_t	 len;
	size_t	 cap;
};

struct pen {
	VTermColor   fg, bg;
	unsigned int bold, underline, italic, blink, reverse, strike;
};

struct screen {
	VTerm	    *vt;
	VTermScreen *vs;
	VTermState  *st;
	unsigned int rows, cols;
	size_t	     vt_bytes; /* libvterm's, live */

	uint8_t	    *sb; /* lines, each ending in '\n', at [head, head+len) */
	size_t	     sb_head, sb_len, sb_cap;
	unsigned int sb_lines;

	struct scan  sc;
	unsigned int modes;
	int	     mouse;	  /* 0, 9, 1000, 1002, 1003 */
	int	     top, bottom; /* DECSTBM, 1-based; 0: none */
	int	     cursor_visible;
	int	     alt;	  /* the alternate screen is up */
	int	     alt_enabled; /* libvterm has its buffer */
	struct sbuf  behind;	  /* the normal screen under it */
	VTermPos     behind_cursor;

	struct screen_shot *shot;
};

static void
sbuf_add(struct sbuf *b, const void *p, size_t n)
{
	size_t ncap;

	if (b->len + n > b->cap) {
		ncap = b->cap != 0 ? b->cap : 256;
		while (ncap < b->len + n)
			ncap *= 2;
		b->p = xreallocarray(b->p, 1, ncap);
		b->cap = ncap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
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

static int
screen_color_eq(const VTermColor *a, const VTermColor *b)
{
	if (a->type != b->type)
		return (0);
	if (VTERM_COLOR_IS_DEFAULT_FG(a) || VTERM_COLOR_IS_DEFAULT_BG(a))
		return (1);
	if (VTERM_COLOR_IS_INDEXED(a))
		return (a->indexed.idx == b->indexed.idx);
	return (a->rgb.red == b->rgb.red && a->rgb.green == b->rgb.green &&
	    a->rgb.blue == b->rgb.blue);
}

static int
screen_pen_eq(const struct pen *a, const struct pen *b)
{
	return (a->bold == b->bold && a->underline == b->underline &&
	    a->italic == b->italic && a->blink == b->blink &&
	    a->reverse == b->reverse && a->strike == b->strike &&
	    screen_color_eq(&a->fg, &b->fg) && screen_color_eq(&a->bg, &b->bg));
}

static void
screen_pen_default(struct pen *p)
{
	memset(p, 0, sizeof(*p));
	p->fg.type = VTERM_COLOR_DEFAULT_FG;
	p->bg.type = VTERM_COLOR_DEFAULT_BG;
}

static void
screen_pen_cell(struct pen *p, const VTermScreenCell *c)
{
	memset(p, 0, sizeof(*p));
	p->fg = c->fg;
	p->bg = c->bg;
	p->bold = c->attrs.bold;
	p->underline = c->attrs.underline;
	p->italic = c->attrs.italic;
	p->blink = c->attrs.blink;
	p->reverse = c->attrs.reverse;
	p->strike = c->attrs.strike;
}

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
screen_sgr(struct sbuf *b, const struct pen *p)
{
	sbuf_str(b, "\033[0");
	if (p->bold)
		sbuf_str(b, ";1");
	if (p->italic)
		sbuf_str(b, ";3");
	if (p->underline == VTERM_UNDERLINE_DOUBLE)
		sbuf_str(b, ";21");
	else if (p->underline != 0)
		sbuf_str(b, ";4");
	if (p->blink)
		sbuf_str(b, ";5");
	if (p->reverse)
		sbuf_str(b, ";7");
	if (p->strike)
		sbuf_str(b, ";9");
	screen_sgr_color(b, &p->fg, 0);
	screen_sgr_color(b, &p->bg, 1);
	sbuf_str(b, "m");
}

/* Cells to text. */

static int
screen_cell_blank(const VTermScreenCell *c)
{
	return ((c->chars[0] == 0 || c->chars[0] == ' ') &&
	    VTERM_COLOR_IS_DEFAULT_BG(&c->bg) && !c->attrs.reverse &&
	    !c->attrs.underline && !c->attrs.strike);
}

/* One line of cells, trailing blanks trimmed, ending with the pen reset
 * if it was changed. */
static void
screen_encode_cells(struct sbuf *b, const VTermScreenCell *cells, int n)
{
	struct pen cur, want;
	int	   i, j, end = n;

	while (end > 0 && screen_cell_blank(&cells[end - 1]))
		end--;
	screen_pen_default(&cur);
	for (i = 0; i < end; i++) {
		screen_pen_cell(&want, &cells[i]);
		if (!screen_pen_eq(&cur, &want)) {
			screen_sgr(b, &want);
			cur = want;
		}
		if (cells[i].chars[0] == 0 || cells[i].chars[0] == (uint32_t)-1)
			sbuf_add(b, " ", 1);
		else
			for (j = 0; j < VTERM_MAX_CHARS_PER_CELL &&
			     cells[i].chars[j] != 0;
			     j++)
				sbuf_utf8(b, cells[i].chars[j]);
		if (cells[i].width == 2)
			i++; /* its right half */
	}
	screen_pen_default(&want);
	if (!screen_pen_eq(&cur, &want))
		sbuf_str(b, "\033[0m");
}

/* A row of the screen libvterm shows now. */
static void
screen_encode_row(struct screen *s, int row, VTermScreenCell *cells,
    struct sbuf *b)
{
	VTermPos pos;

	pos.row = row;
	for (pos.col = 0; pos.col < (int)s->cols; pos.col++)
		if (!vterm_screen_get_cell(s->vs, pos, &cells[pos.col]))
			memset(&cells[pos.col], 0, sizeof(cells[pos.col]));
	screen_encode_cells(b, cells, (int)s->cols);
}

/* Every row, joined by CR LF: written after the scrollback, the last
 * rows lines are the screen whatever came before. */
static void
screen_encode_rows(struct screen *s, struct sbuf *b)
{
	VTermScreenCell *cells;
	unsigned int	 r;

	cells = xreallocarray(NULL, s->cols, sizeof(*cells));
	for (r = 0; r < s->rows; r++) {
		if (r > 0)
			sbuf_add(b, "\r\n", 2);
		screen_encode_row(s, (int)r, cells, b);
	}
	free(cells);
}

/* Scrollback. */

static void
screen_sb_drop(struct screen *s)
{
	uint8_t *q;
	size_t	 k;

	q = memchr(s->sb + s->sb_head, '\n', s->sb_len);
	k = q != NULL ? (size_t)(q - (s->sb + s->sb_head)) + 1 : s->sb_len;
	s->sb_head += k;
	s->sb_len -= k;
	s->sb_lines--;
	if (s->sb_len == 0)
		s->sb_head = 0;
}

static void
screen_sb_push(struct screen *s, const uint8_t *line, size_t n)
{
	size_t need = n + 1, ncap;

	if (need > SCREEN_SB_BYTES)
		return;
	while (s->sb_lines > 0 &&
	    (s->sb_lines >= SCREEN_SB_LINES ||
		s->sb_len + need > SCREEN_SB_BYTES))
		screen_sb_drop(s);
	if (s->sb_head + s->sb_len + need > s->sb_cap && s->sb_head > 0) {
		memmove(s->sb, s->sb + s->sb_head, s->sb_len);
		s->sb_head = 0;
	}
	if (s->sb_len + need > s->sb_cap) {
		/* In steps, not doubling: a full scrollback of short lines
		 * would otherwise hold twice what it uses. */
		ncap = (s->sb_len + need + SCREEN_SB_STEP - 1) / SCREEN_SB_STEP *
		    SCREEN_SB_STEP;
		if (ncap > SCREEN_SB_BYTES)
			ncap = SCREEN_SB_BYTES;
		s->sb = xreallocarray(s->sb, 1, ncap);
		s->sb_cap = ncap;
	}
	memcpy(s->sb + s->sb_head + s->sb_len, line, n);
	s->sb[s->sb_head + s->sb_len + n] = '\n';
	s->sb_len += need;
	s->sb_lines++;
}

/* libvterm callbacks. */

static int
screen_pushline_cb(int cols, const VTermScreenCell *cells, void *arg)
{
	struct screen *s = arg;
	struct sbuf    b = { NULL, 0, 0 };

	screen_encode_cells(&b, cells, cols);
	screen_sb_push(s, b.p != NULL ? b.p : (const uint8_t *)"", b.len);
	free(b.p);
	return (1);
}

static int
screen_termprop_cb(VTermProp prop, VTermValue *val, void *arg)
{
	struct screen *s = arg;

	switch (prop) {
	case VTERM_PROP_CURSORVISIBLE:
		s->cursor_visible = val->boolean;
		break;
	case VTERM_PROP_ALTSCREEN:
		s->alt = val->boolean;
		if (!s->alt) {
			free(s->behind.p);
			memset(&s->behind, 0, sizeof(s->behind));
		}
		break;
	default:
		break;
	}
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

static const VTermScreenCallbacks screen_cbs = {
	.settermprop = screen_termprop_cb,
	.sb_pushline = screen_pushline_cb,
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

struct screen *
screen_new(unsigned int rows, unsigned int cols)
{
	struct screen *s;

	s = xcalloc(1, sizeof(*s));
	s->rows = rows;
	s->cols = cols;
	s->cursor_visible = 1;
	s->vt = vterm_new_with_allocator((int)rows, (int)cols, &screen_alloc,
	    s);
	if (s->vt == NULL)
		fatalx("screen: libvterm");
	vterm_set_utf8(s->vt, 1);
	vterm_output_set_callback(s->vt, screen_output_cb, s);
	s->vs = vterm_obtain_screen(s->vt);
	s->st = vterm_obtain_state(s->vt);
	vterm_screen_set_callbacks(s->vs, &screen_cbs, s);
	vterm_screen_reset(s->vs, 1);
	return (s);
}

void
screen_shot_unref(struct screen_shot *shot)
{
	if (shot != NULL && --shot->refs == 0)
		free(shot);
}

static void
screen_changed(struct screen *s)
{
	screen_shot_unref(s->shot);
	s->shot = NULL;
}

void
screen_free(struct screen *s)
{
	if (s == NULL)
		return;
	screen_changed(s);
	vterm_free(s->vt);
	free(s->sb);
	free(s->behind.p);
	free(s);
}

void
screen_resize(struct screen *s, unsigned int rows, unsigned int cols)
{
	if (rows == s->rows && cols == s->cols)
		return;
	screen_changed(s);
	s->rows = rows;
	s->cols = cols;
	vterm_set_size(s->vt, (int)rows, (int)cols);
	s->top = s->bottom = 0;
}

size_t
screen_memory(const struct screen *s)
{
	return (sizeof(*s) + s->vt_bytes + s->sb_cap + s->behind.cap);
}

unsigned int
screen_sb_lines(const struct screen *s)
{
	return (s->sb_lines);
}

/* The scanner: the modes libvterm does not tell. */

static void
screen_modes_reset(struct screen *s)
{
	s->modes = 0;
	s->mouse = 0;
	s->top = s->bottom = 0;
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

/* CSI ? Pm h/l.  1 if it enters the alternate screen. */
static int
screen_decset(struct screen *s, int set)
{
	int i, n, alt = 0;

	for (i = 0; i < s->sc.np; i++) {
		n = s->sc.param[i];
		if (n == 9 || n == 1000 || n == 1002 || n == 1003)
			s->mouse = set ? n : 0;
		else if (n == 47 || n == 1047 || n == 1049)
			alt |= set;
		else if (set)
			s->modes |= screen_mode_bit(n);
		else
			s->modes &= ~screen_mode_bit(n);
	}
	return (alt);
}

/* A whole CSI sequence.  1 if it enters the alternate screen. */
static int
screen_csi(struct screen *s, int final)
{
	struct scan *sc = &s->sc;

	if (sc->priv == '?' && sc->inter == 0 && (final == 'h' || final == 'l'))
		return (screen_decset(s, final == 'h'));
	if (sc->priv == 0 && sc->inter == 0 && final == 'r') {
		s->top = sc->np > 0 ? sc->param[0] : 0;
		s->bottom = sc->np > 1 ? sc->param[1] : 0;
		if (s->top <= 1 &&
		    (s->bottom == 0 || s->bottom >= (int)s->rows))
			s->top = s->bottom = 0;
	} else if (sc->priv == 0 && sc->inter == '!' && final == 'p') {
		/* DECSTR */
		s->modes &= ~(SCREEN_M_CKM | SCREEN_M_KEYPAD);
		s->top = s->bottom = 0;
	}
	return (0);
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

/* One byte at offset i of the chunk.  1 when it ends a sequence that
 * enters the alternate screen. */
static int
screen_scan(struct screen *s, uint8_t c, size_t i)
{
	struct scan *sc = &s->sc;

	if (c == 0x1b) {
		sc->state = SCAN_ESC;
		sc->start = i;
		sc->started = 1;
		return (0);
	}
	if (c == 0x18 || c == 0x1a) { /* CAN, SUB */
		sc->state = SCAN_GROUND;
		return (0);
	}
	switch (sc->state) {
	case SCAN_GROUND:
		return (0);
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
		return (0);
	case SCAN_CSI:
		if (c >= '0' && c <= ';')
			screen_scan_param(sc, c);
		else if (c >= '<' && c <= '?' && sc->np == 0 && sc->priv == 0)
			sc->priv = c;
		else if (c >= 0x20 && c <= 0x2f)
			sc->inter = c;
		else if (c >= 0x40 && c <= 0x7e) {
			sc->state = SCAN_GROUND;
			return (screen_csi(s, c));
		}
		return (0);
	}
	return (0);
}

/* The alternate screen is about to come up: keep the normal one. */
static void
screen_backdrop(struct screen *s)
{
	if (!s->alt_enabled) {
		vterm_screen_enable_altscreen(s->vs, 1);
		s->alt_enabled = 1;
	}
	s->behind.len = 0;
	screen_encode_rows(s, &s->behind);
	vterm_state_get_cursorpos(s->st, &s->behind_cursor);
}

void
screen_feed(struct screen *s, const uint8_t *p, size_t n)
{
	size_t i, from = 0, cut;

	if (n == 0)
		return;
	screen_changed(s);
	s->sc.started = 0;
	for (i = 0; i < n; i++) {
		if (!screen_scan(s, p[i], i) || s->alt)
			continue;
		/* Up to the sequence's start (or all of it, if it began in an
		 * earlier chunk: libvterm holds that part, unparsed). */
		cut = s->sc.started && s->sc.start >= from ? s->sc.start : from;
		vterm_input_write(s->vt, (const char *)p + from, cut - from);
		screen_backdrop(s);
		from = cut;
	}
	vterm_input_write(s->vt, (const char *)p + from, n - from);
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
	VTermScreenCell *cells;
	struct sbuf	 row = { NULL, 0, 0 };
	unsigned int	 r;

	screen_cup(b, s->behind_cursor.row, s->behind_cursor.col);
	sbuf_str(b, "\033[?1049h\033[H\033[2J");
	cells = xreallocarray(NULL, s->cols, sizeof(*cells));
	for (r = 0; r < s->rows; r++) {
		row.len = 0;
		screen_encode_row(s, (int)r, cells, &row);
		if (row.len == 0)
			continue;
		screen_cup(b, (int)r, 0);
		sbuf_add(b, row.p, row.len);
	}
	free(row.p);
	free(cells);
}

/* The pen the next output is drawn with. */
static void
screen_pen_state(struct screen *s, struct pen *pen)
{
	static const struct {
		VTermAttr attr;
		size_t	  off;
	} a[] = {
		{ VTERM_ATTR_BOLD, offsetof(struct pen, bold) },
		{ VTERM_ATTR_UNDERLINE, offsetof(struct pen, underline) },
		{ VTERM_ATTR_ITALIC, offsetof(struct pen, italic) },
		{ VTERM_ATTR_BLINK, offsetof(struct pen, blink) },
		{ VTERM_ATTR_REVERSE, offsetof(struct pen, reverse) },
		{ VTERM_ATTR_STRIKE, offsetof(struct pen, strike) },
	};
	VTermValue   v;
	unsigned int u;
	size_t	     i;

	screen_pen_default(pen);
	for (i = 0; i < sizeof(a) / sizeof(a[0]); i++) {
		if (!vterm_state_get_penattr(s->st, a[i].attr, &v))
			continue;
		u = a[i].attr == VTERM_ATTR_UNDERLINE ? (unsigned int)v.number :
							(unsigned int)v.boolean;
		memcpy((char *)pen + a[i].off, &u, sizeof(u));
	}
	if (vterm_state_get_penattr(s->st, VTERM_ATTR_FOREGROUND, &v))
		pen->fg = v.color;
	if (vterm_state_get_penattr(s->st, VTERM_ATTR_BACKGROUND, &v))
		pen->bg = v.color;
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
	VTermPos   cur;
	struct pen pen;
	char	   t[32];
	size_t	   i;

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
	screen_pen_state(s, &pen);
	screen_sgr(b, &pen);
}

uint8_t *
screen_redraw(struct screen *s, size_t *len)
{
	struct sbuf b = { NULL, 0, 0 };
	size_t	    i, from;

	/* The scrollback, oldest first, each line ending CR LF. */
	for (i = from = s->sb_head; i < s->sb_head + s->sb_len; i++) {
		if (s->sb[i] != '\n')
			continue;
		sbuf_add(&b, s->sb + from, i - from);
		sbuf_add(&b, "\r\n", 2);
		from = i + 1;
	}
	if (s->alt && s->behind.len > 0)
		sbuf_add(&b, s->behind.p, s->behind.len);
	if (s->alt)
		screen_redraw_alt(s, &b);
	else
		screen_encode_rows(s, &b);
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
		shot->pos = pos;
		shot->textlen = len;
		shot->len = fr.len;
		memcpy(shot->data, fr.p, fr.len);
		free(fr.p);
		free(text);
		s->shot = shot;
	}
	s->shot->refs++;
	return (s->shot);
}
