/*
 * spawn.h -- start a shell under a new pty.
 *
 * Owns: creating the pty pair, the child's session, controlling tty, cwd,
 * signal state, descriptors and environment.  Does not own: the master fd
 * once returned (term.c) or reaping the child (term.c, SIGCHLD).
 */
#ifndef PTYD_SPAWN_H
#define PTYD_SPAWN_H

#include <sys/types.h>

struct spawn_req {
	const char  *path; /* the shell */
	char *const *argv;
	char *const *env; /* allowlisted daemon environment */
	const char  *cwd;
	unsigned int rows;
	unsigned int cols;
	mode_t	     umask; /* the shell's */
	int	     keeper; /* the keeper's child (CLONE_PARENT), the
				master in packet mode (DESIGN 10) */
};

struct spawn_result {
	pid_t pid;
	int   master; /* CLOEXEC, NONBLOCK */
	dev_t tty;    /* the slave's device number */
};

/* 0, or -1 with errno (the cause is logged, with its path, and
 * spawn_error says it without). */
int spawn_shell(const struct spawn_req *, struct spawn_result *);

/* Why the last spawn_shell failed, in words a client may be shown (no
 * path): "could not start the shell: no such file or directory". */
const char *spawn_error(void);

/* Whether the last spawn_shell failed on a limit of the system (no pty
 * left, no process, no descriptor, no memory) rather than on the shell or
 * the workspace: a 503 to retry, not a 500 to fix. */
int spawn_exhausted(void);

/* The environment a shell gets, built from base plus the fixed variables
 * (exposed for tests).  Returns a NULL-terminated array in buf of n. */
int spawn_env(char *const *base, const char *cwd, unsigned int rows,
    unsigned int cols, char **out, size_t n, char *scratch, size_t scratchlen);

/* Whether a daemon environment entry may pass to a shell. */
int spawn_env_allowed(const char *entry);

#endif /* PTYD_SPAWN_H */
