/*
 * ev.c -- a small epoll loop with a timer heap and end-of-turn work.
 *
 * Owns: the epoll instance, the timer heap (an array of pointers into the
 * owners' struct ev_timer, each knowing its slot, so stop is O(log n)), the
 * deferred list and the cached clock.  Does not own: the objects behind the
 * callbacks.
 *
 * A turn runs io callbacks, then due timers, then deferred work: what was
 * put off to this turn (ev_defer_next) first, then what this turn queued.
 * Work that yields to new events (a write budget spent) puts itself off
 * to the next turn, whose epoll_wait then only polls.  Frees are
 * deferred work, so nothing freed in a turn is reachable from a later event
 * of the same epoll batch: ev_io_del sets fd to -1 and the dispatcher skips
 * such entries.
 */
#include <sys/epoll.h>

#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "ev.h"
#include "log.h"
#include "xmalloc.h"

#define EV_BATCH 256

static int		 ev_epfd = -1;
static struct ev_timer **ev_heap;
static size_t		 ev_nheap, ev_capheap;
static struct ev_defer	*ev_deferred, **ev_deferred_tail = &ev_deferred;
static struct ev_defer	*ev_later, **ev_later_tail = &ev_later;
static int64_t		 ev_cached;
static uint64_t		 ev_turns;

static int64_t
ev_clock_read(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ((int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
}

int64_t
ev_clock(void)
{
	ev_cached = ev_clock_read(CLOCK_MONOTONIC);
	return (ev_cached);
}

int64_t
ev_now(void)
{
	if (ev_cached == 0)
		return (ev_clock());
	return (ev_cached);
}

int64_t
ev_wall_us(int64_t mono)
{
	return (mono +
	    (ev_clock_read(CLOCK_REALTIME) - ev_clock_read(CLOCK_MONOTONIC)));
}

int
ev_init(void)
{
	if ((ev_epfd = epoll_create1(EPOLL_CLOEXEC)) == -1)
		return (-1);
	ev_clock();
	return (0);
}

void
ev_done(void)
{
	if (ev_epfd != -1)
		close(ev_epfd);
	ev_epfd = -1;
	free(ev_heap);
	ev_heap = NULL;
	ev_nheap = ev_capheap = 0;
}

int
ev_io_add(struct ev_io *io, int fd, uint32_t events,
    void (*cb)(int, uint32_t, void *), void *arg)
{
	struct epoll_event ee;

	io->fd = -1;
	io->cb = cb;
	io->arg = arg;
	io->events = events;
	ee.events = events;
	ee.data.ptr = io;
	if (ev_epfd == -1) {
		/* Unit tests drive term.c without a loop. */
		io->fd = fd;
		return (0);
	}
	if (epoll_ctl(ev_epfd, EPOLL_CTL_ADD, fd, &ee) == -1)
		return (-1);
	io->fd = fd;
	return (0);
}

int
ev_io_set(struct ev_io *io, uint32_t events)
{
	struct epoll_event ee;

	if (io->fd == -1 || io->events == events)
		return (0);
	io->events = events;
	if (ev_epfd == -1)
		return (0);
	ee.events = events;
	ee.data.ptr = io;
	return (epoll_ctl(ev_epfd, EPOLL_CTL_MOD, io->fd, &ee));
}

void
ev_io_del(struct ev_io *io)
{
	if (io->fd == -1)
		return;
	if (ev_epfd != -1 &&
	    epoll_ctl(ev_epfd, EPOLL_CTL_DEL, io->fd, NULL) == -1 &&
	    errno != EBADF && errno != ENOENT)
		log_warn("epoll_ctl del %d", io->fd);
	io->fd = -1;
}

/* Timers: a binary min-heap on `when`; slot is index + 1. */

static void
ev_heap_place(size_t i, struct ev_timer *t)
{
	ev_heap[i] = t;
	t->slot = i + 1;
}

static void
ev_heap_up(size_t i)
{
	struct ev_timer *t = ev_heap[i];
	size_t		 parent;

	while (i > 0) {
		parent = (i - 1) / 2;
		if (ev_heap[parent]->when <= t->when)
			break;
		ev_heap_place(i, ev_heap[parent]);
		i = parent;
	}
	ev_heap_place(i, t);
}

static void
ev_heap_down(size_t i)
{
	struct ev_timer *t = ev_heap[i];
	size_t		 child;

	for (;;) {
		child = 2 * i + 1;
		if (child >= ev_nheap)
			break;
		if (child + 1 < ev_nheap &&
		    ev_heap[child + 1]->when < ev_heap[child]->when)
			child++;
		if (t->when <= ev_heap[child]->when)
			break;
		ev_heap_place(i, ev_heap[child]);
		i = child;
	}
	ev_heap_place(i, t);
}

void
ev_timer_init(struct ev_timer *t, void (*cb)(void *), void *arg)
{
	t->when = 0;
	t->slot = 0;
	t->cb = cb;
	t->arg = arg;
}

int
ev_timer_pending(const struct ev_timer *t)
{
	return (t->slot != 0);
}

void
ev_timer_stop(struct ev_timer *t)
{
	struct ev_timer *last;
	size_t		 i;

	if (t->slot == 0)
		return;
	i = t->slot - 1;
	t->slot = 0;
	ev_nheap--;
	if (i == ev_nheap)
		return;
	last = ev_heap[ev_nheap];
	ev_heap_place(i, last);
	ev_heap_up(i);
	/* Moved up: what sits at i now came from above and is in order. */
	if (ev_heap[i] == last)
		ev_heap_down(i);
}

void
ev_timer_at(struct ev_timer *t, int64_t when)
{
	ev_timer_stop(t);
	if (ev_nheap == ev_capheap) {
		ev_capheap = ev_capheap == 0 ? 64 : ev_capheap * 2;
		ev_heap = xreallocarray(ev_heap, ev_capheap, sizeof(*ev_heap));
	}
	t->when = when;
	ev_heap_place(ev_nheap, t);
	ev_nheap++;
	ev_heap_up(ev_nheap - 1);
}

void
ev_defer_init(struct ev_defer *d, void (*cb)(void *), void *arg)
{
	d->next = NULL;
	d->queued = 0;
	d->cb = cb;
	d->arg = arg;
}

void
ev_defer(struct ev_defer *d)
{
	if (d->queued)
		return;
	d->queued = 1;
	d->next = NULL;
	*ev_deferred_tail = d;
	ev_deferred_tail = &d->next;
}

void
ev_defer_next(struct ev_defer *d)
{
	if (d->queued)
		return;
	d->queued = 1;
	d->next = NULL;
	*ev_later_tail = d;
	ev_later_tail = &d->next;
}

/* Take d out of list *head (tail *tailp); 1 if it was there. */
static int
ev_defer_unlink(struct ev_defer **head, struct ev_defer ***tailp,
    struct ev_defer *d)
{
	struct ev_defer **pp;

	for (pp = head; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == d) {
			*pp = d->next;
			if (*tailp == &d->next)
				*tailp = pp;
			return (1);
		}
	}
	return (0);
}

void
ev_defer_cancel(struct ev_defer *d)
{
	if (!d->queued)
		return;
	if (!ev_defer_unlink(&ev_deferred, &ev_deferred_tail, d))
		(void)ev_defer_unlink(&ev_later, &ev_later_tail, d);
	d->queued = 0;
	d->next = NULL;
}

static void
ev_run_deferred(void)
{
	struct ev_defer *d;

	/* What was put off to this turn goes first, in its order. */
	if (ev_later != NULL) {
		*ev_later_tail = ev_deferred;
		if (ev_deferred == NULL)
			ev_deferred_tail = ev_later_tail;
		ev_deferred = ev_later;
		ev_later = NULL;
		ev_later_tail = &ev_later;
	}

	/* Work queued by deferred work runs in the same pass. */
	while ((d = ev_deferred) != NULL) {
		ev_deferred = d->next;
		if (ev_deferred == NULL)
			ev_deferred_tail = &ev_deferred;
		d->next = NULL;
		d->queued = 0;
		d->cb(d->arg);
	}
}

static void
ev_run_timers(void)
{
	struct ev_timer *t;
	int64_t		 now = ev_clock();

	while (ev_nheap > 0 && ev_heap[0]->when <= now) {
		t = ev_heap[0];
		ev_timer_stop(t);
		t->cb(t->arg);
	}
}

uint64_t
ev_turn(void)
{
	return (ev_turns);
}

int
ev_run_once(int64_t max_wait)
{
	struct epoll_event evs[EV_BATCH];
	struct ev_io	  *io;
	int64_t		   wait, now;
	int		   n, i, ms;

	ev_turns++;
	now = ev_clock();
	wait = max_wait;
	if (ev_nheap > 0) {
		if (ev_heap[0]->when <= now)
			wait = 0;
		else if (wait < 0 || ev_heap[0]->when - now < wait)
			wait = ev_heap[0]->when - now;
	}
	if (ev_deferred != NULL || ev_later != NULL)
		wait = 0;
	/* Round up so a timer is never woken for early and spun on. */
	ms = wait < 0		? -1 :
	    wait > 3600000000LL ? 3600000 :
				  (int)((wait + 999) / 1000);
	n = epoll_wait(ev_epfd, evs, EV_BATCH, ms);
	if (n == -1) {
		if (errno != EINTR)
			return (-1);
		n = 0;
	}
	ev_clock();
	for (i = 0; i < n; i++) {
		io = evs[i].data.ptr;
		if (io->fd == -1)
			continue;
		io->cb(io->fd, evs[i].events, io->arg);
	}
	ev_run_timers();
	ev_run_deferred();
	return (0);
}
