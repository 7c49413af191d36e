/*
 * stream.c -- the output stream (stream.h).
 *
 * Owns: the request's checks, the attach (one ptyd connection for as long
 * as the viewer stays), turning ptyd's frames into events (stream_frames,
 * stream_frame: one function per frame type), and the thread loop for
 * streams no event loop takes (CGI: one request per process).  Over
 * FastCGI, once ptyd has answered the attach, the stream with both its
 * descriptors and its buffers goes to the process's event loop
 * (streamloop.c, which owns it from then on: it moves the bytes, beats,
 * applies the stuck rule below and ends it); the thread goes back to the
 * pool at once.  Whoever owns the stream at its end closes the ptyd
 * connection, which detaches the viewer, on every way out.
 *
 * The thread loop polls three descriptors: ptyd (frames), the web server
 * connection (a hangup, EOF or any data after the request body ended
 * means the client is gone: nginx closes the FastCGI connection when its
 * client aborts), and the process's stop descriptor (shutdown).
 *
 * The hot path, per wakeup: one read of everything ptyd has sent (many
 * frames), each complete frame turned into an event appended to one output
 * buffer (clean UTF-8 is escaped straight from the frame, no copy), then
 * one sendmsg of FastCGI records whose content is that buffer (req_send).
 * Nothing is allocated per event: buffers are reused (in the loop, lent
 * while data moves and given back when it stops).  While the web server
 * has not taken all of the output, ptyd is not read, so a slow viewer's
 * backlog stays in ptyd's ring, where its stall timeout can see it, and
 * our buffers stay bounded.
 *
 * A viewer that stops reading is ptyd's to judge: after its stall timeout
 * ptyd hangs up on us.  ptyd also hangs up after the stream's last frame,
 * and from outside the two look the same, so the rule is one: once ptyd
 * has hung up, a viewer that takes nothing for STREAM_STUCK_MS (counted
 * from the hangup or from its last progress, whichever is later; ptyd's
 * default stall timeout, so the end of a stream is as patient as its
 * middle) is stuck.  Its FastCGI connection is then dropped without
 * finishing the response, rather than waiting for the web server's send
 * timeout (a minute in nginx).  The viewer resumes from its last whole
 * event.
 *
 * ptyd's connection ending without terminal_closed (ptyd killed,
 * restarted or upgraded; a viewer cut off) does not end the viewer's
 * stream at once: the stream attaches again in place (stream_lost,
 * stream_reattach), from the position after its last event (what the
 * browser's Last-Event-ID would say), in the same mode, and goes on as if
 * nothing had happened: no byte twice, none missing, no second header; a
 * gap ptyd reports is the usual gap event.  Attempts are spaced 50, 100,
 * 200, 400 ms, then 500 ms, within STREAM_REATTACH_MS of the loss, and
 * heartbeats go on meanwhile.  None waits, and none starts ptyd: its
 * keeper, or the next request's autostart, does.  A terminal that is gone
 * (not running, or another incarnation under its id) or a window that
 * runs out ends the stream as ptyd's hangup did before: the response
 * simply ends.
 */
#include <sys/socket.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "client.h"
#include "contract.h"
#include "flog.h"
#include "front.h"
#include "handlers.h" /* struct ctx only */
#include "http.h"
#include "json.h"
#include "metrics.h"
#include "sse.h"
#include "stream.h"
#include "stream_int.h"
#include "streamloop.h"
#include "utf8.h"

/*
 * SO_SNDBUF of the connection to the web server (the kernel doubles it):
 * small at first (stream_attach says why), larger once the viewer has
 * taken STREAM_GROW_AFTER bytes, more than a viewer that never reads can
 * hold in the web server's buffers and its client's and the kernel's
 * between them.  16 KiB capped each sendmsg, and so each of nginx's reads
 * and writes to its client, at about 20 kB: with 8 viewers ptyd.fcgi sent
 * each 64 kB it read in three pieces, and nginx woke and copied three
 * times (issue 31, bench/versus --perf).
 */
static const int stream_sndbuf = 16 * 1024;
static const int stream_sndbuf_fast = 64 * 1024;
#define STREAM_GROW_AFTER (2 * 1024 * 1024)

/* Then the frame rule's lines (DESIGN 6) and the blank line. */
static const char stream_headers[] =
    "Status: 200 OK\r\n"
    "Content-Type: text/event-stream; charset=utf-8\r\n"
    "Cache-Control: no-cache\r\n"
    "X-Accel-Buffering: no\r\n";

int
stream_pending(const struct stream *s)
{
	return (s->outoff < s->out.len);
}

/* An event up to pos is queued: a re-attach resumes from there. */
static void
stream_at(struct stream *s, uint64_t pos)
{
	s->pos = pos;
	s->positioned = 1;
}

/* Output goes on from pos (a screen, a gap, a replay): nothing before it
 * is owed. */
static void
stream_to(struct stream *s, uint64_t pos)
{
	s->end = pos;
	stream_at(s, pos);
}

/* The owner and the actor, kept after the session id (stream_serve). */
static const char *
stream_owner(const struct stream *s)
{
	return (s->sid + strlen(s->sid) + 1);
}

static const char *
stream_actor(const struct stream *s)
{
	const char *o = stream_owner(s);

	return (o + strlen(o) + 1);
}

static const char *
stream_share(const struct stream *s)
{
	const char *a = stream_actor(s);

	return (a + strlen(a) + 1);
}

/* Send what the web server takes now of the output.  END_GONE if the
 * viewer has gone. */
/*
 * A CGI run behind a relay that holds what it passes on until its buffer
 * fills (fcgiwrap keeps 8 KiB) would hold every event: with
 * stream_padding set, a comment line EventSource ignores pads each new
 * write to that size.  Costs the padding per write; off by default.
 */
static int
stream_pad(struct stream *s)
{
	static const char fill[] = "                                "
				   "                                ";
	size_t		  want = s->r->conf->stream_padding, n;

	if (want == 0 || s->r->fcgx != NULL || s->outoff != 0 ||
	    s->out.len + 2 > want)
		return (0);
	if (buf_add(&s->out, ":", 1) == -1)
		return (-1);
	while (s->out.len + 1 < want) {
		n = want - 1 - s->out.len;
		if (n > sizeof(fill) - 1)
			n = sizeof(fill) - 1;
		if (buf_add(&s->out, fill, n) == -1)
			return (-1);
	}
	return (buf_add(&s->out, "\n", 1));
}

enum stream_end
stream_push(struct stream *s)
{
	ssize_t n;

	if (!stream_pending(s))
		return (END_NONE);
	if (stream_pad(s) == -1)
		return (END_ERROR);
	n = req_send(s->r, s->out.p + s->outoff, s->out.len - s->outoff);
	if (n == -1)
		return (END_GONE);
	if (n > 0)
		s->quiet_since = client_now_ms();
	s->outoff += (size_t)n;
	s->taken += (uint64_t)n;
	if (!s->grown && s->taken >= STREAM_GROW_AFTER && s->r->fcgx != NULL) {
		s->grown = 1;
		(void)setsockopt(req_conn_fd(s->r), SOL_SOCKET, SO_SNDBUF,
		    &stream_sndbuf_fast, sizeof(stream_sndbuf_fast));
	}
	if (s->outoff == s->out.len) {
		buf_reset(&s->out);
		s->outoff = 0;
	}
	return (END_NONE);
}

/* Emit a held-back partial character as U+FFFD (before a gap or the end). */
static enum stream_end
stream_flush_tail(struct stream *s)
{
	if (s->b64 || utf8_held(&s->u8) == 0)
		return (END_NONE);
	buf_reset(&s->text);
	if (utf8_flush(&s->u8, &s->text) == -1 ||
	    sse_output_text(&s->out, s->end, s->text.p, s->text.len) == -1)
		return (END_ERROR);
	stream_at(s, s->end);
	return (END_NONE);
}

static enum stream_end
stream_output(struct stream *s, const struct msg_output *m)
{
	uint64_t id;
	size_t	 clean = 0;

	s->end = m->end;
	if (s->b64) {
		if (sse_output_b64(&s->out, m->end, m->data, m->len) == -1)
			return (END_ERROR);
		stream_at(s, m->end);
		return (END_NONE);
	}
	/*
	 * With nothing held back, the well-formed prefix (usually all of it)
	 * is escaped from the frame itself; only what follows it goes
	 * through the sanitiser, which starts from the same state there.
	 */
	if (utf8_held(&s->u8) == 0)
		clean = utf8_valid_prefix(m->data, m->len);
	buf_reset(&s->text);
	if (utf8_sanitise(&s->u8, m->data + clean, m->len - clean, &s->text) ==
	    -1)
		return (END_ERROR);
	/* Everything may be held back (a lone lead byte): no event yet. */
	if (clean == 0 && s->text.len == 0)
		return (END_NONE);
	/* The id is the position after the last byte this event carries. */
	id = m->end - utf8_held(&s->u8);
	sse_output_begin(&s->out, id);
	json_escape(&s->out, (const char *)m->data, clean);
	json_escape(&s->out, s->text.p, s->text.len);
	if (sse_output_end(&s->out) == -1)
		return (END_ERROR);
	stream_at(s, id);
	return (END_NONE);
}

int
stream_heartbeat(struct stream *s)
{
	if (s->in_screen)
		return (0); /* never inside an event */
	if (s->hb_event)
		return (buf_add(&s->out, SSE_HEARTBEAT_EVENT,
		    sizeof(SSE_HEARTBEAT_EVENT) - 1));
	return (buf_add(&s->out, SSE_HEARTBEAT, sizeof(SSE_HEARTBEAT) - 1));
}

/*
 * heartbeat=event: a heartbeat right after the last byte that was already
 * there at the attach, so the page knows exactly where the replay ends
 * (terminal queries in it are history: nobody answers them) and where
 * live output begins.  Once per stream; at once if there was nothing to
 * replay.
 */
static enum stream_end
stream_replayed(struct stream *s)
{
	if (!s->hb_event || s->replayed || s->end < s->replay_end)
		return (END_NONE);
	s->replayed = 1;
	return (stream_heartbeat(s) == -1 ? END_ERROR : END_NONE);
}

/* Re-attach in place (the first comment says when and why). */

/* Spacing of the attempts: quick at first, for a ptyd that is back at
 * once, then steady to the end of STREAM_REATTACH_MS. */
static const int stream_backoff_ms[] = { 50, 100, 200, 400, 500 };
#define STREAM_BACKOFF_STEPS \
	(sizeof(stream_backoff_ms) / sizeof(stream_backoff_ms[0]))

/* The next attempt, after one that failed: never past the window. */
static void
stream_backoff(struct stream *s, int64_t now)
{
	s->retry_at = now + stream_backoff_ms[s->tries];
	if (s->tries < STREAM_BACKOFF_STEPS - 1)
		s->tries++;
	if (s->retry_at > s->reattach_until)
		s->retry_at = s->reattach_until;
}

/* The re-attach is over without one: said, counted.  -1. */
static int
stream_give_up(struct stream *s, int how)
{
	s->reattaching = 0;
	metrics_reattach(how);
	flog_info("stream of %s: ptyd's connection ended and %s; ended", s->sid,
	    how == METRICS_REATTACH_GONE ? "the terminal is gone" :
					   "no ptyd attached it again in time");
	return (-1);
}

/*
 * ptyd's connection ended without terminal_closed (EOF, a reset, an
 * error), or a re-attach was refused for a moment; the owner of the
 * descriptor has closed it.  0: attach again from s->pos, at s->retry_at;
 * -1: end the stream as before (a half-written screen event, which no
 * other connection can finish; or the window is over).
 */
int
stream_lost(struct stream *s, int64_t now)
{
	if (s->in_screen)
		return (-1);
	/* What was not yet an event comes again from s->pos: a partial
	 * frame, and a character held back. */
	s->inoff = s->inlen = 0;
	utf8_init(&s->u8);
	if (!s->reattaching) {
		s->reattaching = 1;
		s->tries = 0;
		s->reattach_until = now + STREAM_REATTACH_MS;
		s->retry_at = now;
		return (0);
	}
	if (now >= s->reattach_until)
		return (stream_give_up(s, METRICS_REATTACH_EXPIRED));
	stream_backoff(s, now);
	return (0);
}

/*
 * The attempt due at s->retry_at, without waiting (the event loop calls
 * it): a new connection and MSG_ATTACH, as the viewer's first but from
 * the stream's position.  1: s->fd is that connection, and ptyd's answer
 * comes as a frame (stream_reattached); 0: try again at s->retry_at; -1:
 * the window is over.
 */
int
stream_reattach(struct stream *s, int64_t now)
{
	struct msg_attach m;
	struct frame_out  fo;
	int		  fd = -1;

	if (now >= s->reattach_until)
		return (stream_give_up(s, METRICS_REATTACH_EXPIRED));
	if (s->fd != -1) {
		/* Sent: ptyd answers in its time, up to the window's end
		 * (the keeper's backlog holds us until a ptyd accepts). */
		s->retry_at = s->reattach_until;
		return (0);
	}
	memset(&m, 0, sizeof(m));
	strcpy(m.owner, stream_owner(s));
	strcpy(m.sid, s->sid);
	strcpy(m.actor, stream_actor(s));
	strcpy(m.share, stream_share(s));
	/* No event yet: as the first attach asked, else from the last. */
	m.has_pos = s->positioned;
	m.pos = s->pos;
	m.mode = s->mode;
	m.role = s->role;
	m.watchers = 1;
	m.sizes = 1;
	frame_out_init(&fo);
	if (msg_encode(&fo, MSG_ATTACH, &m) == 0)
		fd = ptyd_open_now(&s->r->conf->ptyd, &fo);
	frame_out_free(&fo);
	if (fd == -1) {
		stream_backoff(s, now);
		return (0);
	}
	s->fd = fd;
	s->retry_at = s->reattach_until;
	return (1);
}

/*
 * ptyd's answer to a re-attach.  END_NONE: attached again, and the
 * frames that follow go on the stream; nothing is sent for the attach
 * itself (the headers and the replay's end were sent once).  END_PTYD:
 * refused for a moment, try again.  END_DONE: the terminal is gone, end
 * as before.
 */
static enum stream_end
stream_reattached(struct stream *s, const struct frame_hdr *h, const uint8_t *p)
{
	struct msg_attached ma;
	struct msg_error    me;

	if (h->type == MSG_ERROR &&
	    msg_decode(MSG_ERROR, p, h->len, &me) == 0) {
		/* A ptyd going away, or a limit of the moment. */
		if (me.code == PROTO_ERR_SHUTDOWN ||
		    me.code == PROTO_ERR_VIEWER_LIMIT ||
		    me.code == PROTO_ERR_EXHAUSTED)
			return (END_PTYD);
		(void)stream_give_up(s, METRICS_REATTACH_GONE);
		return (END_DONE);
	}
	if (h->type != MSG_ATTACHED ||
	    msg_decode(MSG_ATTACHED, p, h->len, &ma) == -1) {
		flog_warnx("stream: unexpected reply %s to MSG_ATTACH",
		    msg_name(h->type));
		return (END_ERROR);
	}
	/* Every position of a new incarnation is past the old one's: ours
	 * ended, and its terminal_closed went with the ptyd we lost. */
	if (ma.base > s->pos) {
		(void)stream_give_up(s, METRICS_REATTACH_GONE);
		return (END_DONE);
	}
	if (!s->positioned) {
		s->pos = s->end = ma.base;
		s->replay_end = ma.end;
	}
	s->reattaching = 0;
	s->gone_at = 0;
	metrics_reattach(METRICS_REATTACH_RESUMED);
	return (END_NONE);
}

/* Turn one complete frame into an event.  END_NONE to go on. */
static enum stream_end
stream_frame(struct stream *s, const struct frame_hdr *h, const uint8_t *p)
{
	struct msg_output mo;
	struct msg_gap	  mg;
	struct msg_exit	  mx;
	struct msg_screen ms;
	struct msg_replay mr;
	struct msg_watchers_reply mw;
	struct msg_share_end	  me;
	struct msg_resize_ev	  mz;
	enum stream_end	  e;

	switch (h->type) {
	case MSG_RESIZE_EV:
		/* As watchers: no id, and a held character's start stays
		 * held (it ends in the output after). */
		if (msg_decode(MSG_RESIZE_EV, p, h->len, &mz) == -1 ||
		    sse_resize(&s->out, mz.rows, mz.cols) == -1)
			break;
		return (END_NONE);
	case MSG_WATCHERS_EV:
		/* Between two events: text held back for a character's
		 * end stays held (it has no id of its own to lose). */
		if (msg_decode(MSG_WATCHERS_EV, p, h->len, &mw) == -1 ||
		    sse_watchers(&s->out, &mw) == -1)
			break;
		return (END_NONE);
	case MSG_SHARE_END:
		if (msg_decode(MSG_SHARE_END, p, h->len, &me) == -1)
			break;
		if ((e = stream_flush_tail(s)) != END_NONE)
			return (e);
		if (sse_share_ended(&s->out, me.reason) == -1)
			return (END_ERROR);
		return (END_DONE);
	case MSG_SCREEN:
		if (msg_decode(MSG_SCREEN, p, h->len, &ms) == -1)
			break;
		if (sse_screen(&s->out, &s->text, !s->in_screen, &ms) == -1)
			return (END_ERROR);
		if ((s->in_screen = !ms.last))
			return (END_NONE);
		stream_to(s, ms.pos);
		return (stream_replayed(s));
	case MSG_OUTPUT:
		if (msg_decode(MSG_OUTPUT, p, h->len, &mo) == -1)
			break;
		if ((e = stream_output(s, &mo)) != END_NONE)
			return (e);
		return (stream_replayed(s));
	case MSG_GAP:
		if (msg_decode(MSG_GAP, p, h->len, &mg) == -1)
			break;
		if ((e = stream_flush_tail(s)) != END_NONE)
			return (e);
		stream_to(s, mg.pos);
		if (sse_gap(&s->out, mg.pos, mg.lost) == -1)
			return (END_ERROR);
		return (END_NONE);
	case MSG_REPLAY:
		if (msg_decode(MSG_REPLAY, p, h->len, &mr) == -1 ||
		    (mr.reason != PROTO_REPLAY_SIZE &&
			mr.reason != PROTO_REPLAY_COST))
			break;
		if ((e = stream_flush_tail(s)) != END_NONE)
			return (e);
		stream_to(s, mr.pos);
		if (sse_replay(&s->out, mr.pos, mr.reason) == -1)
			return (END_ERROR);
		return (END_NONE);
	case MSG_EXIT:
		if (msg_decode(MSG_EXIT, p, h->len, &mx) == -1 ||
		    !contract_reason_valid(mx.reason))
			break;
		if ((e = stream_flush_tail(s)) != END_NONE)
			return (e);
		s->pos = mx.pos;
		if (sse_closed(&s->out, mx.pos, mx.has_exit_code, mx.exit_code,
			mx.reason) == -1)
			return (END_ERROR);
		return (END_DONE);
	}
	flog_warnx("stream: bad frame %s (%u bytes) from ptyd",
	    msg_name(h->type), (unsigned int)h->len);
	return (END_ERROR);
}

/* Is a whole frame waiting in the input?  1 with *h, 0, or -1 if its
 * header is bad. */
int
stream_has_frame(struct stream *s, struct frame_hdr *h)
{
	if (s->inlen - s->inoff < PROTO_HDR_LEN)
		return (0);
	if (frame_hdr_decode(s->in + s->inoff, h) == -1 ||
	    h->len > STREAM_FRAME_MAX - PROTO_HDR_LEN)
		return (-1);
	return (s->inlen - s->inoff >= PROTO_HDR_LEN + h->len);
}

/* Turn the complete frames read so far into events, while the output has
 * room.  END_DONE once terminal_closed is queued. */
enum stream_end
stream_frames(struct stream *s)
{
	struct frame_hdr h;
	enum stream_end	 e;
	int		 r;

	while (s->out.len < STREAM_OUT_HIGH &&
	    (r = stream_has_frame(s, &h)) != 0) {
		if (r == -1) {
			flog_warnx("stream: bad frame header from ptyd");
			return (END_ERROR);
		}
		/* After a re-attach, the first frame is ptyd's answer. */
		e = s->reattaching ?
		    stream_reattached(s, &h, s->in + s->inoff + PROTO_HDR_LEN) :
		    stream_frame(s, &h, s->in + s->inoff + PROTO_HDR_LEN);
		s->inoff += PROTO_HDR_LEN + h.len;
		if (e != END_NONE)
			return (e);
	}
	return (END_NONE);
}

/* Read what ptyd sent, after what is left of a partial frame. */
enum stream_end
stream_read(struct stream *s)
{
	ssize_t n;

	if (s->inoff > 0) {
		memmove(s->in, s->in + s->inoff, s->inlen - s->inoff);
		s->inlen -= s->inoff;
		s->inoff = 0;
	}
	n = read(s->fd, s->in + s->inlen, STREAM_IN_MAX - s->inlen);
	if (n == -1 && (errno == EAGAIN || errno == EINTR)) {
		s->ptyd_eof = errno == EAGAIN;
		return (END_NONE);
	}
	if (n <= 0) {
		/* ptyd closed the stream without MSG_EXIT: ptyd going away,
		 * or a viewer cut off for being stuck.  Attach again. */
		return (END_PTYD);
	}
	s->inlen += (size_t)n;
	return (END_NONE);
}

/* The viewer's connection: anything but silence (and room to write)
 * means it has gone. */
static int
stream_conn_gone(short revents)
{
	return ((revents &
		    (POLLIN | POLLHUP | POLLERR | POLLNVAL | POLLRDHUP)) != 0);
}

/* Wait on the viewer's connection and the stop descriptor, and on ptyd:
 * for frames when want_ptyd, else only for its hangup (gone_at).
 * Returns END_GONE, END_STOP, or END_NONE with *ptyd_ready set. */
static enum stream_end
stream_wait(struct stream *s, int want_ptyd, int timeout, int *ptyd_ready)
{
	struct pollfd pfd[3];
	int	      n;

	*ptyd_ready = 0;
	pfd[0].fd = want_ptyd || s->gone_at == 0 ? s->fd : -1;
	pfd[0].events = want_ptyd ? POLLIN : POLLRDHUP;
	pfd[1].fd = req_conn_fd(s->r);
	/* A CGI stdout is only written, blocking: its errors still show. */
	pfd[1].events = s->r->fcgx == NULL ?
	    0 :
	    POLLIN | POLLRDHUP | (stream_pending(s) ? POLLOUT : 0);
	pfd[2].fd = s->r->stop_fd;
	pfd[2].events = POLLIN;
	pfd[0].revents = pfd[1].revents = pfd[2].revents = 0;
	n = poll(pfd, 3, timeout);
	if (n == -1)
		return (errno == EINTR ? END_NONE : END_ERROR);
	if (stream_conn_gone(pfd[1].revents))
		return (END_GONE);
	if (pfd[2].revents != 0)
		return (END_STOP);
	if (want_ptyd)
		*ptyd_ready = pfd[0].revents != 0;
	else if (pfd[0].revents != 0)
		s->gone_at = client_now_ms();
	return (END_NONE);
}

/* Wait for the web server to take more output.  END_STUCK once ptyd has
 * hung up and the viewer has taken nothing for STREAM_STUCK_MS since. */
static enum stream_end
stream_wait_room(struct stream *s)
{
	int64_t since, left = -1;
	int	ready;

	if (s->gone_at != 0) {
		since = s->quiet_since > s->gone_at ? s->quiet_since :
						      s->gone_at;
		left = since + STREAM_STUCK_MS - client_now_ms();
		if (left <= 0)
			return (END_STUCK);
	}
	return (stream_wait(s, 0, (int)left, &ready));
}

/* One round of moving data: read what ptyd sent (when it said it had
 * some), turn frames into events, send what the web server takes. */
static enum stream_end
stream_move(struct stream *s, int ready)
{
	enum stream_end e = END_NONE;

	if (ready)
		e = stream_read(s);
	if (e == END_NONE && (e = stream_frames(s)) == END_NONE)
		e = stream_push(s);
	return (e);
}

/* ptyd's connection ended without terminal_closed: close it and attach
 * again (stream_lost).  END_NONE, or END_DONE to end as before. */
static enum stream_end
stream_lost_here(struct stream *s)
{
	if (s->fd != -1) {
		close(s->fd);
		s->fd = -1;
	}
	/* The stuck rule (stream_wait_room) counts from here. */
	if (s->gone_at == 0)
		s->gone_at = client_now_ms();
	return (stream_lost(s, client_now_ms()) == 0 ? END_NONE : END_DONE);
}

static enum stream_end
stream_loop(struct stream *s)
{
	struct frame_hdr h;
	int64_t		 hb = s->r->conf->heartbeat_ms, left, now;
	enum stream_end	 e;
	int		 ready = 0;

	for (;;) {
		e = stream_move(s, ready);
		ready = 0;
		if (e == END_PTYD)
			e = stream_lost_here(s);
		if (e != END_NONE)
			return (e);
		if (stream_pending(s)) {
			/* Wait for room; ptyd keeps the rest meanwhile. */
			if ((e = stream_wait_room(s)) != END_NONE)
				return (e);
			continue;
		}
		/* Frames left over when the output filled up come first. */
		if (stream_has_frame(s, &h) != 0)
			continue;
		now = client_now_ms();
		if (s->reattaching && s->retry_at <= now) {
			if (stream_reattach(s, now) == -1)
				return (END_DONE);
			continue;
		}
		left = s->quiet_since + hb - now;
		if (left <= 0) {
			if (stream_heartbeat(s) == -1)
				return (END_ERROR);
			continue;
		}
		if (s->reattaching && s->retry_at - now < left)
			left = s->retry_at - now;
		if ((e = stream_wait(s, s->fd != -1,
			 (int)(left > 60000 ? 60000 : left), &ready)) !=
		    END_NONE)
			return (e);
	}
}

/* Send the rest of the output (terminal_closed, terminal_error) unless the
 * viewer goes, is stuck, or the process stops first. */
static enum stream_end
stream_drain(struct stream *s)
{
	enum stream_end e;

	while ((e = stream_push(s)) == END_NONE && stream_pending(s))
		if ((e = stream_wait_room(s)) != END_NONE)
			break;
	return (e);
}

/* Resume position: Last-Event-ID header, else last_event_id in the query;
 * the header wins when given; a bad value counts as none.  1 if set. */
static int
stream_resume(struct req *r, uint64_t *pos)
{
	const char *hdr = req_param(r, "HTTP_LAST_EVENT_ID");
	char	    q[32];

	if (hdr != NULL && hdr[0] != '\0')
		return (sse_parse_pos(hdr, pos) == 0);
	if (http_query_get(req_param(r, "QUERY_STRING"), "last_event_id", q,
		sizeof(q)) == 1)
		return (sse_parse_pos(q, pos) == 0);
	return (0);
}

/*
 * attach=screen (the page's way) or replay=raw (the seed's way, and the
 * default: old clients get what they always got).  Both given must agree;
 * -1 when answered with an error.
 */
static int
stream_query_mode(struct stream *s)
{
	const char *qs = req_param(s->r, "QUERY_STRING");
	char	    a[16], rp[16];
	int	    qa, qr;

	qa = http_query_get(qs, "attach", a, sizeof(a));
	qr = http_query_get(qs, "replay", rp, sizeof(rp));
	if (qa == -1 || qr == -1 ||
	    (qa == 1 && a[0] != '\0' && strcmp(a, "screen") != 0 &&
		strcmp(a, "raw") != 0) ||
	    (qr == 1 && rp[0] != '\0' && strcmp(rp, "raw") != 0)) {
		http_answer(s->r, CONTRACT_A_ATTACH);
		return (-1);
	}
	s->mode = qa == 1 && strcmp(a, "screen") == 0 ? PROTO_ATTACH_SCREEN :
							PROTO_ATTACH_RAW;
	if (s->mode == PROTO_ATTACH_SCREEN && qr == 1 && rp[0] != '\0') {
		http_answer(s->r, CONTRACT_A_ATTACH_DISAGREE);
		return (-1);
	}
	return (0);
}

/* The query: a session id, and an encoding we speak.  Then the request
 * body (empty for a GET) is read to its end: only then does a readable
 * connection mean the client has gone.  -1 when answered with an error. */
static int
stream_request(struct stream *s, const struct ctx *c)
{
	char enc[16];
	int  q;

	/* Through a share, the share names the terminal. */
	if (!c->has_qsid && c->share == NULL) {
		http_answer(s->r, CONTRACT_A_SID_MISSING);
		return (-1);
	}
	q = http_query_get(req_param(s->r, "QUERY_STRING"), "role", enc,
	    sizeof(enc));
	if (q == -1 ||
	    (q == 1 && enc[0] != '\0' && strcmp(enc, "view") != 0 &&
		strcmp(enc, "control") != 0)) {
		http_answer(s->r, CONTRACT_A_SHARE_ROLE);
		return (-1);
	}
	s->role = q == 1 && strcmp(enc, "view") == 0 ? PROTO_ROLE_VIEW : 0;
	q = http_query_get(req_param(s->r, "QUERY_STRING"), "encoding", enc,
	    sizeof(enc));
	if (q == -1 ||
	    (q == 1 && enc[0] != '\0' && strcmp(enc, "base64") != 0 &&
		strcmp(enc, "text") != 0)) {
		http_answer(s->r, CONTRACT_A_ENCODING);
		return (-1);
	}
	s->b64 = q == 1 && strcmp(enc, "base64") == 0;
	q = http_query_get(req_param(s->r, "QUERY_STRING"), "heartbeat", enc,
	    sizeof(enc));
	if (q == -1 || (q == 1 && enc[0] != '\0' &&
			   strcmp(enc, "event") != 0 &&
			   strcmp(enc, "comment") != 0)) {
		http_answer(s->r, CONTRACT_A_HEARTBEAT);
		return (-1);
	}
	s->hb_event = q == 1 && strcmp(enc, "event") == 0;
	if (stream_query_mode(s) == -1)
		return (-1);
	if (req_drain(s->r, 64 * 1024) == -1) {
		http_answer(s->r, CONTRACT_A_BODY_UNREADABLE);
		return (-1);
	}
	return (0);
}

/* ATTACHED or an error: the first frame of ptyd's answer, in a small
 * buffer of stream_attach's (the stream's are allocated only when data
 * moves).  -1 when answered with an error (404 not registered, 429 viewer
 * limit, ...: before any 200). */
static int
stream_attached(struct stream *s, const struct msg_attach *m,
    const struct frame_hdr *h, const uint8_t *rb)
{
	struct msg_attached ma;
	struct msg_error    me;

	if (h->type == MSG_ERROR &&
	    msg_decode(MSG_ERROR, rb + PROTO_HDR_LEN, h->len, &me) == 0) {
		ptyd_answer_error(s->r, &me);
		return (-1);
	}
	if (h->type != MSG_ATTACHED ||
	    msg_decode(MSG_ATTACHED, rb + PROTO_HDR_LEN, h->len, &ma) == -1) {
		flog_warnx("stream: unexpected reply %s to MSG_ATTACH",
		    msg_name(h->type));
		http_answer(s->r, CONTRACT_A_INTERNAL);
		return (-1);
	}
	s->pos = s->end = m->has_pos && m->pos > ma.base ? m->pos : ma.base;
	s->positioned = m->has_pos;
	s->replay_end = ma.end;
	return (0);
}

/* Attach to the terminal c names, from where the viewer left off.  -1
 * when answered with an error. */
static int
stream_attach(struct stream *s, const struct ctx *c, struct frame_out *fo)
{
	uint8_t		  rb[PROTO_HDR_LEN + 1024];
	struct msg_attach m;
	struct frame_hdr  h;

	memset(&m, 0, sizeof(m));
	strcpy(m.owner, c->owner);
	strcpy(m.sid, c->has_qsid ? c->qsid : "");
	strcpy(m.actor, c->actor);
	strcpy(m.share, stream_share(s));
	m.has_pos = (uint8_t)stream_resume(s->r, &m.pos);
	m.mode = (uint8_t)s->mode;
	m.role = s->role;
	m.watchers = 1;
	m.sizes = 1;
	if (msg_encode(fo, MSG_ATTACH, &m) == -1) {
		http_answer(s->r, CONTRACT_A_INTERNAL);
		return (-1);
	}
	/*
	 * Little in flight to the web server: nginx relays an unbuffered
	 * response for as long as its upstream has data and its client
	 * takes it, so with a thousand streams filling large socket buffers
	 * one round of its event loop copies hundreds of megabytes before it
	 * reads a keystroke's request.  A viewer that proves it reads gets
	 * more (stream_push, stream_sndbuf_fast).
	 */
	if (s->r->fcgx != NULL)
		(void)setsockopt(req_conn_fd(s->r), SOL_SOCKET, SO_SNDBUF,
		    &stream_sndbuf, sizeof(stream_sndbuf));
	/* An attach is a read: ptyd going away before it answers costs
	 * another try, not a 503 (ptyd_open_first). */
	if ((s->fd = ptyd_open_first(&s->r->conf->ptyd, fo, &h, rb, sizeof(rb),
		 client_now_ms() + FRONT_CALL_MS)) == -1) {
		ptyd_answer_failed(s->r, errno);
		return (-1);
	}
	return (stream_attached(s, &m, &h, rb));
}

/* The headers, and the replay's end when there is nothing to replay: they
 * leave with the first events, in the same write. */
void
stream_begin(struct stream *s)
{
	s->r->responded = 1;
	buf_add(&s->out, stream_headers, sizeof(stream_headers) - 1);
	buf_adds(&s->out,
	    s->r->conf != NULL ? s->r->conf->frame_headers :
				 HTTP_FRAME_DEFAULT);
	buf_add(&s->out, "\r\n", 2);
	(void)stream_replayed(s);
	s->quiet_since = client_now_ms();
}

/* Attached, with no loop to take the stream (CGI; a process whose loop
 * could not take it): relay on this thread until the stream ends, then
 * drain what is owed. */
static void
stream_run(struct stream *s, const char *sid)
{
	enum stream_end e;

	/*
	 * This thread is taken for a while: it gives up leading and its
	 * priority (pool.c).  Only now, after ptyd_open_first: an autostart
	 * from it would give ptyd, and every shell, its nice 19.  Until
	 * here the pool's watchdog hands leadership on if ptyd is slow.
	 */
	req_will_last(s->r);
	if ((s->in = malloc(STREAM_IN_MAX)) == NULL) {
		http_answer(s->r, CONTRACT_A_INTERNAL);
		return;
	}
	stream_begin(s);
	e = stream_loop(s);
	/* Not inside a half-written screen event (see streamloop.c). */
	if (e == END_ERROR && !s->in_screen &&
	    sse_error(&s->out, s->pos, CONTRACT_A_INTERNAL) == 0)
		e = END_DONE;
	if (e == END_DONE)
		e = stream_drain(s);
	/*
	 * Only a stream that ended whole (END_NONE: drained) leaves its
	 * connection fit for the web server's next request, as in the loop
	 * (sloop_end): one that ended because bytes came from the web server
	 * (its next request, an abort) is closed with them unread.
	 */
	if (e != END_NONE)
		s->r->no_keep = 1;
	if (e == END_STUCK) {
		flog_info("stream of %s: ptyd hung up and the viewer took"
			  " nothing for %d s more; dropped",
		    sid, STREAM_STUCK_MS / 1000);
		s->r->abandon = 1;
	}
}

/* Every way out detaches the viewer: ptyd sees the close. */
void
stream_free(struct stream *s)
{
	if (s == NULL)
		return;
	if (s->fd != -1)
		close(s->fd);
	free(s->in);
	buf_free(&s->text);
	buf_free(&s->out);
	free(s);
}

int
stream_serve(struct ctx *c)
{
	struct stream	*s;
	struct frame_out fo;
	const char	*share = c->share != NULL ? c->share : "";
	const char	*sid = c->has_qsid ? c->qsid : "";
	size_t		 ls = strlen(sid) + 1, lo = strlen(c->owner) + 1;
	size_t		 la = strlen(c->actor) + 1;
	int		 handed = 0;

	if ((s = calloc(1, sizeof(*s) + ls + lo + la + strlen(share) + 1)) ==
	    NULL) {
		http_answer(c->r, CONTRACT_A_INTERNAL);
		return (0);
	}
	memcpy(s->sid, sid, ls);
	memcpy(s->sid + ls, c->owner, lo);
	memcpy(s->sid + ls + lo, c->actor, la);
	strcpy(s->sid + ls + lo + la, share);
	s->r = c->r;
	s->fd = -1;
	utf8_init(&s->u8);
	buf_init(&s->text, STREAM_TEXT_MAX);
	buf_init(&s->out, STREAM_OUT_MAX);
	frame_out_init(&fo);
	if (stream_request(s, c) == 0 && stream_attach(s, c, &fo) == 0) {
		/* The loop, when this process has one, owns it from here. */
		if (c->r->fcgx != NULL && sloop_running() && sloop_add(s) == 0)
			handed = 1;
		else
			stream_run(s, c->qsid);
	}
	if (!handed) {
		explicit_bzero(s->sid, ls + lo + la + strlen(share));
		stream_free(s);
	}
	frame_out_free(&fo);
	return (handed);
}
