/*
 * ptydctl_pools.c -- `ptydctl --pools COMMAND ...`: for root, the command
 * run against every account of ptyd-pool's folder (ptyd-pool(8)), each
 * line of its output under the pool's name.
 *
 * Owns: the walk of the folder (the accounts ptyd-pool runs: NAME.conf),
 * who each account is (the file's user, read with lib/config.c), and a
 * child per account that drops to it (groups, gid, uid, checked; no
 * capability; no_new_privs) and runs this ptydctl again with --config
 * FILE, so it finds that account's ptyd exactly as the account's own
 * processes do.  Root never speaks to an account's socket: what an
 * account's ptyd answers is read by a process of that account only, and
 * root reads lines of text from a pipe.  Does not own any command.
 */
#include <sys/prctl.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "ptydctl.h"

#define POOLS_LINE_MAX 4096

/* A pool's name: the file's, without .conf (as ptyd-pool reads it). */
static int
pools_filter(const struct dirent *d)
{
	size_t len = strlen(d->d_name), i;

	if (len <= 5 || len > 64 + 5 || d->d_name[0] == '.' ||
	    d->d_name[0] == '-' || strcmp(d->d_name + len - 5, ".conf") != 0)
		return (0);
	for (i = 0; i < len - 5; i++)
		if (strchr(
			"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			"0123456789._-",
			d->d_name[i]) == NULL)
			return (0);
	return (1);
}

/* In the child: become the account, for good, or exit 2. */
static void
pools_become(const struct passwd *pw)
{
	uid_t r, e, s;

	if (initgroups(pw->pw_name, pw->pw_gid) == -1 ||
	    setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) == -1 ||
	    setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) == -1)
		die("dropping to the account");
	if (getresuid(&r, &e, &s) == -1 || r != pw->pw_uid || e != pw->pw_uid ||
	    s != pw->pw_uid || setuid(0) != -1) {
		fprintf(stderr, "ptydctl: could not drop root\n");
		exit(2);
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		die("PR_SET_NO_NEW_PRIVS");
}

/* The child: ptydctl --config FILE COMMAND ..., as the account. */
static void __attribute__((noreturn)) pools_child(const struct passwd *pw,
    const char *path, int out, int argc, char **argv)
{
	const char **av, *env[5];
	char	    *home, *user, *logname;
	int	     i;

	if (dup2(out, STDOUT_FILENO) == -1 || dup2(out, STDERR_FILENO) == -1)
		_exit(2);
	(void)close_range(STDERR_FILENO + 1, ~0U, 0);
	pools_become(pw);
	if ((av = calloc((size_t)argc + 4, sizeof(*av))) == NULL)
		die("calloc");
	av[0] = "ptydctl";
	av[1] = "--config";
	av[2] = path;
	for (i = 0; i < argc; i++)
		av[3 + i] = argv[i];
	if (asprintf(&home, "HOME=%s", pw->pw_dir) == -1 ||
	    asprintf(&user, "USER=%s", pw->pw_name) == -1 ||
	    asprintf(&logname, "LOGNAME=%s", pw->pw_name) == -1)
		die("asprintf");
	env[0] = home;
	env[1] = user;
	env[2] = logname;
	env[3] = "PATH=/usr/local/bin:/usr/bin:/bin";
	env[4] = NULL;
	if (chdir(pw->pw_dir) == -1)
		(void)chdir("/");
	execve("/proc/self/exe", (char *const *)av, (char *const *)env);
	die("exec");
}

/* The child's output, each line as "NAME: line". */
static void
pools_relay(const char *name, int in)
{
	FILE   *fp;
	char   *line = NULL;
	size_t	cap = 0;
	ssize_t n;

	if ((fp = fdopen(in, "r")) == NULL)
		die("fdopen");
	while ((n = getline(&line, &cap, fp)) != -1) {
		if (n > POOLS_LINE_MAX)
			n = POOLS_LINE_MAX;
		while (n > 0 && line[n - 1] == '\n')
			n--;
		printf("%s: %.*s\n", name, (int)n, line);
	}
	free(line);
	fclose(fp);
	fflush(stdout);
}

/* Who the file says the account is; NULL (said why) if no one. */
static struct passwd *
pools_who(const char *name, const char *path)
{
	struct config *c = config_new(CONFIG_POOL, "ptydctl");
	struct passwd *pw = NULL;
	const char    *user;

	config_set_home(c, NULL);
	if (config_file(c, path, CONFIG_USER, 1) == -1)
		printf("%s: ptydctl: %s\n", name, config_error(c));
	else if ((user = config_str(c, CONFIG_USER_NAME)) == NULL ||
	    /* cppcheck-suppress getpwnamCalled -- one thread */
	    (pw = getpwnam(user)) == NULL || pw->pw_uid == 0) {
		printf("%s: ptydctl: no account (user) to run as\n", name);
		pw = NULL;
	}
	config_free(c);
	return (pw);
}

/* One account; its exit status. */
static int
pools_one(const char *dir, const char *file, int argc, char **argv)
{
	char	       name[128], path[4096];
	struct passwd *pw;
	int	       fds[2], status;
	pid_t	       pid;

	snprintf(name, sizeof(name), "%.*s", (int)(strlen(file) - 5), file);
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fflush(stdout);
	if ((pw = pools_who(name, path)) == NULL)
		return (2);
	if (pipe2(fds, O_CLOEXEC) == -1)
		die("pipe");
	if ((pid = fork()) == -1)
		die("fork");
	if (pid == 0)
		pools_child(pw, path, fds[1], argc, argv);
	close(fds[1]);
	pools_relay(name, fds[0]);
	while (waitpid(pid, &status, 0) == -1)
		if (errno != EINTR)
			die("waitpid");
	return (WIFEXITED(status) ? WEXITSTATUS(status) : 2);
}

int
ctl_pools(const char *dir, int argc, char **argv)
{
	struct dirent **list;
	int		n, i, rv = 0, one;

	if (geteuid() != 0) {
		fprintf(stderr,
		    "ptydctl: --pools is root's: it runs the "
		    "command as each account\n");
		return (2);
	}
	if (argc < 1)
		usage();
	if (strcmp(argv[0], "attach") == 0 || strcmp(argv[0], "service") == 0) {
		fprintf(stderr, "ptydctl: --pools: %s is one account's\n",
		    argv[0]);
		return (2);
	}
	if ((n = scandir(dir, &list, pools_filter, alphasort)) == -1)
		die(dir);
	for (i = 0; i < n; i++) {
		if ((one = pools_one(dir, list[i]->d_name, argc, argv)) > rv)
			rv = one;
		free(list[i]);
	}
	free(list);
	return (rv);
}
