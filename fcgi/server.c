/*
 * server.c -- the pre-fork master of ptyd.fcgi (server.h).
 *
 * Owns: the listen socket made nonblocking and CLOEXEC before any fork;
 * the worker processes, each running one pool (pool.c) on that shared
 * socket: forked at the start (each ends with the master: its parent's
 * death is its SIGTERM), one that ends started again (a slot at most
 * once a second), all stopped on SIGTERM or SIGINT (SIGKILL after
 * SERVER_KILL_MS), SIGHUP passed on to them once the master's own log is
 * reopened.  With one process there is no master: that process serves
 * (pool_run).  Does not own: what a worker does (pool.c), its kept
 * connections (poolpark.c), or any request (handlers.c).
 */
#include <sys/prctl.h>
#include <sys/wait.h>

#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "flog.h"
#include "front.h"
#include "server.h"

/* The master waits this long for workers before SIGKILL. */
#define SERVER_KILL_MS 5000

/* A worker ends with its master: one that outlived a killed master would
 * go on holding the listen socket, and a supervisor's spawn-fcgi (or a
 * web server starting ptyd.fcgi again) would find it answering and take
 * it for a ptyd.fcgi still running.  SIGTERM, as from the master: the
 * worker's graceful stop.  SIGTERM is blocked here (master_run), so it
 * waits for the worker's signalfd. */
static pid_t
server_fork(const struct front_conf *conf, const struct server_conf *sc)
{
	pid_t pid, master = getpid();

	if ((pid = fork()) == -1) {
		flog_warn("fork");
		return (-1);
	}
	if (pid == 0) {
		if (prctl(PR_SET_PDEATHSIG, SIGTERM) == -1 ||
		    getppid() != master)
			_exit(1);
		pool_run(conf, sc);
	}
	return (pid);
}

/* The master's view of its workers. */
struct master {
	const struct front_conf	 *conf;
	const struct server_conf *sc;
	pid_t			 *kids; /* 0: a slot to (re)start */
	int64_t			 *born; /* when each slot was last started */
	int			  n, alive, stopping;
	int64_t			  deadline; /* SIGKILL what remains, or -1 */
};

/* Start a worker in every empty slot not started within the last second.
 * A worker that could not be forked stays an empty slot (0), never -1,
 * which this loop would pass over for good. */
static void
master_start(struct master *m, int64_t now)
{
	int i;

	for (i = 0; i < m->n; i++) {
		if (m->kids[i] != 0 ||
		    (m->born[i] != 0 && now - m->born[i] < 1000))
			continue;
		if ((m->kids[i] = server_fork(m->conf, m->sc)) > 0)
			m->alive++;
		else
			m->kids[i] = 0;
		m->born[i] = now;
	}
}

static void
master_kill(struct master *m, int sig)
{
	int i;

	for (i = 0; i < m->n; i++)
		if (m->kids[i] > 0)
			kill(m->kids[i], sig);
}

/* Collect ended workers; their slots empty. */
static void
master_reap(struct master *m)
{
	pid_t pid;
	int   i, status;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		for (i = 0; i < m->n; i++)
			if (m->kids[i] == pid) {
				m->kids[i] = 0;
				m->alive--;
			}
		if (!m->stopping)
			flog_warnx("worker %ld ended (status %d); restarting",
			    (long)pid, status);
	}
}

/* Start the workers, restart the ones that die, stop them all on SIGTERM
 * or SIGINT (SIGKILL after SERVER_KILL_MS). */
static int
master_run(struct master *m)
{
	sigset_t	set;
	siginfo_t	si;
	struct timespec ts;
	int		sig;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	master_start(m, client_now_ms());
	flog_info("serving with %d processes of up to %d threads", m->n,
	    m->sc->max_threads);
	while (m->alive > 0 || !m->stopping) {
		ts.tv_sec = 0;
		ts.tv_nsec = 200 * 1000000L;
		sig = sigtimedwait(&set, &si, &ts);
		if (sig == SIGHUP) { /* logrotate: ours, then each worker's */
			flog_reopen();
			flog_info("log reopened; passed on to the workers");
			master_kill(m, SIGHUP);
		}
		if ((sig == SIGTERM || sig == SIGINT) && !m->stopping) {
			flog_info("stopping");
			m->stopping = 1;
			m->deadline = client_now_ms() + SERVER_KILL_MS;
			master_kill(m, SIGTERM);
		}
		master_reap(m);
		if (m->stopping && m->deadline != -1 &&
		    client_now_ms() > m->deadline) {
			master_kill(m, SIGKILL);
			m->deadline = -1;
		}
		if (!m->stopping)
			master_start(m, client_now_ms());
	}
	flog_info("stopped");
	return (0);
}

int
server_run(const struct front_conf *conf, const struct server_conf *sc)
{
	struct master m;
	int	      r;

	if (fcntl(sc->listen_fd, F_SETFL,
		fcntl(sc->listen_fd, F_GETFL) | O_NONBLOCK) == -1 ||
	    fcntl(sc->listen_fd, F_SETFD, FD_CLOEXEC) == -1) {
		flog_warn("listen socket");
		return (1);
	}
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	if (sc->processes <= 1)
		pool_run(conf, sc);

	memset(&m, 0, sizeof(m));
	m.conf = conf;
	m.sc = sc;
	m.n = sc->processes;
	m.deadline = -1;
	m.kids = calloc((size_t)m.n, sizeof(*m.kids));
	m.born = calloc((size_t)m.n, sizeof(*m.born));
	if (m.kids == NULL || m.born == NULL) {
		flog_warn("calloc");
		r = 1;
	} else
		r = master_run(&m);
	free(m.kids);
	free(m.born);
	return (r);
}
