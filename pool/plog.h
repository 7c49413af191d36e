/*
 * plog.h -- ptyd-pool's log: its own lines, and the lines its children
 * print, each under the name of the pool and the program it came from.
 *
 * Owns: the format of a line (lib/logtime.c's, one write(2) each, to
 * stderr: the journal under systemd, a file in the foreground) and
 * making a child's text safe to put there (cut at a bound, lib/safetext.c:
 * controls, directional overrides and malformed UTF-8 shown as '?',
 * one prefix a line so no pool can write a line that reads as another's
 * or as the master's).  Does not own the pipes
 * (pool/proc.c).
 */
#ifndef PTYD_POOL_PLOG_H
#define PTYD_POOL_PLOG_H

#include <stddef.h>

/* A child's line longer than this is cut (and says so). */
#define PLOG_LINE_MAX 1024

void plog_info(const char *, ...) __attribute__((format(printf, 1, 2)));
void plog_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
void plog_warnx(const char *, ...) __attribute__((format(printf, 1, 2)));
void plog_fatal(const char *, ...)
    __attribute__((format(printf, 1, 2), noreturn));
void plog_fatalx(const char *, ...)
    __attribute__((format(printf, 1, 2), noreturn));

/* One line a child printed (without its newline), from pool name's
 * program prog with pid; cut says it was longer than PLOG_LINE_MAX. */
void plog_child(const char *name, const char *prog, long pid, const char *text,
    size_t len, int cut);

#endif /* PTYD_POOL_PLOG_H */
