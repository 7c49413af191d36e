/*
 * client.c -- blocking, deadline-bounded client I/O on the ptyd socket.
 *
 * Owns: one connection at a time for its caller; every wait is a poll()
 * bounded by the caller's deadline, so a stuck ptyd can delay a request but
 * never hang a worker.  Does not own: frame layout (frame.c).
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client.h"

int64_t
client_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

/* Wait for events on fd until the deadline.  0 when ready, -1 ETIMEDOUT. */
static int
client_wait(int fd, short events, int64_t deadline_ms)
{
	struct pollfd pfd;
	int64_t	      left;
	int	      r;

	for (;;) {
		if (deadline_ms < 0)
			left = -1;
		else if ((left = deadline_ms - client_now_ms()) < 0)
			left = 0;
		pfd.fd = fd;
		pfd.events = events;
		pfd.revents = 0;
		r = poll(&pfd, 1, left > 1000000 ? 1000000 : (int)left);
		if (r > 0)
			return (0);
		if (r == 0 && left >= 0 && deadline_ms - client_now_ms() <= 0) {
			errno = ETIMEDOUT;
			return (-1);
		}
		if (r < 0 && errno != EINTR)
			return (-1);
	}
}

/*
 * Whoever listens at the socket gets the keystrokes: it must be ptyd of
 * this account (or root's), never another account that bound a socket
 * where a setting pointed (a shared folder, a stale path).  As ptyd checks
 * us (SO_PEERCRED), we check it.  0, or -1 with errno EPERM.
 */
static int
client_peer_ok(int fd)
{
	struct ucred uc;
	socklen_t    len = sizeof(uc);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) == -1)
		return (-1);
	if (uc.uid != getuid() && uc.uid != geteuid() && uc.uid != 0) {
		errno = EPERM;
		return (-1);
	}
	return (0);
}

int
client_connect(const char *path, int64_t deadline_ms)
{
	struct sockaddr_un sun;
	int64_t		   left;
	int		   fd, err, backoff;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		errno = ENAMETOOLONG;
		return (-1);
	}
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd == -1)
		return (-1);
	/*
	 * A non-blocking connect on AF_UNIX either completes at once or fails
	 * with EAGAIN when ptyd's listen backlog is full; unlike TCP, nothing
	 * is in progress then and the socket stays unconnected, so waiting for
	 * POLLOUT would hand back a socket that fails on first use (a lost
	 * keystroke).  Retry the connect itself, backing off, until the
	 * deadline.
	 */
	for (backoff = 1;; backoff = backoff < 64 ? backoff * 2 : 64) {
		if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0) {
			if (client_peer_ok(fd) == 0)
				return (fd);
			goto fail;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			goto fail;
		left = deadline_ms < 0 ? backoff :
					 deadline_ms - client_now_ms();
		if (left <= 0) {
			errno = ETIMEDOUT;
			goto fail;
		}
		(void)poll(NULL, 0, (int)(left < backoff ? left : backoff));
	}
fail:
	err = errno;
	close(fd);
	errno = err;
	return (-1);
}

int
client_send(int fd, const struct frame_out *fo, int64_t deadline_ms)
{
	size_t	off = 0;
	ssize_t n;

	while (off < fo->len) {
		n = send(fd, fo->buf + off, fo->len - off, MSG_NOSIGNAL);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN) {
			if (client_wait(fd, POLLOUT, deadline_ms) == -1)
				return (-1);
			continue;
		}
		return (-1);
	}
	return (0);
}

/* Read exactly len bytes.  EOF, even before the first byte, is ECONNRESET. */
static int
client_read_full(int fd, uint8_t *buf, size_t len, int64_t deadline_ms)
{
	size_t	off = 0;
	ssize_t n;

	while (off < len) {
		n = read(fd, buf + off, len - off);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n == 0) {
			errno = ECONNRESET;
			return (-1);
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN) {
			if (client_wait(fd, POLLIN, deadline_ms) == -1)
				return (-1);
			continue;
		}
		return (-1);
	}
	return (0);
}

int
client_recv(int fd, struct frame_hdr *hdr, uint8_t *buf, size_t size,
    int64_t deadline_ms)
{
	if (size < PROTO_HDR_LEN) {
		errno = EMSGSIZE;
		return (-1);
	}
	if (client_read_full(fd, buf, PROTO_HDR_LEN, deadline_ms) == -1)
		return (-1);
	if (frame_hdr_decode(buf, hdr) == -1)
		return (-1);
	if (hdr->len > size - PROTO_HDR_LEN) {
		errno = EMSGSIZE;
		return (-1);
	}
	return (
	    client_read_full(fd, buf + PROTO_HDR_LEN, hdr->len, deadline_ms));
}

/* The header of a reply in buf (off bytes read): its total length in
 * *want.  0, or -1 with errno. */
static int
client_reply_len(const uint8_t *buf, size_t size, struct frame_hdr *hdr,
    size_t *want)
{
	if (frame_hdr_decode(buf, hdr) == -1)
		return (-1);
	if (hdr->len > size - PROTO_HDR_LEN) {
		errno = EMSGSIZE;
		return (-1);
	}
	*want = PROTO_HDR_LEN + hdr->len;
	return (0);
}

int
client_recv_reply(int fd, struct frame_hdr *hdr, uint8_t *buf, size_t size,
    int64_t deadline_ms)
{
	size_t	off = 0, want = PROTO_HDR_LEN;
	ssize_t n;

	if (size < PROTO_HDR_LEN) {
		errno = EMSGSIZE;
		return (-1);
	}
	while (off < want) {
		/* Wait first: right after the request, nothing is there. */
		if (client_wait(fd, POLLIN, deadline_ms) == -1)
			return (-1);
		n = read(fd, buf + off, size - off);
		if (n == 0) {
			errno = ECONNRESET;
			return (-1);
		}
		if (n == -1 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n == -1)
			return (-1);
		off += (size_t)n;
		if (want == PROTO_HDR_LEN && off >= PROTO_HDR_LEN &&
		    client_reply_len(buf, size, hdr, &want) == -1)
			return (-1);
	}
	if (off > want) {
		/* More than one frame for one request: out of step. */
		errno = EPROTO;
		return (-1);
	}
	return (0);
}

/* recvmsg(2) of what fits in buf, a passed descriptor into *passed (any
 * other is closed). */
static ssize_t
client_read_fd(int fd, uint8_t *buf, size_t len, int *passed)
{
	union {
		struct cmsghdr hdr;
		char	       buf[CMSG_SPACE(4 * sizeof(int))];
	} cm;
	struct msghdr	mh;
	struct iovec	iov;
	struct cmsghdr *c;
	ssize_t		n;
	size_t		i, nfd;
	int		got;

	memset(&mh, 0, sizeof(mh));
	iov.iov_base = buf;
	iov.iov_len = len;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cm.buf;
	mh.msg_controllen = sizeof(cm.buf);
	if ((n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC)) <= 0)
		return (n);
	for (c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < nfd; i++) {
			memcpy(&got, CMSG_DATA(c) + i * sizeof(int),
			    sizeof(int));
			if (*passed == -1)
				*passed = got;
			else
				close(got);
		}
	}
	return (n);
}

int
client_recv_fd(int fd, struct frame_hdr *hdr, uint8_t *buf, size_t size,
    int64_t deadline_ms, int *passed)
{
	size_t	off = 0, want = PROTO_HDR_LEN;
	ssize_t n;

	*passed = -1;
	while (off < want) {
		if (client_wait(fd, POLLIN, deadline_ms) == -1)
			goto fail;
		n = client_read_fd(fd, buf + off, want - off, passed);
		if (n == 0)
			errno = ECONNRESET;
		if (n == -1 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			goto fail;
		off += (size_t)n;
		if (want == PROTO_HDR_LEN && off == PROTO_HDR_LEN &&
		    client_reply_len(buf, size, hdr, &want) == -1)
			goto fail;
	}
	return (0);
fail:
	if (*passed != -1) {
		n = errno;
		close(*passed);
		errno = (int)n;
	}
	*passed = -1;
	return (-1);
}

int
client_call(const char *path, const struct frame_out *fo, struct frame_hdr *hdr,
    uint8_t *buf, size_t size, int64_t deadline_ms)
{
	int fd, r, err;

	if ((fd = client_connect(path, deadline_ms)) == -1)
		return (-1);
	r = client_send(fd, fo, deadline_ms);
	if (r == 0)
		r = client_recv(fd, hdr, buf, size, deadline_ms);
	err = errno;
	close(fd);
	errno = err;
	return (r);
}
