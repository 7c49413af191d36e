/*
 * plog.c -- ptyd-pool's log lines (plog.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "logtime.h"
#include "plog.h"
#include "safetext.h"

static void __attribute__((format(printf, 3, 0)))
plog_vline(const char *level, int err, const char *fmt, va_list ap)
{
	char   line[PLOG_LINE_MAX + 512];
	size_t n;

	n = logtime_line(line, sizeof(line), 1, "ptyd-pool", level, err, NULL,
	    fmt, ap);
	line[n++] = '\n';
	(void)!write(STDERR_FILENO, line, n);
}

void
plog_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	plog_vline("info", 0, fmt, ap);
	va_end(ap);
}

void
plog_warn(const char *fmt, ...)
{
	va_list ap;
	int	err = errno;

	va_start(ap, fmt);
	plog_vline("warn", err, fmt, ap);
	va_end(ap);
}

void
plog_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	plog_vline("warn", 0, fmt, ap);
	va_end(ap);
}

void
plog_fatal(const char *fmt, ...)
{
	va_list ap;
	int	err = errno;

	va_start(ap, fmt);
	plog_vline("fatal", err, fmt, ap);
	va_end(ap);
	exit(1);
}

void
plog_fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	plog_vline("fatal", 0, fmt, ap);
	va_end(ap);
	exit(1);
}

void
plog_child(const char *name, const char *prog, long pid, const char *text,
    size_t len, int cut)
{
	char safe[PLOG_LINE_MAX + 1];

	if (len > PLOG_LINE_MAX)
		len = PLOG_LINE_MAX;
	/* The child's bytes are the account's: nothing in them may end
	 * our line early or steer a terminal that reads the log. */
	safetext(safe, text, len);
	plog_info("%s %s[%ld]: %s%s", name, prog, pid, safe,
	    cut ? " [cut]" : "");
}
