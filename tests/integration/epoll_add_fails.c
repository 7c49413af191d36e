/*
 * epoll_add_fails.c -- LD_PRELOAD shim for test_lifecycle: in each process,
 * every EPOLL_CTL_ADD with EPOLLEXCLUSIVE after the first fails with ENOSPC,
 * as it does at fs.epoll.max_user_watches.  ptyd.fcgi registers its listen
 * socket so, once when a worker starts and again each time it requeues it.
 * Built by the test with the machine's cc.
 */
#define _GNU_SOURCE
#include <sys/epoll.h>

#include <dlfcn.h>
#include <stddef.h>
#include <errno.h>

int
epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	static int (*real)(int, int, int, struct epoll_event *);
	static int added;

	if (real == NULL)
		*(void **)&real = dlsym(RTLD_NEXT, "epoll_ctl");
	if (op == EPOLL_CTL_ADD && ev != NULL &&
	    (ev->events & EPOLLEXCLUSIVE) != 0 &&
	    __atomic_fetch_add(&added, 1, __ATOMIC_RELAXED) > 0) {
		errno = ENOSPC;
		return (-1);
	}
	return (real(epfd, op, fd, ev));
}
