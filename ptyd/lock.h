/*
 * lock.h -- one daemon per database: an flock on <db>.lock for ptyd's
 * whole life, with the holder's pid written in it.
 *
 * Owns: the lock file, its fd and the pid it held before us.  Does not
 * own: the database (store.c), the socket (listen.c) or the pid file
 * (main.c), all of which are touched only once the lock is ours.
 */
#ifndef PTYD_LOCK_H
#define PTYD_LOCK_H

#include <sys/types.h>

/*
 * Lock <db>.lock (created 0600 if missing) and write our pid in it.  A
 * lock another process holds is fatal: exit 1, naming the file and that
 * process's pid.  A lock file that cannot be opened at all (a read-only
 * place) is only logged: the database cannot be written there either.
 */
void lock_take(const char *db);

/* Write our pid in the lock file again (after daemonizing changed it). */
void lock_write_pid(void);

/* The pid the lock file named before we took it (a dead ptyd's), or 0. */
pid_t lock_previous_pid(void);

/* The descriptor holding the lock (-1: none), for the keeper. */
int  lock_fd_get(void);
/* Hold the lock through a descriptor the keeper handed over. */
void lock_adopt(int fd);

#endif /* PTYD_LOCK_H */
