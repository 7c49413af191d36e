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
 */
#include <sys/queue.h>
#include <sys/stat.h>
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
#include "log.h"
#include "proc.h"
#include "ptyd.h"
#include "xmalloc.h"

#define PROC_MAX_VICTIMS	4096

struct sweep {
	LIST_ENTRY(sweep)	 entry;
	pid_t			 session;
	dev_t			 tty;
	int			(*skip)(pid_t);
	struct ev_timer		 timer;
};
static LIST_HEAD(, sweep)	 proc_sweeps = LIST_HEAD_INITIALIZER(proc_sweeps);

/* Read a small /proc file into buf; returns bytes or -1. */
static ssize_t
proc_read(const char *path, char *buf, size_t size)
{
	ssize_t	n, total = 0;
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

int
proc_stat(pid_t pid, pid_t *ppid, pid_t *pgrp, pid_t *session)
{
	char		 path[64], buf[512];
	const char	*p;
	char		 state;
	int		 a, b, c;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if (proc_read(path, buf, sizeof(buf)) <= 0)
		return (-1);
	/* comm may hold spaces and parentheses: parse after the last ')'. */
	if ((p = strrchr(buf, ')')) == NULL)
		return (-1);
	if (sscanf(p + 1, " %c %d %d %d", &state, &a, &b, &c) != 4)
		return (-1);
	if (ppid != NULL)
		*ppid = a;
	if (pgrp != NULL)
		*pgrp = b;
	if (session != NULL)
		*session = c;
	return (0);
}

int
proc_children(pid_t pid, pid_t *out, int max)
{
	char		 path[PATH_MAX], buf[8192];
	struct dirent	*de;
	DIR		*d;
	char		*p, *e;
	long		 v;
	int		 n = 0;

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
	char		 path[64], fpath[PATH_MAX];
	struct dirent	*de;
	struct stat	 st;
	DIR		*d;
	int		 found = 0;

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

/* Append pid and its descendants to v (breadth first), bounded. */
static void
proc_subtree(pid_t pid, pid_t *v, int *n, int max)
{
	int	i = *n, got;

	if (*n >= max)
		return;
	v[(*n)++] = pid;
	for (; i < *n && *n < max; i++) {
		got = proc_children(v[i], v + *n, max - *n);
		if (got > 0)
			*n += got;
	}
}

static void
proc_signal(pid_t pid, int kill_now)
{
	if (kill_now)
		(void)kill(pid, SIGKILL);
	else {
		(void)kill(pid, SIGHUP);
		(void)kill(pid, SIGCONT);
	}
}

static int
proc_sweep_now(pid_t session, dev_t tty, int kill_now, int (*skip)(pid_t))
{
	pid_t	*kids, *victims;
	pid_t	 pgrp, sess;
	int	 nkids, nvict = 0, i;

	kids = xreallocarray(NULL, PROC_MAX_VICTIMS, sizeof(*kids));
	victims = xreallocarray(NULL, PROC_MAX_VICTIMS, sizeof(*victims));
	nkids = proc_children(getpid(), kids, PROC_MAX_VICTIMS);
	for (i = 0; i < nkids; i++) {
		if (skip != NULL && skip(kids[i]))
			continue;
		if (proc_stat(kids[i], NULL, &pgrp, &sess) == -1)
			continue;	/* gone, or a zombie being reaped */
		if (sess != session && pgrp != session &&
		    !proc_holds_tty(kids[i], tty))
			continue;
		proc_subtree(kids[i], victims, &nvict, PROC_MAX_VICTIMS);
	}
	for (i = 0; i < nvict; i++)
		proc_signal(victims[i], kill_now);
	free(kids);
	free(victims);
	return (nvict);
}

static void
proc_sweep_timer_cb(void *arg)
{
	struct sweep	*s = arg;
	int		 n;

	n = proc_sweep_now(s->session, s->tty, 1, s->skip);
	if (n > 0)
		log_debug("session %ld: SIGKILL to %d left behind",
		    (long)s->session, n);
	LIST_REMOVE(s, entry);
	free(s);
}

int
proc_sweep(pid_t session, dev_t tty, int kill_now, int (*skip)(pid_t))
{
	struct sweep	*s;
	int		 n;

	n = proc_sweep_now(session, tty, kill_now, skip);
	if (n > 0 && !kill_now) {
		s = xcalloc(1, sizeof(*s));
		s->session = session;
		s->tty = tty;
		s->skip = skip;
		ev_timer_init(&s->timer, proc_sweep_timer_cb, s);
		ev_timer_at(&s->timer, ev_now() + PTYD_KILL_DELAY);
		LIST_INSERT_HEAD(&proc_sweeps, s, entry);
	}
	return (n);
}

void
proc_sweep_flush(void)
{
	struct sweep	*s;

	while ((s = LIST_FIRST(&proc_sweeps)) != NULL) {
		ev_timer_stop(&s->timer);
		proc_sweep_timer_cb(s);
	}
}
