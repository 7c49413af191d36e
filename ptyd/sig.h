/*
 * sig.h -- signals as events: SIGCHLD, SIGTERM, SIGINT and SIGHUP arrive
 * through a signalfd in the loop; SIGPIPE is ignored.
 *
 * Owns: the signal mask of the daemon and the signalfd.  Does not own what
 * a signal means (main.c's callback decides).
 */
#ifndef PTYD_SIG_H
#define PTYD_SIG_H

#include <sys/types.h>

/* cb(signo, the sender's pid: for SIGCHLD, the child's). */
int  sig_init(void (*cb)(int, pid_t));
void sig_done(void);

#endif /* PTYD_SIG_H */
