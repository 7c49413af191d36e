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

/* The database's names: sql/schema.sql's CHECK on terminals.state. */
static const char *const term_dbstate_names[TERM_NDBSTATES] = {
	[TERM_DB_RUNNING] = "running",
	[TERM_DB_EXITED] = "exited",
	[TERM_DB_CLOSED] = "closed",
	[TERM_DB_REAPED] = "reaped",
	[TERM_DB_EVICTED] = "evicted",
	[TERM_DB_SHUTDOWN] = "shutdown",
	[TERM_DB_LOST] = "lost",
};

/* The audit log's names: sql/schema.sql's list above terminal_events. */
static const char *const term_event_names[TERM_NEVENTS] = {
	[TERM_EV_START] = "start",
	[TERM_EV_ATTACH] = "attach",
	[TERM_EV_DETACH] = "detach",
	[TERM_EV_RESIZE] = "resize",
	[TERM_EV_INPUT] = "input",
	[TERM_EV_CLOSE] = "close",
	[TERM_EV_EXIT] = "exit",
	[TERM_EV_REAP] = "reap",
	[TERM_EV_EVICT] = "evict",
	[TERM_EV_SHUTDOWN] = "shutdown",
	[TERM_EV_LOST] = "lost",
	[TERM_EV_GAP] = "gap",
	[TERM_EV_SCREEN] = "screen",
	[TERM_EV_TAKEOVER] = "takeover",
	[TERM_EV_UPGRADE] = "upgrade",
	[TERM_EV_UPGRADE_FAILED] = "upgrade_failed",
	[TERM_EV_DROPPED] = "dropped",
	[TERM_EV_RECREATED] = "recreated",
	[TERM_EV_CHAIN] = "chain",
	[TERM_EV_TAMPER] = "tamper",
	[TERM_EV_PRUNE] = "prune",
	[TERM_EV_RECORD] = "record",
	[TERM_EV_RECORD_END] = "record_end",
	[TERM_EV_RECORDING_REMOVED] = "recording_removed",
};

/* Per reason: its wire name in the contract (-1: none), the audit event
 * of its teardown, the database state. */
static const struct {
	int		  wire;
	enum term_event	  audit;
	enum term_dbstate db;
} term_reasons[TERM_NREASONS] = {
	[TERM_R_NONE] = { -1, TERM_NEVENTS, TERM_DB_RUNNING },
	[TERM_R_EXIT] = { CONTRACT_REASON_EXIT, TERM_EV_EXIT, TERM_DB_EXITED },
	[TERM_R_CLOSED] = { CONTRACT_REASON_CLOSED, TERM_EV_CLOSE,
	    TERM_DB_CLOSED },
	[TERM_R_RESTARTED] = { CONTRACT_REASON_RESTARTED, TERM_EV_CLOSE,
	    TERM_DB_CLOSED },
	[TERM_R_REAPED] = { CONTRACT_REASON_REAPED, TERM_EV_REAP,
	    TERM_DB_REAPED },
	[TERM_R_EVICTED] = { CONTRACT_REASON_EVICTED, TERM_EV_EVICT,
	    TERM_DB_EVICTED },
	[TERM_R_SHUTDOWN] = { CONTRACT_REASON_SHUTDOWN, TERM_EV_SHUTDOWN,
	    TERM_DB_SHUTDOWN },
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

enum term_event
term_reason_audit(enum term_reason r)
{
	return ((unsigned int)r < TERM_NREASONS ? term_reasons[r].audit :
						  TERM_NEVENTS);
}

enum term_dbstate
term_reason_db(enum term_reason r)
{
	return ((unsigned int)r < TERM_NREASONS ? term_reasons[r].db :
						  TERM_DB_RUNNING);
}

const char *
term_dbstate_name(enum term_dbstate s)
{
	return (
	    (unsigned int)s < TERM_NDBSTATES ? term_dbstate_names[s] : NULL);
}

const char *
term_event_name(enum term_event e)
{
	return ((unsigned int)e < TERM_NEVENTS ? term_event_names[e] : NULL);
}
