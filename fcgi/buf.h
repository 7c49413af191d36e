/*
 * buf.h -- a growable byte buffer with a hard bound.
 *
 * Owns: memory for text that ptyd.fcgi builds before writing it (response
 * bodies, SSE events).  Does not own: any I/O.  Every buffer has a limit set
 * when it is initialised; an append past it fails and marks the buffer, so a
 * caller can build a whole event and check once.
 */
#ifndef FRONT_BUF_H
#define FRONT_BUF_H

#include <stddef.h>
#include <stdint.h>

struct buf {
	char  *p;
	size_t len;
	size_t cap;
	size_t max;    /* hard bound on len */
	int    failed; /* ENOMEM or over max seen */
};

void buf_init(struct buf *, size_t max);
void buf_free(struct buf *);  /* keeps the struct usable */
void buf_reset(struct buf *); /* len = 0, failed = 0 */
int  buf_reserve(struct buf *, size_t n);
int  buf_add(struct buf *, const void *, size_t);
int  buf_adds(struct buf *, const char *);
int  buf_addc(struct buf *, char);
int  buf_addu64(struct buf *, uint64_t);
int  buf_addi64(struct buf *, int64_t);

#endif /* FRONT_BUF_H */
