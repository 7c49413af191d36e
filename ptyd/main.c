/*
 * main.c -- ptyd: options, startup, the loop, shutdown.
 *
 * Owns: the settings (lib/config.c) into ptyd_conf, the order of startup
 * (socket bound before daemonizing, so a parent that waits for our exit can
 * connect at once), PR_SET_CHILD_SUBREAPER, the pid file, the reaper's
 * timer, what each signal means, and the shutdown sequence.  Does not own
 * any terminal or connection (term.c, conn.c) or the database (store.c).
 */
#include <sys/prctl.h>
#include <sys/resource.h>
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
#include "audit.h"
#include "auditlog.h"
#include "config.h"
#include "conn.h"
#include "ev.h"
#include "harden.h"
#include "keeperlink.h"
#include "listen.h"
#include "lock.h"
#include "log.h"
#include "mirror.h"
#include "proc.h"
#include "record.h"
#include "ptyd.h"
#include "reap.h"
#include "stats.h"
#include "sig.h"
#include "spawn.h"
#include "store.h"
#include "term.h"
#include "util.h"
#include "xmalloc.h"

extern char **environ;

static struct store   *main_store;
static struct ev_timer main_reap_timer;
static int	       main_quit;
static int	       main_shutting_down;
static int64_t	       main_deadline;
static int	       main_ready_fd = -1;
/* log_level's words, in the order of the settings table (lib/config.c). */
static const char *const main_log_levels[] = { "debug", "info", "warn" };
static struct config  *main_cfg; /* lives as long as we do: ptyd_conf
					 points into it */

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
			fatalx("shell %s (%s): not an executable absolute path",
			    opt, config_origin(main_cfg, CONFIG_SHELL));
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

/* mkdir -p the folder of path (the log, the database, the pid file). */
static void
main_mkparents(const char *path)
{
	char failed[PATH_MAX];

	if (util_mkparents(path, 0700, failed, sizeof(failed)) == -1)
		log_warn("mkdir %s",
		    errno == ENAMETOOLONG ? path : failed);
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
	int64_t	 now = ev_now();
	uint64_t t0 = stats_clock_us();

	(void)arg;
	(void)reap_tick(now);
	stats_reap_tick(stats_clock_us() - t0);
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
main_signal(int signo, pid_t pid)
{
	switch (signo) {
	case SIGCHLD:
		term_sigchld(pid, ev_now());
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

/* ---- settings ---------------------------------------------------------- */

static const char *main_umask_arg; /* --umask MODE, or NULL */
static int	   main_no_keeper;  /* --no-keeper */
static mode_t	   main_umask_orig; /* the one we were started with */

static void
main_extra_cb(void *arg, int val, const char *optarg)
{
	(void)arg;
	if (val == 'f')
		ptyd_conf.foreground = 1;
	else if (val == 'u')
		main_umask_arg = optarg;
	else if (val == 'K')
		main_no_keeper = 1;
}

/*
 * --umask: the umask whoever started us was started with (ptyd.fcgi sets
 * its own to 077 before it starts us), as the default of shell_umask, so
 * a setting of it anywhere still wins.
 */
static void
main_conf_umask(void)
{
	if (main_umask_arg != NULL &&
	    config_set(main_cfg, CONFIG_SHELL_UMASK, main_umask_arg,
		CONFIG_DEFAULT, "--umask") == -1) {
		fprintf(stderr, "ptyd: %s\n", config_error(main_cfg));
		exit(2);
	}
}

/*
 * The per-owner cap's default: the global cap where the account is the one
 * owner; where the web server names the owners (auth = front), a quarter
 * of it and at least 4 (never above it), so one web user cannot hold
 * every terminal and leave the others 429.
 */
static unsigned long long
main_per_owner_default(unsigned long long max, int front)
{
	unsigned long long n = max / 4;

	if (!front)
		return (max);
	if (n < 4)
		n = 4;
	return (n < max ? n : max);
}

/* Numbers and limits: checked by lib/config.c, taken as they are. */
static void
main_conf_limits(void)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu",
	    main_per_owner_default(config_num(main_cfg, CONFIG_MAX_TERMINALS),
		strcmp(config_str(main_cfg, CONFIG_AUTH), "front") == 0));
	config_default(main_cfg, CONFIG_MAX_PER_OWNER, buf);
	ptyd_conf.idle_grace = config_us(main_cfg, CONFIG_IDLE_GRACE);
	ptyd_conf.reap_interval = config_us(main_cfg, CONFIG_REAP_INTERVAL);
	ptyd_conf.linger = config_us(main_cfg, CONFIG_LINGER);
	ptyd_conf.stall_timeout = config_us(main_cfg, CONFIG_STALL_TIMEOUT);
	ptyd_conf.max_terminals = (unsigned int)config_num(main_cfg,
	    CONFIG_MAX_TERMINALS);
	ptyd_conf.max_per_owner = (unsigned int)config_num(main_cfg,
	    CONFIG_MAX_PER_OWNER);
	ptyd_conf.max_viewers = (unsigned int)config_num(main_cfg,
	    CONFIG_MAX_VIEWERS);
	ptyd_conf.ring_size = (size_t)config_num(main_cfg, CONFIG_RING_SIZE);
	ptyd_conf.input_limit = (size_t)config_num(main_cfg,
	    CONFIG_INPUT_LIMIT);
	ptyd_conf.shell_umask = (mode_t)config_num(main_cfg,
	    CONFIG_SHELL_UMASK);
}

/* The shell and its arguments: -i for the sh family unless told. */
static void
main_conf_shell(void)
{
	char *const *args;
	const char  *base;
	size_t	     n, i;

	ptyd_conf.shell = main_shell(config_str(main_cfg, CONFIG_SHELL));
	config_default(main_cfg, CONFIG_SHELL, ptyd_conf.shell);
	base = strrchr(ptyd_conf.shell, '/');
	base = base != NULL ? base + 1 : ptyd_conf.shell;
	if (main_sh_family(base))
		config_default(main_cfg, CONFIG_SHELL_ARG, "-i");
	args = config_list(main_cfg, CONFIG_SHELL_ARG, &n);
	ptyd_conf.shell_argv = xcalloc(n + 2, sizeof(char *));
	ptyd_conf.shell_argv[0] = xstrdup(base);
	for (i = 0; i < n; i++)
		ptyd_conf.shell_argv[i + 1] = args[i];
}

/* Workspace roots and the default workspace, each a real directory. */
static void
main_conf_workspaces(void)
{
	char *const *roots;
	size_t	     n, i;

	config_default(main_cfg, CONFIG_WORKSPACE_ROOT, main_home());
	roots = config_list(main_cfg, CONFIG_WORKSPACE_ROOT, &n);
	if (n == 0)
		fatalx("workspace_root (%s): none left",
		    config_origin(main_cfg, CONFIG_WORKSPACE_ROOT));
	ptyd_conf.roots = xcalloc(n, sizeof(*ptyd_conf.roots));
	for (i = 0; i < n; i++)
		ptyd_conf.roots[i] = main_realdir("workspace_root", roots[i]);
	ptyd_conf.nroots = n;
	config_default(main_cfg, CONFIG_DEFAULT_WORKSPACE, main_home());
	ptyd_conf.default_workspace = main_realdir("default_workspace",
	    config_str(main_cfg, CONFIG_DEFAULT_WORKSPACE));
}

/*
 * Where things are.  In the foreground, the log is stderr and there is
 * no pid file unless the settings name them: whoever runs us there (a
 * terminal, a supervisor) reads our output and knows our pid.
 */
static void
main_conf_paths(void)
{
	const char *log;

	if (ptyd_conf.foreground) {
		config_default(main_cfg, CONFIG_LOG, "-");
		config_default(main_cfg, CONFIG_PIDFILE, "");
	}
	ptyd_conf.state_dir = config_str(main_cfg, CONFIG_STATE_DIR);
	ptyd_conf.db = config_str(main_cfg, CONFIG_DB);
	ptyd_conf.audit_anchor = config_str(main_cfg, CONFIG_AUDIT_ANCHOR);
	ptyd_conf.audit_log = config_str(main_cfg, CONFIG_AUDIT_LOG);
	ptyd_conf.socket = config_str(main_cfg, CONFIG_SOCKET);
	ptyd_conf.pidfile = config_str(main_cfg, CONFIG_PIDFILE);
	if (ptyd_conf.pidfile != NULL && *ptyd_conf.pidfile == '\0')
		ptyd_conf.pidfile = NULL;
	log = config_str(main_cfg, CONFIG_LOG);
	ptyd_conf.log_syslog = strcmp(log, "syslog") == 0;
	ptyd_conf.log = strcmp(log, "-") == 0 || ptyd_conf.log_syslog ? NULL :
									log;
	ptyd_conf.verbose = config_num(main_cfg, CONFIG_LOG_LEVEL) == 0;
}

/* The settings into ptyd_conf; exits for --help, --version, a bad setting
 * and --print-config. */
static void
main_configure(int argc, char **argv)
{
	static const struct config_extra extra[] = {
		{ "foreground", no_argument, 'f', NULL,
		    "stay in the foreground (log to stderr, no pid file)" },
		{ "umask", required_argument, 'u', "MODE",
		    "the shells' umask where shell_umask is not set (default: "
		    "the one ptyd was started with)" },
		{ "no-keeper", no_argument, 'K', NULL,
		    "one process, without ptyd-keeper: a restart or crash of "
		    "ptyd then ends every shell (debugging)" },
		{ NULL, 0, 0, NULL, NULL },
	};
	struct config_args a = { "ptyd [options]", NULL, extra, main_extra_cb,
		NULL, 0 };
	char		   buf[16];
	int		   rv;

	main_cfg = config_new(CONFIG_PTYD, "ptyd");
	snprintf(buf, sizeof(buf), "%04o", (unsigned int)ptyd_conf.shell_umask);
	config_default(main_cfg, CONFIG_SHELL_UMASK, buf);
	if ((rv = config_load(main_cfg, argc, argv, &a, NULL)) != -1)
		exit(rv);
	main_conf_umask();
	main_conf_limits();
	main_conf_shell();
	main_conf_workspaces();
	main_conf_paths();
	if (config_print_requested(main_cfg)) {
		config_print(main_cfg, stdout);
		exit(fflush(stdout) == 0 ? 0 : 1);
	}
}

/* ---- startup ----------------------------------------------------------- */

/*
 * Before anything else: no shell of ours may read our memory or the
 * environment we were started with (DESIGN 6).  What we keep of it is
 * the shells' allowlist and our own PTYD_* settings; every file we create
 * is ours alone.
 */
/*
 * Every descriptor the hard limit allows: a terminal holds a pty and each
 * viewer a socket, and whoever started us may have lowered the soft
 * limit for itself (ptyd.fcgi's workers keep theirs at 1024 for libfcgi's
 * select(), and posix_spawn passed that on).  The shells inherit the
 * raised limit (spawn.c does not lower it for them).
 */
static void
main_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1 || rl.rlim_cur == rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max;
	(void)setrlimit(RLIMIT_NOFILE, &rl);
}

static void
main_harden(void)
{
	if (util_stdio_open() == -1)
		exit(1); /* nowhere to say why */
	if (harden_nodump() == -1)
		fatal("PR_SET_DUMPABLE");
	harden_env(&harden_daemon_env);
	(void)account_fix_env();
	ptyd_conf.shell_umask = main_umask_orig = umask(077);
	log_init(NULL, 0, 0);
	main_nofile();
}

/* The environment never changes: filter it for the shells once. */
static void
main_shell_env(void)
{
	char **env;
	size_t nenv, i, j;

	for (nenv = 0; environ[nenv] != NULL; nenv++)
		;
	env = xcalloc(nenv + 1, sizeof(*env));
	for (i = j = 0; i < nenv; i++)
		if (spawn_env_allowed(environ[i]))
			env[j++] = environ[i];
	ptyd_conf.env = env;
}

/*
 * The socket is bound before we detach, so whoever started us can connect
 * as soon as it returns; startup errors go to the log file, else stderr,
 * where the caller sees them.
 */
static void
main_listen(void)
{
	/*
	 * Whatever a caller left open (a pipe it waits on for EOF, say) must
	 * not be held by a daemon for ever: before opening anything of our
	 * own, close every inherited fd above stderr.
	 */
	if (!ptyd_conf.foreground)
		(void)close_range(STDERR_FILENO + 1, ~0U, 0);
	if (ptyd_conf.log != NULL)
		main_mkparents(ptyd_conf.log);
	log_init(ptyd_conf.log, ptyd_conf.log_syslog && ptyd_conf.foreground,
	    ptyd_conf.verbose);
	(void)log_set_level(main_log_levels[config_num(main_cfg,
	    CONFIG_LOG_LEVEL)]);
	/* One daemon per database: before the socket, the pid file or the
	 * database is touched. */
	main_mkparents(ptyd_conf.db);
	lock_take(ptyd_conf.db);
	if (listen_open(ptyd_conf.socket) == -1)
		fatalx("cannot listen on %s", ptyd_conf.socket);
	if (!ptyd_conf.foreground) {
		main_ready_fd = main_daemonize();
		lock_write_pid();
		if (ptyd_conf.log_syslog)
			log_init(NULL, 1, ptyd_conf.verbose);
	}
}

static void
main_loop_init(void)
{
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) == -1)
		fatal("PR_SET_CHILD_SUBREAPER");
	if (ev_init() == -1)
		fatal("epoll");
	if (sig_init(main_signal) == -1)
		fatal("signals");
}

/* ---- the keeper (DESIGN 10) -------------------------------------------- */

/* argv for ptyd-keeper: its options, then ours for each ptyd it starts. */
static char **
main_keeper_argv(const char *exe, int argc, char **argv)
{
	char **kv, buf[64];
	int    n = 0, i;

	kv = xcalloc((size_t)argc + 20, sizeof(*kv));
	kv[n++] = xstrdup("ptyd-keeper");
	kv[n++] = xstrdup("--ptyd");
	kv[n++] = xstrdup(exe);
	snprintf(buf, sizeof(buf), "%d", listen_fd_get());
	kv[n++] = xstrdup("--listen-fd");
	kv[n++] = xstrdup(buf);
	snprintf(buf, sizeof(buf), "%d", lock_fd_get());
	kv[n++] = xstrdup("--lock-fd");
	kv[n++] = xstrdup(buf);
	if (main_ready_fd != -1) {
		snprintf(buf, sizeof(buf), "%d", main_ready_fd);
		kv[n++] = xstrdup("--ready-fd");
		kv[n++] = xstrdup(buf);
	}
	if (ptyd_conf.pidfile != NULL) {
		kv[n++] = xstrdup("--pidfile");
		kv[n++] = xstrdup(ptyd_conf.pidfile);
	}
	kv[n++] = xstrdup("--socket");
	kv[n++] = xstrdup(ptyd_conf.socket);
	kv[n++] = xstrdup("--log");
	kv[n++] = xstrdup(ptyd_conf.log != NULL ? ptyd_conf.log :
		ptyd_conf.log_syslog ? "syslog" : "-");
	if (ptyd_conf.verbose)
		kv[n++] = xstrdup("--verbose");
	kv[n++] = xstrdup("--");
	kv[n++] = argv[0];
	/* The umask we were started with, for the shells: each ptyd the
	 * keeper starts inherits ours, 077.  First, so an explicit
	 * --umask later on the line still wins. */
	if (main_umask_arg == NULL) {
		snprintf(buf, sizeof(buf), "--umask=%04o",
		    (unsigned int)main_umask_orig);
		kv[n++] = xstrdup(buf);
	}
	for (i = 1; i < argc; i++)
		kv[n++] = argv[i];
	kv[n] = NULL;
	return (kv);
}

/*
 * From here the keeper holds the lock, the socket and, through the ptyds
 * it runs, the shells: we become it (the pid whoever started us knows,
 * the one the pid file names).  Without ptyd-keeper beside us, we serve
 * alone, and say what that costs.
 */
static void
main_become_keeper(int argc, char **argv)
{
	char  exe[PATH_MAX], keeper[PATH_MAX + 16], *slash;
	char **kv;
	ssize_t n;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		log_warn("/proc/self/exe: running without ptyd-keeper");
		return;
	}
	exe[n] = '\0';
	snprintf(keeper, sizeof(keeper), "%s", exe);
	if ((slash = strrchr(keeper, '/')) == NULL)
		return;
	strcpy(slash + 1, "ptyd-keeper");
	if (access(keeper, X_OK) == -1) {
		log_warnx("%s: %s; running without it: a restart or crash of "
			  "ptyd ends every shell",
		    keeper, strerror(errno));
		return;
	}
	kv = main_keeper_argv(exe, argc, argv);
	/* Ours across the exec; the keeper makes them CLOEXEC again. */
	(void)fcntl(listen_fd_get(), F_SETFD, 0);
	(void)fcntl(lock_fd_get(), F_SETFD, 0);
	if (main_ready_fd != -1)
		(void)fcntl(main_ready_fd, F_SETFD, 0);
	log_close();
	execv(keeper, kv);
	log_init(ptyd_conf.log, ptyd_conf.log_syslog, ptyd_conf.verbose);
	fatal("exec %s", keeper);
}

/*
 * The keeper's unit protects it from the OOM killer (-900); ptyd and the
 * shells it clones inherit that, and must not: raise ours back to 0 (no
 * privilege needed to raise it).
 */
static void
main_oom_reset(void)
{
	char buf[16];
	int  fd;
	ssize_t n;

	if ((fd = open("/proc/self/oom_score_adj", O_RDWR | O_CLOEXEC)) == -1)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n > 0) {
		buf[n] = '\0';
		if (strtol(buf, NULL, 10) < 0 && pwrite(fd, "0\n", 2, 0) != 2)
			log_warn("oom_score_adj");
	}
	close(fd);
}

/*
 * An upgrade is refused, before the old ptyd lets go, by a binary that
 * cannot take every terminal over: the old one serves on (the keeper
 * thaws it, DESIGN 10).  After a crash there is no old one: what cannot
 * be taken over is let go of, the rest is served.
 */
static void
main_keeper_probe(void)
{
	struct kadopt *a;
	const char    *why;
	size_t	       n, i;

	if (keeperlink_mode() != KW_MODE_UPGRADE)
		return;
	a = keeperlink_terms(&n);
	for (i = 0; i < n; i++)
		if (term_adopt_probe(&a[i], &why) == -1) {
			log_warnx("upgrade refused: terminal %lld: %s",
			    (long long)a[i].id, why);
			exit(4);
		}
}

/* Started by the keeper: what it holds, then its go. */
static void
main_keeper_start(void)
{
	int lfd, kfd;

	if (ptyd_conf.log != NULL)
		main_mkparents(ptyd_conf.log);
	log_init(ptyd_conf.log, ptyd_conf.log_syslog, ptyd_conf.verbose);
	(void)log_set_level(main_log_levels[config_num(main_cfg,
	    CONFIG_LOG_LEVEL)]);
	if (ev_init() == -1)
		fatal("epoll");
	if (sig_init(main_signal) == -1)
		fatal("signals");
	main_oom_reset();
	keeperlink_hello(&lfd, &kfd);
	main_keeper_probe();
	lock_adopt(kfd);
	listen_adopt(lfd);
	keeperlink_ready();
}

/* The terminals the keeper handed over, back in service. */
static void
main_adopt(void)
{
	struct kadopt *a;
	struct term   *t;
	size_t	       n, i, got = 0;
	int64_t	       now = ev_now();
	char	       detail[160];

	a = keeperlink_terms(&n);
	for (i = 0; i < n; i++) {
		if ((t = term_adopt(&a[i], now)) == NULL)
			continue;
		got++;
		if (keeperlink_mode() == KW_MODE_FRESH)
			continue;
		snprintf(detail, sizeof(detail),
		    "taken over by ptyd pid %ld (%s), %zu terminal(s)",
		    (long)getpid(),
		    keeperlink_mode() == KW_MODE_CRASH ? "the last one died" :
							 "upgrade",
		    n);
		mirror_event(t, now, keeperlink_mode_event(), NULL, detail);
		term_adopt_redraw(t);
	}
	if (n > 0)
		log_info("%s: %zu of %zu terminal(s) taken over",
		    term_event_name(keeperlink_mode_event()), got, n);
	keeperlink_start();
}

/* Before the store opens: the ids a keeper holds are not lost rows. */
static void
main_live_ids(void)
{
	struct kadopt *a;
	int64_t	      *ids;
	size_t	       n, i;

	a = keeperlink_terms(&n);
	ids = xcalloc(n + 1, sizeof(*ids));
	for (i = 0; i < n; i++)
		ids[i] = a[i].id;
	store_set_live(ids, n);
	free(ids);
}

/* New ids above every terminal a keeper holds, written or not. */
static void
main_reserve_ids(void)
{
	struct kadopt *a;
	size_t	       n, i;

	a = keeperlink_terms(&n);
	for (i = 0; i < n; i++)
		store_reserve_id(main_store, a[i].id);
}

static void
main_open_store(void)
{
	main_mkparents(ptyd_conf.db);
	/* Before the store: its first head is the start anchor. */
	if (audit_init(ptyd_conf.audit_anchor, ptyd_conf.db) == -1)
		fatalx("audit_anchor: %s: want syslog, none or unix:PATH",
		    ptyd_conf.audit_anchor);
	/* Before the store too: its first commit's events are lines. */
	if (mirror_log_init(ptyd_conf.audit_log) == -1)
		fatalx("audit_log: %s: want none, syslog, journal or unix:PATH",
		    ptyd_conf.audit_log);
	if (keeperlink_under())
		main_live_ids();
	main_store = store_open(ptyd_conf.db,
	    (double)ev_wall_us(ev_now()) / 1e6);
	if (main_store == NULL)
		fatalx("store_open: out of memory");
	main_reserve_ids();
	main_tighten(ptyd_conf.db);
}

/*
 * Recordings (DESIGN 4): the settings, the folder beside the database's
 * state, ptyd-recorder beside us (like the keeper).  Before terminals are
 * adopted, which start their next parts.
 */
static void
main_recordings(void)
{
	static char	exe[PATH_MAX], dir[PATH_MAX];
	struct rec_conf rc;
	char	       *slash;
	ssize_t		n;

	memset(&rc, 0, sizeof(rc));
	rc.policy = (enum rec_policy)config_num(main_cfg, CONFIG_RECORD);
	rc.input = config_num(main_cfg, CONFIG_RECORD_INPUT) != 0;
	rc.max_age_s = config_num(main_cfg, CONFIG_RECORD_MAX_AGE) * 86400;
	rc.max_bytes = (uint64_t)config_num(main_cfg, CONFIG_RECORD_MAX_BYTES);
	snprintf(dir, sizeof(dir), "%s/recordings", ptyd_conf.state_dir);
	rc.dir = dir;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 32);
	if (n > 0) {
		exe[n] = '\0';
		if ((slash = strrchr(exe, '/')) != NULL)
			strcpy(slash + 1, "ptyd-recorder");
	}
	rc.recorder = exe;
	rec_init(&rc, main_store, ev_now());
}

/* Accept clients, arm the reaper, and tell whoever waits that we serve. */
static void
main_serve(void)
{
	int64_t now = ev_now();

	term_init(main_store);
	main_recordings();
	conn_init(now);
	if (listen_start() == -1)
		fatal("listen");
	/* Under a keeper the pid file is the keeper's. */
	if (ptyd_conf.pidfile != NULL && !keeperlink_under()) {
		main_mkparents(ptyd_conf.pidfile);
		main_pidfile_write(ptyd_conf.pidfile);
	}
	if (keeperlink_under())
		main_adopt();
	ev_timer_init(&main_reap_timer, main_reap_cb, NULL);
	ev_timer_at(&main_reap_timer, now + ptyd_conf.reap_interval);
	log_info("listening on %s, shell %s, %u terminals at most",
	    ptyd_conf.socket, ptyd_conf.shell, ptyd_conf.max_terminals);
	if (main_ready_fd != -1) {
		if (write(main_ready_fd, "r", 1) != 1)
			log_warn("telling the parent we are ready");
		close(main_ready_fd);
		main_ready_fd = -1;
	}
}

static void
main_loop(void)
{
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
}

static void
main_finish(void)
{
	proc_sweep_flush();
	rec_done(); /* its rows go in the last flush */
	mirror_flush(ev_now());
	store_close(main_store);
	audit_done();
	auditlog_done();
	term_done();
	sig_done();
	ev_done();
	if (ptyd_conf.pidfile != NULL && !keeperlink_under())
		(void)unlink(ptyd_conf.pidfile);
	log_info("exited");
	log_close();
}

int
main(int argc, char **argv)
{
	main_harden();
	main_configure(argc, argv);
	main_shell_env();
	if (keeperlink_under())
		main_keeper_start();
	else {
		main_listen();
		if (!main_no_keeper)
			main_become_keeper(argc, argv);
		main_loop_init();
	}
	main_open_store();
	main_serve();
	main_loop();
	main_finish();
	return (0);
}
