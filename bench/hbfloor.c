/*
 * hbfloor.c -- the floor under an idle stream's CPU: the least a server
 * can spend to keep N event streams alive over loopback TCP.
 *
 *	hbfloor PORT PERIOD_MS
 *
 * Listens on 127.0.0.1:PORT.  Each connection's request head is read and
 * answered with the headers of a chunked event stream; from then on, after
 * every PERIOD_MS of silence, the connection gets the chunk nginx writes
 * for ptyd.fcgi's heartbeat (": heartbeat" and a blank line), byte for
 * byte.  Beats due within SLACK_MS go out in one wakeup, as ptyd.fcgi's
 * stream loop sends them.  Nothing else: no FastCGI, no proxy, no parsing
 * beyond the end of the head.
 *
 * bench/streams runs it beside the stack with the same viewers and the
 * same period.  Its CPU is what the kernel's side of those TCP segments
 * costs (on loopback, the receiving client's side too) plus one write
 * each, so the stack's idle CPU reads as a multiple of it.
 *
 * Owns: its listening socket and the connections; exits on SIGTERM or
 * SIGINT.  A connection whose write fails or would block is closed (a
 * heartbeat is 18 bytes; a client that takes none of them is gone).
 */
#include <sys/epoll.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SLACK_MS 100
#define EVENTS	 256

static const char head_out[] = "HTTP/1.1 200 OK\r\n"
			       "Content-Type: text/event-stream\r\n"
			       "Cache-Control: no-cache\r\n"
			       "Transfer-Encoding: chunked\r\n\r\n";
static const char beat[] = "d\r\n: heartbeat\n\n\r\n";

struct hconn {
	int	fd;
	int	streaming; /* the head is answered */
	int64_t last;	   /* last write, ms */
	char	tail[4];   /* the head's last bytes, to find its end */
	TAILQ_ENTRY(hconn) entry;
};
TAILQ_HEAD(hconnq, hconn);

static volatile sig_atomic_t stop;

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

static void
hconn_close(struct hconnq *q, struct hconn *h)
{
	if (h->streaming)
		TAILQ_REMOVE(q, h, entry);
	close(h->fd);
	free(h);
}

/* 0 written whole; -1 failed or would block. */
static int
hconn_write(struct hconn *h, const char *p, size_t n)
{
	return (send(h->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)n ?
		0 :
		-1);
}

/* Read what the client sent: the head, then nothing it should send. */
static void
hconn_read(struct hconnq *q, struct hconn *h)
{
	char	buf[4096], both[4 + sizeof(buf)];
	ssize_t n;
	size_t	k;

	n = recv(h->fd, buf, sizeof(buf), MSG_DONTWAIT);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0 || h->streaming) {
		hconn_close(q, h);
		return;
	}
	k = strnlen(h->tail, sizeof(h->tail));
	memcpy(both, h->tail, k);
	memcpy(both + k, buf, (size_t)n);
	k += (size_t)n;
	if (memmem(both, k, "\r\n\r\n", 4) == NULL) {
		memset(h->tail, 0, sizeof(h->tail));
		memcpy(h->tail, both + k - (k < 3 ? k : 3), k < 3 ? k : 3);
		return;
	}
	if (hconn_write(h, head_out, sizeof(head_out) - 1) == -1) {
		hconn_close(q, h);
		return;
	}
	h->streaming = 1;
	h->last = now_ms();
	TAILQ_INSERT_TAIL(q, h, entry);
}

static int
listen_on(int port)
{
	struct sockaddr_in sin;
	int		   fd, one = 1;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
		 0)) == -1)
		return (-1);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(fd, 4096) == -1) {
		close(fd);
		return (-1);
	}
	return (fd);
}

int
main(int argc, char **argv)
{
	struct epoll_event ev, evs[EVENTS];
	struct hconnq	   q = TAILQ_HEAD_INITIALIZER(q);
	struct hconn	  *h;
	struct sigaction   sa;
	int64_t		   period, now;
	int		   lfd, epfd, fd, i, n, timeout;

	if (argc != 3 || (period = atoll(argv[2])) <= 0) {
		fprintf(stderr, "usage: hbfloor PORT PERIOD_MS\n");
		return (2);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	if ((lfd = listen_on(atoi(argv[1]))) == -1 ||
	    (epfd = epoll_create1(EPOLL_CLOEXEC)) == -1) {
		fprintf(stderr, "hbfloor: listen %s: %s\n", argv[1],
		    strerror(errno));
		return (1);
	}
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.ptr = NULL;
	epoll_ctl(epfd, EPOLL_CTL_ADD, lfd, &ev);
	while (!stop) {
		timeout = -1;
		if ((h = TAILQ_FIRST(&q)) != NULL) {
			now = now_ms();
			timeout = h->last + period <= now ?
			    0 :
			    (int)(h->last + period - now);
		}
		n = epoll_wait(epfd, evs, EVENTS, timeout);
		if (n == -1 && errno != EINTR) {
			fprintf(stderr, "hbfloor: epoll_wait: %s\n",
			    strerror(errno));
			return (1);
		}
		for (i = 0; i < n; i++) {
			if ((h = evs[i].data.ptr) != NULL) {
				hconn_read(&q, h);
				continue;
			}
			while ((fd = accept4(lfd, NULL, NULL,
				    SOCK_CLOEXEC | SOCK_NONBLOCK)) != -1) {
				if ((h = calloc(1, sizeof(*h))) == NULL) {
					close(fd);
					continue;
				}
				h->fd = fd;
				ev.events = EPOLLIN;
				ev.data.ptr = h;
				if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) ==
				    -1) {
					close(fd);
					free(h);
				}
			}
		}
		/* Every beat due now or within the slack, oldest first; one
		 * given goes to the tail, so the list stays in order. */
		now = now_ms();
		while ((h = TAILQ_FIRST(&q)) != NULL &&
		    h->last + period <= now + SLACK_MS) {
			TAILQ_REMOVE(&q, h, entry);
			if (hconn_write(h, beat, sizeof(beat) - 1) == -1) {
				h->streaming = 0;
				hconn_close(&q, h);
				continue;
			}
			h->last = now;
			TAILQ_INSERT_TAIL(&q, h, entry);
		}
	}
	while ((h = TAILQ_FIRST(&q)) != NULL)
		hconn_close(&q, h);
	return (0);
}
