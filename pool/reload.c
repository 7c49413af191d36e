/*
 * reload.c -- the pool folder against the table of accounts: at start,
 * and at each SIGHUP.
 *
 * Owns: the walk of the folder (one *.conf a pool, in name order), the
 * list of accounts, and what a change does (ptyd-pool(8), RELOAD):
 *
 *   added file          the account's ptyd, then its ptyd.fcgi, started
 *   removed file        both stopped: its shells end
 *   user, group, limits both restarted: its shells end
 *   ptyd's paths        both restarted: its shells end
 *   listen*             a new socket, ptyd.fcgi restarted: shells kept
 *   ptyd's settings     SIGUSR1 to its keeper: a new ptyd reads the file
 *                       and takes over every shell (DESIGN 10)
 *   ptyd.fcgi's         ptyd.fcgi restarted: shells kept
 *   nothing, or a file  nothing: same processes, same pids
 *   that does not load  (logged; the running account is left as it was)
 *
 * Does not own the processes (proc.c) or a file's reading (acct.c).
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pool.h"

struct pool_acct *pool_accts;

static struct pool_acct *
reload_find(const char *name)
{
	struct pool_acct *a;

	for (a = pool_accts; a != NULL; a = a->next)
		if (!a->gone && strcmp(a->name, name) == 0)
			return (a);
	return (NULL);
}

/* new's settings into old, which keeps its processes and socket. */
static void
reload_take(struct pool_acct *old, struct pool_acct *new)
{
	struct pool_acct keep = *old;
	size_t		 k;

	*old = *new;
	old->next = keep.next;
	old->listen_fd = keep.listen_fd;
	old->gone = keep.gone;
	for (k = 0; k < POOL_NKINDS; k++)
		old->proc[k] = keep.proc[k];
	/* What new had now belongs to old; free what old had. */
	memset(new, 0, sizeof(*new));
	new->path = keep.path;
	new->user = keep.user;
	new->home = keep.home;
	new->shell = keep.shell;
	new->listen = keep.listen;
	new->lockfile = keep.lockfile;
	for (k = 0; k < POOL_NCLASSES; k++)
		new->text[k] = keep.text[k];
	acct_free(new);
}

/* A changed file: what it touches, per the table above. */
static void
reload_change(struct pool_acct *a, struct pool_acct *new, unsigned int m,
    int64_t now)
{
	int ptyd_again = (m & ((1u << POOL_C_IDENT) | (1u << POOL_C_HOME))) !=
	    0;
	int fcgi_again = ptyd_again ||
	    (m & ((1u << POOL_C_SOCK) | (1u << POOL_C_FCGI))) != 0;

	reload_take(a, new);
	if (ptyd_again) {
		plog_info("%s: %s changed: ptyd restarted, its shells end",
		    a->name,
		    (m & (1u << POOL_C_IDENT)) ? "the account" :
						 "ptyd's paths");
		proc_stop(a, POOL_PTYD, 1, now);
	} else if (m & (1u << POOL_C_PTYD)) {
		plog_info("%s: ptyd's settings changed: upgrade (SIGUSR1), "
			  "shells kept",
		    a->name);
		proc_signal(a, POOL_PTYD, SIGUSR1);
	}
	if (m & ((1u << POOL_C_IDENT) | (1u << POOL_C_SOCK)))
		sock_close(a);
	if (fcgi_again) {
		if (!ptyd_again)
			plog_info("%s: ptyd.fcgi's settings changed: "
				  "ptyd.fcgi restarted, shells kept",
			    a->name);
		proc_stop(a, POOL_FCGI, 1, now);
	}
}

static void
reload_add(struct pool_acct *a, int64_t now)
{
	struct pool_acct **tail = &pool_accts;

	while (*tail != NULL)
		tail = &(*tail)->next;
	*tail = a;
	a->next = NULL;
	plog_info("%s: added (user %s, listen %s)", a->name, a->user,
	    a->listen);
	/* What runs already is taken, not started twice: the image
	 * before's processes at a re-exec, a keeper a master before left
	 * (adopt.c). */
	(void)adopt_handover_take(a, POOL_NKINDS, now);
	if (adopt_handover_take(a, POOL_PTYD, now) == -1 &&
	    adopt_keeper(a, now) == -1)
		proc_start(a, POOL_PTYD, now);
	if (adopt_handover_take(a, POOL_FCGI, now) == -1)
		proc_start(a, POOL_FCGI, now);
}

static void
reload_remove(struct pool_acct *a, int64_t now)
{
	plog_info("%s: removed: ptyd.fcgi and ptyd stopped, its shells end",
	    a->name);
	a->gone = 1;
	proc_stop(a, POOL_FCGI, 0, now);
	proc_stop(a, POOL_PTYD, 0, now);
	sock_close(a);
}

/* The files a check (-t) has read so far: their clashes are found as a
 * running master would find them, which keeps the earlier file. */
static struct pool_acct *reload_checked;

/* Whether a and b are two pools on one socket or one database. */
static const char *
reload_shared(const struct pool_acct *a, const struct pool_acct *b)
{
	if (strcmp(a->listen, b->listen) == 0)
		return ("listen");
	if (strcmp(a->lockfile, b->lockfile) == 0)
		return ("db");
	return (NULL);
}

/*
 * Another pool with new's socket path (the bind would take it from that
 * pool) or its database (two ptyds on one database: the second would wait
 * on the keeper's lock for ever).  *what says which.
 */
static const struct pool_acct *
reload_clash(const struct pool_acct *new, const char **what)
{
	const struct pool_acct *a;

	for (a = pool_accts; a != NULL; a = a->next)
		if (!a->gone && strcmp(a->name, new->name) != 0 &&
		    (*what = reload_shared(a, new)) != NULL)
			return (a);
	for (a = reload_checked; a != NULL; a = a->next)
		if ((*what = reload_shared(a, new)) != NULL)
			return (a);
	return (NULL);
}

/* One file of the folder.  0, or -1 if it did not load. */
static int
reload_one(const char *name, int64_t now, int check)
{
	struct pool_acct       *a = reload_find(name), *new;
	const struct pool_acct *other;
	const char	       *what = NULL;
	char			cause[1024];
	unsigned int		m;

	if ((new = acct_load(pool_opts.dir, name, cause, sizeof(cause))) !=
		NULL &&
	    (other = reload_clash(new, &what)) != NULL) {
		if (strcmp(what, "db") == 0) /* lockfile: the db's, ".lock" */
			snprintf(cause, sizeof(cause),
			    "db: %.*s is pool %s's: one ptyd a database",
			    (int)(strlen(new->lockfile) - 5), new->lockfile,
			    other->name);
		else
			snprintf(cause, sizeof(cause),
			    "listen: %s is pool %s's", new->listen,
			    other->name);
		acct_free(new);
		new = NULL;
	}
	if (new == NULL) {
		plog_warnx("%s: %s%s", name, cause,
		    check	  ? "" :
			a != NULL ? "; left as it was" :
				    "; not started");
		return (-1);
	}
	if (check) {
		new->next = reload_checked;
		reload_checked = new;
		return (0);
	}
	if (a == NULL) {
		reload_add(new, now);
		return (0);
	}
	if ((m = acct_diff(a, new)) == 0) {
		acct_free(new);
		return (0);
	}
	reload_change(a, new, m, now);
	return (0);
}

static int
reload_filter(const struct dirent *d)
{
	char name[POOL_NAME_MAX + 1];

	return (acct_name_ok(d->d_name, name, sizeof(name)) == 0);
}

/*
 * Read the folder and bring the table in line with it.  0, or -1 if the
 * folder could not be read (nothing changed) or, with check, a file
 * did not load.
 */
int
reload_folder(int64_t now, int check)
{
	struct dirent	**list = NULL;
	struct pool_acct *a;
	char		  name[POOL_NAME_MAX + 1];
	int		  n, i, rv = 0;

	if ((n = scandir(pool_opts.dir, &list, reload_filter, alphasort)) ==
	    -1) {
		plog_warn("%s", pool_opts.dir);
		return (-1);
	}
	for (a = pool_accts; a != NULL; a = a->next)
		a->seen = 0;
	for (i = 0; i < n; i++) {
		if (acct_name_ok(list[i]->d_name, name, sizeof(name)) == 0) {
			if (reload_one(name, now, check) == -1)
				rv = -1;
			if ((a = reload_find(name)) != NULL)
				a->seen = 1;
		}
		free(list[i]);
	}
	free(list);
	for (a = pool_accts; a != NULL && !check; a = a->next)
		if (!a->gone && !a->seen)
			reload_remove(a, now);
	while ((a = reload_checked) != NULL) {
		reload_checked = a->next;
		acct_free(a);
	}
	return (check ? rv : 0);
}

void
reload_stop_all(int64_t now)
{
	struct pool_acct *a;

	for (a = pool_accts; a != NULL; a = a->next)
		if (!a->gone)
			reload_remove(a, now);
}

/* SIGUSR1 to the master: every ptyd upgraded (a new binary after a
 * package update), every shell kept. */
void
reload_upgrade_all(void)
{
	struct pool_acct *a;

	for (a = pool_accts; a != NULL; a = a->next)
		if (!a->gone)
			proc_signal(a, POOL_PTYD, SIGUSR1);
}

/* Accounts removed whose processes have both ended: freed. */
void
reload_collect(void)
{
	struct pool_acct **ap = &pool_accts, *a;

	while ((a = *ap) != NULL) {
		if (a->gone && a->proc[POOL_PTYD].pid == 0 &&
		    a->proc[POOL_FCGI].pid == 0) {
			*ap = a->next;
			plog_info("%s: gone", a->name);
			sock_close(a);
			acct_free(a);
			continue;
		}
		ap = &a->next;
	}
}
