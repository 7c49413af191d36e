/*
 * termstate.h -- a terminal's life as a state machine: its states, the
 * reasons it ends for, and the one table of legal transitions.
 *
 * Owns: what each state means, what each reason is called on the wire
 * (MSG_EXIT, terminal_closed), in the audit log and in the database, and
 * which transitions exist and which timer each one arms.  Does not own:
 * making a transition happen (term_set_state in term.c is the only place
 * that changes a terminal's state, and it asserts the transition is in
 * this table) or the registry (a terminal leaves it when its teardown
 * starts, or when its linger ends).
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
/* The audit event a teardown for this reason writes: close, reap, ... */
const char *term_reason_audit(enum term_reason);
/* The database's terminals.state once the terminal ends for it. */
const char *term_reason_db(enum term_reason);

#endif /* PTYD_TERMSTATE_H */
