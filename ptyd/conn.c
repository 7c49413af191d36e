/*
 * conn.c -- one client connection, from accept to close: the socket and
 * the framing of requests (conn.h).
 *
 * Owns: struct conn, its fd, its epoll registration, its timer (a
 * request's deadline, or the idle wait for the next; a viewer's stall
 * timer, which connstream.c arms), its request buffer (allocated only
 * after the header passed frame_hdr_decode and the type is a request)
 * and its reply bytes.  Does not own: what a request means (request.c),
 * a viewer's stream and the output pump (connstream.c), the terminal
 * (term.c), or accepting (listen.c).
 *
 * A connection serves requests one after another (ptyd.fcgi keeps a few
 * per process): after a reply it waits for the next (conn_next), idle for
 * at most PTYD_CONN_IDLE.  A client that closes after its reply is served as
 * before.
 *
 * Every way out goes through conn_destroy, which detaches the viewer,
 * closes the fd and frees the struct at the end of the loop turn.
 */
#include <sys/epoll.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include <errno.h>
#include <limits.h>
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
#include "request.h"
#include "screen.h"
#include "term.h"
#include "xmalloc.h"

/* Reply buffer kept between requests on one connection. */
#define CONN_OUT_KEEP 4096

static LIST_HEAD(, conn) conns = LIST_HEAD_INITIALIZER(conns);
static unsigned int    conn_n;
static int64_t	       conn_started_at;
static int	       conn_shutting_down;

static void conn_read(struct conn *);
static void conn_io_cb(int, uint32_t, void *);
static void conn_timer_cb(void *);
static void conn_free_cb(void *);
static void conn_reply_flush(struct conn *);
static void conn_next(struct conn *);

void
conn_init(int64_t started_at)
{
	conn_started_at = started_at;
	conn_stream_init(started_at);
}

int64_t
conn_uptime(int64_t now)
{
	return (now - conn_started_at);
}

unsigned int
conn_count(void)
{
	return (conn_n);
}

void
conn_create(int fd)
{
	struct conn *c;

	c = xcalloc(1, sizeof(*c));
	c->fd = fd;
	c->io.fd = -1;
	c->passfd = -1;
	c->state = CONN_READ_HDR;
	ev_timer_init(&c->timer, conn_timer_cb, c);
	ev_defer_init(&c->defer, conn_free_cb, c);
	ev_timer_at(&c->timer, ev_now() + PTYD_REQUEST_TIMEOUT);
	LIST_INSERT_HEAD(&conns, c, entry);
	conn_n++;
	/*
	 * The request usually arrived with the connect: serve it now.  The
	 * fd joins epoll only when it has to wait, so a keystroke costs no
	 * epoll_ctl and no extra loop turn.
	 */
	conn_read(c);
}

/* Wait for events: registered with epoll on the first wait.  On failure
 * the connection is torn down and -1 returned. */
int
conn_want(struct conn *c, uint32_t events)
{
	int r;

	if (c->io.fd == -1)
		r = ev_io_add(&c->io, c->fd, events, conn_io_cb, c);
	else
		r = ev_io_set(&c->io, events);
	if (r == -1) {
		log_warn("conn: epoll");
		conn_destroy(c);
	}
	return (r);
}

static void
conn_free_cb(void *arg)
{
	struct conn *c = arg;

	free(c->payload);
	free(c->out);
	screen_shot_unref(c->v.shot);
	c->v.shot = NULL;
	free(c);
}

/* The one teardown: detach, close, free at the end of the turn. */
void
conn_destroy(struct conn *c)
{
	if (c->state == CONN_DEAD)
		return;
	c->state = CONN_DEAD;
	ev_timer_stop(&c->timer);
	ev_io_del(&c->io);
	close(c->fd);
	c->fd = -1;
	if (c->passfd != -1)
		close(c->passfd);
	c->passfd = -1;
	if (c->v.term != NULL)
		term_detach(&c->v, ev_now());
	conn_stream_unqueue(c);
	LIST_REMOVE(c, entry);
	conn_n--;
	ev_defer(&c->defer);
}

void
conn_shutdown(void)
{
	struct conn *c, *next;

	conn_shutting_down = 1;
	for (c = LIST_FIRST(&conns); c != NULL; c = next) {
		next = LIST_NEXT(c, entry);
		if (c->state == CONN_READ_HDR || c->state == CONN_READ_BODY)
			conn_destroy(c);
	}
}

void
conn_close_all(void)
{
	struct conn *c;

	while ((c = LIST_FIRST(&conns)) != NULL) {
		/* One last try to hand a viewer what it is owed. */
		if (c->state == CONN_STREAM && !c->blocked)
			(void)conn_stream_flush(c, SIZE_MAX);
		if (c->state != CONN_DEAD)
			conn_destroy(c);
	}
}

/* Replies. */

/* Replies are small but a MSG_LIST of every terminal is not: grow by
 * doubling so building it stays linear. */
static void
conn_out_append(struct conn *c, const struct frame_out *fo)
{
	size_t ncap;

	if (c->outlen + fo->len > c->outcap) {
		ncap = c->outcap != 0 ? c->outcap : 256;
		while (ncap < c->outlen + fo->len)
			ncap *= 2;
		c->out = xreallocarray(c->out, 1, ncap);
		c->outcap = ncap;
	}
	memcpy(c->out + c->outlen, fo->buf, fo->len);
	c->outlen += fo->len;
}

void
conn_reply(struct conn *c, uint16_t type, const void *msg)
{
	struct frame_out fo;

	frame_out_init(&fo);
	if (msg_encode(&fo, type, msg) == -1)
		fatal("encoding %s", msg_name(type));
	conn_out_append(c, &fo);
	frame_out_free(&fo);
}

/* A reply that carries fd (a recording's file, DESIGN 4): it goes with
 * the reply's first byte and is ours to close until then. */
void
conn_reply_fd(struct conn *c, uint16_t type, const void *msg, int fd)
{
	if (c->passfd != -1)
		close(c->passfd);
	c->passfd = fd;
	conn_reply(c, type, msg);
}

/* send(2), with the descriptor to pass on the first byte that goes. */
static ssize_t
conn_send_out(struct conn *c)
{
	union {
		struct cmsghdr hdr;
		char	       buf[CMSG_SPACE(sizeof(int))];
	} cm;
	struct msghdr mh;
	struct iovec  iov;
	ssize_t	      n;

	if (c->passfd == -1)
		return (send(c->fd, c->out + c->outoff, c->outlen - c->outoff,
		    MSG_NOSIGNAL));
	memset(&mh, 0, sizeof(mh));
	memset(&cm, 0, sizeof(cm));
	iov.iov_base = c->out + c->outoff;
	iov.iov_len = c->outlen - c->outoff;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cm.buf;
	mh.msg_controllen = sizeof(cm.buf);
	cm.hdr.cmsg_level = SOL_SOCKET;
	cm.hdr.cmsg_type = SCM_RIGHTS;
	cm.hdr.cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(&cm.hdr), &c->passfd, sizeof(int));
	if ((n = sendmsg(c->fd, &mh, MSG_NOSIGNAL)) > 0) {
		close(c->passfd);
		c->passfd = -1;
	}
	return (n);
}

void
conn_error(struct conn *c, enum proto_err code, const char *message)
{
	struct msg_error m;

	memset(&m, 0, sizeof(m));
	m.code = (uint16_t)code;
	snprintf(m.message, sizeof(m.message), "%s", message);
	conn_reply(c, MSG_ERROR, &m);
}

static void
conn_dispatch(struct conn *c)
{
	c->state = CONN_REPLY;
	request_serve(c, c->fh.type, c->payload, c->fh.len,
	    conn_shutting_down, ev_now());
	free(c->payload);
	c->payload = NULL;
	if (c->state == CONN_REPLY)
		conn_reply_flush(c);
}

/* Requests. */

static void
conn_read(struct conn *c)
{
	ssize_t n;

	while (c->state == CONN_READ_HDR || c->state == CONN_READ_BODY) {
		if (c->state == CONN_READ_HDR)
			n = read(c->fd, c->hdr + c->got,
			    sizeof(c->hdr) - c->got);
		else
			n = read(c->fd, c->payload + c->got,
			    c->fh.len - c->got);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN) {
			(void)conn_want(c, EPOLLIN);
			return;
		}
		if (n <= 0) {
			conn_destroy(c);
			return;
		}
		/* On a kept connection, a request has PTYD_REQUEST_TIMEOUT
		 * from its first byte (conn_next armed the idle one). */
		if (c->state == CONN_READ_HDR && c->got == 0 && c->kept)
			ev_timer_at(&c->timer, ev_now() + PTYD_REQUEST_TIMEOUT);
		c->got += (size_t)n;
		if (c->state == CONN_READ_HDR) {
			if (c->got < sizeof(c->hdr))
				continue;
			if (frame_hdr_decode(c->hdr, &c->fh) == -1) {
				c->state = CONN_REPLY;
				c->close_after = 1;
				if (errno == EPROTO)
					conn_error(c, PROTO_ERR_VERSION,
					    "protocol version mismatch");
				else
					conn_error(c, PROTO_ERR_TOO_LARGE,
					    "frame too large");
				conn_reply_flush(c);
				return;
			}
			if (!request_is_request(c->fh.type)) {
				c->state = CONN_REPLY;
				c->close_after = 1;
				conn_error(c, PROTO_ERR_BAD_REQUEST,
				    "not a request");
				conn_reply_flush(c);
				return;
			}
			/* Bounded by frame_hdr_decode (PROTO_MAX_PAYLOAD). */
			c->got = 0;
			c->state = CONN_READ_BODY;
			if (c->fh.len > 0)
				c->payload = xmalloc(c->fh.len);
		}
		if (c->state == CONN_READ_BODY && c->got == c->fh.len) {
			conn_dispatch(c);
			return;
		}
	}
}

/*
 * The reply is out: wait for the connection's next request.  ptyd.fcgi
 * keeps a few connections per process (fcgi/ptyd_client.c) and sends one
 * request at a time on each, so a keystroke costs no connect and no
 * accept.
 * Nothing is read here: the client has not sent the next request yet, and
 * epoll says when it has.  Idle, the connection is dropped after
 * PTYD_CONN_IDLE; after a protocol error, or in shutdown, at once.
 */
static void
conn_next(struct conn *c)
{
	if (c->close_after || conn_shutting_down) {
		conn_destroy(c);
		return;
	}
	c->state = CONN_READ_HDR;
	c->kept = 1;
	c->got = c->outlen = c->outoff = 0;
	/* A large reply (a list) is not kept for the next small one. */
	if (c->outcap > CONN_OUT_KEEP) {
		free(c->out);
		c->out = NULL;
		c->outcap = 0;
	}
	ev_timer_at(&c->timer, ev_now() + PTYD_CONN_IDLE);
	(void)conn_want(c, EPOLLIN);
}

static void
conn_reply_flush(struct conn *c)
{
	ssize_t n;

	while (c->outoff < c->outlen) {
		n = conn_send_out(c);
		if (n > 0) {
			c->outoff += (size_t)n;
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN) {
			(void)conn_want(c, EPOLLOUT);
			return;
		}
		conn_destroy(c);
		return;
	}
	conn_next(c);
}

/* Callbacks. */

static void
conn_io_cb(int fd, uint32_t events, void *arg)
{
	struct conn *c = arg;

	(void)fd;
	switch (c->state) {
	case CONN_READ_HDR:
	case CONN_READ_BODY:
		conn_read(c);
		break;
	case CONN_REPLY:
		if (events & (EPOLLERR | EPOLLHUP))
			conn_destroy(c);
		else
			conn_reply_flush(c);
		break;
	case CONN_STREAM:
		conn_stream_io(c, events);
		break;
	case CONN_DEAD:
		break;
	}
}

static void
conn_timer_cb(void *arg)
{
	struct conn *c = arg;

	if (c->state == CONN_STREAM) {
		conn_stream_timer(c, ev_now());
		return;
	}
	/* A request that never arrived, or a reply nobody reads. */
	conn_destroy(c);
}
