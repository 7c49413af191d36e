/*
 * termmem.h -- a terminal's memfd: its header (lib/termhdr.h) and its ring
 * in shared memory that outlives this process (DESIGN 10).
 *
 * Owns: making, mapping, checking and unmapping one; the in-flight read's
 * recovery; copying a terminal's state into its header.  Does not own the
 * terminal (term.c) or the read itself (termio.c).
 */
#ifndef PTYD_TERMMEM_H
#define PTYD_TERMMEM_H

#include <stddef.h>
#include <stdint.h>

#include "termhdr.h"

struct term;

/* A new memfd of TERMHDR_SIZE + ring_size bytes, mapped: 0, or -1 (errno). */
int termmem_create(size_t ring_size, int *fd, struct termhdr **);
/*
 * Map a memfd a keeper handed back: -1 with *why set when it is not one
 * this binary can read (magic, min_reader, sizes).
 */
int  termmem_map(int fd, struct termhdr **, const char **why);
void termmem_unmap(struct termhdr *);
static inline uint8_t *
termmem_ring(struct termhdr *h)
{
	return ((uint8_t *)h + TERMHDR_SIZE);
}
/*
 * Before the first read of a terminal taken over: settle a read the last
 * ptyd was killed in.  Returns the bytes it recovers (0 if none was in
 * flight or it never took place).
 */
uint64_t termmem_recover(struct termhdr *);
/* The terminal's state into its header (called with every mirror_mark). */
void termmem_sync(struct term *);
/* Fill the header of a terminal about to be spawned. */
void termmem_init(struct term *);

#endif /* PTYD_TERMMEM_H */
