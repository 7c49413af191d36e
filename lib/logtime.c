/*
 * logtime.c -- a log line of either daemon (logtime.h).
 *
 * Owns: the line's format: the time, the program and pid, the level, the
 * message, errno's text.  Does not own: where lines go (ptyd/log.c,
 * fcgi/flog.c) or levels (each daemon's own).  Never allocates.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "logtime.h"

size_t
logtime_format(char *buf, size_t size)
{
	struct timespec ts;
	struct tm	tm;
	size_t		n;
	int		r;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	if ((n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm)) == 0)
		return (0);
	r = snprintf(buf + n, size - n, ".%03ldZ ", ts.tv_nsec / 1000000);
	if (r < 0 || (size_t)r >= size - n)
		return (0);
	return (n + (size_t)r);
}

/* Append what fmt says at line[*n], never past size - 2. */
static void
logtime_vadd(char *line, size_t size, size_t *n, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

static void
logtime_vadd(char *line, size_t size, size_t *n, const char *fmt, va_list ap)
{
	int r;

	if (*n >= size - 2)
		return;
	r = vsnprintf(line + *n, size - 1 - *n, fmt, ap);
	if (r > 0)
		*n += (size_t)r;
	if (*n > size - 2)
		*n = size - 2;
}

static void logtime_add(char *line, size_t size, size_t *n, const char *fmt,
    ...) __attribute__((format(printf, 4, 5)));

static void
logtime_add(char *line, size_t size, size_t *n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	logtime_vadd(line, size, n, fmt, ap);
	va_end(ap);
}

size_t
logtime_line(char *line, size_t size, int stamp, const char *prog,
    const char *level, int err, size_t *msg, const char *fmt, va_list ap)
{
	size_t n = 0;

	if (stamp) {
		n = logtime_format(line, size);
		logtime_add(line, size, &n, "%s[%ld]: ", prog, (long)getpid());
		if (level != NULL)
			logtime_add(line, size, &n, "%s: ", level);
	}
	if (msg != NULL)
		*msg = n;
	logtime_vadd(line, size, &n, fmt, ap);
	if (err != 0)
		logtime_add(line, size, &n, ": %s", strerror(err));
	return (n);
}
