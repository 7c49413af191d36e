/*
 * ptydctl_keeper.c -- `ptydctl upgrade`, `shutdown` and `service`: what
 * an operator, or systemd through the thin ptyd.service, asks of the
 * keeper (docs/proposals/keeper.md, section 4, "Supervisor commands").
 *
 * Owns: finding the keeper (keeper_pid of MSG_STATS_REPLY), signalling it
 * (SIGUSR2: upgrade; SIGTERM: stop) through a pidfd where the kernel has
 * them, so that a pid reused after the keeper's end is never signalled,
 * watching for the result (stats polled until `upgrades` grows; the
 * process gone), and `service`: systemd's signals to the main process of
 * ptyd.service (SIGTERM, RestartKillSignal=SIGUSR1) turned into a stop or
 * an upgrade of the keeper in ptyd-keeper.service.  Does not own: the
 * upgrade itself (the keeper and ptyd), the socket I/O (lib/client.c),
 * the other commands (ptydctl.c).
 */
#include <sys/signalfd.h>
#include <sys/syscall.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "frame.h"
#include "proto.h"
#include "ptydctl.h"

#define CTL_UPGRADE_TIMEOUT_S  15    /* upgrade's default --timeout */
#define CTL_SHUTDOWN_TIMEOUT_S 30    /* shutdown's default --timeout */
#define CTL_UPGRADE_POLL_MS    50    /* stats asked this often meanwhile */
#define CTL_GONE_POLL_MS       100   /* without pidfds: kill(pid, 0) */
#define CTL_ASK_MS	       1000  /* one stats exchange at most */
#define CTL_SERVICE_FIND_MS    10000 /* service: the keeper coming up */
#define CTL_SERVICE_STOP_MS    30000 /* service: the keeper going */
#define CTL_TIMEOUT_MAX_S      86400

/* A process we signal and watch: its pid, and a pidfd on it or -1. */
struct ctl_proc {
	pid_t pid;
	int   pidfd;
};

static uint8_t ctl_kbuf[PROTO_HDR_LEN + PROTO_MAX_PAYLOAD];
static char    ctl_kerr[PROTO_ERRMSG_MAX + 64];

static void
ctl_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/*
 * One MSG_STATS exchange before deadline.  0, or -1 with errno: the
 * socket's (ENOENT, ECONNREFUSED: nobody serves; ETIMEDOUT), or EAGAIN
 * for an answer that is not a stats reply (E_RETRY during a hand-over);
 * ctl_kerr says which.  Never exits: during an upgrade these are
 * expected.
 */
static int
ctl_stats_try(struct msg_stats_reply *r, int64_t deadline)
{
	struct frame_out fo;
	struct frame_hdr h;
	struct msg_error e;
	int		 rv = -1;

	frame_out_init(&fo);
	if (msg_encode(&fo, MSG_STATS, NULL) == -1)
		die("encoding the request");
	if (client_call(ctl_socket_path(), &fo, &h, ctl_kbuf, sizeof(ctl_kbuf),
		deadline) == -1) {
		snprintf(ctl_kerr, sizeof(ctl_kerr), "%s: %s",
		    ctl_socket_path(), strerror(errno));
		goto out;
	}
	if (h.type == MSG_STATS_REPLY &&
	    msg_decode(h.type, ctl_kbuf + PROTO_HDR_LEN, h.len, r) == 0)
		rv = 0;
	else if (h.type == MSG_ERROR &&
	    msg_decode(h.type, ctl_kbuf + PROTO_HDR_LEN, h.len, &e) == 0)
		snprintf(ctl_kerr, sizeof(ctl_kerr), "ptyd: error %u: %s",
		    e.code, e.message);
	else
		snprintf(ctl_kerr, sizeof(ctl_kerr),
		    "ptyd: unexpected reply %s", msg_name(h.type));
	if (rv == -1)
		errno = EAGAIN;
out:
	frame_out_free(&fo);
	return (rv);
}

/* Stats now, or exit 2 as any other command that cannot reach ptyd. */
static void
ctl_stats_now(struct msg_stats_reply *r)
{
	if (ctl_stats_try(r, client_now_ms() + CTL_ASK_MS * 10) == -1) {
		fprintf(stderr, "ptydctl: %s\n", ctl_kerr);
		exit(2);
	}
}

/* --timeout SECONDS (a whole number, 1 to a day), else def; nothing else. */
static int64_t
ctl_timeout_ms(int argc, char **argv, long def)
{
	static const struct option opts[] = {
		{ "timeout", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	long  s = def;
	int   ch;

	optind = 0;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (ch != 't')
			usage();
		errno = 0;
		/* --timeout is required_argument: optarg is set. */
		/* NOLINTNEXTLINE(clang-analyzer-core.NonNull*) */
		s = strtol(optarg, &end, 10);
		if (errno != 0 || end == optarg || *end != '\0' || s < 1 ||
		    s > CTL_TIMEOUT_MAX_S)
			usage();
	}
	if (optind != argc)
		usage();
	return ((int64_t)s * 1000);
}

static void
ctl_proc_open(struct ctl_proc *p, pid_t pid)
{
	p->pid = pid;
	p->pidfd = -1;
#ifdef SYS_pidfd_open
	p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (p->pidfd == -1 && errno == ESRCH)
		p->pidfd = -2; /* already gone */
#endif
}

/* sig to p.  0, or -1 with errno (ESRCH: gone; EPERM: not ours). */
static int
ctl_proc_signal(const struct ctl_proc *p, int sig)
{
	if (p->pidfd == -2) {
		errno = ESRCH;
		return (-1);
	}
#ifdef SYS_pidfd_send_signal
	if (p->pidfd >= 0)
		return ((
		    int)syscall(SYS_pidfd_send_signal, p->pidfd, sig, NULL, 0));
#endif
	return (kill(p->pid, sig));
}

/* 1 once p has ended (a pidfd turns readable; else kill(pid, 0)). */
static int
ctl_proc_gone(const struct ctl_proc *p)
{
	struct pollfd pfd;

	if (p->pidfd == -2)
		return (1);
	if (p->pidfd >= 0) {
		pfd.fd = p->pidfd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		return (poll(&pfd, 1, 0) == 1);
	}
	return (kill(p->pid, 0) == -1 && errno == ESRCH);
}

/* Wait up to ms for p to end (its pidfd, else kill(pid, 0) every
 * CTL_GONE_POLL_MS).  1 if it did. */
static int
ctl_proc_wait_gone(const struct ctl_proc *p, int64_t ms)
{
	struct pollfd pfd;
	int64_t	      deadline = client_now_ms() + ms, left;

	while (!ctl_proc_gone(p)) {
		if ((left = deadline - client_now_ms()) <= 0)
			return (0);
		if (p->pidfd < 0) {
			ctl_sleep_ms(CTL_GONE_POLL_MS);
			continue;
		}
		pfd.fd = p->pidfd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		(void)poll(&pfd, 1, left > INT_MAX ? INT_MAX : (int)left);
	}
	return (1);
}

static void
ctl_proc_close(struct ctl_proc *p)
{
	if (p->pidfd >= 0)
		close(p->pidfd);
	p->pidfd = -1;
}

/* Signal p or exit 2 saying why (the keeper not ours, already gone). */
static void
ctl_proc_signal_or_die(const struct ctl_proc *p, int sig, const char *who)
{
	if (ctl_proc_signal(p, sig) == 0)
		return;
	fprintf(stderr, "ptydctl: cannot signal %s (pid %d): %s\n", who,
	    (int)p->pid, strerror(errno));
	exit(2);
}

/* The upgrade's outcome, as ptydctl prints it; 0 upgraded, 1 failed. */
static int
ctl_upgrade_print(const struct msg_stats_reply *r0,
    const struct msg_stats_reply *r, int64_t ms)
{
	const char *why = r->upgrade_reason[0] != '\0' ? r->upgrade_reason :
							 "no reason given";

	if (ctl_want_json()) {
		printf("{\"upgraded\": %s, \"old_pid\": %d, \"pid\": %d, "
		       "\"ms\": %" PRId64 ", \"terminals\": %u, "
		       "\"generation\": %u, \"reason\": ",
		    r->upgrade_failed ? "false" : "true", r0->pid, r->pid, ms,
		    r->terminals, r->generation);
		ctl_json_str(r->upgrade_failed ? why : "");
		printf("}\n");
	} else if (r->upgrade_failed)
		printf("upgrade failed: %s; ptyd pid %d still serving\n", why,
		    r->pid);
	else
		printf("upgraded: ptyd pid %d -> %d in %" PRId64
		       " ms, %u terminals kept\n",
		    r0->pid, r->pid, ms, r->terminals);
	fflush(stdout);
	return (r->upgrade_failed ? 1 : 0);
}

/*
 * SIGUSR2 to the keeper k, whose ptyd answered r0, then stats every
 * CTL_UPGRADE_POLL_MS until `upgrades` has grown: the keeper counts an
 * attempt when it is over, whichever way it went.  Meanwhile the old
 * ptyd stops accepting, answers E_RETRY, and exits, and the new one takes
 * the socket over: a refused or unanswered exchange is part of it, not an
 * error.  0 upgraded, 1 failed (or the keeper ended), 3 no outcome in
 * time.
 */
static int
ctl_upgrade_run(const struct msg_stats_reply *r0, const struct ctl_proc *k,
    int64_t timeout_ms)
{
	struct msg_stats_reply r;
	int64_t		       t0, now, deadline;

	ctl_proc_signal_or_die(k, SIGUSR2, "the keeper");
	t0 = client_now_ms();
	deadline = t0 + timeout_ms;
	for (;;) {
		if (ctl_proc_gone(k)) {
			printf("upgrade failed: the keeper (pid %d) ended, and "
			       "the shells with it\n",
			    (int)k->pid);
			return (1);
		}
		if ((now = client_now_ms()) >= deadline)
			break;
		if (ctl_stats_try(&r,
			now + CTL_ASK_MS < deadline ? now + CTL_ASK_MS :
						      deadline) == 0 &&
		    r.keeper_pid == r0->keeper_pid &&
		    r.upgrades != r0->upgrades)
			return (
			    ctl_upgrade_print(r0, &r, client_now_ms() - t0));
		ctl_sleep_ms(CTL_UPGRADE_POLL_MS);
	}
	fprintf(stderr,
	    "ptydctl: upgrade: no outcome after %" PRId64 " s (keeper pid %d, "
	    "ptyd pid %d before); it may still finish: see ptyd's log and "
	    "`ptydctl stats` (upgrades, upgrade_failed)\n",
	    timeout_ms / 1000, (int)k->pid, r0->pid);
	return (3);
}

static int
ctl_no_keeper(void)
{
	fprintf(stderr,
	    "ptydctl: ptyd runs without a keeper (--no-keeper): "
	    "an upgrade needs a restart, which ends the shells\n");
	return (2);
}

int
ctl_upgrade(int argc, char **argv)
{
	struct msg_stats_reply r0;
	struct ctl_proc	       k;
	int64_t		       timeout_ms;
	int		       rv;

	timeout_ms = ctl_timeout_ms(argc, argv, CTL_UPGRADE_TIMEOUT_S);
	ctl_stats_now(&r0);
	if (r0.keeper_pid <= 0)
		return (ctl_no_keeper());
	ctl_proc_open(&k, r0.keeper_pid);
	rv = ctl_upgrade_run(&r0, &k, timeout_ms);
	ctl_proc_close(&k);
	return (rv);
}

/*
 * SIGTERM to the keeper (to ptyd itself without one): every shell is
 * hung up and reaped, then both exit.  Done when the signalled process
 * is gone, not when the socket first refuses: the keeper holds the
 * database's lock until its very end (a ptyd started before would be
 * refused), and ptyd.fcgi's autostart may put a new ptyd on the socket
 * as soon as the old one leaves it.
 */
int
ctl_shutdown(int argc, char **argv)
{
	struct msg_stats_reply r;
	struct ctl_proc	       p;
	int64_t		       timeout_ms, t0;

	timeout_ms = ctl_timeout_ms(argc, argv, CTL_SHUTDOWN_TIMEOUT_S);
	ctl_stats_now(&r);
	ctl_proc_open(&p, r.keeper_pid > 0 ? r.keeper_pid : r.pid);
	ctl_proc_signal_or_die(&p, SIGTERM,
	    r.keeper_pid > 0 ? "the keeper" : "ptyd");
	t0 = client_now_ms();
	if (!ctl_proc_wait_gone(&p, timeout_ms)) {
		fprintf(stderr,
		    "ptydctl: shutdown: %s pid %d still running after %" PRId64
		    " s\n",
		    r.keeper_pid > 0 ? "the keeper" : "ptyd", (int)p.pid,
		    timeout_ms / 1000);
		ctl_proc_close(&p);
		return (3);
	}
	ctl_proc_close(&p);
	if (r.keeper_pid > 0)
		printf("stopped: keeper pid %d and ptyd pid %d, %u terminals "
		       "ended, in %" PRId64 " ms\n",
		    r.keeper_pid, r.pid, r.terminals, client_now_ms() - t0);
	else
		printf("stopped: ptyd pid %d, %u terminals ended, in %" PRId64
		       " ms\n",
		    r.pid, r.terminals, client_now_ms() - t0);
	return (0);
}

/* What service was asked, by the signal it got. */
enum ctl_ask {
	CTL_ASK_NONE,
	CTL_ASK_STOP,
	CTL_ASK_UPGRADE
};

static enum ctl_ask
ctl_service_ask(int sfd)
{
	struct signalfd_siginfo si;
	enum ctl_ask		ask = CTL_ASK_NONE;

	/* A stop wins over an upgrade asked in the same breath. */
	while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
			ask = CTL_ASK_STOP;
		else if (ask == CTL_ASK_NONE)
			ask = CTL_ASK_UPGRADE;
	}
	return (ask);
}

/* SIGTERM, SIGINT, SIGUSR1, SIGHUP blocked and read from a signalfd. */
static int
ctl_service_signals(void)
{
	sigset_t set;
	int	 sfd;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL) == -1)
		die("sigprocmask");
	if ((sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)) == -1)
		die("signalfd");
	return (sfd);
}

/*
 * Wait for (sfd, p) up to ms: the first ask, else CTL_ASK_NONE with *gone
 * set if p ended (ms < 0: no limit).
 */
static enum ctl_ask
ctl_service_wait(int sfd, const struct ctl_proc *p, int64_t ms, int *gone)
{
	struct pollfd pfd[2];
	int64_t	      deadline = ms < 0 ? -1 : client_now_ms() + ms, left;
	enum ctl_ask  ask;
	int	      n;

	*gone = 0;
	for (;;) {
		if ((ask = ctl_service_ask(sfd)) != CTL_ASK_NONE)
			return (ask);
		if (p != NULL && (*gone = ctl_proc_gone(p)))
			return (CTL_ASK_NONE);
		if (deadline < 0)
			left = -1;
		else if ((left = deadline - client_now_ms()) <= 0)
			return (CTL_ASK_NONE);
		pfd[0].fd = sfd;
		pfd[0].events = POLLIN;
		pfd[1].fd = p != NULL && p->pidfd >= 0 ? p->pidfd : -1;
		pfd[1].events = POLLIN;
		/* Without a pidfd the keeper is looked at every 100 ms. */
		if (p != NULL && pfd[1].fd == -1 &&
		    (left < 0 || left > CTL_GONE_POLL_MS))
			left = CTL_GONE_POLL_MS;
		n = poll(pfd, 2, left > INT_MAX ? INT_MAX : (int)left);
		if (n == -1 && errno != EINTR)
			die("poll");
	}
}

/*
 * The keeper (or a ptyd without one) as stats names it, retried for up to
 * CTL_SERVICE_FIND_MS while the keeper comes up beside us (systemd starts
 * ptyd-keeper.service first, but a socket is bound only a moment later).
 * A stop asked meanwhile is kept in *ask.  -1 if nothing answered.
 */
static int
ctl_service_find(int sfd, struct msg_stats_reply *r, enum ctl_ask *ask)
{
	int64_t	     deadline = client_now_ms() + CTL_SERVICE_FIND_MS, now;
	enum ctl_ask a;
	int	     gone;

	for (;;) {
		now = client_now_ms();
		if (ctl_stats_try(r, now + CTL_ASK_MS) == 0)
			return (0);
		if (now >= deadline)
			break;
		a = ctl_service_wait(sfd, NULL, CTL_GONE_POLL_MS, &gone);
		if (a == CTL_ASK_STOP ||
		    (a != CTL_ASK_NONE && *ask == CTL_ASK_NONE))
			*ask = a;
	}
	fprintf(stderr, "ptydctl: service: nothing serves after %d s: %s\n",
	    CTL_SERVICE_FIND_MS / 1000, ctl_kerr);
	return (-1);
}

/* SIGTERM to p and wait for its end: 0, or 1 if it is still there. */
static int
ctl_service_stop(const struct ctl_proc *p, const char *who)
{
	int64_t t0 = client_now_ms();

	printf("service: stopping: SIGTERM to %s (pid %d)\n", who, (int)p->pid);
	if (ctl_proc_signal(p, SIGTERM) == -1 && errno != ESRCH) {
		fprintf(stderr, "ptydctl: service: cannot signal %s: %s\n", who,
		    strerror(errno));
		return (1);
	}
	if (!ctl_proc_wait_gone(p, CTL_SERVICE_STOP_MS)) {
		fprintf(stderr,
		    "ptydctl: service: %s (pid %d) is still running after "
		    "%d s; systemctl stop ptyd-keeper ends it\n",
		    who, (int)p->pid, CTL_SERVICE_STOP_MS / 1000);
		return (1);
	}
	printf("service: %s (pid %d) ended in %" PRId64 " ms\n", who,
	    (int)p->pid, client_now_ms() - t0);
	return (0);
}

/*
 * An upgrade asked of the service (systemctl restart: RestartKillSignal,
 * or SIGHUP): stats again for the count of upgrades as it stands now (an
 * ExecReload may have run since), then as ptydctl upgrade.  Whatever
 * came of it the shells are kept and the result is in the journal, so
 * the service exits 0 and systemd starts the next one.
 */
static int
ctl_service_upgrade(const struct ctl_proc *k, int64_t timeout_ms)
{
	struct msg_stats_reply r0;
	int64_t		       deadline = client_now_ms() + timeout_ms;

	printf("service: upgrading ptyd under the keeper (pid %d)\n",
	    (int)k->pid);
	/* A crash take-over may be under way: wait for it like for the
	 * rest of the upgrade. */
	while (ctl_stats_try(&r0, client_now_ms() + CTL_ASK_MS) == -1 ||
	    r0.keeper_pid != k->pid) {
		if (ctl_proc_gone(k) || client_now_ms() >= deadline) {
			fprintf(stderr, "ptydctl: service: no upgrade: %s\n",
			    ctl_proc_gone(k) ? "the keeper ended" : ctl_kerr);
			return (0);
		}
		ctl_sleep_ms(CTL_UPGRADE_POLL_MS);
	}
	(void)ctl_upgrade_run(&r0, k, deadline - client_now_ms());
	return (0);
}

/*
 * The main process of the thin ptyd.service.  systemd's signals become
 * the keeper's: SIGTERM (systemctl stop) a stop that ends the shells;
 * SIGUSR1 (RestartKillSignal, systemctl restart) or SIGHUP an upgrade
 * that keeps them, after which we exit 0 and systemd starts the next
 * service.  The keeper lives in ptyd-keeper.service, whose restarts and
 * stops are its own; if it ends on its own we exit 1 so that this unit
 * shows the failure.  Under a ptyd without a keeper there is nothing to
 * upgrade through: a restart is a stop (the shells end), then the start
 * pulls ptyd-keeper.service up again.
 */
int
ctl_service(int argc, char **argv)
{
	struct msg_stats_reply r;
	struct ctl_proc	       p;
	enum ctl_ask	       ask = CTL_ASK_NONE;
	int64_t		       timeout_ms;
	const char	      *who;
	int		       sfd, gone, rv;

	timeout_ms = ctl_timeout_ms(argc, argv, CTL_UPGRADE_TIMEOUT_S);
	setvbuf(stdout, NULL, _IOLBF, 0);
	sfd = ctl_service_signals();
	if (ctl_service_find(sfd, &r, &ask) == -1)
		return (ask == CTL_ASK_STOP ? 0 : 1);
	who = r.keeper_pid > 0 ? "the keeper" : "ptyd";
	ctl_proc_open(&p, r.keeper_pid > 0 ? r.keeper_pid : r.pid);
	if (r.keeper_pid > 0)
		printf("service: keeper pid %d, ptyd pid %d, generation %u\n",
		    r.keeper_pid, r.pid, r.generation);
	else
		printf(
		    "service: ptyd pid %d runs without a keeper "
		    "(--no-keeper): a restart of this unit ends the shells\n",
		    r.pid);
	if (ask == CTL_ASK_NONE)
		ask = ctl_service_wait(sfd, &p, -1, &gone);
	if (ask == CTL_ASK_UPGRADE && r.keeper_pid > 0)
		rv = ctl_service_upgrade(&p, timeout_ms);
	else if (ask != CTL_ASK_NONE) {
		if (ask == CTL_ASK_UPGRADE)
			printf("service: no keeper to upgrade through: this "
			       "restart ends the shells\n");
		rv = ctl_service_stop(&p, who);
	} else {
		fprintf(stderr,
		    "ptydctl: service: %s (pid %d) ended on its own%s\n", who,
		    (int)p.pid,
		    r.keeper_pid > 0 ? ", and its shells with it" : "");
		rv = 1;
	}
	ctl_proc_close(&p);
	close(sfd);
	return (rv);
}
