/*
 * test_client.c -- lib/client.c against real Unix sockets: deadlines hold,
 * and a full listen backlog never yields a socket that is not connected.
 */
#include <criterion/criterion.h>

#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"

static char	dir[] = "/tmp/ptyd-test-client.XXXXXX";
static char	path[128];

static int
listen_unix(int backlog)
{
	struct sockaddr_un	sun;
	int			fd;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/s", dir);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	cr_assert_eq(listen(fd, backlog), 0);
	return (fd);
}

/* Fill the backlog of a listener that never accepts; returns how many. */
static int
fill_backlog(int *fds, int max)
{
	int	n;

	for (n = 0; n < max; n++) {
		fds[n] = client_connect(path, client_now_ms() + 50);
		if (fds[n] == -1)
			break;
	}
	return (n);
}

static void
cleanup(void)
{
	unlink(path);
	rmdir(dir);
}

TestSuite(client, .fini = cleanup);

/*
 * Regression: with ptyd's backlog full, connect() on a non-blocking
 * AF_UNIX socket fails with EAGAIN and nothing is in progress; the old
 * code waited for POLLOUT and returned that unconnected socket, so the
 * request's send failed with ENOTCONN and a keystroke was lost.  Now the
 * connect is retried and a full backlog that never drains is a timeout.
 */
Test(client, full_backlog_times_out_instead_of_returning_an_unconnected_fd)
{
	int	lfd, fds[64], n, fd, i;
	int64_t	t0;

	lfd = listen_unix(0);
	n = fill_backlog(fds, 64);
	cr_assert_lt(n, 64, "the backlog never filled");
	t0 = client_now_ms();
	errno = 0;
	fd = client_connect(path, t0 + 200);
	cr_assert_eq(fd, -1, "got fd %d from a full backlog", fd);
	cr_assert_eq(errno, ETIMEDOUT);
	cr_assert_geq(client_now_ms() - t0, 150, "gave up before the deadline");
	for (i = 0; i < n; i++)
		close(fds[i]);
	close(lfd);
}

struct acceptor {
	int	lfd;
	int	accepted[64];
	int	n;
};

static void *
accept_later(void *arg)
{
	struct acceptor	*a = arg;
	int		 fd;

	poll(NULL, 0, 100);
	while (a->n < 64 && (fd = accept(a->lfd, NULL, NULL)) != -1)
		a->accepted[a->n++] = fd;
	return (NULL);
}

Test(client, connect_succeeds_once_the_backlog_drains)
{
	static struct frame_out	fo;
	struct acceptor		a = { 0 };
	pthread_t		t;
	int			fds[64], n, fd, i;

	a.lfd = listen_unix(0);
	n = fill_backlog(fds, 63);
	cr_assert_eq(pthread_create(&t, NULL, accept_later, &a), 0);
	fd = client_connect(path, client_now_ms() + 5000);
	cr_assert_geq(fd, 0, "connect failed: %s", strerror(errno));
	frame_out_init(&fo);
	cr_assert_eq(msg_encode(&fo, MSG_STATS, NULL), 0);
	cr_assert_eq(client_send(fd, &fo, client_now_ms() + 1000), 0,
	    "send on the returned socket failed: %s", strerror(errno));
	frame_out_free(&fo);
	shutdown(a.lfd, SHUT_RDWR);
	close(fd);
	pthread_join(t, NULL);
	for (i = 0; i < n; i++)
		close(fds[i]);
	for (i = 0; i < a.n; i++)
		close(a.accepted[i]);
	close(a.lfd);
}

Test(client, recv_deadline_expires_when_the_peer_is_silent)
{
	struct frame_hdr	h;
	uint8_t			buf[64];
	int			lfd, fd;
	int64_t			t0;

	lfd = listen_unix(4);
	fd = client_connect(path, client_now_ms() + 1000);
	cr_assert_geq(fd, 0);
	t0 = client_now_ms();
	cr_assert_eq(client_recv(fd, &h, buf, sizeof(buf), t0 + 100), -1);
	cr_assert_eq(errno, ETIMEDOUT);
	cr_assert_geq(client_now_ms() - t0, 90);
	close(fd);
	close(lfd);
}

Test(client, missing_socket_is_enoent)
{
	cr_assert_eq(client_connect("/nonexistent-ptyd/s", client_now_ms() + 100),
	    -1);
	cr_assert_eq(errno, ENOENT);
}
