/*
 * keeper.c -- ptyd-keeper: runs ptyd, and outlives it (DESIGN 10).
 *
 * Owns: the listening socket and the database's lock for the account's
 * whole life (ptyd gets copies), the ptyd it runs and the one that may be
 * replacing it, the binary each was started from, the pid file, and the
 * loop.  The shells are our children (ptyd clones them with CLONE_PARENT)
 * and we are a subreaper, so what they leave behind is ours to reap too;
 * kterm.c holds the terminals.  Started by ptyd itself (ptyd/main.c)
 * after it has checked its settings, taken the lock and bound the socket:
 *
 *   ptyd-keeper --ptyd PATH --listen-fd N --lock-fd N [--ready-fd N]
 *               [--pidfile PATH] [--socket PATH] [--log WHERE]
 *               [--verbose] -- ptyd args
 *
 * The life of one ptyd: started (fd 3 calls, fd 4 events), KW_HELLO
 * within KEEPER_HELLO_MS, then KW_WELCOME with the listening socket and
 * the lock, every terminal (KW_TERM), KW_TERMS_END; it answers KW_READY
 * within KEEPER_READY_MS and serves from KW_GO.  What ends one:
 *
 *   crash     it dies (a signal, an exit other than 0): another is started
 *             from the same binary at once (then after a backoff if they
 *             keep dying), given every terminal, KW_MODE_CRASH.
 *   upgrade   SIGUSR2 or SIGUSR1: the binary now at PATH is started beside
 *             the serving one; after its KW_HELLO the old one is frozen
 *             (KW_FREEZE: it flushes the database and stops reading
 *             anything), the new one adopts and says KW_READY, the old one
 *             is told KW_EXIT and reaped, and only then the new one KW_GO.
 *             Any failure before that (missing binary, refused hello,
 *             death, a deadline) kills the new one and thaws the old one
 *             (KW_THAW, with why), so one ptyd always serves.  A new
 *             binary that dies within KEEPER_PROBATION_US of taking over
 *             is replaced by the one it replaced.
 *   stop      SIGTERM or SIGINT: ptyd is told (SIGTERM) and ends every
 *             shell cleanly, then exits 0, and so do we.  ptyd exiting 0
 *             on its own is a stop too.
 *
 * If we die, ptyd sees its event socket close and ends every shell
 * cleanly: the one failure that ends the shells.
 */
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <linux/close_range.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harden.h"
#include "keeper.h"
#include "kwire.h"
#include "log.h"
#include "termhdr.h"
#include "xmalloc.h"

#define KEEPER_HELLO_MS	      10000
#define KEEPER_READY_MS	      30000
#define KEEPER_FREEZE_MS      5000
#define KEEPER_EXIT_MS	      3000
#define KEEPER_STOP_MS	      15000 /* ptyd's own deadline is 10 s */
#define KEEPER_SEND_MS	      1000
#define KEEPER_PROBATION_US   (10LL * 1000000)
#define KEEPER_QUICK_DEATH_US (30LL * 1000000)

extern char **environ;

static const struct timeval keeper_send_tv = { KEEPER_SEND_MS / 1000,
	(KEEPER_SEND_MS % 1000) * 1000 };

enum kchild_state {
	KC_NONE,
	KC_HELLO,   /* started, waiting for KW_HELLO */
	KC_ADOPT,   /* given the terminals, waiting for KW_READY */
	KC_WAITGO,  /* ready, waiting for the old one to be gone */
	KC_SERVING, /* KW_GO sent */
	KC_FREEZING,
	KC_FROZEN,
	KC_EXITING, /* KW_EXIT sent or being stopped */
};

struct kchild {
	enum kchild_state state;
	pid_t		  pid;
	int		  call;	 /* our end of its fd 3 */
	int		  event; /* our end of its fd 4 */
	int		  bin;	 /* O_PATH of the binary it runs */
	enum kw_mode	  mode;
	int64_t		  started;
	int64_t		  deadline; /* of the state; 0: none */
};

#define KCHILD_NONE \
	{ .state = KC_NONE, .pid = -1, .call = -1, .event = -1, .bin = -1 }
static struct kchild keeper_cur = KCHILD_NONE;
static struct kchild keeper_new = KCHILD_NONE;

static const char *keeper_path; /* ptyd's binary */
static char	 **keeper_args; /* its argv */
static int	   keeper_listen = -1, keeper_lock = -1, keeper_ready = -1;
static const char *keeper_pidfile;
static const char *keeper_socket; /* unlinked at a stop */
static int	   keeper_ep = -1, keeper_sfd = -1;
static int	   keeper_stopping, keeper_quit, keeper_served;
static int64_t	   keeper_stop_deadline;
static int64_t	   keeper_restart_at = -1; /* a crash restart is due */
static int	   keeper_quick_deaths;
static int	   keeper_prev_bin = -1; /* the binary before an upgrade */
static int64_t	   keeper_upgraded_at = -1;
static uint32_t	   keeper_generation, keeper_upgrades, keeper_takeovers;
static int	   keeper_upgrade_failed;
static char	   keeper_reason[256];

/* ---- small things ------------------------------------------------------ */

static int64_t
keeper_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
}

static void keeper_fatal(const char *) __attribute__((noreturn));

static void
keeper_fatal(const char *what)
{
	log_warn("keeper: %s", what);
	exit(1);
}

void
keeper_watch(int fd, uint32_t events, void *ptr)
{
	struct epoll_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.events = events;
	ev.data.ptr = ptr;
	if (epoll_ctl(keeper_ep, EPOLL_CTL_ADD, fd, &ev) == -1 &&
	    (errno != EEXIST ||
		epoll_ctl(keeper_ep, EPOLL_CTL_MOD, fd, &ev) == -1))
		log_warn("keeper: epoll add");
}

void
keeper_unwatch(int fd)
{
	(void)epoll_ctl(keeper_ep, EPOLL_CTL_DEL, fd, NULL);
}

/* epoll's data for the two children's call sockets, the signals and the
 * serving one's event socket while the outbox waits on it. */
static char keeper_tag_sig, keeper_tag_cur, keeper_tag_new, keeper_tag_out;

/* Shells' ends not yet sent (keeper_exited). */
struct keeper_end {
	int64_t id;
	int	status;
};
static struct keeper_end *keeper_outbox;
static size_t keeper_nout, keeper_outcap;

static void
keeper_child_close(struct kchild *c)
{

	if (c->call != -1) {
		keeper_unwatch(c->call);
		close(c->call);
	}
	if (c->event != -1)
		close(c->event);
	c->call = c->event = -1;
}

/* ---- starting a ptyd --------------------------------------------------- */

static void
keeper_exec_child(int call, int event, int bin)
{
	sigset_t set;

	/* First above 5 (fresh numbers, so no move below can land on
	 * another's), then onto 3, 4 (dup2 clears CLOEXEC) and 5. */
	if ((call = fcntl(call, F_DUPFD_CLOEXEC, 6)) == -1 ||
	    (event = fcntl(event, F_DUPFD_CLOEXEC, 6)) == -1 ||
	    (bin = fcntl(bin, F_DUPFD_CLOEXEC, 6)) == -1 ||
	    dup2(call, KW_CALL_FD) == -1 || dup2(event, KW_EVENT_FD) == -1 ||
	    dup3(bin, 5, O_CLOEXEC) == -1)
		_exit(127);
	/* Nothing else of ours: the binary's descriptor (5) goes at the
	 * exec, everything above it now. */
	bin = 5;
	(void)close_range(6, ~0U, 0);
	sigemptyset(&set);
	(void)sigprocmask(SIG_SETMASK, &set, NULL);
	(void)setenv(KW_ENV, "1", 1);
	syscall(SYS_execveat, bin, "", keeper_args, environ, AT_EMPTY_PATH);
	_exit(127);
}

static int
keeper_start(struct kchild *c, int bin, enum kw_mode mode)
{
	int   a[2], b[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, a) == -1)
		return (-1);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, b) == -1) {
		close(a[0]);
		close(a[1]);
		return (-1);
	}
	if ((pid = fork()) == -1) {
		close(a[0]);
		close(a[1]);
		close(b[0]);
		close(b[1]);
		return (-1);
	}
	if (pid == 0)
		keeper_exec_child(a[1], b[1], bin);
	close(a[1]);
	close(b[1]);
	/* Calls are read as they come, never waited for; events are sent
	 * in order, and a ptyd that stops reading them (hung) makes a send
	 * give up after KEEPER_SEND_MS rather than hold the keeper. */
	if (fcntl(a[0], F_SETFL, O_NONBLOCK) == -1 ||
	    setsockopt(b[0], SOL_SOCKET, SO_SNDTIMEO, &keeper_send_tv,
		sizeof(keeper_send_tv)) == -1)
		log_warn("keeper: socket options");
	c->pid = pid;
	c->call = a[0];
	c->event = b[0];
	c->bin = bin;
	c->mode = mode;
	c->state = KC_HELLO;
	c->started = keeper_now();
	c->deadline = c->started + (int64_t)KEEPER_HELLO_MS * 1000;
	keeper_watch(c->call, EPOLLIN,
	    c == &keeper_cur ? &keeper_tag_cur : &keeper_tag_new);
	log_debug("keeper: started ptyd pid %ld", (long)pid);
	return (0);
}

/* Send the serving one (or, during an upgrade, the old one) a note. */
static void
keeper_send(struct kchild *c, const struct kw_msg *m)
{
	if (c->event == -1 || kw_send(c->event, m, NULL, 0) == 0)
		return;
	/* Lost, a ptyd would wait for it for ever (a go, a thaw) while we
	 * think it done: one that cannot be told is ended, and the crash
	 * path starts another. */
	log_warn("keeper: send %s to ptyd %ld; ending it", kw_type_name(m->type),
	    (long)c->pid);
	if (c->pid > 0)
		(void)kill(c->pid, SIGKILL);
}

/*
 * Shells' ends not yet sent.  Never waited for: ptyd may itself be
 * blocked sending us calls (a shutdown hangs up a thousand shells while
 * their ends come back), and each side waiting on the other would hold
 * both; so ends queue here and go out as the event socket takes them.
 */

static void
keeper_outbox_flush(void)
{
	struct kw_msg m;
	size_t	      i = 0;

	while (i < keeper_nout && keeper_cur.event != -1 &&
	    keeper_cur.state == KC_SERVING) {
		kw_init(&m, KW_EXITED, keeper_outbox[i].id);
		m.c = keeper_outbox[i].status;
		if (kw_send_flags(keeper_cur.event, &m, NULL, 0, MSG_DONTWAIT) ==
		    -1) {
			if (errno != EAGAIN)
				log_warn("keeper: telling ptyd of an exit");
			break;
		}
		i++;
	}
	if (i > 0) {
		memmove(keeper_outbox, keeper_outbox + i,
		    (keeper_nout - i) * sizeof(*keeper_outbox));
		keeper_nout -= i;
	}
	if (keeper_cur.event == -1)
		return;
	if (keeper_nout > 0 && keeper_cur.state == KC_SERVING)
		keeper_watch(keeper_cur.event, EPOLLOUT, &keeper_tag_out);
	else
		keeper_unwatch(keeper_cur.event);
}

void
keeper_exited(int64_t id, int status)
{
	/* Kept until a ptyd serves, whichever: one taking over may have
	 * had it in its KW_TERM already, and a second telling is ignored
	 * (the terminal is reaped), where none would leave it running. */
	if (keeper_nout == keeper_outcap) {
		keeper_outcap = keeper_outcap == 0 ? 64 : keeper_outcap * 2;
		keeper_outbox = xreallocarray(keeper_outbox, keeper_outcap,
		    sizeof(*keeper_outbox));
	}
	keeper_outbox[keeper_nout].id = id;
	keeper_outbox[keeper_nout].status = status;
	keeper_nout++;
	keeper_outbox_flush();
}

/* KW_WELCOME and the terminals to c. */
static int
keeper_welcome(struct kchild *c)
{
	struct kw_msg m;
	int	      fds[2] = { keeper_listen, keeper_lock };

	keeper_generation++;
	kw_init(&m, KW_WELCOME, 0);
	m.a = c->mode;
	m.b = keeper_generation;
	m.c = getpid();
	/* A ptyd taking over in an upgrade serves only if it succeeds:
	 * tell it the state it will then be in. */
	m.d = keeper_upgrades + (c->mode == KW_MODE_UPGRADE);
	m.e = keeper_takeovers;
	m.f = c->mode == KW_MODE_UPGRADE ? 0 : keeper_upgrade_failed;
	kw_text(&m, c->mode == KW_MODE_UPGRADE ? "" : keeper_reason);
	if (kw_send(c->event, &m, fds, 2) == -1 ||
	    kterm_send_all(c->event) == -1)
		return (-1);
	c->state = KC_ADOPT;
	c->deadline = keeper_now() + (int64_t)KEEPER_READY_MS * 1000;
	return (0);
}

static void
keeper_pidfile_write(void)
{
	char buf[32];
	int  fd, n;

	if (keeper_pidfile == NULL)
		return;
	fd = open(keeper_pidfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0600);
	if (fd == -1)
		keeper_fatal("pid file");
	n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
	if (write(fd, buf, (size_t)n) != n)
		keeper_fatal("pid file");
	close(fd);
}

static void
keeper_go(struct kchild *c)
{
	struct kw_msg m;

	kw_init(&m, KW_GO, 0);
	keeper_send(c, &m);
	c->state = KC_SERVING;
	c->deadline = 0;
	keeper_outbox_flush();
	if (!keeper_served) {
		keeper_served = 1;
		keeper_pidfile_write();
	}
	if (keeper_ready != -1) {
		if (write(keeper_ready, "r", 1) != 1)
			log_warn("keeper: telling the parent we serve");
		close(keeper_ready);
		keeper_ready = -1;
	}
}

/* ---- upgrade ----------------------------------------------------------- */

static void
keeper_upgrade_fail(const char *why)
{
	struct kw_msg m;

	if (keeper_cur.pid > 0)
		log_warnx("keeper: upgrade failed: %s; ptyd %ld goes on serving",
		    why, (long)keeper_cur.pid);
	else
		log_warnx("keeper: upgrade failed: %s", why);
	if (keeper_new.pid > 0) {
		(void)kill(keeper_new.pid, SIGKILL);
		keeper_new.state = KC_EXITING;
	} else
		keeper_new.state = KC_NONE;
	keeper_child_close(&keeper_new);
	if (keeper_new.bin != -1)
		close(keeper_new.bin);
	keeper_new.bin = -1;
	keeper_new.deadline = 0;
	keeper_upgrades++;
	keeper_upgrade_failed = 1;
	snprintf(keeper_reason, sizeof(keeper_reason), "%s", why);
	if (keeper_cur.state == KC_FREEZING || keeper_cur.state == KC_FROZEN ||
	    keeper_cur.state == KC_SERVING) {
		kw_init(&m, KW_THAW, 0);
		m.d = keeper_upgrades;
		m.f = 1;
		kw_text(&m, why);
		keeper_send(&keeper_cur, &m);
		keeper_cur.state = KC_SERVING;
		keeper_cur.deadline = 0;
		/* Shells that ended while it was frozen. */
		keeper_outbox_flush();
	}
}

static void
keeper_upgrade(void)
{
	char why[300];
	int  bin;

	if (keeper_stopping)
		return;
	if (keeper_cur.state != KC_SERVING || keeper_new.state != KC_NONE) {
		log_warnx("keeper: upgrade asked for while %s; ignored",
		    keeper_new.state != KC_NONE ? "one is under way" :
						  "ptyd is not serving");
		return;
	}
	log_info("keeper: upgrade: starting %s", keeper_path);
	bin = open(keeper_path, O_PATH | O_CLOEXEC);
	if (bin == -1) {
		snprintf(why, sizeof(why), "cannot open the new binary: %s",
		    strerror(errno));
		keeper_upgrade_fail(why);
		return;
	}
	if (keeper_start(&keeper_new, bin, KW_MODE_UPGRADE) == -1) {
		close(bin);
		snprintf(why, sizeof(why), "cannot start it: %s",
		    strerror(errno));
		keeper_upgrade_fail(why);
	}
}

/* The new one said hello: freeze the old one. */
static void
keeper_upgrade_freeze(void)
{
	struct kw_msg m;

	kw_init(&m, KW_FREEZE, 0);
	keeper_new.deadline = 0; /* it said hello; the freeze is timed */
	keeper_send(&keeper_cur, &m);
	keeper_cur.state = KC_FREEZING;
	keeper_cur.deadline = keeper_now() + (int64_t)KEEPER_FREEZE_MS * 1000;
}

/* The new one is ready: the old one goes; GO once it is reaped. */
static void
keeper_upgrade_switch(void)
{
	struct kw_msg m;

	kw_init(&m, KW_EXIT, 0);
	keeper_send(&keeper_cur, &m);
	keeper_cur.state = KC_EXITING;
	keeper_cur.deadline = keeper_now() + (int64_t)KEEPER_EXIT_MS * 1000;
	keeper_new.state = KC_WAITGO;
	keeper_new.deadline = 0;
}

/* The old one is gone: the new one serves. */
static void
keeper_upgrade_done(void)
{
	int64_t took = keeper_now() - keeper_new.started;

	keeper_child_close(&keeper_cur);
	if (keeper_prev_bin != -1)
		close(keeper_prev_bin);
	keeper_prev_bin = keeper_cur.bin;
	keeper_cur = keeper_new;
	keeper_new.state = KC_NONE;
	keeper_new.pid = -1;
	keeper_new.call = keeper_new.event = keeper_new.bin = -1;
	/* The call socket's epoll tag follows the child. */
	keeper_unwatch(keeper_cur.call);
	keeper_watch(keeper_cur.call, EPOLLIN, &keeper_tag_cur);
	keeper_upgrades++;
	keeper_upgrade_failed = 0;
	keeper_reason[0] = '\0';
	keeper_upgraded_at = keeper_now();
	keeper_quick_deaths = 0;
	keeper_go(&keeper_cur);
	log_info("keeper: upgraded: ptyd %ld serves %u terminal(s), hand-over "
		 "%lld ms",
	    (long)keeper_cur.pid, kterm_count(), (long long)(took / 1000));
	if (keeper_stopping && keeper_cur.pid > 0)
		(void)kill(keeper_cur.pid, SIGTERM);
}

/* ---- messages from a ptyd ---------------------------------------------- */

static int
keeper_hello_ok(const struct kw_msg *m, char *why, size_t size)
{
	if (m->type != KW_HELLO) {
		snprintf(why, size, "said %s before hello",
		    kw_type_name(m->type));
		return (0);
	}
	if (m->a != KW_PROTO) {
		snprintf(why, size, "speaks keeper protocol %lld, we %d",
		    (long long)m->a, KW_PROTO);
		return (0);
	}
	/* Its layout must read ours, and ours its: one version apart. */
	if (m->c > TERMHDR_LAYOUT || m->b < TERMHDR_MIN_READER) {
		snprintf(why, size,
		    "cannot share terminal state: it writes layout %lld and "
		    "reads from %lld, ours %d/%d",
		    (long long)m->b, (long long)m->c, TERMHDR_LAYOUT,
		    TERMHDR_MIN_READER);
		return (0);
	}
	return (1);
}

static void
keeper_call(struct kchild *c, const struct kw_msg *m, int *fds, int nfds)
{
	struct kw_msg r;
	char	      id[80], why[300];
	const uint8_t *data;
	size_t	      len;

	switch (m->type) {
	case KW_HELLO:
		snprintf(why, sizeof(why), "said hello twice");
		if (c->state != KC_HELLO || !keeper_hello_ok(m, why,
		    sizeof(why))) {
			if (c->state == KC_HELLO && c == &keeper_new) {
				keeper_upgrade_fail(why);
				return;
			}
			log_warnx("keeper: ptyd %ld: %s", (long)c->pid, why);
			(void)kill(c->pid, SIGKILL);
			c->state = KC_EXITING;
			break;
		}
		if (c == &keeper_new)
			keeper_upgrade_freeze();
		else if (keeper_welcome(c) == -1)
			(void)kill(c->pid, SIGKILL);
		break;
	case KW_ADOPT:
		if (nfds != 2) {
			log_warnx("keeper: adopt without its descriptors");
			break;
		}
		kterm_adopt(m->id, (pid_t)m->a, fds[0], fds[1]);
		return;
	case KW_INPUT:
		kw_get_text(m, id, sizeof(id));
		data = kw_get_data(m, &len);
		kw_init(&r, KW_INPUT_OK, m->id);
		r.b = m->b;
		r.a = kterm_input(m->id, id, data, len, (size_t)m->a);
		if (kw_send(c->call, &r, NULL, 0) == -1)
			log_warn("keeper: answering input");
		break;
	case KW_SIGNAL:
		kterm_signal(m->id, (int)m->a, (int)m->b);
		break;
	case KW_FORGET:
		kterm_forget(m->id);
		break;
	case KW_READY:
		if (c->state != KC_ADOPT)
			break;
		if (c == &keeper_new)
			keeper_upgrade_switch();
		else
			keeper_go(c);
		break;
	case KW_FROZEN:
		if (c == &keeper_cur && c->state == KC_FREEZING &&
		    keeper_new.state == KC_HELLO) {
			c->state = KC_FROZEN;
			c->deadline = 0;
			if (keeper_welcome(&keeper_new) == -1)
				keeper_upgrade_fail("could not hand it the "
						    "terminals");
		}
		break;
	default:
		log_warnx("keeper: unexpected %s from ptyd %ld",
		    kw_type_name(m->type), (long)c->pid);
		break;
	}
	while (nfds > 0)
		close(fds[--nfds]);
}

static void
keeper_read(struct kchild *c)
{
	struct kw_msg m;
	int	      fds[KW_FDS_MAX], nfds, i, r;

	/* A few at a time: input of one ptyd must not starve the rest. */
	for (i = 0; i < 64 && c->call != -1; i++) {
		nfds = KW_FDS_MAX;
		r = kw_recv(c->call, &m, fds, &nfds);
		if (r == 1) {
			keeper_call(c, &m, fds, nfds);
			continue;
		}
		if (r == -1 && errno == EAGAIN)
			return;
		if (r == -1 && errno == EPROTO) {
			log_warnx("keeper: a malformed message from ptyd %ld",
			    (long)c->pid);
			continue;
		}
		/* EOF: it is dying; SIGCHLD says how. */
		keeper_unwatch(c->call);
		return;
	}
}

/* Every call a dead ptyd left in its socket, to the end. */
static void
keeper_drain(struct kchild *c)
{
	int n = -1;

	while (c->call != -1 && ioctl(c->call, FIONREAD, &n) == 0 && n > 0)
		keeper_read(c);
}

/* ---- a ptyd ended ------------------------------------------------------ */

static void
keeper_describe(int status, char *buf, size_t size)
{
	if (WIFSIGNALED(status))
		snprintf(buf, size, "killed by signal %d", WTERMSIG(status));
	else
		snprintf(buf, size, "exited with status %d",
		    WEXITSTATUS(status));
}

static void
keeper_new_died(int status)
{
	char how[64], why[128];

	keeper_describe(status, how, sizeof(how));
	keeper_new.pid = -1;
	keeper_new.deadline = 0;
	if (keeper_new.state == KC_EXITING) {
		/* Killed by keeper_upgrade_fail, which said why. */
		keeper_child_close(&keeper_new);
		keeper_new.state = KC_NONE;
		return;
	}
	if (keeper_new.state == KC_WAITGO) {
		/* Ready, and the old one told to go: nothing to thaw.  The
		 * old one's exit (asked for) then starts a ptyd from the
		 * binary that served, as after a crash. */
		keeper_child_close(&keeper_new);
		close(keeper_new.bin);
		keeper_new.bin = -1;
		keeper_new.state = KC_NONE;
		keeper_upgrades++;
		keeper_upgrade_failed = 1;
		snprintf(keeper_reason, sizeof(keeper_reason),
		    "the new ptyd %s after it took over; the binary that served "
		    "runs again",
		    how);
		log_warnx("keeper: upgrade failed: %s", keeper_reason);
		return;
	}
	snprintf(why, sizeof(why), "the new ptyd %s while taking over", how);
	keeper_upgrade_fail(why);
	keeper_child_close(&keeper_new);
	keeper_new.state = KC_NONE;
}

static void
keeper_cur_died(int status)
{
	char	how[64];
	int64_t now = keeper_now(), delay;
	pid_t	dead;
	int	asked;

	keeper_describe(status, how, sizeof(how));
	/* What it sent before it died still counts: a shell it cloned and
	 * handed over just before (KW_ADOPT) is kept. */
	keeper_drain(&keeper_cur);
	keeper_child_close(&keeper_cur);
	dead = keeper_cur.pid;
	keeper_cur.pid = -1;
	if (keeper_cur.state == KC_EXITING && keeper_new.state == KC_WAITGO) {
		keeper_upgrade_done();
		return;
	}
	if (keeper_new.state == KC_WAITGO) {
		/* Told to go, it died going: the new one serves all the
		 * same. */
		keeper_upgrade_done();
		return;
	}
	/* An exit we asked for (KW_EXIT, an upgrade whose new ptyd then
	 * died) is no stop, whatever its status. */
	asked = keeper_cur.state == KC_EXITING;
	keeper_cur.state = KC_NONE;
	if (keeper_new.state != KC_NONE && keeper_new.state != KC_EXITING)
		/* Died while the new one was on its way: that one is
		 * stopped, and a ptyd from the binary that served takes
		 * over as from any crash. */
		keeper_upgrade_fail("the serving ptyd died during the "
				    "upgrade");
	if (keeper_stopping ||
	    (!asked && WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
		log_info("keeper: ptyd %s; stopping", how);
		keeper_stopping = 1;
		if (keeper_stop_deadline == 0)
			keeper_stop_deadline = now +
			    (int64_t)KEEPER_STOP_MS * 1000;
		kterm_end_all(0);
		return;
	}
	if (!keeper_served) {
		/* The first one never served: a setting or the database is
		 * wrong, which another start will not mend. */
		log_warnx("keeper: ptyd %s before it served", how);
		exit(1);
	}
	/* Died soon after an upgrade: back to the binary before. */
	if (keeper_prev_bin != -1 && keeper_upgraded_at >= 0 &&
	    now - keeper_upgraded_at < KEEPER_PROBATION_US) {
		log_warnx("keeper: the upgraded ptyd %s within %lld s; going "
			  "back to the binary before it",
		    how, (long long)(KEEPER_PROBATION_US / 1000000));
		close(keeper_cur.bin);
		keeper_cur.bin = keeper_prev_bin;
		keeper_prev_bin = -1;
		snprintf(keeper_reason, sizeof(keeper_reason),
		    "the upgraded ptyd %s; back to the binary before", how);
		keeper_upgrade_failed = 1;
	}
	keeper_quick_deaths = now - keeper_cur.started < KEEPER_QUICK_DEATH_US ?
	    keeper_quick_deaths + 1 :
	    0;
	/* 0, 0, 0.25, 0.5, 1, 2, 5 s: a ptyd that dies at once must not
	 * spin, and the first restarts are immediate. */
	delay = keeper_quick_deaths <= 2 ? 0 :
		keeper_quick_deaths >= 7 ? 5000000 :
					  (250000LL << (keeper_quick_deaths - 3));
	log_warnx("keeper: ptyd %ld %s; %u terminal(s) kept, a new one in %lld "
		  "ms",
	    (long)dead, how, kterm_count(),
	    (long long)(delay / 1000));
	keeper_takeovers++;
	keeper_restart_at = now + delay;
}

static void
keeper_reap(void)
{
	int64_t now = keeper_now();
	pid_t	pid;
	int	status;

	for (;;) {
		do
			pid = waitpid(-1, &status, WNOHANG);
		while (pid == -1 && errno == EINTR);
		if (pid <= 0)
			return;
		if (pid == keeper_cur.pid)
			keeper_cur_died(status);
		else if (pid == keeper_new.pid)
			keeper_new_died(status);
		else
			(void)kterm_reaped(pid, status, now);
	}
}

/* ---- deadlines --------------------------------------------------------- */

static void
keeper_deadlines(void)
{
	int64_t now = keeper_now();

	if (keeper_restart_at >= 0 && now >= keeper_restart_at &&
	    keeper_cur.state == KC_NONE && !keeper_stopping) {
		keeper_restart_at = -1;
		if (keeper_start(&keeper_cur, keeper_cur.bin, KW_MODE_CRASH) ==
		    -1) {
			log_warn("keeper: starting ptyd");
			keeper_restart_at = now + 1000000;
		}
	}
	if (keeper_new.deadline != 0 && now >= keeper_new.deadline &&
	    (keeper_new.state == KC_HELLO || keeper_new.state == KC_ADOPT))
		keeper_upgrade_fail(keeper_new.state == KC_HELLO ?
			"the new ptyd did not say hello in time" :
			"the new ptyd did not adopt the terminals in time");
	if (keeper_cur.deadline != 0 && now >= keeper_cur.deadline) {
		keeper_cur.deadline = 0;
		if (keeper_cur.state == KC_FREEZING)
			keeper_upgrade_fail("the serving ptyd did not freeze "
					    "in time");
		else if (keeper_cur.state == KC_EXITING && keeper_cur.pid > 0)
			(void)kill(keeper_cur.pid, SIGKILL);
		else if ((keeper_cur.state == KC_HELLO ||
			     keeper_cur.state == KC_ADOPT) &&
		    keeper_cur.pid > 0) {
			log_warnx("keeper: ptyd %ld did not start in time",
			    (long)keeper_cur.pid);
			(void)kill(keeper_cur.pid, SIGKILL);
		}
	}
	/* Past probation, the binary before is let go. */
	if (keeper_prev_bin != -1 && keeper_upgraded_at >= 0 &&
	    now - keeper_upgraded_at >= KEEPER_PROBATION_US) {
		close(keeper_prev_bin);
		keeper_prev_bin = -1;
	}
	/* A ptyd that does not finish its stop in time (ptyd's own deadline
	 * is 10 s) is killed; the shells left are ended here. */
	if (keeper_stopping && keeper_cur.pid > 0 &&
	    now >= keeper_stop_deadline) {
		log_warnx("keeper: ptyd %ld did not stop in time; killing it",
		    (long)keeper_cur.pid);
		(void)kill(keeper_cur.pid, SIGKILL);
		keeper_stop_deadline = now + 2000000;
	}
	if (keeper_stopping && keeper_cur.pid == -1 && keeper_new.pid == -1) {
		if (kterm_live() == 0)
			keeper_quit = 1;
		else if (now >= keeper_stop_deadline) {
			kterm_end_all(1);
			keeper_stop_deadline = now + 2000000;
		}
	}
}

static int
keeper_timeout(void)
{
	int64_t now = keeper_now(), next = now + 1000000;

	if (keeper_restart_at >= 0 && keeper_restart_at < next)
		next = keeper_restart_at;
	if (keeper_new.deadline != 0 && keeper_new.deadline < next)
		next = keeper_new.deadline;
	if (keeper_cur.deadline != 0 && keeper_cur.deadline < next)
		next = keeper_cur.deadline;
	if (keeper_stopping && keeper_stop_deadline < next)
		next = keeper_stop_deadline;
	if (next <= now)
		return (0);
	return ((int)((next - now + 999) / 1000));
}

/* ---- signals and the loop ---------------------------------------------- */

static void
keeper_stop(void)
{
	if (keeper_stopping)
		return;
	keeper_stopping = 1;
	keeper_restart_at = -1;
	keeper_stop_deadline = keeper_now() + (int64_t)KEEPER_STOP_MS * 1000;
	log_info("keeper: stopping: ptyd ends every shell");
	if (keeper_new.state == KC_WAITGO) {
		/* The old one is on its way out: the new one ends the shells
		 * once it serves (keeper_upgrade_done). */
		return;
	}
	if (keeper_new.pid > 0)
		(void)kill(keeper_new.pid, SIGKILL);
	if (keeper_cur.state == KC_FREEZING || keeper_cur.state == KC_FROZEN)
		keeper_upgrade_fail("stopping");
	if (keeper_cur.pid > 0)
		(void)kill(keeper_cur.pid, SIGTERM);
	else
		kterm_end_all(0);
}

static void
keeper_signal(void)
{
	struct signalfd_siginfo si;

	while (read(keeper_sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGCHLD:
			keeper_reap();
			break;
		case SIGTERM:
		case SIGINT:
			keeper_stop();
			break;
		case SIGUSR1:
		case SIGUSR2:
			keeper_upgrade();
			break;
		case SIGHUP:
			log_reopen();
			if (keeper_cur.pid > 0)
				(void)kill(keeper_cur.pid, SIGHUP);
			break;
		}
	}
	/* A SIGCHLD merged into another's delivery is still reaped. */
	keeper_reap();
}

static void
keeper_loop(void)
{
	struct epoll_event ev[32];
	int		   n, i;

	while (!keeper_quit) {
		n = epoll_wait(keeper_ep, ev, 32, keeper_timeout());
		if (n == -1 && errno != EINTR)
			keeper_fatal("epoll_wait");
		for (i = 0; i < n; i++) {
			if (ev[i].data.ptr == &keeper_tag_sig)
				keeper_signal();
			else if (ev[i].data.ptr == &keeper_tag_cur)
				keeper_read(&keeper_cur);
			else if (ev[i].data.ptr == &keeper_tag_new)
				keeper_read(&keeper_new);
			else if (ev[i].data.ptr == &keeper_tag_out)
				keeper_outbox_flush();
			else
				kterm_writable(ev[i].data.ptr);
		}
		kterm_collect();
		keeper_deadlines();
	}
}

/* ---- start-up ---------------------------------------------------------- */

static int
keeper_fd_arg(const char *s)
{
	char *end;
	long  v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < 0 || v > 65535) {
		fprintf(stderr, "ptyd-keeper: bad descriptor %s\n", s);
		exit(2);
	}
	return ((int)v);
}

static void
keeper_usage(void)
{
	fprintf(stderr,
	    "usage: ptyd-keeper --ptyd PATH --listen-fd N --lock-fd N "
	    "[--ready-fd N] [--pidfile PATH] [--socket PATH] [--log WHERE] "
	    "[--verbose] -- "
	    "ARGS\n(started by ptyd itself: see ptyd(8))\n");
	exit(2);
}

static void
keeper_options(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "ptyd", required_argument, NULL, 'p' },
		{ "listen-fd", required_argument, NULL, 'l' },
		{ "lock-fd", required_argument, NULL, 'k' },
		{ "ready-fd", required_argument, NULL, 'r' },
		{ "pidfile", required_argument, NULL, 'P' },
		{ "socket", required_argument, NULL, 'S' },
		{ "log", required_argument, NULL, 'L' },
		{ "verbose", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 },
	};
	const char *log = "-";
	int	    c, verbose = 0;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			keeper_path = optarg;
			break;
		case 'l':
			keeper_listen = keeper_fd_arg(optarg);
			break;
		case 'k':
			keeper_lock = keeper_fd_arg(optarg);
			break;
		case 'r':
			keeper_ready = keeper_fd_arg(optarg);
			break;
		case 'P':
			keeper_pidfile = optarg;
			break;
		case 'S':
			keeper_socket = optarg;
			break;
		case 'L':
			log = optarg;
			break;
		case 'v':
			verbose = 1;
			break;
		default:
			keeper_usage();
		}
	}
	if (keeper_path == NULL || keeper_listen == -1 || keeper_lock == -1 ||
	    optind >= argc)
		keeper_usage();
	keeper_args = argv + optind;
	log_init(strcmp(log, "-") == 0 ? NULL : log, 0, verbose);
}

static void
keeper_setup(void)
{
	sigset_t set;
	int	 fd;

	/* Ours and nobody else's: the listening socket, the lock and the
	 * ready pipe are CLOEXEC from here on (each ptyd gets copies). */
	(void)fcntl(keeper_listen, F_SETFD, FD_CLOEXEC);
	(void)fcntl(keeper_lock, F_SETFD, FD_CLOEXEC);
	if (keeper_ready != -1)
		(void)fcntl(keeper_ready, F_SETFD, FD_CLOEXEC);
	if (harden_nodump() == -1)
		keeper_fatal("PR_SET_DUMPABLE");
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) == -1)
		keeper_fatal("PR_SET_CHILD_SUBREAPER");
	if ((keeper_ep = epoll_create1(EPOLL_CLOEXEC)) == -1)
		keeper_fatal("epoll");
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	(void)signal(SIGPIPE, SIG_IGN);
	/* Inherited as ignored, children would be reaped by the kernel and
	 * no SIGCHLD come: neither a crash of ptyd nor a shell's end seen. */
	(void)signal(SIGCHLD, SIG_DFL);
	if (sigprocmask(SIG_BLOCK, &set, NULL) == -1 ||
	    (keeper_sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) ==
		-1)
		keeper_fatal("signalfd");
	keeper_watch(keeper_sfd, EPOLLIN, &keeper_tag_sig);
	if ((fd = open(keeper_path, O_PATH | O_CLOEXEC)) == -1)
		keeper_fatal(keeper_path);
	if (keeper_start(&keeper_cur, fd, KW_MODE_FRESH) == -1)
		keeper_fatal("starting ptyd");
}

int
main(int argc, char **argv)
{
	/* What ptyd kept of its environment, copied, the bytes /proc shows
	 * zeroed (DESIGN 6): each ptyd we start gets the copy. */
	harden_env(&harden_daemon_env);
	keeper_options(argc, argv);
	keeper_setup();
	keeper_loop();
	if (keeper_pidfile != NULL)
		(void)unlink(keeper_pidfile);
	/* The socket is ours to the end: connections queued in it are
	 * refused from now on, and the next ptyd binds afresh. */
	if (keeper_socket != NULL)
		(void)unlink(keeper_socket);
	log_info("keeper: exited");
	return (0);
}
