/*
 * server.h -- ptyd.fcgi as a FastCGI server: a set of pre-forked worker
 * processes sharing one listen socket, each serving requests on a pool of
 * threads.
 *
 * Owns: processes (server.c), threads, accepting connections, handing each
 * to libfcgi (pool.c), kept connections between requests (poolpark.c), and
 * shutdown.  Does not own: what a request does (handlers.c) or how it ends
 * on the wire (http.c).
 */
#ifndef FRONT_SERVER_H
#define FRONT_SERVER_H

#include <stddef.h>

struct front_conf;

/*
 * Descriptors libfcgi may see: its select()-based code paths
 * (is_af_unix_keeper, OS_Close, OS_DoIo in older builds) overflow fd_set
 * at 1024.  A request holds at most SERVER_FDS_PER_REQUEST of them while a
 * thread serves it, so the thread cap keeps them all below; streams live
 * above (streamloop.h, SLOOP_FD_BASE).
 */
#define SERVER_NOFILE 1024
#define SERVER_FDS_RESERVED \
	24			 /* stdio, listen, epoll, eventfd, timerfd,
					   signalfd, ... */
#define SERVER_FDS_PER_REQUEST 2 /* FastCGI connection + ptyd */
/* Idle connections the web server keeps open for its next request
 * (FCGI_KEEP_CONN), per process: poolpark.c parks them below 1024 too. */
#define SERVER_KEPT_MAX 128
#define SERVER_MAX_THREADS \
	((SERVER_NOFILE - SERVER_FDS_RESERVED - SERVER_KEPT_MAX) / \
		SERVER_FDS_PER_REQUEST - \
	    4)

struct server_conf {
	int    listen_fd;
	int    processes;   /* worker processes */
	int    max_threads; /* per process: concurrent requests */
	size_t stack_size;
	char   unlink_path[108]; /* unix socket to remove at exit */
};

/* Serve until SIGTERM or SIGINT.  Returns the exit status. */
int server_run(const struct front_conf *, const struct server_conf *);
/* One worker process (pool.c), until SIGTERM or SIGINT: it exits, never
 * returns. */
void pool_run(const struct front_conf *, const struct server_conf *);

/*
 * Serve one request on the connection fd (just accepted, or kept from an
 * earlier request: kept), then close it, unless the web server asked to
 * keep it (FCGI_KEEP_CONN) and the request ended cleanly: then fd is
 * returned, for its next request.  -1 when it is closed.  last_cb(last_arg),
 * if not NULL, is called when the request says it will last
 * (req_will_last).
 */
int server_serve_conn(const struct front_conf *, int fd, int kept, int stop_fd,
    void (*last_cb)(void *), void *last_arg);

#endif /* FRONT_SERVER_H */
