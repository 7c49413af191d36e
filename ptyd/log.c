/*
 * log.c -- log lines to stderr, a file or syslog, in the OpenBSD daemon
 * idiom: log_warn appends strerror(errno), log_warnx does not; fatal and
 * fatalx log and exit 1.
 *
 * Owns: the log destination and its fd.  Does not own: SIGHUP delivery
 * (sig.c calls log_reopen).  Never allocates, so it is safe on the way out
 * of a failed allocation.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "log.h"
#include "logtime.h"

static const char *log_path;
static int	   log_fd = -1; /* -1: stderr (or syslog) */
static int	   log_syslog;
static int	   log_verbose;

void
log_init(const char *path, int to_syslog, int verbose)
{
	log_path = path;
	log_syslog = path == NULL && to_syslog;
	log_verbose = verbose;
	if (log_syslog)
		openlog("ptyd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
	log_reopen();
}

/* Called at start and on SIGHUP, so logrotate can move the file away. */
void
log_reopen(void)
{
	int fd;

	if (log_path == NULL)
		return;
	fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd == -1) {
		log_warn("open %s", log_path);
		return;
	}
	if (log_fd != -1)
		close(log_fd);
	log_fd = fd;
}

void
log_close(void)
{
	if (log_fd != -1)
		close(log_fd);
	log_fd = -1;
	if (log_syslog)
		closelog();
}

static void
log_vemit(int pri, const char *prefix, const char *fmt, va_list ap,
    int with_errno)
{
	char   line[2048];
	size_t n = 0;
	int    r, saved = errno;

	if (!log_syslog) {
		n = logtime_format(line, sizeof(line));
		r = snprintf(line + n, sizeof(line) - n,
		    "ptyd[%ld]: ", (long)getpid());
		if (r > 0)
			n += (size_t)r;
	}
	if (prefix != NULL && n < sizeof(line)) {
		r = snprintf(line + n, sizeof(line) - n, "%s", prefix);
		if (r > 0)
			n += (size_t)r;
	}
	if (n < sizeof(line)) {
		r = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
		if (r > 0)
			n += (size_t)r;
	}
	if (with_errno && n < sizeof(line)) {
		r = snprintf(line + n, sizeof(line) - n, ": %s",
		    strerror(saved));
		if (r > 0)
			n += (size_t)r;
	}
	if (n >= sizeof(line) - 1)
		n = sizeof(line) - 2;
	if (log_syslog) {
		line[n] = '\0';
		syslog(pri, "%s", line);
	} else {
		line[n++] = '\n';
		/* A failed log write has nowhere to be reported. */
		if (write(log_fd != -1 ? log_fd : STDERR_FILENO, line, n) < 0)
			(void)0;
	}
	errno = saved;
}

void
log_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vemit(LOG_WARNING, NULL, fmt, ap, 1);
	va_end(ap);
}

void
log_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vemit(LOG_WARNING, NULL, fmt, ap, 0);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vemit(LOG_INFO, NULL, fmt, ap, 0);
	va_end(ap);
}

void
log_debug(const char *fmt, ...)
{
	va_list ap;

	if (!log_verbose)
		return;
	va_start(ap, fmt);
	log_vemit(LOG_DEBUG, "debug: ", fmt, ap, 0);
	va_end(ap);
}

void
fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vemit(LOG_CRIT, "fatal: ", fmt, ap, 1);
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vemit(LOG_CRIT, "fatal: ", fmt, ap, 0);
	va_end(ap);
	exit(1);
}
