/*
 * config.c -- the settings of all three programs: the table, ptyd.conf,
 * PTYD_<KEY>, the command line, and where each value came from
 * (config.h).
 *
 * Owns: the one table of keys and every check on a value (seconds with
 * decimals, counts, byte sizes, modes, words, ranges), the file syntax,
 * the precedence of the layers, the paths derived from state_dir (home
 * from the password database, never from $HOME or XDG_RUNTIME_DIR, which
 * differ between a login shell and a web server), the getopt_long table
 * built from the keys, --help, --version and --print-config.  Does not own
 * what any setting does (ptyd/main.c, fcgi/main.c, ptydctl/ptydctl.c).
 */
#ifdef HAVE_CONFIG_H
#include <config.h> /* autoconf's, in the build directory: not ours */
#endif

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "paths.h" /* generated: configure's directories */
#include "proto.h"

/* A settings line longer than this is a mistake, not a setting. */
#define CONFIG_LINE_MAX (64 * 1024)

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

#define D CONFIG_PTYD
#define F CONFIG_FCGI
#define C CONFIG_CTL
#define P CONFIG_POOL

#define SEC	  1000000LL /* seconds are kept in microseconds */
#define SEC_MAX	  (1000000000LL * SEC)
#define COUNT_MAX 1000000LL
#define BYTES_MAX (1LL << 34)

enum config_type {
	T_STRING,
	T_PATH,
	T_SECONDS,
	T_COUNT,
	T_BYTES,
	T_BOOL,
	T_OCTAL, /* min: bits it must have, max: bits it may have */
	T_ENUM,
	T_ANCHOR /* syslog, none, or unix:/ABSOLUTE/PATH */
};

#define F_LIST	0x1 /* [list]: values accumulate within a layer */
#define F_WORD	0x2 /* a path that may be a bare word: "-", "syslog", PATH */
#define F_EMPTY 0x4 /* a path that may be "": none */
#define F_DASH	0x8 /* a path that may be "-": standard error */
#define F_JOURNAL 0x10 /* T_ANCHOR: also journal, journal:/ABSOLUTE/PATH */

struct config_def {
	const char	*name;
	enum config_type type;
	unsigned int	 flags;
	unsigned int	 progs;
	const char	*def; /* NULL: none, or derived, or the program's */
	long long	 min, max;
	const char	*words; /* T_ENUM: "none|front" */
	const char	*arg;	/* in --help */
	const char	*help;
};

/* The one table.  Change a default or a range here and only here. */
static const struct config_def config_defs[CONFIG_NKEYS] = {
	[CONFIG_STATE_DIR] = { "state_dir", T_PATH, 0, D | F | C, NULL, 0, 0,
	    NULL, "DIR",
	    "where everything else is by default "
	    "(~/.local/state/ptyd)" },
	[CONFIG_DB] = { "db", T_PATH, 0, D | F | C, NULL, 0, 0, NULL, "PATH",
	    "the SQLite mirror (<state_dir>/ptyd.db)" },
	[CONFIG_SOCKET] = { "socket", T_PATH, 0, D | F | C, NULL, 0, 0, NULL,
	    "PATH", "ptyd's Unix socket (<state_dir>/ptyd.sock)" },
	[CONFIG_LOG] = { "log", T_PATH, F_WORD, D, NULL, 0, 0, NULL, "PATH",
	    "log file, - for stderr, syslog (<state_dir>/ptyd.log)" },
	[CONFIG_LOG_LEVEL] = { "log_level", T_ENUM, 0, D, "info", 0, 0,
	    "debug|info|warn", "LEVEL", "debug, info or warn" },
	[CONFIG_PIDFILE] = { "pidfile", T_PATH, F_EMPTY, D, NULL, 0, 0, NULL,
	    "PATH", "pid file, \"\" for none (<state_dir>/ptyd.pid)" },
	[CONFIG_AUDIT_ANCHOR] = { "audit_anchor", T_ANCHOR, 0, D | C, "syslog",
	    0, 0, NULL, "syslog|none|unix:PATH",
	    "where the audit chain's head is sent (system log)" },
	[CONFIG_AUDIT_LOG] = { "audit_log", T_ANCHOR, F_JOURNAL, D, "none", 0,
	    0, NULL, "none|syslog|journal|unix:PATH",
	    "where every audit event goes as a line" },
	[CONFIG_SHELL] = { "shell", T_PATH, 0, D, NULL, 0, 0, NULL, "PATH",
	    "the shell ($SHELL, else bash, else sh)" },
	[CONFIG_SHELL_ARG] = { "shell_arg", T_STRING, F_LIST, D, NULL, 0, 0,
	    NULL, "ARG", "an argument for the shell (-i for sh-like shells)" },
	[CONFIG_WORKSPACE_ROOT] = { "workspace_root", T_PATH, F_LIST, D, NULL,
	    0, 0, NULL, "DIR",
	    "a workspace must be under one of these (home)" },
	[CONFIG_DEFAULT_WORKSPACE] = { "default_workspace", T_PATH, 0, D, NULL,
	    0, 0, NULL, "DIR", "where a shell starts by default (home)" },
	[CONFIG_IDLE_GRACE] = { "idle_grace", T_SECONDS, 0, D, "900", 0,
	    SEC_MAX, NULL, "SEC", "an unwatched terminal lives this long" },
	[CONFIG_REAP_INTERVAL] = { "reap_interval", T_SECONDS, 0, D, "60", SEC,
	    SEC_MAX, NULL, "SEC", "how often the reaper looks" },
	[CONFIG_LINGER] = { "linger", T_SECONDS, 0, D, "60", 0, SEC_MAX, NULL,
	    "SEC", "an exited terminal stays listed this long" },
	[CONFIG_STALL_TIMEOUT] = { "stall_timeout", T_SECONDS, 0, D, "10",
	    SEC / 10, SEC_MAX, NULL, "SEC",
	    "a viewer that reads nothing "
	    "this long is cut" },
	[CONFIG_MAX_TERMINALS] = { "max_terminals", T_COUNT, 0, D, "32", 1,
	    COUNT_MAX, NULL, "N", "terminals at most" },
	[CONFIG_MAX_PER_OWNER] = { "max_per_owner", T_COUNT, 0, D, NULL, 1,
	    COUNT_MAX, NULL, "N",
	    "terminals per owner (max_terminals; auth = front: a "
	    "quarter of it, at least 4)" },
	[CONFIG_MAX_VIEWERS] = { "max_viewers", T_COUNT, 0, D, "32", 1,
	    COUNT_MAX, NULL, "N", "viewers per terminal at most" },
	[CONFIG_RING_SIZE] = { "ring_size", T_BYTES, 0, D, "1048576", 1024,
	    BYTES_MAX, NULL, "BYTES", "output kept per terminal (k, M, G)" },
	[CONFIG_INPUT_LIMIT] = { "input_limit", T_BYTES, 0, D, "1048576",
	    PROTO_INPUT_MAX, BYTES_MAX, NULL, "BYTES",
	    "input queued per terminal (k, M, G)" },
	[CONFIG_SHELL_UMASK] = { "shell_umask", T_OCTAL, 0, D, NULL, 0, 0777,
	    NULL, "MODE",
	    "the shells' umask (the one ptyd, or the "
	    "ptyd.fcgi that started it, was started with)" },
	[CONFIG_LISTEN] = { "listen", T_STRING, 0, F | P, NULL, 0, 0, NULL,
	    "PATH|HOST:PORT", "FastCGI socket (fd 0 if a socket, else CGI)" },
	[CONFIG_FCGI_LOG] = { "fcgi_log", T_PATH, F_DASH, F, NULL, 0, 0, NULL,
	    "PATH",
	    "ptyd.fcgi's log file, reopened on SIGHUP; - for "
	    "stderr (stderr)" },
	[CONFIG_FCGI_PIDFILE] = { "fcgi_pidfile", T_PATH, F_EMPTY, F, NULL, 0,
	    0, NULL, "PATH",
	    "a FastCGI server's pid, for logrotate's SIGHUP (none)" },
	[CONFIG_SOCKET_GROUP] = { "socket_group", T_STRING, 0, F, NULL, 0, 0,
	    NULL, "GROUP", "group of the listen socket" },
	[CONFIG_SOCKET_MODE] = { "socket_mode", T_OCTAL, 0, F, NULL, 0600, 0660,
	    NULL, "MODE",
	    "mode of the listen socket (0600, with "
	    "socket_group 0660)" },
	[CONFIG_AUTOSTART] = { "autostart", T_BOOL, 0, F, "yes", 0, 1, NULL,
	    "yes|no", "start ptyd when it is not running" },
	[CONFIG_PTYD_PROGRAM] = { "ptyd", T_PATH, F_WORD, F, NULL, 0, 0, NULL,
	    "PATH", "the ptyd to start (beside ptyd.fcgi, libexec, PATH)" },
	[CONFIG_HEARTBEAT] = { "heartbeat", T_SECONDS, 0, F, "5", SEC / 1000,
	    86400 * SEC, NULL, "SEC", "an idle stream says so this often" },
	[CONFIG_STREAM_PADDING] = { "stream_padding", T_BYTES, 0, F, "0", 0,
	    16384, NULL, "BYTES",
	    "CGI only: pad each write of the stream past a relay's buffer "
	    "(fcgiwrap: 8192)" },
	[CONFIG_MAX_THREADS] = { "max_threads", T_COUNT, 0, F, "400", 2,
	    COUNT_MAX, NULL, "N", "requests at once per process" },
	[CONFIG_PROCESSES] = { "processes", T_COUNT, 0, F, "6", 1, 256, NULL,
	    "N", "worker processes" },
	[CONFIG_AUTH] = { "auth", T_ENUM, 0, D | F, "none", 0, 0, "none|front",
	    "none|front",
	    "front: trust REMOTE_USER from the web server (ptyd: "
	    "web users share the account)" },
	[CONFIG_LOCAL] = { "local", T_ENUM, 0, F, "account", 0, 0,
	    "account|address", "account|address", "what makes a client local" },
	[CONFIG_ALLOW_REMOTE] = { "allow_remote", T_BOOL, 0, F, "no", 0, 1,
	    NULL, "yes|no", "allow clients that are not local" },
	[CONFIG_ALLOWED_HOSTS] = { "allowed_hosts", T_STRING, 0, F, NULL, 0, 0,
	    NULL, "LIST", "Host headers accepted (localhost and loopback)" },
	[CONFIG_TRUSTED_PROXY_CIDRS] = { "trusted_proxy_cidrs", T_STRING, 0, F,
	    NULL, 0, 0, NULL, "LIST", "proxies whose forwarded headers count" },
	[CONFIG_TRUST_FORWARDED_FOR] = { "trust_forwarded_for", T_BOOL, 0, F,
	    "no", 0, 1, NULL, "yes|no", "believe X-Forwarded-For from them" },
	[CONFIG_METRICS_ALLOW] = { "metrics_allow", T_STRING, 0, F, NULL, 0, 0,
	    NULL, "LIST|none", "addresses that may read metrics (loopback)" },
	[CONFIG_METRICS_USERS] = { "metrics_users", T_STRING, 0, F, NULL, 0, 0,
	    NULL, "LIST", "web users who may read metrics (none)" },
	[CONFIG_FRAME_ANCESTORS] = { "frame_ancestors", T_STRING, 0, F,
	    "'self'", 0, 0, NULL, "SOURCES",
	    "who may frame the API's answers: 'self', 'none' or origins" },
	/* ptyd-pool's account files (ptyd-pool(8)); "pool" is set by it. */
	[CONFIG_POOL_NAME] = { "pool", T_STRING, 0, F, NULL, 0, 0, NULL, "NAME",
	    "the pool's name, in health and metrics (ptyd-pool)" },
	[CONFIG_USER_NAME] = { "user", T_STRING, 0, P, NULL, 0, 0, NULL, "USER",
	    "the account the pool runs as" },
	[CONFIG_GROUP_NAME] = { "group", T_STRING, 0, P, NULL, 0, 0, NULL,
	    "GROUP", "its group (the account's)" },
	[CONFIG_LISTEN_OWNER] = { "listen_owner", T_STRING, 0, P, NULL, 0, 0,
	    NULL, "USER", "owner of the listen socket (user)" },
	[CONFIG_LISTEN_GROUP] = { "listen_group", T_STRING, 0, P, NULL, 0, 0,
	    NULL, "GROUP", "group of the listen socket (group)" },
	[CONFIG_LISTEN_MODE] = { "listen_mode", T_OCTAL, 0, P, "0660", 0600,
	    0660, NULL, "MODE", "mode of the listen socket" },
	[CONFIG_RLIMIT_FILES] = { "rlimit_files", T_COUNT, 0, P, NULL, 64,
	    1048576, NULL, "N", "open files per process (inherited)" },
	[CONFIG_RLIMIT_NPROC] = { "rlimit_nproc", T_COUNT, 0, P, NULL, 16,
	    COUNT_MAX, NULL, "N", "processes of the account (inherited)" },
	/* Recordings (issue 34, DESIGN 4). */
	[CONFIG_RECORD] = { "record", T_ENUM, 0, D, "off", 0, 0, "off|on|owner",
	    "off|on|owner",
	    "record terminals' output (owner: when start asks)" },
	[CONFIG_RECORD_INPUT] = { "record_input", T_BOOL, 0, D, "no", 0, 1,
	    NULL, "yes|no", "record keystrokes too (they carry passwords)" },
	[CONFIG_RECORD_MAX_AGE] = { "record_max_age", T_COUNT, 0, D | C, "30",
	    1, 36500, NULL, "DAYS", "recordings older than this are removed" },
	[CONFIG_RECORD_MAX_BYTES] = { "record_max_bytes", T_BYTES, 0, D | C,
	    "1G", 0, BYTES_MAX, NULL, "BYTES",
	    "the recordings' total; the oldest go first" },
	[CONFIG_RECORDINGS_READERS] = { "recordings_readers", T_STRING, 0, F,
	    NULL, 0, 0, NULL, "LIST",
	    "web users who may read every owner's recordings (none)" },
};

/* Old option names that keep working. */
static const struct config_alias {
	const char     *name;
	int		short_opt;
	unsigned int	progs;
	enum config_key key;
	const char     *value; /* NULL: takes the argument */
	const char     *help;
} config_aliases[] = {
	{ "verbose", 'v', D, CONFIG_LOG_LEVEL, "debug", "--log-level debug" },
	{ "ptyd-socket", 0, F, CONFIG_SOCKET, NULL, "--socket PATH" },
	{ "no-autostart", 0, F, CONFIG_AUTOSTART, "no", "--autostart no" },
};
#define NALIASES (sizeof(config_aliases) / sizeof(config_aliases[0]))

/* getopt_long values beyond a program's own. */
#define OPT_KEY	    0x1000 /* + key */
#define OPT_ALIAS   0x2000 /* + alias */
#define OPT_CONFIG  0x3000
#define OPT_PRINT   0x3001
#define OPT_VERSION 0x3002

struct config_val {
	enum config_level level;
	char		**v;	  /* NULL-terminated; a scalar has one */
	char		**origin; /* each value's */
	size_t		  n;
	long long	  num; /* the scalar, parsed */
};

struct config {
	unsigned int	  prog;
	char		 *name;
	char		 *home;
	char		 *given; /* --config FILE, PTYD_CONFIG */
	int		  print;
	char		  err[1024];
	char		  dash[CONFIG_NKEYS][32];
	long long	  min[CONFIG_NKEYS], max[CONFIG_NKEYS];
	struct config_val val[CONFIG_NKEYS];
};

static void __attribute__((noreturn)) config_oom(void)
{
	fputs("out of memory\n", stderr);
	exit(1);
}

static char *
config_strdup(const char *s)
{
	char *p;

	if ((p = strdup(s)) == NULL)
		config_oom();
	return (p);
}

static int __attribute__((format(printf, 2, 3)))
config_fail(struct config *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	return (-1);
}

static void
config_val_clear(struct config_val *v)
{
	size_t i;

	for (i = 0; i < v->n; i++) {
		free(v->v[i]);
		free(v->origin[i]);
	}
	free(v->v);
	free(v->origin);
	v->v = v->origin = NULL;
	v->n = 0;
}

static void
config_val_add(struct config_val *v, const char *value, const char *origin)
{
	char **nv, **no;

	if ((nv = reallocarray(v->v, v->n + 2, sizeof(*nv))) == NULL)
		config_oom();
	v->v = nv;
	if ((no = reallocarray(v->origin, v->n + 2, sizeof(*no))) == NULL)
		config_oom();
	v->origin = no;
	v->v[v->n] = config_strdup(value);
	v->origin[v->n] = config_strdup(origin);
	v->n++;
	v->v[v->n] = v->origin[v->n] = NULL;
}

struct config *
config_new(unsigned int prog, const char *name)
{
	struct config *c;
	struct passwd *pw;
	size_t	       k, i;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		config_oom();
	c->prog = prog;
	c->name = config_strdup(name);
	/* Startup, before any thread. */
	/* cppcheck-suppress getpwuidCalled */
	if ((pw = getpwuid(getuid())) != NULL && pw->pw_dir != NULL &&
	    pw->pw_dir[0] == '/')
		c->home = config_strdup(pw->pw_dir);
	for (k = 0; k < CONFIG_NKEYS; k++) {
		for (i = 0; config_defs[k].name[i] != '\0'; i++)
			c->dash[k][i] = config_defs[k].name[i] == '_' ?
			    '-' :
			    config_defs[k].name[i];
		c->min[k] = config_defs[k].min;
		c->max[k] = config_defs[k].max;
		if (config_defs[k].def != NULL &&
		    config_set(c, (enum config_key)k, config_defs[k].def,
			CONFIG_DEFAULT, "default") == -1)
			abort(); /* a default the table's own check refuses */
	}
	return (c);
}

void
config_free(struct config *c)
{
	size_t k;

	if (c == NULL)
		return;
	for (k = 0; k < CONFIG_NKEYS; k++)
		config_val_clear(&c->val[k]);
	free(c->name);
	free(c->home);
	free(c->given);
	free(c);
}

const char *
config_error(const struct config *c)
{
	return (c->err);
}

void
config_set_home(struct config *c, const char *home)
{
	free(c->home);
	c->home = home != NULL ? config_strdup(home) : NULL;
}

const char *
config_home(const struct config *c)
{
	return (c->home);
}

void
config_set_range(struct config *c, enum config_key k, long long min,
    long long max)
{
	c->min[k] = min;
	c->max[k] = max;
}

const char *
config_key_name(enum config_key k)
{
	return (config_defs[k].name);
}

int
config_key_find(const char *name)
{
	size_t k;

	for (k = 0; k < CONFIG_NKEYS; k++)
		if (strcmp(config_defs[k].name, name) == 0)
			return ((int)k);
	return (-1);
}

unsigned int
config_key_progs(enum config_key k)
{
	return (config_defs[k].progs);
}

/* ---- values ------------------------------------------------------------ */

static int
config_all(const char *s, const char *set)
{
	return (*s != '\0' && strspn(s, set) == strlen(s));
}

/* "1.5" seconds into microseconds. */
static int
config_seconds(const char *s, long long *us)
{
	double v;

	if (!config_all(s, "0123456789.") ||
	    strchr(s, '.') != strrchr(s, '.') ||
	    strcspn(s, "0123456789") == strlen(s))
		return (-1);
	errno = 0;
	v = strtod(s, NULL);
	if (errno != 0 || !isfinite(v) || v > 1e15)
		return (-1);
	*us = (long long)(v * 1e6 + 0.5);
	return (0);
}

/* A count, or with bytes a size with an optional k, M or G (1024). */
static int
config_count(const char *s, int bytes, long long *out)
{
	static const char  suffix[] = "kKmMgG";
	char		   buf[32];
	const char	  *p;
	size_t		   len = strlen(s);
	unsigned long long v, mul = 1;

	if (len == 0 || len >= sizeof(buf))
		return (-1);
	memcpy(buf, s, len + 1);
	if (bytes && (p = strchr(suffix, buf[len - 1])) != NULL && len > 1) {
		mul = 1ULL << (10 * (1 + (p - suffix) / 2));
		buf[len - 1] = '\0';
	}
	if (!config_all(buf, "0123456789"))
		return (-1);
	errno = 0;
	v = strtoull(buf, NULL, 10);
	if (errno != 0 || v > (unsigned long long)LLONG_MAX / mul)
		return (-1);
	*out = (long long)(v * mul);
	return (0);
}

/* The index of s among words "a|b|c", or -1. */
static int
config_word(const char *words, const char *s)
{
	size_t len = strlen(s);
	int    i;

	for (i = 0; *words != '\0'; i++) {
		if (strncmp(words, s, len) == 0 &&
		    (words[len] == '|' || words[len] == '\0') && len > 0)
			return (i);
		words += strcspn(words, "|");
		if (*words == '|')
			words++;
	}
	return (-1);
}

static int
config_bool(const char *s, long long *out)
{
	int i = config_word("no|yes|false|true|off|on|0|1", s);

	if (i == -1)
		return (-1);
	*out = i % 2;
	return (0);
}

/* ~/x under home; a relative path from the current directory.  NULL and
 * c->err when it cannot be. */
static char *
config_path(struct config *c, const struct config_def *d, const char *s,
    const char *where)
{
	char	    cwd[PATH_MAX], *out;
	const char *base = NULL, *rest = s;

	if (*s == '\0') {
		if (d->flags & F_EMPTY)
			return (config_strdup(s));
		config_fail(c, "%s: an empty path", where);
		return (NULL);
	}
	if ((d->flags & F_DASH) && strcmp(s, "-") == 0)
		return (config_strdup(s));
	if (strcmp(s, "~") == 0 || strncmp(s, "~/", 2) == 0) {
		if ((base = c->home) == NULL) {
			config_fail(c, "%s: %s: no home directory", where, s);
			return (NULL);
		}
		rest = s[1] == '/' ? s + 2 : s + 1;
	} else if (*s != '/' && !((d->flags & F_WORD) && !strchr(s, '/'))) {
		if (getcwd(cwd, sizeof(cwd)) == NULL) {
			config_fail(c, "%s: %s: %s", where, s, strerror(errno));
			return (NULL);
		}
		base = cwd;
	}
	if (base == NULL)
		return (config_strdup(s));
	if (asprintf(&out, "%s%s%s", base,
		*rest != '\0' && strcmp(base, "/") != 0 ? "/" : "", rest) == -1)
		config_oom();
	return (out);
}

/* Check a value against its key; *num is the parsed scalar.  0, or -1
 * with c->err naming where. */
static int
config_check(struct config *c, enum config_key k, const char *s,
    const char *where, long long *num)
{
	const struct config_def *d = &config_defs[k];
	long long		 v = 0;

	switch (d->type) {
	case T_STRING:
	case T_PATH:
		return (0);
	case T_SECONDS:
		if (config_seconds(s, &v) == -1 || v < c->min[k] ||
		    v > c->max[k])
			return (config_fail(c,
			    "%s: '%s': want seconds from %g "
			    "to %g",
			    where, s, (double)c->min[k] / SEC,
			    (double)c->max[k] / SEC));
		break;
	case T_COUNT:
	case T_BYTES:
		if (config_count(s, d->type == T_BYTES, &v) == -1 ||
		    v < c->min[k] || v > c->max[k])
			return (config_fail(c, "%s: '%s': want %s%lld to %lld",
			    where, s, d->type == T_BYTES ? "bytes, " : "",
			    c->min[k], c->max[k]));
		break;
	case T_BOOL:
		if (config_bool(s, &v) == -1)
			return (config_fail(c, "%s: '%s': want yes or no",
			    where, s));
		break;
	case T_OCTAL:
		if (!config_all(s, "01234567") || strlen(s) > 4 ||
		    ((v = strtoll(s, NULL, 8)) & ~c->max[k]) != 0 ||
		    (v & c->min[k]) != c->min[k])
			return (config_fail(c,
			    "%s: '%s': want an octal mode "
			    "with %04llo and within %04llo",
			    where, s, c->min[k], c->max[k]));
		break;
	case T_ANCHOR:
		/* sun_path holds 107 bytes and the NUL. */
		if (strcmp(s, "syslog") != 0 && strcmp(s, "none") != 0 &&
		    (strncmp(s, "unix:/", 6) != 0 || strlen(s + 5) > 107) &&
		    ((d->flags & F_JOURNAL) == 0 ||
			(strcmp(s, "journal") != 0 &&
			    (strncmp(s, "journal:/", 9) != 0 ||
				strlen(s + 8) > 107))))
			return (config_fail(c,
			    "%s: '%s': want syslog, none%s or"
			    " unix:/ABSOLUTE/PATH",
			    where, s,
			    (d->flags & F_JOURNAL) != 0 ? ", journal" : ""));
		break;
	case T_ENUM:
		if ((v = config_word(d->words, s)) == -1)
			return (config_fail(c, "%s: '%s': want one of %s",
			    where, s, d->words));
		break;
	}
	*num = v;
	return (0);
}

/* How an error names where a value came from: the file's line and key,
 * the variable, or the option. */
static void
config_where(enum config_key k, enum config_level level, const char *origin,
    char *buf, size_t size)
{
	const char *name = config_defs[k].name;
	size_t	    i, n;

	if (level == CONFIG_ENV && strncmp(origin, "env ", 4) == 0)
		snprintf(buf, size, "%s", origin + 4);
	else if (level == CONFIG_CLI) {
		n = (size_t)snprintf(buf, size, "--%s", name);
		for (i = 2; i < n && i < size; i++)
			if (buf[i] == '_')
				buf[i] = '-';
	} else if (level == CONFIG_SYSTEM || level == CONFIG_USER)
		snprintf(buf, size, "%s: %s", origin, name);
	else
		snprintf(buf, size, "%s", name);
}

int
config_set(struct config *c, enum config_key k, const char *value,
    enum config_level level, const char *origin)
{
	const struct config_def *d = &config_defs[k];
	struct config_val	*v = &c->val[k];
	char			 where[PATH_MAX + 64], *norm = NULL;
	long long		 num = 0;

	config_where(k, level, origin, where, sizeof(where));
	if ((d->flags & F_LIST) && *value == '\0') {
		/* "" empties a list (a file may drop the system file's). */
		if (level >= v->level) {
			config_val_clear(v);
			v->level = level;
		}
		return (0);
	}
	if (d->type == T_PATH) {
		if ((norm = config_path(c, d, value, where)) == NULL)
			return (-1);
		value = norm;
	} else if (config_check(c, k, value, where, &num) == -1)
		return (-1);
	if (level > v->level || (level == v->level && !(d->flags & F_LIST)))
		config_val_clear(v);
	if (level >= v->level) {
		config_val_add(v, value, origin);
		v->level = level;
		v->num = num;
	}
	free(norm);
	return (0);
}

void
config_default(struct config *c, enum config_key k, const char *value)
{
	if (c->val[k].level != CONFIG_DEFAULT)
		return;
	if (value == NULL) {
		config_val_clear(&c->val[k]);
		return;
	}
	if (config_set(c, k, value, CONFIG_DEFAULT, "default") == -1)
		abort(); /* the program's own default fails the table */
}

const char *
config_str(const struct config *c, enum config_key k)
{
	return (c->val[k].n > 0 ? c->val[k].v[0] : NULL);
}

int64_t
config_us(const struct config *c, enum config_key k)
{
	return ((int64_t)c->val[k].num);
}

unsigned long long
config_num(const struct config *c, enum config_key k)
{
	return ((unsigned long long)c->val[k].num);
}

char *const *
config_list(const struct config *c, enum config_key k, size_t *n)
{
	static char *const none[] = { NULL };

	if (n != NULL)
		*n = c->val[k].n;
	return (c->val[k].n > 0 ? c->val[k].v : none);
}

enum config_level
config_level(const struct config *c, enum config_key k)
{
	return (c->val[k].level);
}

const char *
config_origin(const struct config *c, enum config_key k)
{
	return (c->val[k].n > 0 ? c->val[k].origin[0] : "default");
}

const char *
config_file_given(const struct config *c)
{
	return (c->given);
}

int
config_print_requested(const struct config *c)
{
	return (c->print);
}

/* ---- ptyd.conf ----------------------------------------------------------- */

static char *
config_trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s &&
	    (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
		*--e = '\0';
	return (s);
}

/* "..." in place, with \" and \\ and nothing else escaped. */
static const char *
config_unquote(char *s)
{
	char *r = s + 1, *w = s;

	for (; *r != '"'; r++) {
		if (*r == '\0')
			return ("unterminated quote");
		if (*r == '\\' && *++r != '"' && *r != '\\')
			return ("a backslash may only escape \" or \\");
		*w++ = *r;
	}
	if (r[1] != '\0')
		return ("text after the closing quote");
	*w = '\0';
	return (NULL);
}

/* One line of a file: "key = value", a comment or blank. */
static int
config_line(struct config *c, const char *path, unsigned int lineno, char *line,
    enum config_level level)
{
	char	    origin[PATH_MAX + 32], *key, *value, *eq;
	const char *why;
	int	    k;

	key = config_trim(line);
	if (*key == '\0' || *key == '#')
		return (0);
	if ((eq = strchr(key, '=')) == NULL)
		return (
		    config_fail(c, "%s:%u: want 'key = value'", path, lineno));
	*eq = '\0';
	key = config_trim(key);
	value = config_trim(eq + 1);
	if (*key == '\0')
		return (config_fail(c, "%s:%u: a value without a key", path,
		    lineno));
	if (*value == '"' && (why = config_unquote(value)) != NULL)
		return (config_fail(c, "%s:%u: %s", path, lineno, why));
	if ((k = config_key_find(key)) == -1)
		return (config_fail(c, "%s:%u: unknown key '%s'", path, lineno,
		    key));
	/* The file is shared by the three programs: another's key is
	 * fine, and not ours to judge. */
	if ((config_defs[k].progs & c->prog) == 0)
		return (0);
	snprintf(origin, sizeof(origin), "%s:%u", path, lineno);
	return (config_set(c, (enum config_key)k, value, level, origin));
}

/*
 * A settings file names the shell and the ptyd program autostart runs:
 * whoever may write it runs code as this account.  So, as OpenSSH's
 * StrictModes: the file and its folder must be ours or root's and
 * writable by no one else (a sticky folder aside).  -1 (said why) if not.
 */
static int
config_file_trusted(struct config *c, FILE *fp, const char *path)
{
	struct stat st;
	char	    dir[PATH_MAX], *slash;

	if (fstat(fileno(fp), &st) == -1)
		return (config_fail(c, "%s: %s", path, strerror(errno)));
	if ((st.st_uid != getuid() && st.st_uid != 0) ||
	    (st.st_mode & 022) != 0)
		return (config_fail(c,
		    "%s: owned by uid %lu, mode %03o: only "
		    "its owner (us or root) may write it",
		    path, (unsigned long)st.st_uid,
		    (unsigned int)(st.st_mode & 0777)));
	snprintf(dir, sizeof(dir), "%s", path);
	if ((slash = strrchr(dir, '/')) == NULL)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	if (stat(dir, &st) == -1)
		return (config_fail(c, "%s: %s", dir, strerror(errno)));
	if ((st.st_uid != getuid() && st.st_uid != 0) ||
	    ((st.st_mode & 022) != 0 && (st.st_mode & S_ISVTX) == 0))
		return (config_fail(c,
		    "%s: its folder %s may be written by "
		    "others: a file there could be replaced",
		    path, dir));
	return (0);
}

int
config_file(struct config *c, const char *path, enum config_level level,
    int must_exist)
{
	FILE	    *fp;
	char	    *line = NULL;
	size_t	     cap = 0;
	ssize_t	     len;
	unsigned int lineno = 0;
	int	     rv = -1;

	if ((fp = fopen(path, "re")) == NULL) {
		if (errno == ENOENT && !must_exist)
			return (0);
		return (config_fail(c, "%s: %s", path, strerror(errno)));
	}
	if (config_file_trusted(c, fp, path) == -1)
		goto done;
	while ((len = getline(&line, &cap, fp)) != -1) {
		lineno++;
		if (len > CONFIG_LINE_MAX) {
			config_fail(c, "%s:%u: line too long", path, lineno);
			goto done;
		}
		if (strlen(line) != (size_t)len) {
			config_fail(c, "%s:%u: a NUL byte", path, lineno);
			goto done;
		}
		if (config_line(c, path, lineno, line, level) == -1)
			goto done;
	}
	if (ferror(fp)) {
		config_fail(c, "%s: %s", path, strerror(errno));
		goto done;
	}
	rv = 0;
done:
	free(line);
	fclose(fp);
	return (rv);
}

/* --config FILE (or PTYD_CONFIG) alone, else the system's, then ours. */
static int
config_files(struct config *c)
{
	char path[PATH_MAX];

	if (c->given != NULL)
		return (config_file(c, c->given, CONFIG_USER, 1));
	if (config_file(c, PTYD_SYSCONFDIR "/ptyd.conf", CONFIG_SYSTEM, 0) ==
	    -1)
		return (-1);
	if (c->home == NULL)
		return (0);
	if (snprintf(path, sizeof(path), "%s/.config/ptyd/ptyd.conf",
		c->home) >= (int)sizeof(path))
		return (config_fail(c, "%s: home directory path too long",
		    c->home));
	return (config_file(c, path, CONFIG_USER, 0));
}

int
config_env(struct config *c)
{
	char	    name[64], origin[80];
	const char *s;
	size_t	    k, i;

	for (k = 0; k < CONFIG_NKEYS; k++) {
		if ((config_defs[k].progs & c->prog) == 0)
			continue;
		snprintf(name, sizeof(name), "PTYD_%s", config_defs[k].name);
		for (i = 5; name[i] != '\0'; i++)
			name[i] = (char)toupper((unsigned char)name[i]);
		/* Unset and empty are the same: the next layer down. */
		if ((s = getenv(name)) == NULL || *s == '\0')
			continue;
		snprintf(origin, sizeof(origin), "env %s", name);
		if (config_set(c, (enum config_key)k, s, CONFIG_ENV, origin) ==
		    -1)
			return (-1);
	}
	return (0);
}

/* ---- derived paths ------------------------------------------------------- */

int
config_derive(struct config *c)
{
	static const struct {
		enum config_key k;
		const char     *file;
	} derived[] = { { CONFIG_DB, "ptyd.db" },
		{ CONFIG_SOCKET, "ptyd.sock" }, { CONFIG_LOG, "ptyd.log" },
		{ CONFIG_PIDFILE, "ptyd.pid" } };
	struct sockaddr_un sun;
	const char	  *state, *sock;
	char		   path[PATH_MAX];
	size_t		   i;

	if (config_str(c, CONFIG_STATE_DIR) == NULL && c->home != NULL) {
		snprintf(path, sizeof(path), "%s/.local/state/ptyd", c->home);
		config_default(c, CONFIG_STATE_DIR, path);
	}
	state = config_str(c, CONFIG_STATE_DIR);
	for (i = 0; i < sizeof(derived) / sizeof(derived[0]); i++) {
		if (config_str(c, derived[i].k) != NULL)
			continue;
		if (state == NULL)
			return (config_fail(c,
			    "%s: uid %lu has no home "
			    "directory in the password "
			    "database: set state_dir",
			    config_defs[derived[i].k].name,
			    (unsigned long)getuid()));
		snprintf(path, sizeof(path), "%s/%s", state, derived[i].file);
		config_default(c, derived[i].k, path);
	}
	sock = config_str(c, CONFIG_SOCKET);
	if (strlen(sock) >= sizeof(sun.sun_path))
		return (config_fail(c,
		    "socket: %s is longer than the %zu "
		    "bytes a Unix socket path may have",
		    sock, sizeof(sun.sun_path) - 1));
	return (0);
}

/* ---- --print-config ------------------------------------------------------ */

static void
config_print_value(FILE *fp, const char *key, const char *value,
    const char *origin)
{
	const char *p;

	fprintf(fp, "%s = ", key);
	if (value != NULL && *value != '\0' &&
	    value[strcspn(value, " \t\"\\#")] == '\0')
		fputs(value, fp);
	else {
		fputc('"', fp);
		for (p = value != NULL ? value : ""; *p != '\0'; p++) {
			if (*p == '"' || *p == '\\')
				fputc('\\', fp);
			fputc(*p, fp);
		}
		fputc('"', fp);
	}
	fprintf(fp, "  # %s\n", origin);
}

void
config_print(const struct config *c, FILE *fp)
{
	const struct config_val *v;
	size_t			 k, i;

	for (k = 0; k < CONFIG_NKEYS; k++) {
		if ((config_defs[k].progs & c->prog) == 0)
			continue;
		v = &c->val[k];
		if (v->n == 0)
			config_print_value(fp, config_defs[k].name, NULL,
			    v->level == CONFIG_DEFAULT ? "default" : "emptied");
		for (i = 0; i < v->n; i++)
			config_print_value(fp, config_defs[k].name, v->v[i],
			    v->origin[i]);
	}
}

/* ---- the command line ---------------------------------------------------- */

static void
config_help_line(FILE *fp, int short_opt, const char *name, const char *arg,
    const char *help, const char *def)
{
	char left[64];

	if (short_opt != 0)
		snprintf(left, sizeof(left), "-%c, --%s%s%s", short_opt, name,
		    arg != NULL ? " " : "", arg != NULL ? arg : "");
	else
		snprintf(left, sizeof(left), "    --%s%s%s", name,
		    arg != NULL ? " " : "", arg != NULL ? arg : "");
	fprintf(fp, "  %-26s %s%s%s%s\n", left, help, def != NULL ? " (" : "",
	    def != NULL ? def : "", def != NULL ? ")" : "");
}

static void
config_usage(const struct config *c, const struct config_args *a, FILE *fp)
{
	const struct config_extra *e;
	size_t			   k, i;

	fprintf(fp, "usage: %s%s\nOptions:\n", a->synopsis,
	    a->synopsis[strlen(a->synopsis) - 1] == '\n' ? "" : "\n");
	for (e = a->extra; e != NULL && e->name != NULL; e++)
		config_help_line(fp,
		    e->val < 128 && isalpha(e->val) ? e->val : 0, e->name,
		    e->has_arg ? e->arg : NULL, e->help, NULL);
	config_help_line(fp, 0, "config", "FILE",
	    "read the settings from FILE only (or PTYD_CONFIG)", NULL);
	config_help_line(fp, 0, "print-config", NULL,
	    "print each setting, its value and origin", NULL);
	config_help_line(fp, 'h', "help", NULL, "this help", NULL);
	config_help_line(fp, 0, "version", NULL, "print the version", NULL);
	fprintf(fp,
	    "\nSettings (also 'key = value' in %s/ptyd.conf or "
	    "~/.config/ptyd/ptyd.conf,\nor PTYD_KEY in the "
	    "environment; the command line wins):\n",
	    PTYD_SYSCONFDIR);
	for (k = 0; k < CONFIG_NKEYS; k++)
		if (config_defs[k].progs & c->prog)
			config_help_line(fp, 0, c->dash[k], config_defs[k].arg,
			    config_defs[k].help, config_defs[k].def);
	for (i = 0; i < NALIASES; i++)
		if (config_aliases[i].progs & c->prog)
			config_help_line(fp, config_aliases[i].short_opt,
			    config_aliases[i].name,
			    config_aliases[i].value == NULL ? "PATH" : NULL,
			    config_aliases[i].help, NULL);
	if (a->footer != NULL)
		fprintf(fp, "\n%s", a->footer);
}

static void
config_opt(struct option *o, size_t *n, const char *name, int has_arg, int val)
{
	o[*n].name = name;
	o[*n].has_arg = has_arg;
	o[*n].flag = NULL;
	o[*n].val = val;
	(*n)++;
}

/* The getopt_long table: the program's own, every key of the program as
 * --key-with-dashes, the old names, and ours.  shortopts gets the
 * letters. */
static struct option *
config_options(const struct config *c, const struct config_args *a,
    char *shortopts)
{
	const struct config_extra *e;
	struct option		  *o;
	size_t			   n = 0, k, s = 0;

	if ((o = calloc(CONFIG_NKEYS + NALIASES + 64, sizeof(*o))) == NULL)
		config_oom();
	if (a->operands)
		shortopts[s++] = '+';
	for (e = a->extra; e != NULL && e->name != NULL && n < 48; e++) {
		config_opt(o, &n, e->name, e->has_arg, e->val);
		if (e->val < 128 && isalpha(e->val)) {
			shortopts[s++] = (char)e->val;
			if (e->has_arg)
				shortopts[s++] = ':';
		}
	}
	for (k = 0; k < CONFIG_NKEYS; k++)
		if (config_defs[k].progs & c->prog)
			config_opt(o, &n, c->dash[k], required_argument,
			    OPT_KEY + (int)k);
	for (k = 0; k < NALIASES; k++) {
		if ((config_aliases[k].progs & c->prog) == 0)
			continue;
		config_opt(o, &n, config_aliases[k].name,
		    config_aliases[k].value == NULL ? required_argument :
						      no_argument,
		    OPT_ALIAS + (int)k);
		if (config_aliases[k].short_opt != 0)
			shortopts[s++] = (char)config_aliases[k].short_opt;
	}
	config_opt(o, &n, "config", required_argument, OPT_CONFIG);
	config_opt(o, &n, "print-config", no_argument, OPT_PRINT);
	config_opt(o, &n, "help", no_argument, 'h');
	config_opt(o, &n, "version", no_argument, OPT_VERSION);
	shortopts[s++] = 'h';
	shortopts[s] = '\0';
	return (o);
}

/* One option: -1 to go on, else the status to exit with. */
static int
config_option(struct config *c, const struct config_args *a, int ch,
    const char *arg)
{
	const struct config_alias *al = NULL;
	size_t			   i;

	for (i = 0; i < NALIASES; i++)
		if ((config_aliases[i].progs & c->prog) &&
		    (ch == OPT_ALIAS + (int)i ||
			(ch < 128 && ch == config_aliases[i].short_opt)))
			al = &config_aliases[i];
	if (al != NULL)
		return (
		    config_set(c, al->key, al->value != NULL ? al->value : arg,
			CONFIG_CLI, "command line") == -1 ?
			2 :
			-1);
	if (ch >= OPT_KEY && ch < OPT_KEY + CONFIG_NKEYS)
		return (config_set(c, (enum config_key)(ch - OPT_KEY), arg,
			    CONFIG_CLI, "command line") == -1 ?
			2 :
			-1);
	switch (ch) {
	case OPT_CONFIG:
		free(c->given);
		c->given = config_path(c, &config_defs[CONFIG_DB], arg,
		    "--config");
		return (c->given == NULL ? 2 : -1);
	case OPT_PRINT:
		c->print = 1;
		return (-1);
	case 'h':
		config_usage(c, a, stdout);
		return (0);
	case OPT_VERSION:
		printf("%s %s\n", c->name, PACKAGE_VERSION);
		return (0);
	case '?':
	case ':':
		config_usage(c, a, stderr);
		return (2);
	}
	if (a->cb != NULL)
		a->cb(a->arg, ch, arg);
	return (-1);
}

/* The command line: -1 to go on, else the status to exit with. */
static int
config_args(struct config *c, int argc, char **argv,
    const struct config_args *a, int *first)
{
	struct option *o;
	char	       shortopts[128];
	const char    *env;
	int	       ch, rv = -1;

	o = config_options(c, a, shortopts);
	optind = 0;
	while (rv == -1 &&
	    (ch = getopt_long(argc, argv, shortopts, o, NULL)) != -1)
		rv = config_option(c, a, ch, optarg);
	free(o);
	if (rv == 2 && c->err[0] != '\0')
		fprintf(stderr, "%s: %s\n", c->name, c->err);
	if (rv != -1)
		return (rv);
	if (!a->operands && optind != argc) {
		config_usage(c, a, stderr);
		return (2);
	}
	*first = optind;
	if (c->given == NULL && (env = getenv("PTYD_CONFIG")) != NULL &&
	    *env != '\0' &&
	    (c->given = config_path(c, &config_defs[CONFIG_DB], env,
		 "PTYD_CONFIG")) == NULL) {
		fprintf(stderr, "%s: %s\n", c->name, c->err);
		return (1);
	}
	return (-1);
}

int
config_load(struct config *c, int argc, char **argv,
    const struct config_args *a, int *first_operand)
{
	int rv, first = argc;

	c->err[0] = '\0';
	if ((rv = config_args(c, argc, argv, a, &first)) != -1)
		return (rv);
	if (config_files(c) == -1 || config_env(c) == -1 ||
	    config_derive(c) == -1) {
		fprintf(stderr, "%s: %s\n", c->name, c->err);
		return (1);
	}
	if (first_operand != NULL)
		*first_operand = first;
	return (-1);
}
