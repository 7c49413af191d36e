/*
 * poolpark.c -- a worker process's kept connections, between their
 * requests (pool_int.h).
 *
 * Owns: the parked connections (each below SERVER_NOFILE, in the pool's
 * epoll set with EPOLLONESHOT, under the pool's mutex), how many, since
 * when, and which are closed: for room, when idle too long, when the web
 * server closes them, when the pool stops.  Does not own: the requests on
 * them (pool.c serves them as it would a new connection) or the epoll
 * set and the mutex (pool.c).
 *
 * Kept connections (FCGI_KEEP_CONN: nginx's fastcgi_keep_conn with an
 * upstream keepalive pool, for the short requests; Apache's
 * mod_proxy_fcgi with enablereuse=on, for every request): after a
 * request that asked for it and ended cleanly, the connection is parked
 * in the same epoll set as the listen socket (EPOLLONESHOT), at most
 * SERVER_KEPT_MAX per process, still below 1024 (the thread cap leaves
 * them room); the leader takes its next request as it would a new
 * connection.  A stream's loop gives its kept connection back
 * (pool_keep_stream) once END_REQUEST is sent.  Over the bound the one
 * idle longest is closed (nginx hands out the newest first); so is one
 * idle past SERVER_KEPT_IDLE_MS, and one the web server closes.  A
 * keystroke then costs neither side a connect, an accept or a close, and
 * nginx ends the response at END_REQUEST instead of waiting for our
 * close.
 */
#include <sys/epoll.h>
#include <sys/socket.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "flog.h"
#include "pool_int.h"
#include "server.h"

/* A kept connection idle this long is closed: nginx lets go of its own
 * after keepalive_timeout (60 s by default), so only a peer that never
 * does gets here. */
#define SERVER_KEPT_IDLE_MS  120000
#define SERVER_KEPT_SWEEP_MS 10000

/* Close a parked connection (the mutex held): out of the epoll set with
 * it, as nothing else refers to it. */
static void
pool_unpark_close(struct pool *p, int fd)
{
	p->parked[fd] = 0;
	p->nparked--;
	close(fd);
}

/* A request is already queued on a parked connection: nginx has handed
 * it one, which closing it now would turn into a 502. */
static int
pool_parked_busy(int fd)
{
	char c;

	return (recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) > 0);
}

/* The parked connection idle longest among those parked at or after
 * since; -1 if none. */
static int
pool_parked_oldest(const struct pool *p, int64_t since)
{
	int fd, oldest = -1;

	for (fd = 0; fd < SERVER_NOFILE; fd++)
		if (p->parked[fd] && p->parked_at[fd] >= since &&
		    (oldest == -1 || p->parked_at[fd] < p->parked_at[oldest]))
			oldest = fd;
	return (oldest);
}

/*
 * Make room for one more parked connection, and now and then close those
 * idle past SERVER_KEPT_IDLE_MS (the mutex held).  The one to go for room
 * is the one idle longest with no request queued: nginx hands out the
 * connection it kept last, so that one is the least likely to be given a
 * request at this moment (one that is gets a 502, and the page retries).
 */
static void
pool_park_room(struct pool *p, int64_t now)
{
	int64_t since = INT64_MIN;
	int	fd, tries;

	if (now - p->swept_at >= SERVER_KEPT_SWEEP_MS) {
		p->swept_at = now;
		for (fd = 0; fd < SERVER_NOFILE; fd++)
			if (p->parked[fd] &&
			    now - p->parked_at[fd] >= SERVER_KEPT_IDLE_MS &&
			    !pool_parked_busy(fd))
				pool_unpark_close(p, fd);
	}
	for (tries = 0; p->nparked >= SERVER_KEPT_MAX; tries++) {
		if ((fd = pool_parked_oldest(p, since)) == -1 &&
		    (fd = pool_parked_oldest(p, INT64_MIN)) == -1)
			break;
		if (tries < 4 && pool_parked_busy(fd)) {
			since = p->parked_at[fd] + 1;
			continue;
		}
		pool_unpark_close(p, fd);
	}
}

/*
 * A connection the web server keeps for its next request: into the epoll
 * set, reported once (the leader takes it as it would a new connection).
 * Never this one closed for room: nginx is about to hand it the next
 * request.  Closed while stopping.  Called with the mutex held.
 */
void
pool_park(struct pool *p, int fd)
{
	struct epoll_event ev;
	int64_t		   now = client_now_ms();

	if (p->stopping || fd >= SERVER_NOFILE) {
		close(fd);
		return;
	}
	pool_park_room(p, now);
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
	ev.data.fd = fd;
	/* Marked first: the leader may be woken by it before we return. */
	p->parked[fd] = 1;
	p->parked_at[fd] = now;
	p->nparked++;
	if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, fd, &ev) == -1) {
		flog_warn("epoll_ctl (kept connection)");
		pool_unpark_close(p, fd);
	}
}

/*
 * A kept connection whose stream ended with END_REQUEST, from a stream
 * loop's thread: back below SERVER_NOFILE and blocking, as accept gave
 * it, then parked like any other, since the web server holds it for its
 * next request.  Closed where it cannot be (no low number free; the pool
 * stopping, in pool_park).
 */
void
pool_keep_stream(void *arg, int fd)
{
	struct pool *p = arg;
	int	     nfd, fl;

	nfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	close(fd);
	if (nfd == -1)
		return;
	if ((fl = fcntl(nfd, F_GETFL)) == -1 ||
	    fcntl(nfd, F_SETFL, fl & ~O_NONBLOCK) == -1) {
		close(nfd);
		return;
	}
	pthread_mutex_lock(&p->mtx);
	pool_park(p, nfd);
	pthread_mutex_unlock(&p->mtx);
}

/* The leader, woken by a parked connection: take it out of the set.  1 if
 * it was one (and is the caller's now), 0 if not. */
int
pool_unpark(struct pool *p, int fd)
{
	int was;

	if (fd < 0 || fd >= SERVER_NOFILE)
		return (0);
	pthread_mutex_lock(&p->mtx);
	if ((was = p->parked[fd]) != 0) {
		p->parked[fd] = 0;
		p->nparked--;
	}
	pthread_mutex_unlock(&p->mtx);
	if (was && epoll_ctl(p->epfd, EPOLL_CTL_DEL, fd, NULL) == -1)
		flog_warn("epoll_ctl (kept connection)");
	return (was);
}

/* Stopping: the parked connections go now, before their next request
 * would find no leader to take it. */
void
pool_close_parked(struct pool *p)
{
	int fd;

	pthread_mutex_lock(&p->mtx);
	for (fd = 0; fd < SERVER_NOFILE && p->nparked > 0; fd++)
		if (p->parked[fd])
			pool_unpark_close(p, fd);
	pthread_mutex_unlock(&p->mtx);
}
