/*
 * flog.c -- ptyd.fcgi's stderr log (flog.h).
 *
 * Owns: formatting a line and writing it whole.  Lines are built in a
 * bounded stack buffer and written with one write(2), so threads never
 * interleave inside a line and no stdio lock is involved.  Each starts
 * with the time in ISO 8601 UTC, as ptyd's log lines do, so the two logs
 * of a stack read side by side.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "flog.h"
#include "logtime.h"

static void
flog_vline(const char *fmt, va_list ap, int with_errno)
{
	char line[1024];
	int  err = errno, n, m;

	n = (int)logtime_format(line, sizeof(line));
	m = snprintf(line + n, sizeof(line) - (size_t)n,
	    "ptyd.fcgi[%ld]: ", (long)getpid());
	if (m < 0 || (size_t)n + (size_t)m >= sizeof(line))
		return;
	n += m;
	m = vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	if (m < 0)
		return;
	n = (size_t)n + (size_t)m >= sizeof(line) - 2 ? (int)sizeof(line) - 2 :
							n + m;
	if (with_errno) {
		m = snprintf(line + n, sizeof(line) - (size_t)n, ": %s",
		    strerror(err));
		if (m > 0)
			n = (size_t)n + (size_t)m >= sizeof(line) - 2 ?
			    (int)sizeof(line) - 2 :
			    n + m;
	}
	line[n++] = '\n';
	/* Nowhere to report a failing log write. */
	if (write(STDERR_FILENO, line, (size_t)n) == -1)
		errno = err;
	errno = err;
}

void
flog_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	flog_vline(fmt, ap, 0);
	va_end(ap);
}

void
flog_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	flog_vline(fmt, ap, 0);
	va_end(ap);
}

void
flog_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	flog_vline(fmt, ap, 1);
	va_end(ap);
}
