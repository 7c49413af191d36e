/*
 * flog.h -- ptyd.fcgi's log: one line per event on stderr, which is the
 * fcgi_log file when one is set (else wherever the web server or the
 * stack script sends it).
 *
 * Owns: the line format ("ptyd.fcgi[pid]: message") and the log file's
 * descriptor, kept on fd 2 so that anything else written to stderr lands
 * there too.  Does not own: the SIGHUP that asks for a reopen (server.c,
 * pool.c).
 * Safe from any thread: each line is one write(2).
 */
#ifndef FRONT_FLOG_H
#define FRONT_FLOG_H

/*
 * Log to path from now on (opened for append, 0600, onto fd 2); NULL or
 * "-" keeps stderr.  0, or -1 with errno (stderr untouched).
 */
int flog_open(const char *path);
/* After logrotate moved the file: path opened anew onto fd 2, or, if it
 * cannot be, a warning in the old one, which goes on taking lines. */
void flog_reopen(void);

void flog_info(const char *, ...) __attribute__((format(printf, 1, 2)));
void flog_warnx(const char *, ...) __attribute__((format(printf, 1, 2)));
/* Like flog_warnx, with ": strerror(errno)" appended. */
void flog_warn(const char *, ...) __attribute__((format(printf, 1, 2)));

#endif /* FRONT_FLOG_H */
