/*
 * test_termstate.c -- a terminal's life as a state machine
 * (ptyd/termstate.c, term_set_state in ptyd/term.c): the table walked row
 * by row, every pair that is not in it refused, every reason named as
 * DESIGN 3 and 7 name it, and each legal transition applied to a terminal
 * with the timer and the reason the table promises.
 */
#include <criterion/criterion.h>

#include <string.h>

#include "ev.h"
#include "ptyd.h"
#include "term.h"
#include "termstate.h"

#define S	PTYD_SEC

static const struct {
	enum term_state		from, to;
	enum term_timer_use	timer;
} legal[] = {
	{ TERM_RUNNING, TERM_ENDING, TERM_TIMER_KILL },
	{ TERM_RUNNING, TERM_DRAINING, TERM_TIMER_DRAIN },
	{ TERM_RUNNING, TERM_EXITED, TERM_TIMER_LINGER },
	{ TERM_ENDING, TERM_DRAINING, TERM_TIMER_DRAIN },
	{ TERM_ENDING, TERM_EXITED, TERM_TIMER_LINGER },
	{ TERM_DRAINING, TERM_EXITED, TERM_TIMER_LINGER },
};
#define NLEGAL	(sizeof(legal) / sizeof(legal[0]))

Test(termstate, the_table_holds_exactly_the_legal_transitions)
{
	const struct term_transition	*tr;
	size_t				 i;
	int				 from, to, want;

	for (from = 0; from < TERM_NSTATES; from++) {
		for (to = 0; to < TERM_NSTATES; to++) {
			want = -1;
			for (i = 0; i < NLEGAL; i++)
				if ((int)legal[i].from == from &&
				    (int)legal[i].to == to)
					want = (int)i;
			tr = term_transition_find(from, to);
			if (want == -1) {
				cr_expect_null(tr, "%s -> %s must not exist",
				    term_state_name(from), term_state_name(to));
				continue;
			}
			cr_assert_not_null(tr, "%s -> %s",
			    term_state_name(from), term_state_name(to));
			cr_expect_eq(tr->timer, legal[want].timer, "%s -> %s",
			    term_state_name(from), term_state_name(to));
			cr_expect(tr->why != NULL && tr->why[0] != '\0');
		}
	}
	/* Nothing leaves EXITED, nothing returns to RUNNING. */
	for (to = 0; to < TERM_NSTATES; to++) {
		cr_expect_null(term_transition_find(TERM_EXITED, to));
		cr_expect_null(term_transition_find(to, TERM_RUNNING));
	}
}

Test(termstate, every_reason_has_its_wire_audit_and_database_names)
{
	static const struct {
		enum term_reason	 r;
		const char		*wire, *audit, *db;
	} want[] = {
		{ TERM_R_EXIT, "exit", "exit", "exited" },
		{ TERM_R_CLOSED, "closed", "close", "closed" },
		{ TERM_R_RESTARTED, "restarted", "close", "closed" },
		{ TERM_R_REAPED, "reaped", "reap", "reaped" },
		{ TERM_R_EVICTED, "evicted", "evict", "evicted" },
		{ TERM_R_SHUTDOWN, "shutdown", "shutdown", "shutdown" },
	};
	size_t	i;

	cr_expect_null(term_reason_wire(TERM_R_NONE));
	cr_expect_str_eq(term_reason_db(TERM_R_NONE), "running");
	cr_assert_eq(sizeof(want) / sizeof(want[0]), TERM_NREASONS - 1);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		cr_expect_str_eq(term_reason_wire(want[i].r), want[i].wire);
		cr_expect_str_eq(term_reason_audit(want[i].r), want[i].audit);
		cr_expect_str_eq(term_reason_db(want[i].r), want[i].db);
	}
	cr_expect_str_eq(term_state_name(TERM_DRAINING), "draining");
}

static void
setup(void)
{
	term_init(NULL);
	ptyd_conf.linger = 60 * S;
	ptyd_conf.ring_size = 4096;
}

TestSuite(termstate_apply, .init = setup);

/* A terminal in state from, registered or not, with no process. */
static struct term *
at(enum term_state from, int registered)
{
	struct term	*t;

	t = term_new("", "a", "/tmp", 24, 80, 1000, 0);
	if (registered)
		term_register(t);
	t->state = from;	/* the test's own set-up, not a transition */
	return (t);
}

Test(termstate_apply, each_legal_transition_sets_state_reason_and_timer)
{
	struct term	*t;
	size_t		 i;
	int		 reg;

	for (i = 0; i < NLEGAL; i++) {
		for (reg = 0; reg <= 1; reg++) {
			t = at(legal[i].from, reg);
			term_set_state(t, legal[i].to, TERM_R_CLOSED, S);
			cr_expect_eq(t->state, legal[i].to);
			cr_expect_eq(t->reason, TERM_R_CLOSED);
			cr_expect_str_eq(term_db_state(t), "closed");
			switch (legal[i].timer) {
			case TERM_TIMER_KILL:
				cr_expect_eq(t->timer.when, S + PTYD_KILL_DELAY);
				break;
			case TERM_TIMER_DRAIN:
				cr_expect_eq(t->timer.when,
				    S + PTYD_DRAIN_DEADLINE);
				break;
			case TERM_TIMER_LINGER:
				cr_expect_eq(ev_timer_pending(&t->timer), reg,
				    "a linger only while registered");
				if (reg)
					cr_expect_eq(t->timer.when, S + 60 * S);
				break;
			case TERM_TIMER_STOP:
				cr_expect_not(ev_timer_pending(&t->timer));
				break;
			}
			ev_timer_stop(&t->timer);
			if (t->registered)
				term_unregister(t);
		}
	}
}

Test(termstate_apply, no_reason_keeps_the_one_it_has)
{
	struct term	*t = at(TERM_RUNNING, 1);

	term_set_state(t, TERM_ENDING, TERM_R_REAPED, S);
	term_set_state(t, TERM_DRAINING, TERM_R_NONE, 2 * S);
	cr_expect_eq(t->reason, TERM_R_REAPED, "draining keeps why it ends");
	cr_expect_str_eq(term_db_state(t), "reaped");
}

Test(termstate_apply, an_illegal_transition_is_fatal, .exit_code = 1)
{
	struct term	*t = at(TERM_EXITED, 0);

	term_set_state(t, TERM_RUNNING, TERM_R_NONE, S);
}
