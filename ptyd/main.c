/*
 * main.c -- ptyd: options, startup, the loop, shutdown.
 *
 * Owns: parsing the command line into ptyd_conf, the order of startup
 * (socket bound before daemonizing, so a parent that waits for our exit can
 * connect at once), PR_SET_CHILD_SUBREAPER, the pid file, the reaper's
 * timer, what each signal means, and the shutdown sequence.  Does not own
 * any terminal or connection (term.c, conn.c) or the database (store.c).
 */
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "account.h"
#include "client.h"
#include "conn.h"
#include "ev.h"
#include "harden.h"
#include "listen.h"
#include "lock.h"
#include "log.h"
#include "mirror.h"
#include "proc.h"
#include "ptyd.h"
#include "reap.h"
#include "sig.h"
#include "spawn.h"
#include "store.h"
#include "term.h"
#include "xmalloc.h"

extern char **environ;

static struct store   *main_store;
static struct ev_timer main_reap_timer;
static int	       main_quit;
static int	       main_shutting_down;
static int64_t	       main_deadline;
static const char     *main_pidfile;

enum {
	OPT_SOCKET = 256,
	OPT_DB,
	OPT_LOG,
	OPT_PIDFILE,
	OPT_SHELL,
	OPT_SHELL_ARG,
	OPT_IDLE_GRACE,
	OPT_REAP_INTERVAL,
	OPT_LINGER,
	OPT_STALL_TIMEOUT,
	OPT_MAX_TERMINALS,
	OPT_MAX_PER_OWNER,
	OPT_MAX_VIEWERS,
	OPT_RING_SIZE,
	OPT_INPUT_LIMIT,
	OPT_WORKSPACE_ROOT,
	OPT_DEFAULT_WORKSPACE,
};

static const struct option main_opts[] = { { "foreground", no_argument, NULL,
					       'f' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "socket", required_argument, NULL, OPT_SOCKET },
	{ "db", required_argument, NULL, OPT_DB },
	{ "log", required_argument, NULL, OPT_LOG },
	{ "pidfile", required_argument, NULL, OPT_PIDFILE },
	{ "shell", required_argument, NULL, OPT_SHELL },
	{ "shell-arg", required_argument, NULL, OPT_SHELL_ARG },
	{ "idle-grace", required_argument, NULL, OPT_IDLE_GRACE },
	{ "reap-interval", required_argument, NULL, OPT_REAP_INTERVAL },
	{ "linger", required_argument, NULL, OPT_LINGER },
	{ "stall-timeout", required_argument, NULL, OPT_STALL_TIMEOUT },
	{ "max-terminals", required_argument, NULL, OPT_MAX_TERMINALS },
	{ "max-per-owner", required_argument, NULL, OPT_MAX_PER_OWNER },
	{ "max-viewers", required_argument, NULL, OPT_MAX_VIEWERS },
	{ "ring-size", required_argument, NULL, OPT_RING_SIZE },
	{ "input-limit", required_argument, NULL, OPT_INPUT_LIMIT },
	{ "workspace-root", required_argument, NULL, OPT_WORKSPACE_ROOT },
	{ "default-workspace", required_argument, NULL, OPT_DEFAULT_WORKSPACE },
	{ NULL, 0, NULL, 0 } };

static void __attribute__((noreturn)) usage(int status)
{
	fprintf(status == 0 ? stdout : stderr,
	    "usage: ptyd [-f|--foreground] [-v] [--socket PATH] [--db PATH] [--log PATH]\n"
	    "            [--pidfile PATH] [--shell PATH] [--shell-arg ARG]...\n"
	    "            [--idle-grace SEC] [--reap-interval SEC] [--linger SEC]\n"
	    "            [--stall-timeout SEC] [--max-terminals N] [--max-per-owner N]\n"
	    "            [--max-viewers N] [--ring-size BYTES] [--input-limit BYTES]\n"
	    "            [--workspace-root DIR]... [--default-workspace DIR]\n");
	exit(status);
}

/* Seconds (decimals allowed) to microseconds, at least min_us. */
static int64_t
main_seconds(const char *name, const char *s, int64_t min_us)
{
	char  *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || v < 0 || v > 1e9 ||
	    v * 1e6 < (double)min_us)
		fatalx("--%s: %s: want seconds >= %.3f", name, s,
		    (double)min_us / 1e6);
	return ((int64_t)(v * 1e6));
}

static unsigned long long
main_number(const char *name, const char *s, unsigned long long min,
    unsigned long long max)
{
	char		  *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || *s == '-' || v < min ||
	    v > max)
		fatalx("--%s: %s: want %llu..%llu", name, s, min, max);
	return (v);
}

static const char *
main_home(void)
{
	const char    *home = getenv("HOME");
	struct passwd *pw;

	if (home != NULL && *home == '/')
		return (home);
	/* ptyd has one thread. */
	/* cppcheck-suppress getpwuidCalled */
	if ((pw = getpwuid(getuid())) != NULL && pw->pw_dir != NULL)
		return (pw->pw_dir);
	return ("/");
}

static int
main_is_exec(const char *path)
{
	struct stat st;

	return (path != NULL && *path == '/' && stat(path, &st) == 0 &&
	    S_ISREG(st.st_mode) && access(path, X_OK) == 0);
}

/* --shell, else $SHELL if it exists, else bash, else sh. */
static const char *
main_shell(const char *opt)
{
	static const char *const bash[] = { "/bin/bash", "/usr/bin/bash",
		"/usr/local/bin/bash", NULL };
	const char		*env = getenv("SHELL");
	size_t			 i;

	if (opt != NULL) {
		if (!main_is_exec(opt))
			fatalx("--shell %s: not an executable absolute path",
			    opt);
		return (opt);
	}
	if (main_is_exec(env))
		return (env);
	for (i = 0; bash[i] != NULL; i++)
		if (main_is_exec(bash[i]))
			return (bash[i]);
	return ("/bin/sh");
}

static int
main_sh_family(const char *base)
{
	static const char *const fam[] = { "sh", "bash", "dash", "ash", "ksh",
		"mksh", "pdksh", "zsh", "yash", "posh", NULL };
	size_t			 i;

	for (i = 0; fam[i] != NULL; i++)
		if (strcmp(base, fam[i]) == 0)
			return (1);
	return (0);
}

static char *
main_realdir(const char *what, const char *path)
{
	char	    buf[PATH_MAX];
	struct stat st;

	if (realpath(path, buf) == NULL)
		fatal("%s %s", what, path);
	if (stat(buf, &st) == -1 || !S_ISDIR(st.st_mode))
		fatalx("%s %s: not a directory", what, path);
	return (xstrdup(buf));
}

/* mkdir -p the parents of path (for the database). */
static void
main_mkparents(const char *path)
{
	char buf[PATH_MAX], *p;

	if (strlen(path) >= sizeof(buf))
		return;
	strcpy(buf, path);
	for (p = buf + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0700) == -1 && errno != EEXIST)
			log_warn("mkdir %s", buf);
		*p = '/';
	}
}

/*
 * The database and its -wal and -shm are ours alone, and so is the folder
 * they live in (DESIGN 6), even if an earlier run or another umask left
 * them readable.  Only what this account owns is touched.
 */
static void
main_tighten(const char *db)
{
	static const char *const suffix[] = { "", "-wal", "-shm" };
	char			 buf[PATH_MAX], *slash;
	struct stat		 st, home;
	size_t			 i;

	for (i = 0; i < sizeof(suffix) / sizeof(suffix[0]); i++) {
		if (snprintf(buf, sizeof(buf), "%s%s", db, suffix[i]) >=
		    (int)sizeof(buf))
			return;
		if (stat(buf, &st) == 0 && st.st_uid == geteuid() &&
		    (st.st_mode & 077) != 0 && chmod(buf, 0600) == -1)
			log_warn("chmod 0600 %s", buf);
	}
	snprintf(buf, sizeof(buf), "%s", db);
	if ((slash = strrchr(buf, '/')) == NULL || slash == buf)
		return;
	*slash = '\0';
	if (stat(buf, &st) == -1 || (st.st_mode & 077) == 0)
		return;
	/*
	 * A folder that is not only ours (a shared one such as /tmp, sticky
	 * or not ours, or the home directory a database was put straight
	 * into) is the operator's to change, not ours: say so instead.
	 */
	if (st.st_uid != geteuid() || (st.st_mode & S_ISVTX) != 0 ||
	    (stat(main_home(), &home) == 0 && home.st_dev == st.st_dev &&
		home.st_ino == st.st_ino)) {
		log_warnx("the database's folder %s is open to others (%04o); "
			  "give ptyd a folder of its own",
		    buf, (unsigned int)(st.st_mode & 07777));
		return;
	}
	if (chmod(buf, st.st_mode & 07700) == -1)
		log_warn("chmod 0700 %s", buf);
	else
		log_info("state directory %s made private (was %04o)", buf,
		    (unsigned int)(st.st_mode & 07777));
}

static void
main_pidfile_write(const char *path)
{
	char buf[32];
	int  fd, n;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd == -1)
		fatal("pidfile %s", path);
	n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
	if (write(fd, buf, (size_t)n) != n)
		fatal("pidfile %s", path);
	close(fd);
}

/*
 * Fork into the background.  The parent waits on a pipe until the child
 * says it is serving (socket accepting, pid file written) and exits 0, or
 * exits 1 if the child dies first: whoever ran `ptyd` can connect, or read
 * the pid file, as soon as it returns.  Returns the child's end of the pipe.
 */
static int
main_daemonize(void)
{
	pid_t	pid;
	ssize_t n;
	int	fd, p[2];
	char	c;

	if (pipe2(p, O_CLOEXEC) == -1)
		fatal("pipe");
	if ((pid = fork()) == -1)
		fatal("fork");
	if (pid > 0) {
		close(p[1]);
		c = 0;
		do
			n = read(p[0], &c, 1);
		while (n == -1 && errno == EINTR);
		_exit(n == 1 && c == 'r' ? 0 : 1);
	}
	close(p[0]);
	if (setsid() == -1)
		fatal("setsid");
	if (chdir("/") == -1)
		fatal("chdir /");
	if ((fd = open("/dev/null", O_RDWR)) == -1)
		fatal("/dev/null");
	(void)dup2(fd, STDIN_FILENO);
	(void)dup2(fd, STDOUT_FILENO);
	(void)dup2(fd, STDERR_FILENO);
	if (fd > STDERR_FILENO)
		close(fd);
	return (p[1]);
}

static void
main_reap_cb(void *arg)
{
	int64_t now = ev_now();

	(void)arg;
	(void)reap_run(now);
	ev_timer_at(&main_reap_timer, now + ptyd_conf.reap_interval);
}

static void
main_shutdown(void)
{
	int64_t now = ev_now();

	if (main_shutting_down)
		return;
	main_shutting_down = 1;
	main_deadline = now + PTYD_SHUTDOWN_DEADLINE;
	log_info("shutting down");
	ev_timer_stop(&main_reap_timer);
	listen_close();
	conn_shutdown();
	term_shutdown_all(now);
}

static void
main_signal(int signo)
{
	switch (signo) {
	case SIGCHLD:
		term_reap_children(ev_now());
		break;
	case SIGHUP:
		log_reopen();
		log_info("log reopened");
		break;
	case SIGTERM:
	case SIGINT:
		main_shutdown();
		break;
	}
}

int
main(int argc, char **argv)
{
	char	    sockbuf[PATH_MAX], dbbuf[PATH_MAX];
	const char *socket_path = NULL, *db_path = NULL;
	const char *log_path = NULL, *shell_opt = NULL;
	const char *default_ws = NULL, *base, *xdg;
	char	  **shell_args = NULL, **roots = NULL, **env;
	size_t	    nshell_args = 0, nroots = 0, nenv, i, j;
	int	    ch, foreground = 0, verbose = 0, per_owner_set = 0;
	int	    ready_fd = -1;
	int64_t	    now;

	/*
	 * Before anything else: no shell of ours may read our memory or the
	 * environment we were started with (DESIGN 6).  What we keep of it
	 * is the shells' allowlist and our own PTYD_* settings; every
	 * file we create is ours alone.
	 */
	if (harden_nodump() == -1)
		fatal("PR_SET_DUMPABLE");
	harden_env(&harden_daemon_env);
	(void)account_fix_env();
	ptyd_conf.shell_umask = umask(077);
	log_init(NULL, 0, 0);
	while ((ch = getopt_long(argc, argv, "fvh", main_opts, NULL)) != -1) {
		switch (ch) {
		case 'f':
			foreground = 1;
			break;
		case 'v':
			verbose = 1;
			break;
		case 'h':
			usage(0);
		case OPT_SOCKET:
			socket_path = optarg;
			break;
		case OPT_DB:
			db_path = optarg;
			break;
		case OPT_LOG:
			log_path = optarg;
			break;
		case OPT_PIDFILE:
			main_pidfile = optarg;
			break;
		case OPT_SHELL:
			shell_opt = optarg;
			break;
		case OPT_SHELL_ARG:
			shell_args = xreallocarray(shell_args, nshell_args + 1,
			    sizeof(*shell_args));
			shell_args[nshell_args++] = optarg;
			break;
		case OPT_IDLE_GRACE:
			ptyd_conf.idle_grace = main_seconds("idle-grace",
			    optarg, 0);
			break;
		case OPT_REAP_INTERVAL:
			ptyd_conf.reap_interval = main_seconds("reap-interval",
			    optarg, PTYD_SEC);
			break;
		case OPT_LINGER:
			ptyd_conf.linger = main_seconds("linger", optarg, 0);
			break;
		case OPT_STALL_TIMEOUT:
			ptyd_conf.stall_timeout = main_seconds("stall-timeout",
			    optarg, 100000);
			break;
		case OPT_MAX_TERMINALS:
			ptyd_conf.max_terminals = (unsigned int)
			    main_number("max-terminals", optarg, 1, 1000000);
			break;
		case OPT_MAX_PER_OWNER:
			ptyd_conf.max_per_owner = (unsigned int)
			    main_number("max-per-owner", optarg, 1, 1000000);
			per_owner_set = 1;
			break;
		case OPT_MAX_VIEWERS:
			ptyd_conf.max_viewers = (unsigned int)
			    main_number("max-viewers", optarg, 1, 1000000);
			break;
		case OPT_RING_SIZE:
			ptyd_conf.ring_size = (size_t)main_number("ring-size",
			    optarg, 1024, (size_t)1 << 34);
			break;
		case OPT_INPUT_LIMIT:
			ptyd_conf.input_limit = (size_t)
			    main_number("input-limit", optarg, PROTO_INPUT_MAX,
				(size_t)1 << 34);
			break;
		case OPT_WORKSPACE_ROOT:
			roots = xreallocarray(roots, nroots + 1,
			    sizeof(*roots));
			roots[nroots++] = main_realdir("--workspace-root",
			    optarg);
			break;
		case OPT_DEFAULT_WORKSPACE:
			default_ws = optarg;
			break;
		default:
			usage(1);
		}
	}
	if (optind != argc)
		usage(1);
	/* The per-owner cap defaults to the global one. */
	if (!per_owner_set)
		ptyd_conf.max_per_owner = ptyd_conf.max_terminals;

	if (socket_path == NULL) {
		if (client_default_socket(sockbuf, sizeof(sockbuf)) == -1)
			fatalx("default socket path too long");
		socket_path = sockbuf;
	}
	if (db_path == NULL) {
		xdg = getenv("XDG_STATE_HOME");
		if (xdg != NULL && *xdg == '/')
			snprintf(dbbuf, sizeof(dbbuf), "%s/ptyd/ptyd.db", xdg);
		else
			snprintf(dbbuf, sizeof(dbbuf),
			    "%s/.local/state/ptyd/ptyd.db", main_home());
		db_path = dbbuf;
	}

	ptyd_conf.shell = main_shell(shell_opt);
	base = strrchr(ptyd_conf.shell, '/');
	base = base != NULL ? base + 1 : ptyd_conf.shell;
	ptyd_conf.shell_argv = xcalloc(nshell_args + 3, sizeof(char *));
	ptyd_conf.shell_argv[0] = xstrdup(base);
	if (shell_args != NULL) {
		for (i = 0; i < nshell_args; i++)
			ptyd_conf.shell_argv[i + 1] = shell_args[i];
	} else if (main_sh_family(base))
		ptyd_conf.shell_argv[1] = xstrdup("-i");
	free(shell_args);

	if (nroots == 0) {
		roots = xcalloc(1, sizeof(*roots));
		roots[nroots++] = main_realdir("home directory", main_home());
	}
	ptyd_conf.roots = roots;
	ptyd_conf.nroots = nroots;
	ptyd_conf.default_workspace = main_realdir("--default-workspace",
	    default_ws != NULL ? default_ws : main_home());

	/* The environment never changes: filter it once. */
	for (nenv = 0; environ[nenv] != NULL; nenv++)
		;
	env = xcalloc(nenv + 1, sizeof(*env));
	for (i = j = 0; i < nenv; i++)
		if (spawn_env_allowed(environ[i]))
			env[j++] = environ[i];
	ptyd_conf.env = env;

	/*
	 * Whatever a caller left open (a pipe it waits on for EOF, say) must
	 * not be held by a daemon for ever: before opening anything of our
	 * own, close every inherited fd above stderr.
	 */
	if (!foreground)
		(void)close_range(STDERR_FILENO + 1, ~0U, 0);
	/* The log: --log, else stderr in the foreground, else a file in
	 * the state folder (never /dev/null); fatal errors also go to stderr,
	 * where the caller sees them. */
	main_mkparents(db_path);
	log_init(log_path != NULL || foreground ? log_path :
						  log_default_path(db_path),
	    0, verbose);
	/* Before the socket, the pid file or the database is touched. */
	lock_take(db_path);
	if (listen_open(socket_path) == -1)
		fatalx("cannot listen on %s", socket_path);
	if (!foreground) {
		ready_fd = main_daemonize();
		lock_write_pid();
	}
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) == -1)
		fatal("PR_SET_CHILD_SUBREAPER");
	if (ev_init() == -1)
		fatal("epoll");
	if (sig_init(main_signal) == -1)
		fatal("signals");
	now = ev_now();
	if ((main_store = store_open(db_path, (double)ev_wall_us(now) / 1e6)) ==
	    NULL)
		fatalx("store_open: out of memory");
	main_tighten(db_path);
	term_init(main_store);
	conn_init(now);
	if (listen_start() == -1)
		fatal("listen");
	if (main_pidfile != NULL)
		main_pidfile_write(main_pidfile);
	ev_timer_init(&main_reap_timer, main_reap_cb, NULL);
	ev_timer_at(&main_reap_timer, now + ptyd_conf.reap_interval);
	log_info("listening on %s, shell %s, %u terminals at most", socket_path,
	    ptyd_conf.shell, ptyd_conf.max_terminals);
	if (ready_fd != -1) {
		if (write(ready_fd, "r", 1) != 1)
			log_warn("telling the parent we are ready");
		close(ready_fd);
	}

	while (!main_quit) {
		if (ev_run_once(main_shutting_down ? 100000 : -1) == -1)
			fatal("epoll_wait");
		if (!main_shutting_down)
			continue;
		if (term_none_left() && conn_count() == 0)
			main_quit = 1;
		else if (ev_now() >= main_deadline) {
			log_warnx("shutdown deadline: finishing what is left");
			term_force_finish(ev_now());
			conn_close_all();
			(void)ev_run_once(0);
			main_quit = 1;
		}
	}

	proc_sweep_flush();
	mirror_flush(ev_now());
	store_close(main_store);
	term_done();
	sig_done();
	ev_done();
	if (main_pidfile != NULL)
		(void)unlink(main_pidfile);
	log_info("exited");
	log_close();
	return (0);
}
