/*
 * metrics.h -- ptyd.fcgi's request counters and the Prometheus text of
 * GET /api/terminal/metrics.
 *
 * Owns: the counters of requests by endpoint and status, the latency
 * histograms, the count of open output streams and of their re-attaches,
 * and rendering those and
 * ptyd's counters (MSG_STATS_REPLY) as Prometheus text format 0.0.4.
 * Does not own: routing (handlers.c) or the exchange with ptyd.
 *
 * ptyd.fcgi serves from several pre-forked processes (server.c), so the
 * counters live in one shared anonymous mapping made when the program
 * starts, before any fork, and are updated with atomic adds: every
 * process, and a worker restarted by the master, counts into the same
 * numbers, and any process's scrape reports all of them.  A plain CGI run
 * is one process per request: its counters cover that request only.
 */
#ifndef FRONT_METRICS_H
#define FRONT_METRICS_H

#include <stdint.h>

struct buf;
struct msg_stats_reply;

/*
 * One request served: endpoint is the route's name (NULL or unknown:
 * "other"), status the HTTP status answered (0: none).  The output
 * stream's duration is its lifetime: it goes to its own histogram
 * (ptyd_fcgi_stream_duration_seconds), never to the request latency one.
 */
void metrics_request(const char *endpoint, int status, int64_t usec);

/* An output stream began or ended (the ptyd_fcgi_streams gauge). */
void metrics_stream(int delta);

/* How a stream's re-attach in place ended (stream.c):
 * ptyd_fcgi_stream_reattaches_total{result}. */
enum {
	METRICS_REATTACH_RESUMED, /* attached again; the stream goes on */
	METRICS_REATTACH_GONE,	  /* the terminal is gone: ended */
	METRICS_REATTACH_EXPIRED, /* no ptyd in time: ended */
	METRICS_NREATTACH
};
void metrics_reattach(int result);

/* A FastCGI connection accepted (kept 0), or a kept one taking its next
 * request (kept 1): ptyd_fcgi_connections_total{how}. */
void metrics_conn(int kept);

/* The whole scrape into b; st NULL when ptyd did not answer (ptyd_up 0).
 * 0, or -1 when b failed. */
int metrics_render(struct buf *b, const struct msg_stats_reply *st);
/* ptyd_pool_info{pool="NAME"} 1: which pool of ptyd-pool this is. */
int metrics_pool(struct buf *b, const char *pool);

#endif /* FRONT_METRICS_H */
