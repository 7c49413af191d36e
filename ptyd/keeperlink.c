/*
 * keeperlink.c -- ptyd's side of ptyd-keeper (keeperlink.h, DESIGN 10).
 *
 * The call socket (fd 3) is used in one direction, synchronously: only
 * KW_INPUT waits for its answer, which the keeper writes before anything
 * else on that socket, so the wait cannot read anything but it.  The
 * keeper is one local process doing nothing slow; the wait is bounded all
 * the same (KEEPERLINK_CALL_MS, below ptyd.fcgi's own deadline for a
 * request, so that the client hears our 503 rather than ptyd.fcgi's), and
 * a keeper that does not answer fails that input only (its retry, with
 * its input_id, is safe).  The loop stands still meanwhile: a keeper
 * that does not answer is a keeper stopped or starved, not a load.
 *
 * Frozen (KW_FREEZE, an upgrade under way): the mirror is flushed whole,
 * KW_FROZEN is sent, and this process then waits on the event socket and
 * nothing else: no pty is read, no request or viewer served, no timer
 * run, so the ptyd taking over finds every header as we left it.  KW_THAW
 * (the upgrade failed) returns to the loop as if nothing happened; KW_EXIT
 * ends the process at once, writing nothing more anywhere (the database
 * is the new ptyd's).  If the keeper goes away, every shell is ended
 * cleanly (SIGTERM to ourselves: the shutdown path) and their ends are
 * watched through pidfds, since the keeper can no longer tell us.
 */
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ev.h"
#include "frame.h"
#include "keeperlink.h"
#include "listen.h"
#include "log.h"
#include "mirror.h"
#include "record.h"
#include "ptyd.h"
#include "term.h"
#include "termhdr.h"
#include "xmalloc.h"

#define KEEPERLINK_START_MS 10000
#define KEEPERLINK_CALL_MS  3000

static int	      kl_under = -1;
static int	      kl_up;
static struct ev_io   kl_io;
static enum kw_mode   kl_mode;
static struct kadopt *kl_terms;
static size_t	      kl_nterms;
static int32_t	      kl_keeper_pid;
static uint32_t	      kl_generation, kl_upgrades, kl_takeovers;
static int	      kl_failed;
static char	      kl_reason[PROTO_ERRMSG_MAX + 1];

int
keeperlink_under(void)
{
	const char *v;

	if (kl_under == -1) {
		v = getenv(KW_ENV);
		kl_under = v != NULL && strcmp(v, "1") == 0;
	}
	return (kl_under);
}

int
keeperlink_up(void)
{
	return (kl_up);
}

enum kw_mode
keeperlink_mode(void)
{
	return (kl_mode);
}

enum term_event
keeperlink_mode_event(void)
{
	switch (kl_mode) {
	case KW_MODE_CRASH:
		return (TERM_EV_TAKEOVER);
	case KW_MODE_UPGRADE:
		return (TERM_EV_UPGRADE);
	case KW_MODE_FRESH:
		break;
	}
	return (TERM_EV_START);
}

static void
kl_recv(struct kw_msg *m, int *fds, int *nfds, const char *what)
{
	int r;

	r = kw_recv_wait(KW_EVENT_FD, m, fds, nfds, KEEPERLINK_START_MS);
	if (r == 0)
		fatalx("keeper: gone while %s", what);
	if (r == -1)
		fatal("keeper: %s", what);
}

static void
kl_welcome(const struct kw_msg *m)
{
	kl_mode = (enum kw_mode)m->a;
	kl_generation = (uint32_t)m->b;
	kl_keeper_pid = (int32_t)m->c;
	kl_upgrades = (uint32_t)m->d;
	kl_takeovers = (uint32_t)m->e;
	kl_failed = m->f != 0;
	kw_get_text(m, kl_reason, sizeof(kl_reason));
}

void
keeperlink_hello(int *listen_fd, int *lock_fd)
{
	static const struct timeval call_timeout = {
		.tv_sec = KEEPERLINK_CALL_MS / 1000,
		.tv_usec = (KEEPERLINK_CALL_MS % 1000) * 1000,
	};
	struct kw_msg *m = xmalloc(sizeof(*m));
	int	       fds[KW_FDS_MAX], nfds;

	/* Nonblocking: the loop reads it and must never wait on it (every
	 * wait here polls first). */
	if (fcntl(KW_EVENT_FD, F_SETFL, O_NONBLOCK) == -1)
		fatal("keeper: fd %d", KW_EVENT_FD);
	/* The call socket stays blocking; an input's answer is waited for
	 * in its recvmsg alone (keeperlink_input), bounded by this. */
	if (setsockopt(KW_CALL_FD, SOL_SOCKET, SO_RCVTIMEO, &call_timeout,
		sizeof(call_timeout)) == -1)
		fatal("keeper: fd %d", KW_CALL_FD);
	kw_init(m, KW_HELLO, 0);
	m->a = KW_PROTO;
	m->b = TERMHDR_LAYOUT;
	m->c = TERMHDR_MIN_READER;
	if (kw_send(KW_CALL_FD, m, NULL, 0) == -1)
		fatal("keeper: hello");
	nfds = KW_FDS_MAX;
	kl_recv(m, fds, &nfds, "waiting for its welcome");
	if (m->type != KW_WELCOME || nfds != 2)
		fatalx("keeper: %s instead of a welcome", kw_type_name(m->type));
	kl_welcome(m);
	*listen_fd = fds[0];
	*lock_fd = fds[1];
	for (;;) {
		nfds = KW_FDS_MAX;
		kl_recv(m, fds, &nfds, "handing over the terminals");
		if (m->type == KW_TERMS_END)
			break;
		if (m->type != KW_TERM || nfds != 2)
			fatalx("keeper: %s among the terminals",
			    kw_type_name(m->type));
		kl_terms = xreallocarray(kl_terms, kl_nterms + 1,
		    sizeof(*kl_terms));
		kl_terms[kl_nterms].id = m->id;
		kl_terms[kl_nterms].pid = (pid_t)m->a;
		kl_terms[kl_nterms].exited = m->b != 0;
		kl_terms[kl_nterms].status = (int)m->c;
		kl_terms[kl_nterms].master = fds[0];
		kl_terms[kl_nterms].memfd = fds[1];
		kl_nterms++;
	}
	free(m);
	kl_up = 1;
}

struct kadopt *
keeperlink_terms(size_t *n)
{
	*n = kl_nterms;
	return (kl_terms);
}

void
keeperlink_ready(void)
{
	struct kw_msg *m = xmalloc(sizeof(*m));
	int	       r;

	kw_init(m, KW_READY, 0);
	if (kw_send(KW_CALL_FD, m, NULL, 0) == -1)
		fatal("keeper: ready");
	/* An upgrade waits here for the old ptyd to be gone: unbounded,
	 * since the keeper decides, and it always answers (or goes). */
	do
		r = kw_recv_wait(KW_EVENT_FD, m, NULL, NULL, -1);
	while (r == 1 && m->type != KW_GO && m->type != KW_EXIT);
	if (r != 1 || m->type == KW_EXIT)
		_exit(0); /* not taken: nothing of ours was written */
	free(m);
}

/* ---- later messages ---------------------------------------------------- */

static void
kl_gone(void)
{
	if (!kl_up)
		return;
	kl_up = 0;
	ev_io_del(&kl_io);
	log_warnx("keeper: gone; ending every shell");
	term_keeper_gone(ev_now());
	(void)kill(getpid(), SIGTERM);
}

static void
kl_thaw(const struct kw_msg *m)
{
	char detail[PROTO_ERRMSG_MAX + 64];

	kl_upgrades = (uint32_t)m->d;
	kl_failed = m->f != 0;
	kw_get_text(m, kl_reason, sizeof(kl_reason));
	if (!kl_failed)
		return;
	log_warnx("upgrade failed: %s; serving on", kl_reason);
	snprintf(detail, sizeof(detail), "%s; pid %ld serves on", kl_reason,
	    (long)getpid());
	mirror_daemon_event(ev_now(), TERM_EV_UPGRADE_FAILED, detail);
}

static void
kl_freeze(void)
{
	struct kw_msg *m = xmalloc(sizeof(*m));
	int	       r;

	log_info("upgrade: freezing for the new ptyd");
	rec_freeze(); /* its parts' ends in the flush below */
	mirror_flush(ev_now());
	kw_init(m, KW_FROZEN, 0);
	if (kw_send(KW_CALL_FD, m, NULL, 0) == -1)
		log_warn("keeper: frozen");
	for (;;) {
		r = kw_recv_wait(KW_EVENT_FD, m, NULL, NULL, -1);
		if (r == 1 && m->type == KW_EXIT) {
			log_info("upgrade: handed over; exiting");
			_exit(0);
		}
		if (r == 1 && m->type == KW_THAW) {
			kl_thaw(m);
			rec_thaw(ev_now());
			break;
		}
		if (r == 1)
			continue; /* nothing else is for a frozen ptyd */
		if (r == -1 && errno == EPROTO)
			continue;
		free(m);
		kl_gone();
		return;
	}
	free(m);
}

/*
 * A freeze first stops accepting (what connects from now on waits in the
 * backlog for the next ptyd) and lets one more loop turn serve what the
 * connections already accepted have sent: a request taken off the
 * backlog and never answered would be reset when we exit.  Then the
 * freeze proper, at the end of that turn, outside any callback.
 */
static struct ev_defer kl_freeze_defer;
static int	       kl_freeze_turns;
static int	       kl_freezing; /* begun, not yet frozen */

static void
kl_freeze_cb(void *arg)
{
	(void)arg;
	if (kl_freeze_turns-- > 0) {
		ev_defer_next(&kl_freeze_defer);
		return;
	}
	kl_freezing = 0;
	kl_freeze();
	listen_pause(0);
}

static void
kl_freeze_begin(void)
{
	listen_pause(1);
	kl_freezing = 1;
	kl_freeze_turns = 1;
	ev_defer_init(&kl_freeze_defer, kl_freeze_cb, NULL);
	ev_defer_next(&kl_freeze_defer);
}

static void
kl_event(const struct kw_msg *m)
{
	struct term *t;

	switch (m->type) {
	case KW_EXITED:
		if ((t = term_find_id(m->id)) != NULL)
			term_child_exited(t, (int)m->c, ev_now());
		break;
	case KW_FREEZE:
		kl_freeze_begin();
		break;
	case KW_THAW:
		/* The upgrade failed before our freeze began (its new ptyd
		 * died during the turn we let run): no freeze then. */
		if (kl_freezing) {
			ev_defer_cancel(&kl_freeze_defer);
			kl_freezing = 0;
			listen_pause(0);
		}
		kl_thaw(m);
		break;
	case KW_EXIT:
		/* Told to go without a freeze: the keeper is stopping an
		 * upgrade's loser, which never served. */
		_exit(0);
	default:
		log_warnx("keeper: unexpected %s", kw_type_name(m->type));
		break;
	}
}

static void
kl_event_cb(int fd, uint32_t events, void *arg)
{
	struct kw_msg *m = xmalloc(sizeof(*m));
	int	       i, r;

	(void)fd;
	(void)events;
	(void)arg;
	for (i = 0; i < 64 && kl_up; i++) {
		r = kw_recv(KW_EVENT_FD, m, NULL, NULL);
		if (r == 1) {
			kl_event(m);
			continue;
		}
		if (r == -1 && (errno == EAGAIN || errno == EPROTO))
			break;
		kl_gone();
	}
	free(m);
}

void
keeperlink_start(void)
{
	/* The descriptors of adopted terminals are the terminals' now. */
	free(kl_terms);
	kl_terms = NULL;
	kl_nterms = 0;
	if (ev_io_add(&kl_io, KW_EVENT_FD, EPOLLIN, kl_event_cb, NULL) == -1)
		fatal("keeper: epoll");
}

/* ---- calls ------------------------------------------------------------- */

int
keeperlink_adopt(struct term *t, int memfd)
{
	struct kw_msg m;
	int	      fds[2] = { t->master, memfd };

	kw_init(&m, KW_ADOPT, t->id);
	m.a = t->pid;
	if (!kl_up || kw_send(KW_CALL_FD, &m, fds, 2) == -1) {
		log_warn("term %s: handing it to the keeper", t->sid);
		return (-1);
	}
	return (0);
}

/*
 * Each call carries a number its answer repeats (b): an answer that comes
 * after its call gave up waiting is recognised and dropped, never taken
 * for the next call's.  A keeper that does not answer in time fails that
 * input only (KW_IN_SLOW: the client's retry, with its id, is safe); one
 * that is gone (EOF) ends us.  The answer is waited for in one blocking
 * recvmsg (SO_RCVTIMEO, keeperlink_hello), not a poll and then a read: a
 * keystroke's answer is on the path of its echo, and a late answer to an
 * earlier call (the only other thing this socket can hold) is rare
 * enough to wait for the next one by the deadline.
 */
enum kw_input
keeperlink_input(struct term *t, const char *input_id, const uint8_t *data,
    size_t len)
{
	static struct kw_msg m;
	static int64_t	     seq;
	int64_t		     deadline, left;
	int		     r;

	if (!kl_up)
		return (KW_IN_GONE);
	kw_init(&m, KW_INPUT, t->id);
	m.a = (int64_t)ptyd_conf.input_limit;
	m.b = ++seq;
	kw_text(&m, input_id);
	if (kw_data(&m, data, len) == -1 ||
	    kw_send(KW_CALL_FD, &m, NULL, 0) == -1) {
		log_warn("term %s: input to the keeper", t->sid);
		return (KW_IN_GONE);
	}
	deadline = ev_clock() + (int64_t)KEEPERLINK_CALL_MS * 1000;
	r = kw_recv(KW_CALL_FD, &m, NULL, NULL);
	for (;;) {
		if (r == 1 && m.type == KW_INPUT_OK && m.b == seq)
			return ((enum kw_input)m.a);
		if (r == 1 || (r == -1 && errno == EPROTO)) {
			/* A late answer to an earlier call. */
			left = (deadline - ev_clock()) / 1000;
			r = kw_recv_wait(KW_CALL_FD, &m, NULL, NULL,
			    left > 0 ? (int)left : 0);
			continue;
		}
		if (r == 0 || (errno != ETIMEDOUT && errno != EAGAIN)) {
			kl_gone();
			return (KW_IN_GONE);
		}
		log_warnx("term %s: the keeper did not answer an input in %d "
			  "ms",
		    t->sid, KEEPERLINK_CALL_MS);
		return (KW_IN_SLOW);
	}
}

void
keeperlink_signal(struct term *t, int sig, int group)
{
	struct kw_msg m;

	kw_init(&m, KW_SIGNAL, t->id);
	m.a = sig;
	m.b = group;
	if (kw_send(KW_CALL_FD, &m, NULL, 0) == -1)
		log_warn("term %s: signal through the keeper", t->sid);
}

/*
 * A terminal is let go of only once its last row is in the database: a
 * ptyd killed before that finds it still held, and writes the row itself,
 * where a terminal the keeper had already forgotten would be marked lost.
 */
static int64_t *kl_forgets;
static size_t	kl_nforgets, kl_forgetcap;

void
keeperlink_forget(struct term *t)
{
	if (!kl_up)
		return;
	if (kl_nforgets == kl_forgetcap) {
		kl_forgetcap = kl_forgetcap == 0 ? 64 : kl_forgetcap * 2;
		kl_forgets = xreallocarray(kl_forgets, kl_forgetcap,
		    sizeof(*kl_forgets));
	}
	kl_forgets[kl_nforgets++] = t->id;
}

void
keeperlink_written(void)
{
	struct kw_msg m;
	size_t	      i;

	for (i = 0; i < kl_nforgets && kl_up; i++) {
		kw_init(&m, KW_FORGET, kl_forgets[i]);
		if (kw_send(KW_CALL_FD, &m, NULL, 0) == -1)
			log_warn("keeper: forget");
	}
	kl_nforgets = 0;
}

void
keeperlink_stats(struct msg_stats_reply *r)
{
	r->keeper_pid = kl_up ? kl_keeper_pid : 0;
	r->generation = kl_generation;
	r->upgrades = kl_upgrades;
	r->upgrade_failed = (uint8_t)kl_failed;
	snprintf(r->upgrade_reason, sizeof(r->upgrade_reason), "%s",
	    kl_reason);
	r->takeovers = kl_takeovers;
}
