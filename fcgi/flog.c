/*
 * flog.c -- ptyd.fcgi's stderr log (flog.h).
 *
 * Owns: writing a line whole (lib/logtime.c builds it).  Lines are built in a
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
flog_vline(const char *level, const char *fmt, va_list ap, int with_errno)
{
	char   line[1024];
	int    err = errno;
	size_t n;

	n = logtime_line(line, sizeof(line), 1, "ptyd.fcgi", level,
	    with_errno ? err : 0, NULL, fmt, ap);
	line[n++] = '\n';
	/* Nowhere to report a failing log write. */
	if (write(STDERR_FILENO, line, n) == -1)
		(void)0;
	errno = err;
}

void
flog_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	flog_vline("info", fmt, ap, 0);
	va_end(ap);
}

void
flog_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	flog_vline("warn", fmt, ap, 0);
	va_end(ap);
}

void
flog_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	flog_vline("warn", fmt, ap, 1);
	va_end(ap);
}
