/*
 * fcgi_guard.h -- the FastCGI records of a request, checked before libfcgi
 * parses them (fcgi_guard.c).
 */
#ifndef FCGI_GUARD_H
#define FCGI_GUARD_H

#include <stddef.h>
#include <stdint.h>

#include "front.h"

/* BEGIN_REQUEST and the whole PARAMS stream, headers and padding. */
#define GUARD_PARAMS_MAX (64 * 1024)
/* The whole request: params, the body (FRONT_BODY_MAX, which nginx also
 * enforces) and room for its record headers and padding. */
#define GUARD_MAX (GUARD_PARAMS_MAX + FRONT_BODY_MAX + 16 * 1024)
/* Partial deliveries waited for; nginx sends a request in one or two. */
#define GUARD_PEEKS_MAX 64

/* guard_check results. */
#define GUARD_BAD  (-1) /* malformed or too large: close it */
#define GUARD_MORE 0	/* a valid prefix: wait for more */
#define GUARD_OK   1	/* a whole, valid request */

/*
 * Check the first len bytes of a connection: BEGIN_REQUEST (responder),
 * PARAMS records to the empty one, STDIN records to the empty one, all of
 * one request id.  Bytes after the empty STDIN record are not looked at;
 * on GUARD_OK, *end (if not NULL) is where they start.  On GUARD_BAD,
 * *cause (if not NULL) says why, in a static string.
 */
int guard_check(const uint8_t *, size_t, const char **);
int guard_check_end(const uint8_t *, size_t, const char **, size_t *end);

/*
 * Wait, up to timeout_ms or until stop_fd is readable, for a whole request
 * on fd and check it without consuming any of it.  0 when libfcgi may read
 * it; -1 when the caller must close fd (logged, rate-limited, here).  A
 * request with anything queued behind it is refused: one request at a
 * time on a connection, even a kept one (libfcgi reads ahead, and would
 * drop what it read of the next request unparsed).
 */
int guard_conn(int, int, int);

#endif
