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
 * root reads lines of text from a pipe: bounded, made safe for root's
 * terminal, and only until the child ends (or its deadline passes).
 * Does not own any command.
 */
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/keyctl.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "ptydctl.h"
#include "safetext.h"

#define POOLS_LINE_MAX 4096
/* An account's command has this long (ms) before it is killed: the
 * account can stop its own process, and root's command must end. */
#define POOLS_DEADLINE_MS 60000
/* What is read of the pipe once the account's process has ended: its
 * last lines, not whatever another of its processes goes on writing. */
#define POOLS_DRAIN_MAX (64 * 1024)

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
	/* Not root's session keyring: whoever possesses it has its keys. */
	if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) == -1 &&
	    errno != ENOSYS)
		die("KEYCTL_JOIN_SESSION_KEYRING");
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

/* One line of the account's, on root's terminal: "NAME: line", made
 * safe (lib/safetext.c), so it can neither steer the terminal nor move
 * back over its prefix to read as another pool's. */
static void
pools_line(const char *name, const char *line, size_t len, int cut)
{
	char safe[POOLS_LINE_MAX + 1];

	safetext(safe, line, len);
	printf("%s: %s%s\n", name, safe, cut ? " [cut]" : "");
}

static long long
pools_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

/* The line an account's output is being cut into, at most
 * POOLS_LINE_MAX bytes (cut: there was more). */
struct pools_lines {
	char   text[POOLS_LINE_MAX];
	size_t len;
	int    cut;
};

/* n bytes of an account's output: each whole line printed. */
static void
pools_take(const char *name, struct pools_lines *ln, const char *buf, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (buf[i] == '\n') {
			pools_line(name, ln->text, ln->len, ln->cut);
			ln->len = 0;
			ln->cut = 0;
		} else if (ln->len == sizeof(ln->text))
			ln->cut = 1;
		else
			ln->text[ln->len++] = buf[i];
	}
}

/*
 * The child's output, each line as "NAME: line", until the pipe's end,
 * or the child's (its pidfd: another process of the account may hold
 * the pipe open for ever; what is left in it then is read, up to
 * POOLS_DRAIN_MAX, not waited for), or the deadline (the child is
 * killed).  Lines are cut at POOLS_LINE_MAX: no buffer grows with what
 * the account writes.  0, or -1 if the deadline passed.
 */
static int
pools_relay(const char *name, int in, pid_t pid)
{
	struct pollfd	   pfd[2];
	struct pools_lines ln = { { 0 }, 0, 0 };
	char		   buf[4096];
	size_t		   drained = 0;
	long long	   end = pools_ms() + POOLS_DEADLINE_MS, left;
	ssize_t		   n;
	int		   pidfd, ended = 0, rv = 0;

	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	(void)fcntl(in, F_SETFL, O_NONBLOCK);
	for (;;) {
		if (!ended) {
			pfd[0].fd = in;
			pfd[0].events = POLLIN;
			pfd[1].fd = pidfd;
			pfd[1].events = POLLIN;
			pfd[0].revents = pfd[1].revents = 0;
			if ((left = end - pools_ms()) <= 0) {
				(void)kill(pid, SIGKILL);
				printf("%s: ptydctl: no end in %d s: killed\n",
				    name, POOLS_DEADLINE_MS / 1000);
				rv = -1;
				break;
			}
			if (poll(pfd, pidfd == -1 ? 1 : 2, (int)left) == -1 &&
			    errno != EINTR)
				die("poll");
			if (pfd[1].revents != 0)
				ended = 1;
		}
		n = read(in, buf, sizeof(buf));
		if (n == -1 && errno == EINTR)
			continue;
		if (n == 0 || (n == -1 && errno != EAGAIN))
			break;
		if (n == -1) {
			if (ended)
				break;
			continue;
		}
		if (ended && (drained += (size_t)n) > POOLS_DRAIN_MAX)
			break;
		pools_take(name, &ln, buf, (size_t)n);
	}
	if (ln.len > 0)
		pools_line(name, ln.text, ln.len, ln.cut);
	if (pidfd != -1)
		close(pidfd);
	close(in);
	fflush(stdout);
	return (rv);
}

/* Who the file says the account is, with its group as ptyd-pool reads
 * it (the file's group, else the account's); NULL (said why) if no one,
 * or root's uid or gid, which ptyd-pool never runs. */
static struct passwd *
pools_who(const char *name, const char *path)
{
	struct config *c = config_new(CONFIG_POOL, "ptydctl");
	struct passwd *pw = NULL;
	struct group  *gr;
	const char    *user, *group;

	config_set_home(c, NULL);
	if (config_file(c, path, CONFIG_USER, 1) == -1)
		printf("%s: ptydctl: %s\n", name, config_error(c));
	else if ((user = config_str(c, CONFIG_USER_NAME)) == NULL ||
	    /* cppcheck-suppress getpwnamCalled -- one thread */
	    (pw = getpwnam(user)) == NULL || pw->pw_uid == 0) {
		printf("%s: ptydctl: no account (user) to run as\n", name);
		pw = NULL;
	} else if ((group = config_str(c, CONFIG_GROUP_NAME)) != NULL &&
	    *group != '\0') {
		/* cppcheck-suppress getgrnamCalled -- one thread */
		if ((gr = getgrnam(group)) == NULL) {
			printf("%s: ptydctl: group %s: no such group\n", name,
			    group);
			pw = NULL;
		} else
			pw->pw_gid = gr->gr_gid;
	}
	if (pw != NULL && pw->pw_gid == 0) {
		printf("%s: ptydctl: a pool runs as root's gid never\n", name);
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
	int	       fds[2], status, late;
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
	late = pools_relay(name, fds[0], pid);
	while (waitpid(pid, &status, 0) == -1)
		if (errno != EINTR)
			die("waitpid");
	return (late == 0 && WIFEXITED(status) ? WEXITSTATUS(status) : 2);
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
