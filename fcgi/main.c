/*
 * main.c -- ptyd.fcgi: options, configuration, and the choice of mode.
 *
 * Owns: the settings (lib/config.c: ptyd.conf, PTYD_*, the command line)
 * into front_conf, read once at start, and which of three modes runs: a FastCGI server on --listen (unix socket or
 * host:port), a FastCGI server on an inherited listen socket on fd 0
 * (spawn-fcgi, mod_fcgid), or one plain CGI request from the environment.
 * Does not own: the worker model (server.c, pool.c) or any request
 * (handlers.c).
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <netdb.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "account.h"
#include "config.h"
#include "flog.h"
#include "front.h"
#include "handlers.h"
#include "harden.h"
#include "http.h"
#include "paths.h" /* generated: configure's directories */
#include "server.h"
#include "util.h"

#define DEFAULT_STACK (256 * 1024)

/* The ptyd binary, first found of: beside us (an install that keeps both
 * in one folder), ../ptyd/ptyd (this build tree), the install's
 * pkglibexecdir, its bindir (lib/paths.h); else "ptyd" from PATH. */
static void
default_ptyd(char *out, size_t size)
{
	static const char *const names[] = { "ptyd", "../ptyd/ptyd", "ptyd",
		"ptyd" };
	const char		*dirs[4];
	char			 self[PATH_MAX], cand[PATH_MAX + 32];
	ssize_t			 n;
	size_t			 i;

	snprintf(out, size, "ptyd");
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = '\0';
	dirs[0] = dirs[1] = n > 0 ? dirname(self) : NULL;
	dirs[2] = PTYD_PKGLIBEXECDIR;
	dirs[3] = PTYD_BINDIR;
	for (i = 0; i < 4; i++) {
		if (dirs[i] == NULL)
			continue;
		snprintf(cand, sizeof(cand), "%s/%s", dirs[i], names[i]);
		if (access(cand, X_OK) == 0 && strlen(cand) < size) {
			snprintf(out, size, "%s", cand);
			return;
		}
	}
}

/* Who may connect to the FastCGI socket besides us (--socket-group,
 * --socket-mode): the web server's group, where it runs as another user. */
struct sock_perm {
	gid_t  gid; /* (gid_t)-1: our own group, untouched */
	mode_t mode;
};

static int
listen_unix(const char *path, const struct sock_perm *perm)
{
	struct sockaddr_un sun;
	struct stat	   sb;
	struct group	   grb, *gr;
	char		   grbuf[1024];
	int		   fd;
	mode_t		   old;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		flog_warnx("--listen: path too long");
		return (-1);
	}
	strcpy(sun.sun_path, path);
	/* Replace a stale socket, never any other kind of file. */
	if (lstat(path, &sb) == 0) {
		if (!S_ISSOCK(sb.st_mode)) {
			flog_warnx("--listen: %s exists and is not a socket",
			    path);
			return (-1);
		}
		unlink(path);
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1) {
		flog_warn("socket");
		return (-1);
	}
	/*
	 * Bound 0600 (umask 0177), so no other account can connect in the
	 * moment before the mode and group below are set: whoever connects
	 * can send any FastCGI parameter, REMOTE_USER included.
	 */
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		umask(old);
		flog_warn("bind %s", path);
		close(fd);
		return (-1);
	}
	umask(old);
	if (perm->gid != (gid_t)-1 && chown(path, (uid_t)-1, perm->gid) == -1) {
		if (errno == EPERM) {
			/* Only root, or a member of the group, may. */
			if (getgrgid_r(perm->gid, &grb, grbuf, sizeof(grbuf),
				&gr) != 0)
				gr = NULL;
			flog_warnx("--socket-group %s: this account is not "
				   "in that group; let root make the socket "
				   "(spawn-fcgi -U/-G, or systemd's "
				   "ptyd-fcgi.socket)",
			    gr != NULL ? gr->gr_name : "(that gid)");
		} else
			flog_warn("--socket-group on %s", path);
		close(fd);
		unlink(path);
		return (-1);
	}
	if (chmod(path, perm->mode) == -1) {
		flog_warn("--socket-mode on %s", path);
		close(fd);
		unlink(path);
		return (-1);
	}
	if (listen(fd, SOMAXCONN) == -1) {
		flog_warn("listen");
		close(fd);
		return (-1);
	}
	return (fd);
}

/* --socket-group: a name or a number. */
static int
parse_group(const char *s, gid_t *gid)
{
	struct group *gr;
	char	     *end;
	unsigned long v;

	/* Option parsing, before any worker thread exists. */
	/* cppcheck-suppress getgrnamCalled */
	if ((gr = getgrnam(s)) != NULL) {
		*gid = gr->gr_gid;
		return (0);
	}
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v >= (gid_t)-1)
		return (-1);
	*gid = (gid_t)v;
	return (0);
}

static int
listen_inet(const char *spec)
{
	struct addrinfo hints, *res = NULL;
	char		host[256], *colon;
	int		fd = -1, on = 1, err;

	snprintf(host, sizeof(host), "%s", spec);
	if ((colon = strrchr(host, ':')) == NULL)
		return (-1);
	*colon++ = '\0';
	if (host[0] == '[' && colon - host > 2 && colon[-2] == ']') {
		colon[-2] = '\0';
		memmove(host, host + 1, strlen(host));
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
	if ((err = getaddrinfo(host[0] != '\0' ? host : "127.0.0.1", colon,
		 &hints, &res)) != 0) {
		flog_warnx("--listen %s: %s", spec, gai_strerror(err));
		return (-1);
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) == -1 ||
	    bind(fd, res->ai_addr, res->ai_addrlen) == -1 ||
	    listen(fd, SOMAXCONN) == -1) {
		flog_warn("--listen %s", spec);
		if (fd != -1)
			close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return (fd);
}

/* Is fd 0 a listening socket handed to us by a process manager? */
static int
stdin_is_listener(void)
{
	int	  v = 0;
	socklen_t len = sizeof(v);

	return (
	    getsockopt(0, SOL_SOCKET, SO_ACCEPTCONN, &v, &len) == 0 && v != 0);
}

/* What the settings say beyond front_conf and server_conf. */
struct main_opts {
	const char	*listen_spec; /* listen */
	struct sock_perm perm;	      /* socket_group, socket_mode */
};

static struct config *main_cfg; /* lives as long as we do */
static mode_t	      main_umask; /* the one we were started with */

static const char *
main_nonempty(enum config_key k)
{
	const char *s = config_str(main_cfg, k);

	return (s != NULL && *s != '\0' ? s : NULL);
}

/* The listen socket's group and mode: 0, or the exit status. */
static int
main_conf_perm(struct main_opts *o)
{
	const char *group = main_nonempty(CONFIG_SOCKET_GROUP);

	o->perm.gid = (gid_t)-1;
	if (group != NULL && parse_group(group, &o->perm.gid) == -1) {
		flog_warnx("socket_group (%s): no group %s",
		    config_origin(main_cfg, CONFIG_SOCKET_GROUP), group);
		return (1);
	}
	config_default(main_cfg, CONFIG_SOCKET_MODE,
	    o->perm.gid != (gid_t)-1 ? "0660" : "0600");
	o->perm.mode = (mode_t)config_num(main_cfg, CONFIG_SOCKET_MODE);
	return (0);
}

/*
 * Where ptyd is, how to start it, and how the gate decides, from the
 * settings (never from a request).  0, or the exit status.
 */
static int
main_conf_ptyd(struct front_conf *conf)
{
	const char *cause;

	snprintf(conf->ptyd.socket, sizeof(conf->ptyd.socket), "%s",
	    config_str(main_cfg, CONFIG_SOCKET));
	conf->ptyd.autostart = config_num(main_cfg, CONFIG_AUTOSTART) != 0;
	conf->ptyd.config = config_file_given(main_cfg);
	conf->ptyd.state_dir = config_str(main_cfg, CONFIG_STATE_DIR);
	conf->ptyd.db = config_str(main_cfg, CONFIG_DB);
	if (config_str(main_cfg, CONFIG_PTYD_PROGRAM) == NULL) {
		default_ptyd(conf->ptyd.program, sizeof(conf->ptyd.program));
		config_default(main_cfg, CONFIG_PTYD_PROGRAM,
		    conf->ptyd.program);
	}
	snprintf(conf->ptyd.program, sizeof(conf->ptyd.program), "%s",
	    config_str(main_cfg, CONFIG_PTYD_PROGRAM));
	snprintf(conf->ptyd.umask, sizeof(conf->ptyd.umask), "%04o",
	    (unsigned int)main_umask & 0777);
	conf->ptyd.front = strcmp(config_str(main_cfg, CONFIG_AUTH), "front") ==
	    0;
	if (gate_conf_load(&conf->gate,
		config_num(main_cfg, CONFIG_ALLOW_REMOTE) ? "1" : "0",
		config_num(main_cfg, CONFIG_TRUST_FORWARDED_FOR) ? "1" : "0",
		main_nonempty(CONFIG_TRUSTED_PROXY_CIDRS),
		main_nonempty(CONFIG_ALLOWED_HOSTS), &cause) == -1 ||
	    gate_conf_mode(&conf->gate, config_str(main_cfg, CONFIG_AUTH),
		config_str(main_cfg, CONFIG_LOCAL), &cause) == -1 ||
	    gate_conf_metrics(&conf->gate, main_nonempty(CONFIG_METRICS_ALLOW),
		main_nonempty(CONFIG_METRICS_USERS), &cause) == -1) {
		flog_warnx("%s", cause);
		return (1);
	}
	conf->account_uid = geteuid();
	return (0);
}

/* fcgi_log: from here on every line, and anything else written to
 * stderr, goes to that file.  0, or the exit status. */
static int
main_log(void)
{
	const char *path = config_str(main_cfg, CONFIG_FCGI_LOG);

	if (path == NULL || strcmp(path, "-") == 0)
		return (0);
	if (util_mkparents(path, 0700, NULL, 0) == -1 ||
	    flog_open(path) == -1) {
		flog_warn("fcgi_log %s (%s)", path,
		    config_origin(main_cfg, CONFIG_FCGI_LOG));
		return (1);
	}
	return (0);
}

/*
 * fcgi_pidfile: the pid of a FastCGI server's first process (the one that
 * passes SIGHUP and SIGTERM on to the workers), for logrotate.  0, or -1
 * (said why).
 */
static int
main_pidfile(void)
{
	const char *path = main_nonempty(CONFIG_FCGI_PIDFILE);
	char	    buf[32];
	int	    fd, n;

	if (path == NULL)
		return (0);
	n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
	if (util_mkparents(path, 0700, NULL, 0) == -1 ||
	    (fd = open(path,
		 O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
		 0644)) == -1) {
		flog_warn("fcgi_pidfile %s", path);
		return (-1);
	}
	if (write(fd, buf, (size_t)n) != n) {
		flog_warn("fcgi_pidfile %s", path);
		close(fd);
		return (-1);
	}
	close(fd);
	return (0);
}

/* The settings into conf, sc and o: -1 to go on, else the exit status
 * (--help, --version, --print-config, a bad setting). */
static int
main_configure(int argc, char *argv[], struct front_conf *conf,
    struct server_conf *sc, struct main_opts *o)
{
	struct config_args a = { "ptyd.fcgi [options]",
		"Without listen: FastCGI on fd 0 if it is a listening socket "
		"(spawn-fcgi),\nelse one CGI request from the environment.\n",
		NULL, NULL, NULL, 0 };
	const char	  *query = getenv("QUERY_STRING"), *cause;
	int		   rv;

	/*
	 * A CGI request whose query has no '=' may reach us as argv too
	 * (RFC 3875 4.4; Apache's mod_cgi does it): those words are the
	 * HTTP client's, and every setting is an option.  Take none of them.
	 */
	if (getenv("GATEWAY_INTERFACE") != NULL && query != NULL &&
	    *query != '\0' && strchr(query, '=') == NULL)
		argc = 1;
	main_cfg = config_new(CONFIG_FCGI, "ptyd.fcgi");
	config_set_range(main_cfg, CONFIG_MAX_THREADS, 2, SERVER_MAX_THREADS);
	if ((rv = config_load(main_cfg, argc, argv, &a, NULL)) != -1)
		return (rv);
	sc->processes = (int)config_num(main_cfg, CONFIG_PROCESSES);
	sc->max_threads = (int)config_num(main_cfg, CONFIG_MAX_THREADS);
	conf->heartbeat_ms = config_us(main_cfg, CONFIG_HEARTBEAT) / 1000;
	conf->stream_padding = (size_t)config_num(main_cfg,
	    CONFIG_STREAM_PADDING);
	if (http_frame_headers(config_str(main_cfg, CONFIG_FRAME_ANCESTORS),
		conf->frame_headers, sizeof(conf->frame_headers),
		&cause) == -1) {
		flog_warnx("%s (%s)", cause,
		    config_origin(main_cfg, CONFIG_FRAME_ANCESTORS));
		return (1);
	}
	o->listen_spec = main_nonempty(CONFIG_LISTEN);
	conf->pool = main_nonempty(CONFIG_POOL_NAME);
	conf->recordings_readers = main_nonempty(CONFIG_RECORDINGS_READERS);
	if ((rv = main_conf_perm(o)) != 0 || (rv = main_conf_ptyd(conf)) != 0)
		return (rv);
	if (config_print_requested(main_cfg)) {
		config_print(main_cfg, stdout);
		return (fflush(stdout) == 0 ? 0 : 1);
	}
	return (main_log() != 0 ? 1 : -1);
}

/* The listen socket, if any: --listen, else fd 0 from a process manager.
 * 0 (sc->listen_fd -1: plain CGI), or -1. */
static int
main_listen(const struct front_conf *conf, struct server_conf *sc,
    const struct main_opts *o)
{
	if (o->listen_spec == NULL) {
		if (stdin_is_listener())
			sc->listen_fd = 0;
		return (0);
	}
	if (o->listen_spec[0] == '/' || strchr(o->listen_spec, ':') == NULL) {
		sc->listen_fd = listen_unix(o->listen_spec, &o->perm);
		snprintf(sc->unlink_path, sizeof(sc->unlink_path), "%s",
		    o->listen_spec);
	} else {
		/* Whoever reaches a TCP port can send any FastCGI
		 * parameter: with PTYD_AUTH=front, any REMOTE_USER. */
		if (conf->gate.auth_front)
			flog_warnx(
			    "--listen %s: every host and user that can "
			    "connect to this port can claim any REMOTE_USER; "
			    "prefer a Unix socket",
			    o->listen_spec);
		sc->listen_fd = listen_inet(o->listen_spec);
	}
	return (sc->listen_fd == -1 ? -1 : 0);
}

/*
 * Settings that do not load in a CGI run: the web server would answer
 * its own HTML 500 for a program that printed nothing.  Answer the API's
 * JSON instead; why is in the web server's error log (our stderr), never
 * in the answer.  A --help or --version run (0) is not refused.
 */
static void
main_cgi_refuse(int rv)
{
	struct req r;

	if (rv == 0 || getenv("GATEWAY_INTERFACE") == NULL)
		return;
	/* No settings: the frame rule's default (http_respond). */
	req_init_cgi(&r, NULL);
	http_answer(&r, CONTRACT_A_SETTINGS);
}

int
main(int argc, char *argv[])
{
	static struct front_conf conf;
	struct server_conf	 sc;
	struct main_opts	 o;
	struct req		 r;
	int			 rv;

	/*
	 * No shell may read our memory (DESIGN 6): it would find the
	 * environment, and in CGI mode the request's headers.  Every file
	 * we create is ours alone unless we say otherwise.
	 */
	if (util_stdio_open() == -1)
		return (1); /* nowhere to say why */
	if (harden_nodump() == -1) {
		flog_warn("PR_SET_DUMPABLE");
		return (1);
	}
	main_umask = umask(077);
	(void)account_fix_env();
	memset(&sc, 0, sizeof(sc));
	memset(&o, 0, sizeof(o));
	sc.listen_fd = -1;
	sc.stack_size = DEFAULT_STACK;
	if ((rv = main_configure(argc, argv, &conf, &sc, &o)) != -1) {
		main_cgi_refuse(rv);
		return (rv);
	}
	if (main_listen(&conf, &sc, &o) == -1)
		return (1);

	if (sc.listen_fd != -1) {
		/*
		 * A long-lived server: what it needs of its environment has
		 * been read above (nothing keeps a getenv() pointer), so wipe
		 * the rest where /proc/PID/environ shows it, even to root.
		 * (A CGI run reads its request from the environment and ends
		 * with it; it only passes the allowlist on to an autostarted
		 * ptyd.)
		 */
		harden_env(&harden_daemon_env);
		/* Connections to ptyd kept between requests. */
		conf.ptyd.keep = 1;
		if (main_pidfile() == -1)
			return (1);
		rv = server_run(&conf, &sc);
		if (sc.unlink_path[0] != '\0')
			unlink(sc.unlink_path);
		if (main_nonempty(CONFIG_FCGI_PIDFILE) != NULL)
			unlink(main_nonempty(CONFIG_FCGI_PIDFILE));
		return (rv);
	}

	/* Plain CGI: one request, then exit. */
	signal(SIGPIPE, SIG_IGN);
	req_init_cgi(&r, &conf);
	handlers_serve(&r);
	return (0);
}
