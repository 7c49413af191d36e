/*
 * pool_int.h -- what pool.c and poolpark.c share and nothing else may
 * call: a worker process's pool, and its kept connections.
 */
#ifndef FRONT_POOL_INT_H
#define FRONT_POOL_INT_H

#include <pthread.h>
#include <stdint.h>

#include "server.h"

/* A thread of the pool while it leads (its identity as pool.busy). */
struct lead {
	struct pool *p;
	int	     demoted; /* niced: ends after its request */
};

struct pool {
	const struct front_conf	 *conf;
	const struct server_conf *sc;
	int			  epfd;
	int			  stop_fd;
	pthread_mutex_t		  mtx;
	pthread_cond_t		  follow;   /* followers wait here */
	pthread_cond_t		  done;	    /* nthreads reached 0 */
	int			  timer_fd; /* hand-off watchdog */
	int			  nthreads;
	int			  nidle;
	int			  leader; /* someone leads */
	const struct lead	 *busy;	  /* the leader, serving */
	int			  stopping;
	int			  failed; /* accept failed */
	/* The listen socket and a duplicate of it: one of the two is in
	 * epfd (listen[cur]), the other is added in its place to requeue. */
	int			  listen[2];
	int			  listen_cur;
	int64_t			  requeue_logged;
	pthread_attr_t		  attr;
	int64_t			  emfile_logged;
	/* Kept connections waiting for their next request, by descriptor
	 * (all below SERVER_NOFILE), and since when; under mtx. */
	uint8_t parked[SERVER_NOFILE];
	int64_t parked_at[SERVER_NOFILE];
	int	nparked;
	int64_t swept_at;
};

/* poolpark.c.  Park fd, kept for its next request (the mutex held);
 * take back a parked fd the leader was woken by (1 if it was one); close
 * every parked one (stopping); a stream loop's kept connection, parked
 * (sloop_start's callback). */
void pool_park(struct pool *, int fd);
int  pool_unpark(struct pool *, int fd);
void pool_close_parked(struct pool *);
void pool_keep_stream(void *arg, int fd);

#endif /* FRONT_POOL_INT_H */
