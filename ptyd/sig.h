/*
 * sig.h -- signals as events: SIGCHLD, SIGTERM, SIGINT and SIGHUP arrive
 * through a signalfd in the loop; SIGPIPE is ignored.
 *
 * Owns: the signal mask of the daemon and the signalfd.  Does not own what
 * a signal means (main.c's callback decides).
 */
#ifndef PTYD_SIG_H
#define PTYD_SIG_H

int  sig_init(void (*cb)(int));
void sig_done(void);

#endif /* PTYD_SIG_H */
