/*
 * ptyd.h -- the daemon's configuration, shared by its modules.
 *
 * Owns: the settings' values (set once by main.c at startup from
 * lib/config.c, read everywhere, changed by unit tests to drive limits) and
 * the fixed timings of DESIGN section 4.  Does not own: reading settings
 * (lib/config.c, main.c).
 */
#ifndef PTYD_PTYD_H
#define PTYD_PTYD_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#include "contract.h"

#define PTYD_SEC	       1000000LL       /* times are microseconds */
#define PTYD_KILL_DELAY	       (1500 * 1000LL) /* SIGHUP -> SIGKILL */
#define PTYD_HUP_TRIES	       3 /* SIGHUPs in that time, evenly spaced */
#define PTYD_DRAIN_DEADLINE    (3 * PTYD_SEC)  /* reaped -> EIO at the latest */
#define PTYD_REQUEST_TIMEOUT   (10 * PTYD_SEC) /* one request frame */
/* A connection waiting for its next request (ptyd.fcgi keeps one per
 * thread, fcgi/ptyd_client.c, and drops it sooner, PTYD_KEPT_IDLE_MS). */
#define PTYD_CONN_IDLE	       (60 * PTYD_SEC)
#define PTYD_FLUSH_INTERVAL    PTYD_SEC	       /* SQLite write-behind */
#define PTYD_SHUTDOWN_DEADLINE (3 * PTYD_SEC)

#define PTYD_ROWS_DEFAULT CONTRACT_ROWS_DEFAULT /* lib/contract.h */
#define PTYD_COLS_DEFAULT CONTRACT_COLS_DEFAULT
#define PTYD_ROWS_MIN	  CONTRACT_ROWS_MIN
#define PTYD_ROWS_MAX	  CONTRACT_ROWS_MAX
#define PTYD_COLS_MIN	  CONTRACT_COLS_MIN
#define PTYD_COLS_MAX	  CONTRACT_COLS_MAX

struct ptyd_config {
	int64_t	     idle_grace;    /* us */
	int64_t	     reap_interval; /* us */
	int64_t	     linger;	    /* us */
	int64_t	     stall_timeout; /* us */
	unsigned int max_terminals;
	unsigned int max_per_owner;
	unsigned int max_viewers;
	size_t	     ring_size;
	size_t	     input_limit;
	/* Shares (share.c). */
	int	     share_anonymous;
	int64_t	     share_max_ttl; /* us */
	int64_t	     share_min_ttl; /* us */
	unsigned int max_shares;

	const char *shell;	/* absolute path */
	char	  **shell_argv; /* NULL-terminated */
	char	  **env;	/* allowlisted, NULL-terminated */
	char	  **roots;	/* realpath'd workspace roots */
	size_t	    nroots;
	const char *default_workspace; /* realpath'd */
	mode_t	    shell_umask;       /* ours is 077; theirs is
						   what we were started with */

	/* Where things are (lib/config.c; NULL: none). */
	const char *state_dir;
	const char *db;
	const char *audit_anchor; /* syslog, none, unix:PATH */
	const char *audit_log;	  /* none, syslog, journal, unix:PATH */
	const char *socket;
	const char *log; /* NULL: stderr, or syslog */
	int	    log_syslog;
	int	    verbose;
	const char *pidfile;
	int	    foreground; /* -f: no fork, no setsid */
};

/* Defined in term.c with the defaults of DESIGN section 4. */
extern struct ptyd_config ptyd_conf;

#endif /* PTYD_PTYD_H */
