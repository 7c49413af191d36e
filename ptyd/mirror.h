/*
 * mirror.h -- ptyd's side of the SQLite mirror: which terminal rows are
 * dirty, the audit events, and the write-behind flush timer.
 *
 * Owns: the store handle, the dirty list (each changed terminal's snapshot
 * handed to the store once per flush, however often it changed), the age
 * of the oldest change not yet written, and the 1 s flush timer (always
 * running while there is a store: an idle tick costs one stat).  Does not
 * own: the database (store.c) or any decision (nothing is read back).
 */
#ifndef PTYD_MIRROR_H
#define PTYD_MIRROR_H

#include <stddef.h>
#include <stdint.h>

#include "termstate.h"

struct store;
struct term;

/* Before store_open: the audit_log setting (auditlog.c); unless none,
 * every event goes out as a line after the commit that wrote it.  0, or
 * -1 for a value auditlog_dest_parse refuses. */
int mirror_log_init(const char *dest);

/* st may be NULL (unit tests): then nothing is mirrored. */
void mirror_init(struct store *st);
void mirror_done(void);

/* An incarnation id never used before (store_next_id, or a counter). */
int64_t mirror_next_id(void);

/* t's row changed: push it at the next flush. */
void mirror_mark(struct term *t);
/* t is being freed: queue its last row now. */
void mirror_forget(struct term *t, int64_t now);
/* An audit event about t at now (monotonic). */
void mirror_event(struct term *t, int64_t now, enum term_event kind,
    const char *actor, const char *detail);
/* One accepted input request of len bytes, arrived at now: its own
 * "input" event (the byte count, never the text). */
/* An event of the daemon's own, tied to no terminal (upgrade_failed). */
void mirror_daemon_event(int64_t now, enum term_event kind, const char *detail);
void mirror_input(struct term *t, int64_t now, const char *actor, size_t len);

/* Shares (share.c): a monotonic time as the database's Unix seconds; a
 * share's row as it stands now (queued at once: a share changes twice in
 * its life); an id given out by a ptyd before, never to be again. */
struct store_share;
double mirror_wall_s(int64_t mono);
void   mirror_share(const struct store_share *, int64_t now);
void   mirror_reserve_id(int64_t id);

/* Push every dirty row and write what is pending (the timer's work;
 * shutdown calls it once more). */
void	 mirror_flush(int64_t now);
uint64_t mirror_db_errors(void);
/* store_failing; 0 without a store. */
int	 mirror_db_failing(void);
uint64_t mirror_db_lost(void);
/* How long the oldest change not yet in the database has waited (us). */
int64_t mirror_db_lag(int64_t now);

#endif /* PTYD_MIRROR_H */
