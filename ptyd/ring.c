/*
 * ring.c -- the output backlog of one terminal.
 *
 * Owns: the buffer and the kept positions.  A position maps to the buffer
 * offset pos % cap, so growth lays the kept bytes out again for the new
 * cap; growth doubles, so the copying is amortised.  Does not own: the
 * policy of how far a reader may lag (term.c).
 */
#include <stdlib.h>
#include <string.h>

#include "ring.h"
#include "xmalloc.h"

void
ring_init(struct ring *r, uint64_t base, size_t max)
{
	r->buf = NULL;
	r->cap = 0;
	r->max = max > 0 ? max : 1;
	r->start = r->end = base;
	r->ext = 0;
}

void
ring_init_ext(struct ring *r, uint8_t *buf, size_t size, uint64_t base,
    uint64_t end)
{
	r->buf = buf;
	r->cap = r->max = size;
	r->end = end;
	r->start = end - base > size ? end - size : base;
	r->ext = 1;
}

void
ring_free(struct ring *r)
{
	if (!r->ext)
		free(r->buf);
	r->buf = NULL;
	r->cap = 0;
	r->start = r->end;
}

size_t
ring_copy(const struct ring *r, uint64_t pos, void *buf, size_t max)
{
	struct iovec iov[2];
	size_t	     n;
	int	     cnt, i;
	uint8_t	    *p = buf;

	n = ring_peek(r, pos, max, iov, &cnt);
	for (i = 0; i < cnt; i++) {
		memcpy(p, iov[i].iov_base, iov[i].iov_len);
		p += iov[i].iov_len;
	}
	return (n);
}

static void
ring_grow(struct ring *r)
{
	uint8_t *nbuf;
	size_t	 ncap, used = ring_used(r), off, first;

	if (r->cap == 0)
		ncap = r->max < RING_INITIAL ? r->max : RING_INITIAL;
	else
		ncap = r->cap > r->max / 2 ? r->max : r->cap * 2;
	nbuf = xmalloc(ncap);
	if (used > 0) {
		/* Copy the kept bytes to where pos % ncap puts them. */
		off = (size_t)(r->start % ncap);
		first = ncap - off < used ? ncap - off : used;
		ring_copy(r, r->start, nbuf + off, first);
		if (first < used)
			ring_copy(r, r->start + first, nbuf, used - first);
	}
	free(r->buf);
	r->buf = nbuf;
	r->cap = ncap;
}

size_t
ring_space(struct ring *r, size_t limit, uint8_t **p)
{
	size_t used, off, n;

	if (limit == 0)
		return (0);
	used = ring_used(r);
	if (r->cap == 0 || (used == r->cap && r->cap < r->max))
		ring_grow(r);
	off = (size_t)(r->end % r->cap);
	n = r->cap - off;
	/* Below max, grow rather than overwrite. */
	if (r->cap < r->max && n > r->cap - used)
		n = r->cap - used;
	if (n > limit)
		n = limit;
	*p = r->buf + off;
	return (n);
}

void
ring_commit(struct ring *r, size_t n)
{
	r->end += n;
	if (r->end - r->start > r->cap)
		r->start = r->end - r->cap;
}

void
ring_append(struct ring *r, const void *data, size_t len)
{
	const uint8_t *p = data;
	uint8_t	      *dst;
	size_t	       n;

	while (len > 0) {
		n = ring_space(r, len, &dst);
		memcpy(dst, p, n);
		ring_commit(r, n);
		p += n;
		len -= n;
	}
}

size_t
ring_peek(const struct ring *r, uint64_t pos, size_t max, struct iovec iov[2],
    int *iovcnt)
{
	size_t avail, off, first;

	*iovcnt = 0;
	/* An empty ring may have no buffer yet (cap 0). */
	if (r->cap == 0 || pos < r->start || pos >= r->end || max == 0)
		return (0);
	avail = (size_t)(r->end - pos);
	if (avail > max)
		avail = max;
	off = (size_t)(pos % r->cap);
	first = r->cap - off;
	if (first > avail)
		first = avail;
	iov[0].iov_base = r->buf + off;
	iov[0].iov_len = first;
	*iovcnt = 1;
	if (first < avail) {
		iov[1].iov_base = r->buf;
		iov[1].iov_len = avail - first;
		*iovcnt = 2;
	}
	return (avail);
}

uint8_t
ring_byte(const struct ring *r, uint64_t pos)
{
	return (r->buf[pos % r->cap]);
}

static int
utf8_cont(uint8_t c)
{
	return ((c & 0xc0) == 0x80);
}

/* Length of the sequence a lead byte starts; 0 if it cannot start one. */
static size_t
utf8_len(uint8_t c)
{
	if (c < 0x80)
		return (1);
	if (c >= 0xc2 && c <= 0xdf)
		return (2);
	if (c >= 0xe0 && c <= 0xef)
		return (3);
	if (c >= 0xf0 && c <= 0xf4)
		return (4);
	return (0);
}

uint64_t
ring_boundary(const struct ring *r, uint64_t pos)
{
	int i;

	if (pos < r->start)
		pos = r->start;
	if (pos > r->end)
		pos = r->end;
	for (i = 0; i < 3 && pos < r->end && utf8_cont(ring_byte(r, pos)); i++)
		pos++;
	return (pos);
}

uint64_t
ring_char_end(const struct ring *r, uint64_t from, uint64_t to)
{
	uint64_t q;
	size_t	 need;

	if (to <= from)
		return (to);
	/* Find the last non-continuation byte among the last four. */
	q = to;
	while (q > from && to - q < 4) {
		q--;
		if (!utf8_cont(ring_byte(r, q)))
			break;
	}
	if (utf8_cont(ring_byte(r, q)))
		return (to); /* a run of continuations: malformed */
	need = utf8_len(ring_byte(r, q));
	if (need <= 1 || q + need <= to)
		return (to); /* ASCII, malformed, or complete */
	return (q);
}
