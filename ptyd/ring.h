/*
 * ring.h -- a terminal's output backlog: bytes at absolute u64 positions.
 *
 * Owns: the bytes kept, the positions [start, end) they occupy, and the
 * buffer behind them, allocated lazily as output arrives and doubled when
 * full up to max, so an idle terminal costs little.  Once the buffer is at
 * max, new bytes overwrite the oldest.  Does not own: who may still need
 * the old bytes (term.c limits how much it reads while viewers lag) or any
 * I/O (termio.c reads the pty straight into ring_space; connstream.c
 * writes straight from ring_peek).
 *
 * Also owns the UTF-8 rules on positions: where a character starts
 * (ring_boundary) and where a span may end without cutting one
 * (ring_char_end).
 */
#ifndef PTYD_RING_H
#define PTYD_RING_H

#include <sys/uio.h>

#include <stddef.h>
#include <stdint.h>

#define RING_INITIAL 4096

struct ring {
	uint8_t *buf;
	size_t	 cap;	/* allocated bytes, 0 until the first output */
	size_t	 max;	/* cap never grows past this */
	uint64_t start; /* oldest kept position */
	uint64_t end;	/* position after the newest byte */
	int	 ext;	/* buf is someone else's (a memfd): never grown
			   or freed here */
};

/* An empty ring whose first byte will be at position base. */
void ring_init(struct ring *, uint64_t base, size_t max);
void ring_free(struct ring *); /* releases the buffer, keeps positions */
/*
 * A ring over a buffer of size bytes that outlives this process (the
 * terminal's memfd, termmem.h), holding [max(base, end - size), end).
 */
void ring_init_ext(struct ring *, uint8_t *buf, size_t size, uint64_t base,
    uint64_t end);

static inline uint64_t
ring_start(const struct ring *r)
{
	return (r->start);
}
static inline uint64_t
ring_end(const struct ring *r)
{
	return (r->end);
}
static inline size_t
ring_used(const struct ring *r)
{
	return ((size_t)(r->end - r->start));
}

/*
 * A contiguous span to read at most limit new bytes into, at *p; returns
 * its length (0 only if limit is 0).  Grows the buffer when it is full and
 * below max; below max it never offers space that would overwrite kept
 * bytes.  Follow with ring_commit of what was actually written.
 */
size_t ring_space(struct ring *, size_t limit, uint8_t **p);
void   ring_commit(struct ring *, size_t n);
/* Copying append (tests, and short writes of our own). */
void ring_append(struct ring *, const void *, size_t);

/*
 * The kept bytes from pos, at most max of them, as one or two slices in
 * iov; returns their count in bytes (0 when pos is outside [start, end)).
 */
size_t ring_peek(const struct ring *, uint64_t pos, size_t max,
    struct iovec iov[2], int *iovcnt);
/* Copy out (tests): like ring_peek into buf. */
size_t ring_copy(const struct ring *, uint64_t pos, void *buf, size_t max);

/* The byte at a kept position. */
uint8_t ring_byte(const struct ring *, uint64_t pos);

/*
 * The first UTF-8 character boundary at or after pos (pos clamped to
 * [start, end]): skips at most three continuation bytes.
 */
uint64_t ring_boundary(const struct ring *, uint64_t pos);

/*
 * The largest position e in (from, to] such that [from, e) does not end
 * inside a well-formed but incomplete multi-byte character; `to` itself if
 * the span ends on a boundary or in malformed bytes.  Returns from when the
 * whole span is the start of one incomplete character.
 */
uint64_t ring_char_end(const struct ring *, uint64_t from, uint64_t to);

#endif /* PTYD_RING_H */
