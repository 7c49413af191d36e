/*
 * kterm.c -- the terminals the keeper holds (keeper.h).
 *
 * Owns: for each terminal ptyd handed over (KW_ADOPT), its pty master and
 * memfd, the shell's pid and, once reaped, its wait status; the window of
 * input ids it accepted and the input the pty has not taken yet.  The
 * keeper is the shells' parent, so it alone reaps them, and a shell's pid
 * (and group) cannot be reused before it has: a signal ptyd asks for
 * (KW_SIGNAL) goes to the shell only while it is unreaped, which closes
 * the race a ptyd signalling by pid would have.  Input goes through here
 * for the same reason it is exactly once: the id is checked and recorded
 * and the bytes queued in one process that no ptyd crash interrupts.
 *
 * A shell can end before its KW_ADOPT arrives (ptyd clones it with
 * CLONE_PARENT and sends the message right after); its status waits in
 * kterm_early until then.
 */
#include <sys/epoll.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "keeper.h"
#include "log.h"
#include "once.h"
#include "xmalloc.h"

#define KTERM_BUCKETS 1024
#define KTERM_EARLY   64
#define KTERM_EARLY_TTL (10LL * 1000000) /* us */

struct kterm {
	struct kterm *next; /* hash chain by id */
	int64_t	      id;
	pid_t	      pid;
	int	      master;
	int	      memfd;
	int	      reaped;
	int	      status;
	struct once   once;
	uint8_t	     *in; /* input the pty has not taken */
	size_t	      inlen;
	size_t	      incap;
	int	      watched; /* master in epoll for EPOLLOUT */
};

static struct kterm *kterm_hash[KTERM_BUCKETS];
/* Let go of, freed after the loop's batch (its events may name them). */
static struct kterm *kterm_dead;
static unsigned int  kterm_n;

static struct {
	pid_t	pid;
	int	status;
	int64_t at;
} kterm_early[KTERM_EARLY];

static int64_t
kterm_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
}

static struct kterm **
kterm_slot(int64_t id)
{
	return (&kterm_hash[(uint64_t)id % KTERM_BUCKETS]);
}

static struct kterm *
kterm_find(int64_t id)
{
	struct kterm *kt;

	for (kt = *kterm_slot(id); kt != NULL; kt = kt->next)
		if (kt->id == id)
			return (kt);
	return (NULL);
}

static struct kterm *
kterm_find_pid(pid_t pid)
{
	struct kterm *kt;
	size_t	      i;

	for (i = 0; i < KTERM_BUCKETS; i++)
		for (kt = kterm_hash[i]; kt != NULL; kt = kt->next)
			if (kt->pid == pid && !kt->reaped)
				return (kt);
	return (NULL);
}

/*
 * An early status is the adopted shell's only if that pid is no child of
 * ours now: a pid reaped and already given to a new shell of ours (a job
 * a shell left behind is reaped here too) is running, and its entry is
 * another process's.
 */
static int
kterm_early_valid(pid_t pid)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == -1)
		return (errno == ECHILD);
	return (0);
}

void
kterm_adopt(int64_t id, pid_t pid, int master, int memfd)
{
	struct kterm *kt;
	size_t	      i;

	if (kterm_find(id) != NULL) {
		log_warnx("terminal %lld adopted twice", (long long)id);
		close(master);
		close(memfd);
		return;
	}
	kt = xcalloc(1, sizeof(*kt));
	kt->id = id;
	kt->pid = pid;
	kt->master = master;
	kt->memfd = memfd;
	for (i = 0; i < KTERM_EARLY; i++)
		if (kterm_early[i].pid == pid) {
			/* Taken once, and only if it is this shell's (not aged
			 * out, and the pid no child of ours now). */
			kterm_early[i].pid = 0;
			if (kterm_now() - kterm_early[i].at > KTERM_EARLY_TTL ||
			    !kterm_early_valid(pid))
				continue;
			kt->reaped = 1;
			kt->status = kterm_early[i].status;
			keeper_exited(id, kt->status);
			break;
		}
	kt->next = *kterm_slot(id);
	*kterm_slot(id) = kt;
	kterm_n++;
}

static void
kterm_input_drop(struct kterm *kt)
{
	free(kt->in);
	kt->in = NULL;
	kt->inlen = kt->incap = 0;
	if (kt->watched) {
		keeper_unwatch(kt->master);
		kt->watched = 0;
	}
}

/* Write what is queued; keep EPOLLOUT only while something is. */
static void
kterm_flush(struct kterm *kt)
{
	ssize_t r;

	while (kt->inlen > 0) {
		r = write(kt->master, kt->in, kt->inlen);
		if (r > 0) {
			memmove(kt->in, kt->in + r, kt->inlen - (size_t)r);
			kt->inlen -= (size_t)r;
			continue;
		}
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1 && errno == EAGAIN)
			break;
		/* The slave is gone: nobody will read it. */
		kterm_input_drop(kt);
		return;
	}
	if (kt->inlen > 0 && !kt->watched) {
		keeper_watch(kt->master, EPOLLOUT, kt);
		kt->watched = 1;
	} else if (kt->inlen == 0 && kt->watched) {
		keeper_unwatch(kt->master);
		kt->watched = 0;
	}
}

void
kterm_writable(struct kterm *kt)
{
	if (kt->master != -1) /* not let go of earlier in this batch */
		kterm_flush(kt);
}

enum kw_input
kterm_input(int64_t id, const char *input_id, const uint8_t *data,
    size_t len, size_t limit)
{
	struct kterm *kt = kterm_find(id);

	if (kt == NULL || kt->master == -1)
		return (KW_IN_GONE);
	if (*input_id != '\0' && once_seen(&kt->once, input_id))
		return (KW_IN_DUPLICATE);
	if (kt->inlen + len > limit)
		return (KW_IN_FULL);
	if (len == 0) {
		if (*input_id != '\0')
			once_add(&kt->once, input_id);
		return (KW_IN_ACCEPTED);
	}
	if (kt->inlen + len > kt->incap) {
		kt->incap = kt->inlen + len;
		kt->in = xreallocarray(kt->in, kt->incap, 1);
	}
	memcpy(kt->in + kt->inlen, data, len);
	kt->inlen += len;
	/* Recorded with the bytes queued, in one step no ptyd can split. */
	if (*input_id != '\0')
		once_add(&kt->once, input_id);
	kterm_flush(kt);
	return (KW_IN_ACCEPTED);
}

void
kterm_signal(int64_t id, int sig, int group)
{
	struct kterm *kt = kterm_find(id);

	/* Unreaped: the pid, and the group it leads, are still its own. */
	if (kt == NULL || kt->reaped || kt->pid <= 0)
		return;
	(void)kill(group ? -kt->pid : kt->pid, sig);
}

static void
kterm_free(struct kterm *kt)
{
	kterm_input_drop(kt);
	if (kt->master != -1)
		close(kt->master);
	close(kt->memfd);
	kt->master = kt->memfd = -1;
	once_free(&kt->once);
	kt->next = kterm_dead;
	kterm_dead = kt;
}

void
kterm_collect(void)
{
	struct kterm *kt;

	while ((kt = kterm_dead) != NULL) {
		kterm_dead = kt->next;
		free(kt);
	}
}

void
kterm_forget(int64_t id)
{
	struct kterm **pp, *kt;

	for (pp = kterm_slot(id); (kt = *pp) != NULL; pp = &kt->next)
		if (kt->id == id) {
			*pp = kt->next;
			kterm_n--;
			/* A shell still running when ptyd lets go (a start
			 * that failed after the clone): it goes with its pty. */
			if (!kt->reaped && kt->pid > 0) {
				(void)kill(-kt->pid, SIGHUP);
				(void)kill(kt->pid, SIGKILL);
			}
			kterm_free(kt);
			return;
		}
}

int
kterm_reaped(pid_t pid, int status, int64_t now)
{
	struct kterm *kt = kterm_find_pid(pid);
	size_t	      i, slot = 0;

	if (kt != NULL) {
		kt->reaped = 1;
		kt->status = status;
		keeper_exited(kt->id, status);
		return (1);
	}
	/* Maybe a shell whose KW_ADOPT is on its way: keep its status a
	 * while (jobs a shell left behind land here too, and age out). */
	for (i = 0; i < KTERM_EARLY; i++) {
		if (kterm_early[i].pid == 0 ||
		    now - kterm_early[i].at > KTERM_EARLY_TTL) {
			slot = i;
			break;
		}
		if (kterm_early[i].at < kterm_early[slot].at)
			slot = i;
	}
	kterm_early[slot].pid = pid;
	kterm_early[slot].status = status;
	kterm_early[slot].at = now;
	return (0);
}

int
kterm_send_all(int sock)
{
	struct kw_msg m;
	struct kterm *kt;
	size_t	      i;
	int	      fds[2];

	for (i = 0; i < KTERM_BUCKETS; i++)
		for (kt = kterm_hash[i]; kt != NULL; kt = kt->next) {
			kw_init(&m, KW_TERM, kt->id);
			m.a = kt->pid;
			m.b = kt->reaped;
			m.c = kt->status;
			fds[0] = kt->master;
			fds[1] = kt->memfd;
			if (kw_send(sock, &m, fds, 2) == -1)
				return (-1);
		}
	kw_init(&m, KW_TERMS_END, 0);
	return (kw_send(sock, &m, NULL, 0));
}

unsigned int
kterm_count(void)
{
	return (kterm_n);
}

unsigned int
kterm_live(void)
{
	struct kterm *kt;
	unsigned int  n = 0;
	size_t	      i;

	for (i = 0; i < KTERM_BUCKETS; i++)
		for (kt = kterm_hash[i]; kt != NULL; kt = kt->next)
			n += !kt->reaped;
	return (n);
}

void
kterm_end_all(int hard)
{
	struct kterm *kt;
	size_t	      i;

	for (i = 0; i < KTERM_BUCKETS; i++)
		for (kt = kterm_hash[i]; kt != NULL; kt = kt->next) {
			if (kt->reaped || kt->pid <= 0)
				continue;
			if (hard) {
				(void)kill(-kt->pid, SIGKILL);
				(void)kill(kt->pid, SIGKILL);
			} else {
				(void)kill(-kt->pid, SIGHUP);
				(void)kill(-kt->pid, SIGCONT);
			}
		}
}
