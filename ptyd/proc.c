/*
 * proc.c -- find and end what a terminal leaves behind.
 *
 * Owns: reading /proc for ptyd's children and their subtrees, signalling
 * those attributed to a terminal, and the pending SIGKILL passes (one
 * small struct each, on a timer).  Does not own: reaping (term.c).
 *
 * Cost: one read of ptyd's children list per sweep, and one /proc stat per
 * child that is not a live shell (skip()), so a sweep is cheap however many
 * terminals are alive.
 *
 * Identity: the delayed SIGKILL pass acts only on the processes the first
 * pass signalled, named by (pid, start time), and on what they forked
 * since.  Matching by tty or session again 1.5 s later would hit a newer
 * terminal that was given the same /dev/pts/N, or a new shell whose pid
 * (its session id) reuses the dead one's.
 */
#include <sys/queue.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ev.h"
#include "keeperlink.h"
#include "log.h"
#include "proc.h"
#include "ptyd.h"
#include "xmalloc.h"

#define PROC_MAX_VICTIMS 4096

/*
 * A process by identity: a pid alone may name another process by the time
 * it is used again, but (pid, start time) names one process for good.
 */
struct proc_victim {
	pid_t		   pid;
	unsigned long long start; /* field 22 of /proc/PID/stat */
};

/*
 * A pending SIGKILL pass: exactly the processes the SIGHUP pass signalled,
 * sorted by pid.  It never matches by session or tty again: by then the
 * pty may belong to a newer terminal and the session id may be a new
 * shell's pid.
 */
struct sweep {
	LIST_ENTRY(sweep) entry;
	pid_t session; /* for the log only */
	int (*skip)(pid_t);
	struct proc_victim *victims;
	int		    nvictims;
	struct ev_timer	    timer;
};
static LIST_HEAD(, sweep) proc_sweeps = LIST_HEAD_INITIALIZER(proc_sweeps);

struct proc_info {
	pid_t		   ppid;
	pid_t		   pgrp;
	pid_t		   session;
	unsigned long long start;
};

/* Read a small /proc file into buf; returns bytes or -1. */
static ssize_t
proc_read(const char *path, char *buf, size_t size)
{
	ssize_t n, total = 0;
	int	fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return (-1);
	while ((size_t)total < size - 1) {
		n = read(fd, buf + total, size - 1 - (size_t)total);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		total += n;
	}
	close(fd);
	buf[total] = '\0';
	return (total);
}

static int
proc_info(pid_t pid, struct proc_info *pi)
{
	char	    path[64], buf[1024];
	const char *f[23], *p;
	char	   *e;
	int	    i;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if (proc_read(path, buf, sizeof(buf)) <= 0)
		return (-1);
	/* comm (field 2) may hold spaces and parentheses: the fields that
	 * follow start after the last ')', one space before each. */
	if ((p = strrchr(buf, ')')) == NULL)
		return (-1);
	for (i = 3; i <= 22; i++) {
		if ((p = strchr(p, ' ')) == NULL)
			return (-1);
		f[i] = ++p;
	}
	pi->ppid = (pid_t)strtol(f[4], NULL, 10);
	pi->pgrp = (pid_t)strtol(f[5], NULL, 10);
	pi->session = (pid_t)strtol(f[6], NULL, 10);
	errno = 0;
	pi->start = strtoull(f[22], &e, 10);
	if (e == f[22] || errno != 0)
		return (-1);
	return (0);
}

int
proc_stat(pid_t pid, pid_t *ppid, pid_t *pgrp, pid_t *session)
{
	struct proc_info pi;

	if (proc_info(pid, &pi) == -1)
		return (-1);
	if (ppid != NULL)
		*ppid = pi.ppid;
	if (pgrp != NULL)
		*pgrp = pi.pgrp;
	if (session != NULL)
		*session = pi.session;
	return (0);
}

int
proc_children(pid_t pid, pid_t *out, int max)
{
	char	       path[PATH_MAX], buf[8192];
	struct dirent *de;
	DIR	      *d;
	char	      *p, *e;
	long	       v;
	int	       n = 0;

	snprintf(path, sizeof(path), "/proc/%ld/task", (long)pid);
	if ((d = opendir(path)) == NULL)
		return (-1);
	while ((de = readdir(d)) != NULL && n < max) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/task/%s/children",
		    (long)pid, de->d_name);
		if (proc_read(path, buf, sizeof(buf)) <= 0)
			continue;
		for (p = buf; n < max; p = e) {
			v = strtol(p, &e, 10);
			if (e == p)
				break;
			if (v > 0)
				out[n++] = (pid_t)v;
		}
	}
	closedir(d);
	return (n);
}

/* Whether pid holds an fd on the character device tty. */
static int
proc_holds_tty(pid_t pid, dev_t tty)
{
	char	       path[64], fpath[PATH_MAX];
	struct dirent *de;
	struct stat    st;
	DIR	      *d;
	int	       found = 0;

	if (tty == 0) /* no tty to match: the caller's master is gone */
		return (0);
	snprintf(path, sizeof(path), "/proc/%ld/fd", (long)pid);
	if ((d = opendir(path)) == NULL)
		return (0);
	while (!found && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(fpath, sizeof(fpath), "%s/%s", path, de->d_name);
		if (stat(fpath, &st) == 0 && S_ISCHR(st.st_mode) &&
		    st.st_rdev == tty)
			found = 1;
	}
	closedir(d);
	return (found);
}

/*
 * Whether a process is in the session or process group of a live shell:
 * then it belongs to a running terminal and is never signalled, whatever
 * else matches.
 */
static int
proc_is_live(const struct proc_info *pi, int (*skip)(pid_t))
{
	return (skip != NULL && (skip(pi->session) || skip(pi->pgrp)));
}

/*
 * A pidfd on pid, so that the signal reaches the process that was checked
 * and not one that took its pid in between; -1 with errno ESRCH if it is
 * gone, or -1 with another errno (no pidfds, out of fds) and the caller
 * falls back to kill(2).
 */
int
proc_pidfd_open(pid_t pid)
{
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_send_signal)
	return ((int)syscall(SYS_pidfd_open, pid, 0));
#else
	(void)pid;
	errno = ENOSYS;
	return (-1);
#endif
}

static void
proc_send(int pidfd, pid_t pid, int sig)
{
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_send_signal)
	if (pidfd != -1) {
		(void)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
		return;
	}
#endif
	(void)kill(pid, sig);
}

static int
proc_victim_cmp(const void *a, const void *b)
{
	const struct proc_victim *va = a, *vb = b;

	return (va->pid < vb->pid ? -1 : va->pid > vb->pid);
}

/*
 * Signal q[0..nq) and every descendant found on the way (breadth first,
 * appended to q, at most max entries in all).  Each entry is checked just
 * before it is signalled: still the process it was (same start time) and
 * not in a live shell's session or process group; entries that fail are
 * dropped.  A child is listed before its parent is signalled (a killed
 * parent's children move to ptyd at once) and taken only if it still
 * names that parent.  Children already in known (sorted by pid; a delayed
 * pass's own list) are in q already and are not added twice.  Returns how
 * many entries remain at the front of q, every one of them signalled.
 */
static int
proc_walk(struct proc_victim *q, int nq, int max,
    const struct proc_victim *known, int nknown, int (*skip)(pid_t),
    int kill_now)
{
	struct proc_victim key;
	struct proc_info   pi, ci;
	pid_t		  *kids;
	int		   i, j, n = 0, nkids, fd;

	kids = xreallocarray(NULL, (size_t)max, sizeof(*kids));
	for (i = 0; i < nq; i++) {
		if ((fd = proc_pidfd_open(q[i].pid)) == -1 && errno == ESRCH)
			continue;
		if (proc_info(q[i].pid, &pi) == -1 || pi.start != q[i].start ||
		    proc_is_live(&pi, skip)) {
			if (fd != -1)
				close(fd);
			continue;
		}
		nkids = proc_children(q[i].pid, kids, max);
		for (j = 0; j < nkids && nq < max; j++) {
			key.pid = kids[j];
			if (known != NULL &&
			    bsearch(&key, known, (size_t)nknown, sizeof(*known),
				proc_victim_cmp) != NULL)
				continue;
			if (proc_info(kids[j], &ci) == -1 ||
			    ci.ppid != q[i].pid || proc_is_live(&ci, skip))
				continue;
			q[nq].pid = kids[j];
			q[nq].start = ci.start;
			nq++;
		}
		if (kill_now)
			proc_send(fd, q[i].pid, SIGKILL);
		else {
			proc_send(fd, q[i].pid, SIGHUP);
			proc_send(fd, q[i].pid, SIGCONT);
		}
		if (fd != -1)
			close(fd);
		q[n++] = q[i];
	}
	free(kids);
	return (n);
}

/*
 * The first pass.  Candidates are ptyd's children (where what a dead
 * shell leaves behind ends up) that are in the dead shell's session or
 * process group or hold its tty.  term.c runs it as the shell is reaped,
 * normally before it closes the master, while the tty is still this
 * terminal's.  Without a keeper the candidates' pids cannot change hands
 * during the pass: only ptyd reaps its children, and not while this runs.
 * Under a keeper (DESIGN 10) the candidates are the keeper's children,
 * which it may reap meanwhile; proc_walk checks each one's start time
 * before it signals, which leaves only a pid reused within the pass.  The
 * processes signalled are left in q.
 */
static int
proc_sweep_now(pid_t session, dev_t tty, int kill_now, int (*skip)(pid_t),
    struct proc_victim *q)
{
	struct proc_info pi;
	pid_t		*kids;
	int		 nkids, nq = 0, i;

	kids = xreallocarray(NULL, PROC_MAX_VICTIMS, sizeof(*kids));
	/* Under a keeper, what a shell leaves behind is the keeper's
	 * (the subreaper, our parent); it reaps them, and proc_walk checks
	 * each one's start time before it signals. */
	nkids = proc_children(keeperlink_up() ? getppid() : getpid(), kids,
	    PROC_MAX_VICTIMS);
	for (i = 0; i < nkids; i++) {
		if (skip != NULL && skip(kids[i]))
			continue;
		if (proc_info(kids[i], &pi) == -1)
			continue; /* gone, or a zombie being reaped */
		if (proc_is_live(&pi, skip))
			continue;
		if (pi.session != session && pi.pgrp != session &&
		    !proc_holds_tty(kids[i], tty))
			continue;
		q[nq].pid = kids[i];
		q[nq].start = pi.start;
		nq++;
	}
	free(kids);
	return (proc_walk(q, nq, PROC_MAX_VICTIMS, NULL, 0, skip, kill_now));
}

/*
 * The SIGKILL pass: only the processes the first pass signalled, if they
 * are still the same processes, and whatever they have forked since.
 */
static void
proc_sweep_timer_cb(void *arg)
{
	struct sweep	   *s = arg;
	struct proc_victim *q;
	int		    n;

	q = xreallocarray(NULL, PROC_MAX_VICTIMS, sizeof(*q));
	memcpy(q, s->victims, (size_t)s->nvictims * sizeof(*q));
	n = proc_walk(q, s->nvictims, PROC_MAX_VICTIMS, s->victims, s->nvictims,
	    s->skip, 1);
	if (n > 0)
		log_debug("session %ld: SIGKILL to %d left behind",
		    (long)s->session, n);
	free(q);
	LIST_REMOVE(s, entry);
	free(s->victims);
	free(s);
}

int
proc_sweep(pid_t session, dev_t tty, int kill_now, int (*skip)(pid_t))
{
	struct proc_victim *q;
	struct sweep	   *s;
	int		    n;

	q = xreallocarray(NULL, PROC_MAX_VICTIMS, sizeof(*q));
	n = proc_sweep_now(session, tty, kill_now, skip, q);
	if (n > 0 && !kill_now) {
		s = xcalloc(1, sizeof(*s));
		s->session = session;
		s->skip = skip;
		s->victims = xreallocarray(NULL, (size_t)n, sizeof(*q));
		memcpy(s->victims, q, (size_t)n * sizeof(*q));
		s->nvictims = n;
		qsort(s->victims, (size_t)n, sizeof(*q), proc_victim_cmp);
		ev_timer_init(&s->timer, proc_sweep_timer_cb, s);
		ev_timer_at(&s->timer, ev_now() + PTYD_KILL_DELAY);
		LIST_INSERT_HEAD(&proc_sweeps, s, entry);
	}
	free(q);
	return (n);
}

void
proc_sweep_flush(void)
{
	struct sweep *s;

	while ((s = LIST_FIRST(&proc_sweeps)) != NULL) {
		ev_timer_stop(&s->timer);
		proc_sweep_timer_cb(s);
	}
}
