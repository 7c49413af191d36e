/*
 * test_ptyd_ev.c -- the event loop's timer heap and end-of-turn work.
 */
#include <criterion/criterion.h>

#include <stdlib.h>

#include "ev.h"

static int	fired[64];
static int	nfired;

static void
record_cb(void *arg)
{
	fired[nfired++] = (int)(intptr_t)arg;
}

Test(ev, timers_fire_in_order_and_stopped_ones_never)
{
	struct ev_timer	t[40];
	int		i, last = -1;

	cr_assert_eq(ev_init(), 0);
	for (i = 0; i < 40; i++) {
		ev_timer_init(&t[i], record_cb, (void *)(intptr_t)i);
		/* A scrambled order of deadlines, all already due. */
		ev_timer_at(&t[i], 1 + (i * 17) % 40);
	}
	for (i = 0; i < 40; i += 3)
		ev_timer_stop(&t[i]);
	cr_assert_not(ev_timer_pending(&t[0]));
	cr_assert(ev_timer_pending(&t[1]));
	ev_timer_at(&t[1], 100);	/* re-arming moves it */
	cr_assert_eq(ev_run_once(0), 0);
	cr_assert_eq(nfired, 40 - 14);
	for (i = 0; i < nfired; i++) {
		cr_assert_neq(fired[i] % 3, 0, "a stopped timer fired");
		cr_assert_geq(t[fired[i]].when, last, "out of order");
		last = (int)t[fired[i]].when;
	}
	cr_assert_eq(fired[nfired - 1], 1);
	ev_done();
}

Test(ev, future_timer_waits)
{
	struct ev_timer	t;

	cr_assert_eq(ev_init(), 0);
	nfired = 0;
	ev_timer_init(&t, record_cb, (void *)(intptr_t)7);
	ev_timer_at(&t, ev_now() + 3600LL * 1000000);
	cr_assert_eq(ev_run_once(1000), 0);
	cr_assert_eq(nfired, 0);
	cr_assert(ev_timer_pending(&t));
	ev_timer_stop(&t);
	ev_done();
}

static struct ev_defer	d1, d2;

static void
requeue_cb(void *arg)
{
	record_cb(arg);
	if ((intptr_t)arg == 1)
		ev_defer(&d2);	/* queued from deferred work: same turn */
}

Test(ev, deferred_work_runs_once_at_the_end_of_the_turn)
{
	cr_assert_eq(ev_init(), 0);
	nfired = 0;
	ev_defer_init(&d1, requeue_cb, (void *)(intptr_t)1);
	ev_defer_init(&d2, requeue_cb, (void *)(intptr_t)2);
	ev_defer(&d1);
	ev_defer(&d1);			/* idempotent */
	cr_assert_eq(ev_run_once(0), 0);
	cr_assert_eq(nfired, 2);
	cr_assert_eq(fired[0], 1);
	cr_assert_eq(fired[1], 2);
	ev_defer(&d1);
	ev_defer_cancel(&d1);
	cr_assert_eq(ev_run_once(0), 0);
	cr_assert_eq(nfired, 2, "a cancelled defer does not run");
	ev_done();
}

/* Work that puts itself off (a spent write budget) runs once per turn,
 * never twice in one, before that turn's own deferred work, and keeps the
 * loop from sleeping while it waits. */
static struct ev_defer	dn, dt;
static int		dn_left;

static void
later_cb(void *arg)
{
	record_cb(arg);
	if (--dn_left > 0)
		ev_defer_next(&dn);
	ev_defer(&dt);		/* this turn's own work: after us */
}

Test(ev, put_off_work_runs_once_per_turn_first_and_never_sleeps)
{
	int64_t	t0;
	int	turn;

	cr_assert_eq(ev_init(), 0);
	nfired = 0;
	dn_left = 3;
	ev_defer_init(&dn, later_cb, (void *)(intptr_t)7);
	ev_defer_init(&dt, record_cb, (void *)(intptr_t)8);
	ev_defer_next(&dn);
	ev_defer_next(&dn);		/* idempotent */
	t0 = ev_clock();
	for (turn = 1; turn <= 3; turn++) {
		/* Would wait 2 s if put-off work let it sleep. */
		cr_assert_eq(ev_run_once(2000000), 0);
		cr_assert_eq(nfired, 2 * turn, "turn %d", turn);
		cr_assert_eq(fired[2 * turn - 2], 7);
		cr_assert_eq(fired[2 * turn - 1], 8);
	}
	cr_assert_lt(ev_clock() - t0, 1000000, "the loop slept");
	ev_defer_next(&dn);
	ev_defer_cancel(&dn);
	dn_left = 1;
	cr_assert_eq(ev_run_once(0), 0);
	cr_assert_eq(nfired, 6, "a cancelled put-off defer does not run");
	ev_done();
}
