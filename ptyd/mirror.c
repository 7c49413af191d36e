/*
 * mirror.c -- feed the SQLite mirror (store.c) from the terminal registry.
 *
 * Owns: the store handle, the dirty list, the age of the oldest change not
 * yet written, and the flush timer.  Changes are marked as they happen
 * (term.c calls mirror_mark): the dirty list holds the terminals, not
 * copies of them, and at each flush the mirror takes one snapshot of each
 * dirty terminal and hands it to the store, which keeps its copy only
 * until it is written.  So a terminal streaming output costs one row
 * update a second, not one per read.  When the store needs every row again
 * (store_rewrite_due: a reconnect, a file deleted under us), every
 * terminal in memory is marked.  Each accepted input request is its own
 * "input" event (actor, time of arrival, byte count), never merged.  The
 * timer ticks every second whether or not anything is
 * pending: an idle tick is one stat (store_flush asks SQLite whether the
 * file was deleted or replaced), and it is what rewrites the live rows
 * into a database an operator deleted while nothing changed.  Idle
 * terminals add nothing to it.  A tick writes at most MIRROR_CHUNK rows
 * and runs again at the next loop turn while terminals are left dirty; a
 * rewrite and the flush at shutdown are written whole.  A failed flush
 * keeps its work (store.c) and is retried at the next tick.  After each
 * commit, every event it wrote goes out as one audit log line
 * (mirror_committed, auditlog.c): a row that exists, with its seq, once;
 * a failed flush sends nothing and its retry sends what it commits.
 * Does not own: SQL (store.c), the
 * counters of MSG_STATS (stats.c, told of each event from here) or any
 * decision.
 */
#include <sys/queue.h>

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "auditlog.h"
#include "ev.h"
#include "keeperlink.h"
#include "mirror.h"
#include "ptyd.h"
#include "stats.h"
#include "store.h"
#include "term.h"
#include "termmem.h"

TAILQ_HEAD(mirror_list, term);

/* Rows, and events, written by one timer flush at most; the rest follow
 * at once, in flushes of their own, so that the loop (every request,
 * every viewer) never waits for more than one chunk: 5,000 rows and 5,000
 * resize events in one transaction held it for 40-100 ms (issue 17),
 * 1,000 of each take about a fifth of that. */
#define MIRROR_CHUNK 1000

static struct store	 *mirror_store;
static struct mirror_list mirror_dirty = TAILQ_HEAD_INITIALIZER(mirror_dirty);
static struct ev_timer	  mirror_timer;
static int64_t		  mirror_last_id;
static int64_t		  mirror_oldest = -1; /* first change not written */

static void mirror_timer_cb(void *);

void
mirror_init(struct store *st)
{
	mirror_store = st;
	ev_timer_init(&mirror_timer, mirror_timer_cb, NULL);
	if (st != NULL)
		ev_timer_at(&mirror_timer, ev_now() + PTYD_FLUSH_INTERVAL);
}

void
mirror_done(void)
{
	ev_timer_stop(&mirror_timer);
	mirror_store = NULL;
}

int64_t
mirror_next_id(void)
{
	int64_t id;

	id = mirror_store != NULL ? store_next_id(mirror_store) :
				    mirror_last_id + 1;
	if (id <= mirror_last_id)
		id = mirror_last_id + 1;
	mirror_last_id = id;
	return (id);
}

static double
mirror_wall(int64_t mono)
{
	return ((double)ev_wall_us(mono) / 1e6);
}

/* A change at now waits for the database. */
static void
mirror_changed(int64_t now)
{
	if (mirror_oldest < 0)
		mirror_oldest = now;
}

void
mirror_mark(struct term *t)
{
	/* The header a ptyd taking over reads changes with the row. */
	termmem_sync(t);
	mirror_changed(ev_now());
	if (!t->dirty) {
		t->dirty = 1;
		TAILQ_INSERT_TAIL(&mirror_dirty, t, dirty_entry);
	}
}

void
mirror_event(struct term *t, int64_t now, enum term_event kind,
    const char *actor, const char *detail)
{
	stats_event(t, kind);
	if (mirror_store == NULL)
		return;
	mirror_changed(now);
	store_event_owned(mirror_store, mirror_wall(now), t->sid, t->id,
	    t->owner, kind, actor != NULL && *actor != '\0' ? actor : NULL,
	    detail);
}

/* store.c's hook: one committed event to the audit log (auditlog.c). */
static void
mirror_committed_cb(const struct store_done *d)
{
	auditlog_send(d, (time_t)d->at);
}

int
mirror_log_init(const char *dest)
{
	if (auditlog_init(dest) == -1)
		return (-1);
	store_set_committed(auditlog_on() ? mirror_committed_cb : NULL);
	return (0);
}

void
mirror_daemon_event(int64_t now, enum term_event kind, const char *detail)
{
	if (mirror_store == NULL)
		return;
	mirror_changed(now);
	store_event(mirror_store, mirror_wall(now), NULL, 0, kind, NULL,
	    detail);
}

void
mirror_input(struct term *t, int64_t now, const char *actor, size_t len)
{
	char detail[64];

	snprintf(detail, sizeof(detail), "%zu bytes", len);
	mirror_event(t, now, TERM_EV_INPUT, actor, detail);
}

/* Hand the store a snapshot of t as it is now. */
static void
mirror_push(struct term *t)
{
	struct store_term st;

	if (mirror_store == NULL)
		return;
	memset(&st, 0, sizeof(st));
	st.id = t->id;
	st.sid = t->sid;
	st.owner = t->owner;
	st.pid = t->pid;
	st.workspace = t->workspace;
	st.rows = t->rows;
	st.cols = t->cols;
	st.started_at = mirror_wall(t->started_at);
	st.last_activity = mirror_wall(t->last_activity);
	st.subscribers = (int)t->nviewers;
	st.unwatched_since = t->unwatched_since >= 0 ?
	    mirror_wall(t->unwatched_since) :
	    -1;
	st.state = term_db_state(t);
	st.ended_at = t->ended_at >= 0 ? mirror_wall(t->ended_at) : -1;
	st.has_exit_code = t->state == TERM_EXITED && t->has_exit_code;
	st.exit_code = t->exit_code;
	st.end_reason = t->state == TERM_EXITED ? term_reason_wire(t->reason) :
						  NULL;
	st.bytes_in = t->bytes_in;
	st.bytes_out = t->bytes_out;
	store_put_term(mirror_store, &st);
}

void
mirror_forget(struct term *t, int64_t now)
{
	(void)now;
	stats_gone(t);
	if (!t->dirty)
		return;
	TAILQ_REMOVE(&mirror_dirty, t, dirty_entry);
	t->dirty = 0;
	/* Its last snapshot: the store's copy outlives the terminal. */
	mirror_push(t);
}

/*
 * Push at most max dirty terminals (0: all) and write what the store
 * holds in one transaction.  1 if dirty terminals are left for another.
 */
static int
mirror_flush_some(int64_t now, size_t max)
{
	struct term *t;
	uint64_t     t0 = stats_clock_us(), rows = 0;
	int	     rc;

	/* A rewrite is written whole: its marker event counts every row. */
	if (mirror_store != NULL && store_rewrite_due(mirror_store)) {
		for (t = term_all_first(); t != NULL; t = term_all_next(t))
			mirror_mark(t);
		max = 0;
	}
	while ((max == 0 || rows < max) &&
	    (t = TAILQ_FIRST(&mirror_dirty)) != NULL) {
		TAILQ_REMOVE(&mirror_dirty, t, dirty_entry);
		t->dirty = 0;
		mirror_push(t);
		rows++;
	}
	if (mirror_store == NULL) {
		mirror_oldest = -1;
		keeperlink_written();
		return (0);
	}
	/* Also with nothing pending: see the top of the file.  A failure
	 * keeps the store's copies for the next tick. */
	rc = store_flush_some(mirror_store, mirror_wall(now), max);
	if (!store_pending(mirror_store) && TAILQ_EMPTY(&mirror_dirty))
		mirror_oldest = -1;
	if (rc == 0 && !store_pending(mirror_store))
		keeperlink_written();
	stats_flush(stats_clock_us() - t0, rows);
	/* After a failure, the next try waits for the next tick. */
	return (rc == 0 &&
	    (!TAILQ_EMPTY(&mirror_dirty) || store_pending(mirror_store)));
}

void
mirror_flush(int64_t now)
{
	(void)mirror_flush_some(now, 0);
}

uint64_t
mirror_db_errors(void)
{
	return (mirror_store != NULL ? store_errors(mirror_store) : 0);
}

int
mirror_db_failing(void)
{
	return (mirror_store != NULL && store_failing(mirror_store));
}

uint64_t
mirror_db_lost(void)
{
	return (mirror_store != NULL ? store_lost(mirror_store) : 0);
}

int64_t
mirror_db_lag(int64_t now)
{
	return (mirror_oldest >= 0 && now > mirror_oldest ?
		now - mirror_oldest :
		0);
}

/* What is left over a chunk goes at the next loop turn, after whatever
 * requests are waiting: a timer due now would run again in this turn's
 * pass over the timers, one due a microsecond later waits for the next. */
static void
mirror_timer_cb(void *arg)
{
	(void)arg;
	if (mirror_flush_some(ev_now(), MIRROR_CHUNK))
		ev_timer_at(&mirror_timer, ev_now() + 1);
	else
		ev_timer_at(&mirror_timer, ev_now() + PTYD_FLUSH_INTERVAL);
}

/* Shares (share.c). */

double
mirror_wall_s(int64_t mono)
{
	return (mirror_wall(mono));
}

void
mirror_share(const struct store_share *r, int64_t now)
{
	if (mirror_store == NULL)
		return;
	mirror_changed(now);
	store_put_share(mirror_store, r);
}

void
mirror_reserve_id(int64_t id)
{
	if (id > mirror_last_id)
		mirror_last_id = id;
	if (mirror_store != NULL)
		store_reserve_id(mirror_store, id);
}
