/*
 * main.c -- ptyd.fcgi: options, configuration, and the choice of mode.
 *
 * Owns: the command line and the process environment read at start, and
 * which of three modes runs: a FastCGI server on --listen (unix socket or
 * host:port), a FastCGI server on an inherited listen socket on fd 0
 * (spawn-fcgi, mod_fcgid), or one plain CGI request from the environment.
 * Does not own: the worker model (server.c) or any request (handlers.c).
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <netdb.h>

#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "flog.h"
#include "front.h"
#include "handlers.h"
#include "harden.h"
#include "http.h"
#include "server.h"

#define DEFAULT_PROCESSES 6
#define DEFAULT_THREADS	  400
#define DEFAULT_STACK	  (256 * 1024)

static void
usage(void)
{
	fprintf(stderr,
	    "usage: ptyd.fcgi [--listen PATH | --listen HOST:PORT] "
	    "[--ptyd-socket PATH]\n"
	    "                 [--no-autostart] [--ptyd PATH] "
	    "[--heartbeat SEC]\n"
	    "                 [--max-threads N] [--processes N]\n"
	    "                 [--socket-group GROUP] [--socket-mode 0600|0660]\n"
	    "Without --listen: FastCGI on fd 0 if it is a listening socket "
	    "(spawn-fcgi),\nelse one CGI request from the environment.\n");
	exit(2);
}

/* Seconds (decimals allowed) to milliseconds; -1 if malformed. */
static int64_t
parse_seconds(const char *s)
{
	char  *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !isfinite(v) || v <= 0 ||
	    v > 86400)
		return (-1);
	return ((int64_t)(v * 1000 + 0.5) > 0 ? (int64_t)(v * 1000 + 0.5) : 1);
}

static int
parse_int(const char *s, int min, int max)
{
	char *end;
	long  v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
		return (-1);
	return ((int)v);
}

/* The ptyd binary, first found of: beside us (an install that keeps both
 * in one folder), ../ptyd/ptyd (this build tree), PTYD_LIBEXECDIR (the
 * install's libexec), PTYD_BINDIR; else "ptyd" from PATH.  configure's
 * directories come from the Makefile; the fallbacks are for lint runs. */
#ifndef PTYD_LIBEXECDIR
#define PTYD_LIBEXECDIR "/usr/local/libexec/ptyd"
#endif
#ifndef PTYD_BINDIR
#define PTYD_BINDIR "/usr/local/bin"
#endif
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
	dirs[2] = PTYD_LIBEXECDIR;
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
	if ((perm->gid != (gid_t)-1 &&
		chown(path, (uid_t)-1, perm->gid) == -1) ||
	    chmod(path, perm->mode) == -1) {
		flog_warn("--socket-group/--socket-mode on %s", path);
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

/* --socket-mode: octal, read and write bits for owner and group only. */
static int
parse_mode(const char *s, mode_t *mode)
{
	char	     *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 8);
	if (errno != 0 || end == s || *end != '\0' || (v & ~0660UL) != 0 ||
	    (v & 0600) != 0600)
		return (-1);
	*mode = (mode_t)v;
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

/* What the command line says beyond the settings themselves. */
struct main_opts {
	const char	*listen_spec; /* --listen */
	const char	*sock;	      /* --ptyd-socket */
	const char	*prog;	      /* --ptyd */
	struct sock_perm perm;	      /* --socket-group, -mode */
};

/* The command line into conf, sc and o.  0, or the exit status. */
static int
main_options(int argc, char *argv[], struct front_conf *conf,
    struct server_conf *sc, struct main_opts *o)
{
	static const struct option longopts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "ptyd-socket", required_argument, NULL, 's' },
		{ "no-autostart", no_argument, NULL, 'n' },
		{ "ptyd", required_argument, NULL, 'p' },
		{ "heartbeat", required_argument, NULL, 'b' },
		{ "max-threads", required_argument, NULL, 't' },
		{ "processes", required_argument, NULL, 'P' },
		{ "socket-group", required_argument, NULL, 'g' },
		{ "socket-mode", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'l':
			o->listen_spec = optarg;
			break;
		case 's':
			o->sock = optarg;
			break;
		case 'n':
			conf->ptyd.autostart = 0;
			break;
		case 'p':
			o->prog = optarg;
			break;
		case 'b':
			if ((conf->heartbeat_ms = parse_seconds(optarg)) == -1)
				usage();
			break;
		case 't':
			if ((sc->max_threads = parse_int(optarg, 2,
				 SERVER_MAX_THREADS)) == -1) {
				flog_warnx("--max-threads: 2 to %d",
				    SERVER_MAX_THREADS);
				return (2);
			}
			break;
		case 'P':
			if ((sc->processes = parse_int(optarg, 1, 256)) == -1)
				usage();
			break;
		case 'g':
			if (parse_group(optarg, &o->perm.gid) == -1) {
				flog_warnx("--socket-group: no group %s",
				    optarg);
				return (2);
			}
			break;
		case 'm':
			if (parse_mode(optarg, &o->perm.mode) == -1) {
				flog_warnx("--socket-mode: 0600 or 0660");
				return (2);
			}
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	if (o->perm.mode == 0)
		o->perm.mode = o->perm.gid != (gid_t)-1 ? 0660 : 0600;
	return (0);
}

/*
 * Where ptyd is and how the gate decides, from the options and the
 * process environment (never from a request).  0, or the exit status.
 */
static int
main_config(struct front_conf *conf, const struct main_opts *o)
{
	const char *cause;

	if (o->sock != NULL) {
		if (strlen(o->sock) >= sizeof(conf->ptyd.socket)) {
			flog_warnx("--ptyd-socket: path too long");
			return (2);
		}
		snprintf(conf->ptyd.socket, sizeof(conf->ptyd.socket), "%s",
		    o->sock);
	} else if (client_default_socket(conf->ptyd.socket,
		       sizeof(conf->ptyd.socket)) == -1) {
		flog_warnx("ptyd socket path too long");
		return (2);
	}
	if (o->prog != NULL)
		snprintf(conf->ptyd.program, sizeof(conf->ptyd.program), "%s",
		    o->prog);
	else
		default_ptyd(conf->ptyd.program, sizeof(conf->ptyd.program));
	if (gate_conf_load(&conf->gate, getenv("PTYD_ALLOW_REMOTE"),
		getenv("PTYD_TRUST_FORWARDED_FOR"),
		getenv("PTYD_TRUSTED_PROXY_CIDRS"),
		getenv("PTYD_ALLOWED_HOSTS"), &cause) == -1 ||
	    gate_conf_mode(&conf->gate, getenv("PTYD_AUTH"),
		getenv("PTYD_LOCAL"), &cause) == -1) {
		flog_warnx("%s", cause);
		return (2);
	}
	conf->account_uid = geteuid();
	return (0);
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

int
main(int argc, char *argv[])
{
	static struct front_conf conf;
	struct server_conf	 sc;
	struct main_opts	 o;
	struct req		 r;
	const char		*env;
	int			 rv;

	/*
	 * No shell may read our memory (DESIGN 6): it would find the
	 * environment, and in CGI mode the request's headers.  Every file
	 * we create is ours alone unless we say otherwise.
	 */
	if (harden_nodump() == -1) {
		flog_warn("PR_SET_DUMPABLE");
		return (1);
	}
	umask(077);
	memset(&sc, 0, sizeof(sc));
	memset(&o, 0, sizeof(o));
	o.perm.gid = (gid_t)-1;
	sc.listen_fd = -1;
	sc.processes = DEFAULT_PROCESSES;
	sc.max_threads = DEFAULT_THREADS;
	sc.stack_size = DEFAULT_STACK;
	conf.heartbeat_ms = 5000;
	conf.ptyd.autostart = 1;
	if ((env = getenv("PTYD_HEARTBEAT")) != NULL && env[0] != '\0' &&
	    (conf.heartbeat_ms = parse_seconds(env)) == -1) {
		flog_warnx("PTYD_HEARTBEAT: not a number of seconds");
		return (2);
	}
	if ((rv = main_options(argc, argv, &conf, &sc, &o)) != 0 ||
	    (rv = main_config(&conf, &o)) != 0)
		return (rv);
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
		rv = server_run(&conf, &sc);
		if (sc.unlink_path[0] != '\0')
			unlink(sc.unlink_path);
		return (rv);
	}

	/* Plain CGI: one request, then exit. */
	signal(SIGPIPE, SIG_IGN);
	req_init_cgi(&r, &conf);
	handlers_serve(&r);
	return (0);
}
