/*
 * test_reap.c -- the reaper's select and claim, driven through every
 * interleaving the seed implementation got wrong, with `now` injected and
 * terminals that are plain registry entries (no process behind them).
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>

#include "ptyd.h"
#include "reap.h"
#include "term.h"

#define S	PTYD_SEC
#define GRACE	(900 * S)
#define LINGER	(60 * S)

static void
nowake(struct viewer *v)
{
	(void)v;
}

static void
setup(void)
{
	term_init(NULL);
	ptyd_conf.idle_grace = GRACE;
	ptyd_conf.linger = LINGER;
	ptyd_conf.max_viewers = 32;
}

static struct term *
mk(const char *owner, const char *sid, int64_t now)
{
	struct term	*t;

	t = term_new(owner, sid, "/tmp", 24, 80, 1000, now);
	term_register(t);
	return (t);
}

static void
attach(struct viewer *v, const char *sid, int64_t now)
{
	uint64_t	resume, lost;

	memset(v, 0, sizeof(*v));
	v->wake = nowake;
	cr_assert_eq(term_attach("", sid, v, 0, 0, NULL, now, &resume, &lost),
	    TERM_OK);
}

/* The shell exits: what the SIGCHLD loop does, without a process. */
static void
exit_now(struct term *t, int code, int64_t now)
{
	term_child_exited(t, code << 8, now);
	cr_assert_eq(t->state, TERM_EXITED);
}

TestSuite(reap, .init = setup);

Test(reap, viewer_attaching_between_select_and_claim_wins)
{
	/* Prevents: the reaper killing a terminal a user opened a moment
	 * after it was selected (the seed's select-then-kill race). */
	struct reap_list	 l;
	struct viewer		 v;
	struct term		*t = mk("", "a", 0);
	const char		*why;
	int64_t			 idle;

	reap_list_init(&l);
	cr_assert_eq(reap_select(GRACE + S, &l), 1);
	attach(&v, "a", GRACE + S);
	cr_assert_null(reap_claim(&l.v[0], GRACE + S, &why, &idle));
	cr_assert_eq(term_find("", "a"), t, "the terminal keeps streaming");
	cr_assert(t->registered);
	cr_assert_eq(t->nviewers, 1);
	cr_assert_eq(t->state, TERM_RUNNING, "not ending");
	reap_list_free(&l);
}

Test(reap, attach_after_a_successful_claim_is_not_running)
{
	/* Prevents: a viewer attaching to a terminal that is being torn
	 * down and waiting for output that never comes. */
	struct reap_list	 l;
	struct viewer		 v;
	struct term		*t = mk("", "a", 0), *c;
	const char		*why;
	int64_t			 idle;
	uint64_t		 resume, lost;

	reap_list_init(&l);
	cr_assert_eq(reap_select(GRACE, &l), 1);
	c = reap_claim(&l.v[0], GRACE, &why, &idle);
	cr_assert_eq(c, t);
	cr_assert_str_eq(why, "idle");
	cr_assert_eq(idle, GRACE);
	term_teardown(c, TERM_R_REAPED, NULL, "idle", GRACE);
	memset(&v, 0, sizeof(v));
	v.wake = nowake;
	cr_assert_eq(term_attach("", "a", &v, 0, 0, NULL, GRACE + 1, &resume,
	    &lost), TERM_ENOTRUNNING);
	cr_assert_null(term_find("", "a"));
	reap_list_free(&l);
}

Test(reap, grace_refreshed_after_select_refuses)
{
	/* Prevents: reaping on a stale idea of idleness -- a viewer came and
	 * went after select, so the grace starts again from its leaving. */
	struct reap_list	 l;
	struct viewer		 v;
	struct term		*t = mk("", "a", 0);
	const char		*why;
	int64_t			 idle;

	reap_list_init(&l);
	cr_assert_eq(reap_select(GRACE + 5 * S, &l), 1);
	attach(&v, "a", GRACE + 5 * S);
	term_detach(&v, GRACE + 6 * S);
	cr_assert_eq(t->unwatched_since, GRACE + 6 * S);
	cr_assert_null(reap_claim(&l.v[0], GRACE + 7 * S, &why, &idle));
	cr_assert(t->registered);
	reap_list_free(&l);
}

Test(reap, entry_replaced_by_a_restart_refuses)
{
	/* Prevents: the reaper killing the new shell of a restarted id
	 * because the old incarnation was selected. */
	struct reap_list	 l;
	struct term		*old = mk("", "a", 0), *fresh;
	const char		*why;
	int64_t			 idle;

	reap_list_init(&l);
	cr_assert_eq(reap_select(GRACE, &l), 1);
	term_teardown(old, TERM_R_RESTARTED, NULL, NULL, GRACE);
	fresh = mk("", "a", 0);		/* born long ago: reapable by time */
	cr_assert_null(reap_claim(&l.v[0], GRACE, &why, &idle),
	    "a different incarnation is never claimed on another's select");
	cr_assert_eq(term_find("", "a"), fresh, "the new terminal survives");
	cr_assert(fresh->registered);
	cr_assert_eq(fresh->state, TERM_RUNNING, "not ending");
	reap_list_free(&l);
}

Test(reap, exited_terminal_past_linger_is_reaped_even_with_a_viewer)
{
	/* Prevents: a viewer that never reads EXIT pinning a dead terminal
	 * (and its ring) for ever. */
	struct reap_list	 l;
	struct viewer		 v;
	struct term		*t = mk("", "a", 0);
	const char		*why;
	int64_t			 idle;

	attach(&v, "a", S);
	exit_now(t, 3, 10 * S);
	reap_list_init(&l);
	cr_assert_eq(reap_select(10 * S + LINGER - 1, &l), 0);
	cr_assert_eq(reap_select(10 * S + LINGER, &l), 1);
	cr_assert_eq(reap_claim(&l.v[0], 10 * S + LINGER, &why, &idle), t);
	cr_assert_null(term_find("", "a"));
	cr_assert_eq(t->nviewers, 1, "the viewer still gets the tail and EXIT");
	reap_list_free(&l);
}

Test(reap, born_unwatched_and_never_attached_is_reaped_after_the_grace)
{
	/* Prevents: terminals started by a page that never opened its
	 * stream living for ever (unwatched_since was NULL at birth). */
	struct reap_list	 l;
	struct term		*t = mk("", "a", 100 * S);
	const char		*why;
	int64_t			 idle;

	cr_assert_eq(t->unwatched_since, 100 * S);
	reap_list_init(&l);
	cr_assert_eq(reap_select(100 * S + GRACE - 1, &l), 0);
	cr_assert_eq(reap_select(100 * S + GRACE, &l), 1);
	cr_assert_eq(reap_claim(&l.v[0], 100 * S + GRACE, &why, &idle), t);
	reap_list_free(&l);
}

Test(reap, watched_terminal_is_never_selected_however_old)
{
	/* Prevents: killing a terminal someone is looking at. */
	struct reap_list	l;
	struct viewer		v;

	(void)mk("", "a", 0);
	attach(&v, "a", S);
	reap_list_init(&l);
	cr_assert_eq(reap_select(1000 * GRACE, &l), 0);
	reap_list_free(&l);
}

Test(reap, detach_within_grace_then_reattach_is_kept)
{
	/* Prevents: a page reload (detach then attach) counting the time
	 * before the reload toward the idle grace. */
	struct reap_list	 l;
	struct viewer		 v1, v2;
	struct term		*t = mk("", "a", 0);

	attach(&v1, "a", S);
	term_detach(&v1, 2 * S);
	attach(&v2, "a", 3 * S);
	cr_assert_eq(t->unwatched_since, -1);
	reap_list_init(&l);
	cr_assert_eq(reap_select(10 * GRACE, &l), 0);
	term_detach(&v2, 10 * GRACE);
	cr_assert_eq(reap_select(10 * GRACE + GRACE - 1, &l), 0,
	    "the grace runs from the last detach");
	cr_assert_eq(reap_select(11 * GRACE, &l), 1);
	reap_list_free(&l);
}

Test(reap, terminal_being_torn_down_is_not_selected_again)
{
	/* Prevents: a second teardown (and a second audit record) of a
	 * terminal whose close is still waiting for its shell. */
	struct reap_list	 l;
	struct term		*t = mk("", "a", 0);

	term_teardown(t, TERM_R_CLOSED, NULL, NULL, S);
	reap_list_init(&l);
	cr_assert_eq(reap_select(10 * GRACE, &l), 0);
	reap_list_free(&l);
}

Test(reap, run_reaps_the_idle_and_keeps_the_watched)
{
	struct viewer	 v;
	struct term	*idle = mk("", "idle", 0), *busy = mk("", "busy", 0);

	attach(&v, "busy", S);
	cr_assert_eq(reap_run(GRACE - 1), 0);
	cr_assert_eq(reap_run(GRACE), 1);
	cr_assert_null(term_find("", "idle"));
	cr_assert_eq(idle->state, TERM_ENDING);
	cr_assert_str_eq(term_reason_wire(idle->reason), "reaped");
	cr_assert_eq(term_find("", "busy"), busy);
}

Test(reap, same_id_of_another_owner_is_a_different_terminal)
{
	/* Prevents: one user's attach (or restart) saving or dooming
	 * another user's terminal of the same id. */
	struct reap_list	 l;
	struct term		*mine = mk("alice", "x", 0);
	const char		*why;
	int64_t			 idle;

	(void)mk("bob", "x", GRACE);
	reap_list_init(&l);
	cr_assert_eq(reap_select(GRACE, &l), 1);
	cr_assert_str_eq(l.v[0].owner, "alice");
	cr_assert_eq(reap_claim(&l.v[0], GRACE, &why, &idle), mine);
	cr_assert_not_null(term_find("bob", "x"));
	reap_list_free(&l);
}

/* How many registered terminals term_reapable holds for at now. */
static int
due_count(int64_t now)
{
	struct term	*t;
	const char	*why;
	int64_t		 idle;
	int		 n = 0;

	for (t = term_first(); t != NULL; t = term_next(t))
		n += term_reapable(t, now, &why, &idle);
	return (n);
}

Test(reap, tick_reaps_exactly_the_due_ones_among_many)
{
	/* Prevents: the tick, which skips its walk while the last one says
	 * nothing can be due, missing a terminal that became a candidate
	 * after that walk (detached, exited or born since), or reaping one
	 * early.  1,000 terminals; every 30 s some are born, attached,
	 * detached or exit; after each tick nothing due is left. */
	static struct viewer	 vs[1000];
	static struct term	*ts[1000];
	char			 sid[32];
	int64_t			 now;
	int			 i, step, due, reaped, total = 0;

	for (i = 0; i < 1000; i++) {
		snprintf(sid, sizeof(sid), "t%d", i);
		ts[i] = mk("", sid, (i % 40) * S);
		if (i % 2 == 0)
			attach(&vs[i], sid, (i % 40) * S);
	}
	for (step = 1; step <= 200; step++) {
		now = step * 30 * S;
		for (i = step % 10; i < 1000; i += 10) {
			if (!ts[i]->registered || ts[i]->state != TERM_RUNNING)
				continue;
			if (ts[i]->nviewers > 0 && step % 3 == 0)
				term_detach(&vs[i], now);
			else if (ts[i]->nviewers == 0 && step % 7 == 0)
				exit_now(ts[i], 0, now);
		}
		due = due_count(now);
		reaped = reap_tick(now);
		cr_assert_eq(reaped, due, "step %d: %d reaped, %d due", step,
		    reaped, due);
		cr_assert_eq(due_count(now), 0, "step %d: one left due", step);
		total += reaped;
	}
	cr_expect_gt(total, 400, "the run reaps many (%d)", total);
}
