/*
 * connstream.c -- a connection turned viewer (conn_attach): its output
 * stream, and the pump that writes to every viewer.
 *
 * Owns: the stream's state in struct conn: control frames (ATTACHED,
 * GAP, REPLAY, EXIT) in a small inline buffer, a screen's MSG_SCREEN
 * frames (the shot's reference), output frames written with writev
 * straight from the ring (frame_output_prefix + ring slices, no copy),
 * the one partly written frame, the stall timer's rule; the pump's ready
 * queue; the replay limiter (the allowance, the viewers held for it and
 * their timer).  Does not own: the connection's fd, its requests or its
 * teardown (conn.c), the terminal (term.c; a viewer only keeps the
 * struct viewer link, which termview.c clears on detach), or the redraw
 * (screenredraw.c).
 *
 * Per-viewer memory is struct conn (a few hundred bytes); output waits in
 * the terminal's ring, not here.  A viewer's position stays at the start
 * of its partly written frame, so term.c never overwrites bytes a viewer
 * has been promised.
 *
 * Output is written by one pump at the end of the loop turn, never inside
 * an io callback, to the viewers in its ready queue in turn, at most
 * CONN_VIEWER_TURN bytes to one viewer and CONN_TURN bytes in all per
 * turn; what is left waits for the next turn, after its accepts and
 * requests (ev_defer_next).  A thousand viewers attaching to a full ring
 * would otherwise have one turn copy a megabyte to each of them before
 * the loop looks at a keystroke's connection again.
 *
 * Replay (what a viewer is owed from before it attached) is bulk: it flows
 * at most CONN_REPLAY_RATE in all, after a burst, so that a storm of
 * attaches to full rings is spread out instead of flooding ptyd.fcgi and
 * the web server, whose event loops serve keystrokes too.  A viewer out
 * of replay allowance waits on a list a timer moves back to the queue.
 * Live output is never held back: the shell paces it, and the slowest
 * viewer paces the shell.
 */
#include <sys/epoll.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conn.h"
#include "conn_int.h"
#include "ev.h"
#include "frame.h"
#include "log.h"
#include "proto.h"
#include "ptyd.h"
#include "screen.h"
#include "term.h"
#include "watch.h"
#include "xmalloc.h"

#define CONN_BATCH   16 /* output frames per writev */
/* Output bytes per loop turn: to one viewer, and to all.  A turn's writes
 * then cost about a millisecond, and a viewer alone still gets a few
 * hundred MB/s. */
#define CONN_VIEWER_TURN (128 * 1024)
#define CONN_TURN	 (1024 * 1024)
/* Replay bytes per second to all viewers, and the burst allowed above
 * that: one viewer attaching to a full ring gets it at once, a thousand
 * share the rate (bench/storm: nginx stays responsive at this rate and
 * not at four times it). */
#define CONN_REPLAY_RATE  (192LL * 1024 * 1024)
#define CONN_REPLAY_BURST (2LL * 1024 * 1024)
/* How long a viewer out of replay allowance waits before it tries again. */
#define CONN_REPLAY_WAIT 1000 /* us */

/* Viewers with output to write and room to write it, oldest first. */
static TAILQ_HEAD(, conn) conn_ready = TAILQ_HEAD_INITIALIZER(conn_ready);
static struct ev_defer conn_pump_defer;
static int	       conn_pump_inited;
/* Viewers waiting for replay allowance, and what there is of it. */
static TAILQ_HEAD(, conn) conn_held = TAILQ_HEAD_INITIALIZER(conn_held);
static struct ev_timer conn_held_timer;
static int64_t	       conn_replay_allow = CONN_REPLAY_BURST;
static int64_t	       conn_replay_at;

static void conn_stream_kick(struct conn *);
static void conn_viewer_wake(struct viewer *);
static int  conn_stream_send(struct conn *, const uint8_t *, size_t, size_t *,
     int64_t);
static int  conn_stream_ctl(struct conn *, int64_t);

void
conn_stream_init(int64_t started_at)
{
	conn_replay_at = started_at;
}

void
conn_stream_unqueue(struct conn *c)
{
	if (c->ready == CONN_QUEUED)
		TAILQ_REMOVE(&conn_ready, c, ready_entry);
	else if (c->ready == CONN_HELD)
		TAILQ_REMOVE(&conn_held, c, ready_entry);
	c->ready = 0;
}

static void
conn_queue_ctl(struct conn *c, uint16_t type, const void *msg)
{
	struct frame_out fo;

	frame_out_init(&fo);
	if (msg_encode(&fo, type, msg) == -1 ||
	    c->ctl_len + fo.len > sizeof(c->ctl))
		fatalx("conn: control frame %s does not fit", msg_name(type));
	memcpy(c->ctl + c->ctl_len, fo.buf, fo.len);
	c->ctl_len = (uint8_t)(c->ctl_len + fo.len);
	frame_out_free(&fo);
}

enum term_err
conn_attach(struct conn *c, const struct msg_attach *m,
    const struct conn_who *who, int64_t now)
{
	struct msg_attached ma;
	struct msg_gap	    mg;
	uint64_t	    resume, lost;
	enum term_err	    e;

	c->v.wake = conn_viewer_wake;
	c->v.arg = c;
	free(c->v.name);
	c->v.name = xstrdup(who->name);
	c->v.role = who->role;
	c->v.share_id = who->share_id;
	c->v.watch_wanted = who->watchers && who->share_id == 0;
	e = term_attach(m->owner, m->sid, &c->v, m->has_pos, m->pos, m->actor,
	    now, &resume, &lost);
	if (e != TERM_OK) {
		free(c->v.name);
		c->v.name = NULL;
		return (e);
	}
	c->state = CONN_STREAM;
	ev_timer_stop(&c->timer);
	c->replay_end = ring_end(&c->v.term->ring);
	/* The size it joins at, once its replay is out (a terminal that
	 * has ended has none to follow); changes from here on where they
	 * stand in the output. */
	c->v.size_wanted = m->sizes != 0;
	c->v.size_due = c->v.size_wanted && !term_finished(c->v.term);
	c->v.size_seq = c->v.term->size_seq;
	c->v.size_rows = c->v.term->rows;
	c->v.size_cols = c->v.term->cols;
	ma.base = c->v.term->base;
	ma.end = c->replay_end;
	conn_queue_ctl(c, MSG_ATTACHED, &ma);
	if (lost > 0) {
		mg.lost = lost;
		mg.pos = resume;
		conn_queue_ctl(c, MSG_GAP, &mg);
		c->gapped = 1;
	}
	/* attach=screen without a usable resume position: the screen as it
	 * stands at the ring's end, then live output from there. */
	if (m->mode == PROTO_ATTACH_SCREEN && (!m->has_pos || lost > 0))
		term_viewer_screen(&c->v);
	/* Closing the connection detaches: watch for it. */
	if (conn_want(c, EPOLLIN | EPOLLRDHUP) == -1)
		return (TERM_OK);
	c->last_progress = now;
	/*
	 * ATTACHED (and GAP) now, so ptyd.fcgi answers the viewer at once;
	 * the backlog goes out through the pump, a share per turn.
	 */
	if (conn_stream_flush(c, 0) == 1)
		conn_stream_kick(c);
	return (TERM_OK);
}

/* The stream. */

static void
conn_stream_events(struct conn *c)
{
	uint32_t ev = EPOLLIN | EPOLLRDHUP;

	if (c->blocked)
		ev |= EPOLLOUT;
	(void)conn_want(c, ev);
}

static void
conn_stream_block(struct conn *c, int64_t now)
{
	if (!c->blocked) {
		c->blocked = 1;
		/* Data became pending now: the stall clock starts here. */
		c->last_progress = now;
		conn_stream_events(c);
	}
	if (c->state != CONN_DEAD && !ev_timer_pending(&c->timer))
		ev_timer_at(&c->timer,
		    c->last_progress + ptyd_conf.stall_timeout);
}

static void
conn_stream_unblock(struct conn *c)
{
	if (!c->blocked)
		return;
	c->blocked = 0;
	ev_timer_stop(&c->timer);
	conn_stream_events(c);
}

/* The EXIT frame goes after the last byte; then the stream is over. */
static void
conn_queue_exit(struct conn *c)
{
	struct term    *t = c->v.term;
	struct msg_exit m;

	memset(&m, 0, sizeof(m));
	m.has_exit_code = (uint8_t)t->has_exit_code;
	m.exit_code = t->has_exit_code ? t->exit_code : 0;
	snprintf(m.reason, sizeof(m.reason), "%s",
	    t->reason != TERM_R_NONE ? term_reason_wire(t->reason) : "exit");
	m.pos = ring_end(&t->ring) + 1;
	c->ctl_len = c->ctl_off = 0;
	conn_queue_ctl(c, MSG_EXIT, &m);
	c->exit_queued = 1;
}

/*
 * The pty's size, to a viewer that asked, once its replay is out and at
 * each change it has reached since (the output is cut where one stands:
 * conn_batch_build); changes it passed at once are coalesced, the last
 * one wins.  Queued as a control frame: none is left when this runs.
 * 1 to go on; 0 when the socket is full (blocked) or the connection gone.
 */
static int
conn_stream_size(struct conn *c, int64_t now)
{
	struct msg_resize_ev mr;
	uint16_t	     rows, cols;

	if (!c->v.size_wanted || c->inflight || c->v.term == NULL ||
	    c->v.pos < c->replay_end)
		return (1);
	if (term_size_reached(c->v.term, &c->v.size_seq, c->v.pos, &rows,
		&cols) &&
	    (rows != c->v.size_rows || cols != c->v.size_cols)) {
		c->v.size_rows = rows;
		c->v.size_cols = cols;
		c->v.size_due = 1;
	}
	if (!c->v.size_due)
		return (1);
	c->v.size_due = 0;
	mr.rows = c->v.size_rows;
	mr.cols = c->v.size_cols;
	c->ctl_len = c->ctl_off = 0;
	conn_queue_ctl(c, MSG_RESIZE_EV, &mr);
	return (conn_stream_ctl(c, now));
}

/*
 * Between two output frames (none partly written): the watchers, owed to
 * an owner's stream once its replay is out and after joins and leaves;
 * the pty's size; and a share's end, the last frame of a stream opened
 * through it.  1 to go on; 0 when the socket is full (blocked) or the
 * connection gone.
 */
static int
conn_stream_side(struct conn *c, int64_t now)
{
	struct msg_watchers_reply mw;
	struct msg_share_end	  me;
	struct frame_out	  fo;
	uint8_t			 *buf;

	if (c->wframe == NULL && c->v.watch_due && !c->inflight &&
	    c->v.term != NULL && c->v.pos >= c->replay_end) {
		c->v.watch_due = 0;
		buf = xmalloc(PROTO_WATCHERS_BYTES);
		watch_fill(c->v.term, &mw, buf);
		frame_out_init(&fo);
		if (msg_encode(&fo, MSG_WATCHERS_EV, &mw) == 0) {
			c->wframe = fo.buf;
			c->wlen = fo.len;
			c->woff = 0;
		} else
			frame_out_free(&fo);
		free(buf);
	}
	if (c->wframe != NULL) {
		if (!conn_stream_send(c, c->wframe, c->wlen, &c->woff, now))
			return (0);
		free(c->wframe);
		c->wframe = NULL;
		c->wlen = c->woff = 0;
	}
	if (!conn_stream_size(c, now))
		return (0);
	if (c->v.share_end != NULL && !c->inflight && !c->exit_queued) {
		memset(&me, 0, sizeof(me));
		snprintf(me.reason, sizeof(me.reason), "%s", c->v.share_end);
		c->ctl_len = c->ctl_off = 0;
		conn_queue_ctl(c, MSG_SHARE_END, &me);
		c->exit_queued = 1;
		return (conn_stream_ctl(c, now));
	}
	return (1);
}

/* Replay allowance now: CONN_REPLAY_RATE since the last look, capped. */
int64_t
conn_replay_allowance(int64_t now)
{
	int64_t d;

	if (now > conn_replay_at) {
		/*
		 * Past the time a whole burst takes to refill, the burst:
		 * without this clamp (now - at) * rate overflows int64 after
		 * 12.7 h without a replay (at starts at 0, now is monotonic
		 * time, so: the first replay on any host up that long).
		 */
		d = now - conn_replay_at;
		if (d >= CONN_REPLAY_BURST * 1000000 / CONN_REPLAY_RATE + 1)
			conn_replay_allow = CONN_REPLAY_BURST;
		else
			conn_replay_allow += d * CONN_REPLAY_RATE / 1000000;
		if (conn_replay_allow > CONN_REPLAY_BURST)
			conn_replay_allow = CONN_REPLAY_BURST;
		conn_replay_at = now;
	}
	return (conn_replay_allow);
}

/* One writev's worth of output frames, built from the ring. */
struct conn_batch {
	struct iovec iov[2 + 3 * CONN_BATCH];
	uint8_t	     prefixes[CONN_BATCH][FRAME_OUTPUT_PREFIX];
	uint64_t     fpos[CONN_BATCH];	/* each frame's first byte */
	uint32_t     flen[CONN_BATCH];	/* its data bytes */
	uint32_t     fsent[CONN_BATCH]; /* its bytes sent before, prefix incl. */
	int	     niov, nframes;
	int	     first_new; /* frames before it: the partly written one */
	size_t	     total;	/* bytes in iov */
	size_t	     replay;	/* of which replay */
};

/* Send p[*off, len) until done (1), or the socket is full (blocked) or
 * the connection gone (0). */
static int
conn_stream_send(struct conn *c, const uint8_t *p, size_t len, size_t *off,
    int64_t now)
{
	ssize_t n;

	while (*off < len) {
		n = send(c->fd, p + *off, len - *off, MSG_NOSIGNAL);
		if (n > 0) {
			*off += (size_t)n;
			c->last_progress = now;
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			conn_stream_block(c, now);
		else
			conn_destroy(c);
		return (0);
	}
	return (1);
}

/* Control frames go first, whole, then a screen's frames.  1 when none is
 * left; 0 when the socket is full (blocked) or the connection is gone. */
static int
conn_stream_ctl(struct conn *c, int64_t now)
{
	struct msg_replay mr;
	size_t		  off;
	int		  r;

	/* No screen after all: say so before the raw replay, unless a GAP
	 * did (its id is the same: ids strictly increase). */
	if (c->v.screen_raw != 0 && !c->v.screen_wait) {
		if (c->ctl_off == c->ctl_len)
			c->ctl_off = c->ctl_len = 0;
		mr.pos = c->v.pos;
		mr.reason = (uint8_t)c->v.screen_raw;
		if (!c->gapped)
			conn_queue_ctl(c, MSG_REPLAY, &mr);
		c->v.screen_raw = 0;
	}
	off = c->ctl_off;
	r = conn_stream_send(c, c->ctl, c->ctl_len, &off, now);
	c->ctl_off = (uint8_t)off;
	if (r == 0)
		return (0);
	/* The screen is being made: nothing goes after it until it is. */
	if (c->v.screen_wait)
		return (0);
	if (c->v.shot == NULL)
		return (1);
	if (!conn_stream_send(c, c->v.shot->data, c->v.shot->len, &c->shot_off,
		now))
		return (0);
	screen_shot_unref(c->v.shot);
	c->v.shot = NULL;
	return (1);
}

/* Add the ring's bytes [p, p + len) to the batch; -1 if they left it. */
static int
conn_batch_slices(struct conn_batch *b, struct term *t, uint64_t p,
    size_t len)
{
	struct iovec slice[2];
	int	     i, nslice;

	if (ring_peek(&t->ring, p, len, slice, &nslice) != len)
		return (-1);
	for (i = 0; i < nslice; i++)
		b->iov[b->niov++] = slice[i];
	return (0);
}

/* The partly written frame goes first: the rest of its prefix, then the
 * rest of its bytes.  -1 if they left the ring. */
static int
conn_batch_inflight(struct conn *c, struct conn_batch *b)
{
	size_t sent;

	b->fpos[0] = c->v.pos;
	b->flen[0] = c->flen;
	b->fsent[0] = c->fsent;
	if (c->fsent < FRAME_OUTPUT_PREFIX) {
		b->iov[b->niov].iov_base = c->prefix + c->fsent;
		b->iov[b->niov++].iov_len = FRAME_OUTPUT_PREFIX - c->fsent;
		sent = 0;
	} else
		sent = c->fsent - FRAME_OUTPUT_PREFIX;
	if (conn_batch_slices(b, c->v.term, c->v.pos + sent,
		c->flen - sent) == -1)
		return (-1);
	b->total += FRAME_OUTPUT_PREFIX + c->flen - c->fsent;
	b->nframes = b->first_new = 1;
	return (0);
}

/*
 * Build the next writev: the partly written frame, then new frames up to
 * what the viewer may be sent, at most room bytes and, of replay, what the
 * allowance gives.  0 when built (perhaps empty), 2 when only the replay
 * allowance stops it, -1 if owed bytes left the ring.
 */
static int
conn_batch_build(struct conn *c, struct conn_batch *b, size_t room,
    int64_t now)
{
	struct term *t = c->v.term;
	uint64_t     p = c->v.pos, limit, e;
	int64_t	     allow;
	size_t	     len;

	b->niov = b->nframes = b->first_new = 0;
	b->total = b->replay = 0;
	if (c->inflight) {
		if (conn_batch_inflight(c, b) == -1)
			return (-1);
		p += c->flen;
	}
	limit = term_viewer_limit(t, p);
	/* A size change the viewer has not passed: output stops where it
	 * stands, until conn_stream_size has sent it. */
	if (c->v.size_wanted && (e = term_size_next(t, c->v.size_seq)) < limit)
		limit = e > p ? e : p;
	allow = p < c->replay_end ? conn_replay_allowance(now) : 0;
	if (p < c->replay_end && allow <= 0 && b->nframes == 0)
		return (2);
	while (p < limit && b->nframes < CONN_BATCH && b->total < room &&
	    (p >= c->replay_end || (int64_t)b->replay < allow)) {
		len = limit - p;
		if (len > PROTO_OUTPUT_CHUNK) {
			len = PROTO_OUTPUT_CHUNK;
			e = ring_char_end(&t->ring, p, p + len);
			if (e > p)
				len = (size_t)(e - p);
		}
		frame_output_prefix(b->prefixes[b->nframes], p + len, len);
		b->iov[b->niov].iov_base = b->prefixes[b->nframes];
		b->iov[b->niov++].iov_len = FRAME_OUTPUT_PREFIX;
		if (conn_batch_slices(b, t, p, len) == -1)
			return (-1);
		b->fpos[b->nframes] = p;
		b->flen[b->nframes] = (uint32_t)len;
		b->fsent[b->nframes++] = 0;
		b->total += FRAME_OUTPUT_PREFIX + len;
		if (p < c->replay_end)
			b->replay += len;
		p += len;
	}
	return (0);
}

/* n bytes of the batch went out: charge the replay, move the viewer past
 * every whole frame, and remember a partly written one (its bytes stay
 * pinned in the ring). */
static void
conn_batch_sent(struct conn *c, const struct conn_batch *b, size_t n)
{
	size_t left = n, need;
	int    i;

	/* Replay is charged as written (a frame's prefix with it). */
	if (b->replay > 0)
		conn_replay_allow -= (int64_t)(n < b->replay ? n : b->replay);
	for (i = 0; i < b->nframes; i++) {
		need = FRAME_OUTPUT_PREFIX + b->flen[i] - b->fsent[i];
		if (left >= need) {
			left -= need;
			c->v.pos = b->fpos[i] + b->flen[i];
			c->inflight = 0;
			continue;
		}
		if (i >= b->first_new)
			memcpy(c->prefix, b->prefixes[i], FRAME_OUTPUT_PREFIX);
		c->inflight = 1;
		c->v.pos = b->fpos[i];
		c->flen = b->flen[i];
		c->fsent = b->fsent[i] + (uint32_t)left;
		break;
	}
}

/* Room for the next batch: left, but after a share's end only the rest
 * of a partly written frame (1: no new frame). */
static size_t
conn_room(const struct conn *c, size_t left)
{
	return (c->v.share_end != NULL ? 1 : left);
}

/*
 * Write what the viewer is owed, control frames first, until the socket is
 * full, there is nothing left, or about budget bytes of output frames have
 * gone (control frames are not counted; budget 0 sends only them).  1 if
 * the budget ran out with more to write, 2 if the replay allowance did,
 * else 0 (blocked, idle or gone).
 */
int
conn_stream_flush(struct conn *c, size_t budget)
{
	struct conn_batch b;
	int64_t		  now = ev_now();
	size_t		  spent = 0;
	ssize_t		  n;
	int		  r;

	while (c->state == CONN_STREAM) {
		if (!conn_stream_ctl(c, now) || !conn_stream_side(c, now))
			return (0);
		if (c->exit_queued) {
			conn_destroy(c);
			return (0);
		}
		if (spent >= budget)
			return (1);
		if ((r = conn_batch_build(c, &b, conn_room(c, budget - spent),
			 now)) == -1) {
			/* Backpressure keeps every byte a viewer is owed in
			 * the ring; if that ever fails, end this stream
			 * rather than send a hole. */
			log_warnx("viewer of %s: owed bytes left the ring",
			    c->v.term->sid);
			conn_destroy(c);
			return (0);
		}
		if (r == 2)
			return (2);
		if (b.nframes == 0) {
			if (term_finished(c->v.term) &&
			    c->v.pos >= ring_end(&c->v.term->ring)) {
				conn_queue_exit(c);
				continue;
			}
			conn_stream_unblock(c);
			return (0);
		}
		n = writev(c->fd, b.iov, b.niov);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN) {
			conn_stream_block(c, now);
			return (0);
		}
		if (n <= 0) {
			conn_destroy(c);
			return (0);
		}
		c->last_progress = now;
		spent += (size_t)n;
		conn_batch_sent(c, &b, (size_t)n);
		term_viewer_progress(c->v.term);
		/* Short: the socket is full; EPOLLOUT resumes us. */
		if ((size_t)n < b.total) {
			conn_stream_block(c, now);
			return (0);
		}
	}
	return (0);
}

/*
 * The pump: at the end of a turn, write to the ready viewers in turn, each
 * a share, until the turn's budget is spent; whoever still has output
 * goes to the back of the queue, and the rest waits for the next turn, so
 * that its accepts and requests come first.
 */
static void
conn_pump_cb(void *arg)
{
	struct conn *c;
	size_t	     budget = CONN_TURN, share;
	int	     r;

	(void)arg;
	while (budget > 0 && (c = TAILQ_FIRST(&conn_ready)) != NULL) {
		TAILQ_REMOVE(&conn_ready, c, ready_entry);
		c->ready = 0;
		if (c->state != CONN_STREAM || c->blocked)
			continue;
		share = budget < CONN_VIEWER_TURN ? budget : CONN_VIEWER_TURN;
		r = conn_stream_flush(c, share);
		if (r == 1) {
			TAILQ_INSERT_TAIL(&conn_ready, c, ready_entry);
			c->ready = CONN_QUEUED;
			budget -= share;
		} else if (r == 2) {
			TAILQ_INSERT_TAIL(&conn_held, c, ready_entry);
			c->ready = CONN_HELD;
			if (!ev_timer_pending(&conn_held_timer))
				ev_timer_at(&conn_held_timer,
				    ev_now() + CONN_REPLAY_WAIT);
		} else if (budget > PROTO_OUTPUT_CHUNK)
			budget -= PROTO_OUTPUT_CHUNK; /* a syscall's worth */
		else
			budget = 0;
	}
	if (!TAILQ_EMPTY(&conn_ready))
		ev_defer_next(&conn_pump_defer);
}

/* As many viewers held for replay allowance as it will serve go back to
 * the queue, oldest first; the others wait for the next tick. */
static void
conn_held_cb(void *arg)
{
	struct conn *c;
	int64_t	     allow = conn_replay_allowance(ev_now());

	(void)arg;
	while (allow > 0 && (c = TAILQ_FIRST(&conn_held)) != NULL) {
		TAILQ_REMOVE(&conn_held, c, ready_entry);
		c->ready = 0;
		conn_stream_kick(c);
		allow -= CONN_VIEWER_TURN;
	}
	if (!TAILQ_EMPTY(&conn_held))
		ev_timer_at(&conn_held_timer, ev_now() + CONN_REPLAY_WAIT);
}

/* Queue a viewer for the pump (at the end of this turn). */
static void
conn_stream_kick(struct conn *c)
{
	if (!conn_pump_inited) {
		ev_defer_init(&conn_pump_defer, conn_pump_cb, NULL);
		ev_timer_init(&conn_held_timer, conn_held_cb, NULL);
		conn_pump_inited = 1;
	}
	/* Held: the timer queues it; queued: already. */
	if (c->state != CONN_STREAM || c->ready)
		return;
	TAILQ_INSERT_TAIL(&conn_ready, c, ready_entry);
	c->ready = CONN_QUEUED;
	ev_defer(&conn_pump_defer);
}

/*
 * v's share ended: from now on the stream holds nothing of the terminal,
 * whatever its socket does (a viewer that reads nothing must not hold the
 * shell back, nor fill a viewer's place, until the stall timeout).  The
 * rest of a frame partly written is copied out of the ring (at most a
 * frame; a share's stream has no watchers frame, so the side frame is
 * free) and the viewer leaves the terminal now; share_ended follows that
 * rest (conn_stream_side).  The caller walks the viewers safely.
 */
static void
conn_stream_letgo(struct conn *c)
{
	struct conn_batch b;
	size_t		  off = 0;
	int		  i;

	if (c->inflight) {
		b.niov = 0;
		b.total = 0;
		if (c->wframe != NULL || conn_batch_inflight(c, &b) == -1) {
			conn_destroy(c);
			return;
		}
		c->wframe = xmalloc(b.total);
		for (i = 0; i < b.niov; i++) {
			memcpy(c->wframe + off, b.iov[i].iov_base,
			    b.iov[i].iov_len);
			off += b.iov[i].iov_len;
		}
		c->wlen = b.total;
		c->woff = 0;
		c->inflight = 0;
	}
	term_detach(&c->v, ev_now());
}

static void
conn_viewer_wake(struct viewer *v)
{
	struct conn *c = v->arg;

	if (c->state != CONN_STREAM)
		return;
	if (v->share_end != NULL && v->term != NULL)
		conn_stream_letgo(c);
	if (c->state == CONN_STREAM && !c->blocked)
		conn_stream_kick(c);
}

static void
conn_stream_readable(struct conn *c, uint32_t events)
{
	uint8_t buf[64];
	ssize_t n;

	if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
		conn_destroy(c);
		return;
	}
	n = read(c->fd, buf, sizeof(buf));
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	/* EOF, an error, or bytes after the one request: all end it. */
	conn_destroy(c);
}

void
conn_stream_io(struct conn *c, uint32_t events)
{
	if (events & EPOLLOUT) {
		/* Room again: the pump writes, after this turn's io; until
		 * then EPOLLOUT would only repeat itself. */
		conn_stream_unblock(c);
		conn_stream_kick(c);
	}
	if (c->state == CONN_STREAM &&
	    (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
		conn_stream_readable(c, events);
}

/* The stall timer: a viewer that took nothing for stall_timeout is cut
 * off. */
void
conn_stream_timer(struct conn *c, int64_t now)
{
	if (!c->blocked)
		return;
	if (now - c->last_progress < ptyd_conf.stall_timeout) {
		ev_timer_at(&c->timer,
		    c->last_progress + ptyd_conf.stall_timeout);
		return;
	}
	log_info("viewer of %s stalled for %lld s: cut off",
	    c->v.term != NULL ? c->v.term->sid : "?",
	    (long long)((now - c->last_progress) / PTYD_SEC));
	conn_destroy(c);
}
