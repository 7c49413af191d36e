/*
 * main.c -- ptyd-pool: every account's ptyd and ptyd.fcgi from one
 * service (ptyd-pool(8), DESIGN 11).
 *
 * Owns: the command line, the checks at start (root, the folder), where
 * the two programs are, the master's own hardening, and the loop: one
 * thread, poll(2) on a signalfd and the children's pipes, with the next
 * timer (proc.c) as its timeout.  What each signal means:
 *
 *   SIGHUP            reload the folder (reload.c)
 *   SIGUSR1           upgrade every account's ptyd (shells kept)
 *   SIGUSR2           run the master's binary again, same pid, every
 *                     process kept (adopt.c)
 *   SIGTERM, SIGINT   stop every account (their shells end), then exit
 *   SIGCHLD           reap, log why, start again with backoff (proc.c)
 *
 * The master reads its folder, the password and group databases and its
 * children's output, and nothing from the network.
 */
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harden.h"
#include "pool.h"
#include "util.h"

#ifndef PTYD_SYSCONFDIR
#define PTYD_SYSCONFDIR "/etc"
#endif
#ifndef PTYD_LIBEXECDIR
#define PTYD_LIBEXECDIR "/usr/local/libexec/ptyd"
#endif
#ifndef PTYD_BINDIR
#define PTYD_BINDIR "/usr/local/bin"
#endif
#ifndef PTYD_PREFIX
#define PTYD_PREFIX "/usr/local"
#endif
#ifndef PTYD_SBINDIR
#define PTYD_SBINDIR "/usr/local/sbin"
#endif
#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

#define POOL_DIR PTYD_SYSCONFDIR "/ptyd/pool.d"

struct pool_opts pool_opts = { POOL_DIR, "", "", 0 };

static void __attribute__((noreturn)) usage(int status)
{
	fprintf(status == 0 ? stdout : stderr,
	    "usage: ptyd-pool [-t] [-d DIR] [--ptyd PATH] [--fcgi PATH]\n"
	    "  -d, --dir DIR   the pool folder, one ACCOUNT.conf each (%s)\n"
	    "  -t, --test      read every file, say what is wrong, exit\n"
	    "      --ptyd PATH, --fcgi PATH\n"
	    "                  the programs (the install's)\n"
	    "  -h, --help      this help\n"
	    "      --version   print the version\n"
	    "Runs in the foreground, as root; logs to stderr.  SIGHUP "
	    "reloads the folder,\nSIGUSR1 upgrades every ptyd, SIGUSR2 "
	    "runs this binary again (every shell\nkept), SIGTERM stops "
	    "every account.\n",
	    POOL_DIR);
	exit(status);
}

/*
 * A program of the install: where configure put it, moved with us when
 * the install was (DESTDIR, a package's root: we are in X/sbin, it is in
 * X/bin), or this build tree's (ours in pool/, its in build).
 */
static void
main_find(char *out, size_t size, const char *dir, const char *name,
    const char *build)
{
	char	    self[PATH_MAX], cand[PATH_MAX * 2];
	const char *sdir;
	size_t	    plen = strlen(PTYD_PREFIX), slen, dlen;
	ssize_t	    n;

	if (*out != '\0')
		return;
	snprintf(out, size, "%s/%s", dir, name);
	if ((n = readlink("/proc/self/exe", self, sizeof(self) - 1)) <= 0)
		return;
	self[n] = '\0';
	sdir = dirname(self);
	if (strncmp(PTYD_SBINDIR, PTYD_PREFIX, plen) == 0 &&
	    strncmp(dir, PTYD_PREFIX, plen) == 0) {
		slen = strlen(PTYD_SBINDIR + plen);
		dlen = strlen(sdir);
		if (dlen >= slen &&
		    strcmp(sdir + dlen - slen, PTYD_SBINDIR + plen) == 0) {
			snprintf(cand, sizeof(cand), "%.*s%s/%s",
			    (int)(dlen - slen), sdir, dir + plen, name);
			if (access(cand, X_OK) == 0 && strlen(cand) < size) {
				snprintf(out, size, "%s", cand);
				return;
			}
		}
	}
	snprintf(cand, sizeof(cand), "%s/../%s", sdir, build);
	if (access(cand, X_OK) == 0 && strlen(cand) < size &&
	    realpath(cand, self) != NULL)
		snprintf(out, size, "%s", self);
}

static void
main_options(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "test", no_argument, NULL, 't' },
		{ "ptyd", required_argument, NULL, 'P' },
		{ "fcgi", required_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "d:th", opts, NULL)) != -1) {
		switch (ch) {
		case 'd':
			pool_opts.dir = optarg;
			break;
		case 't':
			pool_opts.check = 1;
			break;
		case 'P':
			snprintf(pool_opts.ptyd, sizeof(pool_opts.ptyd), "%s",
			    optarg);
			break;
		case 'F':
			snprintf(pool_opts.fcgi, sizeof(pool_opts.fcgi), "%s",
			    optarg);
			break;
		case 'h':
			usage(0);
		case 'V':
			printf("ptyd-pool %s\n", PACKAGE_VERSION);
			exit(0);
		default:
			usage(2);
		}
	}
	if (optind != argc)
		usage(2);
	if (pool_opts.dir[0] != '/')
		plog_fatalx("--dir %s: want an absolute path", pool_opts.dir);
	main_find(pool_opts.ptyd, sizeof(pool_opts.ptyd), PTYD_LIBEXECDIR,
	    "ptyd", "ptyd/ptyd");
	main_find(pool_opts.fcgi, sizeof(pool_opts.fcgi), PTYD_BINDIR,
	    "ptyd.fcgi", "fcgi/ptyd.fcgi");
}

/* The signals the loop takes, through a signalfd; -1 on failure. */
static int
main_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	if (sigprocmask(SIG_BLOCK, &set, NULL) == -1)
		return (-1);
	(void)signal(SIGPIPE, SIG_IGN);
	return (signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
}

static void
main_reap(int64_t now)
{
	pid_t pid;
	int   status;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
		(void)proc_reaped(pid, status, now);
}

/* The signals that came: 1 once asked to stop. */
static int
main_signal(int sfd, int stopping)
{
	struct signalfd_siginfo si;

	while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGCHLD:
			main_reap(pool_now());
			break;
		case SIGHUP:
			if (stopping)
				break;
			plog_info("SIGHUP: reloading %s", pool_opts.dir);
			(void)reload_folder(pool_now(), 0);
			break;
		case SIGUSR1:
			plog_info("SIGUSR1: upgrading every ptyd");
			reload_upgrade_all();
			break;
		case SIGUSR2:
			if (stopping)
				break;
			/* Returns only if the exec failed. */
			adopt_reexec();
			break;
		case SIGTERM:
		case SIGINT:
			if (!stopping)
				plog_info("%s: stopping every account",
				    strsignal((int)si.ssi_signo));
			stopping = 1;
			reload_stop_all(pool_now());
			break;
		}
	}
	return (stopping);
}

/* What the loop polls: the signalfd first, then every child's pipe
 * (below npipes), then the pidfds of the processes adopted. */
struct main_fds {
	struct pollfd	  *pfd;
	struct pool_proc **who;
	struct pool_acct **acct;
	size_t		   cap, n, npipes;
};

/* Room for the signalfd and every child's pipe and pidfd. */
static void
main_room(struct main_fds *f)
{
	struct pool_acct *a;
	size_t		  want = 1;

	for (a = pool_accts; a != NULL; a = a->next)
		want += 2 * POOL_NKINDS;
	if (want <= f->cap)
		return;
	if ((f->pfd = reallocarray(f->pfd, want, sizeof(*f->pfd))) == NULL ||
	    (f->who = reallocarray(f->who, want, sizeof(*f->who))) == NULL ||
	    (f->acct = reallocarray(f->acct, want, sizeof(*f->acct))) == NULL)
		plog_fatal("reallocarray");
	f->cap = want;
}

static void
main_add(struct main_fds *f, int fd, struct pool_acct *a, int k)
{
	f->pfd[f->n].fd = fd;
	f->pfd[f->n].events = POLLIN;
	f->pfd[f->n].revents = 0;
	f->who[f->n] = &a->proc[k];
	f->acct[f->n++] = a;
}

static void
main_fill(struct main_fds *f, int sfd)
{
	struct pool_acct *a;
	int		  k;

	main_room(f);
	f->n = 0;
	f->pfd[f->n].fd = sfd;
	f->pfd[f->n].events = POLLIN;
	f->pfd[f->n++].revents = 0;
	for (a = pool_accts; a != NULL; a = a->next)
		for (k = 0; k < POOL_NKINDS; k++)
			if (a->proc[k].out != -1)
				main_add(f, a->proc[k].out, a, k);
	/* Then the ends of the processes that are not our children. */
	f->npipes = f->n;
	for (a = pool_accts; a != NULL; a = a->next)
		for (k = 0; k < POOL_NKINDS; k++)
			if (a->proc[k].adopted && a->proc[k].pidfd != -1)
				main_add(f, a->proc[k].pidfd, a, k);
}

/* A child's output, or the end of a process adopted. */
static void
main_serve(const struct main_fds *f)
{
	size_t i;
	int    k;

	for (i = 1; i < f->n; i++) {
		if (f->pfd[i].revents == 0)
			continue;
		k = f->who[i] == &f->acct[i]->proc[POOL_PTYD] ? POOL_PTYD :
								POOL_FCGI;
		if (i < f->npipes)
			proc_read(f->who[i], f->acct[i], (enum pool_kind)k, 0);
		else if (f->who[i]->adopted && f->who[i]->pidfd == f->pfd[i].fd)
			proc_pidfd_ended(f->acct[i], (enum pool_kind)k,
			    pool_now());
	}
}

static void
main_loop(int sfd)
{
	struct main_fds f = { NULL, NULL, NULL, 0, 0, 0 };
	int64_t		next;
	int		stopping = 0, timeout;

	for (;;) {
		main_fill(&f, sfd);
		next = proc_next(pool_now());
		timeout = next < 0	? -1 :
		    next / 1000 > 60000 ? 60000 :
					  (int)((next + 999) / 1000);
		if (poll(f.pfd, (nfds_t)f.n, timeout) == -1 && errno != EINTR)
			plog_fatal("poll");
		main_serve(&f);
		if (f.pfd[0].revents != 0)
			stopping = main_signal(sfd, stopping);
		proc_tick(pool_now());
		reload_collect();
		if (stopping && pool_accts == NULL)
			break;
	}
	free(f.pfd);
	free(f.who);
	free(f.acct);
}

int
main(int argc, char **argv)
{
	int sfd;

	if (util_stdio_open() == -1)
		return (1);
	main_options(argc, argv);
	umask(022);
	if (chdir("/") == -1)
		plog_fatal("chdir /");
	if (pool_opts.check)
		return (reload_folder(pool_now(), 1) == 0 ? 0 : 1);
	if (geteuid() != 0 || getuid() != 0)
		plog_fatalx("must be started as root: it runs each pool as "
			    "its account");
	adopt_init(argv);
	adopt_handover_read();
	/* Nothing of ours for anyone: no core, no ptrace by an account,
	 * and no secret of the environment we were started with. */
	if (harden_nodump() == -1)
		plog_fatal("PR_SET_DUMPABLE");
	harden_env(&harden_shell_env);
	if ((sfd = main_signals()) == -1)
		plog_fatal("signals");
	plog_info("ptyd-pool %s: %s, ptyd %s, ptyd.fcgi %s", PACKAGE_VERSION,
	    pool_opts.dir, pool_opts.ptyd, pool_opts.fcgi);
	if (reload_folder(pool_now(), 0) == -1)
		plog_fatalx("cannot read the pool folder");
	adopt_handover_rest();
	main_loop(sfd);
	plog_info("every account stopped");
	return (0);
}
