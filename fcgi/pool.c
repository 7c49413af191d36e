/*
 * pool.c -- one worker process of ptyd.fcgi: a leader/followers thread
 * pool (server.h).
 *
 * Owns: the worker model that DESIGN section 5's libfcgi facts force:
 *
 * - libfcgi never sees a descriptor at or above 1024 (its select()
 *   paths): threads, and so the requests libfcgi parses, are capped so
 *   that they fit below it (SERVER_MAX_THREADS); an output stream, once
 *   attached, is handed to one of the process's stream loops (streamloop.c),
 *   which moves its two descriptors to 1024 and above.  RLIMIT_NOFILE is
 *   raised to its hard limit for those; new connections keep getting the
 *   lowest free numbers, below 1024.
 * - We accept connections ourselves and give each to libfcgi already open
 *   (FCGX_Request.ipcFd, with keepConnection set so FCGX_Accept_r neither
 *   closes it nor calls OS_Accept).  libfcgi's OS_Accept runs its
 *   is_af_unix_keeper poll (up to 2 s) and closes the connection unanswered
 *   when it sees nothing to read in that time or the poll is interrupted,
 *   which nginx reports as "upstream prematurely closed connection"; that
 *   path is never taken here.
 * - One thread at a time per process (the leader) waits for a connection
 *   and serves it.  Most requests (a keystroke, a resize) are over in a
 *   fraction of a millisecond, and the leader then simply accepts the next:
 *   no other thread is woken, which on a loaded machine is the difference
 *   between one wakeup per request and three (hand leadership on, the
 *   follower going back to epoll, the old leader going to sleep).  An
 *   output stream says at once that it will last (req_will_last), and any
 *   other request still running SERVER_HANDOFF_MS after it was accepted (a
 *   slow ptyd, autostart, a slow client) has leadership taken from it by
 *   the process's watchdog, a timerfd armed per request and read by the
 *   main thread; either way an idle follower is woken, or a new thread
 *   started if none is idle and the cap allows, so an output stream never
 *   keeps a keystroke POST waiting for a thread.  The listen socket is
 *   in each process's epoll with EPOLLEXCLUSIVE, so one connection wakes
 *   one process, and only a process with a leader in epoll_wait.
 * - An output stream costs its thread only the request's checks and the
 *   attach: then stream.c hands it to the loop and the thread goes back
 *   to the pool, still leading if it led.  Only where no loop takes it
 *   (the loop could not start, or its descriptors could not move) does a
 *   stream hold its thread: that thread (req_will_last) drops its own
 *   scheduling priority (SERVER_LASTING_NICE, for that thread only) and
 *   ends with its request instead of leading again, so a thousand such
 *   streams copying a backlog would not share the CPU evenly with the
 *   leader that must accept a keystroke.  The nice value cannot be taken
 *   back without privilege, hence the new thread.
 * - One owner per descriptor: the listen socket and its duplicate, the
 *   epoll set, stop eventfd, watchdog timerfd and signalfd are the pool's;
 *   a connection is its thread's until the request ends, or the loop's
 *   from sloop_add on (and the pool's again if the loop gives it back).
 * - A connection the web server keeps (FCGI_KEEP_CONN) waits for its next
 *   request parked in the same epoll set as the listen socket
 *   (poolpark.c); the leader takes that request as it would a new
 *   connection.
 * - Shutdown: threads never block in accept(); the leader, the stream
 *   loop and every stream on a thread also poll an eventfd that the main
 *   thread makes readable when its signalfd reports SIGTERM, so SIGTERM
 *   ends a process within its grace period whatever its threads are
 *   doing.  SIGHUP, on the same signalfd, reopens the log.
 *
 * Does not own: the processes (server.c), the parked connections
 * (poolpark.c), the stream loops (streamloop.c), or what a request does
 * (handlers.c).
 */
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/timerfd.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <fcgiapp.h>

#include "client.h"
#include "fcgi_guard.h"
#include "flog.h"
#include "front.h"
#include "handlers.h"
#include "http.h"
#include "metrics.h"
#include "pool_int.h"
#include "server.h"
#include "streamloop.h"

/* Idle followers kept warm; more than this exit after their request. */
#define SERVER_IDLE_MAX 8
/* A worker process gets this long to finish after SIGTERM. */
#define SERVER_GRACE_MS 2000
/* A request running this long hands leadership on (see above). */
#define SERVER_HANDOFF_MS 10
/* A connection that sends nothing, or takes nothing, for this long is
 * abandoned (libfcgi reads and writes block). */
#define SERVER_RCV_TIMEOUT_S 30
#define SERVER_SND_TIMEOUT_S 60

/* Scheduling priority of a thread serving a lasting request (a stream):
 * it yields the CPU to threads serving short requests at the default. */
#define SERVER_LASTING_NICE 19

/*
 * A process holding this many output streams takes new connections in
 * turn with the others (pool_requeue_listen); below it, it goes on taking
 * them while its leader is free.  Viewers of one busy terminal then share
 * a process and its loops' wakeups: 64 of them cost 3.6-4.2 ms of CPU per
 * delivered MB together, 5.6-6.6 spread over six processes (bench/run).
 * Past it, what one process holds matters more: its descriptors, and the
 * viewers its restart drops.
 */
#define SERVER_SPREAD_STREAMS 128

static void *pool_thread(void *);

int
server_serve_conn(const struct front_conf *conf, int fd, int kept, int stop_fd,
    void (*last_cb)(void *), void *last_arg)
{
	FCGX_Request   q;
	struct req     r;
	struct timeval tv;
	char	       c;
	ssize_t	       n;

	if (kept) {
		/* Woken with nothing queued: still idle.  At its end: the web
		 * server let go of it between requests, which is not news. */
		n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
		if (n == -1 &&
		    (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return (fd);
		if (n <= 0) {
			close(fd);
			return (-1);
		}
	} else {
		tv.tv_sec = SERVER_RCV_TIMEOUT_S;
		tv.tv_usec = 0;
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		tv.tv_sec = SERVER_SND_TIMEOUT_S;
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	}

	metrics_conn(kept);
	/* A malformed record must end this connection, not abort the
	 * process in libfcgi (fcgi_guard.c). */
	if (guard_conn(fd, stop_fd, SERVER_RCV_TIMEOUT_S * 1000) == -1) {
		close(fd);
		return (-1);
	}

	/*
	 * listen_sock -1: if reading the params fails, libfcgi closes the
	 * connection and would accept another; accept(-1) fails instead and
	 * FCGX_Accept_r returns, leaving accepting to us.
	 */
	if (FCGX_InitRequest(&q, -1, 0) != 0) {
		close(fd);
		return (-1);
	}
	q.ipcFd = fd;
	q.keepConnection = 1;
	if (FCGX_Accept_r(&q) < 0) {
		/* libfcgi has closed fd: nothing valid to answer. */
		if (q.ipcFd != -1) {
			close(q.ipcFd);
			q.ipcFd = -1;
		}
		FCGX_Free(&q, 0);
		return (-1);
	}
	req_init_fcgi(&r, conf, &q, stop_fd);
	r.last_cb = last_cb;
	r.last_arg = last_arg;
	handlers_serve(&r);
	return (req_finish_fcgi(&r));
}

/* Whether a warning given at most every 10 s, last at *last, is due now
 * (and if so, it is given now); *last is the pool's, under its mutex. */
static int
warn_due(int64_t *last)
{
	int64_t now = client_now_ms();

	if (now - *last <= 10000)
		return (0);
	*last = now;
	return (1);
}

/* Add one of the listen socket's descriptors to epfd, exclusive: one new
 * connection wakes one process.  0 or -1. */
static int
pool_watch_listen(struct pool *p, int fd)
{
	struct epoll_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN | EPOLLEXCLUSIVE;
	ev.data.fd = fd;
	return (epoll_ctl(p->epfd, EPOLL_CTL_ADD, fd, &ev));
}

/*
 * Put this process at the back of the listen socket's wait queue.  With
 * EPOLLEXCLUSIVE the kernel wakes the first process in that queue whose
 * leader waits, so the process registered first took every new connection
 * its leader was free for: 10,000 streams spread 4,213 / 2,457 / 1,105 /
 * 832 / 732 / 661 over six processes.  Requeued after each new connection
 * once it holds SERVER_SPREAD_STREAMS streams (streams, mostly: the short
 * requests come on kept connections), it lets the next go to the next
 * process waiting.
 *
 * epoll keeps one entry per descriptor, so the socket's other descriptor
 * is added (at the back of the queue) before the current one is removed:
 * where the add fails (ENOMEM, or ENOSPC at fs.epoll.max_user_watches)
 * this process stays registered where it was and goes on taking
 * connections, only not in turn.  Only the leader calls it, between its
 * epoll_wait calls.
 */
static void
pool_requeue_listen(struct pool *p)
{
	int cur = p->listen[p->listen_cur];
	int next = p->listen[!p->listen_cur];

	if (pool_watch_listen(p, next) == -1) {
		pthread_mutex_lock(&p->mtx);
		if (warn_due(&p->requeue_logged))
			flog_warn("epoll_ctl (listen socket kept in place)");
		pthread_mutex_unlock(&p->mtx);
		return;
	}
	/* Not expected to fail (cur is in epfd); if it does, next is the
	 * entry known to be there, and a next requeue that finds cur still
	 * registered fails to add it, as above. */
	if (epoll_ctl(p->epfd, EPOLL_CTL_DEL, cur, NULL) == -1)
		flog_warn("epoll_ctl (listen socket)");
	p->listen_cur = !p->listen_cur;
}

/* An event of the listen socket, through either of its descriptors. */
static int
pool_is_listen(const struct pool *p, int fd)
{
	return (fd == p->listen[0] || fd == p->listen[1]);
}

/*
 * accept4 failed (errno says why): 0 to wait for the next connection, -1
 * to stop the worker.
 */
static int
pool_accept_failed(struct pool *p)
{
	struct pollfd pfd;

	switch (errno) {
	case EAGAIN:
	case EINTR:
	case ECONNABORTED:
	case EPROTO:
		return (0);
	case EMFILE:
	case ENFILE:
	case ENOBUFS:
	case ENOMEM:
		/*
		 * Out of descriptors: leave the connection queued (another
		 * process may take it) and back off instead of spinning on
		 * a listen socket that stays readable.
		 */
		pthread_mutex_lock(&p->mtx);
		if (warn_due(&p->emfile_logged))
			flog_warn("accept (backing off)");
		pthread_mutex_unlock(&p->mtx);
		pfd.fd = p->stop_fd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		return (poll(&pfd, 1, 50) == 1 ? -1 : 0);
	default:
		flog_warn("accept");
		return (-1);
	}
}

/*
 * Wait for a connection: a new one, accepted, or a parked one with a
 * request (*kept set).  -1 when stopping.  One event per wait: a parked
 * connection is reported once (EPOLLONESHOT), so none may be left
 * unhandled; the listen socket and the stop descriptor are reported
 * again while they are readable.
 */
static int
pool_accept(struct pool *p, int *kept)
{
	struct epoll_event ev;
	int		   n, fd;

	*kept = 0;
	for (;;) {
		n = epoll_wait(p->epfd, &ev, 1, -1);
		if (n == -1 && errno != EINTR) {
			flog_warn("epoll_wait");
			return (-1);
		}
		if (n <= 0)
			continue;
		if (ev.data.fd == p->stop_fd)
			return (-1);
		if (!pool_is_listen(p, ev.data.fd)) {
			if (pool_unpark(p, ev.data.fd)) {
				*kept = 1;
				return (ev.data.fd);
			}
			continue;
		}
		fd = accept4(p->sc->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= FD_SETSIZE) {
			/* libfcgi's select() cannot take it: the thread cap
			 * keeps requests below, so something leaked.  Shed
			 * this one and back off as when out of them. */
			close(fd);
			fd = -1;
			errno = EMFILE;
		}
		if (fd != -1) {
			if (p->sc->processes > 1 &&
			    sloop_streams() >= SERVER_SPREAD_STREAMS)
				pool_requeue_listen(p);
			return (fd);
		}
		if (pool_accept_failed(p) == -1)
			return (-1);
	}
}

/* Start one more thread; called with the mutex held.  0 or -1. */
static int
pool_spawn(struct pool *p)
{
	pthread_t t;
	int	  err;

	if ((err = pthread_create(&t, &p->attr, pool_thread, p)) != 0) {
		if (warn_due(&p->emfile_logged))
			flog_warnx("pthread_create: %s", strerror(err));
		return (-1);
	}
	p->nthreads++;
	return (0);
}

/*
 * Arm (ms > 0) or disarm the hand-off watchdog; called with the mutex
 * held, like the watchdog's read (pool_watchdog), so that an expiry read
 * is always the current request's: re-arming discards a pending one.
 */
static void
pool_timer(struct pool *p, int ms)
{
	struct itimerspec its;

	memset(&its, 0, sizeof(its));
	its.it_value.tv_sec = ms / 1000;
	its.it_value.tv_nsec = (long)(ms % 1000) * 1000000L;
	if (timerfd_settime(p->timer_fd, 0, &its, NULL) == -1)
		flog_warn("timerfd_settime");
}

/*
 * Take leadership from the leader serving a request and give it to an
 * idle follower, or to a new thread.  With the cap reached and nobody
 * idle, the next thread to finish leads.  Called with the mutex held.
 */
static void
pool_handoff(struct pool *p)
{
	pool_timer(p, 0);
	p->busy = NULL;
	p->leader = 0;
	if (p->nidle > 0)
		pthread_cond_signal(&p->follow);
	else if (p->nthreads < p->sc->max_threads)
		pool_spawn(p);
}

/* req_will_last: the request of this leader lasts, hand on now. */
static void
pool_last_cb(void *arg)
{
	struct lead *me = arg;
	struct pool *p = me->p;

	pthread_mutex_lock(&p->mtx);
	if (p->busy == me)
		pool_handoff(p);
	pthread_mutex_unlock(&p->mtx);
	/* This thread only (Linux: a thread id names one thread here). */
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid),
		SERVER_LASTING_NICE) == 0)
		me->demoted = 1;
}

/* The watchdog's descriptor is readable: the request being served has
 * run SERVER_HANDOFF_MS, unless it ended (or another began) meanwhile. */
static void
pool_watchdog(struct pool *p)
{
	uint64_t ticks;

	pthread_mutex_lock(&p->mtx);
	if (read(p->timer_fd, &ticks, sizeof(ticks)) == sizeof(ticks)) {
		if (p->busy != NULL)
			pool_handoff(p);
		else if (!p->leader && !p->stopping) {
			/* Asked by a stream's thread on its way out (below):
			 * nobody leads.  Spawned from here, at our priority. */
			if (p->nidle > 0)
				pthread_cond_signal(&p->follow);
			else if (p->nthreads >= p->sc->max_threads ||
			    pool_spawn(p) == -1)
				pool_timer(p, 1000); /* try again */
		}
	}
	pthread_mutex_unlock(&p->mtx);
}

/*
 * Accepting failed for good (p->mtx held): end this process, in failure,
 * so that the master starts another.  The main thread waits on its
 * signalfd.
 */
static void
pool_fail(struct pool *p)
{
	p->stopping = 1;
	p->failed = 1;
	pthread_cond_broadcast(&p->follow);
	kill(getpid(), SIGTERM);
}

/*
 * Lead (p->mtx held, on entry and on return): accept and serve, until a
 * request outlasts the hand-off delay and the watchdog passes leadership
 * on, or the pool stops.
 */
static void
pool_lead(struct pool *p, struct lead *me)
{
	int fd, kept;

	p->leader = 1;
	while (!p->stopping) {
		pthread_mutex_unlock(&p->mtx);
		fd = pool_accept(p, &kept);
		pthread_mutex_lock(&p->mtx);
		if (fd == -1) {
			p->leader = 0;
			if (!p->stopping)
				pool_fail(p);
			return;
		}
		p->busy = me;
		pool_timer(p, SERVER_HANDOFF_MS);
		pthread_mutex_unlock(&p->mtx);

		fd = server_serve_conn(p->conf, fd, kept, p->stop_fd,
		    pool_last_cb, me);

		pthread_mutex_lock(&p->mtx);
		if (fd != -1)
			pool_park(p, fd);
		if (p->busy != me || me->demoted)
			return; /* no longer the leader */
		p->busy = NULL;
		pool_timer(p, 0);
	}
}

static void *
pool_thread(void *arg)
{
	struct pool *p = arg;
	struct lead  me;

	me.p = p;
	me.demoted = 0;
	pthread_mutex_lock(&p->mtx);
	for (;;) {
		while (!p->stopping && p->leader) {
			p->nidle++;
			pthread_cond_wait(&p->follow, &p->mtx);
			p->nidle--;
		}
		if (p->stopping)
			break;
		pool_lead(p, &me);
		if (p->stopping || me.demoted ||
		    (p->nidle >= SERVER_IDLE_MAX && p->leader))
			break;
	}
	/*
	 * A stream's thread ends with its stream.  If its hand-off found
	 * nobody to lead (every thread busy, at the cap), leading would
	 * otherwise wait for a thread that serves quick requests, and there
	 * may be none left: the process would accept nothing again.  This
	 * thread must not spawn the leader itself (a new thread inherits its
	 * nice 19): the main thread does, woken through the watchdog.
	 */
	if (me.demoted && !p->stopping && !p->leader) {
		if (p->nidle > 0)
			pthread_cond_signal(&p->follow);
		else
			pool_timer(p, 1);
	}
	if (--p->nthreads == 0)
		pthread_cond_broadcast(&p->done);
	pthread_mutex_unlock(&p->mtx);
	return (NULL);
}

/* Block the signals the main thread reads, in every thread. */
static void
pool_sigmask(sigset_t *set)
{
	sigset_t all;

	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP); /* the log reopened (flog.c) */
	all = *set;
	sigaddset(&all, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
}

/* Bounded descriptors (libfcgi's select() must never see one past
 * FD_SETSIZE), libfcgi initialised, its signal handlers undone. */
static void
pool_worker_init(void)
{
	struct rlimit rl;

	/* As many as we may: streams live at SLOOP_FD_BASE and above. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) == -1)
			flog_warn("setrlimit");
	}
	if (FCGX_Init() != 0) {
		flog_warnx("FCGX_Init failed");
		_exit(1);
	}
	/*
	 * FCGX_Init installs handlers, without SA_RESTART, for SIGPIPE (a
	 * no-op), SIGUSR1 and SIGTERM (set a flag only its OS_Accept reads)
	 * wherever the disposition was default or ignored.  A handler that
	 * runs in a thread inside libfcgi's accept or read path makes the
	 * call fail with EINTR, and libfcgi then drops the connection
	 * unanswered.  Put SIGPIPE back to ignored; SIGTERM, SIGINT and
	 * SIGUSR1 stay blocked in every thread (pool_sigmask) and only the
	 * main thread takes SIGTERM and SIGINT, from a signalfd.
	 */
	signal(SIGPIPE, SIG_IGN);
}

/* The pool's descriptors: the stop eventfd, a duplicate of the listen
 * socket (pool_requeue_listen), the epoll set the leader waits in (the
 * listen socket, exclusive, and stop), the watchdog's timer.
 * Returns the signalfd for set; exits on failure. */
static int
pool_open(struct pool *p, const sigset_t *set)
{
	struct epoll_event ev;
	int		   sig_fd;

	p->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	p->epfd = epoll_create1(EPOLL_CLOEXEC);
	p->timer_fd = timerfd_create(CLOCK_MONOTONIC,
	    TFD_CLOEXEC | TFD_NONBLOCK);
	sig_fd = signalfd(-1, set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (p->stop_fd == -1 || p->epfd == -1 || p->timer_fd == -1 ||
	    sig_fd == -1) {
		flog_warn("eventfd/epoll/timerfd/signalfd");
		_exit(1);
	}
	p->listen[0] = p->sc->listen_fd;
	p->listen[1] = fcntl(p->sc->listen_fd, F_DUPFD_CLOEXEC, 0);
	p->listen_cur = 0;
	if (p->listen[1] == -1) {
		flog_warn("dup (listen socket)");
		_exit(1);
	}
	if (pool_watch_listen(p, p->listen[0]) == -1) {
		flog_warn("epoll_ctl");
		_exit(1);
	}
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.fd = p->stop_fd;
	if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->stop_fd, &ev) == -1) {
		flog_warn("epoll_ctl");
		_exit(1);
	}
	return (sig_fd);
}

/* The lock, the conditions (done on the monotonic clock, for the grace),
 * detached threads of the configured stack size, and the first leader. */
static void
pool_start(struct pool *p)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&p->mtx, NULL);
	pthread_cond_init(&p->follow, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->done, &ca);
	pthread_condattr_destroy(&ca);
	pthread_attr_init(&p->attr);
	pthread_attr_setdetachstate(&p->attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&p->attr, p->sc->stack_size);

	if (sloop_start(p->conf->heartbeat_ms, p->stop_fd, pool_keep_stream,
		p) == -1)
		flog_warnx("no stream loop: streams take a thread each");
	pthread_mutex_lock(&p->mtx);
	if (pool_spawn(p) == -1) {
		flog_warnx("cannot start a thread");
		_exit(1);
	}
	pthread_mutex_unlock(&p->mtx);
}

/* The main thread hands leadership on when the watchdog asks, until
 * SIGTERM or SIGINT. */
static void
pool_main_wait(struct pool *p, int sig_fd)
{
	struct signalfd_siginfo si;
	struct pollfd		pfd[2];

	for (;;) {
		pfd[0].fd = sig_fd;
		pfd[1].fd = p->timer_fd;
		pfd[0].events = pfd[1].events = POLLIN;
		if (poll(pfd, 2, -1) == -1) {
			if (errno == EINTR)
				continue;
			flog_warn("poll");
			return;
		}
		if (pfd[1].revents != 0)
			pool_watchdog(p);
		if (pfd[0].revents == 0 ||
		    read(sig_fd, &si, sizeof(si)) != sizeof(si))
			continue;
		if (si.ssi_signo == SIGHUP) {
			flog_reopen();
			flog_info("log reopened");
		} else if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
			return;
	}
}

/* Tell every thread to stop and wait for them, at most the grace. */
static void
pool_stop(struct pool *p)
{
	struct timespec ts;
	uint64_t	one = 1;

	pthread_mutex_lock(&p->mtx);
	p->stopping = 1;
	pthread_cond_broadcast(&p->follow);
	pthread_mutex_unlock(&p->mtx);
	if (write(p->stop_fd, &one, sizeof(one)) != sizeof(one))
		flog_warn("eventfd write");
	pool_close_parked(p);

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += SERVER_GRACE_MS / 1000;
	ts.tv_nsec += (SERVER_GRACE_MS % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&p->mtx);
	while (p->nthreads > 0)
		if (pthread_cond_timedwait(&p->done, &p->mtx, &ts) == ETIMEDOUT)
			break;
	if (p->nthreads > 0)
		flog_info("exiting with %d threads unfinished", p->nthreads);
	pthread_mutex_unlock(&p->mtx);
	sloop_join(SERVER_GRACE_MS / 2);
}

/* One worker process.  Never returns. */
void
pool_run(const struct front_conf *conf, const struct server_conf *sc)
{
	struct pool p;
	sigset_t    set;
	int	    sig_fd, alone = sc->processes <= 1;

	memset(&p, 0, sizeof(p));
	p.conf = conf;
	p.sc = sc;
	pool_sigmask(&set);
	pool_worker_init();
	sig_fd = pool_open(&p, &set);
	pool_start(&p);
	pool_main_wait(&p, sig_fd);
	/* Alone (no master), the worker logs the stop and owns the socket
	 * path. */
	if (alone)
		flog_info("stopping");
	pool_stop(&p);
	if (alone && sc->unlink_path[0] != '\0')
		unlink(sc->unlink_path);
	if (alone)
		flog_info("stopped");
	_exit(p.failed ? 1 : 0);
}
