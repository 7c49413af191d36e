/*
 * streamloop.h -- event loop threads (one per CPU, at most 4) in each
 * worker process that move the bytes of every output stream the process
 * holds (streamloop.c); a stream goes to the loop with the fewest.
 *
 * Owns: the loop thread, its epoll set and timers, and every stream handed
 * to it with both its descriptors.  Does not own: the request's checks or
 * the attach (stream.c), threads serving requests (pool.c).
 */
#ifndef FRONT_STREAMLOOP_H
#define FRONT_STREAMLOOP_H

#include <stdint.h>

struct stream;

/*
 * Stream descriptors are moved to numbers at or above this (libfcgi's
 * select() must never see one; DESIGN section 5), so they never crowd the
 * low numbers new connections get.
 */
#define SLOOP_FD_BASE 1024

/*
 * Start this process's loops: heartbeat period, the stop descriptor (a
 * loop ends every stream when it becomes readable), and the hook that
 * takes a kept FastCGI connection (FCGI_KEEP_CONN) whose stream ended
 * with END_REQUEST: keep(keep_arg, fd) owns fd from then on, and is
 * called from a loop thread.  0 if at least one started, or -1.
 */
int sloop_start(int64_t heartbeat_ms, int stop_fd, void (*keep)(void *, int),
    void *keep_arg);
/* Wait at most ms for the loops to end their streams after stop. */
void sloop_join(int ms);
/* 1 when a loop runs in this process (FastCGI server, not CGI). */
int sloop_running(void);
/* The streams this process's loops hold (a moment's count). */
int sloop_streams(void);
/*
 * Hand an attached stream over: its descriptors are moved above the
 * libfcgi range and the loop owns the stream from here, including its
 * end.  0, or -1 when it cannot (the caller keeps the stream and serves
 * it on its thread).
 */
int sloop_add(struct stream *);

#endif /* FRONT_STREAMLOOP_H */
