/*
 * stream.c -- the output stream (stream.h).
 *
 * Owns: one ptyd connection for as long as the viewer stays.  The loop
 * polls three descriptors: ptyd (frames), the web server connection (a
 * hangup, EOF or any data after the request body ended means the client is
 * gone: nginx closes the FastCGI connection when its client aborts), and
 * the process's stop descriptor (shutdown).  Whatever ends the loop, the
 * ptyd connection is closed on the way out, which detaches the viewer.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "client.h"
#include "flog.h"
#include "front.h"
#include "handlers.h"
#include "http.h"
#include "sse.h"
#include "stream.h"
#include "utf8.h"

/* Largest frame of the stream: MSG_OUTPUT with a full chunk. */
#define STREAM_FRAME_MAX	(PROTO_HDR_LEN + 8 + PROTO_OUTPUT_CHUNK)
/* Bounds on one event: every byte escaped as \u00XX is six. */
#define STREAM_TEXT_MAX		(4 * PROTO_OUTPUT_CHUNK)
#define STREAM_EVENT_MAX	(8 * PROTO_OUTPUT_CHUNK)

static const char stream_headers[] =
    "Status: 200 OK\r\n"
    "Content-Type: text/event-stream; charset=utf-8\r\n"
    "Cache-Control: no-cache\r\n"
    "X-Accel-Buffering: no\r\n"
    "\r\n";

enum stream_end {
	END_NONE,
	END_DONE,	/* terminal_closed sent, or ptyd ended the stream */
	END_GONE,	/* the viewer went away or a write failed */
	END_STOP,	/* this process is shutting down */
	END_ERROR,	/* internal failure: terminal_error */
};

struct stream {
	struct ctx		*c;
	struct req		*r;
	int			 fd;		/* ptyd */
	int			 b64;
	struct utf8_state	 u8;
	uint64_t		 pos;		/* id of the last event */
	uint64_t		 end;		/* position after the last byte seen */
	uint8_t			*in;		/* frames from ptyd */
	size_t			 inlen;
	struct buf		 text;
	struct buf		 ev;
	int64_t			 quiet_since;	/* last event or heartbeat */
};

/* Write the event in s->ev and push it to the client at once. */
static enum stream_end
stream_send(struct stream *s)
{
	if (s->ev.failed)
		return (END_ERROR);
	if (req_write(s->r, s->ev.p, s->ev.len) == -1 || req_flush(s->r) == -1)
		return (END_GONE);
	s->quiet_since = client_now_ms();
	return (END_NONE);
}

/* Emit a held-back partial character as U+FFFD (before a gap or the end). */
static enum stream_end
stream_flush_tail(struct stream *s)
{
	if (s->b64 || utf8_held(&s->u8) == 0)
		return (END_NONE);
	buf_reset(&s->text);
	buf_reset(&s->ev);
	if (utf8_flush(&s->u8, &s->text) == -1 ||
	    sse_output_text(&s->ev, s->end, s->text.p, s->text.len) == -1)
		return (END_ERROR);
	s->pos = s->end;
	return (stream_send(s));
}

static enum stream_end
stream_output(struct stream *s, const struct msg_output *m)
{
	uint64_t	id;

	s->end = m->end;
	buf_reset(&s->ev);
	if (s->b64) {
		if (sse_output_b64(&s->ev, m->end, m->data, m->len) == -1)
			return (END_ERROR);
		s->pos = m->end;
		return (stream_send(s));
	}
	buf_reset(&s->text);
	if (utf8_sanitise(&s->u8, m->data, m->len, &s->text) == -1)
		return (END_ERROR);
	/* Everything may be held back (a lone lead byte): no event yet. */
	if (s->text.len == 0)
		return (END_NONE);
	/* The id is the position after the last byte this event carries. */
	id = m->end - utf8_held(&s->u8);
	if (sse_output_text(&s->ev, id, s->text.p, s->text.len) == -1)
		return (END_ERROR);
	s->pos = id;
	return (stream_send(s));
}

/* Handle one complete frame.  END_NONE to go on. */
static enum stream_end
stream_frame(struct stream *s, const struct frame_hdr *h, const uint8_t *p)
{
	struct msg_output	mo;
	struct msg_gap		mg;
	struct msg_exit		mx;
	enum stream_end		e;

	switch (h->type) {
	case MSG_OUTPUT:
		if (msg_decode(MSG_OUTPUT, p, h->len, &mo) == -1)
			break;
		return (stream_output(s, &mo));
	case MSG_GAP:
		if (msg_decode(MSG_GAP, p, h->len, &mg) == -1)
			break;
		if ((e = stream_flush_tail(s)) != END_NONE)
			return (e);
		s->end = mg.pos;
		s->pos = mg.pos;
		buf_reset(&s->ev);
		if (sse_gap(&s->ev, mg.pos, mg.lost) == -1)
			return (END_ERROR);
		return (stream_send(s));
	case MSG_EXIT:
		if (msg_decode(MSG_EXIT, p, h->len, &mx) == -1)
			break;
		if ((e = stream_flush_tail(s)) != END_NONE)
			return (e);
		s->pos = mx.pos;
		buf_reset(&s->ev);
		if (sse_closed(&s->ev, mx.pos, mx.has_exit_code, mx.exit_code,
		    mx.reason) == -1)
			return (END_ERROR);
		e = stream_send(s);
		return (e == END_NONE ? END_DONE : e);
	}
	flog_warnx("stream: bad frame %s (%u bytes) from ptyd",
	    msg_name(h->type), (unsigned int)h->len);
	return (END_ERROR);
}

/* Read what ptyd sent and handle every complete frame in it. */
static enum stream_end
stream_read(struct stream *s)
{
	struct frame_hdr	h;
	enum stream_end		e;
	size_t			off = 0;
	ssize_t			n;

	n = read(s->fd, s->in + s->inlen, STREAM_FRAME_MAX - s->inlen);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return (END_NONE);
	if (n <= 0) {
		/*
		 * ptyd closed the stream without MSG_EXIT: a viewer cut off
		 * for being stuck, or ptyd going away.  The response simply
		 * ends; the browser resumes with its Last-Event-ID.
		 */
		return (END_DONE);
	}
	s->inlen += (size_t)n;
	while (s->inlen - off >= PROTO_HDR_LEN) {
		if (frame_hdr_decode(s->in + off, &h) == -1 ||
		    h.len > STREAM_FRAME_MAX - PROTO_HDR_LEN) {
			flog_warnx("stream: bad frame header from ptyd");
			return (END_ERROR);
		}
		if (s->inlen - off < PROTO_HDR_LEN + h.len)
			break;
		e = stream_frame(s, &h, s->in + off + PROTO_HDR_LEN);
		off += PROTO_HDR_LEN + h.len;
		if (e != END_NONE)
			return (e);
	}
	memmove(s->in, s->in + off, s->inlen - off);
	s->inlen -= off;
	return (END_NONE);
}

/* The viewer's connection: anything but silence means it has gone. */
static int
stream_conn_gone(short revents)
{
	return ((revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL |
	    POLLRDHUP)) != 0);
}

static enum stream_end
stream_loop(struct stream *s)
{
	struct pollfd	pfd[3];
	int64_t		hb = s->r->conf->heartbeat_ms, left;
	enum stream_end	e;
	int		n;

	for (;;) {
		pfd[0].fd = s->fd;
		pfd[0].events = POLLIN;
		pfd[1].fd = req_conn_fd(s->r);
		/* A CGI stdout is only written: its errors still show. */
		pfd[1].events = s->r->fcgx != NULL ? POLLIN | POLLRDHUP : 0;
		pfd[2].fd = s->r->stop_fd;
		pfd[2].events = POLLIN;
		left = s->quiet_since + hb - client_now_ms();
		if (left < 0)
			left = 0;
		n = poll(pfd, 3, (int)(left > 60000 ? 60000 : left));
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return (END_ERROR);
		}
		if (stream_conn_gone(pfd[1].revents))
			return (END_GONE);
		if (pfd[2].revents != 0)
			return (END_STOP);
		if (pfd[0].revents != 0) {
			if ((e = stream_read(s)) != END_NONE)
				return (e);
			continue;
		}
		if (client_now_ms() - s->quiet_since >= hb) {
			if (req_write(s->r, SSE_HEARTBEAT,
			    sizeof(SSE_HEARTBEAT) - 1) == -1 ||
			    req_flush(s->r) == -1)
				return (END_GONE);
			s->quiet_since = client_now_ms();
		}
	}
}

/* Resume position: Last-Event-ID header, else last_event_id in the query;
 * the header wins when given; a bad value counts as none.  1 if set. */
static int
stream_resume(struct req *r, uint64_t *pos)
{
	const char	*hdr = req_param(r, "HTTP_LAST_EVENT_ID");
	char		 q[32];

	if (hdr != NULL && hdr[0] != '\0')
		return (sse_parse_pos(hdr, pos) == 0);
	if (http_query_get(req_param(r, "QUERY_STRING"), "last_event_id", q,
	    sizeof(q)) == 1)
		return (sse_parse_pos(q, pos) == 0);
	return (0);
}

void
stream_serve(struct ctx *c)
{
	struct stream		 s;
	struct msg_attach	 m;
	struct msg_attached	 ma;
	struct msg_error	 me;
	struct frame_out	 fo;
	struct frame_hdr	 h;
	enum stream_end		 e;
	char			 enc[16];
	int			 q;

	memset(&s, 0, sizeof(s));
	s.c = c;
	s.r = c->r;
	s.fd = -1;
	utf8_init(&s.u8);
	buf_init(&s.text, STREAM_TEXT_MAX);
	buf_init(&s.ev, STREAM_EVENT_MAX);
	frame_out_init(&fo);

	if (!c->has_qsid) {
		http_error(s.r, 400, "missing session_id", 0);
		goto out;
	}
	q = http_query_get(req_param(s.r, "QUERY_STRING"), "encoding", enc,
	    sizeof(enc));
	if (q == -1 || (q == 1 && enc[0] != '\0' &&
	    strcmp(enc, "base64") != 0 && strcmp(enc, "text") != 0)) {
		http_error(s.r, 400, "unsupported encoding", 0);
		goto out;
	}
	s.b64 = q == 1 && strcmp(enc, "base64") == 0;

	/*
	 * The request body (empty for a GET) must be read to its end first:
	 * only then does a readable connection mean the client has gone.
	 */
	if (req_drain(s.r, 64 * 1024) == -1) {
		http_error(s.r, 400, "request body could not be read", 0);
		goto out;
	}

	memset(&m, 0, sizeof(m));
	strcpy(m.owner, c->owner);
	strcpy(m.sid, c->qsid);
	strcpy(m.actor, c->actor);
	m.has_pos = (uint8_t)stream_resume(s.r, &m.pos);
	if ((s.in = malloc(STREAM_FRAME_MAX)) == NULL ||
	    msg_encode(&fo, MSG_ATTACH, &m) == -1) {
		http_error(s.r, 500, "internal error", 0);
		goto out;
	}
	if ((s.fd = ptyd_open(&s.r->conf->ptyd, &fo,
	    client_now_ms() + FRONT_CALL_MS)) == -1 ||
	    client_recv(s.fd, &h, s.in, STREAM_FRAME_MAX,
	    client_now_ms() + FRONT_CALL_MS) == -1) {
		handlers_ptyd_failed(s.r, errno);
		goto out;
	}
	if (h.type == MSG_ERROR &&
	    msg_decode(MSG_ERROR, s.in + PROTO_HDR_LEN, h.len, &me) == 0) {
		/* 404 not registered, 429 viewer limit: before any 200. */
		http_error(s.r, ptyd_err_status(me.code),
		    ptyd_err_message(me.code, me.message),
		    me.code == PROTO_ERR_SHUTDOWN ? FRONT_RETRY_AFTER : 0);
		goto out;
	}
	if (h.type != MSG_ATTACHED ||
	    msg_decode(MSG_ATTACHED, s.in + PROTO_HDR_LEN, h.len, &ma) == -1) {
		flog_warnx("stream: unexpected reply %s to MSG_ATTACH",
		    msg_name(h.type));
		http_error(s.r, 500, "internal error", 0);
		goto out;
	}
	s.pos = s.end = m.has_pos && m.pos > ma.base ? m.pos : ma.base;

	s.r->responded = 1;
	if (req_write(s.r, stream_headers, sizeof(stream_headers) - 1) == -1 ||
	    req_flush(s.r) == -1)
		goto out;
	s.quiet_since = client_now_ms();
	e = stream_loop(&s);
	if (e == END_ERROR) {
		buf_reset(&s.ev);
		if (sse_error(&s.ev, s.pos, "internal error") == 0)
			stream_send(&s);
	}
out:
	/* Every way out detaches the viewer: ptyd sees the close. */
	if (s.fd != -1)
		close(s.fd);
	free(s.in);
	buf_free(&s.text);
	buf_free(&s.ev);
	frame_out_free(&fo);
}
