/*
 * termadopt.c -- a terminal taken over from the ptyd before us (DESIGN 10).
 *
 * Owns: turning what the keeper handed over (the terminal's memfd, its
 * pty master, the shell's pid and, if it ended while no ptyd ran, its
 * status) back into a struct term that goes on where the last one
 * stopped: the same id, positions, size, owner, state and timers.  Does
 * not own the header's layout (lib/termhdr.h) or its mapping (termmem.c).
 *
 * What the header says the last ptyd was doing, and what we do:
 *
 *   running          registered again, read again; viewers come back
 *                    (re-attach in place, or Last-Event-ID) and find every
 *                    byte, the read the last one was killed in included
 *   ending           its teardown goes on: SIGHUP again, the kill timer
 *                    armed afresh
 *   draining         the shell's end was told: drained to EIO as before
 *   exited           its row written again, lingering as before if it was
 *                    registered, then let go
 *   ended while no ptyd ran (the keeper's status): its exit, with the
 *                    code, told now, as if we had seen it
 */
#include <sys/epoll.h>
#include <sys/ioctl.h>

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "keeperlink.h"
#include "log.h"
#include "mirror.h"
#include "ptyd.h"
#include "record.h"
#include "term.h"
#include "term_int.h"
#include "termmem.h"
#include "termstate.h"

static struct ev_timer term_hold_timer;
static int	       term_hold_inited;

/* The holds no viewer came back to end (term_attach ends the others):
 * each terminal reads on, paced by the viewers it has. */
static void
term_adopt_hold_cb(void *arg)
{
	struct term *t;

	(void)arg;
	for (t = term_all_first(); t != NULL; t = term_all_next(t)) {
		if (t->hold == 0)
			continue;
		t->hold = 0;
		mirror_mark(t);
		term_viewer_progress(t);
	}
}

static void
term_adopt_hold_arm(int64_t now)
{
	if (!term_hold_inited) {
		ev_timer_init(&term_hold_timer, term_adopt_hold_cb, NULL);
		term_hold_inited = 1;
	}
	if (!ev_timer_pending(&term_hold_timer))
		ev_timer_at(&term_hold_timer, now + ptyd_conf.stall_timeout);
}

/* Give up a terminal the keeper handed over: it ends with its pty. */
static void
term_adopt_refuse(struct kadopt *a, struct termhdr *h, const char *why)
{
	struct term t;

	if (why != NULL)
		log_warnx("terminal %lld: not taken over: %s",
		    (long long)a->id, why);
	close(a->master);
	termmem_unmap(h);
	memset(&t, 0, sizeof(t));
	t.id = a->id;
	t.sid = (char *)"";
	keeperlink_forget(&t);
}

static int
term_adopt_check(struct kadopt *a, struct termhdr *h, const char **why)
{
	if (h->id != a->id)
		*why = "its header names another terminal";
	else if (h->state >= TERM_NSTATES || h->reason >= TERM_NREASONS)
		*why = "its state is not one this binary knows";
	else if (h->owner[sizeof(h->owner) - 1] != '\0' ||
	    h->sid[sizeof(h->sid) - 1] != '\0' ||
	    h->workspace[sizeof(h->workspace) - 1] != '\0' ||
	    !term_sid_valid(h->sid))
		*why = "its names are damaged";
	else
		return (0);
	return (-1);
}

int
term_adopt_probe(struct kadopt *a, const char **why)
{
	struct termhdr *h;
	int		rv;

	if (termmem_map(a->memfd, &h, why) == -1)
		return (-1);
	rv = term_adopt_check(a, h, why);
	termmem_unmap(h);
	return (rv);
}

/* The object, as the header describes it, not yet reading. */
static struct term *
term_adopt_object(struct kadopt *a, struct termhdr *h, int64_t now)
{
	struct term *t;
	unsigned int rows = h->rows, cols = h->cols;

	/* Written by a process that parses hostile output: as bounded as
	 * any client's size. */
	term_clamp(&rows, &cols, 1);
	t = term_new(h->owner, h->sid, h->workspace, rows, cols, h->base,
	    now);
	t->id = h->id;
	ring_free(&t->ring);
	ring_init_ext(&t->ring, termmem_ring(h), h->ring_size, h->base,
	    atomic_load(&h->end));
	t->hdr = h;
	t->pid = a->pid;
	t->master = a->master;
	t->tty = (dev_t)h->tty;
	t->started_at = h->started_at;
	t->last_activity = h->last_activity;
	t->spoke = (h->flags & TERMHDR_F_SPOKE) != 0;
	t->killed = (h->flags & TERMHDR_F_KILLED) != 0;
	t->hup = (h->flags & TERMHDR_F_HUP) != 0;
	t->bytes_in = h->bytes_in;
	t->bytes_out = h->bytes_out;
	t->reason = (enum term_reason)h->reason;
	/* Its viewers went with the last ptyd: the grace starts now. */
	t->unwatched_since = now;
	/* Where they stood, if the pty had to wait for them: it waits for
	 * them to come back (a re-attach takes a moment; term_attach ends
	 * the hold when the last is back), not longer than a stuck viewer
	 * would be waited for.  How many: the header says, unless a ptyd
	 * of an older layout wrote the hold (then the first back ends it). */
	if (h->hold != 0 && h->hold >= ring_start(&t->ring) &&
	    h->hold <= ring_end(&t->ring)) {
		t->hold = h->hold;
		t->hold_views = 1;
		if (h->layout >= 4 && h->hold_of == h->hold &&
		    h->hold_views > 0)
			t->hold_views = h->hold_views;
		term_adopt_hold_arm(now);
	}
	return (t);
}

/*
 * Ended already: its row is written again (the last ptyd may have died
 * before it wrote it), and it lingers if it was registered, so a viewer
 * that comes back still gets its tail and terminal_closed.
 */
static void
term_adopt_exited(struct term *t, struct termhdr *h, int64_t now)
{
	t->reaped = 1;
	t->has_exit_code = (h->flags & TERMHDR_F_REAPED) != 0;
	t->exit_code = h->exit_code;
	close(t->master);
	t->master = -1;
	t->ended_at = now;
	term_set_state(t, TERM_EXITED, TERM_R_NONE, now);
	mirror_mark(t);
	term_maybe_free(t);
}

struct term *
term_adopt(struct kadopt *a, int64_t now)
{
	struct termhdr *h;
	struct term    *t;
	const char     *why;
	uint64_t	got;
	enum term_state was;

	if (termmem_map(a->memfd, &h, &why) == -1) {
		close(a->memfd);
		h = NULL;
		term_adopt_refuse(a, h, why);
		return (NULL);
	}
	close(a->memfd);
	if (term_adopt_check(a, h, &why) == -1) {
		term_adopt_refuse(a, h, why);
		return (NULL);
	}
	was = (enum term_state)h->state;
	got = termmem_recover(h);
	t = term_adopt_object(a, h, now);
	/* Before anything syncs the header from t (term_register). */
	t->record = (h->flags & TERMHDR_F_RECORD) != 0;
	if ((h->flags & TERMHDR_F_REG) && term_find(t->owner, t->sid) == NULL)
		term_register(t);
	if (was == TERM_EXITED) {
		term_adopt_exited(t, h, now);
		share_adopt(t, now);
		return (t);
	}
	term_pid_add(t);
	if (ev_io_add(&t->io, t->master, EPOLLIN, term_io_cb, t) == -1)
		log_warn("term %s: epoll add", t->sid);
	/* Recorded: the last ptyd's part ended with it (takeover); the
	 * next one starts here, before any output is read. */
	rec_begin(t, now);
	if (got > 0)
		log_info("term %s: %llu bytes of a read the last ptyd was "
			 "killed in recovered",
		    t->sid, (unsigned long long)got);
	if (was != TERM_RUNNING && !(h->flags & TERMHDR_F_REAPED)) {
		/* A teardown under way: on with it. */
		term_set_state(t, TERM_ENDING, TERM_R_NONE, now);
		if (!a->exited) {
			term_signal(t, SIGHUP, 1);
			term_signal(t, SIGCONT, 1);
		}
	}
	if (h->flags & TERMHDR_F_REAPED) {
		/* Its end was told already (its event is in the log). */
		t->reaped = 1;
		t->has_exit_code = 1;
		t->exit_code = h->exit_code;
		term_pid_remove(t);
		term_set_state(t, TERM_DRAINING, TERM_R_NONE, now);
		term_io_cb(t->master, EPOLLIN, t);
	} else if (a->exited)
		term_child_exited(t, a->status, now);
	/* Its shares go on as it does (DESIGN 10): back from the header. */
	share_adopt(t, now);
	mirror_mark(t);
	return (t);
}

/*
 * The ring kept what the emulator needs unless it wrapped: then the
 * screen rebuilt from it may lack what scrolled out long ago, so the
 * foreground program is asked to redraw (SIGWINCH through the pty, to
 * whichever group has it).
 */
void
term_adopt_redraw(struct term *t)
{
	if (t->master == -1 || ring_start(&t->ring) == t->base)
		return;
	if (ioctl(t->master, TIOCSIG, SIGWINCH) == -1)
		log_debug("term %s: TIOCSIG", t->sid);
}
