/*
 * pool.h -- ptyd-pool: one master, started as root, runs every account's
 * ptyd and ptyd.fcgi, each as its account (ptyd-pool(8), DESIGN 11).
 *
 * What the files share: an account (one file of the pool folder) and its
 * two processes.  Owned by pool/acct.c (reading, comparing), pool/proc.c
 * (the processes, their restarts, their output), pool/adopt.c (processes
 * this image did not start: a keeper left running, the handover at a
 * re-exec), pool/sock.c (the listen socket), pool/child.c (what runs between fork and exec), pool/reload.c
 * (the folder against the table), pool/main.c (the loop).
 */
#ifndef PTYD_POOL_H
#define PTYD_POOL_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#include "plog.h"

#define POOL_NAME_MAX 64

/* An account's two processes. */
enum pool_kind {
	POOL_PTYD, /* ptyd -f, which becomes ptyd-keeper: the shells */
	POOL_FCGI, /* ptyd.fcgi on the socket the master made */
	POOL_NKINDS
};

/*
 * What a settings change touches: each class is the text of the keys of
 * the file that belong to it, so a reload compares texts.
 */
enum pool_class {
	POOL_C_IDENT, /* user, group, rlimits: everything again */
	POOL_C_SOCK,  /* listen and its owner, group, mode */
	POOL_C_HOME,  /* ptyd's paths (state_dir, db, socket, pidfile, log) */
	POOL_C_PTYD,  /* ptyd's other settings: an upgrade keeps the shells */
	POOL_C_FCGI,  /* ptyd.fcgi's: it is restarted, stateless */
	POOL_NCLASSES
};

struct pool_proc {
	pid_t	pid; /* 0: not running */
	int	out; /* read end of its stdout and stderr, or -1 */
	char	line[PLOG_LINE_MAX];
	size_t	len;	 /* of the line so far */
	int	cut;	 /* the line went past PLOG_LINE_MAX */
	int64_t started; /* monotonic, microseconds */
	int64_t due;	 /* start it then; 0: not waiting */
	int64_t kill_at; /* SIGKILL then, if still here; 0: none */
	int	fails;	 /* quick ends in a row, for the backoff */
	int	      pidfd;   /* a process not our child (adopt.c): its end */
	int	      adopted; /* not our child: no wait status, pidfd's end */
	int64_t	      lines_at; /* when lines was last topped up */
	int	      lines;	/* lines it may still have logged */
	unsigned long dropped;	/* lines past the rate, not yet told */
	int	again;	 /* ended on purpose: start again at once */
};

struct pool_acct {
	struct pool_acct  *next;
	char		   name[POOL_NAME_MAX + 1];
	char		  *path; /* its file */
	char		  *user, *home, *shell;
	char		  *lockfile; /* <db>.lock: the keeper's flock */
	uid_t		   uid;
	gid_t		   gid;
	char		  *listen;		       /* the socket's path */
	uid_t		   sock_uid;		       /* listen_owner */
	gid_t		   sock_gid;		       /* listen_group */
	mode_t		   sock_mode;		       /* listen_mode */
	unsigned long long rlimit_files, rlimit_nproc; /* 0: inherited */
	char		  *text[POOL_NCLASSES];
	int		   listen_fd; /* -1: none yet */
	int		   gone;      /* stopping for good */
	int		   seen;      /* in the folder at this reload */
	struct pool_proc   proc[POOL_NKINDS];
};

/* The master's settings (command line). */
struct pool_opts {
	const char *dir;
	char	    ptyd[4096]; /* the programs it runs */
	char	    fcgi[4096];
	int	    check; /* -t: read the files, say what is wrong, exit */
};
extern struct pool_opts	 pool_opts;
extern struct pool_acct *pool_accts;

/* pool/acct.c */
int		  acct_name_ok(const char *file, char *name, size_t size);
struct pool_acct *acct_load(const char *dir, const char *name, char *cause,
    size_t size);
void		  acct_free(struct pool_acct *);
unsigned int	  acct_diff(const struct pool_acct *, const struct pool_acct *);
const char	 *kind_name(enum pool_kind);

/* pool/adopt.c */
int  adopt_keeper(struct pool_acct *, int64_t now);
void adopt_init(char **argv);
void adopt_handover_read(void);
int  adopt_handover_take(struct pool_acct *, int kind, int64_t now);
void adopt_handover_rest(void);
void adopt_reexec(void);

/* pool/sock.c */
int  sock_open(struct pool_acct *);
void sock_close(struct pool_acct *);

/* pool/child.c: never returns. */
void   child_run(const struct pool_acct *, enum pool_kind, int out, char **argv,
      char **envp) __attribute__((noreturn));
char **child_env(const struct pool_acct *);
void   child_env_free(char **);

/* pool/proc.c */
int64_t pool_now(void);
void	proc_init(struct pool_acct *);
void	proc_start(struct pool_acct *, enum pool_kind, int64_t now);
void	proc_stop(struct pool_acct *, enum pool_kind, int again, int64_t now);
void	proc_signal(struct pool_acct *, enum pool_kind, int sig);
int	proc_reaped(pid_t, int status, int64_t now);
void proc_adopt(struct pool_proc *, pid_t, int out, int pidfd, int64_t started,
    int adopted);
void proc_pidfd_ended(struct pool_acct *, enum pool_kind, int64_t now);
void	proc_tick(int64_t now);
int64_t proc_next(int64_t now);
void	proc_read(struct pool_proc *, const struct pool_acct *, enum pool_kind,
       int eof);

/* pool/reload.c */
int  reload_folder(int64_t now, int first);
void reload_stop_all(int64_t now);
void reload_collect(void);
void reload_upgrade_all(void);

#endif /* PTYD_POOL_H */
