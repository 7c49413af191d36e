/*
 * watch.c -- who watches a terminal (watch.h).
 *
 * A burst of joins and leaves (a page reloading, ten people opening a
 * link at once) makes one event now and at most one a second after it,
 * each with the list as it stands when it is written.
 */
#include <string.h>

#include "ev.h"
#include "frame.h"
#include "proto.h"
#include "term.h"
#include "watch.h"

static void
watch_broadcast(struct term *t, int64_t now)
{
	struct viewer *v;

	t->watch_sent = now;
	TAILQ_FOREACH (v, &t->viewers, entry)
		if (v->watch_wanted && !v->watch_due) {
			v->watch_due = 1;
			v->wake(v);
		}
}

static void
watch_timer_cb(void *arg)
{
	struct term *t = arg;

	watch_broadcast(t, ev_now());
}

void
watch_changed(struct term *t, int64_t now)
{
	if (t->watch_timer.cb == NULL)
		ev_timer_init(&t->watch_timer, watch_timer_cb, t);
	if (ev_timer_pending(&t->watch_timer))
		return;
	if (t->watch_sent == 0 || now - t->watch_sent >= WATCH_EVERY)
		watch_broadcast(t, now);
	else
		ev_timer_at(&t->watch_timer, t->watch_sent + WATCH_EVERY);
}

void
watch_fill(const struct term *t, struct msg_watchers_reply *m, uint8_t *buf)
{
	struct watcher_entry e;
	struct viewer	    *v;
	size_t		     len = 0;

	memset(m, 0, sizeof(*m));
	TAILQ_FOREACH (v, &t->viewers, entry) {
		m->total++;
		if (m->count == PROTO_WATCHERS_MAX)
			continue;
		e.role = v->role != 0 ? v->role : PROTO_ROLE_CONTROL;
		e.share = v->share_id;
		e.since_us = ev_wall_us(v->since);
		e.actor = v->name != NULL ? v->name : "";
		e.actor_len = strlen(e.actor);
		len += watchers_put(buf + len, &e);
		m->count++;
	}
	m->data = buf;
	m->len = len;
}

void
watch_term_free(struct term *t)
{
	if (t->watch_timer.cb != NULL)
		ev_timer_stop(&t->watch_timer);
}
