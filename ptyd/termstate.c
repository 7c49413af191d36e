/*
 * termstate.c -- the tables of a terminal's life (termstate.h).  Pure
 * data: tests/unit/test_termstate.c walks every row.
 */
#include <stddef.h>

#include "contract.h"
#include "termstate.h"

static const struct term_transition term_transitions[] = {
	{ TERM_RUNNING, TERM_ENDING, TERM_TIMER_KILL, 1,
	    "teardown: close, restart, reap, evict, shutdown" },
	{ TERM_RUNNING, TERM_DRAINING, TERM_TIMER_DRAIN, 0,
	    "the shell ended by itself" },
	{ TERM_RUNNING, TERM_EXITED, TERM_TIMER_LINGER, 1,
	    "the spawn failed, the shell ended with the pty already "
	    "drained, or shutdown's deadline" },
	{ TERM_ENDING, TERM_DRAINING, TERM_TIMER_DRAIN, 0,
	    "the hung-up shell was reaped" },
	{ TERM_ENDING, TERM_EXITED, TERM_TIMER_LINGER, 1,
	    "reaped with the pty already drained, or shutdown's deadline" },
	{ TERM_DRAINING, TERM_EXITED, TERM_TIMER_LINGER, 1,
	    "EIO, or the drain deadline" },
};

static const char *const term_state_names[TERM_NSTATES] = {
	"running",
	"ending",
	"draining",
	"exited",
};

/* Per reason: its wire name in the contract (-1: none), the audit event
 * of its teardown, the database state. */
static const struct {
	int	    wire;
	const char *audit, *db;
} term_reasons[TERM_NREASONS] = {
	[TERM_R_NONE] = { -1, NULL, "running" },
	[TERM_R_EXIT] = { CONTRACT_REASON_EXIT, "exit", "exited" },
	[TERM_R_CLOSED] = { CONTRACT_REASON_CLOSED, "close", "closed" },
	[TERM_R_RESTARTED] = { CONTRACT_REASON_RESTARTED, "close", "closed" },
	[TERM_R_REAPED] = { CONTRACT_REASON_REAPED, "reap", "reaped" },
	[TERM_R_EVICTED] = { CONTRACT_REASON_EVICTED, "evict", "evicted" },
	[TERM_R_SHUTDOWN] = { CONTRACT_REASON_SHUTDOWN, "shutdown",
	    "shutdown" },
};

const struct term_transition *
term_transition_find(enum term_state from, enum term_state to)
{
	size_t i;

	for (i = 0; i < sizeof(term_transitions) / sizeof(term_transitions[0]);
	     i++)
		if (term_transitions[i].from == from &&
		    term_transitions[i].to == to)
			return (&term_transitions[i]);
	return (NULL);
}

const char *
term_state_name(enum term_state s)
{
	return ((unsigned int)s < TERM_NSTATES ? term_state_names[s] : "?");
}

const char *
term_reason_wire(enum term_reason r)
{
	if ((unsigned int)r >= TERM_NREASONS || term_reasons[r].wire < 0)
		return (NULL);
	return (contract_reason_name((enum contract_reason)term_reasons[r].wire));
}

const char *
term_reason_audit(enum term_reason r)
{
	return ((unsigned int)r < TERM_NREASONS ? term_reasons[r].audit : NULL);
}

const char *
term_reason_db(enum term_reason r)
{
	return ((unsigned int)r < TERM_NREASONS ? term_reasons[r].db : NULL);
}
