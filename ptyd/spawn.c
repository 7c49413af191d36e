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

int
spawn_shell(const struct spawn_req *req, struct spawn_result *res)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t	   attr;
	struct winsize		   ws;
	struct stat		   st;
	sigset_t		   all, none;
	char			   name[64], scratch[4200];
	char			  *env[SPAWN_ENV_MAX];
	pid_t			   pid;
	mode_t			   mine;
	int			   master = -1, err, have_fa = 0;
	int			   have_attr = 0;

	if (spawn_env(req->env, req->cwd, req->rows, req->cols, env,
		SPAWN_ENV_MAX, scratch, sizeof(scratch)) == -1) {
		log_warn("spawn: environment");
		return (-1);
	}
	master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master == -1) {
		log_warn("spawn: posix_openpt");
		goto fail;
	}
	if (grantpt(master) == -1 || unlockpt(master) == -1 ||
	    (errno = ptsname_r(master, name, sizeof(name))) != 0) {
		log_warn("spawn: pty slave");
		goto fail;
	}
	memset(&ws, 0, sizeof(ws));
	ws.ws_row = (unsigned short)req->rows;
	ws.ws_col = (unsigned short)req->cols;
	if (ioctl(master, TIOCSWINSZ, &ws) == -1) {
		log_warn("spawn: TIOCSWINSZ");
		goto fail;
	}
	if (stat(name, &st) == -1) {
		log_warn("spawn: stat %s", name);
		goto fail;
	}

	if ((errno = posix_spawn_file_actions_init(&fa)) != 0)
		goto fail;
	have_fa = 1;
	if ((errno = posix_spawnattr_init(&attr)) != 0)
		goto fail;
	have_attr = 1;
	sigfillset(&all);
	sigemptyset(&none);
	if ((errno = posix_spawn_file_actions_addopen(&fa, 0, name, O_RDWR,
		 0)) != 0 ||
	    (errno = posix_spawn_file_actions_adddup2(&fa, 0, 1)) != 0 ||
	    (errno = posix_spawn_file_actions_adddup2(&fa, 0, 2)) != 0 ||
	    (errno = posix_spawn_file_actions_addclosefrom_np(&fa, 3)) != 0 ||
	    (errno = posix_spawn_file_actions_addchdir_np(&fa, req->cwd)) !=
		0 ||
	    (errno = posix_spawnattr_setflags(&attr,
		 POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
		     POSIX_SPAWN_SETSIGDEF)) != 0 ||
	    (errno = posix_spawnattr_setsigmask(&attr, &none)) != 0 ||
	    (errno = posix_spawnattr_setsigdefault(&attr, &all)) != 0) {
		log_warn("spawn: attributes");
		goto fail;
	}
	/* posix_spawn has no umask attribute; the loop is single-threaded,
	 * so ours is swapped for the shell's around the call. */
	mine = umask(req->umask);
	errno = posix_spawn(&pid, req->path, &fa, &attr, req->argv, env);
	(void)umask(mine);
	if (errno != 0) {
		log_warn("spawn: %s", req->path);
		goto fail;
	}
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);

	if (fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK) == -1)
		fatal("spawn: O_NONBLOCK on the pty master");
	res->pid = pid;
	res->master = master;
	res->tty = st.st_rdev;
	return (0);
fail:
	err = errno;
	if (have_fa)
		posix_spawn_file_actions_destroy(&fa);
	if (have_attr)
		posix_spawnattr_destroy(&attr);
	if (master != -1)
		close(master);
	errno = err;
	return (-1);
}
