/*
 * termview.c -- a terminal's viewers: attach (lookup and subscribe in one
 * step, so a reap and an attach never both win) and detach.
 *
 * Owns: the viewer list of each terminal, where each new viewer starts
 * (resume position, gap), the watched/unwatched bookkeeping and the
 * attach, detach and gap audit events.  Does not own: the viewer
 * connections (conn.c embeds a struct viewer, connstream.c writes to
 * it), or the output (termio.c reads it, ring.c keeps it).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ev.h"
#include "log.h"
#include "mirror.h"
#include "proto.h"
#include "ptyd.h"
#include "screen.h"
#include "term.h"
#include "term_int.h"
#include "watch.h"
#include "xmalloc.h"

/* Viewers. */

/* attach and detach for the owner's own streams; join and leave, naming
 * the share and the role, for a stream through a share. */
static void
term_view_event(struct term *t, const struct viewer *v, enum term_event own,
    enum term_event shared, int64_t now)
{
	char detail[96];

	if (v->share_id == 0) {
		snprintf(detail, sizeof(detail), "viewers %u", t->nviewers);
		mirror_event(t, now, own, v->actor, detail);
		return;
	}
	snprintf(detail, sizeof(detail), "share=%u role=%s viewers %u",
	    v->share_id, v->role == PROTO_ROLE_CONTROL ? "control" : "view",
	    t->nviewers);
	mirror_event(t, now, shared, v->actor, detail);
}

/*
 * Whether v may take a place: the limit, and for a stream through a share
 * all but TERM_OWNER_PLACES of it (half, for a limit below twice that),
 * so that whoever holds a link cannot fill the places and lock the
 * owner's own page out.
 */
static int
term_view_room(const struct term *t, const struct viewer *v)
{
	const struct viewer *w;
	unsigned int	     max = ptyd_conf.max_viewers, keep, shared = 0;

	if (t->nviewers >= max)
		return (0);
	if (v->share_id == 0)
		return (1);
	keep = max >= 2 * TERM_OWNER_PLACES ? TERM_OWNER_PLACES : max / 2;
	TAILQ_FOREACH (w, &t->viewers, entry)
		if (w->share_id != 0)
			shared++;
	return (shared + keep < max);
}

/* Where a viewer asking for pos (if has_pos) resumes, and what it lost:
 * the bytes between pos and the ring's start. */
static void
term_attach_resume(const struct term *t, int has_pos, uint64_t pos,
    uint64_t *resume, uint64_t *lost)
{
	uint64_t first = ring_boundary(&t->ring, ring_start(&t->ring));

	/* The id of terminal_closed is one past the last byte (MSG_EXIT.pos):
	 * a client resuming from it has seen everything, so it must get no
	 * byte again, only the close. */
	if (has_pos && t->state == TERM_EXITED && pos == ring_end(&t->ring) + 1)
		pos = ring_end(&t->ring);
	/* A position outside this incarnation (a stale id from an earlier
	 * one, or garbage) counts as its base. */
	if (has_pos && (pos < t->base || pos > ring_end(&t->ring)))
		pos = t->base;
	if (!has_pos)
		*resume = first;
	else if (pos >= ring_start(&t->ring))
		*resume = pos;
	else {
		*resume = first;
		*lost = first - pos;
	}
}

enum term_err
term_attach(const char *owner, const char *sid, struct viewer *v, int has_pos,
    uint64_t pos, const char *actor, int64_t now, uint64_t *resume,
    uint64_t *lost)
{
	struct term *t;
	char	     detail[64];
	int	     back;

	*lost = 0;
	if ((t = term_find(owner, sid)) == NULL)
		return (TERM_ENOTRUNNING);
	if (!term_view_room(t, v))
		return (TERM_EVIEWERS);

	term_attach_resume(t, has_pos, pos, resume, lost);
	v->term = t;
	v->pos = *resume;
	/*
	 * A take-over holds the pty where its viewers stood (termadopt.c)
	 * until they are back: each one resuming where the ring still
	 * holds counts, wherever it resumes (ptyd.fcgi's in-place attach
	 * resumes past the hold, which the last read wrote).  With the last
	 * of them back, they hold the ring themselves and pace the shell as
	 * they read.  Kept to its timer, the hold would stop the pty a ring
	 * past it while they, caught up, wait: the stall timeout without a
	 * byte.  Ended at the first back, it would let the pty run over
	 * where one not yet back stood: a gap.
	 */
	back = t->hold != 0 && has_pos && *lost == 0 && --t->hold_views == 0;
	if (back)
		t->hold = 0;
	/* Kept for the detach event: the audit log pairs the two by actor
	 * (sql/audit.sql, connected now). */
	free(v->actor);
	v->actor = actor != NULL && *actor != '\0' ? xstrdup(actor) : NULL;
	TAILQ_INSERT_TAIL(&t->viewers, v, entry);
	t->nviewers++;
	t->unwatched_since = -1;
	mirror_mark(t);
	term_view_event(t, v, TERM_EV_ATTACH, TERM_EV_JOIN, now);
	v->since = now;
	v->share_end = NULL;
	/* The owner's stream: the watchers once its replay is out. */
	v->watch_due = v->watch_wanted;
	watch_changed(t, now);
	if (*lost > 0) {
		snprintf(detail, sizeof(detail), "lost %llu bytes",
		    (unsigned long long)*lost);
		mirror_event(t, now, TERM_EV_GAP, actor, detail);
	}
	term_wake_viewers(t);
	/* The hold gone: read on, as far as the viewers allow. */
	if (back)
		term_viewer_progress(t);
	return (TERM_OK);
}

void
term_detach(struct viewer *v, int64_t now)
{
	struct term *t = v->term;

	if (t == NULL)
		return;
	TAILQ_REMOVE(&t->viewers, v, entry);
	v->term = NULL;
	t->nviewers--;
	/* The last one waiting for the screen gone: nobody to draw it for. */
	if (v->screen_wait && --t->screen_waiters == 0) {
		term_screen_cancel(t);
		t->screen_spent = 0;
	}
	v->screen_wait = 0;
	if (t->nviewers == 0)
		t->unwatched_since = now;
	mirror_mark(t);
	term_view_event(t, v, TERM_EV_DETACH, TERM_EV_LEAVE, now);
	free(v->actor);
	v->actor = NULL;
	free(v->name);
	v->name = NULL;
	v->watch_due = 0;
	watch_changed(t, now);
	/* The one who held the pty back may be the one leaving. */
	term_viewer_progress(t);
	term_maybe_free(t);
}

/*
 * The screen for waiting viewers: terminals whose emulator is catching up
 * take one step each in turn, one step a loop turn for all of them (an
 * attach or a resize that stepped this turn counts: term_screen_may_step),
 * so output that costs seconds to draw delays nobody else's keystrokes by
 * more than a step.
 */
static TAILQ_HEAD(, term) screen_queue = TAILQ_HEAD_INITIALIZER(screen_queue);
static struct ev_defer screen_defer;
static int	       screen_defer_inited;
static uint64_t	       screen_stepped; /* the turn a step last ran in */

static void term_screen_pump(void *);

int
term_screen_may_step(void)
{
	if (screen_stepped == ev_turn())
		return (0);
	screen_stepped = ev_turn();
	return (1);
}

static void
term_screen_enqueue(struct term *t)
{
	if (!screen_defer_inited) {
		ev_defer_init(&screen_defer, term_screen_pump, NULL);
		screen_defer_inited = 1;
	}
	if (!t->screen_queued) {
		TAILQ_INSERT_TAIL(&screen_queue, t, screen_entry);
		t->screen_queued = 1;
	}
	ev_defer_next(&screen_defer);
}

void
term_screen_cancel(struct term *t)
{
	if (!t->screen_queued)
		return;
	TAILQ_REMOVE(&screen_queue, t, screen_entry);
	t->screen_queued = 0;
}

/* The screen at the emulator's position, for v: output follows from the
 * character it stands before. */
static void
term_screen_give(struct term *t, struct viewer *v)
{
	v->pos = ring_char_end(&t->ring, ring_start(&t->ring),
	    screen_fed(t->screen));
	v->shot = screen_shot_get(t->screen, v->pos);
}

/* Why the waiting viewers get no screen (PROTO_REPLAY_*), or 0: the
 * terminal grew too big for an emulator, or it has none to show. */
static int
term_screen_raw(const struct term *t)
{
	if (t->screen == NULL || !screen_fits(t->rows, t->cols))
		return (PROTO_REPLAY_SIZE);
	if (!screen_valid(t->screen, &t->ring))
		return (PROTO_REPLAY_COST);
	return (0);
}

/*
 * The waiting viewers get the screen where the emulator stands, and the
 * output after it: the whole screen once caught up; short of that (its
 * work over SCREEN_SYNC_WORK, or the terminal ending) the rest is
 * replayed as output, audited.  No screen to show: the raw replay from
 * where they wait.
 */
static void
term_screen_hand_out(struct term *t)
{
	struct viewer *v;
	char	       detail[128];
	int	       raw = term_screen_raw(t), part;

	part = raw == 0 && screen_fed(t->screen) < t->screen_target;
	if (part) {
		snprintf(detail, sizeof(detail),
		    "screen drawn to %llu of %llu bytes in %llu units: the "
		    "rest replayed",
		    (unsigned long long)(screen_fed(t->screen) - t->base),
		    (unsigned long long)(t->screen_target - t->base),
		    (unsigned long long)t->screen_spent);
		log_info("term %s: %s", t->sid, detail);
	}
	term_screen_cancel(t);
	TAILQ_FOREACH(v, &t->viewers, entry) {
		if (!v->screen_wait)
			continue;
		v->screen_wait = 0;
		v->screen_raw = raw;
		if (raw == 0)
			term_screen_give(t, v);
		if (part)
			mirror_event(t, ev_now(), TERM_EV_SCREEN, v->actor,
			    detail);
		v->wake(v);
	}
	t->screen_waiters = 0;
	t->screen_spent = 0;
	term_viewer_progress(t);
}

/* A terminal ending hands out its waiting viewers' screens as they stand
 * (a shutdown's deadline must not pass with viewers still waiting). */
void
term_screen_finish(struct term *t)
{
	if (t->screen_waiters > 0)
		term_screen_hand_out(t);
}

/* One step for the terminal first in line (none if an attach or a resize
 * stepped this turn already). */
static void
term_screen_pump(void *arg)
{
	struct term *t = TAILQ_FIRST(&screen_queue);
	uint64_t     before;
	int	     done = 0;

	(void)arg;
	if (t == NULL)
		return;
	if (!term_screen_may_step()) {
		ev_defer_next(&screen_defer);
		return;
	}
	term_screen_cancel(t);
	if (term_screen_raw(t) != PROTO_REPLAY_SIZE) {
		before = screen_work(t->screen);
		done = screen_sync_step(t->screen, &t->ring, t->screen_target,
		    SCREEN_SLICE_WORK);
		t->screen_spent += screen_work(t->screen) - before;
	}
	if (done || term_screen_raw(t) == PROTO_REPLAY_SIZE ||
	    t->screen_spent >= SCREEN_SYNC_WORK)
		term_screen_hand_out(t);
	else
		term_screen_enqueue(t);
	if (!TAILQ_EMPTY(&screen_queue))
		ev_defer_next(&screen_defer);
}

void
term_viewer_screen(struct viewer *v)
{
	struct term *t = v->term;
	uint64_t     target;

	/* Too big for an emulator: the raw replay, from where v stands. */
	if (!screen_fits(t->rows, t->cols)) {
		v->screen_raw = PROTO_REPLAY_SIZE;
		return;
	}
	if (t->screen == NULL)
		t->screen = screen_new(t->rows, t->cols);
	/*
	 * Before a character the ring ends inside: libvterm holds its first
	 * bytes undrawn, so the screen is the same there, and live output
	 * gives the viewer the whole character.
	 */
	target = ring_char_end(&t->ring, ring_start(&t->ring),
	    ring_end(&t->ring));
	if (!t->screen_queued && term_screen_may_step() &&
	    screen_sync_step(t->screen, &t->ring, target, SCREEN_SLICE_WORK)) {
		term_screen_give(t, v);
		/* It no longer holds back the bytes before. */
		term_viewer_progress(t);
		return;
	}
	/*
	 * Behind: v waits where it stands (the oldest byte: the raw
	 * replay's start, should there be no screen to show), holding the
	 * ring there, so the shell is paced by the emulator meanwhile.
	 */
	v->screen_wait = 1;
	t->screen_waiters++;
	if (!t->screen_queued) {
		t->screen_spent = 0;
		t->screen_target = target;
	} else if (target > t->screen_target)
		t->screen_target = target;
	term_screen_enqueue(t);
}
