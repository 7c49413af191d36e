/*
 * config.h -- the settings of ptyd, ptyd.fcgi and ptydctl: one table, one
 * file format (ptyd.conf), the PTYD_<KEY> environment and the command
 * line, each value with where it came from.
 *
 * Owns: the table of every key (type, default, range, which program uses
 * it, help line), reading ptyd.conf, the precedence default < system file
 * < account file (or --config FILE) < environment < command line, the
 * checks on every value, the defaults derived from state_dir, --help,
 * --version and --print-config.  Does not own: what a setting does (each
 * program), or defaults only a program can compute (the shell, the umask
 * it started with, where ptyd lives): the program reports those back with
 * config_default so --print-config shows them.  Startup only: no thread
 * may run while a config is loaded.
 */
#ifndef PTYD_CONFIG_H
#define PTYD_CONFIG_H

#include <stdint.h>
#include <stdio.h>

/* The programs, as a mask: which of them use a key. */
#define CONFIG_PTYD 0x1u
#define CONFIG_FCGI 0x2u
#define CONFIG_CTL  0x4u
#define CONFIG_POOL 0x8u /* ptyd-pool: an account file's own keys */

/* Every key, in the order --print-config and --help list them. */
enum config_key {
	CONFIG_STATE_DIR,
	CONFIG_DB,
	CONFIG_SOCKET,
	CONFIG_LOG,
	CONFIG_LOG_LEVEL,
	CONFIG_PIDFILE,
	CONFIG_AUDIT_ANCHOR,
	CONFIG_AUDIT_LOG,
	CONFIG_SHELL,
	CONFIG_SHELL_ARG,
	CONFIG_WORKSPACE_ROOT,
	CONFIG_DEFAULT_WORKSPACE,
	CONFIG_IDLE_GRACE,
	CONFIG_REAP_INTERVAL,
	CONFIG_LINGER,
	CONFIG_STALL_TIMEOUT,
	CONFIG_MAX_TERMINALS,
	CONFIG_MAX_PER_OWNER,
	CONFIG_MAX_VIEWERS,
	CONFIG_RING_SIZE,
	CONFIG_INPUT_LIMIT,
	CONFIG_SHELL_UMASK,
	CONFIG_LISTEN,
	CONFIG_FCGI_LOG,
	CONFIG_FCGI_PIDFILE,
	CONFIG_SOCKET_GROUP,
	CONFIG_SOCKET_MODE,
	CONFIG_AUTOSTART,
	CONFIG_PTYD_PROGRAM, /* key "ptyd" */
	CONFIG_HEARTBEAT,
	CONFIG_STREAM_PADDING,
	CONFIG_MAX_THREADS,
	CONFIG_PROCESSES,
	CONFIG_AUTH,
	CONFIG_LOCAL,
	CONFIG_ALLOW_REMOTE,
	CONFIG_ALLOWED_HOSTS,
	CONFIG_TRUSTED_PROXY_CIDRS,
	CONFIG_TRUST_FORWARDED_FOR,
	CONFIG_METRICS_ALLOW,
	CONFIG_METRICS_USERS,
	CONFIG_FRAME_ANCESTORS,
	CONFIG_POOL_NAME,  /* key "pool": the name ptyd.fcgi reports */
	CONFIG_USER_NAME,  /* key "user" */
	CONFIG_GROUP_NAME, /* key "group" */
	CONFIG_LISTEN_OWNER,
	CONFIG_LISTEN_GROUP,
	CONFIG_LISTEN_MODE,
	CONFIG_RLIMIT_FILES,
	CONFIG_RLIMIT_NPROC,
	/* Recordings (issue 34, DESIGN 4). */
	CONFIG_RECORD,
	CONFIG_RECORD_INPUT,
	CONFIG_RECORD_MAX_AGE,
	CONFIG_RECORD_MAX_BYTES,
	CONFIG_RECORDINGS_READERS,
	CONFIG_NKEYS
};

/* Where a value came from, lowest to highest: a higher one wins. */
enum config_level {
	CONFIG_DEFAULT,
	CONFIG_SYSTEM, /* $(sysconfdir)/ptyd.conf */
	CONFIG_USER,   /* ~/.config/ptyd/ptyd.conf, or --config FILE */
	CONFIG_ENV,    /* PTYD_<KEY> */
	CONFIG_CLI     /* --key-with-dashes VALUE */
};

/*
 * A program's own options beyond the settings (ptyd's -f, ptydctl's
 * --owner): val is handed to cb with the argument (NULL without one).
 * A val below 128 that is a letter is also the short option.
 */
struct config_extra {
	const char *name;
	int	    has_arg; /* getopt_long's no_argument, required_argument */
	int	    val;
	const char *arg;  /* its argument in --help: "NAME" */
	const char *help; /* one line */
};

struct config_args {
	const char		  *synopsis; /* after "usage: " */
	const char		  *footer;   /* after the options, or NULL */
	const struct config_extra *extra;    /* ends with a NULL name */
	void (*cb)(void *arg, int val, const char *optarg);
	void *arg;
	int   operands; /* 1: stop at the first operand (ptydctl's command) */
};

struct config;

/* A config for one program (CONFIG_PTYD...) named name ("ptyd"). */
struct config *config_new(unsigned int prog, const char *name);
void	       config_free(struct config *);

/*
 * The whole load, for a program's main: the command line, then the files,
 * the environment, the derived paths.  Returns -1 to go on (then
 * *first_operand is the index of the first argument that is not an
 * option), or the status to exit with, after printing what it has to:
 * 0 for --help and --version (stdout), 2 for a wrong option (usage to
 * stderr), 1 for a bad file or value (the reason to stderr).
 * --print-config is left to the caller, once it has reported its
 * computed defaults: see config_print_requested.
 */
int config_load(struct config *, int argc, char **argv,
    const struct config_args *, int *first_operand);

/* The steps of config_load, for tests; each 0, or -1 with config_error. */
int config_file(struct config *, const char *path, enum config_level,
    int must_exist);
int config_env(struct config *);
int config_set(struct config *, enum config_key, const char *value,
    enum config_level, const char *origin);
int config_derive(struct config *);
/* What went wrong, "FILE:LINE: unknown key 'foo'" and the like. */
const char *config_error(const struct config *);

/* Where ~ is (the password database's, not $HOME); NULL: nowhere. */
void	    config_set_home(struct config *, const char *home);
const char *config_home(const struct config *);
/* Narrow a key's range to what the program can take (before loading). */
void config_set_range(struct config *, enum config_key, long long min,
    long long max);

/* The key's name in the file ("idle_grace"), or -1 if there is none. */
const char *config_key_name(enum config_key);
int	    config_key_find(const char *name);
/* The programs (CONFIG_PTYD...) that use a key. */
unsigned int config_key_progs(enum config_key);

/*
 * The effective values.  config_str: NULL when unset (no default and
 * none computed).  config_us: seconds, in microseconds.  config_num:
 * counts, bytes, octal modes, booleans (0/1), an enum's index.
 */
const char	  *config_str(const struct config *, enum config_key);
int64_t		   config_us(const struct config *, enum config_key);
unsigned long long config_num(const struct config *, enum config_key);
/* A list key's values (NULL-terminated) and their number. */
char *const *config_list(const struct config *, enum config_key, size_t *n);
enum config_level config_level(const struct config *, enum config_key);
const char	 *config_origin(const struct config *, enum config_key);

/*
 * A default the program computed (the shell it found, the umask it was
 * started with): taken only while the key is still at its default, so
 * --print-config shows the value in effect.  For a list key, value is
 * appended (NULL clears).
 */
void config_default(struct config *, enum config_key, const char *value);

/* --config FILE or PTYD_CONFIG, when one was given; else NULL. */
const char *config_file_given(const struct config *);

/* Was --print-config given?  Then print and exit 0. */
int  config_print_requested(const struct config *);
void config_print(const struct config *, FILE *);

#endif /* PTYD_CONFIG_H */
