/*
 * log.h -- the daemon's log: a file (the default, <state_dir>/ptyd.log),
 * stderr ("-") or syslog ("syslog").
 *
 * Owns: where log lines go, their format (`2026-12-04T05:40:00.123Z
 * ptyd[PID]: LEVEL: message`, ISO 8601 UTC), the level below which lines
 * are dropped, and reopening the file on SIGHUP.  Does not own: deciding
 * what is worth logging (every caller), the default path (the settings)
 * or the signal itself (sig.c, main.c).
 */
#ifndef PTYD_LOG_H
#define PTYD_LOG_H

#include <stdarg.h>

/*
 * path: a file (appended to, created 0600), "-" for stderr, "syslog"; NULL
 * is stderr, or syslog when to_syslog is set.  verbose lowers the level
 * to debug.  A file that cannot be opened is said on stderr and the log
 * goes to syslog instead: never nowhere.
 */
void log_init(const char *path, int to_syslog, int verbose);
/* "debug", "info" or "warn": 0, or -1 for anything else. */
int log_set_level(const char *);
/* Open the file again at its path (logrotate moved it away). */
void log_reopen(void);
void log_close(void);

void log_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *, ...) __attribute__((format(printf, 1, 2)));
/* Logged, and also said on stderr when the log is not stderr (whoever
 * started us sees why we would not start); then exit 1. */
void fatal(const char *, ...) __attribute__((format(printf, 1, 2), noreturn));
void fatalx(const char *, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif /* PTYD_LOG_H */
