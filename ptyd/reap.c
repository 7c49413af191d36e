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
 */
#include <stdio.h>
#include <stdlib.h>

#include "log.h"
#include "ptyd.h"
#include "reap.h"
#include "term.h"
#include "xmalloc.h"

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

size_t
reap_select(int64_t now, struct reap_list *l)
{
	struct term *t;
	const char  *why;
	int64_t	     idle;

	for (t = term_first(); t != NULL; t = term_next(t)) {
		if (!term_reapable(t, now, &why, &idle))
			continue;
		if (l->n == l->cap) {
			l->cap = l->cap == 0 ? 16 : l->cap * 2;
			l->v = xreallocarray(l->v, l->cap, sizeof(*l->v));
		}
		l->v[l->n].id = t->id;
		l->v[l->n].owner = xstrdup(t->owner);
		l->v[l->n].sid = xstrdup(t->sid);
		l->n++;
	}
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

int
reap_run(int64_t now)
{
	struct reap_list l;
	struct term	*t;
	const char	*why;
	char		 detail[96];
	int64_t		 idle;
	size_t		 i;
	int		 n = 0;

	/* A shell that died is noticed here at the latest. */
	term_reap_children(now);
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
