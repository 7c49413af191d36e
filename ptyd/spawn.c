/*
 * spawn.c -- a shell in a new session with a pty as its controlling tty.
 *
 * Owns: the pty pair until the master is handed back, and everything the
 * child starts with.  Does not own: the child afterwards (term.c).
 *
 * posix_spawn rather than fork: glibc spawns with CLONE_VFORK, so the cost
 * does not grow with the daemon's memory (fork copies page tables, and
 * ptyd holds every terminal's ring), and it reports an exec failure as a
 * return value.  It gives us what a hand-written fork would do, in the same
 * order: all signals blocked around the clone (glibc does that itself),
 * then in the child every signal reset to its default and the mask
 * emptied (SETSIGDEF with a full set, SETSIGMASK with an empty one), a new
 * session (SETSID), the slave opened without O_NOCTTY so that it becomes
 * the controlling tty of that session, dup'd to 0, 1 and 2, every fd above
 * 2 closed (closefrom; ours are CLOEXEC anyway), cwd set, then exec.  The
 * window size is set on the pty before the child exists, so the shell's
 * first TIOCGWINSZ already sees it.
 */
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
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

const char *
spawn_error(void)
{
	return (spawn_errbuf);
}

/* Log what failed (with its path) and keep the client's words (without). */
static void
spawn_fail(const char *what, const char *path, const char *client, int err)
{
	const char *sep = *what != '\0' && path != NULL ? " " : "";
	char	   *p;
	int	    n;

	log_warnx("spawn: %s%s%s: %s", what, sep, path != NULL ? path : "",
	    strerror(err));
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
 * posix_spawn reports a failure of the child's steps (chdir, open of the
 * slave, exec) as its return value: glibc spawns with CLONE_VFORK and the
 * child hands its errno back before the parent returns (glibc 2.24 and
 * later), and reaps that child itself.  Which step failed it does not say:
 * a workspace we cannot enter is told apart from a shell we cannot run by
 * looking again.
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

/* What the child does before exec, in order (see the first comment). */
static int
spawn_actions(posix_spawn_file_actions_t *fa, posix_spawnattr_t *attr,
    const char *slave, const char *cwd)
{
	sigset_t all, none;

	sigfillset(&all);
	sigemptyset(&none);
	if ((errno = posix_spawn_file_actions_addopen(fa, 0, slave, O_RDWR,
		 0)) != 0 ||
	    (errno = posix_spawn_file_actions_adddup2(fa, 0, 1)) != 0 ||
	    (errno = posix_spawn_file_actions_adddup2(fa, 0, 2)) != 0 ||
	    (errno = posix_spawn_file_actions_addclosefrom_np(fa, 3)) != 0 ||
	    (errno = posix_spawn_file_actions_addchdir_np(fa, cwd)) != 0 ||
	    (errno = posix_spawnattr_setflags(attr,
		 POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
		     POSIX_SPAWN_SETSIGDEF)) != 0 ||
	    (errno = posix_spawnattr_setsigmask(attr, &none)) != 0 ||
	    (errno = posix_spawnattr_setsigdefault(attr, &all)) != 0) {
		spawn_fail("attributes", NULL, "could not start the shell",
		    errno);
		return (-1);
	}
	return (0);
}

/* Run the shell on the slave.  0 with *pid, or -1 (logged). */
static int
spawn_run(const struct spawn_req *req, const char *slave, char **env,
    pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t	   attr;
	mode_t			   mine;
	int			   err;

	if ((err = posix_spawn_file_actions_init(&fa)) != 0) {
		spawn_fail("file actions", NULL, "could not start the shell",
		    err);
		return (-1);
	}
	if ((err = posix_spawnattr_init(&attr)) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		spawn_fail("attributes", NULL, "could not start the shell",
		    err);
		return (-1);
	}
	err = -1;
	if (spawn_actions(&fa, &attr, slave, req->cwd) == 0) {
		/* posix_spawn has no umask attribute; the loop is
		 * single-threaded, so ours is swapped for the shell's around
		 * the call. */
		mine = umask(req->umask);
		err = posix_spawn(pid, req->path, &fa, &attr, req->argv, env);
		(void)umask(mine);
		if (err != 0)
			spawn_fail_child(req, err);
	}
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	return (err == 0 ? 0 : -1);
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
	res->pid = pid;
	res->master = master;
	res->tty = tty;
	return (0);
}
