/*
 * log.h -- the daemon's log: stderr in the foreground, a file (--log) or
 * syslog once daemonized.
 *
 * Owns: where log lines go, their format, reopening the file on SIGHUP.
 * Does not own: deciding what is worth logging (every caller) or the
 * signal itself (sig.c).
 */
#ifndef PTYD_LOG_H
#define PTYD_LOG_H

#include <stdarg.h>

/* path NULL: stderr, or syslog when to_syslog is set (daemonized). */
void log_init(const char *path, int to_syslog, int verbose);
void log_reopen(void);
void log_close(void);

void log_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *, ...) __attribute__((format(printf, 1, 2)));
void fatal(const char *, ...) __attribute__((format(printf, 1, 2), noreturn));
void fatalx(const char *, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif /* PTYD_LOG_H */
