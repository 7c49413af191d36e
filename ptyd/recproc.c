/*
 * recproc.c -- the recorder process (DESIGN 4): ptyd-recorder spawned,
 * watched and restarted, ptyd's end of the SOCK_SEQPACKET pair to it.
 *
 * Owns: the recorder's pid, the pair and its event, the restart timer
 * and its backoff, each message sent (rec_send), what the recorder tells
 * back (a recording's end), the drain at freeze and stop.  Does not own:
 * the table of recordings nor how a row ends (record.c), nor the files'
 * contents (ptyd-recorder).
 *
 * Never blocking: the pair's send buffer is large and every send is
 * MSG_DONTWAIT.  A send that would block means the recorder is behind
 * (a slow disk): that recording is cut (`behind`) and its close is sent
 * once the pair drains.  The recorder gone (killed, crashed): every open
 * recording is cut (`recorder`), the recorder restarted after a backoff,
 * and each terminal still recorded starts its next part.
 */
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ev.h"
#include "log.h"
#include "record.h"
#include "record_int.h"
#include "recwire.h"
#include "term.h"

#define REC_SNDBUF	(4 * 1024 * 1024) /* asked; the kernel caps it */
#define REC_BACKOFF_MIN (1 * 1000000LL)
#define REC_BACKOFF_MAX (60 * 1000000LL)

static int	       rec_sock = -1;
static pid_t	       rec_pid = -1;
static struct ev_io    rec_io;
static struct ev_timer rec_restart_timer;
static int64_t	       rec_backoff = REC_BACKOFF_MIN;
static int64_t	       rec_started_at;

static void rec_lost(int64_t now);

static int
rec_sendv(struct iovec *iov, int n)
{
	struct msghdr mh;

	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = iov;
	mh.msg_iovlen = (size_t)n;
	for (;;) {
		if (sendmsg(rec_sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) != -1)
			return (0);
		if (errno != EINTR)
			return (-1);
	}
}

/* The pair is full: r is cut, its close sent when the pair drains. */
static void
rec_behind(struct rec *r, const char *why)
{
	struct term *t;

	if (r->closing)
		return;
	r->closing = 1;
	r->close_due = 1;
	snprintf(r->close_why, sizeof(r->close_why), "%s", why);
	if ((t = rec_term(r)) != NULL) {
		t->rec_id = 0;
		/* Output was dropped: this terminal records no more (a disk
		 * this slow would cut every next part). */
		if (why[0] != '\0')
			t->record = 0;
	}
	if (why[0] != '\0')
		log_warnx("recording %" PRId64 " of %s: the recorder is behind:"
			  " cut",
		    r->row.id, r->row.sid);
	if (rec_sock != -1 && ev_io_set(&rec_io, EPOLLIN | EPOLLOUT) == -1)
		log_warn("recorder: epoll mod");
}

/*
 * One message of r: the header, then a (with the time first, for all
 * but REC_OPEN) and b.  A full pair cuts r (or, for its close, makes
 * the close due); a gone recorder is lost.  0 if it went.
 */
int
rec_send(struct rec *r, enum rec_type type, int64_t now, const void *a,
    size_t alen, const void *b, size_t blen)
{
	uint8_t	     h[REC_HDR_LEN], tb[8];
	struct iovec iov[4];
	int	     n = 0, timed = type != REC_OPEN;

	if (rec_sock == -1)
		return (-1);
	recwire_hdr(h, type, (uint32_t)((timed ? 8 : 0) + alen + blen),
	    r->row.id);
	iov[n].iov_base = h;
	iov[n++].iov_len = sizeof(h);
	if (timed) {
		recwire_put(tb, (uint64_t)(now > r->t0 ? now - r->t0 : 0), 8);
		iov[n].iov_base = tb;
		iov[n++].iov_len = sizeof(tb);
	}
	iov[n].iov_base = (void *)(uintptr_t)a;
	iov[n++].iov_len = alen;
	iov[n].iov_base = (void *)(uintptr_t)b;
	iov[n++].iov_len = blen;
	if (rec_sendv(iov, n) == 0)
		return (0);
	if (errno == EAGAIN || errno == ENOBUFS)
		rec_behind(r, type == REC_CLOSE ? (const char *)a : "behind");
	else
		rec_lost(now);
	return (-1);
}

/* Closes made due by a full pair, now that it drained. */
static void
rec_flush_due(int64_t now)
{
	struct rec *r;
	int	    left = 0;

	TAILQ_FOREACH (r, &rec_opened, open_entry) {
		if (!r->close_due)
			continue;
		r->close_due = 0;
		if (rec_send(r, REC_CLOSE, now, r->close_why,
			strlen(r->close_why), NULL, 0) == -1) {
			if (rec_sock == -1)
				return;
			r->close_due = 1;
			left = 1;
			break;
		}
	}
	if (!left && rec_sock != -1 && ev_io_set(&rec_io, EPOLLIN) == -1)
		log_warn("recorder: epoll mod");
}

/* REC_END from the recorder. */
static void
rec_told(const uint8_t *m, size_t n, int64_t now)
{
	static const char hex[] = "0123456789abcdef";
	struct rec	 *r;
	char		  sha[65], why[REC_REASON_MAX + 1];
	size_t		  i, len, rlen;
	int		  zero = 1;

	if (n < REC_HDR_LEN + 41 || m[0] != REC_END)
		return;
	len = (size_t)recwire_get(m + 4, 4);
	if (len != n - REC_HDR_LEN)
		return;
	if ((r = rec_find((int64_t)recwire_get(m + 8, 8))) == NULL)
		return;
	m += REC_HDR_LEN;
	for (i = 0; i < 32; i++) {
		sha[2 * i] = hex[m[9 + i] >> 4];
		sha[2 * i + 1] = hex[m[9 + i] & 0xf];
		zero = zero && m[9 + i] == 0;
	}
	sha[64] = '\0';
	rlen = len - 41 > REC_REASON_MAX ? REC_REASON_MAX : len - 41;
	memcpy(why, m + 41, rlen);
	why[rlen] = '\0';
	rec_ended(r, m[0] != REC_END_FINISHED, recwire_get(m + 1, 8),
	    zero ? "" : sha, why[0] != '\0' ? why : "disk", now);
}

static void
rec_io_cb(int fd, uint32_t events, void *arg)
{
	static uint8_t m[REC_HDR_LEN + 64 + REC_REASON_MAX];
	int64_t	       now = ev_now();
	ssize_t	       n;

	(void)arg;
	if (events & EPOLLOUT)
		rec_flush_due(now);
	while (rec_sock == fd) {
		n = recv(fd, m, sizeof(m), MSG_DONTWAIT);
		if (n > 0) {
			rec_told(m, (size_t)n, now);
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			break;
		rec_lost(now);
		break;
	}
}

/* Each terminal still recorded and not recording starts its next part. */
static void
rec_resume_all(int64_t now)
{
	struct term *t;

	for (t = term_first(); t != NULL; t = term_next(t))
		rec_begin(t, now);
}

static int
rec_spawn(int sock)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t	   at;
	sigset_t		   none, all;
	char			  *argv[] = { (char *)"ptyd-recorder", NULL };
	char			  *envp[] = { NULL };
	int			   rv;

	sigemptyset(&none);
	sigfillset(&all);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	posix_spawn_file_actions_adddup2(&fa, sock, REC_SOCK_FD);
	posix_spawn_file_actions_adddup2(&fa, rec_dir, REC_DIR_FD);
	/* Our signals are blocked for the signalfd: not the recorder's. */
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setflags(&at,
	    POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	rv = posix_spawn(&rec_pid, rec_conf.recorder, &fa, &at, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (rv != 0) {
		rec_pid = -1;
		errno = rv;
		return (-1);
	}
	return (0);
}

static int
rec_recorder_start(int64_t now)
{
	int sv[2] = { -1, -1 }, sz = REC_SNDBUF, i;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1)
		goto fail;
	/* Above the numbers the child's dup2s target, so none lands on
	 * another before it is moved. */
	for (i = 0; i < 2; i++)
		if (sv[i] <= REC_DIR_FD) {
			int fd = fcntl(sv[i], F_DUPFD_CLOEXEC, REC_DIR_FD + 1);

			close(sv[i]);
			if ((sv[i] = fd) == -1)
				goto fail;
		}
	(void)setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	if (fcntl(sv[0], F_SETFL, O_NONBLOCK) == -1 || rec_spawn(sv[1]) == -1)
		goto fail;
	close(sv[1]);
	rec_sock = sv[0];
	if (ev_io_add(&rec_io, rec_sock, EPOLLIN, rec_io_cb, NULL) == -1) {
		log_warn("recorder: epoll add");
		rec_lost(now);
		return (-1);
	}
	rec_started_at = now;
	log_info("recorder started, pid %ld", (long)rec_pid);
	return (0);
fail:
	log_warn("starting %s", rec_conf.recorder);
	for (i = 0; i < 2; i++)
		if (sv[i] != -1)
			close(sv[i]);
	return (-1);
}

static void
rec_restart_cb(void *arg)
{
	int64_t now = ev_now();

	(void)arg;
	if (rec_recorder_start(now) == -1) {
		rec_backoff = rec_backoff * 2 > REC_BACKOFF_MAX ?
		    REC_BACKOFF_MAX :
		    rec_backoff * 2;
		ev_timer_at(&rec_restart_timer, now + rec_backoff);
		return;
	}
	rec_resume_all(now);
}

/* The recorder is gone: what it had open is cut, it starts again. */
static void
rec_lost(int64_t now)
{
	struct rec *r;

	if (rec_sock == -1)
		return;
	ev_io_del(&rec_io);
	close(rec_sock);
	rec_sock = -1;
	if (rec_pid > 0)
		(void)waitpid(rec_pid, NULL, WNOHANG); /* or SIGCHLD's loop */
	log_warnx("recorder (pid %ld) is gone: restarting it", (long)rec_pid);
	rec_pid = -1;
	while ((r = TAILQ_FIRST(&rec_opened)) != NULL)
		rec_ended(r, 1, rec_file_size(r), "", "recorder", now);
	rec_backoff = now - rec_started_at > REC_BACKOFF_MAX ?
	    REC_BACKOFF_MIN :
	    (rec_backoff * 2 > REC_BACKOFF_MAX ? REC_BACKOFF_MAX :
						 rec_backoff * 2);
	ev_timer_at(&rec_restart_timer, now + rec_backoff);
}

/*
 * At our end: the recorder is told (EOF after what it was sent), ends
 * every file (what is still open as `takeover`: under a keeper the
 * terminals go on with the next ptyd) and exits; its ends are read for
 * at most REC_DONE_WAIT_MS, so that the last flush writes the rows.
 */
#define REC_DONE_WAIT_MS 1000
static void
rec_drain(void)
{
	static uint8_t m[REC_HDR_LEN + 64 + REC_REASON_MAX];
	struct pollfd  pfd;
	int64_t	       deadline = ev_clock() + REC_DONE_WAIT_MS * 1000LL, left;
	ssize_t	       n;

	ev_io_del(&rec_io);
	(void)shutdown(rec_sock, SHUT_WR);
	pfd.fd = rec_sock;
	pfd.events = POLLIN;
	while (
	    !TAILQ_EMPTY(&rec_opened) && (left = deadline - ev_clock()) > 0) {
		if (poll(&pfd, 1, (int)(left / 1000) + 1) <= 0)
			continue;
		n = recv(rec_sock, m, sizeof(m), MSG_DONTWAIT);
		if (n > 0)
			rec_told(m, (size_t)n, ev_clock());
		else if (n == 0 || (errno != EINTR && errno != EAGAIN))
			break;
	}
	close(rec_sock);
	rec_sock = -1;
}

int
rec_recorder_up(void)
{
	return (rec_sock != -1);
}

/* At start, the folder open: the recorder started if the policy may
 * record, or its restart armed. */
void
rec_recorder_init(int64_t now)
{
	ev_timer_init(&rec_restart_timer, rec_restart_cb, NULL);
	if (rec_dir != -1 && rec_conf.policy != REC_POLICY_OFF &&
	    rec_recorder_start(now) == -1)
		ev_timer_at(&rec_restart_timer, now + rec_backoff);
}

void
rec_recorder_done(void)
{
	ev_timer_stop(&rec_restart_timer);
	if (rec_sock != -1)
		rec_drain();
}

void
rec_freeze(void)
{
	if (rec_sock != -1)
		rec_drain();
}

void
rec_thaw(int64_t now)
{
	if (rec_inited && rec_dir != -1 && rec_conf.policy != REC_POLICY_OFF &&
	    rec_sock == -1 && rec_recorder_start(now) == 0)
		rec_resume_all(now);
}
