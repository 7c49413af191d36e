/*
 * proc.h -- the processes a terminal leaves behind when its shell is gone.
 *
 * Owns: finding them and signalling them, and the delayed SIGKILL pass.
 * Does not own: the shells themselves (term.c signals the shell's process
 * group) or reaping (term.c's SIGCHLD loop reaps every child; ptyd is a
 * child subreaper, so every orphaned descendant becomes its child).
 *
 * Attribution: once a shell is dead, whatever remains of its terminal has
 * been reparented to ptyd, so it is in the subtree of one of ptyd's direct
 * children.  Such a child belongs to the terminal if it is in the shell's
 * session or process group, or holds an fd on the terminal's pty slave (a
 * double-forked `setsid cmd &` keeps its stdio on the tty).  A process
 * that left the session and let go of the tty is a deliberate daemon: it
 * is not attributed to any terminal and is left alone (and still reaped
 * when it exits).  Nothing in a live shell's session or process group is
 * ever signalled.  The delayed SIGKILL pass re-matches nothing: it kills
 * what the SIGHUP pass signalled, if still the same processes (pid and
 * start time), and their descendants.
 */
#ifndef PTYD_PROC_H
#define PTYD_PROC_H

#include <sys/types.h>

/*
 * Signal what remains of the terminal whose shell was session (also its
 * process group) on tty: SIGHUP and SIGCONT now and SIGKILL after
 * PTYD_KILL_DELAY, or SIGKILL now when kill_now.  Call it as the shell is
 * reaped, while the terminal still holds its pty master (so tty is not yet
 * anyone else's).  skip(pid) names the live shells of other terminals:
 * they, and everything in their sessions and process groups, are never
 * candidates.  Returns how many processes were signalled.
 */
int proc_sweep(pid_t session, dev_t tty, int kill_now, int (*skip)(pid_t));
/* A close-on-exec pidfd on pid, or -1 (errno: ESRCH gone, ENOSYS none). */
int proc_pidfd_open(pid_t pid);

/* Run every pending SIGKILL pass now and free them (shutdown). */
void proc_sweep_flush(void);

/* The children of pid (all its threads), at most max; -1 on error. */
int proc_children(pid_t pid, pid_t *out, int max);

/* session and process group of pid from /proc; -1 on error. */
int proc_stat(pid_t pid, pid_t *ppid, pid_t *pgrp, pid_t *session);

#endif /* PTYD_PROC_H */
