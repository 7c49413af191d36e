/*
 * reap.c -- the idle reaper, the only path that kills for idleness.
 *
 * Owns: select (read-only over the registry) and claim (re-check and
 * unregister as one step).  Does not own: the predicate (term_reapable in
 * term.c, shared by both steps so they cannot disagree about what idle
 * means) or the schedule (main.c runs reap_run every --reap-interval).
 *
 * Why two steps: select sees a snapshot; anything may happen before a
 * victim is claimed (in the daemon nothing does, in the tests everything
 * does, and a future version might yield in between).  Claim therefore
 * trusts nothing from select but the key and the incarnation id: a viewer
 * that attached in between, a restart that replaced the entry, or a grace
 * that was refreshed each makes the claim refuse.  Once claimed, the
 * terminal is unregistered, so a later attach finds nothing (not running).
 *
 * The tick (reap_tick, what main.c's timer runs) walks the registry only
 * when a terminal may be due: each walk notes the earliest time one of
 * the terminals it saw becomes due, and no terminal it did not see as a
 * candidate can be due before the walk's time plus the shorter of
 * idle_grace and linger (it becomes one at the earliest then, and waits
 * its whole grace or linger from there).  With 5,000 idle terminals a tick
 * cost about 2 ms every reap interval (issue 17): half of it the walk
 * (now over an array, term_registered, and only when one may be due),
 * half the SIGCHLD loop's waitpid(-1), run as a safety net (no longer:
 * see reap_tick).
 */
#include <stdio.h>
#include <stdlib.h>

#include "log.h"
#include "ptyd.h"
#include "reap.h"
#include "term.h"
#include "xmalloc.h"

/* No terminal is due before this (monotonic us); 0: walk at the next
 * tick.  Set by reap_select, read by reap_tick. */
static int64_t reap_next;

void
reap_list_init(struct reap_list *l)
{
	l->v = NULL;
	l->n = l->cap = 0;
}

void
reap_list_free(struct reap_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		free(l->v[i].owner);
		free(l->v[i].sid);
	}
	free(l->v);
	reap_list_init(l);
}

/* When t, not reapable at now, may become due without anything else
 * happening to it; INT64_MAX: not before something does. */
static int64_t
reap_due(const struct term *t)
{
	if (t->state == TERM_EXITED && t->ended_at >= 0)
		return (t->ended_at + ptyd_conf.linger);
	if (t->state == TERM_RUNNING && t->nviewers == 0 &&
	    t->unwatched_since >= 0)
		return (t->unwatched_since + ptyd_conf.idle_grace);
	return (INT64_MAX);
}

size_t
reap_select(int64_t now, struct reap_list *l)
{
	struct term *const *v, *t;
	const char	   *why;
	int64_t		    idle, due, next;
	size_t		    i, n;

	next = now +
	    (ptyd_conf.idle_grace < ptyd_conf.linger ? ptyd_conf.idle_grace :
						       ptyd_conf.linger);
	v = term_registered(&n);
	for (i = 0; i < n; i++) {
		t = v[i];
		if (!term_reapable(t, now, &why, &idle)) {
			if ((due = reap_due(t)) < next)
				next = due;
			continue;
		}
		if (l->n == l->cap) {
			l->cap = l->cap == 0 ? 16 : l->cap * 2;
			l->v = xreallocarray(l->v, l->cap, sizeof(*l->v));
		}
		l->v[l->n].id = t->id;
		l->v[l->n].owner = xstrdup(t->owner);
		l->v[l->n].sid = xstrdup(t->sid);
		l->n++;
	}
	/* A victim whose claim is refused is looked at again next tick. */
	reap_next = l->n > 0 ? 0 : next;
	return (l->n);
}

struct term *
reap_claim(const struct reap_victim *v, int64_t now, const char **why,
    int64_t *idle)
{
	struct term *t;

	t = term_find(v->owner, v->sid);
	if (t == NULL || t->id != v->id)
		return (NULL); /* gone, or replaced by a restart */
	if (!term_reapable(t, now, why, idle))
		return (NULL); /* watched again, or grace refreshed */
	term_unregister(t);
	return (t);
}

/* Select, claim and tear down, audit each. */
static int
reap_walk(int64_t now)
{
	struct reap_list l;
	struct term	*t;
	const char	*why;
	char		 detail[96];
	int64_t		 idle;
	size_t		 i;
	int		 n = 0;

	reap_list_init(&l);
	if (reap_select(now, &l) == 0)
		return (0);
	for (i = 0; i < l.n; i++) {
		if ((t = reap_claim(&l.v[i], now, &why, &idle)) == NULL)
			continue;
		snprintf(detail, sizeof(detail), "%s %lld s", why,
		    (long long)(idle / PTYD_SEC));
		log_info("reaping %s%s%s: %s", t->owner, *t->owner ? "/" : "",
		    t->sid, detail);
		term_teardown(t, TERM_R_REAPED, NULL, detail, now);
		n++;
	}
	reap_list_free(&l);
	return (n);
}

int
reap_run(int64_t now)
{
	/* A shell that died is noticed here at the latest. */
	term_reap_children(now);
	return (reap_walk(now));
}

/*
 * The walk, when one may be due (reap_next).  The tick no longer runs the
 * SIGCHLD loop as a net (it did, once a grace or a linger: 1.2 ms with
 * 5,000 children, since waitpid(-1) looks at each): a shell's end is seen
 * through its pidfd, level-triggered, and every SIGCHLD, one standing for
 * several included, ends in that loop within TERM_SIGCHLD_DEFER
 * (termlife.c), so nothing is left for a net to find.
 */
int
reap_tick(int64_t now)
{
	if (reap_next == 0 || now >= reap_next)
		return (reap_walk(now));
	return (0);
}
