/*
 * termstate.h -- a terminal's life as a state machine: its states, the
 * reasons it ends for, and the one table of legal transitions.
 *
 * Owns: what each state means; for each reason, the contract's reason it
 * is (named on the wire, MSG_EXIT and terminal_closed, by lib/contract.c),
 * the audit event of its teardown and the database's state; which
 * transitions exist, which timer each one arms and whether it wakes the
 * viewers; the names, one table each, of the audit log's event kinds
 * (terminal_events.kind) and of the database's terminal states
 * (terminals.state), which sql/schema.sql must list alike
 * (tests/unit/test_termstate.c reads it).  Does not own: the reasons'
 * wire names (lib/contract.c), making a transition happen (term_set_state
 * in termlife.c is the only place that changes a terminal's state, and it
 * refuses a transition that is not in this table) or the registry (a
 * terminal leaves it when its teardown starts, or when its linger ends).
 *
 *	RUNNING --teardown--> ENDING --shell reaped--> DRAINING --EIO--> EXITED
 *	RUNNING --shell reaped----------------------> DRAINING
 *	RUNNING, ENDING --pty already closed, spawn failed, shutdown's
 *	    deadline--> EXITED
 */
#ifndef PTYD_TERMSTATE_H
#define PTYD_TERMSTATE_H

enum term_state {
	TERM_RUNNING,  /* shell alive, nobody asked it to end */
	TERM_ENDING,   /* teardown: hung up, waiting for the shell */
	TERM_DRAINING, /* shell reaped, pty draining to EIO */
	TERM_EXITED,   /* fds and process released, ring kept */
};
#define TERM_NSTATES 4

/* Why a terminal ends: DESIGN 3's terminal_closed reasons. */
enum term_reason {
	TERM_R_NONE, /* not ending (yet) */
	TERM_R_EXIT, /* the shell ended by itself */
	TERM_R_CLOSED,
	TERM_R_RESTARTED,
	TERM_R_REAPED,
	TERM_R_EVICTED,
	TERM_R_SHUTDOWN,
};
#define TERM_NREASONS 7

/* A terminal's row in the database (terminals.state, sql/schema.sql's
 * CHECK): all but running are final. */
enum term_dbstate {
	TERM_DB_RUNNING,
	TERM_DB_EXITED, /* the shell ended by itself */
	TERM_DB_CLOSED, /* closed or restarted */
	TERM_DB_REAPED,
	TERM_DB_EVICTED,
	TERM_DB_SHUTDOWN,
	TERM_DB_LOST, /* ptyd died while it ran (set by the next ptyd) */
	TERM_NDBSTATES
};

/* The audit log's event kinds (terminal_events.kind). */
enum term_event {
	TERM_EV_START,
	TERM_EV_ATTACH,
	TERM_EV_DETACH,
	TERM_EV_RESIZE,
	TERM_EV_INPUT, /* one per accepted request: "N bytes" */
	TERM_EV_CLOSE, /* a close, or a restart */
	TERM_EV_EXIT,  /* every shell's end */
	TERM_EV_REAP,
	TERM_EV_EVICT,
	TERM_EV_SHUTDOWN,
	TERM_EV_LOST,	  /* running when an earlier ptyd stopped */
	TERM_EV_GAP,	  /* a viewer's resume point left the ring */
	TERM_EV_SCREEN,	  /* a screen drawn in part, the rest replayed */
	TERM_EV_TAKEOVER, /* adopted from a ptyd that died */
	TERM_EV_UPGRADE,  /* adopted from the ptyd this one replaced */
	/* ptyd's own, about no terminal. */
	TERM_EV_UPGRADE_FAILED,
	TERM_EV_DROPPED,   /* events it could not keep: how many */
	TERM_EV_RECREATED, /* the database file was deleted under it */
	TERM_EV_CHAIN,	   /* where the hash chain starts */
	TERM_EV_TAMPER,	   /* the chain's head was not what ptyd wrote */
	TERM_EV_PRUNE,	   /* ptydctl prune */
	/* Recordings (DESIGN 4). */
	TERM_EV_RECORD,		   /* a recording starts */
	TERM_EV_RECORD_END,	   /* it ended: finished or cut */
	TERM_EV_RECORDING_REMOVED, /* retention deleted its file */
	TERM_NEVENTS
};

/* What a transition does to the terminal's one timer. */
enum term_timer_use {
	TERM_TIMER_STOP,   /* nothing pending */
	TERM_TIMER_KILL,   /* SIGKILL if the shell outlives the hangup */
	TERM_TIMER_DRAIN,  /* stop waiting for EIO */
	TERM_TIMER_LINGER, /* retire once the linger ends (if registered) */
};

struct term_transition {
	enum term_state	    from;
	enum term_state	    to;
	enum term_timer_use timer;
	int		    wake; /* viewers have news */
	const char	   *why;  /* what makes it happen */
};

/* The transition from -> to, or NULL if there is none. */
const struct term_transition *term_transition_find(enum term_state,
    enum term_state);
const char		     *term_state_name(enum term_state);

/* "exit", "closed", ... (NULL for TERM_R_NONE): MSG_EXIT's reason. */
const char *term_reason_wire(enum term_reason);
/* The audit event a teardown for this reason writes: close, reap, ...
 * (TERM_NEVENTS for TERM_R_NONE: none). */
enum term_event term_reason_audit(enum term_reason);
/* The database's terminals.state once the terminal ends for it. */
enum term_dbstate term_reason_db(enum term_reason);

/* Names as the database holds them; NULL if out of range. */
const char *term_dbstate_name(enum term_dbstate);
const char *term_event_name(enum term_event);

#endif /* PTYD_TERMSTATE_H */
