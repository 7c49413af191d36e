/*
 * termlife.c -- a terminal's life: the state machine's one entry point,
 * teardown, eviction, the shell's end, draining, lingering, and the
 * reaper's predicate.
 *
 * Owns: every change of a terminal's state (term_set_state, after the
 * table of termstate.c), the signals that end a shell and the timer that
 * follows them, noticing a shell's end (its pidfd; the SIGCHLD loop for
 * what no pidfd watches).  Does not own: the registry and the objects
 * (term.c), the pty's I/O (termio.c), strays of a shell (proc.c), or the
 * reaper's schedule and claim (reap.c).
 *
 * A shell's end: each shell has a pidfd in the event loop, readable once
 * it has exited, and its callback waits for that one pid.  waitpid(-1)
 * looks at every child in the kernel: with 5,000 terminals each SIGCHLD
 * cost a millisecond or more that way (issue 17), twice per shell that
 * ended.  The SIGCHLD loop still reaps what no pidfd watches: the jobs a
 * shell leaves behind (reparented to ptyd, the subreaper), a shell whose
 * pidfd could not be opened (no pidfds, out of descriptors), one let go
 * of unreaped.  See term_sigchld for when it runs.
 */
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <sys/epoll.h>

#include "keeperlink.h"
#include "log.h"
#include "mirror.h"
#include "proc.h"
#include "proto.h"
#include "ptyd.h"
#include "record.h"
#include "term.h"
#include "term_int.h"
#include "termstate.h"

struct term *
term_evict_pick(const char *owner)
{
	struct term *t, *best = NULL;

	/* An exited terminal first (the earliest to end), else the least
	 * recently active.  Callers unregister the id being started first,
	 * so it can never be picked. */
	for (t = term_first(); t != NULL; t = term_next(t)) {
		if (owner != NULL && strcmp(t->owner, owner) != 0)
			continue;
		if (best == NULL) {
			best = t;
			continue;
		}
		if (t->state == TERM_EXITED && best->state != TERM_EXITED)
			best = t;
		else if (t->state == TERM_EXITED &&
		    best->state == TERM_EXITED) {
			if (t->ended_at < best->ended_at)
				best = t;
		} else if (t->state != TERM_EXITED &&
		    best->state != TERM_EXITED &&
		    t->last_activity < best->last_activity)
			best = t;
	}
	return (best);
}

/* Evict t to make room for req (the audit says which cap, for whom). */
void
term_evict(struct term *t, const char *cap, unsigned int max,
    const struct term_start_req *req, int64_t now)
{
	char detail[PROTO_SID_MAX + PROTO_OWNER_MAX + 128];

	snprintf(detail, sizeof(detail),
	    "%s %u reached starting %s%s%s; %s,"
	    " idle %llds",
	    cap, max, req->owner, *req->owner ? "/" : "", req->sid,
	    term_dbstate_name(
		t->state == TERM_EXITED ? TERM_DB_EXITED : TERM_DB_RUNNING),
	    (long long)((now - t->last_activity) / PTYD_SEC));
	term_teardown(t, TERM_R_EVICTED, req->actor, detail, now);
}

void
term_set_state(struct term *t, enum term_state to, enum term_reason why,
    int64_t now)
{
	const struct term_transition *tr;

	if ((tr = term_transition_find(t->state, to)) == NULL)
		fatalx("term %s: no transition %s -> %s", t->sid,
		    term_state_name(t->state), term_state_name(to));
	/* Out of running, by any way: its shares end with it (share.c). */
	if (t->state == TERM_RUNNING && to != TERM_RUNNING)
		share_term_end(t, now);
	t->state = to;
	if (why != TERM_R_NONE)
		t->reason = why;
	if (to == TERM_EXITED)
		rec_end(t, now);
	switch (tr->timer) {
	case TERM_TIMER_STOP:
		ev_timer_stop(&t->timer);
		break;
	case TERM_TIMER_KILL:
		t->hups = 1;
		ev_timer_at(&t->timer, now + PTYD_KILL_DELAY / PTYD_HUP_TRIES);
		break;
	case TERM_TIMER_DRAIN:
		ev_timer_at(&t->timer, now + PTYD_DRAIN_DEADLINE);
		break;
	case TERM_TIMER_LINGER:
		if (t->registered)
			ev_timer_at(&t->timer, now + ptyd_conf.linger);
		else
			ev_timer_stop(&t->timer);
		break;
	}
	mirror_mark(t);
	if (tr->wake)
		term_wake_viewers(t);
}

enum term_dbstate
term_db_state(const struct term *t)
{
	return (term_reason_db(t->reason));
}

/*
 * Teardown: unregister first (nothing can attach or type from here on),
 * SIGHUP and SIGCONT to the process group, SIGKILL after PTYD_KILL_DELAY
 * if the shell is still there (the ENDING state's timer).  Output keeps
 * draining to viewers; MSG_EXIT goes out once the shell is reaped and the
 * pty drained.  The audit event is the reason's (restart logs close).
 */
void
term_teardown(struct term *t, enum term_reason why, const char *actor,
    const char *detail, int64_t now)
{
	mirror_event(t, now, term_reason_audit(why), actor,
	    detail != NULL ? detail : term_reason_wire(why));

	if (t->registered)
		term_unregister(t);
	term_screen_finish(t);
	/*
	 * Ending already, or the shell already ended by itself and the pty
	 * is draining (its row stays exited with its own code, which is what
	 * happened): this teardown only ends the linger that would have
	 * followed.  Its event above says who asked.
	 */
	if (t->state != TERM_RUNNING)
		return;
	term_set_state(t, TERM_ENDING, why, now);
	term_signal(t, SIGHUP, 1);
	term_signal(t, SIGCONT, 1);
}

void
term_signal(struct term *t, int sig, int group)
{
	if (t->pid <= 0)
		return;
	if (keeperlink_up())
		keeperlink_signal(t, sig, group);
	else if (!t->reaped)
		(void)kill(group ? -t->pid : t->pid, sig);
}

/*
 * The keeper is gone: nobody will tell us of a shell's end any more, so
 * watch each one's pidfd (its status is then unknown: not our child).
 */
void
term_keeper_gone(int64_t now)
{
	struct term *t;

	(void)now;
	for (t = term_all_first(); t != NULL; t = term_all_next(t))
		if (t->pid > 0 && !t->reaped && t->pidfd == -1)
			term_watch_pid(t);
}

void
term_timer_cb(void *arg)
{
	struct term *t = arg;
	int64_t	     now = ev_now();

	switch (t->state) {
	case TERM_EXITED:
		term_linger_expired(t, now);
		break;
	case TERM_ENDING:
		/*
		 * Still there: SIGHUP again, PTYD_HUP_TRIES times in the
		 * grace.  A shell can miss one: bash's readline, caught
		 * between its check for a signal and its read(2), sits in the
		 * read with the signal noted; the next one interrupts it.
		 */
		if (t->hups < PTYD_HUP_TRIES) {
			t->hups++;
			term_signal(t, SIGHUP, 1);
			term_signal(t, SIGCONT, 1);
			ev_timer_at(&t->timer,
			    now + PTYD_KILL_DELAY / PTYD_HUP_TRIES);
			break;
		}
		/* Teardown's grace is over: the shell ignored SIGHUP. */
		term_signal(t, SIGKILL, 1);
		term_signal(t, SIGKILL, 0);
		t->killed = 1;
		mirror_mark(t);
		break;
	case TERM_DRAINING:
		/* Reaped but the pty never reached EIO: something outside
		 * the terminal holds the slave.  Unless a viewer is still
		 * owed bytes it is reading, stop waiting. */
		if (t->paused) {
			ev_timer_at(&t->timer, now + PTYD_SEC);
			break;
		}
		term_finish(t, now);
		break;
	case TERM_RUNNING:
		break; /* no timer runs while running */
	}
}

void
term_linger_expired(struct term *t, int64_t now)
{
	(void)now;
	if (t->state != TERM_EXITED)
		return;
	term_unregister(t);
}

/* The shell is gone (SIGCHLD).  Drain, then finish. */
void
term_child_exited(struct term *t, int status, int64_t now)
{
	char detail[64];

	if (t->reaped)
		return;
	t->reaped = 1;
	term_pid_remove(t);
	t->has_exit_code = status != TERM_STATUS_UNKNOWN;
	if (status == TERM_STATUS_UNKNOWN)
		t->exit_code = 0;
	else if (WIFEXITED(status))
		t->exit_code = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		t->exit_code = -WTERMSIG(status);
	else
		t->exit_code = 0;
	/* Every shell's end is audited with its code; after a teardown, the
	 * detail says which (the close, reap... event came first). */
	if (t->state == TERM_ENDING)
		snprintf(detail, sizeof(detail), "exit code %d, %s%s",
		    t->exit_code, term_reason_wire(t->reason),
		    t->killed ? ", after SIGKILL" : "");
	else if (t->has_exit_code)
		snprintf(detail, sizeof(detail), "exit code %d", t->exit_code);
	else
		snprintf(detail, sizeof(detail), "exit code unknown");
	mirror_event(t, now, TERM_EV_EXIT, NULL, detail);
	/* What the shell leaves behind: its background jobs, a double-forked
	 * child still on the tty.  They keep the slave open, so the pty
	 * reaches EIO once they are gone.  The tty is matched only while our
	 * master is open: once it is closed, the kernel may already have
	 * given the same /dev/pts number to a new terminal, whose processes
	 * a match by tty would hit (the session match still applies). */
	(void)proc_sweep(t->pid, t->master != -1 ? t->tty : 0, t->killed,
	    term_is_live_shell);
	if (t->state == TERM_EXITED)
		return; /* shutdown's deadline finished it already */
	if (t->master == -1) {
		term_finish(t, now);
		return;
	}
	term_set_state(t, TERM_DRAINING, TERM_R_NONE, now);
	/* Pick up what is readable now; EIO finishes. */
	term_io_cb(t->master, EPOLLIN, t);
}

/* SIGCHLD's loop: put off this long after a watched shell's SIGCHLD, and
 * run at most once in TERM_SIGCHLD_GAP for those of jobs left behind. */
#define TERM_SIGCHLD_DEFER PTYD_SEC
#define TERM_SIGCHLD_GAP   (PTYD_SEC / 10)

static struct ev_timer term_sigchld_timer;
static int	       term_sigchld_inited;
static int64_t	       term_reaped_at = -TERM_SIGCHLD_GAP; /* last pass */

/* The shell's pidfd is readable: it has exited.  Wait for that pid only. */
static void
term_pid_cb(int fd, uint32_t events, void *arg)
{
	struct term *t = arg;
	pid_t	     pid;
	int	     status;

	(void)fd;
	(void)events;
	do
		pid = waitpid(t->pid, &status, WNOHANG);
	while (pid == -1 && errno == EINTR);
	if (pid == t->pid) {
		term_child_exited(t, status, ev_now());
		return;
	}
	if (pid == -1 && errno == ECHILD) {
		/* Reaped by someone else (cannot be, with SIGCHLD at its
		 * default, sig.c): ended all the same, status unknown. */
		log_warnx("term %s: shell gone, its status unknown", t->sid);
		term_child_exited(t, TERM_STATUS_UNKNOWN, ev_now());
		return;
	}
	/* Exited but not yet waitable: another process traces it (strace,
	 * gdb), and we may wait only once the tracer has.  Its SIGCHLD comes
	 * then; stop watching, so as not to spin on a level-triggered
	 * descriptor, and let SIGCHLD's loop have it. */
	log_debug("term %s: pidfd readable, waitpid gave %ld", t->sid,
	    (long)pid);
	ev_io_del(&t->pio);
	close(t->pidfd);
	t->pidfd = -1;
}

/* The shell's pid was just hashed (term_pid_add): watch for its end. */
void
term_watch_pid(struct term *t)
{
	t->pidfd = proc_pidfd_open(t->pid);
	if (t->pidfd != -1 &&
	    ev_io_add(&t->pio, t->pidfd, EPOLLIN, term_pid_cb, t) == 0)
		return;
	log_debug("term %s: no pidfd (%s), SIGCHLD's loop watches it", t->sid,
	    strerror(errno));
	if (t->pidfd != -1)
		close(t->pidfd);
	t->pidfd = -1;
}

/* The pid leaves the hash (reaped, or let go of): stop watching it.  One
 * let go of unreaped (a start that failed after the fork, a terminal freed
 * at shutdown's deadline) is reaped now if it has ended; else its SIGCHLD,
 * a pid no longer hashed, runs the loop. */
void
term_unwatch_pid(struct term *t)
{
	if (t->pidfd != -1) {
		ev_io_del(&t->pio);
		close(t->pidfd);
		t->pidfd = -1;
	}
	if (!t->reaped)
		(void)waitpid(t->pid, NULL, WNOHANG);
}

static void
term_sigchld_cb(void *arg)
{
	(void)arg;
	term_reap_children(ev_now());
}

/* SIGCHLD's loop at when, at the latest. */
static void
term_reap_by(int64_t when)
{
	if (!term_sigchld_inited) {
		ev_timer_init(&term_sigchld_timer, term_sigchld_cb, NULL);
		term_sigchld_inited = 1;
	}
	if (!ev_timer_pending(&term_sigchld_timer) ||
	    term_sigchld_timer.when > when)
		ev_timer_at(&term_sigchld_timer, when);
}

/*
 * SIGCHLD, for pid (the signalfd's: several may come as one, with the
 * first one's pid).  waitpid(-1) looks at every child (1.2 ms with 5,000
 * terminals), so the loop runs at once only for a shell no pidfd watches,
 * whose end waits on it.  A watched shell needs nothing now (its pidfd's
 * callback waits for it), but the signal may stand for others too (a job
 * the shell left behind, reparented to us, the subreaper): the loop runs
 * TERM_SIGCHLD_DEFER later, so 5,000 shells ending in one burst cost one
 * pass a second, not one each.  A job's own SIGCHLD (or a shell's let go
 * of) runs it at most once per TERM_SIGCHLD_GAP: no one waits for those,
 * and a zombie holds no pty.
 */
void
term_sigchld(pid_t pid, int64_t now)
{
	struct term *t = term_find_pid(pid);

	if (t != NULL && t->pidfd == -1)
		term_reap_children(now);
	else if (t != NULL)
		term_reap_by(now + TERM_SIGCHLD_DEFER);
	else if (now - term_reaped_at >= TERM_SIGCHLD_GAP)
		term_reap_children(now);
	else
		term_reap_by(term_reaped_at + TERM_SIGCHLD_GAP);
}

/* Reap every child that has ended: waitpid(-1), which looks at every
 * child in the kernel (1.2 ms with 5,000). */
void
term_reap_children(int64_t now)
{
	struct term *t;
	pid_t	     pid;
	int	     status;

	term_reaped_at = now;
	for (;;) {
		pid = waitpid(-1, &status, WNOHANG);
		if (pid == -1 && errno == EINTR)
			continue;
		if (pid <= 0)
			break;
		if ((t = term_find_pid(pid)) != NULL)
			term_child_exited(t, status, now);
		else
			log_debug("reaped descendant %ld", (long)pid);
	}
}

/* The shell is reaped and the pty drained (or given up on): release the
 * fds, keep the ring, tell viewers, linger if still registered. */
void
term_finish(struct term *t, int64_t now)
{
	if (t->state == TERM_EXITED)
		return;
	ev_io_del(&t->io);
	if (t->master != -1)
		close(t->master);
	t->master = -1;
	term_input_drop(t);
	t->ended_at = now;
	/* Ended by itself unless a teardown gave it a reason. */
	term_set_state(t, TERM_EXITED,
	    t->reason == TERM_R_NONE ? TERM_R_EXIT : TERM_R_NONE, now);
	term_maybe_free(t);
}

void
term_shutdown_all(int64_t now)
{
	struct term *t;

	while ((t = term_first()) != NULL)
		term_teardown(t, TERM_R_SHUTDOWN, NULL, "ptyd shutting down",
		    now);
}

/* The reaper's predicate; see reap.c for why it is checked twice. */
int
term_reapable(const struct term *t, int64_t now, const char **why,
    int64_t *idle)
{
	*idle = 0;
	if (t->state == TERM_EXITED) {
		if (t->ended_at >= 0 && now - t->ended_at >= ptyd_conf.linger) {
			*why = "exited, linger over";
			*idle = now - t->ended_at;
			return (1);
		}
		return (0);
	}
	/* A shell that died is noticed through its pidfd (or, without one,
	 * by the SIGCHLD loop), and then drains and finishes on its own. */
	if (t->state != TERM_RUNNING)
		return (0);
	if (t->nviewers == 0 && t->unwatched_since >= 0 &&
	    now - t->unwatched_since >= ptyd_conf.idle_grace) {
		*why = "idle";
		*idle = now - t->unwatched_since;
		return (1);
	}
	return (0);
}
