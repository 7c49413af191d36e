/*
 * child.c -- what runs in the master's child between fork and exec: the
 * one place a process goes from root to an account (ptyd-pool(8),
 * PRIVILEGES).
 *
 * Owns, in this order: the signal mask and dispositions back to the
 * defaults, a session of its own, the descriptors (the socket or
 * /dev/null on 0, the pipe to the master on 1 and 2, nothing else), the
 * account's resource limits, ptyd.fcgi's OOM score back to 0, every
 * capability out of the bounding and ambient sets, the account's groups,
 * gid and uid (real, effective and saved), the checks that none of it
 * can be undone (setuid(0) fails, no capability left), no_new_privs, a
 * session keyring of the account's own, ptyd.fcgi's parent-death signal
 * (the keeper has none: it outlives the master, adopt.c), umask and the
 * home as working folder, and the environment the program gets (built
 * by the master before the fork: child_env).  Does not own what to run
 * (proc.c).
 *
 * Anything that fails here ends the child with status 126 after one line
 * on the pipe; the master logs it and backs off.
 */
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/capability.h>
#include <linux/keyctl.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harden.h"
#include "pool.h"

#define CHILD_FAILED 126

extern char **environ;

/* What of the master's own environment a child may have: the locale,
 * the time zone and PATH (harden's list, without who and where: HOME,
 * USER, LOGNAME, SHELL are the account's, set below; TMPDIR and XDG_*
 * are root's). */
static const char *const child_env_names[] = { "PATH", "LANG", "LANGUAGE", "TZ",
	NULL };
static const char *const child_env_prefixes[] = { "LC_", NULL };
static const struct harden_allow child_env_allow = { child_env_names,
	child_env_prefixes };

static void __attribute__((noreturn, format(printf, 1, 2)))
child_fail(const char *fmt, ...)
{
	char	buf[512];
	va_list ap;
	int	err = errno, n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 64, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n > sizeof(buf) - 64)
		n = (int)sizeof(buf) - 64;
	snprintf(buf + n, sizeof(buf) - (size_t)n, ": %s\n", strerror(err));
	(void)!write(STDERR_FILENO, buf, strlen(buf));
	_exit(CHILD_FAILED);
}

char **
child_env(const struct pool_acct *a)
{
	char **env;
	size_t n = 0, i, j = 0;

	for (i = 0; environ != NULL && environ[i] != NULL; i++)
		n++;
	if ((env = calloc(n + 5, sizeof(*env))) == NULL)
		plog_fatal("calloc");
	for (i = 0; i < n; i++)
		if (harden_env_allowed(&child_env_allow, environ[i]) &&
		    (env[j++] = strdup(environ[i])) == NULL)
			plog_fatal("strdup");
	if (asprintf(&env[j++], "HOME=%s", a->home) == -1 ||
	    asprintf(&env[j++], "USER=%s", a->user) == -1 ||
	    asprintf(&env[j++], "LOGNAME=%s", a->user) == -1 ||
	    asprintf(&env[j++], "SHELL=%s", a->shell) == -1)
		plog_fatal("asprintf");
	env[j] = NULL;
	return (env);
}

void
child_env_free(char **env)
{
	size_t i;

	for (i = 0; env != NULL && env[i] != NULL; i++)
		free(env[i]);
	free(env);
}

/* The master's signal state is not the program's. */
static void
child_signals(void)
{
	sigset_t set;
	int	 sig;

	for (sig = 1; sig < NSIG; sig++)
		(void)signal(sig, SIG_DFL);
	sigemptyset(&set);
	if (sigprocmask(SIG_SETMASK, &set, NULL) == -1)
		child_fail("sigprocmask");
}

/* 0: in (the socket, or /dev/null opened once we are the account);
 * 1 and 2: the pipe.  Nothing else stays open. */
static void
child_fds(int in, int out)
{
	if (dup2(out, STDOUT_FILENO) == -1 || dup2(out, STDERR_FILENO) == -1)
		_exit(CHILD_FAILED);
	if (in != -1 && dup2(in, STDIN_FILENO) == -1)
		child_fail("dup2");
	if (in == -1)
		(void)close(STDIN_FILENO);
	if (close_range(STDERR_FILENO + 1, ~0U, 0) == -1)
		child_fail("close_range");
}

static void
child_limits(const struct pool_acct *a)
{
	struct rlimit rl;

	if (a->rlimit_files != 0) {
		rl.rlim_cur = rl.rlim_max = (rlim_t)a->rlimit_files;
		if (setrlimit(RLIMIT_NOFILE, &rl) == -1)
			child_fail("rlimit_files");
	}
	if (a->rlimit_nproc != 0) {
		rl.rlim_cur = rl.rlim_max = (rlim_t)a->rlimit_nproc;
		if (setrlimit(RLIMIT_NPROC, &rl) == -1)
			child_fail("rlimit_nproc");
	}
}

/* While still root: no capability can ever come back, not through a
 * file's capabilities or a setuid program either (no_new_privs, below). */
static void
child_caps_bound(void)
{
	int cap;

	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) == -1 &&
	    errno != EINVAL)
		child_fail("PR_CAP_AMBIENT_CLEAR_ALL");
	for (cap = 0; cap <= 63; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == -1 &&
		    errno != EINVAL)
			child_fail("PR_CAPBSET_DROP %d", cap);
}

/* Every capability set empty, as the kernel says. */
static int
child_caps_none(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct	d[2];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capset, &h, d) == -1)
		return (-1);
	memset(d, 0xff, sizeof(d));
	if (syscall(SYS_capget, &h, d) == -1)
		return (-1);
	if ((d[0].effective | d[0].permitted | d[0].inheritable |
		d[1].effective | d[1].permitted | d[1].inheritable) != 0)
		return (-1);
	return (0);
}

/*
 * The session keyring is inherited across fork and setuid, and keys are
 * granted to whoever possesses the keyring, whatever its uid: a master
 * started from root's login would hand root's keys (Kerberos tickets in
 * a KEYRING cache, ecryptfs or NFS keys) to every account.  A keyring of
 * the account's own, joined once we are the account, so it is charged
 * to and owned by the account.
 */
static void
child_keyring(void)
{
	if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) == -1 &&
	    errno != ENOSYS)
		child_fail("KEYCTL_JOIN_SESSION_KEYRING");
}

/*
 * The unit protects the master from the OOM killer (OOMScoreAdjust),
 * and so each child: right for the keeper (ptyd@.service protects it
 * too; ptyd puts itself and the shells back to 0), not for ptyd.fcgi,
 * which no one would put back and whose workers an account could grow
 * into memory the OOM killer spares.  Set while still root: lowering
 * needs CAP_SYS_RESOURCE, raising does not.
 */
static void
child_oom(enum pool_kind kind)
{
	char	buf[16];
	ssize_t n;
	int	fd;

	if (kind != POOL_FCGI)
		return;
	if ((fd = open("/proc/self/oom_score_adj", O_RDWR | O_CLOEXEC)) == -1)
		return;
	if ((n = read(fd, buf, sizeof(buf) - 1)) > 0) {
		buf[n] = '\0';
		if (strtol(buf, NULL, 10) < 0 && pwrite(fd, "0\n", 2, 0) != 2)
			child_fail("oom_score_adj");
	}
	close(fd);
}

static void
child_drop(const struct pool_acct *a)
{
	uid_t r, e, s;
	gid_t rg, eg, sg;

	child_caps_bound();
	if (initgroups(a->user, a->gid) == -1)
		child_fail("initgroups %s", a->user);
	if (setresgid(a->gid, a->gid, a->gid) == -1)
		child_fail("setresgid");
	if (setresuid(a->uid, a->uid, a->uid) == -1)
		child_fail("setresuid");
	/* Check, rather than trust, that there is no way back. */
	if (getresuid(&r, &e, &s) == -1 || r != a->uid || e != a->uid ||
	    s != a->uid || getresgid(&rg, &eg, &sg) == -1 || rg != a->gid ||
	    eg != a->gid || sg != a->gid) {
		errno = EPERM;
		child_fail("the uid or gid did not change");
	}
	if (setuid(0) != -1 || setgid(0) != -1 || child_caps_none() == -1) {
		errno = EPERM;
		child_fail("root could be had again");
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		child_fail("PR_SET_NO_NEW_PRIVS");
	child_keyring();
}

/*
 * ptyd.fcgi ends with the master (stateless: the next master starts
 * another on its socket).  The keeper does not: it holds the shells,
 * and a master that is killed, crashes or is restarted finds it and
 * adopts it (adopt.c).  Set once we are the account, since a change of
 * uid clears it; a master already gone is seen by getppid().
 */
static void
child_orphan(pid_t master)
{
	if (prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0) == -1)
		child_fail("PR_SET_PDEATHSIG");
	if (getppid() != master) {
		errno = ESRCH;
		child_fail("the master is gone");
	}
}

void
child_run(const struct pool_acct *a, enum pool_kind kind, int out, char **argv,
    char **envp)
{
	pid_t master = getppid();
	int   fd;

	child_signals();
	if (setsid() == -1)
		child_fail("setsid");
	child_fds(kind == POOL_FCGI ? a->listen_fd : -1, out);
	child_limits(a);
	child_oom(kind);
	child_drop(a);
	if (kind == POOL_FCGI)
		child_orphan(master);
	/* Opened as the account: nothing root opened stays. */
	if (kind != POOL_FCGI) {
		if ((fd = open("/dev/null", O_RDONLY)) == -1)
			child_fail("/dev/null");
		if (fd != STDIN_FILENO)
			child_fail("/dev/null is not on 0");
	}
	/* The shells' umask unless shell_umask says otherwise (ptyd
	 * passes on the one it was started with). */
	umask(022);
	if (chdir(a->home) == -1 && chdir("/") == -1)
		child_fail("chdir");
	execve(argv[0], argv, envp);
	child_fail("%s", argv[0]);
}
