/*
 * test_ptyd_client.c -- fcgi/ptyd_client.c's kept connection against a
 * fake ptyd (a thread on a Unix socket in a temp dir, answering requests
 * as a script says): one kept connection serves request after request;
 * CGI mode keeps nothing; a kept connection found closed is
 * retried on a new one only when the request never reached ptyd, or is
 * safe to repeat.
 *
 * Regressions: a keystroke sent twice because a kept connection was
 * closed after ptyd took it (ptyd restarted mid-request); a request lost
 * (503) because its kept connection was closed before it was sent.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <criterion/criterion.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "frame.h"
#include "proto.h"
#include "ptyd_client.h"

#define MAXREQ 8

/* What the fake ptyd does with its nth request (0-based): 'R' reply,
 * 'K' reply then close, 'C' close without a reply. */
struct fake {
	char		 path[108];
	char		 dir[64];
	int		 lfd;
	const char	*script;
	int		 accepts, requests;
	pthread_t	 t;
	pthread_mutex_t	 mtx;
	pthread_cond_t	 cv;
	int		 closed; /* connections closed by us */
};

static int
fake_read_request(int fd)
{
	uint8_t		 buf[PROTO_HDR_LEN + 4096];
	struct frame_hdr h;

	if (recv(fd, buf, PROTO_HDR_LEN, MSG_WAITALL) != PROTO_HDR_LEN ||
	    frame_hdr_decode(buf, &h) == -1 || h.len > 4096)
		return (-1);
	if (h.len > 0 && recv(fd, buf + PROTO_HDR_LEN, h.len, MSG_WAITALL) !=
	    (ssize_t)h.len)
		return (-1);
	return (0);
}

static void
fake_reply(int fd)
{
	struct frame_out      fo;
	struct msg_input_done d = { 0 };

	frame_out_init(&fo);
	cr_assert_eq(msg_encode(&fo, MSG_INPUT_DONE, &d), 0);
	cr_assert_eq(send(fd, fo.buf, fo.len, MSG_NOSIGNAL), (ssize_t)fo.len);
	frame_out_free(&fo);
}

static void
fake_closed(struct fake *f, int fd)
{
	close(fd);
	pthread_mutex_lock(&f->mtx);
	f->closed++;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mtx);
}

static void *
fake_main(void *arg)
{
	struct fake *f = arg;
	int	     fd;
	char	     act;

	while ((fd = accept(f->lfd, NULL, NULL)) != -1) {
		f->accepts++;
		for (;;) {
			if (fake_read_request(fd) == -1) {
				fake_closed(f, fd);
				break;
			}
			act = f->script[f->requests++];
			if (act != 'C')
				fake_reply(fd);
			if (act != 'R') {
				fake_closed(f, fd);
				break;
			}
		}
	}
	return (NULL);
}

static void
fake_start(struct fake *f, const char *script)
{
	struct sockaddr_un sun;

	memset(f, 0, sizeof(*f));
	f->script = script;
	strcpy(f->dir, "/tmp/ptyd-client-test.XXXXXX");
	cr_assert_not_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/s", f->dir);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	strcpy(sun.sun_path, f->path);
	f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_neq(f->lfd, -1);
	cr_assert_eq(bind(f->lfd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	cr_assert_eq(listen(f->lfd, 8), 0);
	pthread_mutex_init(&f->mtx, NULL);
	pthread_cond_init(&f->cv, NULL);
	cr_assert_eq(pthread_create(&f->t, NULL, fake_main, f), 0);
}

/* Wait until the fake has closed n connections. */
static void
fake_wait_closed(struct fake *f, int n)
{
	pthread_mutex_lock(&f->mtx);
	while (f->closed < n)
		pthread_cond_wait(&f->cv, &f->mtx);
	pthread_mutex_unlock(&f->mtx);
	usleep(10000); /* the close reaches our end */
}

static void
fake_stop(struct fake *f)
{
	ptyd_kept_drop();
	shutdown(f->lfd, SHUT_RDWR);
	pthread_join(f->t, NULL);
	close(f->lfd);
	unlink(f->path);
	rmdir(f->dir);
}

static int
call(struct fake *f, int keep, int retry_safe)
{
	struct ptyd_conf     conf;
	struct frame_out     fo;
	struct frame_hdr     h;
	struct msg_input     m;
	uint8_t		     buf[PROTO_HDR_LEN + 1024];
	int		     r;

	memset(&conf, 0, sizeof(conf));
	strcpy(conf.socket, f->path);
	conf.keep = keep;
	memset(&m, 0, sizeof(m));
	strcpy(m.sid, "a");
	m.data = (const uint8_t *)"x";
	m.len = 1;
	frame_out_init(&fo);
	cr_assert_eq(msg_encode(&fo, MSG_INPUT, &m), 0);
	r = ptyd_call(&conf, &fo, &h, buf, sizeof(buf), retry_safe,
	    client_now_ms() + 2000);
	if (r == 0)
		cr_assert_eq(h.type, MSG_INPUT_DONE);
	frame_out_free(&fo);
	return (r);
}

Test(ptyd_client, one_kept_connection_serves_request_after_request)
{
	struct fake f;

	fake_start(&f, "RRR");
	cr_assert_eq(call(&f, 1, 0), 0);
	cr_assert_eq(call(&f, 1, 0), 0);
	cr_assert_eq(call(&f, 1, 0), 0);
	fake_stop(&f);
	cr_expect_eq(f.accepts, 1);
	cr_expect_eq(f.requests, 3);
}

Test(ptyd_client, cgi_mode_keeps_nothing)
{
	struct fake f;

	fake_start(&f, "RR");
	cr_assert_eq(call(&f, 0, 0), 0);
	fake_wait_closed(&f, 1); /* we closed: the fake saw EOF */
	cr_assert_eq(call(&f, 0, 0), 0);
	fake_stop(&f);
	cr_expect_eq(f.accepts, 2);
}

Test(ptyd_client, a_request_that_never_reached_ptyd_goes_again)
{
	struct fake f;

	/* The kept connection is closed by ptyd (restart, idle) after the
	 * first reply; the second request, not safe to repeat, goes on a
	 * new connection since it never reached the old one. */
	fake_start(&f, "KR");
	cr_assert_eq(call(&f, 1, 0), 0);
	fake_wait_closed(&f, 1);
	cr_assert_eq(call(&f, 1, 0), 0);
	fake_stop(&f);
	cr_expect_eq(f.accepts, 2);
	cr_expect_eq(f.requests, 2);
}

Test(ptyd_client, a_request_ptyd_took_is_not_sent_twice_unless_safe)
{
	struct fake f;

	fake_start(&f, "RC");
	cr_assert_eq(call(&f, 1, 0), 0);
	cr_assert_eq(call(&f, 1, 0), -1);
	cr_expect(errno == ECONNRESET || errno == EPIPE, "errno %d", errno);
	fake_stop(&f);
	cr_expect_eq(f.requests, 2, "taken once, not repeated");
}

Test(ptyd_client, a_safe_request_ptyd_took_without_reply_goes_again)
{
	struct fake f;

	fake_start(&f, "RCR");
	cr_assert_eq(call(&f, 1, 0), 0);
	cr_assert_eq(call(&f, 1, 1), 0);
	fake_stop(&f);
	cr_expect_eq(f.requests, 3);
	cr_expect_eq(f.accepts, 2);
}
