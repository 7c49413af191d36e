/*
 * fcgi_guard.h -- a connection's FastCGI records are checked before
 * libfcgi reads them.
 *
 * Owns: the validity of what opens a FastCGI connection, up to and
 * including the empty PARAMS record that ends the request's parameters:
 * record headers, BEGIN_REQUEST, and every name-value pair.  libfcgi
 * trusts all of it: a name and value length whose sum passes 2^31 makes
 * its ReadParams ask malloc for a negative size and assert, which aborts
 * the whole worker process and every stream on it.  Does not own: reading
 * for libfcgi (nothing is consumed: the checker looks with MSG_PEEK) or
 * the records after the parameters (STDIN, which libfcgi reads as data).
 */
#ifndef FRONT_FCGI_GUARD_H
#define FRONT_FCGI_GUARD_H

#include <stddef.h>
#include <stdint.h>

/* What the parameters of one request may take, records and all. */
#define FCGI_GUARD_MAX		(64 * 1024)

enum fcgi_guard {
	FCGI_GUARD_OK,		/* valid through the end of the parameters */
	FCGI_GUARD_MORE,	/* valid so far, incomplete */
	FCGI_GUARD_BAD,		/* invalid: close the connection */
};

/*
 * Check buf[0..len), the first bytes of a connection.  *why (static
 * text) says what was wrong on FCGI_GUARD_BAD.  Pure: no I/O.
 */
enum fcgi_guard fcgi_guard_check(const uint8_t *buf, size_t len,
	    const char **why);

/*
 * Look at fd (MSG_PEEK, nothing consumed) until the check is OK or BAD,
 * the peer closes, or deadline_ms (CLOCK_MONOTONIC) passes.  0 when libfcgi
 * may read it; -1 otherwise, with *why.
 */
int	fcgi_guard_peek(int fd, int64_t deadline_ms, const char **why);

/* Log a refused connection: one line per 10 s at most, with the count, so
 * a flood of bad connections cannot flood the log.  Thread-safe. */
void	fcgi_guard_log(const char *why);

#endif /* FRONT_FCGI_GUARD_H */
