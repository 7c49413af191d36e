/*
 * scrollback.c -- a screen's scrollback, compressed in blocks
 * (scrollback.h).
 *
 * Owns: the blocks of encoded lines, the bounds, and one deflate and one
 * inflate stream shared by every screen (ptyd has one thread; their
 * memory is per daemon, not per terminal).  Does not own: what a line
 * says (screenredraw.c encodes the cells).
 *
 * Blocks of 4 kB: on lines of source text and `ls -l` zlib keeps a third
 * of them, zstd does no better at this size and lz4 keeps half; bigger
 * blocks gain little and the open block is kept whole.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "log.h"
#include "screen.h"
#include "scrollback.h"
#include "xmalloc.h"

#define SB_BLOCK       4096 /* an open block of this many bytes closes */
#define SB_BLOCK_LINES 128  /* or of this many lines */
#define SB_LEVEL       6
#define SB_WBITS       (-12) /* raw deflate, a 4 kB window: one block */

struct sb_block {
	uint8_t	    *p;
	uint32_t     len; /* bytes at p */
	uint32_t     raw; /* bytes of its lines */
	unsigned int lines;
	uint8_t	     z;	     /* p is deflated */
	uint8_t	     packed; /* compressed, or tried to */
};

static z_stream sb_dz, sb_iz;
static int	sb_dz_ok, sb_iz_ok;

void
scrollback_init(struct scrollback *sb)
{
	memset(sb, 0, sizeof(*sb));
}

void
scrollback_free(struct scrollback *sb)
{
	size_t i;

	for (i = 0; i < sb->nb; i++)
		free(sb->b[i].p);
	free(sb->b);
	free(sb->open);
	scrollback_init(sb);
}

/* The open block becomes the newest closed one. */
static void
sb_close(struct scrollback *sb)
{
	struct sb_block *b;

	if (sb->nb == sb->capb) {
		sb->capb = sb->capb != 0 ? sb->capb * 2 : 8;
		sb->b = xreallocarray(sb->b, sb->capb, sizeof(*sb->b));
	}
	b = &sb->b[sb->nb++];
	memset(b, 0, sizeof(*b));
	b->p = xreallocarray(sb->open, 1, sb->open_len);
	b->len = b->raw = (uint32_t)sb->open_len;
	b->lines = sb->open_lines;
	sb->open = NULL;
	sb->open_len = sb->open_cap = 0;
	sb->open_lines = 0;
}

/* Whole oldest blocks none of whose lines the bounds can keep: the lines
 * after them are already as many, or as long, as the bounds allow. */
static void
sb_drop(struct scrollback *sb)
{
	size_t n = 0;

	while (n < sb->nb &&
	    (sb->lines - sb->b[n].lines >= SCREEN_SB_LINES ||
		sb->bytes - sb->b[n].raw >= SCREEN_SB_BYTES)) {
		sb->lines -= sb->b[n].lines;
		sb->bytes -= sb->b[n].raw;
		free(sb->b[n].p);
		n++;
	}
	if (n == 0)
		return;
	sb->nb -= n;
	memmove(sb->b, sb->b + n, sb->nb * sizeof(*sb->b));
}

void
scrollback_push(struct scrollback *sb, const uint8_t *line, size_t n)
{
	size_t need = n + 1, ncap;

	if (need > SCREEN_SB_BYTES)
		return;
	if (sb->open_len + need > sb->open_cap) {
		ncap = sb->open_cap != 0 ? sb->open_cap : 512;
		while (ncap < sb->open_len + need)
			ncap *= 2;
		sb->open = xreallocarray(sb->open, 1, ncap);
		sb->open_cap = ncap;
	}
	if (n != 0)
		memcpy(sb->open + sb->open_len, line, n);
	sb->open[sb->open_len + n] = '\n';
	sb->open_len += need;
	sb->open_lines++;
	sb->lines++;
	sb->bytes += need;
	if (sb->open_len >= SB_BLOCK || sb->open_lines >= SB_BLOCK_LINES)
		sb_close(sb);
	sb_drop(sb);
}

static void
sb_deflate(struct sb_block *b)
{
	uint8_t *out;
	uLong	 cap;

	b->packed = 1;
	if (!sb_dz_ok) {
		if (deflateInit2(&sb_dz, SB_LEVEL, Z_DEFLATED, SB_WBITS, 8,
			Z_DEFAULT_STRATEGY) != Z_OK)
			fatalx("scrollback: deflateInit2");
		sb_dz_ok = 1;
	} else if (deflateReset(&sb_dz) != Z_OK)
		fatalx("scrollback: deflateReset");
	cap = deflateBound(&sb_dz, b->raw);
	out = xmalloc(cap);
	sb_dz.next_in = b->p;
	sb_dz.avail_in = b->raw;
	sb_dz.next_out = out;
	sb_dz.avail_out = (uInt)cap;
	/* Text that does not shrink (random bytes) stays as it is. */
	if (deflate(&sb_dz, Z_FINISH) != Z_STREAM_END ||
	    sb_dz.total_out >= b->raw) {
		free(out);
		return;
	}
	free(b->p);
	b->len = (uint32_t)sb_dz.total_out;
	b->p = xreallocarray(out, 1, b->len);
	b->z = 1;
}

void
scrollback_pack(struct scrollback *sb)
{
	size_t i;

	for (i = 0; i < sb->nb; i++)
		if (!sb->b[i].packed)
			sb_deflate(&sb->b[i]);
}

/* A block's lines: at p, or inflated into *tmp (grown as needed).  NULL
 * if it does not inflate (only a bug of ours could do that): the redraw
 * goes without those lines rather than ptyd, and every shell, dying. */
static const uint8_t *
sb_text(const struct sb_block *b, uint8_t **tmp, size_t *tmpcap)
{
	if (!b->z)
		return (b->p);
	if (*tmpcap < b->raw) {
		*tmp = xreallocarray(*tmp, 1, b->raw);
		*tmpcap = b->raw;
	}
	if (!sb_iz_ok) {
		if (inflateInit2(&sb_iz, SB_WBITS) != Z_OK) {
			log_warnx("scrollback: inflateInit2 failed");
			return (NULL);
		}
		sb_iz_ok = 1;
	} else if (inflateReset(&sb_iz) != Z_OK) {
		log_warnx("scrollback: inflateReset failed");
		return (NULL);
	}
	sb_iz.next_in = b->p;
	sb_iz.avail_in = b->len;
	sb_iz.next_out = *tmp;
	sb_iz.avail_out = b->raw;
	if (inflate(&sb_iz, Z_FINISH) != Z_STREAM_END ||
	    sb_iz.total_out != b->raw) {
		log_warnx("scrollback: a block does not inflate; its lines are"
			  " left out");
		return (NULL);
	}
	return (*tmp);
}

/* How many of the oldest block's lines the bounds leave out (the newest
 * lines that fit both are kept, as a ring of encoded lines would). */
static unsigned int
sb_skip(const struct scrollback *sb, const uint8_t *t, size_t len)
{
	size_t	       lines = sb->lines, bytes = sb->bytes, k;
	unsigned int   skip = 0;
	const uint8_t *q;

	while (
	    len > 0 && (lines > SCREEN_SB_LINES || bytes > SCREEN_SB_BYTES)) {
		q = memchr(t, '\n', len);
		k = q != NULL ? (size_t)(q - t) + 1 : len;
		t += k;
		len -= k;
		bytes -= k;
		lines--;
		skip++;
	}
	return (skip);
}

static void
sb_lines_of(const uint8_t *t, size_t len, unsigned int skip,
    void (*fn)(const uint8_t *, size_t, void *), void *arg)
{
	const uint8_t *q;
	size_t	       n;

	while (len > 0) {
		q = memchr(t, '\n', len); /* each line ends '\n' */
		n = q != NULL ? (size_t)(q - t) : len;
		if (skip > 0)
			skip--;
		else
			fn(t, n, arg);
		n = n < len ? n + 1 : len;
		t += n;
		len -= n;
	}
}

void
scrollback_each(const struct scrollback *sb,
    void (*fn)(const uint8_t *, size_t, void *), void *arg)
{
	uint8_t	      *tmp = NULL;
	size_t	       tmpcap = 0, i;
	const uint8_t *t;
	unsigned int   skip;

	for (i = 0; i < sb->nb; i++) {
		if ((t = sb_text(&sb->b[i], &tmp, &tmpcap)) == NULL)
			continue;
		skip = i == 0 ? sb_skip(sb, t, sb->b[i].raw) : 0;
		sb_lines_of(t, sb->b[i].raw, skip, fn, arg);
	}
	if (sb->open_len > 0) {
		skip = sb->nb == 0 ? sb_skip(sb, sb->open, sb->open_len) : 0;
		sb_lines_of(sb->open, sb->open_len, skip, fn, arg);
	}
	free(tmp);
}

unsigned int
scrollback_lines(const struct scrollback *sb)
{
	uint8_t	      *tmp = NULL;
	size_t	       tmpcap = 0;
	const uint8_t *t;
	unsigned int   skip;

	if (sb->lines <= SCREEN_SB_LINES && sb->bytes <= SCREEN_SB_BYTES)
		return ((unsigned int)sb->lines);
	if (sb->nb == 0)
		skip = sb_skip(sb, sb->open, sb->open_len);
	else {
		t = sb_text(&sb->b[0], &tmp, &tmpcap);
		skip = t != NULL ? sb_skip(sb, t, sb->b[0].raw) : 0;
		free(tmp);
	}
	return ((unsigned int)(sb->lines - skip));
}

size_t
scrollback_memory(const struct scrollback *sb)
{
	size_t n = sb->capb * sizeof(*sb->b) + sb->open_cap, i;

	for (i = 0; i < sb->nb; i++)
		n += sb->b[i].len;
	return (n);
}
