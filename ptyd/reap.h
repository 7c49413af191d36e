/*
 * reap.h -- the idle reaper: select victims, then claim each atomically.
 *
 * Owns: the reaper's two steps and the tick that runs them.  Does not own:
 * the predicate's fields (term.c, term_reapable) or the teardown itself
 * (term_teardown).  Select and claim are separate and take `now`, so unit
 * tests can run anything between them (an attach, a restart, a detach).
 */
#ifndef PTYD_REAP_H
#define PTYD_REAP_H

#include <stddef.h>
#include <stdint.h>

struct term;

/* A selected terminal, remembered by key and incarnation, never by
 * pointer: between select and claim it may have been freed. */
struct reap_victim {
	int64_t id;
	char   *owner;
	char   *sid;
};

struct reap_list {
	struct reap_victim *v;
	size_t		    n;
	size_t		    cap;
};

void reap_list_init(struct reap_list *);
void reap_list_free(struct reap_list *);

/* Every registered terminal for which term_reapable holds at now. */
size_t reap_select(int64_t now, struct reap_list *);

/*
 * Re-check the whole predicate against the live registry (the same
 * incarnation still registered under the key, still reapable at now) and
 * unregister it in the same step.  Returns the claimed terminal, which the
 * caller tears down, or NULL: refused.  why and idle say what held.
 */
struct term *reap_claim(const struct reap_victim *, int64_t now,
    const char **why, int64_t *idle);

/* One tick: notice dead shells, select, claim and tear down, audit each.
 * Returns how many terminals were reaped. */
int reap_run(int64_t now);

/* What the timer runs: the walk of reap_run when the last walk says one
 * may be due by now, else at times its SIGCHLD step (see reap.c). */
int reap_tick(int64_t now);

#endif /* PTYD_REAP_H */
