/*
 * ptyd_client.c -- connect to ptyd for one request, starting it when it is
 * not running (ptyd_client.h).
 *
 * Owns: autostart and its lock.  The lock is an flock on a file next to the
 * socket: it serialises every thread of every ptyd.fcgi process of the
 * account (flock belongs to the open file description, and each attempt
 * opens its own), and it is released by the kernel if a holder dies.  The
 * holder re-checks that ptyd is still not answering before it starts one,
 * so a burst of requests that all found ptyd down starts it exactly once.
 *
 * Also owns: in FastCGI mode, a few connections to ptyd per process, kept
 * between requests (ptyd serves one request after another on each,
 * ptyd/conn.c): a keystroke then costs no connect, accept or peer check
 * on either side.  A connection is taken out of the pool for one whole
 * exchange, so one request at a time uses it and replies never mix.
 * A connection, kept or new, that ends under a request is closed and the
 * request goes again on a new one (with autostart), until its deadline,
 * when that is safe (ptyd_again): nothing of it reached ptyd, or it may
 * run twice.  That is what carries a keystroke across a ptyd restart.  The peer check of client_connect is
 * made on every new connection.  In CGI mode each request is a process:
 * nothing is kept.
 */
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "flog.h"
#include "front.h"
#include "harden.h"
#include "http.h"
#include "ptyd_client.h"
#include "util.h"

/* Poll interval while waiting on the lock or for ptyd to come up. */
#define PTYD_POLL_MS 10
/* A kept connection idle longer than this is closed, not used: well
 * inside ptyd's PTYD_CONN_IDLE (60 s), so ptyd never drops one that is
 * about to carry a request. */
#define PTYD_KEPT_IDLE_MS 30000
/*
 * Idle connections kept per process.  The leader thread serves nearly
 * every short request (pool.c), so one is in use most of the time; the
 * bound keeps what ptyd and this process hold from growing with the
 * threads a burst started (a thread holds none while idle or streaming).
 */
#define PTYD_KEPT_MAX 2

/* The process's idle connections to ptyd, newest last. */
static pthread_mutex_t ptyd_kept_mtx = PTHREAD_MUTEX_INITIALIZER;
static struct {
	int	fd;
	int64_t used;
} ptyd_kept[PTYD_KEPT_MAX];
static int ptyd_nkept;

/* An idle connection, taken out for one exchange; -1 if none (or the
 * newest idled so long that ptyd may be closing it: PTYD_CONN_IDLE). */
static int
ptyd_kept_take(void)
{
	int64_t used = 0;
	int	fd = -1;

	pthread_mutex_lock(&ptyd_kept_mtx);
	if (ptyd_nkept > 0) {
		ptyd_nkept--;
		fd = ptyd_kept[ptyd_nkept].fd;
		used = ptyd_kept[ptyd_nkept].used;
	}
	pthread_mutex_unlock(&ptyd_kept_mtx);
	if (fd != -1 && client_now_ms() - used > PTYD_KEPT_IDLE_MS) {
		close(fd);
		fd = -1;
	}
	return (fd);
}

/* Back to the idle ones after a complete exchange, or closed. */
static void
ptyd_kept_put(int fd)
{
	pthread_mutex_lock(&ptyd_kept_mtx);
	if (ptyd_nkept < PTYD_KEPT_MAX) {
		ptyd_kept[ptyd_nkept].fd = fd;
		ptyd_kept[ptyd_nkept].used = client_now_ms();
		ptyd_nkept++;
		fd = -1;
	}
	pthread_mutex_unlock(&ptyd_kept_mtx);
	if (fd != -1)
		close(fd);
}

void
ptyd_kept_drop(void)
{
	pthread_mutex_lock(&ptyd_kept_mtx);
	while (ptyd_nkept > 0)
		close(ptyd_kept[--ptyd_nkept].fd);
	pthread_mutex_unlock(&ptyd_kept_mtx);
}

static int
ptyd_down(int err)
{
	return (err == ENOENT || err == ECONNREFUSED);
}

static void
ptyd_pause(int64_t deadline_ms)
{
	int64_t left = deadline_ms - client_now_ms();

	if (left > PTYD_POLL_MS)
		left = PTYD_POLL_MS;
	if (left > 0)
		poll(NULL, 0, (int)left);
}

/* Is ptyd answering?  1 yes, 0 no (down), -1 other error. */
static int
ptyd_alive(const struct ptyd_conf *conf, int64_t deadline_ms)
{
	int fd;

	if ((fd = client_connect(conf->socket, deadline_ms)) != -1) {
		close(fd);
		return (1);
	}
	return (ptyd_down(errno) ? 0 : -1);
}

/*
 * What ptyd is started with: the settings we resolved, so that this one
 * and any replacement after it have the same (the PTYD_* environment is
 * passed on too), and the umask we were started with.  argv has room for
 * 14.
 */
static void
ptyd_argv(const struct ptyd_conf *conf, char **argv)
{
	size_t n = 0;

	argv[n++] = (char *)"ptyd";
	if (conf->config != NULL) {
		argv[n++] = (char *)"--config";
		argv[n++] = (char *)conf->config;
	}
	if (conf->state_dir != NULL) {
		argv[n++] = (char *)"--state-dir";
		argv[n++] = (char *)conf->state_dir;
	}
	if (conf->db != NULL) {
		argv[n++] = (char *)"--db";
		argv[n++] = (char *)conf->db;
	}
	if (conf->umask[0] != '\0') {
		argv[n++] = (char *)"--umask";
		argv[n++] = (char *)conf->umask;
	}
	if (conf->front) {
		argv[n++] = (char *)"--auth";
		argv[n++] = (char *)"front";
	}
	argv[n++] = (char *)"--socket";
	argv[n++] = (char *)conf->socket;
	argv[n] = NULL;
}

/*
 * Why an autostart failed, for the one log line that says so: what ptyd
 * printed on its stderr before it detached (its own reason: a database
 * held by another ptyd, a state directory it cannot make), then our
 * words.  Bounded: the rest of a long message is read and dropped.
 */
#define PTYD_SAID_MAX 640
struct ptyd_start {
	char   said[PTYD_SAID_MAX]; /* ptyd's stderr, one line */
	size_t nsaid;
	int    newline;	 /* a line ended: "; " before the next */
	char   why[256]; /* ours */
};

/* What came on ptyd's stderr, newlines as "; ", control bytes as '?'. */
static void
ptyd_said(struct ptyd_start *st, const char *buf, size_t n)
{
	size_t i;

	for (i = 0; i < n && st->nsaid + 3 < sizeof(st->said); i++) {
		if (buf[i] == '\n') {
			st->newline = st->nsaid > 0;
			continue;
		}
		if (st->newline) {
			memcpy(st->said + st->nsaid, "; ", 2);
			st->nsaid += 2;
			st->newline = 0;
		}
		if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
			st->said[st->nsaid++] = '?';
		else
			st->said[st->nsaid++] = buf[i];
	}
	st->said[st->nsaid] = '\0';
}

/* Read what is there on fd (non-blocking); 0 at EOF, else 1. */
static int
ptyd_said_read(struct ptyd_start *st, int fd)
{
	char	buf[512];
	ssize_t n;
	int	i;

	for (i = 0; i < 16; i++) {
		n = read(fd, buf, sizeof(buf));
		if (n == 0)
			return (0);
		if (n == -1)
			return (errno == EINTR ? 1 : errno == EAGAIN ? 1 : 0);
		ptyd_said(st, buf, (size_t)n);
	}
	return (1);
}

/*
 * Wait for ptyd's first process, which exits once the daemon serves,
 * reading its stderr (fd, non-blocking) meanwhile.  0 (even if it did not
 * detach in time: the socket check decides), or -1 with st->why.
 */
static int
ptyd_detached(const struct ptyd_conf *conf, pid_t pid, int fd,
    struct ptyd_start *st, int64_t deadline_ms)
{
	struct pollfd pfd;
	int64_t	      left;
	pid_t	      w;
	int	      status, open = 1;

	for (;;) {
		w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w == -1 && errno != EINTR) {
			snprintf(st->why, sizeof(st->why), "waitpid: %s",
			    strerror(errno));
			return (-1);
		}
		if ((left = deadline_ms - client_now_ms()) <= 0) {
			/* Still running: leave it; the socket check decides. */
			flog_warnx("autostart: %s did not detach in time",
			    conf->program);
			return (0);
		}
		pfd.fd = open ? fd : -1;
		pfd.events = POLLIN;
		if (poll(&pfd, 1,
			(int)(left < PTYD_POLL_MS ? left : PTYD_POLL_MS)) > 0)
			open = ptyd_said_read(st, fd);
	}
	if (open)
		(void)ptyd_said_read(st, fd);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		/* Waiting for its socket would only hold the request until
		 * the deadline. */
		snprintf(st->why, sizeof(st->why), "exited with status %d",
		    WIFEXITED(status) ? WEXITSTATUS(status) :
					128 + WTERMSIG(status));
		return (-1);
	}
	if (st->nsaid > 0)
		flog_info("autostart: %s said: %s", conf->program, st->said);
	flog_info("autostart: started %s --socket %s", conf->program,
	    conf->socket);
	return (0);
}

/*
 * Run ptyd, its stderr on a pipe of ours, and wait for its first process
 * (which daemonizes) to exit.  0, or -1 with st->why.
 */
static int
ptyd_spawn(const struct ptyd_conf *conf, struct ptyd_start *st,
    int64_t deadline_ms)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t	   attr;
	sigset_t		   none, all;
	char			  *argv[14], **env;
	pid_t			   pid;
	int			   err, p[2], rv;

	ptyd_argv(conf, argv);
	/* Only the allowlist: in CGI mode our environment holds the
	 * request's headers (cookies, credentials), never ptyd's business. */
	if ((env = harden_env_filter(&harden_daemon_env)) == NULL) {
		snprintf(st->why, sizeof(st->why), "out of memory");
		return (-1);
	}
	if (pipe2(p, O_CLOEXEC) == -1) {
		snprintf(st->why, sizeof(st->why), "pipe: %s", strerror(errno));
		free(env);
		return (-1);
	}
	(void)fcntl(p[0], F_SETFL, O_NONBLOCK);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&attr);
	/* fd 0 may be our FastCGI listen socket (spawn-fcgi): never pass it. */
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	/* Its reason, if it will not start, comes to us (the dup is not
	 * CLOEXEC; the pipe's own ends are). */
	posix_spawn_file_actions_adddup2(&fa, p[1], STDERR_FILENO);
	/* Our workers block signals; ptyd starts with a clean slate, but
	 * for SIGPIPE, ignored as here: a ptyd that writes on its stderr
	 * after we stopped reading (past the deadline) gets EPIPE, not its
	 * death.  (ptyd ignores it anyway, and its shells get SIG_DFL.) */
	sigemptyset(&none);
	sigfillset(&all);
	sigdelset(&all, SIGPIPE);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &all);
	posix_spawnattr_setflags(&attr,
	    POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	if (strchr(conf->program, '/') != NULL)
		err = posix_spawn(&pid, conf->program, &fa, &attr, argv, env);
	else
		err = posix_spawnp(&pid, conf->program, &fa, &attr, argv, env);
	free(env);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(p[1]);
	if (err != 0) {
		snprintf(st->why, sizeof(st->why), "cannot run it: %s",
		    strerror(err));
		close(p[0]);
		return (-1);
	}
	rv = ptyd_detached(conf, pid, p[0], st, deadline_ms);
	close(p[0]);
	return (rv);
}

/* Wait for the socket to accept: 0, or -1 with st->why. */
static int
ptyd_serving(const struct ptyd_conf *conf, struct ptyd_start *st,
    int64_t deadline_ms)
{
	int r;

	while ((r = ptyd_alive(conf, deadline_ms)) == 0) {
		if (client_now_ms() >= deadline_ms) {
			snprintf(st->why, sizeof(st->why),
			    "started, but nothing answers on the socket "
			    "in time");
			return (-1);
		}
		ptyd_pause(deadline_ms);
	}
	if (r == -1) {
		snprintf(st->why, sizeof(st->why), "connect: %s",
		    strerror(errno));
		return (-1);
	}
	return (0);
}

/* The lock on "<socket>.lock", taken: its fd, or -1 with st->why. */
static int
ptyd_lock(const struct ptyd_conf *conf, struct ptyd_start *st,
    int64_t deadline_ms)
{
	char lock[sizeof(conf->socket) + 8], dir[sizeof(conf->socket)];
	int  fd;

	if (snprintf(lock, sizeof(lock), "%s.lock", conf->socket) >=
	    (int)sizeof(lock)) {
		snprintf(st->why, sizeof(st->why), "socket path too long");
		return (-1);
	}
	dir[0] = '\0';
	if (util_mkparents(conf->socket, 0700, dir, sizeof(dir)) == -1) {
		snprintf(st->why, sizeof(st->why), "mkdir %s: %s", dir,
		    strerror(errno));
		return (-1);
	}
	if ((fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) == -1) {
		snprintf(st->why, sizeof(st->why), "%s: %s", lock,
		    strerror(errno));
		return (-1);
	}
	while (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		if ((errno != EWOULDBLOCK && errno != EINTR) ||
		    client_now_ms() >= deadline_ms) {
			snprintf(st->why, sizeof(st->why), "%s: %s", lock,
			    errno == EWOULDBLOCK ?
				"held by another start past the deadline" :
				strerror(errno));
			close(fd);
			return (-1);
		}
		ptyd_pause(deadline_ms);
	}
	return (fd);
}

/*
 * One line with all of it: the program and the socket tried, what went
 * wrong, and ptyd's own words.  (The HTTP answer says none of it: no
 * server path leaves this process.)
 */
static void
ptyd_start_failed(const struct ptyd_conf *conf, const struct ptyd_start *st)
{
	const char *said = st->said;

	if (st->nsaid == 0)
		said = strncmp(st->why, "exited", 6) == 0 ?
		    "it said nothing; see its log" :
		    NULL;
	flog_warnx("autostart: %s --socket %s: %s%s%s", conf->program,
	    conf->socket, st->why, said != NULL ? ": " : "",
	    said != NULL ? said : "");
}

int
ptyd_autostart(const struct ptyd_conf *conf, int64_t deadline_ms)
{
	struct ptyd_start st;
	int		  fd, r, rv = -1;

	memset(&st, 0, sizeof(st));
	if ((fd = ptyd_lock(conf, &st, deadline_ms)) == -1)
		goto done;
	/* Whoever held the lock before us may have started it already. */
	if ((r = ptyd_alive(conf, deadline_ms)) == 1)
		rv = 0;
	else if (r == -1)
		snprintf(st.why, sizeof(st.why), "connect: %s",
		    strerror(errno));
	else if (ptyd_spawn(conf, &st, deadline_ms) == 0 &&
	    ptyd_serving(conf, &st, deadline_ms) == 0)
		rv = 0;
	close(fd); /* releases the lock */
done:
	if (rv == -1) {
		ptyd_start_failed(conf, &st);
		errno = ECONNREFUSED;
	}
	return (rv);
}

/* A new connection to ptyd, starting it first if allowed and needed. */
static int
ptyd_connect(const struct ptyd_conf *conf, int64_t deadline_ms)
{
	int fd;

	fd = client_connect(conf->socket, deadline_ms);
	if (fd == -1 && ptyd_down(errno) && conf->autostart) {
		/* Starting ptyd may take longer than one request's deadline. */
		/* It logs why it failed. */
		if (ptyd_autostart(conf, deadline_ms + 10000) == -1)
			return (-1);
		fd = client_connect(conf->socket, deadline_ms + 10000);
	}
	return (fd);
}

int
ptyd_open(const struct ptyd_conf *conf, const struct frame_out *fo,
    int64_t deadline_ms)
{
	int fd, err;

	if ((fd = ptyd_connect(conf, deadline_ms)) == -1)
		return (-1);
	if (client_send(fd, fo, deadline_ms) == -1) {
		err = errno;
		close(fd);
		errno = err;
		return (-1);
	}
	return (fd);
}

int
ptyd_open_now(const struct ptyd_conf *conf, const struct frame_out *fo)
{
	int fd, err;

	/* A deadline already past: each of the two tries once and never
	 * polls with a timeout. */
	if ((fd = client_connect(conf->socket, 0)) == -1)
		return (-1);
	if (client_send(fd, fo, 0) == -1) {
		err = errno;
		close(fd);
		errno = err;
		return (-1);
	}
	return (fd);
}

/* Send fo on fd and read its one reply.  *sent: the request reached
 * the socket whole (ptyd may have acted on it). */
static int
ptyd_exchange(int fd, const struct frame_out *fo, struct frame_hdr *hdr,
    uint8_t *buf, size_t size, int64_t deadline_ms, int *sent)
{
	*sent = 0;
	if (client_send(fd, fo, deadline_ms) == -1)
		return (-1);
	*sent = 1;
	return (client_recv_reply(fd, hdr, buf, size, deadline_ms));
}

/*
 * After an exchange failed with err: may the request go again on a new
 * connection?  Only when the connection ended under it (ptyd closed a kept
 * one, restarted, was killed) and either nothing of it reached ptyd (the
 * send failed) or it is retry_safe (ptyd took it and closed without a
 * reply: an input with an input_id runs once whatever happens).  Anything
 * else (a timeout: ptyd may still act on it) is answered.
 */
static int
ptyd_again(int err, int sent, int retry_safe)
{
	return ((err == EPIPE || err == ECONNRESET || err == ENOTCONN) &&
	    (!sent || retry_safe));
}

/*
 * Before the next try: none for the first (a kept connection that ptyd
 * had closed is nothing to wait for), then a pause that doubles, so that
 * a ptyd on its way out or on its way up is not hammered.
 */
static void
ptyd_backoff(int tries, int64_t deadline_ms)
{
	int64_t left = deadline_ms - client_now_ms(), ms;

	if (tries == 0)
		return;
	ms = (int64_t)PTYD_POLL_MS << (tries < 5 ? tries - 1 : 4);
	if (ms > left)
		ms = left;
	if (ms > 0)
		poll(NULL, 0, (int)ms);
}

int
ptyd_open_first(const struct ptyd_conf *conf, const struct frame_out *fo,
    struct frame_hdr *hdr, uint8_t *buf, size_t size, int64_t deadline_ms)
{
	int fd, err, tries;

	for (tries = 1;; tries++) {
		if ((fd = ptyd_open(conf, fo, deadline_ms)) != -1 &&
		    client_recv(fd, hdr, buf, size, deadline_ms) == 0)
			return (fd);
		err = errno;
		if (fd != -1)
			close(fd);
		/* A read: safe to ask again, whatever ptyd took. */
		if (!ptyd_again(err, 1, 1) || client_now_ms() >= deadline_ms) {
			errno = err;
			return (-1);
		}
		ptyd_backoff(tries, deadline_ms);
	}
}

int
ptyd_call(const struct ptyd_conf *conf, const struct frame_out *fo,
    struct frame_hdr *hdr, uint8_t *buf, size_t size, int retry_safe,
    int64_t deadline_ms)
{
	int fd = -1, sent, err, tries;

	if (conf->keep)
		fd = ptyd_kept_take();
	for (tries = 0;; tries++) {
		if (fd == -1 && (fd = ptyd_connect(conf, deadline_ms)) == -1)
			return (-1);
		if (ptyd_exchange(fd, fo, hdr, buf, size, deadline_ms, &sent) ==
		    0)
			break;
		err = errno;
		close(fd);
		fd = -1;
		if (!ptyd_again(err, sent, retry_safe) ||
		    client_now_ms() >= deadline_ms) {
			errno = err;
			return (-1);
		}
		ptyd_backoff(tries, deadline_ms);
	}
	if (conf->keep)
		ptyd_kept_put(fd);
	else
		close(fd);
	return (0);
}

void
ptyd_answer_failed(struct req *r, int err)
{
	enum contract_answer a;

	switch (err) {
	case ENOENT:
	case ECONNREFUSED:
		a = CONTRACT_A_PTYD_NOT_RUNNING;
		break;
	case ETIMEDOUT:
	case ECONNRESET:
	case EPIPE:
	case EAGAIN:
	case ENOTCONN:
		a = CONTRACT_A_PTYD_NOT_ANSWERING;
		break;
	default:
		flog_warnx("ptyd exchange failed: %s", strerror(err));
		a = CONTRACT_A_INTERNAL;
		break;
	}
	http_answer(r, a);
}

void
ptyd_answer_error(struct req *r, const struct msg_error *me)
{
	/* 400 and 413 say what was wrong, in ptyd's words (the table's
	 * rows with ptyd_words). */
	http_answer_with(r, contract_answer_of(me->code), me->message, NULL);
}
