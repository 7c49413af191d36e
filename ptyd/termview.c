/*
 * termview.c -- a terminal's viewers: attach (lookup and subscribe in one
 * step, so a reap and an attach never both win) and detach.
 *
 * Owns: the viewer list of each terminal, where each new viewer starts
 * (resume position, gap), the watched/unwatched bookkeeping and the
 * attach, detach and gap audit events.  Does not own: the viewer
 * connections (conn.c embeds a struct viewer and writes to it), or the
 * output (termio.c reads it, ring.c keeps it).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mirror.h"
#include "ptyd.h"
#include "screen.h"
#include "term.h"
#include "term_int.h"
#include "xmalloc.h"

/* Viewers. */

enum term_err
term_attach(const char *owner, const char *sid, struct viewer *v, int has_pos,
    uint64_t pos, const char *actor, int64_t now, uint64_t *resume,
    uint64_t *lost)
{
	struct term *t;
	uint64_t     first;
	char	     detail[64];

	*lost = 0;
	if ((t = term_find(owner, sid)) == NULL)
		return (TERM_ENOTRUNNING);
	if (t->nviewers >= ptyd_conf.max_viewers)
		return (TERM_EVIEWERS);

	first = ring_boundary(&t->ring, ring_start(&t->ring));
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

	v->term = t;
	v->pos = *resume;
	/* Kept for the detach event: the audit log pairs the two by actor
	 * (sql/audit.sql, connected now). */
	free(v->actor);
	v->actor = actor != NULL && *actor != '\0' ? xstrdup(actor) : NULL;
	TAILQ_INSERT_TAIL(&t->viewers, v, entry);
	t->nviewers++;
	t->unwatched_since = -1;
	mirror_mark(t);
	snprintf(detail, sizeof(detail), "viewers %u", t->nviewers);
	mirror_event(t, now, "attach", actor, detail);
	if (*lost > 0) {
		snprintf(detail, sizeof(detail), "lost %llu bytes",
		    (unsigned long long)*lost);
		mirror_event(t, now, "gap", actor, detail);
	}
	term_wake_viewers(t);
	return (TERM_OK);
}

void
term_detach(struct viewer *v, int64_t now)
{
	struct term *t = v->term;
	char	     detail[64];

	if (t == NULL)
		return;
	TAILQ_REMOVE(&t->viewers, v, entry);
	v->term = NULL;
	t->nviewers--;
	if (t->nviewers == 0)
		t->unwatched_since = now;
	mirror_mark(t);
	snprintf(detail, sizeof(detail), "viewers %u", t->nviewers);
	mirror_event(t, now, "detach", v->actor, detail);
	free(v->actor);
	v->actor = NULL;
	/* The one who held the pty back may be the one leaving. */
	term_viewer_progress(t);
	term_maybe_free(t);
}

struct screen_shot *
term_viewer_screen(struct viewer *v)
{
	struct term *t = v->term;

	/* Too big for an emulator: the raw replay, from where v stands. */
	if (!screen_fits(t->rows, t->cols))
		return (NULL);
	if (t->screen == NULL)
		t->screen = screen_new(t->rows, t->cols);
	/*
	 * Before a character the ring ends inside: libvterm holds its first
	 * bytes undrawn, so the screen is the same there, and live output
	 * gives the viewer the whole character.
	 */
	v->pos = ring_char_end(&t->ring, ring_start(&t->ring),
	    ring_end(&t->ring));
	/* It no longer holds back the bytes before. */
	term_viewer_progress(t);
	screen_sync(t->screen, &t->ring);
	return (screen_shot_get(t->screen, v->pos));
}
