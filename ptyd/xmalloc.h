/*
 * xmalloc.h -- allocation that cannot fail: out of memory is fatal in ptyd
 * (STYLE: fatal only at startup, on a broken invariant, or out of memory).
 *
 * Owns: nothing but the wrappers.  Does not own: bounding what is
 * allocated (every caller bounds its buffers).
 */
#ifndef PTYD_XMALLOC_H
#define PTYD_XMALLOC_H

#include <stddef.h>

void *xmalloc(size_t);
void *xcalloc(size_t, size_t);
void *xreallocarray(void *, size_t, size_t);
char *xstrdup(const char *);
int xasprintf(char **, const char *, ...) __attribute__((format(printf, 2, 3)));

#endif /* PTYD_XMALLOC_H */
