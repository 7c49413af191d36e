/*
 * flog.h -- ptyd.fcgi's log: one line per event on stderr, which the web
 * server or the stack script sends to the fcgi log file.
 *
 * Owns: the line format ("ptyd.fcgi[pid]: message").  Does not own: where
 * stderr goes.  Safe from any thread: each line is one write(2).
 */
#ifndef FRONT_FLOG_H
#define FRONT_FLOG_H

void flog_info(const char *, ...) __attribute__((format(printf, 1, 2)));
void flog_warnx(const char *, ...) __attribute__((format(printf, 1, 2)));
/* Like flog_warnx, with ": strerror(errno)" appended. */
void flog_warn(const char *, ...) __attribute__((format(printf, 1, 2)));

#endif /* FRONT_FLOG_H */
