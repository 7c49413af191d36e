/*
 * adopt.c -- processes the master did not start in this image: an
 * account's keeper left running by a master that died or was restarted,
 * and every child handed over by the image before at an upgrade
 * (SIGUSR2, the same pid).  ptyd-pool(8), DESIGN 11 "A master's end".
 *
 * Owns: finding an account's running keeper (the holder of the flock on
 * its database's lock, /proc/locks; checked: the account's uid in every
 * slot, the keeper binary as its image, the lock still its own, while a
 * pidfd holds the process so no recycled pid can pass), the
 * handover's text (which pid, pipe, pidfd and socket is whose, in the
 * environment of the new image), and the re-exec.  Does not own what
 * is done with an adopted process (proc.c: watched through its pidfd
 * when it is not our child, signalled through it, restarted as any).
 *
 * The lock file is the account's, and an account can run the keeper
 * binary itself: what is adopted is a keeper of that account holding
 * that account's lock, so the worst it can do is have the master watch
 * and signal a process of its own instead of starting one.
 */
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pool.h"

#define ADOPT_ENV "PTYD_POOL_HANDOVER"

extern char **environ;

/* What the image before handed over: one entry a process or socket. */
struct adopt_entry {
	char	name[POOL_NAME_MAX + 1];
	char	kind; /* 'p' ptyd, 'f' ptyd.fcgi, 'l' the listen socket */
	long	pid;
	int	fd;    /* the pipe's read end, or the socket */
	int	pidfd; /* an adopted keeper's, or -1 */
	int64_t started;
	int	fails;
	int	adopted;
	int	taken;
};

static struct adopt_entry *adopt_list;
static size_t		   adopt_n;

/* The binary this image was started from, by path: the one a package
 * upgrade replaced is the one SIGUSR2 runs. */
static char   adopt_self[PATH_MAX];
static char **adopt_argv;

/* A number at *s in base (blanks before it skipped when sep is '\0'),
 * then sep unless it is '\0': *s moved past both.  0, or -1. */
static int
adopt_num(const char **s, int base, char sep, long long *v)
{
	char *end;

	while (sep == '\0' && (**s == ' ' || **s == '\t'))
		(*s)++;
	errno = 0;
	*v = strtoll(*s, &end, base);
	if (errno != 0 || end == *s)
		return (-1);
	if (sep != '\0' && *end != sep)
		return (-1);
	*s = sep != '\0' ? end + 1 : end;
	return (0);
}

/* readlink, NUL-terminated; -1 if it failed or did not fit. */
static int
readlink_z(const char *path, char *buf, size_t size)
{
	ssize_t n;

	if ((n = readlink(path, buf, size - 1)) <= 0)
		return (-1);
	buf[n] = '\0';
	return (0);
}

static int
adopt_pidfd(pid_t pid)
{
	return ((int)syscall(SYS_pidfd_open, pid, 0));
}

/* The process behind pidfd has ended (or cannot be told). */
static int
adopt_gone(int pidfd)
{
	struct pollfd pfd = { pidfd, POLLIN, 0 };

	return (poll(&pfd, 1, 0) != 0);
}

/* Every uid (real, effective, saved, fs) of pid is the account's. */
static int
adopt_uid_ok(pid_t pid, uid_t uid)
{
	char	    path[64], line[256];
	const char *p;
	FILE	   *fp;
	long long   u;
	int	    ok = 0, i;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	if ((fp = fopen(path, "re")) == NULL)
		return (0);
	while (fgets(line, sizeof(line), fp) != NULL)
		if (strncmp(line, "Uid:", 4) == 0) {
			p = line + 4;
			for (i = 0; i < 4; i++)
				if (adopt_num(&p, 10, '\0', &u) == -1 ||
				    u != (long long)uid)
					break;
			ok = i == 4;
			break;
		}
	fclose(fp);
	return (ok);
}

/* pid's image is the keeper beside the ptyd we run (or was, before a
 * package replaced the file: " (deleted)"). */
static int
adopt_exe_ok(pid_t pid)
{
	char   path[64], exe[PATH_MAX], want[PATH_MAX], dir[PATH_MAX];
	size_t len;

	snprintf(path, sizeof(path), "/proc/%ld/exe", (long)pid);
	if (readlink_z(path, exe, sizeof(exe)) == -1)
		return (0);
	snprintf(dir, sizeof(dir), "%s", pool_opts.ptyd);
	if (realpath(dirname(dir), want) == NULL ||
	    strlen(want) + sizeof("/ptyd-keeper") > sizeof(want))
		return (0);
	strcat(want, "/ptyd-keeper");
	len = strlen(want);
	return (strncmp(exe, want, len) == 0 &&
	    (exe[len] == '\0' || strcmp(exe + len, " (deleted)") == 0));
}

/* "1: FLOCK  ADVISORY  WRITE 551 fe:00:10953351 0 EOF": the holder,
 * device and inode of an flock.  0, or -1 (another kind of line). */
static int
adopt_locks_line(char *line, long long *who, dev_t *dev,
    unsigned long long *ino)
{
	char	   *w[6], *save = NULL, *t;
	const char *p;
	long long   maj, min, i;
	int	    n = 0;

	for (t = strtok_r(line, " \t\n", &save); t != NULL && n < 6;
	     t = strtok_r(NULL, " \t\n", &save))
		w[n++] = t;
	if (n < 6 || strcmp(w[1], "FLOCK") != 0)
		return (-1);
	p = w[4];
	if (adopt_num(&p, 10, '\0', who) == -1 || *p != '\0')
		return (-1);
	p = w[5];
	if (adopt_num(&p, 16, ':', &maj) == -1 ||
	    adopt_num(&p, 16, ':', &min) == -1 ||
	    adopt_num(&p, 10, '\0', &i) == -1 || *p != '\0' || maj < 0 ||
	    min < 0 || i < 0)
		return (-1);
	*dev = makedev((unsigned int)maj, (unsigned int)min);
	*ino = (unsigned long long)i;
	return (0);
}

/* The holder of the flock on the account's database lock (stat as
 * the account, no link followed), as /proc/locks names it: the file
 * (device and inode) and the pid that took it, which is the keeper's
 * (ptyd takes the lock, then becomes the keeper: the same pid).  0 if
 * no one holds it.  (The account's ids for the path's folders: a folder
 * root's group may search is not one the account may.) */
static pid_t
adopt_lock_holder(const struct pool_acct *a)
{
	struct stat	   st;
	FILE		  *fp;
	char		   line[256];
	unsigned long long ino;
	dev_t		   dev;
	long long	   who;
	pid_t		   pid = 0;
	int		   rv;

	(void)setfsgid(a->gid);
	(void)setfsuid(a->uid);
	rv = lstat(a->lockfile, &st);
	(void)setfsuid(0);
	(void)setfsgid(0);
	if (rv == -1 || !S_ISREG(st.st_mode))
		return (0);
	if ((fp = fopen("/proc/locks", "re")) == NULL)
		return (0);
	while (pid == 0 && fgets(line, sizeof(line), fp) != NULL)
		if (adopt_locks_line(line, &who, &dev, &ino) == 0 && who > 1 &&
		    ino == (unsigned long long)st.st_ino && dev == st.st_dev)
			pid = (pid_t)who;
	fclose(fp);
	return (pid);
}

/*
 * An account's keeper still running from a master before: watched from
 * now on (its pidfd) instead of a second one started, which would fail
 * on the lock and be started again for ever.  0 if adopted.
 */
int
adopt_keeper(struct pool_acct *a, int64_t now)
{
	struct pool_proc *p = &a->proc[POOL_PTYD];
	pid_t		  pid;
	int		  pidfd;

	if ((pid = adopt_lock_holder(a)) == 0)
		return (-1);
	/* The pidfd first: the checks below are then of the process it
	 * holds, or it has ended and the pid is another's. */
	if ((pidfd = adopt_pidfd(pid)) == -1)
		return (-1);
	if (!adopt_uid_ok(pid, a->uid) || !adopt_exe_ok(pid) ||
	    adopt_lock_holder(a) != pid || adopt_gone(pidfd)) {
		plog_warnx("%s: %s is held by pid %ld, not this account's "
			   "keeper: not adopted",
		    a->name, a->lockfile, (long)pid);
		close(pidfd);
		return (-1);
	}
	proc_adopt(p, pid, -1, pidfd, now, 0);
	plog_info("%s: ptyd-keeper pid %ld still runs: adopted, its shells "
		  "kept",
	    a->name, (long)pid);
	return (0);
}

/* ---- the handover at SIGUSR2 ------------------------------------------ */

/* At start: the binary's path, for the re-exec. */
void
adopt_init(char **argv)
{
	if (readlink_z("/proc/self/exe", adopt_self, sizeof(adopt_self)) == -1)
		adopt_self[0] = '\0';
	adopt_argv = argv;
}

/* One entry, "NAME/KIND/PID/FD/PIDFD/STARTED/FAILS/ADOPTED", at *s
 * (moved past it).  0, or -1. */
static int
adopt_entry_read(const char **s, struct adopt_entry *e)
{
	long long v[6];
	size_t	  len = strcspn(*s, "/");
	int	  i;

	memset(e, 0, sizeof(*e));
	if (len == 0 || len > POOL_NAME_MAX || (*s)[len] != '/' ||
	    (*s)[len + 1] == '\0' || (*s)[len + 2] != '/')
		return (-1);
	memcpy(e->name, *s, len);
	e->kind = (*s)[len + 1];
	*s += len + 3;
	for (i = 0; i < 6; i++)
		if (adopt_num(s, 10, i < 5 ? '/' : '\0', &v[i]) == -1 ||
		    (i < 5 && v[i] < -1))
			return (-1);
	if (**s != ';' && **s != '\0')
		return (-1);
	e->pid = (long)v[0];
	e->fd = (int)v[1];
	e->pidfd = (int)v[2];
	e->started = v[3];
	e->fails = (int)v[4];
	e->adopted = v[5] != 0;
	return (0);
}

/* At start, before harden wipes the environment: what the image before
 * handed over, if this is a re-exec. */
void
adopt_handover_read(void)
{
	const char	  *s = getenv(ADOPT_ENV);
	struct adopt_entry e, *more;

	while (s != NULL && *s != '\0') {
		if (adopt_entry_read(&s, &e) == -1) {
			plog_warnx("%s: cannot read what the image before "
				   "handed over: %.40s",
			    ADOPT_ENV, s);
			break;
		}
		if ((more = reallocarray(adopt_list, adopt_n + 1,
			 sizeof(*adopt_list))) == NULL)
			plog_fatal("reallocarray");
		adopt_list = more;
		adopt_list[adopt_n++] = e;
		if (*s == ';')
			s++;
	}
	(void)unsetenv(ADOPT_ENV);
}

static int
adopt_cloexec(int fd, int on)
{
	int fl;

	if (fd == -1 || (fl = fcntl(fd, F_GETFD)) == -1)
		return (-1);
	return (fcntl(fd, F_SETFD, on ? fl | FD_CLOEXEC : fl & ~FD_CLOEXEC));
}

/* What the image before had of a's kind (or its socket): taken over.
 * 0 if there was one. */
int
adopt_handover_take(struct pool_acct *a, int kind, int64_t now)
{
	struct adopt_entry *e;
	size_t		    i;
	char k = kind == POOL_PTYD ? 'p' : kind == POOL_FCGI ? 'f' : 'l';

	(void)now;
	for (i = 0; i < adopt_n; i++) {
		e = &adopt_list[i];
		if (e->taken || e->kind != k || strcmp(e->name, a->name) != 0)
			continue;
		e->taken = 1;
		(void)adopt_cloexec(e->fd, 1);
		(void)adopt_cloexec(e->pidfd, 1);
		if (k == 'l') {
			a->listen_fd = e->fd;
			return (0);
		}
		proc_adopt(&a->proc[kind], (pid_t)e->pid, e->fd, e->pidfd,
		    e->started, e->adopted);
		a->proc[kind].fails = e->fails;
		plog_info("%s: %s pid %ld taken over from the image before",
		    a->name, kind_name((enum pool_kind)kind), e->pid);
		return (0);
	}
	return (-1);
}

/*
 * What no file of the folder claimed any more (removed, or no longer
 * loading, while the image changed): ptyd.fcgi and sockets are let go;
 * a keeper is left running with its shells, as a reload leaves an
 * account whose file does not load, and adopted by the reload that
 * brings its file back.
 */
void
adopt_handover_rest(void)
{
	struct adopt_entry *e;
	size_t		    i;

	for (i = 0; i < adopt_n; i++) {
		e = &adopt_list[i];
		if (e->taken)
			continue;
		if (e->kind == 'f')
			(void)kill((pid_t)e->pid, SIGTERM);
		if (e->kind == 'p')
			plog_warnx("%s: no file loads for it: its keeper, pid "
				   "%ld, is left running",
			    e->name, e->pid);
		if (e->fd != -1)
			close(e->fd);
		if (e->pidfd != -1)
			close(e->pidfd);
	}
	free(adopt_list);
	adopt_list = NULL;
	adopt_n = 0;
}

/* One process's entry onto text. */
static void
adopt_put(char **text, const struct pool_acct *a, char kind,
    const struct pool_proc *p, int fd)
{
	char *n;

	if (asprintf(&n, "%s%s%s/%c/%ld/%d/%d/%lld/%d/%d", *text,
		**text ? ";" : "", a->name, kind, p != NULL ? (long)p->pid : 0L,
		fd, p != NULL ? p->pidfd : -1,
		p != NULL ? (long long)p->started : 0LL,
		p != NULL ? p->fails : 0, p != NULL ? p->adopted : 0) == -1)
		plog_fatal("asprintf");
	free(*text);
	*text = n;
	(void)adopt_cloexec(fd, 0);
	if (p != NULL)
		(void)adopt_cloexec(p->pidfd, 0);
}

/*
 * SIGUSR2: this binary's path run again in this process (the same pid:
 * every child stays ours, every keeper keeps its shells), with what
 * runs handed over in the environment.  Returns only if the exec failed
 * (logged): then this image serves on, as before.
 */
void
adopt_reexec(void)
{
	struct pool_acct *a;
	char		 *text, *var, **env;
	size_t		  n = 0, i;
	int		  k;

	if (adopt_self[0] == '\0' || access(adopt_self, X_OK) == -1) {
		plog_warn("SIGUSR2: %s",
		    adopt_self[0] ? adopt_self : "/proc/self/exe");
		return;
	}
	if ((text = strdup("")) == NULL)
		plog_fatal("strdup");
	for (a = pool_accts; a != NULL; a = a->next) {
		if (a->gone)
			continue;
		for (k = 0; k < POOL_NKINDS; k++)
			if (a->proc[k].pid != 0)
				adopt_put(&text, a, k == POOL_PTYD ? 'p' : 'f',
				    &a->proc[k], a->proc[k].out);
		if (a->listen_fd != -1)
			adopt_put(&text, a, 'l', NULL, a->listen_fd);
	}
	if (asprintf(&var, ADOPT_ENV "=%s", text) == -1)
		plog_fatal("asprintf");
	while (environ != NULL && environ[n] != NULL)
		n++;
	if ((env = calloc(n + 2, sizeof(*env))) == NULL)
		plog_fatal("calloc");
	for (i = 0; i < n; i++)
		env[i] = environ[i];
	env[n] = var;
	plog_info("SIGUSR2: running %s again, same pid, every process kept",
	    adopt_self);
	execve(adopt_self, adopt_argv, env);
	plog_warn("SIGUSR2: exec %s; this one serves on", adopt_self);
	free(env);
	free(var);
	free(text);
	/* Ours again, not the next child's. */
	for (a = pool_accts; a != NULL; a = a->next) {
		for (k = 0; k < POOL_NKINDS; k++) {
			(void)adopt_cloexec(a->proc[k].out, 1);
			(void)adopt_cloexec(a->proc[k].pidfd, 1);
		}
		(void)adopt_cloexec(a->listen_fd, 1);
	}
}
