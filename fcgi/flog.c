/*
 * flog.c -- ptyd.fcgi's log (flog.h).
 *
 * Owns: writing a line whole (lib/logtime.c builds it), and the fcgi_log
 * file.  Lines are built in a bounded stack buffer and written with one
 * write(2), so threads never interleave inside a line and no stdio lock is
 * involved.  Each starts with the time in ISO 8601 UTC, as ptyd's log
 * lines do, so the two logs of a stack read side by side.
 *
 * The file is opened with O_APPEND and put on fd 2 (dup2), where every
 * line goes: a reopen replaces fd 2 in one step, so a line written by
 * another thread meanwhile goes whole to the old file or the new one.
 * Each process reopens its own (the master passes SIGHUP on, server.c;
 * a worker's main thread reads it, pool.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "flog.h"
#include "logtime.h"

/* The fcgi_log file, set once at start before any thread; "" for none. */
static char flog_path[PATH_MAX];

/* path opened for append onto fd 2.  0, or -1 with errno. */
static int
flog_dup(const char *path)
{
	int fd, err;

	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY,
	    0600);
	if (fd == -1)
		return (-1);
	if (fd != STDERR_FILENO && dup2(fd, STDERR_FILENO) == -1) {
		err = errno;
		close(fd);
		errno = err;
		return (-1);
	}
	if (fd != STDERR_FILENO)
		close(fd);
	return (0);
}

int
flog_open(const char *path)
{
	if (path == NULL || *path == '\0' || strcmp(path, "-") == 0)
		return (0);
	if (strlen(path) >= sizeof(flog_path)) {
		errno = ENAMETOOLONG;
		return (-1);
	}
	if (flog_dup(path) == -1)
		return (-1);
	snprintf(flog_path, sizeof(flog_path), "%s", path);
	return (0);
}

void
flog_reopen(void)
{
	if (flog_path[0] != '\0' && flog_dup(flog_path) == -1)
		flog_warn("fcgi_log %s: cannot reopen; still the old file",
		    flog_path);
}

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
