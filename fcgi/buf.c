/*
 * buf.c -- bounded growable byte buffers (buf.h).
 *
 * Owns: allocation and the bound check.  Does not own: what is written into
 * a buffer.  The contents are not NUL-terminated unless the caller adds one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

void
buf_init(struct buf *b, size_t max)
{
	b->p = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
	b->failed = 0;
}

void
buf_free(struct buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = 0;
	b->cap = 0;
	b->failed = 0;
}

void
buf_reset(struct buf *b)
{
	b->len = 0;
	b->failed = 0;
}

/* Make room for n more bytes.  0, or -1 with errno ENOMEM or EMSGSIZE. */
int
buf_reserve(struct buf *b, size_t n)
{
	size_t want, cap;
	char  *p;

	if (b->failed) {
		errno = EMSGSIZE;
		return (-1);
	}
	if (n > b->max || b->len > b->max - n) {
		b->failed = 1;
		errno = EMSGSIZE;
		return (-1);
	}
	want = b->len + n;
	if (want <= b->cap)
		return (0);
	cap = b->cap != 0 ? b->cap : 256;
	while (cap < want)
		cap = cap > b->max / 2 ? b->max : cap * 2;
	if ((p = realloc(b->p, cap)) == NULL) {
		b->failed = 1;
		errno = ENOMEM;
		return (-1);
	}
	b->p = p;
	b->cap = cap;
	return (0);
}

int
buf_add(struct buf *b, const void *data, size_t n)
{
	if (buf_reserve(b, n) == -1)
		return (-1);
	if (n != 0)
		memcpy(b->p + b->len, data, n);
	b->len += n;
	return (0);
}

int
buf_adds(struct buf *b, const char *s)
{
	return (buf_add(b, s, strlen(s)));
}

int
buf_addc(struct buf *b, char c)
{
	return (buf_add(b, &c, 1));
}

int
buf_addu64(struct buf *b, uint64_t v)
{
	char   tmp[20];
	size_t i = sizeof(tmp);

	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	return (buf_add(b, tmp + i, sizeof(tmp) - i));
}

int
buf_addi64(struct buf *b, int64_t v)
{
	if (v < 0) {
		if (buf_addc(b, '-') == -1)
			return (-1);
		return (buf_addu64(b, (uint64_t)0 - (uint64_t)v));
	}
	return (buf_addu64(b, (uint64_t)v));
}
