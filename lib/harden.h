/*
 * harden.h -- what a shell started by a daemon may learn of the daemon
 * (DESIGN 6, isolation): nothing of its memory, nothing of its
 * environment beyond an allowlist.
 *
 * Owns: making the process non-dumpable (so /proc/PID/environ, mem, maps
 * and fd of the daemon are closed to a same-uid shell) and wiping the
 * environment the process started with down to the variables it needs
 * (so even a root shell, which non-dumpable does not stop, reads zeros in
 * /proc/PID/environ).  Does not own: which variables each program needs
 * (the callers' allowlists) or the shell's own environment (ptyd/spawn.c).
 */
#ifndef PTYD_HARDEN_H
#define PTYD_HARDEN_H

/* An allowlist: exact names, and prefixes ("LC_" matches "LC_ALL"). */
struct harden_allow {
	const char *const *names;
	const char *const *prefixes;
};

/* DESIGN 4: what of the daemon's environment a shell may see (PATH HOME
 * USER LOGNAME SHELL LANG LANGUAGE TZ TMPDIR LC_* XDG_*). */
extern const struct harden_allow harden_shell_env;
/* What the daemons keep: the shell's list and their PTYD_* settings. */
extern const struct harden_allow harden_daemon_env;

/* 1 if "NAME=value" is on the list. */
int harden_env_allowed(const struct harden_allow *, const char *entry);

/* prctl(PR_SET_DUMPABLE, 0).  0, or -1 with errno. */
int harden_nodump(void);

/* What harden_env kept (environ may move on from it: setenv). */
extern char **harden_kept;

/*
 * Keep only the allowed variables (copied to the heap; environ points at
 * the copies) and overwrite every byte of the strings the process started
 * with, where /proc/PID/environ reads them.  Call before anything keeps a
 * pointer from getenv().
 */
void harden_env(const struct harden_allow *);

/* A NULL-terminated copy of the allowed entries of environ, for a child
 * (free the array, not the strings, which stay environ's). */
char **harden_env_filter(const struct harden_allow *);

#endif /* PTYD_HARDEN_H */
