/*
 * store.h -- the SQLite mirror of live terminal state and the audit log.
 *
 * Owns: the database connection, the pending (not yet written) rows and
 * events, the write-behind flush, start-up reconciliation, and the count of
 * database errors.  Does not own: any decision (the in-memory registry in
 * term.c is authoritative; nothing here is ever read back to decide), nor
 * the flush timer (mirror.c calls store_flush about once a second).
 *
 * Holds no copy of a terminal's row beyond the next commit: the caller
 * puts a snapshot of each changed terminal at flush time, and puts every
 * terminal when store_rewrite_due says the database needs them all.
 *
 * Never blocks the loop on the database: busy_timeout is 0, a locked,
 * read-only, full or missing database keeps the pending work (bounded) and
 * counts the failure, logged once per outage, and the next flush retries.
 * Pending events beyond the bound are dropped and counted, and a marker
 * event says how many were dropped once the database accepts writes again.
 */
#ifndef PTYD_STORE_H
#define PTYD_STORE_H

#include <stdint.h>

#include "termstate.h"

struct store;

/* The schema, generated at build time from sql/schema.sql (schema.c). */
extern const char store_schema_sql[];

/* A snapshot of one terminal incarnation, as its row in `terminals`.
 * Times are Unix seconds; a negative time or NULL string means SQL NULL. */
struct store_term {
	int64_t	    id; /* from store_next_id */
	const char *sid;
	const char *owner;
	int	    pid;
	const char *workspace;
	int	    rows;
	int	    cols;
	double	    started_at;
	double	    last_activity;
	int	    subscribers;
	double	    unwatched_since; /* < 0: NULL (watched) */
	enum term_dbstate state;
	double	    ended_at;	     /* < 0: NULL */
	int	    has_exit_code;
	int	    exit_code;
	const char *end_reason; /* NULL while running */
	uint64_t    bytes_in;
	uint64_t    bytes_out;
};

/*
 * Open (creating if needed) the database at path, apply the schema, set WAL,
 * and close rows left `running` by an earlier daemon as `lost` (with an
 * event).  A database that cannot be opened is not fatal: the store keeps
 * trying at each flush.  Returns NULL only when out of memory.
 */
struct store *store_open(const char *path, double now);

/* Flush what is pending (one last try) and close. NULL is a no-op. */
void store_close(struct store *);

/* A terminal id never used before in this database (nor by this process). */
int64_t store_next_id(struct store *);

/* Queue a snapshot of the row, kept until the next commit; replaces what
 * is pending for the same id.  The strings are copied. */
void store_put_term(struct store *, const struct store_term *);

/* Queue an audit event.  term_id 0 means none; actor and detail may be
 * NULL.  The strings are copied. */
void store_event(struct store *, double at, const char *sid, int64_t term_id,
    enum term_event kind, const char *actor, const char *detail);
/* The same with the terminal's owner, which is no column of the event
 * but goes to the hook of store_set_committed. */
void store_event_owned(struct store *, double at, const char *sid,
    int64_t term_id, const char *owner, enum term_event kind, const char *actor,
    const char *detail);

/* An event as a commit wrote it: seq is its id; NULL strings are SQL NULL
 * (owner: unknown or none).  Valid during the call only. */
struct store_done {
	int64_t	    seq;
	double	    at;
	const char *kind;
	int64_t	    term_id; /* 0: none */
	const char *sid;
	const char *owner;
	const char *actor;
	const char *detail;
};

/*
 * Before store_open: cb is called, after each commit, once for each event
 * that commit wrote, in seq order (the reconciliation's at open, every
 * flush's, the one at store_close's).  A transaction that fails calls it
 * for none: the events are told of when a retry commits them.  NULL (the
 * default): nothing is kept for it.
 */
void store_set_committed(void (*cb)(const struct store_done *));

/*
 * Write everything pending in one transaction.  Returns 0 (including when
 * there was nothing to do), or -1 when the database refused; what was
 * pending stays pending, and the failure is counted.
 */
int store_flush(struct store *, double now);
/* The same, writing no more than max_events of the pending events (the
 * oldest; 0: all): a burst of thousands is written over several flushes,
 * none of which holds the loop long.  The rest stays pending. */
int store_flush_some(struct store *, double now, size_t max_events);

/*
 * Whether the caller must put every terminal's row before the next flush:
 * a reconnect after a failure, a file deleted or moved under ptyd (checked
 * here, one stat), or a live row dropped at the pending bound.  Asking
 * clears it.
 */
int store_rewrite_due(struct store *);

/* Flushes that failed, since start (health's db_errors). */
uint64_t store_errors(const struct store *);
/* Writes are failing now: several flushes in a row failed, or the mirror
 * is off (a newer schema).  health's db_failing. */
int store_failing(const struct store *);
/* Rows an earlier ptyd left running, closed as lost since start. */
uint64_t store_lost(const struct store *);

/* Whether anything waits to be written (for a flush timer that sleeps). */
int store_pending(const struct store *);

/*
 * Before store_open: the terminals a keeper still holds, whose rows stay
 * `running` at start-up's reconciliation (DESIGN 10).  The ids are kept.
 */
void store_set_live(const int64_t *ids, size_t n);
/* Ids of new terminals are above id (one a keeper holds, maybe unwritten). */
void store_reserve_id(struct store *, int64_t id);

/*
 * Recordings (DESIGN 4): a row of `recordings` as ptyd/record.c holds it.
 * Times are Unix seconds (< 0: NULL); "" strings are NULL but for sid,
 * owner and file.
 */
struct store_rec {
	int64_t	     id;
	int64_t	     terminal_id;
	char	     sid[129];	 /* PROTO_SID_MAX + 1 */
	char	     owner[257]; /* PROTO_OWNER_MAX + 1 */
	unsigned int part;
	char	     file[64];
	double	     started_at;
	double	     ended_at;
	uint64_t     bytes;
	char	     sha256[65];
	char	     state[16]; /* recording, finished, cut, removed */
	char	     cut_reason[33];
	int	     cols;
	int	     rows;
};

/* Queue the row (replacing what is pending for its id), written by the
 * next flush in its transaction. */
void store_put_rec(struct store *, const struct store_rec *);
/* Every row, oldest id first, to cb: at start only (ptyd's memory is the
 * truth from then on).  -1 if the database is not readable now. */
int store_recs_load(struct store *,
    void (*cb)(const struct store_rec *, void *), void *arg);

#endif /* PTYD_STORE_H */
