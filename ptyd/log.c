/*
 * log.c -- log lines to a file, stderr or syslog, in the OpenBSD daemon
 * idiom: log_warn appends strerror(errno), log_warnx does not; fatal and
 * fatalx log and exit 1.
 *
 * Owns: the log destination and its fd, the line format and the level.
 * Does not own: SIGHUP delivery (sig.c; main.c calls log_reopen) or the
 * default path (the settings).  Never allocates, so it is safe on the way
 * out of a failed allocation.
 *
 * Every line is one write(2) on an O_APPEND fd, so lines of concurrent
 * writers never interleave.  log_reopen opens the path anew: after
 * logrotate renames the file and sends SIGHUP, new lines go to a new file
 * at the configured path and the renamed one keeps the old lines.
 */
#include <sys/uio.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "log.h"
#include "logtime.h"

enum log_level {
	LOG_L_DEBUG,
	LOG_L_INFO,
	LOG_L_WARN,
	LOG_L_FATAL
};

static const struct {
	const char *name;
	int	    pri; /* syslog's */
} log_levels[] = {
	[LOG_L_DEBUG] = { "debug", LOG_DEBUG },
	[LOG_L_INFO] = { "info", LOG_INFO },
	[LOG_L_WARN] = { "warn", LOG_WARNING },
	[LOG_L_FATAL] = { "fatal", LOG_CRIT },
};

static const char    *log_path;	   /* a file, or NULL */
static int	      log_fd = -1; /* -1: stderr, or syslog */
static int	      log_syslog;
static enum log_level log_min = LOG_L_INFO;

void
log_init(const char *path, int to_syslog, int verbose)
{
	log_close();
	if (verbose)
		log_min = LOG_L_DEBUG;
	if (path != NULL && strcmp(path, "syslog") == 0) {
		path = NULL;
		to_syslog = 1;
	} else if (path != NULL && strcmp(path, "-") == 0) {
		path = NULL;
		to_syslog = 0;
	}
	log_path = path;
	if (path != NULL) {
		log_reopen();
		/* log_reopen said why, on stderr. */
		if (log_fd == -1) {
			log_path = NULL;
			to_syslog = 1;
		}
	}
	log_syslog = log_path == NULL && to_syslog;
	if (log_syslog)
		openlog("ptyd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

int
log_set_level(const char *name)
{
	size_t i;

	for (i = LOG_L_DEBUG; i < LOG_L_FATAL; i++) {
		if (strcmp(name, log_levels[i].name) == 0) {
			log_min = (enum log_level)i;
			return (0);
		}
	}
	return (-1);
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
		/* The old file, renamed or not, still takes our lines. */
		log_warn("log %s: cannot reopen", log_path);
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
	log_syslog = 0;
}

/* One line: "TIME ptyd[PID]: LEVEL: message[: strerror]"; syslog gets
 * the message alone (it stamps the rest). */
static void
log_vemit(enum log_level lv, int with_errno, const char *fmt, va_list ap)
{
	char	     line[2048];
	struct iovec iov[3];
	size_t	     n = 0, msg;
	int	     saved = errno;

	if (lv < log_min)
		return;
	n = logtime_line(line, sizeof(line), !log_syslog, "ptyd",
	    log_levels[lv].name, with_errno ? saved : 0, &msg, fmt, ap);
	if (log_syslog) {
		line[n] = '\0';
		syslog(log_levels[lv].pri, "%s", line);
	} else {
		line[n] = '\n';
		/* A failed log write has nowhere to be reported. */
		if (write(log_fd != -1 ? log_fd : STDERR_FILENO, line, n + 1) <
		    0)
			(void)0;
	}
	/* Why we would not start, where whoever started us looks. */
	if (lv == LOG_L_FATAL && (log_fd != -1 || log_syslog)) {
		iov[0].iov_base = (char *)"ptyd: ";
		iov[0].iov_len = 6;
		iov[1].iov_base = line + msg;
		iov[1].iov_len = n - msg;
		iov[2].iov_base = (char *)"\n";
		iov[2].iov_len = 1;
		if (writev(STDERR_FILENO, iov, 3) < 0)
			(void)0;
	}
	errno = saved;
}

void
log_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vemit(LOG_L_WARN, 1, fmt, ap);
	va_end(ap);
}

void
log_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vemit(LOG_L_WARN, 0, fmt, ap);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vemit(LOG_L_INFO, 0, fmt, ap);
	va_end(ap);
}

void
log_debug(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vemit(LOG_L_DEBUG, 0, fmt, ap);
	va_end(ap);
}

void
fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vemit(LOG_L_FATAL, 1, fmt, ap);
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vemit(LOG_L_FATAL, 0, fmt, ap);
	va_end(ap);
	exit(1);
}
