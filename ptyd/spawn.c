/*
 * spawn.c -- a shell in a new session with a pty as its controlling tty.
 *
 * Owns: the pty pair until the master is handed back, and everything the
 * child starts with.  Does not own: the child afterwards (term.c).
 *
 * clone(CLONE_VM | CLONE_VFORK) rather than fork, as glibc's posix_spawn
 * does: the cost does not grow with the daemon's memory (fork copies page
 * tables, and ptyd holds every terminal's ring).  Not posix_spawn itself:
 * its child copies our whole descriptor table (a reference on every pty
 * master and connection) only to close it again, which with 5,000
 * terminals made a spawn 0.6 ms dearer (issue 17).  Ours shares the table
 * (CLONE_FILES) and its first step is close_range(3, ~0,
 * CLOSE_RANGE_UNSHARE), which gives it a table of 0-2 alone without
 * copying the rest (kernel 5.9; where it is missing or a seccomp filter
 * refuses it, unshare, then close each descriptor).  Then, in
 * order: every signal reset to its default (ours are blocked around the
 * clone, so no handler of ours runs on the shared memory), a new session,
 * the slave opened without O_NOCTTY so that it becomes the controlling
 * tty of that session, dup'd to 0, 1 and 2, cwd, umask, the signal mask
 * emptied, exec.  A failed step hands its errno back through the shared
 * memory, as posix_spawn does.  The window size is set on the pty before
 * the child exists, so the shell's first TIOCGWINSZ already sees it.
 */
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <linux/close_range.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "harden.h"
#include "log.h"
#include "spawn.h"

#define SPAWN_ENV_MAX 512

int
spawn_env_allowed(const char *entry)
{
	return (harden_env_allowed(&harden_shell_env, entry));
}

int
spawn_env(char *const *base, const char *cwd, unsigned int rows,
    unsigned int cols, char **out, size_t n, char *scratch, size_t scratchlen)
{
	size_t i = 0, j;
	int    r;

	for (j = 0; base != NULL && base[j] != NULL; j++) {
		if (!spawn_env_allowed(base[j]))
			continue;
		if (i + 7 >= n) {
			errno = E2BIG;
			return (-1);
		}
		out[i++] = base[j];
	}
	if (i + 7 > n) {
		errno = E2BIG;
		return (-1);
	}
	out[i++] = (char *)"TERM=xterm-256color";
	out[i++] = (char *)"COLORTERM=truecolor";
	out[i++] = (char *)"PTYD=1";
	r = snprintf(scratch, scratchlen, "COLUMNS=%u%cLINES=%u%cPWD=%s", cols,
	    '\0', rows, '\0', cwd);
	if (r < 0 || (size_t)r >= scratchlen) {
		errno = ENAMETOOLONG;
		return (-1);
	}
	out[i++] = scratch;
	out[i++] = scratch + strlen(scratch) + 1;
	out[i] = out[i - 1] + strlen(out[i - 1]) + 1;
	i++;
	out[i] = NULL;
	return (0);
}

/* Why the last spawn_shell failed, in words for the client: no path. */
static char spawn_errbuf[128] = "could not start the shell";
static int  spawn_limit; /* ... on a limit of the system */

const char *
spawn_error(void)
{
	return (spawn_errbuf);
}

int
spawn_exhausted(void)
{
	return (spawn_limit);
}

/* The limits of the system a spawn can meet: the client's words, and
 * for the log, the operator's (which setting it is). */
static const struct {
	int	    err;
	const char *client;
	const char *setting;
} spawn_limits[] = {
	{ ENOSPC,
	    "no pty available: the system's limit of ptys is reached;"
	    " retry later",
	    "kernel.pty.max, or the devpts mount's max=" },
	{ EAGAIN,
	    "no process available: the system's or the account's"
	    " limit of processes is reached; retry later",
	    "kernel.pid_max, kernel.threads-max, the cgroup's pids.max or"
	    " RLIMIT_NPROC" },
	{ EMFILE,
	    "no file descriptor available: the limit of open files is"
	    " reached; retry later",
	    "RLIMIT_NOFILE" },
	{ ENFILE,
	    "no file descriptor available: the limit of open files is"
	    " reached; retry later",
	    "fs.file-max" },
	{ ENOMEM, "out of memory; retry later", "memory" },
};

static int
spawn_limit_find(int err)
{
	size_t i;

	for (i = 0; i < sizeof(spawn_limits) / sizeof(spawn_limits[0]); i++)
		if (spawn_limits[i].err == err)
			return ((int)i);
	return (-1);
}

/* Log what failed (with its path) and keep the client's words (without). */
static void
spawn_fail(const char *what, const char *path, const char *client, int err)
{
	const char *sep = *what != '\0' && path != NULL ? " " : "";
	char	   *p;
	int	    n, i;

	log_warnx("spawn: %s%s%s: %s", what, sep, path != NULL ? path : "",
	    strerror(err));
	/* The workspace's or the shell's own errors keep their words. */
	i = path == NULL ? spawn_limit_find(err) : -1;
	if ((spawn_limit = i != -1)) {
		log_warnx("spawn: a limit of the system (%s)",
		    spawn_limits[i].setting);
		snprintf(spawn_errbuf, sizeof(spawn_errbuf), "%s",
		    spawn_limits[i].client);
		errno = err;
		return;
	}
	n = snprintf(spawn_errbuf, sizeof(spawn_errbuf), "%s: %s", client,
	    strerror(err));
	/* "No such file" would read as the start of a new sentence. */
	if (n > 0 && (size_t)n < sizeof(spawn_errbuf)) {
		p = spawn_errbuf + strlen(client) + 2;
		*p = (char)tolower((unsigned char)*p);
	}
	errno = err;
}

/*
 * The child hands back the errno of the step that failed (chdir, open of
 * the slave, exec), not which step it was: a workspace we cannot enter is
 * told apart from a shell we cannot run by looking again.
 */
static void
spawn_fail_child(const struct spawn_req *req, int err)
{
	struct stat st;

	if (stat(req->cwd, &st) == -1 || !S_ISDIR(st.st_mode) ||
	    access(req->cwd, X_OK) == -1)
		spawn_fail("workspace", req->cwd,
		    "could not enter the workspace", err);
	else
		spawn_fail("", req->path, "could not start the shell", err);
}

/* A new pty pair: the master (CLOEXEC), the slave's name and device, the
 * size set before any child can read it.  0, or -1 (logged). */
static int
spawn_pty(const struct spawn_req *req, char *name, size_t namelen, dev_t *tty)
{
	struct winsize ws;
	struct stat    st;
	const char    *what;
	int	       master, err;

	master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master == -1) {
		spawn_fail("posix_openpt", NULL, "could not start the shell",
		    errno);
		return (-1);
	}
	memset(&ws, 0, sizeof(ws));
	ws.ws_row = (unsigned short)req->rows;
	ws.ws_col = (unsigned short)req->cols;
	what = "pty slave";
	if (grantpt(master) == -1 || unlockpt(master) == -1 ||
	    (errno = ptsname_r(master, name, namelen)) != 0)
		goto fail;
	what = "TIOCSWINSZ";
	if (ioctl(master, TIOCSWINSZ, &ws) == -1)
		goto fail;
	what = "stat pty slave";
	if (stat(name, &st) == -1)
		goto fail;
	*tty = st.st_rdev;
	return (master);
fail:
	err = errno;
	close(master);
	spawn_fail(what, NULL, "could not start the shell", err);
	return (-1);
}

/*
 * The child, on the parent's memory and, until its first step, the
 * parent's descriptor table (see the first comment).  Async-signal-safe
 * calls only; a failure is handed back in a->err, then _exit.
 */
struct spawn_child {
	const struct spawn_req *req;
	const char	       *slave;
	char		      **env;
	int			maxfd; /* above every descriptor we hold */
	volatile int		err;
};

/* Not instrumented: it runs on a stack the sanitizers do not know. */
__attribute__((no_sanitize("address", "undefined"))) static int
spawn_child(void *arg)
{
	struct spawn_child *a = arg;
	struct sigaction    sa;
	sigset_t	    none;
	int		    sig, fd;

	/*
	 * Our own table, holding 0-2 only: the kernel copies no more.  Where
	 * close_range is missing (before 5.9) or filtered (seccomp), a copy
	 * of the table, every descriptor above 2 closed one by one.
	 */
	if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_UNSHARE) == -1) {
		if (unshare(CLONE_FILES) == -1)
			goto fail;
		for (fd = 3; fd < a->maxfd; fd++)
			(void)close(fd);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (sig = 1; sig < NSIG; sig++)
		(void)sigaction(sig, &sa, NULL); /* EINVAL for some: fine */
	if (setsid() == -1)
		goto fail;
	/* No O_NOCTTY: the slave becomes the session's controlling tty. */
	if ((fd = open(a->slave, O_RDWR)) == -1)
		goto fail;
	if ((fd != 0 && dup2(fd, 0) == -1) || dup2(0, 1) == -1 ||
	    dup2(0, 2) == -1)
		goto fail;
	if (fd > 2)
		(void)close(fd);
	if (chdir(a->req->cwd) == -1)
		goto fail;
	(void)umask(a->req->umask);
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	execve(a->req->path, a->req->argv, a->env);
fail:
	a->err = errno != 0 ? errno : EINVAL;
	_exit(127);
}

/*
 * Run the shell on the slave.  0 with *pid, or -1 (logged).  Every signal
 * is blocked around the clone, so that no handler of ours can run in the
 * child on our memory; CLONE_VFORK holds us until the child has exec'd or
 * failed, so its stack (static: one thread) is free again on return.
 */
static int
spawn_run(const struct spawn_req *req, const char *slave, char **env,
    pid_t *pid)
{
	static char	   stack[64 * 1024] __attribute__((aligned(16)));
	struct spawn_child a = { req, slave, env, 0, 0 };
	struct rlimit	   rl;
	sigset_t	   all, old;
	int		   err;

	/* For the fallback in spawn_child only: the soft limit bounds
	 * every descriptor number we can hold. */
	a.maxfd = getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
		rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (1U << 20) ?
	    (int)rl.rlim_cur : (1 << 20);

	sigfillset(&all);
	(void)sigprocmask(SIG_SETMASK, &all, &old);
	/* Under a keeper the shell is its child, not ours: it outlives us
	 * and the keeper reaps it (DESIGN 10). */
	*pid = clone(spawn_child, stack + sizeof(stack),
	    CLONE_VM | CLONE_VFORK | CLONE_FILES | SIGCHLD |
		(req->keeper ? CLONE_PARENT : 0),
	    &a);
	err = errno;
	(void)sigprocmask(SIG_SETMASK, &old, NULL);
	if (*pid == -1) {
		spawn_fail("clone", NULL, "could not start the shell", err);
		return (-1);
	}
	if (a.err != 0) {
		/* It has exited: collect it here, as posix_spawn would. */
		while (waitpid(*pid, NULL, 0) == -1 && errno == EINTR)
			;
		spawn_fail_child(req, a.err);
		return (-1);
	}
	return (0);
}

int
spawn_shell(const struct spawn_req *req, struct spawn_result *res)
{
	char  name[64], scratch[4200];
	char *env[SPAWN_ENV_MAX];
	pid_t pid;
	dev_t tty;
	int   master, err;

	if (spawn_env(req->env, req->cwd, req->rows, req->cols, env,
		SPAWN_ENV_MAX, scratch, sizeof(scratch)) == -1) {
		spawn_fail("environment", NULL, "could not start the shell",
		    errno);
		return (-1);
	}
	if ((master = spawn_pty(req, name, sizeof(name), &tty)) == -1)
		return (-1);
	if (spawn_run(req, name, env, &pid) == -1) {
		err = errno;
		close(master);
		errno = err;
		return (-1);
	}
	if (fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK) == -1)
		fatal("spawn: O_NONBLOCK on the pty master");
	/* Packet mode: each read says whether it returned data, which
	 * makes a read killed halfway recoverable (termmem.c). */
	if (req->keeper && ioctl(master, TIOCPKT, &(int){ 1 }) == -1)
		fatal("spawn: TIOCPKT on the pty master");
	res->pid = pid;
	res->master = master;
	res->tty = tty;
	return (0);
}
