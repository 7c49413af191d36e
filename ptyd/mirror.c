/*
 * mirror.c -- feed the SQLite mirror (store.c) from the terminal registry.
 *
 * Owns: the store handle, the dirty list and the flush timer.  Changes are
 * marked as they happen (term.c calls mirror_mark) and pushed once per
 * flush, so a terminal streaming output costs one row update a second, not
 * one per read; keystrokes become one "input" event per terminal per
 * flush.  The timer ticks every second whether or not anything is
 * pending: an idle tick is one stat (store_flush asks SQLite whether the
 * file was deleted or replaced), and it is what rewrites the live rows
 * into a database an operator deleted while nothing changed.  Idle
 * terminals add nothing to it.  A failed flush keeps its work (store.c)
 * and is retried at the next tick.  Does not own: SQL (store.c) or any
 * decision.
 */
#include <sys/queue.h>

#include <stdio.h>
#include <string.h>

#include "ev.h"
#include "mirror.h"
#include "ptyd.h"
#include "store.h"
#include "term.h"

TAILQ_HEAD(mirror_list, term);

static struct store	 *mirror_store;
static struct mirror_list mirror_dirty = TAILQ_HEAD_INITIALIZER(mirror_dirty);
static struct ev_timer	  mirror_timer;
static int64_t		  mirror_last_id;

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

void
mirror_mark(struct term *t)
{
	if (!t->dirty) {
		t->dirty = 1;
		TAILQ_INSERT_TAIL(&mirror_dirty, t, dirty_entry);
	}
}

void
mirror_event(struct term *t, int64_t now, const char *kind, const char *actor,
    const char *detail)
{
	if (mirror_store == NULL)
		return;
	store_event(mirror_store, mirror_wall(now), t->sid, t->id, kind,
	    actor != NULL && *actor != '\0' ? actor : NULL, detail);
}

static void
mirror_push(struct term *t, int64_t now)
{
	struct store_term st;
	char		  detail[64];

	if (mirror_store == NULL)
		return;
	if (t->in_unflushed > 0) {
		snprintf(detail, sizeof(detail), "%llu bytes",
		    (unsigned long long)t->in_unflushed);
		store_event(mirror_store, mirror_wall(now), t->sid, t->id,
		    "input", NULL, detail);
		t->in_unflushed = 0;
	}
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
	if (!t->dirty)
		return;
	TAILQ_REMOVE(&mirror_dirty, t, dirty_entry);
	t->dirty = 0;
	mirror_push(t, now);
}

void
mirror_flush(int64_t now)
{
	struct term *t;

	while ((t = TAILQ_FIRST(&mirror_dirty)) != NULL) {
		TAILQ_REMOVE(&mirror_dirty, t, dirty_entry);
		t->dirty = 0;
		mirror_push(t, now);
	}
	if (mirror_store == NULL)
		return;
	/* Also with nothing pending: see the top of the file.  A failure
	 * keeps the work pending for the next tick. */
	(void)store_flush(mirror_store, mirror_wall(now));
}

uint64_t
mirror_db_errors(void)
{
	return (mirror_store != NULL ? store_errors(mirror_store) : 0);
}

static void
mirror_timer_cb(void *arg)
{
	(void)arg;
	mirror_flush(ev_now());
	ev_timer_at(&mirror_timer, ev_now() + PTYD_FLUSH_INTERVAL);
}
