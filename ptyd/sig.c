/*
 * sig.c -- deliver SIGCHLD, SIGTERM, SIGINT and SIGHUP through a signalfd.
 *
 * Owns: blocking those signals (so they are only ever seen in the loop,
 * never in an async handler), ignoring SIGPIPE (a viewer that goes away
 * mid-write is an EPIPE, not a death) and SIGXFSZ (a file-size limit on
 * the database or the log makes that write fail with EFBIG, which the
 * mirror counts and retries, instead of killing every terminal).  Does not own: resetting the mask in
 * spawned shells (spawn.c) or what each signal does (the callback).
 *
 * signalfd coalesces: several SIGCHLDs may arrive as one, so the SIGCHLD
 * consumer must reap in a waitpid(WNOHANG) loop.
 */
#include <sys/epoll.h>
#include <sys/signalfd.h>

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "ev.h"
#include "log.h"
#include "sig.h"

static int	    sig_fd = -1;
static struct ev_io sig_io;
static void (*sig_cb)(int, pid_t);

static void
sig_read_cb(int fd, uint32_t events, void *arg)
{
	struct signalfd_siginfo si;
	ssize_t			n;

	(void)events;
	(void)arg;
	for (;;) {
		n = read(fd, &si, sizeof(si));
		if (n == -1 && errno == EINTR)
			continue;
		if (n != (ssize_t)sizeof(si)) {
			if (n == -1 && errno != EAGAIN)
				log_warn("signalfd read");
			return;
		}
		sig_cb((int)si.ssi_signo, (pid_t)si.ssi_pid);
	}
}

int
sig_init(void (*cb)(int, pid_t))
{
	struct sigaction sa;
	sigset_t	 set;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGPIPE, &sa, NULL) == -1 ||
	    sigaction(SIGXFSZ, &sa, NULL) == -1)
		return (-1);
	/* SIGCHLD ignored by whoever started us (exec keeps SIG_IGN) would
	 * have the kernel reap the shells itself: no exit codes, no SIGCHLD. */
	sa.sa_handler = SIG_DFL;
	if (sigaction(SIGCHLD, &sa, NULL) == -1)
		return (-1);

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL) == -1)
		return (-1);
	if ((sig_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)) == -1)
		return (-1);
	sig_cb = cb;
	if (ev_io_add(&sig_io, sig_fd, EPOLLIN, sig_read_cb, NULL) == -1)
		return (-1);
	return (0);
}

void
sig_done(void)
{
	ev_io_del(&sig_io);
	if (sig_fd != -1)
		close(sig_fd);
	sig_fd = -1;
}
