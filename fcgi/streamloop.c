/*
 * streamloop.c -- event loop threads, one per CPU in each worker process,
 * that move the bytes of all the process's output streams (streamloop.h).
 *
 * Owns: each loop thread, its epoll set, its hand-in queue, its timers and,
 * from sloop_add on, each stream handed over with both its descriptors
 * (the FastCGI connection and the ptyd connection): nothing else reads,
 * writes or closes them after that.  Does not own: checking the request
 * and the attach, done on the thread that accepted it (stream.c, which
 * then returns that thread to the pool at once), nor frames into events
 * (stream.c's stream_frames, called from here).
 *
 * A stream costs the loop two epoll registrations, edge-triggered and
 * never changed, and a few hundred bytes: its buffers are lent from the
 * loop while data moves (one spare input and one spare output buffer,
 * kept by the loop) and given back when the stream has sent all it had,
 * so an idle stream holds none.  A stream whose viewer is slow keeps the
 * buffer it filled (no copy) until it empties it, and what it still
 * holds after a heartbeat period of silence is freed.
 *
 * Per stream, one round: send what is pending; with the output empty,
 * turn the frames already read into events; with none left, read ptyd
 * once (nonblocking) if it said it had something.  One read per round:
 * a stream with more to read goes to the back of the ready list, so a busy
 * terminal cannot starve the others.  While output is pending, ptyd is not
 * read: a slow viewer's backlog stays in ptyd's ring, where its stall
 * timeout sees it.
 *
 * Time: every stream is on the heartbeat list ordered by hb_at (its last
 * progress, or its last heartbeat check): all share one period, so moving
 * a stream to the tail keeps the list sorted and the first entry is the
 * next one due (O(1), no heap).  A stream whose ptyd has hung up is also
 * on the stuck list, ordered the same way by stuck_at; STREAM_STUCK_MS
 * after it with output still pending, the viewer is stuck (stream.c's
 * rule) and its connection is dropped without END_REQUEST.
 *
 * A stream whose ptyd connection ended without terminal_closed closes it
 * and goes on the re-attach list (stream.c says why and how): each
 * attempt is due at its retry_at, the list is walked when the earliest
 * is due (attempts are few and far between: a walk per 50 ms at most),
 * and a connection that an attempt opened is moved above the libfcgi range
 * and registered as the first was.  Its first frame is ptyd's answer;
 * once attached again the stream leaves the list, and the stuck list:
 * ptyd is back.  Heartbeats go on meanwhile, as for any quiet stream.
 *
 * Ends: a viewer gone (hangup, EOF or data on the FastCGI connection),
 * stuck, or the process stopping (the stop descriptor; END_REQUEST when
 * no record was cut short) close both descriptors at once.  A stream that
 * ended normally (terminal_closed, ptyd's hangup, an internal error after
 * terminal_error) closes its ptyd connection at once, sends what it owes
 * and END_REQUEST, then closes, or, on a connection the web server keeps
 * (FCGI_KEEP_CONN), gives it back to the server's pool (the keep hook),
 * which parks it for the web server's next request as after any other.
 * Closing the ptyd connection is what detaches the viewer in ptyd, on
 * every path.  Ended streams are freed at the end of the loop turn, never
 * inside their own event.
 */
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/queue.h>

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "contract.h"
#include "flog.h"
#include "front.h"
#include "metrics.h"
#include "sse.h"
#include "stream_int.h"
#include "streamloop.h"

#define SLOOP_EVENTS 256
/* Heartbeats due this soon go now, with those due already: one wakeup
 * (ours, and nginx's) serves a batch instead of one each.  Kept short: a
 * batch is a burst nginx gets through before it reads a keystroke (with
 * 250 ms, 10,000 viewers took echo p99 from 3.4 to 5.2 ms). */
#define SLOOP_SLACK_MS 20
/*
 * Memory a burst took goes back to the system once the burst is over.  A
 * stream borrows up to STREAM_IN_MAX plus its pending events while data
 * moves and frees them when idle, but malloc keeps freed memory in its
 * arenas: after 2,000 viewers attached at once to terminals with a full
 * screen and scrollback, the process kept 29 kB per viewer it no longer
 * used (bench/streams --page --fill 1000).  So once this much has been
 * freed and no round waits, malloc_trim hands the free pages back, at most
 * once per SLOOP_TRIM_MS per loop (it walks every arena's free chunks).
 */
#define SLOOP_TRIM_BYTES (1024 * 1024)
#define SLOOP_TRIM_MS	 1000
#define SLOOP_WAKE     ((uint64_t)1) /* epoll data: the hand-in eventfd */
#define SLOOP_STOP     ((uint64_t)2) /* epoll data: the stop descriptor */
#define SLOOP_PTYD     ((uint64_t)1) /* low bit of a stream's: its ptyd fd */

TAILQ_HEAD(streamq, stream);

struct sloop {
	int		epfd;
	int		wake_fd;
	int		stop_fd;
	int64_t		hb_ms;
	int64_t		now;
	pthread_t	thread;
	pthread_mutex_t mtx; /* guards incoming, stopping, ended */
	pthread_cond_t	ended_cv;
	struct streamq	incoming; /* handed in, not yet registered */
	int		stopping; /* no more hand-ins */
	int		ended;
	int		halt;  /* the loop's own: stop seen */
	int		nstreams; /* atomic: sloop_add picks the least */
	struct streamq	hb;    /* every registered stream, by hb_at */
	struct streamq	stuck; /* ptyd hung up, by stuck_at */
	struct streamq	reattach;     /* attaching again in place */
	int64_t		reattach_due; /* the earliest retry_at there */
	struct streamq	ready; /* a round to run */
	struct streamq	dead;  /* to free at the end of the turn */
	struct buf	spare_out;
	uint8_t	       *spare_in;
	size_t		freed;	    /* bytes freed since the last trim */
	int64_t		trimmed_at; /* l->now of the last trim */
	void (*keep)(void *, int);  /* takes a kept connection (sloop_end) */
	void *keep_arg;
};

/* This process's loops: one per CPU (SLOOP_MAX at most), so that the
 * viewers of one busy terminal, which tend to land in one process, are
 * not all moved by one thread. */
#define SLOOP_MAX 4
static struct sloop *sloops[SLOOP_MAX];
static int	     nsloops;

int
sloop_running(void)
{
	return (nsloops > 0);
}

static void
sloop_ready(struct sloop *l, struct stream *s)
{
	if (s->on_ready || s->dead)
		return;
	s->on_ready = 1;
	TAILQ_INSERT_TAIL(&l->ready, s, ready_entry);
}

/* The viewer took bytes: both timers start again from now. */
static void
sloop_progress(struct sloop *l, struct stream *s)
{
	s->hb_at = s->quiet_since;
	TAILQ_REMOVE(&l->hb, s, hb_entry);
	TAILQ_INSERT_TAIL(&l->hb, s, hb_entry);
	if (s->on_stuck) {
		s->stuck_at = s->quiet_since;
		TAILQ_REMOVE(&l->stuck, s, stuck_entry);
		TAILQ_INSERT_TAIL(&l->stuck, s, stuck_entry);
	}
}

/* ptyd hung up (or we did, ending): the stuck rule applies from now. */
static void
sloop_ptyd_gone(struct sloop *l, struct stream *s)
{
	if (s->on_stuck)
		return;
	if (s->gone_at == 0)
		s->gone_at = l->now;
	s->stuck_at = s->quiet_since > s->gone_at ? s->quiet_since : s->gone_at;
	s->on_stuck = 1;
	TAILQ_INSERT_TAIL(&l->stuck, s, stuck_entry);
}

static void
sloop_close_ptyd(struct sloop *l, struct stream *s)
{
	if (s->fd == -1)
		return;
	(void)epoll_ctl(l->epfd, EPOLL_CTL_DEL, s->fd, NULL);
	close(s->fd);
	s->fd = -1;
	s->ptyd_ready = 0;
}

/* Off the re-attach list (attached again, or ending). */
static void
sloop_reattach_off(struct sloop *l, struct stream *s)
{
	if (!s->on_reattach)
		return;
	TAILQ_REMOVE(&l->reattach, s, reattach_entry);
	s->on_reattach = 0;
}

/* Attached again: ptyd is back, so the stuck rule no longer applies. */
static void
sloop_ptyd_back(struct sloop *l, struct stream *s)
{
	sloop_reattach_off(l, s);
	if (s->on_stuck)
		TAILQ_REMOVE(&l->stuck, s, stuck_entry);
	s->on_stuck = 0;
	s->gone_at = 0;
}

/*
 * The stream's end, whatever it was: both descriptors closed (the ptyd
 * one detaches the viewer), off every list, counted, and freed at the
 * turn's end.  END_STOP still tries END_REQUEST, once, without waiting.
 * END_DONE comes only from sloop_finish, END_REQUEST sent whole: then a
 * connection the web server keeps is still good for its next request,
 * and goes to the keep hook instead of being closed (closing it would
 * make that request a 502).
 */
static void
sloop_end(struct sloop *l, struct stream *s, enum stream_end e)
{
	int cfd = req_conn_fd(s->r);
	int keep = e == END_DONE && s->ending && req_kept(s->r) &&
	    l->keep != NULL;

	if (e == END_STUCK) {
		flog_info("stream of %s: ptyd hung up and the viewer took"
			  " nothing for %d s more; dropped",
		    s->sid, STREAM_STUCK_MS / 1000);
	}
	/* From where a full connection left it (end_off), and only after
	 * the headers: END_REQUEST alone would be a malformed answer. */
	if (e == END_STOP && s->begun && !stream_pending(s))
		(void)req_send_end(s->r, &s->end_off);
	sloop_close_ptyd(l, s);
	/* Out of our set before it changes hands: the registration would
	 * outlive this number on a duplicate of the descriptor. */
	(void)epoll_ctl(l->epfd, EPOLL_CTL_DEL, cfd, NULL);
	if (keep)
		l->keep(l->keep_arg, cfd);
	else
		close(cfd);
	s->fq.ipcFd = -1;
	TAILQ_REMOVE(&l->hb, s, hb_entry);
	if (s->on_stuck)
		TAILQ_REMOVE(&l->stuck, s, stuck_entry);
	if (s->on_ready)
		TAILQ_REMOVE(&l->ready, s, ready_entry);
	sloop_reattach_off(l, s);
	s->on_stuck = s->on_ready = 0;
	s->dead = 1;
	TAILQ_INSERT_TAIL(&l->dead, s, ready_entry);
	__atomic_sub_fetch(&l->nstreams, 1, __ATOMIC_RELAXED);
	metrics_request(contract_endpoint_name(CONTRACT_EP_OUTPUT), 200,
	    client_now_ms() * 1000 - s->born_us);
	metrics_stream(-1);
}

/* Buffers for a round: the loop's spares when the stream has none. */
static int
sloop_lend_in(struct sloop *l, struct stream *s)
{
	if (s->in != NULL)
		return (0);
	if ((s->in = l->spare_in) == NULL)
		s->in = malloc(STREAM_IN_MAX);
	l->spare_in = NULL;
	return (s->in == NULL ? -1 : 0);
}

static void
sloop_lend_out(struct sloop *l, struct stream *s)
{
	struct buf b;

	if (s->out.p != NULL || l->spare_out.p == NULL)
		return;
	b = s->out;
	s->out = l->spare_out;
	l->spare_out = b;
}

/* After a round: what the stream no longer needs goes back to the loop. */
static void
sloop_reclaim(struct sloop *l, struct stream *s)
{
	struct buf b;

	if (!stream_pending(s) && s->out.p != NULL && l->spare_out.p == NULL) {
		buf_reset(&s->out);
		s->outoff = 0;
		b = s->out;
		s->out = l->spare_out;
		l->spare_out = b;
	}
	if (s->in != NULL && s->inoff == s->inlen && l->spare_in == NULL) {
		l->spare_in = s->in;
		s->in = NULL;
		s->inoff = s->inlen = 0;
	}
}

/* Idle for a heartbeat period: free what the stream still holds. */
static void
sloop_shrink(struct sloop *l, struct stream *s)
{
	if (!stream_pending(s)) {
		l->freed += s->out.cap;
		buf_free(&s->out);
		s->outoff = 0;
	}
	if (s->in != NULL && s->inoff == s->inlen) {
		l->freed += STREAM_IN_MAX;
		free(s->in);
		s->in = NULL;
		s->inoff = s->inlen = 0;
	}
	l->freed += s->text.cap;
	buf_free(&s->text);
}

/* Free pages back to the system after a burst (SLOOP_TRIM_BYTES). */
static void
sloop_trim(struct sloop *l)
{
	if (l->freed < SLOOP_TRIM_BYTES || !TAILQ_EMPTY(&l->ready) ||
	    l->now - l->trimmed_at < SLOOP_TRIM_MS)
		return;
	(void)malloc_trim(0);
	l->freed = 0;
	l->trimmed_at = l->now;
}

/*
 * Wait for room on the viewer's connection (EPOLLOUT), or stop waiting.
 * An idle stream's sends find room, so EPOLLOUT is asked for only once
 * the connection has been full: otherwise every send that nginx takes
 * would wake the loop once more.  It stays asked for while the stream is
 * busy (a flood fills the connection at every send: asking and
 * unasking each time was two epoll_ctl per send, issue 31) and is
 * dropped at the first edge that finds nothing waiting (sloop_event).
 * A change re-arms the edge: room already there is reported at once.
 */
static void
sloop_want_out(struct sloop *l, struct stream *s, int want)
{
	struct epoll_event ev;

	s->conn_full = want;
	if (s->want_out == want)
		return;
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN | EPOLLRDHUP | EPOLLET | (want ? EPOLLOUT : 0);
	ev.data.u64 = (uint64_t)(uintptr_t)s;
	if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, req_conn_fd(s->r), &ev) == 0)
		s->want_out = want;
	else
		flog_warn("stream: epoll_ctl");
}

/* Send what is pending; a send that moved bytes is progress, one that
 * moved none means the connection is full. */
static enum stream_end
sloop_push(struct sloop *l, struct stream *s)
{
	size_t		before = s->out.len - s->outoff;
	enum stream_end e;

	if ((e = stream_push(s)) != END_NONE)
		return (e);
	if (s->out.len - s->outoff != before)
		sloop_progress(l, s);
	/* Took none, or less than offered: full now; wait for room. */
	if (s->out.len - s->outoff == before || s->r->out_short)
		sloop_want_out(l, s, 1);
	return (END_NONE);
}

/* Output all sent after the end: END_REQUEST, then the stream is over. */
static enum stream_end
sloop_finish(struct sloop *l, struct stream *s)
{
	int r = req_send_end(s->r, &s->end_off);

	if (r == 0) {
		sloop_want_out(l, s, 1);
		return (END_NONE);
	}
	return (r == 1 ? END_DONE : END_GONE);
}

/* Read ptyd once (it said it had something). */
static enum stream_end
sloop_read(struct sloop *l, struct stream *s)
{
	enum stream_end e;

	if (sloop_lend_in(l, s) == -1)
		return (END_ERROR);
	s->ptyd_eof = 0;
	e = stream_read(s);
	if (s->ptyd_eof)
		s->ptyd_ready = 0;
	return (e);
}

/*
 * The next step of one round.  END_NONE with *more set to go on, clear
 * when the round is over (waiting for the viewer, for ptyd, or for the
 * next round).
 */
static enum stream_end
sloop_step(struct sloop *l, struct stream *s, int *reads, int *more)
{
	struct frame_hdr h;

	*more = 1;
	if (stream_pending(s)) {
		if (s->conn_full) {
			*more = 0;
			return (END_NONE);
		}
		return (sloop_push(l, s));
	}
	if (s->ending) {
		*more = 0;
		return (s->conn_full ? END_NONE : sloop_finish(l, s));
	}
	if (stream_has_frame(s, &h) != 0) {
		sloop_lend_out(l, s);
		return (stream_frames(s));
	}
	if (!s->ptyd_ready || (*reads)++ > 0) {
		if (s->ptyd_ready)
			sloop_ready(l, s); /* more next round */
		*more = 0;
		return (END_NONE);
	}
	return (sloop_read(l, s));
}

/* ptyd ended the stream, or terminal_error is queued: detach now, send
 * what is owed, then END_REQUEST. */
static void
sloop_ending(struct sloop *l, struct stream *s)
{
	s->ending = 1;
	sloop_reattach_off(l, s);
	sloop_close_ptyd(l, s);
	s->ptyd_ready = 0;
	s->inoff = s->inlen = 0;
	sloop_ptyd_gone(l, s);
}

/*
 * ptyd's connection ended without terminal_closed: close it and attach
 * again in place, the first attempt at once (stream_lost).  0, or -1 to
 * end as before.
 */
static int
sloop_lost(struct sloop *l, struct stream *s)
{
	sloop_close_ptyd(l, s);
	sloop_ptyd_gone(l, s);
	if (stream_lost(s, l->now) == -1)
		return (-1);
	if (!s->on_reattach) {
		s->on_reattach = 1;
		TAILQ_INSERT_TAIL(&l->reattach, s, reattach_entry);
	}
	if (TAILQ_FIRST(&l->reattach) == s &&
	    TAILQ_NEXT(s, reattach_entry) == NULL)
		l->reattach_due = s->retry_at;
	else if (s->retry_at < l->reattach_due)
		l->reattach_due = s->retry_at;
	return (0);
}

/* One round of a stream (sloop_step until it waits). */
static void
sloop_round(struct sloop *l, struct stream *s)
{
	enum stream_end e;
	int		reads = 0, more = 1;

	if (!s->begun) {
		s->begun = 1;
		sloop_lend_out(l, s);
		stream_begin(s);
	}
	while (more) {
		e = sloop_step(l, s, &reads, &more);
		if (e == END_PTYD) {
			if (sloop_lost(l, s) == 0)
				break;
			e = END_DONE;
		}
		/* Never inside a half-written screen event: the response
		 * then simply ends, and the client drops the partial event. */
		if (e == END_ERROR && !s->ending && !s->in_screen) {
			sloop_lend_out(l, s);
			if (sse_error(&s->out, s->pos, CONTRACT_A_INTERNAL) ==
			    0)
				e = END_DONE;
		}
		if (e == END_DONE && !s->ending) {
			sloop_ending(l, s);
			more = 1;
			continue;
		}
		if (e != END_NONE) {
			sloop_end(l, s, e);
			return;
		}
	}
	/* ptyd's answer was MSG_ATTACHED (stream_reattached). */
	if (s->on_reattach && !s->reattaching)
		sloop_ptyd_back(l, s);
	sloop_reclaim(l, s);
}

/* A heartbeat period without progress: beat if idle, free what an idle
 * stream holds.  The caller has moved it to the tail already. */
static void
sloop_beat(struct sloop *l, struct stream *s)
{
	struct frame_hdr h;

	if (s->ending || stream_pending(s) || s->ptyd_ready ||
	    stream_has_frame(s, &h) != 0)
		return;
	sloop_lend_out(l, s);
	if (stream_heartbeat(s) == -1) {
		sloop_end(l, s, END_ERROR);
		return;
	}
	sloop_round(l, s);
	if (!s->dead)
		sloop_shrink(l, s);
}

static int sloop_move_fd(int);

/* The connection a re-attach opened, watched as the first one was (its
 * answer may be there already: a round reads it). */
static int
sloop_watch_ptyd(struct sloop *l, struct stream *s)
{
	struct epoll_event ev;
	int		   fd;

	if ((fd = sloop_move_fd(s->fd)) == -1)
		return (-1);
	s->fd = fd;
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
	ev.data.u64 = (uint64_t)(uintptr_t)s | SLOOP_PTYD;
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, s->fd, &ev) == -1)
		return (-1);
	s->ptyd_ready = 1;
	sloop_ready(l, s);
	return (0);
}

/* One re-attach attempt, due now (stream_reattach). */
static void
sloop_reattach_try(struct sloop *l, struct stream *s)
{
	int r = stream_reattach(s, l->now);

	if (r == 1 && sloop_watch_ptyd(l, s) == -1) {
		flog_warn("stream: re-attach");
		sloop_close_ptyd(l, s);
		r = stream_lost(s, l->now);
	}
	if (r == -1) {
		/* Ends as ptyd's hangup did: what is owed, END_REQUEST. */
		sloop_ending(l, s);
		sloop_ready(l, s);
	}
}

/* The re-attach attempts due, when the earliest is. */
static void
sloop_reattach_due(struct sloop *l)
{
	struct stream *s, *next;
	int64_t	       due = -1;

	if (TAILQ_EMPTY(&l->reattach) || l->reattach_due > l->now)
		return;
	for (s = TAILQ_FIRST(&l->reattach); s != NULL; s = next) {
		next = TAILQ_NEXT(s, reattach_entry);
		if (s->retry_at <= l->now)
			sloop_reattach_try(l, s);
		if (s->on_reattach && (due == -1 || s->retry_at < due))
			due = s->retry_at;
	}
	l->reattach_due = due;
}

/* Heartbeats, the stuck rule and re-attaches, for every stream due. */
static void
sloop_timers(struct sloop *l)
{
	struct stream *s;
	/* Beats due within the slack go out together; less than half a
	 * period, or a beat just given would be due again at once. */
	int64_t slack = l->hb_ms / 2 < SLOOP_SLACK_MS ? l->hb_ms / 2 :
							SLOOP_SLACK_MS;

	while ((s = TAILQ_FIRST(&l->hb)) != NULL &&
	    s->hb_at + l->hb_ms <= l->now + slack) {
		s->hb_at = l->now;
		TAILQ_REMOVE(&l->hb, s, hb_entry);
		TAILQ_INSERT_TAIL(&l->hb, s, hb_entry);
		sloop_beat(l, s);
	}
	while ((s = TAILQ_FIRST(&l->stuck)) != NULL &&
	    s->stuck_at + STREAM_STUCK_MS <= l->now) {
		if (stream_pending(s) || s->ending) {
			sloop_end(l, s, END_STUCK);
			continue;
		}
		s->stuck_at = l->now;
		TAILQ_REMOVE(&l->stuck, s, stuck_entry);
		TAILQ_INSERT_TAIL(&l->stuck, s, stuck_entry);
	}
	sloop_reattach_due(l);
}

/* epoll_wait's timeout: now if a round waits, else the next timer. */
static int
sloop_timeout(struct sloop *l)
{
	struct stream *s;
	int64_t	       due = -1, t;

	if (!TAILQ_EMPTY(&l->ready))
		return (0);
	if ((s = TAILQ_FIRST(&l->hb)) != NULL)
		due = s->hb_at + l->hb_ms;
	if ((s = TAILQ_FIRST(&l->stuck)) != NULL &&
	    (due == -1 || s->stuck_at + STREAM_STUCK_MS < due))
		due = s->stuck_at + STREAM_STUCK_MS;
	if (!TAILQ_EMPTY(&l->reattach) && (due == -1 || l->reattach_due < due))
		due = l->reattach_due;
	if (due == -1)
		return (-1);
	t = due - client_now_ms();
	return (t <= 0 ? 0 : t > 60000 ? 60000 : (int)t);
}

/* A stream handed in: its two registrations, its first round. */
static void
sloop_register(struct sloop *l, struct stream *s)
{
	struct epoll_event ev;

	s->hb_at = l->now;
	TAILQ_INSERT_TAIL(&l->hb, s, hb_entry);
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
	ev.data.u64 = (uint64_t)(uintptr_t)s;
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, req_conn_fd(s->r), &ev) == -1)
		goto fail;
	ev.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
	ev.data.u64 = (uint64_t)(uintptr_t)s | SLOOP_PTYD;
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, s->fd, &ev) == -1)
		goto fail;
	s->ptyd_ready = 1;
	sloop_ready(l, s);
	return;
fail:
	flog_warn("stream: epoll_ctl");
	sloop_end(l, s, END_GONE);
}

/* Take what the accepting threads handed in. */
static void
sloop_take(struct sloop *l)
{
	struct streamq q;
	struct stream *s;
	uint64_t       v;

	(void)read(l->wake_fd, &v, sizeof(v));
	TAILQ_INIT(&q);
	pthread_mutex_lock(&l->mtx);
	TAILQ_CONCAT(&q, &l->incoming, hb_entry);
	pthread_mutex_unlock(&l->mtx);
	while ((s = TAILQ_FIRST(&q)) != NULL) {
		TAILQ_REMOVE(&q, s, hb_entry);
		sloop_register(l, s);
	}
}

/* One event of the epoll set. */
static void
sloop_event(struct sloop *l, const struct epoll_event *ev)
{
	struct stream *s;

	if (ev->data.u64 == SLOOP_WAKE) {
		sloop_take(l);
		return;
	}
	if (ev->data.u64 == SLOOP_STOP) {
		l->halt = 1;
		return;
	}
	s = (struct stream *)(uintptr_t)(ev->data.u64 & ~SLOOP_PTYD);
	if (s->dead)
		return;
	if (ev->data.u64 & SLOOP_PTYD) {
		s->ptyd_ready = 1;
		if (ev->events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
			sloop_ptyd_gone(l, s);
	} else {
		/* After the request body, anything here means gone. */
		if (ev->events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
			sloop_end(l, s, END_GONE);
			return;
		}
		/* Room: EPOLLOUT stays asked for while the stream is busy;
		 * an edge with nothing waiting for room ends that. */
		if (s->conn_full)
			s->conn_full = 0;
		else
			sloop_want_out(l, s, 0);
	}
	sloop_ready(l, s);
}

/* A round for each stream that was ready when the pass began. */
static void
sloop_rounds(struct sloop *l)
{
	struct streamq q;
	struct stream *s;

	TAILQ_INIT(&q);
	TAILQ_CONCAT(&q, &l->ready, ready_entry);
	while ((s = TAILQ_FIRST(&q)) != NULL) {
		TAILQ_REMOVE(&q, s, ready_entry);
		s->on_ready = 0;
		sloop_round(l, s);
	}
}

static void
sloop_reap(struct sloop *l)
{
	struct stream *s;

	while ((s = TAILQ_FIRST(&l->dead)) != NULL) {
		TAILQ_REMOVE(&l->dead, s, ready_entry);
		l->freed += sizeof(*s) + s->out.cap + s->text.cap +
		    (s->in != NULL ? STREAM_IN_MAX : 0);
		stream_free(s);
	}
}

/* Stopping: every stream ends, those handed in but not registered too. */
static void
sloop_stop_all(struct sloop *l)
{
	struct stream *s;

	pthread_mutex_lock(&l->mtx);
	l->stopping = 1;
	TAILQ_CONCAT(&l->hb, &l->incoming, hb_entry);
	pthread_mutex_unlock(&l->mtx);
	while ((s = TAILQ_FIRST(&l->hb)) != NULL)
		sloop_end(l, s, END_STOP);
	sloop_reap(l);
}

static void *
sloop_main(void *arg)
{
	struct sloop	  *l = arg;
	struct epoll_event ev[SLOOP_EVENTS];
	int		   i, n;

	while (!l->halt) {
		n = epoll_wait(l->epfd, ev, SLOOP_EVENTS, sloop_timeout(l));
		if (n == -1 && errno != EINTR) {
			flog_warn("stream loop: epoll_wait");
			break;
		}
		l->now = client_now_ms();
		for (i = 0; i < n; i++)
			sloop_event(l, &ev[i]);
		if (l->halt)
			break;
		sloop_rounds(l);
		l->now = client_now_ms();
		sloop_timers(l);
		sloop_reap(l);
		sloop_trim(l);
	}
	sloop_stop_all(l);
	pthread_mutex_lock(&l->mtx);
	l->ended = 1;
	pthread_cond_broadcast(&l->ended_cv);
	pthread_mutex_unlock(&l->mtx);
	return (NULL);
}

/* fd moved to SLOOP_FD_BASE or above, close-on-exec and nonblocking; the
 * old number closed.  The new one, or -1 (the old one left alone). */
static int
sloop_move_fd(int fd)
{
	int nfd;

	if ((nfd = fcntl(fd, F_DUPFD_CLOEXEC, SLOOP_FD_BASE)) == -1)
		return (-1);
	if (fcntl(nfd, F_SETFL, fcntl(nfd, F_GETFL) | O_NONBLOCK) == -1) {
		close(nfd);
		return (-1);
	}
	close(fd);
	return (nfd);
}

int
sloop_streams(void)
{
	int i, n = 0;

	for (i = 0; i < nsloops; i++)
		n += __atomic_load_n(&sloops[i]->nstreams, __ATOMIC_RELAXED);
	return (n);
}

/* The loop with the fewest streams. */
static struct sloop *
sloop_pick(void)
{
	struct sloop *l = sloops[0];
	int	      i;

	for (i = 1; i < nsloops; i++)
		if (__atomic_load_n(&sloops[i]->nstreams, __ATOMIC_RELAXED) <
		    __atomic_load_n(&l->nstreams, __ATOMIC_RELAXED))
			l = sloops[i];
	return (l);
}

int
sloop_add(struct stream *s)
{
	struct sloop *l;
	uint64_t      one = 1;
	int	      pfd, cfd, stopping;

	if (nsloops == 0)
		return (-1);
	l = sloop_pick();
	if ((pfd = sloop_move_fd(s->fd)) == -1)
		return (-1);
	s->fd = pfd;
	if ((cfd = sloop_move_fd(req_conn_fd(s->r))) == -1)
		return (-1);
	/*
	 * The request leaves the accepting thread: our own copy, with the
	 * relocated connection and nothing of libfcgi's but the request id;
	 * the thread's copy frees libfcgi's state and nothing else
	 * (req_finish_fcgi, handed).
	 */
	s->fq = *s->r->fcgx;
	s->fq.in = s->fq.out = s->fq.err = NULL;
	s->fq.envp = NULL;
	s->fq.paramsPtr = NULL;
	s->fq.ipcFd = cfd;
	s->req = *s->r;
	s->req.fcgx = &s->fq;
	s->req.last_cb = NULL;
	s->r->handed = 1;
	s->r->fcgx->ipcFd = -1;
	s->r = &s->req;
	s->born_us = client_now_ms() * 1000;

	pthread_mutex_lock(&l->mtx);
	if (!(stopping = l->stopping)) {
		TAILQ_INSERT_TAIL(&l->incoming, s, hb_entry);
		__atomic_add_fetch(&l->nstreams, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&l->mtx);
	if (stopping) {
		/* Shutdown: the loop is gone; this stream ends here. */
		close(cfd);
		s->fq.ipcFd = -1;
		metrics_stream(-1);
		stream_free(s);
		return (0);
	}
	if (write(l->wake_fd, &one, sizeof(one)) != sizeof(one))
		flog_warn("stream loop: eventfd write");
	return (0);
}

static int
sloop_new(int64_t heartbeat_ms, int stop_fd, void (*keep)(void *, int),
    void *keep_arg)
{
	struct sloop	  *l;
	struct epoll_event ev;

	if ((l = calloc(1, sizeof(*l))) == NULL)
		return (-1);
	l->hb_ms = heartbeat_ms;
	l->stop_fd = stop_fd;
	l->keep = keep;
	l->keep_arg = keep_arg;
	TAILQ_INIT(&l->incoming);
	TAILQ_INIT(&l->hb);
	TAILQ_INIT(&l->stuck);
	TAILQ_INIT(&l->reattach);
	TAILQ_INIT(&l->ready);
	TAILQ_INIT(&l->dead);
	buf_init(&l->spare_out, STREAM_OUT_MAX);
	pthread_mutex_init(&l->mtx, NULL);
	pthread_cond_init(&l->ended_cv, NULL);
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	l->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (l->epfd == -1 || l->wake_fd == -1)
		goto fail;
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.u64 = SLOOP_WAKE;
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->wake_fd, &ev) == -1)
		goto fail;
	ev.data.u64 = SLOOP_STOP;
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, stop_fd, &ev) == -1)
		goto fail;
	if (pthread_create(&l->thread, NULL, sloop_main, l) != 0)
		goto fail;
	sloops[nsloops++] = l;
	return (0);
fail:
	flog_warn("stream loop");
	if (l->epfd != -1)
		close(l->epfd);
	if (l->wake_fd != -1)
		close(l->wake_fd);
	free(l);
	return (-1);
}

int
sloop_start(int64_t heartbeat_ms, int stop_fd, void (*keep)(void *, int),
    void *keep_arg)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 1)
		n = 1;
	while (nsloops < n && nsloops < SLOOP_MAX)
		if (sloop_new(heartbeat_ms, stop_fd, keep, keep_arg) == -1)
			break;
	return (nsloops > 0 ? 0 : -1);
}

/* Wait until deadline (CLOCK_REALTIME) for loop l to end.  1 if it did. */
static int
sloop_wait(struct sloop *l, const struct timespec *ts)
{
	int ended;

	pthread_mutex_lock(&l->mtx);
	while (!l->ended &&
	    pthread_cond_timedwait(&l->ended_cv, &l->mtx, ts) != ETIMEDOUT)
		;
	ended = l->ended;
	pthread_mutex_unlock(&l->mtx);
	return (ended);
}

void
sloop_join(int ms)
{
	struct timespec ts;
	int		i, ended = 1;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	for (i = 0; i < nsloops; i++)
		ended &= sloop_wait(sloops[i], &ts);
	if (!ended)
		flog_info("stream loop still ending its streams at exit");
}
