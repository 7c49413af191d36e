/*
 * lock.c -- one daemon per database (lock.h).
 *
 * Owns: <db>.lock and the fd that holds the flock on it.  Does not own:
 * deciding what happens before and after it in startup (main.c).
 *
 * Why flock on a file beside the database rather than the socket or the
 * pid file: the socket's path depends on settings and the environment
 * (two ptyds with different --socket would both bind), and a pid file can
 * name a pid the system has reused.  An flock is released by the kernel
 * when the holder dies, however it dies, so a lock that is held means a
 * live ptyd; and two daemons on one database would mark each other's
 * rows lost.  The fd is CLOEXEC, so no shell inherits the lock (spawn.c
 * closes everything above 2 anyway).  The file is never unlinked: a
 * process that opened it before the unlink would lock a ghost.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lock.h"
#include "log.h"

static int   lock_fd = -1;
static char  lock_path[4096];
static pid_t lock_prev;

/* The pid written in the lock file, or 0. */
static pid_t
lock_read_pid(int fd)
{
	char	buf[32], *end;
	ssize_t n;
	long	v;

	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return (0);
	buf[n] = '\0';
	errno = 0;
	v = strtol(buf, &end, 10);
	if (errno != 0 || end == buf || v <= 0 || v > 0x7fffffff)
		return (0);
	return ((pid_t)v);
}

void
lock_write_pid(void)
{
	char buf[32];
	int  n;

	if (lock_fd == -1)
		return;
	n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
	if (ftruncate(lock_fd, 0) == -1 ||
	    pwrite(lock_fd, buf, (size_t)n, 0) != n)
		log_warn("%s: writing our pid", lock_path);
}

void
lock_take(const char *db)
{
	struct stat st;
	pid_t	    holder;
	int	    fd;

	if (snprintf(lock_path, sizeof(lock_path), "%s.lock", db) >=
	    (int)sizeof(lock_path))
		fatalx("%s.lock: path too long", db);
	/*
	 * Without the lock two ptyd could share the database and mark each
	 * other's rows lost: whatever stands in the way (a symlink, a
	 * directory, another account's file, a read-only folder), refuse.
	 */
	fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd == -1)
		fatal("%s: cannot open the database's lock", lock_path);
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_uid != getuid())
		fatalx("%s: not a file of ours; remove it (the database's "
		       "lock)",
		    lock_path);
	while (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		if (errno == EINTR)
			continue;
		if (errno != EWOULDBLOCK)
			fatal("%s: flock", lock_path);
		holder = lock_read_pid(fd);
		if (holder > 0)
			fatalx("%s: held by pid %ld (another ptyd uses this "
			       "database)",
			    lock_path, (long)holder);
		fatalx("%s: held by another process (another ptyd uses this "
		       "database)",
		    lock_path);
	}
	lock_prev = lock_read_pid(fd);
	if (lock_prev == getpid())
		lock_prev = 0;
	lock_fd = fd;
	lock_write_pid();
}

int
lock_fd_get(void)
{
	return (lock_fd);
}

void
lock_adopt(int fd)
{
	/* The keeper's lock, on the same open file: the flock is ours
	 * too, and never free between one ptyd and the next. */
	if (flock(fd, LOCK_EX | LOCK_NB) == -1)
		fatal("the database's lock from the keeper");
	lock_fd = fd;
	lock_prev = 0;
}

pid_t
lock_previous_pid(void)
{
	return (lock_prev);
}
