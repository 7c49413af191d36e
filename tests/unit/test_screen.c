/*
 * test_screen.c -- the emulator's view (ptyd/screen.c, screenscan.c,
 * screenredraw.c): the redraw text redraws what was fed (fed to a fresh
 * screen, it gives the same redraw back), holds no terminal query, keeps
 * the normal screen behind the alternate one and the modes, bounds the
 * scrollback, and frames into MSG_SCREEN pieces that decode back to it.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "frame.h"
#include "proto.h"
#include "ring.h"
#include "screen.h"

static void
feed(struct screen *s, const char *t)
{
	screen_feed(s, (const uint8_t *)t, strlen(t));
}

/* The redraw as a NUL-terminated string. */
static char *
redraw(struct screen *s)
{
	size_t	 len;
	uint8_t *p = screen_redraw(s, &len);
	char	*t = malloc(len + 1);

	memcpy(t, p, len);
	t[len] = '\0';
	free(p);
	return (t);
}

/* The redraw of a fresh rows x cols screen fed each piece in turn, up to
 * a NULL. */
static char *
redraw_of(unsigned int rows, unsigned int cols, ...)
{
	struct screen *s = screen_new(rows, cols);
	const char    *piece;
	char	      *r;
	va_list	       ap;

	va_start(ap, cols);
	while ((piece = va_arg(ap, const char *)) != NULL)
		feed(s, piece);
	va_end(ap);
	r = redraw(s);
	screen_free(s);
	return (r);
}

/* Its redraw, fed to a fresh screen of the same size, redraws the same. */
static struct screen *
check_fixpoint(struct screen *a, unsigned int rows, unsigned int cols)
{
	struct screen *b = screen_new(rows, cols);
	char	      *ra = redraw(a), *rb;

	feed(b, ra);
	rb = redraw(b);
	cr_assert_str_eq(rb, ra);
	free(ra);
	free(rb);
	return (b);
}

Test(screen, text_sgr_and_wide_characters_redraw_to_themselves)
{
	struct screen *a = screen_new(24, 80), *b;
	char	      *r;

	feed(a,
	    "hello \033[1;31mred\033[0m \346\227\245\346\234\254!\r\n"
	    "\033[4mu\033[24m \033[38;2;1;2;3mrgb\033[48;5;200mbg\033[m"
	    "\033[10;40H\033[7mrev");
	r = redraw(a);
	cr_assert(strstr(r, "hello \033[0;1;31mred\033[0m") != NULL, "%s", r);
	cr_assert(strstr(r, "\346\227\245\346\234\254!") != NULL);
	cr_assert(strstr(r, "\033[0;38;2;1;2;3mrgb") != NULL, "%s", r);
	cr_assert(strstr(r, "\033[0;38;2;1;2;3;48;5;200mbg") != NULL, "%s", r);
	/* The cursor after "rev", and the pen still reverse. */
	cr_assert(strstr(r, "\033[10;43H\033[0;7m") != NULL, "%s", r);
	b = check_fixpoint(a, 24, 80);
	free(r);
	screen_free(a);
	screen_free(b);
}

Test(screen, queries_are_never_in_the_redraw)
{
	static const char *q[] = { "\033[c", "\033[>c", "\033[6n", "\033]10;?",
		"\033[5n" };
	struct screen	  *a = screen_new(24, 80);
	char		  *r;
	size_t		   i;

	feed(a, "\033[c\033[>c\033[6n\033]10;?\007\033[5nafter");
	r = redraw(a);
	for (i = 0; i < sizeof(q) / sizeof(q[0]); i++)
		cr_assert(strstr(r, q[i]) == NULL, "%zu in %s", i, r);
	cr_assert(strstr(r, "after") != NULL);
	free(r);
	screen_free(a);
}

Test(screen, the_normal_screen_stays_behind_the_alternate_one)
{
	struct screen *a = screen_new(24, 80), *b;
	char	      *r, *p, *v;

	feed(a, "prompt$ vi\r\n\033[?1049h\033[2J\033[Hvim here\033[5;5H");
	r = redraw(a);
	p = strstr(r, "prompt$ vi");
	v = strstr(r, "vim here");
	cr_assert(p != NULL && v != NULL && p < v, "%s", r);
	cr_assert(strstr(r, "\033[?1049h") != NULL);
	b = check_fixpoint(a, 24, 80);
	free(r);
	/* Leaving it shows the normal screen again, on both. */
	feed(a, "\033[?1049l");
	feed(b, "\033[?1049l");
	r = redraw(b);
	cr_assert(strstr(r, "prompt$ vi") != NULL, "%s", r);
	cr_assert(strstr(r, "vim here") == NULL, "%s", r);
	cr_assert(strstr(r, "\033[?1049h") == NULL);
	free(r);
	screen_free(check_fixpoint(a, 24, 80));
	screen_free(a);
	screen_free(b);
}

Test(screen, modes_are_kept_and_cleared)
{
	static const char *m[] = { "\033[?1h", "\033=", "\033[?2004h",
		"\033[?1002h", "\033[?1006h", "\033[?25l", "\033[3;20r" };
	struct screen	  *a = screen_new(24, 80);
	char		  *r;
	size_t		   i;

	/* One sequence split across two feeds. */
	feed(a, "\033[?1h\033=\033[?20");
	feed(a, "04h\033[?1002h\033[?1006h\033[?25l\033[3;20r");
	r = redraw(a);
	for (i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		cr_assert(strstr(r, m[i]) != NULL, "%zu in %s", i, r);
	free(r);
	screen_free(check_fixpoint(a, 24, 80));
	feed(a,
	    "\033[?1l\033>\033[?2004l\033[?1002l\033[?1006l\033[?25h"
	    "\033[r");
	r = redraw(a);
	for (i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		cr_assert(strstr(r, m[i]) == NULL, "%zu in %s", i, r);
	free(r);
	screen_free(a);
}

Test(screen, scrollback_is_bounded_to_the_newest_lines)
{
	struct screen *a = screen_new(24, 80);
	char	       line[32], *r;
	int	       i;

	for (i = 0; i < 3000; i++) {
		snprintf(line, sizeof(line), "line %d\r\n", i);
		feed(a, line);
	}
	cr_assert_eq(screen_sb_lines(a), SCREEN_SB_LINES);
	r = redraw(a);
	/* 3000 lines, the cursor on the 24th row: 2977 scrolled off. */
	cr_assert(strstr(r, "line 1976\r") == NULL);
	cr_assert(strstr(r, "line 1977\r") != NULL, "%.200s", r);
	cr_assert(strstr(r, "line 2999\r") != NULL);
	free(r);
	screen_free(check_fixpoint(a, 24, 80));
	screen_free(a);
}

/* The shot's frames decode to the redraw, in pieces of at most a chunk. */
static void
check_shot(struct screen *a, uint64_t pos, unsigned int rows, unsigned int cols,
    int min_frames)
{
	struct screen_shot *shot = screen_shot_get(a, pos);
	struct frame_hdr    h;
	struct msg_screen   m;
	size_t		    off = 0, tlen = 0, len;
	uint8_t		   *text = screen_redraw(a, &len), *got;
	int		    n = 0, last = 0;

	got = malloc(shot->len);
	while (off < shot->len) {
		cr_assert(!last, "a frame after the last");
		cr_assert_eq(frame_hdr_decode(shot->data + off, &h), 0);
		cr_assert_eq(h.type, MSG_SCREEN);
		cr_assert_eq(msg_decode(MSG_SCREEN,
				 shot->data + off + PROTO_HDR_LEN, h.len, &m),
		    0);
		cr_assert(m.len <= PROTO_SCREEN_CHUNK);
		cr_assert(h.len <= 8 + PROTO_OUTPUT_CHUNK);
		cr_assert_eq(m.pos, pos);
		cr_assert_eq(m.rows, rows);
		cr_assert_eq(m.cols, cols);
		memcpy(got + tlen, m.data, m.len);
		tlen += m.len;
		last = m.last;
		off += PROTO_HDR_LEN + h.len;
		n++;
	}
	cr_assert(last);
	cr_assert_geq(n, min_frames);
	cr_assert_eq(tlen, len);
	cr_assert(memcmp(got, text, len) == 0);
	/* Cached for the same position, shared. */
	cr_assert_eq(screen_shot_get(a, pos), shot);
	screen_shot_unref(shot);
	screen_shot_unref(shot);
	free(got);
	free(text);
}

Test(screen, shots_frame_the_redraw_and_follow_a_resize)
{
	struct screen *a = screen_new(24, 80);
	char	       line[128];
	int	       i;

	feed(a, "small");
	check_shot(a, 5, 24, 80, 1);
	for (i = 0; i < 1200; i++) {
		snprintf(line, sizeof(line), "\033[3%dm%078d\033[m\r\n", i % 8,
		    i);
		feed(a, line);
	}
	check_shot(a, 99, 24, 80, 3);
	screen_resize(a, NULL, 30, 100, SCREEN_SLICE_WORK);
	check_shot(a, 100, 30, 100, 3);
	screen_free(a);
}

/* Realistic output: lines of ptyd's own source cut to 79 columns, each
 * fourth one starting in bold blue as `ls --color` paints a directory. */
static void
feed_source_lines(struct screen *s, int want)
{
	static const char *files[] = { "screen.c", "conn.c", "ring.c",
		"termio.c", "term.c", "store.c", NULL };
	char		   path[4096], in[4096], t[128], out[512];
	FILE		  *f;
	int		   n = 0, i, c;
	char		  *p;

	for (i = 0; files[i] != NULL && n < want; i++) {
		snprintf(path, sizeof(path), "%s/ptyd/%s", PTYD_SRCDIR,
		    files[i]);
		f = fopen(path, "r");
		cr_assert_not_null(f, "%s", path);
		while (n < want && fgets(in, sizeof(in), f) != NULL) {
			for (c = 0, p = in; *p != '\0' && *p != '\n' && c < 79;
			     p++)
				if (*p == '\t')
					do
						t[c++] = ' ';
					while (c % 8 != 0 && c < 79);
				else
					t[c++] = *p;
			t[c] = '\0';
			if (n % 4 == 0)
				snprintf(out, sizeof(out),
				    "\033[01;34m%.20s\033[0m%s\r\n", t,
				    c > 20 ? t + 20 : "");
			else
				snprintf(out, sizeof(out), "%s\r\n", t);
			feed(s, out);
			n++;
		}
		fclose(f);
	}
	cr_assert_eq(n, want);
}

/* The worst case: printable characters no compressor can shrink much. */
static void
feed_random_lines(struct screen *s, int want)
{
	uint32_t x = 2463534242u;
	char	 line[128];
	int	 i, j;

	for (i = 0; i < want; i++) {
		for (j = 0; j < 79; j++) {
			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
			line[j] = (char)(33 + x % 94);
		}
		memcpy(line + 79, "\r\n", 3);
		feed(s, line);
	}
}

Test(screen, memory_per_terminal)
{
	struct screen *a = screen_new(24, 80), *b, *c;
	size_t	       idle;

	feed(a, "$ ");
	idle = screen_memory(a);
	b = screen_new(24, 80);
	feed_source_lines(b, 1000 + 23);
	cr_assert_eq(screen_sb_lines(b), 1000);
	c = screen_new(24, 80);
	feed_random_lines(c, 1000 + 23);
	cr_assert_eq(screen_sb_lines(c), 1000);
	cr_log_info("screen 80x24: %zu bytes with a prompt, %zu with 1,000"
		    " lines of source scrolled back, %zu with 1,000 of random"
		    " text",
	    idle, screen_memory(b), screen_memory(c));
	fprintf(stderr, "screen memory: idle %zu, source %zu, random %zu\n",
	    idle, screen_memory(b), screen_memory(c));
	/* Issue 17's target: 64 kB for 80x24 and 1,000 lines of
	 * scrollback.  Random text does not compress (it is held raw, within
	 * the byte bound). */
	cr_assert_lt(idle, 48 * 1024);
	cr_assert_leq(screen_memory(b), 64 * 1024);
	cr_assert_lt(screen_memory(c), 48 * 1024 + SCREEN_SB_BYTES);
	screen_free(a);
	screen_free(b);
	screen_free(c);
}

/* What a ring of encoded lines kept: lines first..last of "L%d" then
 * ab+%d, each ending CR LF. */
static char *
sb_expect(int first, int last)
{
	size_t cap = (size_t)(last - first + 1) * 160 + 1, len = 0;
	char  *e = malloc(cap);
	int    i;

	for (i = first; i <= last; i++)
		len += (size_t)snprintf(e + len, cap - len, "L%d-%.*s\r\n", i,
		    (i * 7) % 70,
		    "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvw"
		    "xyzabcdefghijklmnopqrstuvwxyz");
	return (e);
}

static void
feed_l_lines(struct screen *s, int from, int to)
{
	char *e = sb_expect(from, to - 1);

	feed(s, e);
	free(e);
}

/* The scrollback is compressed in blocks: the redraw is the one the ring
 * of encoded lines gave, byte for byte, across blocks (lines of varied
 * length, empty ones closing blocks by their count), at the line bound,
 * and after a resize pushes rows into it. */
Test(screen, compressed_scrollback_redraws_as_the_uncompressed_one)
{
	struct screen *a = screen_new(24, 80), *b;
	char	      *r, *e;
	size_t	       held;
	int	       n = 3000, i;

	feed_l_lines(a, 0, 200);
	for (i = 0; i < 300; i++)
		feed(a, "\r\n"); /* empty lines: blocks close by count */
	feed_l_lines(a, 500, n);
	/* n lines fed, the last 23 on the screen: 1,000 kept before. */
	cr_assert_eq(screen_sb_lines(a), 1000);
	e = sb_expect(n - 1023, n - 24);
	r = redraw(a);
	cr_assert(strncmp(r, e, strlen(e)) == 0, "scrollback differs");
	free(r);
	free(e);
	b = check_fixpoint(a, 24, 80);
	screen_free(b);
	/* Oldest blocks go: five times as many lines hold no more. */
	held = screen_memory(a);
	feed_l_lines(a, n, n + 5000);
	n += 5000;
	cr_assert_leq(screen_memory(a), held + 4096);
	/* Four rows fewer: the top four rows go to the scrollback. */
	screen_resize(a, NULL, 20, 80, SCREEN_SLICE_WORK);
	cr_assert_eq(screen_sb_lines(a), 1000);
	e = sb_expect(n - 1019, n - 20);
	r = redraw(a);
	cr_assert(strncmp(r, e, strlen(e)) == 0, "after a resize");
	free(r);
	free(e);
	b = check_fixpoint(a, 20, 80);
	screen_free(b);
	screen_free(a);
}

/* Long encoded lines: the byte bound keeps the newest lines that fit in
 * SCREEN_SB_BYTES, exactly. */
Test(screen, compressed_scrollback_keeps_the_byte_bound)
{
	struct screen *a = screen_new(24, 80);
	char	       in[4096], cell[64];
	char	      *enc[400], *r;
	size_t	       inlen, elen, total = 0, off = 0;
	int	       i, j, first;

	for (i = 0; i < 400; i++) {
		inlen = elen = 0;
		enc[i] = malloc(4096);
		for (j = 0; j < 40; j++) {
			snprintf(cell, sizeof(cell), "38;2;%d;%d;%d", i % 256,
			    j, (i * 40 + j) % 251);
			inlen += (size_t)snprintf(in + inlen,
			    sizeof(in) - inlen, "\033[%smx", cell);
			elen += (size_t)snprintf(enc[i] + elen, 4096 - elen,
			    "\033[0;%smx", cell);
		}
		snprintf(in + inlen, sizeof(in) - inlen, "\033[0m\r\n");
		snprintf(enc[i] + elen, 4096 - elen, "\033[0m");
		feed(a, in);
	}
	/* Lines 0..376 left the screen; the newest that fit are kept. */
	for (first = 376; first >= 0; first--) {
		if (total + strlen(enc[first]) + 1 > SCREEN_SB_BYTES)
			break;
		total += strlen(enc[first]) + 1;
	}
	first++;
	cr_assert_gt(first, 0, "the byte bound must bind");
	cr_assert_eq(screen_sb_lines(a), (unsigned int)(377 - first));
	r = redraw(a);
	for (i = first; i <= 376; i++) {
		cr_assert(strncmp(r + off, enc[i], strlen(enc[i])) == 0,
		    "line %d", i);
		off += strlen(enc[i]);
		cr_assert(strncmp(r + off, "\r\n", 2) == 0);
		off += 2;
	}
	free(r);
	for (i = 0; i < 400; i++)
		free(enc[i]);
	screen_free(a);
}

/* Half a screen (the top or bottom 12 rows) of cells, each its own pen:
 * RGB from seed on, or 256-colour and attributes if seed is negative. */
static void
feed_pens_half(struct screen *s, int bottom, int seed)
{
	char	     cell[64];
	unsigned int v;
	int	     i;

	feed(s, bottom ? "\033[13H" : "\033[H");
	for (i = 0; i < 12 * 80; i++) {
		v = (unsigned int)(seed + i);
		if (seed >= 0)
			snprintf(cell, sizeof(cell), "\033[38;2;%u;%u;%um%c",
			    v & 255, (v >> 8) & 255, (v >> 16) & 255,
			    'a' + i % 26);
		else
			snprintf(cell, sizeof(cell),
			    "\033[0;%d;38;5;%d;48;2;1;%d;%dm%c", 1 + i % 9,
			    i % 256, -seed, i / 256, 'A' + i % 26);
		feed(s, cell);
	}
	feed(s, "\033[0m");
}

/* Cells keep a pen id into a table of the screen's pens: tens of
 * thousands of pens through the table (collected and renumbered when
 * full) leave the screen as if only the last ones had been used, and the
 * table bounded by the cells. */
Test(screen, pens_are_collected_and_the_screen_unchanged)
{
	struct screen *a = screen_new(24, 80), *b = screen_new(24, 80);
	char	      *ra, *rb;
	int	       k;

	feed(a, "normal \033[1;31mscreen\033[0m\r\n\033[?1049h");
	feed(b, "normal \033[1;31mscreen\033[0m\r\n\033[?1049h");
	/* Pens that go before and after those of the top half, which then
	 * move down the table. */
	for (k = 0; k < 80; k++) {
		if (k == 10) {
			feed_pens_half(a, 0, -1);
			feed_pens_half(b, 0, -1);
		}
		feed_pens_half(a, 1, k * 960);
	}
	feed_pens_half(a, 1, -2);
	feed_pens_half(b, 1, -2);
	ra = redraw(a);
	rb = redraw(b);
	cr_assert_str_eq(ra, rb);
	free(ra);
	free(rb);
	/* The cells' pens at most, in a table twice that. */
	cr_assert_lt(screen_memory(a), 2 * 24 * 80 * 8 + 4 * 2 * 24 * 80 * 17);
	screen_free(b);
	b = check_fixpoint(a, 24, 80);
	screen_free(b);
	screen_free(a);
}

/* The alternate screen is held while it is up: libvterm erases it each
 * time it comes up, so nothing on it is lost when it goes. */
Test(screen, the_alternate_screen_is_freed_when_it_goes)
{
	struct screen *a = screen_new(24, 80);
	size_t	       before, up;
	char	      *r;

	feed(a, "normal\r\n");
	before = screen_memory(a);
	feed(a, "\033[?1049h\033[44mvi here");
	up = screen_memory(a);
	cr_assert_geq(up, before + 24 * 80 * 8);
	feed(a, "\033[?1049l");
	cr_assert_eq(screen_memory(a), before);
	feed(a, "\033[?1047h");
	r = redraw(a);
	cr_assert(strstr(r, "vi here") == NULL);
	cr_assert(strstr(r, "\033[?1049h") != NULL);
	free(r);
	feed(a, "again\033[?1047l\033[?1047h");
	r = redraw(a);
	cr_assert(strstr(r, "again") == NULL);
	free(r);
	screen_free(a);
}

/* Two screens redraw the same. */
static void
same_redraw(struct screen *x, struct screen *y)
{
	char *a = redraw(x), *b = redraw(y);

	cr_assert_str_eq(a, b);
	free(a);
	free(b);
}

/* Output as ptyd takes it from the pty: into the ring, and scanned. */
static void
scan_append(struct screen *s, struct ring *r, const char *t)
{
	ring_append(r, t, strlen(t));
	screen_scan_output(s, ring_end(r) - strlen(t), (const uint8_t *)t,
	    strlen(t));
}

/* In ptyd the emulator is fed from the ring, late: the same screen as one
 * fed at once; once bytes it never saw have left the ring it starts again
 * from the oldest kept, and the modes (scanned as output came) survive. */
Test(screen, sync_from_the_ring_is_the_same_screen)
{
	struct screen *lazy = screen_new(24, 80), *eager = screen_new(24, 80);
	struct ring    r;
	const char    *t1 = "one\r\n\033[1mtwo\033[m\r\n\033[?2004h";
	const char    *t2 = "\033[5;5Hthree";
	char	      *a, line[64];
	int	       i;

	ring_init(&r, 1000, 4096);
	scan_append(lazy, &r, t1);
	feed(eager, t1);
	screen_sync(lazy, &r);
	scan_append(lazy, &r, t2);
	feed(eager, t2);
	screen_sync(lazy, &r);
	same_redraw(lazy, eager);
	/* 8 kB more through a 4 kB ring, not synced: started again. */
	for (i = 0; i < 800; i++) {
		snprintf(line, sizeof(line), "line %d\r\n", i);
		scan_append(lazy, &r, line);
	}
	screen_sync(lazy, &r);
	a = redraw(lazy);
	cr_assert(strstr(a, "line 799\r") != NULL);
	cr_assert(strstr(a, "line 100\r") == NULL);
	cr_assert(strstr(a, "three") == NULL, "%s", a);
	cr_assert(strstr(a, "\033[?2004h") != NULL, "the scanner's modes");
	free(a);
	ring_free(&r);
	screen_free(lazy);
	screen_free(eager);
}

/*
 * Output through a 4 kB ring to a screen synced only at the end, and to
 * one fed everything: the same redraw.  The lines (8 kB) push the
 * sequences before them out of the ring, so the late emulator starts
 * again after them.
 */
static void
same_after_a_rebuild(const char *before, const char *after)
{
	struct screen *lazy = screen_new(24, 80), *eager = screen_new(24, 80);
	struct ring    r;
	char	       line[64];
	int	       i;

	ring_init(&r, 1000, 4096);
	scan_append(lazy, &r, before);
	feed(eager, before);
	for (i = 0; i < 800; i++) {
		snprintf(line, sizeof(line), "line %d\r\n", i);
		scan_append(lazy, &r, line);
		feed(eager, line);
	}
	scan_append(lazy, &r, after);
	feed(eager, after);
	cr_assert_gt(ring_start(&r), 1000 + strlen(before));
	screen_sync(lazy, &r);
	same_redraw(lazy, eager);
	ring_free(&r);
	screen_free(lazy);
	screen_free(eager);
}

/*
 * A full-screen program that came up long ago (its 1049h no longer among
 * the bytes a rebuild is fed) is still on the alternate screen, with its
 * cursor hidden: not drawn on the normal screen, its lines not in the
 * scrollback.  The switches before it (more than are remembered) do not
 * change that.
 */
Test(screen, a_rebuild_keeps_the_alternate_screen_it_missed, .timeout = 10)
{
	same_after_a_rebuild("\033[?1049h\033[?1049l"
			     "\033[?1049h\033[?1049l\033[?1047h\033[?1047l"
			     "\033[?1049h\033[?25l\033[H\033[2J",
	    "\033[Htop - 10:00");
}

/* One that ended since: its last screen gone with it, the shell's prompt
 * on the normal screen, where the program came up from.  (What the
 * normal screen held before is lost with the bytes: here it was blank.) */
Test(screen, a_rebuild_leaves_the_alternate_screen_it_missed, .timeout = 10)
{
	same_after_a_rebuild("\033[?1049h\033[?25l\033[H\033[2J",
	    "\033[?25h\033[?1049l$ ");
}

/*
 * REP (CSI n b) with nothing to repeat: libvterm 0.1.4 loops forever on it
 * (its loop advances by the last glyph's width, zero here), and with it
 * ptyd's one thread.  Before vtfeed.c this test never ended.
 */
Test(screen, rep_with_nothing_to_repeat_neither_hangs_nor_draws,
    .timeout = 10)
{
	static const char *in[] = {
		"\033[b",	      /* first thing a fresh emulator sees */
		"\342\200\213\033[5b", /* after a zero-width character */
		"\033[\007b",	      /* a control inside the sequence */
		"\033[3;4b",	      /* more than one parameter */
	};
	char  *r;
	size_t i;

	for (i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		r = redraw_of(5, 10, in[i], "ok", NULL);
		cr_assert(strstr(r, "ok") != NULL, "input %zu: %s", i, r);
		free(r);
	}
}

/* What ncurses sends (xterm-256color's rep): the character, then REP. */
Test(screen, rep_repeats_the_last_character_up_to_the_row_end, .timeout = 10)
{
	struct screen *a = screen_new(5, 10), *b;
	char	      *r;

	feed(a, "ab\033[3b|\r\n\342\224\200\033[2;7b|\r\nx\033[100b");
	r = redraw(a);
	cr_assert(strstr(r, "abbbb|") != NULL, "%s", r);
	cr_assert(strstr(r, "\342\224\200\342\224\200\342\224\200|") != NULL,
	    "%s", r);
	cr_assert(strstr(r, "xxxxxxxxxx") != NULL, "%s", r);
	cr_assert(strstr(r, "xxxxxxxxxxx") == NULL, "wrapped: %s", r);
	b = check_fixpoint(a, 5, 10);
	free(r);
	screen_free(a);
	screen_free(b);
}

/* libvterm 0.1.4 writes past its 16 CSI parameters: a 17th crashed ptyd
 * (found by fuzz_screen).  The extra ones are dropped before it. */
Test(screen, csi_with_many_parameters_is_cut_to_sixteen, .timeout = 10)
{
	/* libvterm takes '[' after an intermediate as a CSI too; bold from
	 * the first 16, the 17th (underline) dropped. */
	char *r = redraw_of(5, 40,
	    "\033[::::::::::::::::::::::::::::::::::::::::>c",
	    "\033[;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;m",
	    "\033 [;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;m",
	    "\033[1;0;0;0;0;0;0;0;0;0;0;0;0;0;0;1;4mB", NULL);

	cr_assert(strstr(r, "\033[0;1mB") != NULL, "%s", r);
	free(r);
}

/* Strings never reach libvterm (its string collection reads past what it
 * is given: fuzz_screen); an ESC inside one ends it, as in xterm. */
Test(screen, strings_are_dropped_and_end_at_bel_st_or_esc, .timeout = 10)
{
	/* The second piece is malformed: dropped whole. */
	char *r = redraw_of(5, 40,
	    "\033]0;title\007a\033P+q544e\033\\b\033]11;?\033[1mB",
	    "\033[1\3312;31mC", NULL);

	cr_assert(strstr(r, "title") == NULL && strstr(r, "544e") == NULL,
	    "%s", r);
	cr_assert(strstr(r, "ab\033[0;1mBC") != NULL, "%s", r);
	free(r);
}

/* n copies of seq at the ring's end. */
static void
ring_add(struct ring *r, const char *seq, size_t n)
{
	size_t i, len = strlen(seq);

	for (i = 0; i < n; i++)
		ring_append(r, seq, len);
}

/* A ring of n copies of seq after a prompt. */
static void
ring_of(struct ring *r, const char *seq, size_t n)
{
	ring_init(r, 1000, 1 << 20);
	ring_append(r, "$ ", 2);
	ring_add(r, seq, n);
}

/*
 * What a step costs is bounded by its work, not by its bytes (issue 29):
 * 600 kB of ESC # 8 (every cell written per 3 bytes) once took seconds of
 * ptyd's one thread in one sync.  A step spends its budget and at most
 * one byte's worth more (a run of combining marks: one more mark's, whose
 * cost is the run so far), and stops short of the end.
 */
Test(screen, a_step_spends_its_budget_not_its_bytes, .timeout = 30)
{
	static const struct {
		const char *seq;
		uint64_t    over; /* what one byte may cost past the budget */
	} worst[] = {
		{ "\033#8", 2 * 24 * 80 + 1 },			 /* DECALN */
		{ "\033[?69h\033[5;75s\033[1;24r\n", 2 * 24 * 80 + 1 }, /* margins */
		{ "x\033[65535b", 2 * 24 * 80 + 1 },		 /* REP */
		{ "\033[1;24r\033[12H\033[24L", 2 * 24 * 80 + 1 }, /* IL */
		{ "\033[1;24r\033[12H\033[24M", 2 * 24 * 80 + 1 }, /* DL */
		{ "\033[J\033[1J", 2 * 24 * 80 + 1 },		 /* ED twice */
		{ "\xcc\x81", SCREEN_SLICE_WORK / 16 },	 /* U+0301 */
		{ "\033[3g\033[999I\033[999Z", 2 * 80 * 80 + 1 }, /* tabs */
	};
	struct screen *s;
	struct ring    r;
	uint64_t       w0, spent, end;
	size_t	       i;

	for (i = 0; i < sizeof(worst) / sizeof(worst[0]); i++) {
		s = screen_new(24, 80);
		ring_of(&r, worst[i].seq, (600 * 1024) / strlen(worst[i].seq));
		end = ring_end(&r);
		w0 = screen_work(s);
		cr_assert(!screen_sync_step(s, &r, end, SCREEN_SLICE_WORK),
		    "%s: one step reached the end", worst[i].seq);
		spent = screen_work(s) - w0;
		cr_assert(spent <= SCREEN_SLICE_WORK + worst[i].over,
		    "%s: a step spent %llu units", worst[i].seq,
		    (unsigned long long)spent);
		cr_assert(screen_fed(s) < end);
		ring_free(&r);
		screen_free(s);
	}
}

/* Steps add up to the whole sync, and the screen is right at the end. */
Test(screen, steps_reach_the_screen_a_whole_sync_gives, .timeout = 60)
{
	struct screen *s = screen_new(24, 80), *whole = screen_new(24, 80);
	struct ring    r;
	char	      *a, *b;
	int	       steps = 0;

	ring_of(&r, "\033#8\033[3;3Hab\r\n", 40000);
	while (!screen_sync_step(s, &r, ring_end(&r), SCREEN_SLICE_WORK))
		steps++;
	cr_assert(steps > 1, "%d steps", steps);
	cr_assert_eq(screen_fed(s), ring_end(&r));
	screen_sync(whole, &r);
	a = redraw(s);
	b = redraw(whole);
	cr_assert_str_eq(a, b);
	cr_assert(strstr(a, "EEab") != NULL, "%s", a);
	free(a);
	free(b);
	ring_free(&r);
	screen_free(s);
	screen_free(whole);
}

/* A resize that would have to catch up with costly output first drops the
 * emulator instead (resizing in a loop cost a full sync each time), and
 * the next sync rebuilds it from the ring at the new size. */
Test(screen, a_resize_far_behind_drops_the_emulator, .timeout = 60)
{
	struct screen *s = screen_new(24, 80), *bare = screen_new(24, 80);
	struct ring    r;
	uint64_t       w0;
	char	      *a;

	ring_init(&r, 1000, 1 << 20);
	ring_append(&r, "hello", 5);
	screen_sync(s, &r);
	ring_add(&r, "\033#8", 200000);
	ring_append(&r, "\033[Hbye", 7);
	w0 = screen_work(s);
	screen_resize(s, &r, 30, 100, SCREEN_SLICE_WORK);
	cr_assert(screen_work(s) - w0 <= SCREEN_SLICE_WORK + 2 * 30 * 100 + 1);
	cr_assert_eq(screen_memory(s), screen_memory(bare), "%zu held",
	    screen_memory(s));
	screen_sync(s, &r);
	a = redraw(s);
	cr_assert(strstr(a, "byeEEE") != NULL, "%s", a);
	free(a);
	ring_free(&r);
	screen_free(s);
	screen_free(bare);
}

/* Past SCREEN_CELLS_MAX a screen has no emulator: a resize there frees
 * it, and one back to a size that fits rebuilds it from the ring. */
Test(screen, a_size_past_the_cap_frees_the_emulator, .timeout = 10)
{
	struct screen *s = screen_new(24, 80), *bare = screen_new(24, 80);
	struct ring    r;
	char	      *a;

	cr_assert(screen_fits(256, 256) && !screen_fits(500, 1000));
	ring_init(&r, 1000, 4096);
	ring_append(&r, "hello", 5);
	screen_sync(s, &r);
	cr_assert(screen_memory(s) > screen_memory(bare) + 24 * 80);
	screen_resize(s, &r, 500, 1000, SCREEN_SLICE_WORK);
	cr_assert_eq(screen_memory(s), screen_memory(bare), "%zu held",
	    screen_memory(s));
	screen_resize(s, &r, 24, 80, SCREEN_SLICE_WORK);
	screen_sync(s, &r);
	a = redraw(s);
	cr_assert(strstr(a, "hello") != NULL, "%s", a);
	free(a);
	ring_free(&r);
	screen_free(s);
	screen_free(bare);
}

/* libvterm 0.1.4 kept a scroll region past a smaller screen's last row and
 * then scrolled with a negative length (fuzz_screen): a resize resets it. */
Test(screen, a_resize_below_the_scroll_region_resets_it, .timeout = 10)
{
	struct screen *a = screen_new(28, 59);
	char	      *r;

	feed(a, "\033[3r\033[5;7Hx");
	screen_resize(a, NULL, 1, 1, SCREEN_SLICE_WORK);
	feed(a, "\217\217 abc\r\nxyz\r\n");
	screen_resize(a, NULL, 4, 10, SCREEN_SLICE_WORK);
	feed(a, "\033[2;4Hq");
	r = redraw(a);
	cr_assert(strstr(r, "q") != NULL, "%s", r);
	free(r);
	screen_free(a);
}

/* Found by fuzz_screen: in insert mode, a glyph after a C1 single shift
 * (SS3, U+008F) has libvterm 0.1.4 move a rect past the row's end; the
 * grid copied it as given, past its cells (a heap overflow, seen under
 * ASan: make check-sanitizers).  Every rect is now cut to the grid. */
Test(screen, a_rect_past_the_edge_is_cut_to_the_grid, .timeout = 10)
{
	char *r = redraw_of(6, 105, "\033[4h\302\217a",
	    "\033[1;100Hb\033[3;50H\033[2Kok", NULL);

	cr_assert(strstr(r, "ok") != NULL, "%s", r);
	free(r);
}

/* libvterm decodes 6-byte UTF-8 forms: U+1FFFFF must not pass for the
 * right half of a wide character (the grid's marker), which would bring
 * back the wide character it overwrote and drop the next glyph. */
Test(screen, a_character_past_unicode_is_u_fffd, .timeout = 10)
{
	char *r = redraw_of(4, 20, "\344\270\200\033[1;2H\367\277\277\277A",
	    NULL);

	cr_assert(strstr(r, "\344\270\200") == NULL, "the wide one is back: %s",
	    r);
	cr_assert(strstr(r, "A") != NULL, "the glyph after it is gone: %s", r);
	free(r);
}

/* A burst of pens on screen grows the table; once they are gone, the
 * next time it fills it shrinks back. */
Test(screen, the_pen_table_shrinks_after_a_burst, .timeout = 10)
{
	struct screen *a = screen_new(24, 80);
	char	       sgr[64];
	size_t	       burst, after;
	int	       i;

	for (i = 0; i < 24 * 80; i++) {
		snprintf(sgr, sizeof(sgr), "\033[38;2;%d;%d;%dmx", i & 255,
		    (i >> 8) & 255, 7);
		feed(a, sgr);
	}
	burst = screen_memory(a);
	feed(a, "\033[m\033[2J\033[H");
	for (i = 0; i < 4000; i++) {
		snprintf(sgr, sizeof(sgr), "\033[38;2;%d;%d;%dmy\b", i & 255,
		    (i >> 8) & 255, 9);
		feed(a, sgr);
	}
	after = screen_memory(a);
	cr_assert_lt(after + 20000, burst, "burst %zu, after %zu", burst,
	    after);
	screen_free(a);
}
