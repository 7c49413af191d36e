/*
 * term.h -- terminals: the registry keyed by (owner, session_id), each
 * terminal's lifecycle, its pty, its output ring and its viewers.  The
 * interface of term.c, termio.c, termlife.c, termview.c and termadopt.c;
 * what only they share is in term_int.h.
 *
 * Owns: every struct term, registered or on its way out; the registry and
 * the cap; the pty master fd and the shell's pid while they live (under a
 * keeper, DESIGN 10, the keeper holds them too and tells of the shell's
 * end: keeperlink.c); pending input; backpressure (when to stop reading a
 * pty).  Does not own: the viewer connections (conn.c embeds a struct
 * viewer in each, and connstream.c is woken through it), forking
 * (spawn.c), killing strays (proc.c), the idle policy's timing (reap.c),
 * the memfd the ring lives in under a keeper (termmem.c), or the states'
 * table (termstate.c).
 *
 * Lifecycle: the state machine of termstate.h, every change through
 * term_set_state.  Teardown for close, reap, evict, restart and shutdown
 * unregisters first, so nothing can attach to or type into a terminal that
 * is going, then signals and waits on timers, never blocking.  An exited
 * terminal lingers while registered, then is retired and freed.
 *
 * Time is `now`, monotonic microseconds, passed in by the caller.
 */
#ifndef PTYD_TERM_H
#define PTYD_TERM_H

#include <sys/queue.h>
#include <sys/types.h>

#include <stdint.h>

#include "ev.h"
#include "once.h"
#include "ring.h"
#include "share.h"
#include "termstate.h"

struct store;
struct term;
struct termhdr;
struct kadopt;

/* Size changes a terminal keeps for viewers behind (struct term's
 * sizes): one further behind than that gets the older ones coalesced. */
#define TERM_SIZES 4

/* Error codes; request.c maps them to PROTO_ERR_*. */
enum term_err {
	TERM_OK = 0,
	TERM_EBADREQ, /* invalid session_id or workspace */
	TERM_ENOTRUNNING,
	TERM_EVIEWERS,	 /* viewer limit */
	TERM_EINPUTFULL, /* pending input over the limit */
	TERM_EINTERNAL,
	TERM_ELIMIT, /* the cap is full of other owners' terminals */
	TERM_ESPAWN, /* the shell could not start (spawn_error says why) */
	TERM_EBUSY,  /* the keeper did not take an input in time: retry */
};

/* The terminal's side of one attached viewer (embedded in a conn). */
struct viewer {
	TAILQ_ENTRY(viewer) entry;
	struct term *term;  /* NULL once detached */
	uint64_t     pos;   /* next position to send */
	char	    *actor; /* from attach, for detach's
						   audit event; NULL: unknown */
	void (*wake)(struct viewer *);
	void *arg;
	/* attach=screen: the redraw once ready (the viewer's to send and
	 * unref); screen_wait while the emulator catches up for it. */
	struct screen_shot *shot;
	int		    screen_wait;
	int		    screen_raw; /* PROTO_REPLAY_*: say so, once */
	/* Who watches (watch.c, DESIGN 3): set before term_attach; zero
	 * is the owner's own stream, role control. */
	char	   *name;	  /* the user, for the watchers list */
	uint8_t	    role;	  /* PROTO_ROLE_*; 0: control */
	uint32_t    share_id;	  /* 0: the owner's own */
	int64_t	    since;	  /* monotonic us */
	int	    watch_due;	  /* a watchers frame is owed */
	int	    watch_wanted; /* the client asked for them */
	const char *share_end;	  /* its share ended: "revoked", "expired" */
	/* The pty's size as the stream tells it (MSG_RESIZE_EV, DESIGN
	 * 3), to a viewer that asked: the last change of t->sizes it has
	 * passed, and the size owed where it stands (size_due). */
	int	 size_wanted;
	int	 size_due;
	uint64_t size_seq;
	uint16_t size_rows, size_cols;
};
TAILQ_HEAD(viewer_list, viewer);

struct term_chunk;
struct screen;
struct screen_shot;
STAILQ_HEAD(term_chunks, term_chunk);

struct term {
	/*
	 * First, in the object's first cache line (term_new aligns it): what
	 * the reaper's walk reads of every registered terminal, the link it
	 * follows and the predicate's fields, so that a walk over thousands
	 * costs one miss a terminal, not four (issue 17).
	 */
	TAILQ_ENTRY(term) reg_entry; /* registered, in start order */
	enum term_state state;	     /* term_set_state only */
	unsigned int	nviewers;
	int64_t		unwatched_since; /* -1: watched */
	int64_t		ended_at;	 /* -1: running */

	TAILQ_ENTRY(term) all_entry; /* every term object */
	TAILQ_ENTRY(term) dirty_entry;
	struct term *hnext; /* (owner, sid) hash chain */
	struct term *pnext; /* pid hash chain */

	int64_t id; /* incarnation, unique */
	char   *owner;
	char   *sid;
	char   *workspace;

	enum term_reason reason; /* why it ends; NONE: running */
	int		 registered;
	size_t		 reg_idx; /* in term.c's array of the registered */
	int		 dirty; /* mirror.c: row to push */
	int		 in_pid_hash;
	int		 free_queued;

	pid_t	     pid;    /* shell = pgrp = session */
	int	     reaped; /* the shell was waited for */
	int	     pidfd;  /* watches the shell's end; -1: SIGCHLD's loop */
	struct ev_io pio;
	int	     killed; /* SIGKILL sent */
	int	     hups;   /* SIGHUPs sent since the teardown */
	int	     master; /* -1 once closed */
	struct ev_io io;
	int	     paused; /* a viewer is a full ring behind */
	int	     hup;    /* slave side gone */
	int	     spoke;  /* the shell has written */
	dev_t	     tty;    /* slave device, to find strays */

	uint16_t    rows;
	uint16_t    cols;
	/* The last TERM_SIZES changes of rows x cols, each at the ring's
	 * end when it was made, the one numbered n (1, 2, ...: size_seq
	 * so far) at sizes[(n - 1) % TERM_SIZES]: a viewer behind gets
	 * each at its place in the output (termio.c). */
	struct term_size {
		uint64_t pos;
		uint16_t rows, cols;
	} sizes[TERM_SIZES];
	uint64_t       size_seq;
	uint64_t    base; /* first position */
	struct ring ring;
	struct screen *screen; /* the emulator's view, from the first need */

	int64_t started_at; /* monotonic us */
	int64_t last_activity;
	int	has_exit_code;
	int	exit_code;

	struct viewer_list viewers;

	struct term_chunks input;
	struct once	   once; /* input ids accepted */
	size_t		   in_pending;
	uint64_t	   bytes_in;
	uint64_t	   bytes_out;

	struct ev_timer timer; /* kill, drain or linger */
	struct ev_defer defer; /* wake viewers / free */
	int		wake_queued;

	/* The emulator catching up for waiting viewers (termview.c). */
	TAILQ_ENTRY(term) screen_entry;
	int	 screen_queued;
	unsigned int screen_waiters;
	uint64_t screen_target; /* where their screen stands */
	uint64_t screen_spent;	/* units spent on it so far */

	/* Under a keeper (DESIGN 10): the memfd the ring lives in, whose
	 * header a ptyd taking over reads; NULL without one. */
	struct termhdr *hdr;
	/* After a take-over: where its viewers stood (0: none), read no
	 * more than a ring past it until they are back (hold_views more
	 * attaches with a position, termview.c) or the hold ends
	 * (termadopt.c). */
	uint64_t     hold;
	unsigned int hold_views;
	/* Shares (share.c) and the watchers event (watch.c). */
	struct share_list shares;
	unsigned int	  nshares;
	struct ev_timer	  watch_timer;
	int64_t		  watch_sent; /* the last broadcast; 0: none */

	/* Recordings (record.c): recorded by the policy, survives a
	 * take-over in the header; the recording now (0: none). */
	int	record;
	int64_t rec_id;
};

struct term_start_req {
	const char  *owner;
	const char  *sid;
	const char  *workspace; /* "" = default */
	unsigned int rows;	/* 0 = default */
	unsigned int cols;
	int	     restart;
	const char  *actor;
	int	     record; /* start asked to record */
};

void term_init(struct store *);
void term_done(void);

/* Registry. */
struct term *term_find(const char *owner, const char *sid);
struct term *term_find_pid(pid_t);
void	     term_register(struct term *);
void	     term_unregister(struct term *);
unsigned int term_count(void);
unsigned int term_count_owner(const char *owner);
struct term *term_first(void); /* registered, start order */
/* The registered terminals as an array, in no order, valid until the next
 * register or unregister: a walk over it lets the CPU fetch many
 * terminals at once, where the list's links make it wait for each one
 * (the reaper's walk over thousands, issue 17). */
struct term *const *term_registered(size_t *n);
struct term *term_next(struct term *);
/* Every terminal object, registered or on its way out. */
struct term *term_all_first(void);
struct term *term_all_next(const struct term *);
void	     term_stats(unsigned int *terms, unsigned int *exited,
	    unsigned int *viewers);

/*
 * A terminal object with no process yet, not registered: what term_start
 * spawns into, and what unit tests drive without forking.
 */
struct term *term_new(const char *owner, const char *sid, const char *workspace,
    unsigned int rows, unsigned int cols, uint64_t base, int64_t now);

/*
 * A terminal the last ptyd ran, from what the keeper handed over (its
 * header, pty and pid): registered, reading, its viewers to come back.
 * NULL, with the descriptors closed, if its header cannot be used.
 */
struct term *term_adopt(struct kadopt *, int64_t now);
/* Whether term_adopt could take it (the header mapped and checked, then
 * let go): -1 with why if not. */
int	     term_adopt_probe(struct kadopt *, const char **why);
/* After a take-over: a redraw asked of a terminal whose ring wrapped. */
void	     term_adopt_redraw(struct term *);
/* Signal t's shell (group: its process group), through the keeper when
 * there is one, which knows whether the pid is still the shell's. */
void	     term_signal(struct term *, int sig, int group);
struct term *term_find_id(int64_t id);
/* The keeper is gone: shells' ends are watched here from now on. */
void	     term_keeper_gone(int64_t now);

/* Request policy. */
int	 term_sid_valid(const char *);
void	 term_clamp(unsigned int *rows, unsigned int *cols, int start);
int	 term_workspace_resolve(const char *in, char *out, size_t size);
uint64_t term_base(const struct term *old, uint64_t now_ns);

/* The requests. */
enum term_err term_start(const struct term_start_req *, int64_t now,
    struct term **, int					       *reused);
enum term_err term_input(const char *owner, const char *sid, const uint8_t *,
    size_t, int64_t					now);
/*
 * term_input with an input_id (NULL or "": none), and the audit log's
 * "input" event of actor once it is accepted.  An id this terminal has
 * already accepted writes nothing and answers TERM_OK with *duplicate set;
 * an input that is refused (not running, input full) leaves no id behind,
 * so its retry can still succeed.
 */
enum term_err term_input_once(const char *owner, const char *sid,
    const char *input_id, const char *actor, const uint8_t *, size_t,
    int64_t now, int *duplicate);
enum term_err term_resize(const char *owner, const char *sid, unsigned int rows,
    unsigned int cols, int64_t now);
int	      term_close(const char *owner, const char *sid, const char *actor,
	      int64_t now);

/*
 * Attach v: lookup and subscribe in one step.  On TERM_OK, *resume is
 * where output starts for v and *lost the bytes the viewer asked for that
 * are gone (a MSG_GAP is due when nonzero).
 */
enum term_err term_attach(const char *owner, const char *sid, struct viewer *,
    int has_pos, uint64_t pos, const char *actor, int64_t now, uint64_t *resume,
    uint64_t *lost);
void	      term_detach(struct viewer *, int64_t now);
/*
 * An attached viewer that asked for the screen and has no usable resume
 * position gets the screen as it stands at the ring's end (v->shot, a
 * reference to the framed redraw), then output from there.  If the
 * emulator cannot catch up within one step (SCREEN_SLICE_WORK), the
 * viewer waits (v->screen_wait, woken through v->wake) while it catches
 * up a step a loop turn, terminals in turn.  No screen (the terminal is
 * too big for an emulator, SCREEN_CELLS_MAX, or catching up would cost
 * more than SCREEN_SYNC_WORK): v->shot stays NULL and the viewer gets the
 * raw replay from where it stands.
 */
void term_viewer_screen(struct viewer *);
/* Forget t's place in that queue (t is being freed). */
void term_screen_cancel(struct term *);
/* t is ending: its waiting viewers get the screen as it stands. */
void term_screen_finish(struct term *);
/* Whether no step of any emulator ran this loop turn yet; if so, the
 * caller's does (a step a turn for all terminals). */
int term_screen_may_step(void);
/* Where output to v may end now (holds back an incomplete character). */
uint64_t term_viewer_limit(const struct term *, uint64_t pos);
/*
 * The size changes after *seq (MSG_RESIZE_EV, termio.c): where the first
 * kept one stands (UINT64_MAX: none), output to a viewer that has passed
 * *seq stops there; and the last at or before pos, which moves *seq past
 * it (1 with its size, 0 if none).
 */
uint64_t term_size_next(const struct term *, uint64_t seq);
int	 term_size_reached(const struct term *, uint64_t *seq, uint64_t pos,
	 uint16_t *rows, uint16_t *cols);
/* A viewer made progress: reading the pty may resume. */
void term_viewer_progress(struct term *);
/* How many bytes may be read without overwriting what a viewer needs. */
size_t term_read_limit(const struct term *);
/* Finished: exited and every byte of the ring is before end. */
int term_finished(const struct term *);

/* Lifecycle. */
/*
 * The one way a terminal's state changes: the transition must be in
 * termstate.c's table (anything else is a bug: fatalx).  Sets the reason
 * (unless TERM_R_NONE), arms or stops the timer as the table says, marks
 * the mirror's row and wakes viewers where the table says so.
 */
void term_set_state(struct term *, enum term_state, enum term_reason,
    int64_t now);
/* The database's terminals.state of t now. */
enum term_dbstate term_db_state(const struct term *);
void	     term_teardown(struct term *, enum term_reason, const char *actor,
	    const char *detail, int64_t now);
void	     term_evict(struct term *, const char *cap, unsigned int max,
	    const struct term_start_req *, int64_t now);
struct term *term_evict_pick(const char *owner);
/* status: waitpid's, or TERM_STATUS_UNKNOWN (not our child: no code). */
#define TERM_STATUS_UNKNOWN (-1)
/* Places of max_viewers that streams through shares never take: the
 * owner's own page always finds one (DESIGN 2). */
#define TERM_OWNER_PLACES 2
void	     term_child_exited(struct term *, int status, int64_t now);
void	     term_reap_children(int64_t now);
void	     term_sigchld(pid_t, int64_t now);
void	     term_linger_expired(struct term *, int64_t now);
void	     term_shutdown_all(int64_t now);
int	     term_none_left(void);
void	     term_force_finish(int64_t now);

/* Reaper hooks (reap.c). */
int term_reapable(const struct term *, int64_t now, const char **why,
    int64_t *idle);

#endif /* PTYD_TERM_H */
