/*
 * once.h -- at-most-once input (DESIGN 2): the ids of the last
 * ONCE_WINDOW input requests one terminal accepted, so a retry of one of
 * them is recognised and written nowhere.
 *
 * Owns: the window of one terminal (a ring of keyed 64-bit hashes,
 * allocated on the first id, 2 KiB).  Does not own: the terminal (term.c
 * keeps one per incarnation, so a restart starts a fresh window) or what a
 * duplicate answers (term.c and request.c).
 */
#ifndef PTYD_ONCE_H
#define PTYD_ONCE_H

#include <stdint.h>

#define ONCE_WINDOW 256

struct once {
	uint64_t    *h;	   /* NULL until the first id */
	unsigned int n;	   /* ids held, at most ONCE_WINDOW */
	unsigned int next; /* slot the next id overwrites */
};

/* 1 if id is among the last ONCE_WINDOW added. */
int once_seen(const struct once *, const char *id);
/* Remember id, forgetting the oldest when the window is full. */
void once_add(struct once *, const char *id);
void once_free(struct once *);

#endif /* PTYD_ONCE_H */
