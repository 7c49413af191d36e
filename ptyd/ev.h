/*
 * ev.h -- the event loop: epoll for fds, a min-heap of timers, and work
 * deferred to the end of the loop turn.
 *
 * Owns: the epoll fd, the timer heap, the deferred list and the cached
 * clock.  Does not own: any of the objects whose callbacks it runs; an
 * object that goes away stops its own io and timers (ev_io_del,
 * ev_timer_stop) and frees itself through ev_defer, never inside its own
 * callback, so a callback later in the same epoll batch never touches freed
 * memory.
 *
 * Times are microseconds of CLOCK_MONOTONIC.  Code that decides by time
 * takes `now` as a parameter; only callers at the loop's edge read ev_now().
 */
#ifndef PTYD_EV_H
#define PTYD_EV_H

#include <stddef.h>
#include <stdint.h>

struct ev_io {
	int	 fd; /* -1 when not registered */
	uint32_t events;
	void (*cb)(int, uint32_t, void *);
	void *arg;
};

struct ev_timer {
	int64_t when;
	size_t	slot; /* heap index + 1; 0: not pending */
	void (*cb)(void *);
	void *arg;
};

struct ev_defer {
	struct ev_defer *next;
	int		 queued;
	void (*cb)(void *);
	void *arg;
};

int  ev_init(void);
void ev_done(void);

/* Register fd with epoll for events (EPOLLIN, ...).  0 or -1/errno. */
int ev_io_add(struct ev_io *, int fd, uint32_t events,
    void (*cb)(int, uint32_t, void *), void *arg);
int ev_io_set(struct ev_io *, uint32_t events);
/* Unregister; the fd stays open (the owner closes it).  No-op if unset. */
void ev_io_del(struct ev_io *);

void ev_timer_init(struct ev_timer *, void (*cb)(void *), void *arg);
void ev_timer_at(struct ev_timer *, int64_t when);
void ev_timer_stop(struct ev_timer *);
int  ev_timer_pending(const struct ev_timer *);

void ev_defer_init(struct ev_defer *, void (*cb)(void *), void *arg);
/* Run cb once at the end of this loop turn (again if re-queued then). */
void ev_defer(struct ev_defer *);
/* Run cb at the end of the next loop turn, after that turn's io and timers:
 * work left over by a budget yields to new events, and the next epoll_wait
 * does not sleep. */
void ev_defer_next(struct ev_defer *);
void ev_defer_cancel(struct ev_defer *);

/* The monotonic clock, cached at the start of each turn. */
int64_t	 ev_now(void);
/* Which turn this is (counts from 1; 0 before the first). */
uint64_t ev_turn(void);
/* A fresh reading of the monotonic clock (updates the cache). */
int64_t ev_clock(void);
/* Wall-clock microseconds (CLOCK_REALTIME) for a monotonic time. */
int64_t ev_wall_us(int64_t mono);

/* One turn: wait (at most max_wait us, < 0: until the next timer), run io
 * callbacks, due timers, then deferred work.  -1 only on epoll failure. */
int ev_run_once(int64_t max_wait);

#endif /* PTYD_EV_H */
