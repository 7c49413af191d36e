/*
 * metrics.c -- ptyd.fcgi's request counters, shared by its processes, and
 * the Prometheus text format 0.0.4 of /api/terminal/metrics (metrics.h).
 *
 * Owns: the shared mapping of counters and the text.  Does not own:
 * routing, or what ptyd counts (ptyd/stats.c, carried by MSG_STATS).
 *
 * The mapping is made by a constructor, at program start: before main,
 * so before server.c forks its workers, without a call to forget in a
 * file that is not this one.  Counters only grow (atomic, relaxed); a
 * scrape reads each once, so a histogram's buckets, +Inf and _count come
 * from the same reading and agree.
 */
#include <sys/mman.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "contract.h"
#include "frame.h"
#include "metrics.h"

/* Per endpoint of the contract, and one more for anything else. */
#define M_NEP	   (CONTRACT_NENDPOINTS + 1)
#define M_EP_OTHER CONTRACT_NENDPOINTS

static const int metrics_statuses[] = {
	200,
	400,
	403,
	404,
	405,
	413,
	415,
	429,
	500,
	502,
	503,
	504,
	0,
};
#define M_NSTATUS (sizeof(metrics_statuses) / sizeof(metrics_statuses[0]))

/* Upper bounds in microseconds; the last bucket is +Inf. */
static const uint64_t metrics_lat_us[] = {
	5000,
	10000,
	25000,
	50000,
	100000,
	250000,
	500000,
	1000000,
	2500000,
	5000000,
	10000000,
};
#define M_NLAT (sizeof(metrics_lat_us) / sizeof(metrics_lat_us[0]))
static const uint64_t metrics_stream_us[] = {
	1000000,
	10000000,
	60000000,
	300000000,
	1800000000,
	3600000000ULL,
	14400000000ULL,
	86400000000ULL,
};
#define M_NSTREAMB (sizeof(metrics_stream_us) / sizeof(metrics_stream_us[0]))

_Static_assert(M_NSTREAMB <= M_NLAT, "stream buckets fit a histogram");

struct metrics_hist {
	uint64_t bucket[M_NLAT + 1]; /* not cumulative; last is +Inf */
	uint64_t sum_us;
};

struct metrics_shm {
	uint64_t	    started; /* Unix seconds */
	uint64_t	    requests[M_NEP][M_NSTATUS];
	struct metrics_hist latency[M_NEP];
	struct metrics_hist stream;
	int64_t		    streams; /* open now */
	uint64_t	    conns[2]; /* accepted, kept (next request) */
	uint64_t	    reattaches[METRICS_NREATTACH];
};

static struct metrics_shm  metrics_private;
static struct metrics_shm *metrics = &metrics_private;
static int		   metrics_shared;

__attribute__((constructor)) static void
metrics_map(void)
{
	void *p;

	/* MAP_ANONYMOUS wants fd -1, which cppcheck's mmap model refuses. */
	p = mmap(NULL, sizeof(struct metrics_shm), PROT_READ | PROT_WRITE,
	    /* cppcheck-suppress invalidFunctionArg */
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p != MAP_FAILED) {
		metrics = p; /* zero filled */
		metrics_shared = 1;
	}
	metrics->started = (uint64_t)time(NULL);
}

static void
metrics_add(uint64_t *p, uint64_t v)
{
	__atomic_add_fetch(p, v, __ATOMIC_RELAXED);
}

static uint64_t
metrics_get(const uint64_t *p)
{
	return (__atomic_load_n(p, __ATOMIC_RELAXED));
}

static size_t
metrics_ep(const char *name)
{
	size_t i;

	for (i = 0; name != NULL && i < M_EP_OTHER; i++)
		if (strcmp(name, contract_endpoint_name(i)) == 0)
			return (i);
	return (M_EP_OTHER);
}

static const char *
metrics_ep_name(size_t e)
{
	return (e < M_EP_OTHER ? contract_endpoint_name(e) : "other");
}

static void
metrics_observe(struct metrics_hist *h, const uint64_t *bounds, size_t n,
    uint64_t us)
{
	size_t i;

	for (i = 0; i < n && us > bounds[i]; i++)
		;
	metrics_add(&h->bucket[i], 1);
	metrics_add(&h->sum_us, us);
}

void
metrics_request(const char *endpoint, int status, int64_t usec)
{
	size_t	 ep = metrics_ep(endpoint), s;
	uint64_t us = usec > 0 ? (uint64_t)usec : 0;

	for (s = 0; s < M_NSTATUS - 1; s++)
		if (metrics_statuses[s] == status)
			break;
	metrics_add(&metrics->requests[ep][s], 1);
	if (ep == CONTRACT_EP_OUTPUT)
		metrics_observe(&metrics->stream, metrics_stream_us, M_NSTREAMB,
		    us);
	else
		metrics_observe(&metrics->latency[ep], metrics_lat_us, M_NLAT,
		    us);
}

void
metrics_stream(int delta)
{
	__atomic_add_fetch(&metrics->streams, delta, __ATOMIC_RELAXED);
}

void
metrics_conn(int kept)
{
	metrics_add(&metrics->conns[kept != 0], 1);
}

void
metrics_reattach(int result)
{
	if (result >= 0 && result < METRICS_NREATTACH)
		metrics_add(&metrics->reattaches[result], 1);
}

static void metrics_printf(struct buf *, const char *, ...)
    __attribute__((format(printf, 2, 3)));

static void
metrics_printf(struct buf *b, const char *fmt, ...)
{
	char	line[512];
	va_list ap;
	int	n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(line))
		b->failed = 1;
	else
		buf_add(b, line, (size_t)n);
}

static void
metrics_head(struct buf *b, const char *name, const char *type,
    const char *help)
{
	metrics_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name,
	    type);
}

/* One histogram series; labels is "" or `endpoint="x",`. */
static void
metrics_hist_out(struct buf *b, const char *name, const char *labels,
    const struct metrics_hist *h, const uint64_t *bounds, size_t n)
{
	uint64_t cum = 0;
	size_t	 i;

	for (i = 0; i <= n; i++) {
		cum += metrics_get(&h->bucket[i]);
		if (i < n)
			metrics_printf(b, "%s_bucket{%sle=\"%g\"} %llu\n", name,
			    labels, (double)bounds[i] / 1e6,
			    (unsigned long long)cum);
		else
			metrics_printf(b, "%s_bucket{%sle=\"+Inf\"} %llu\n",
			    name, labels, (unsigned long long)cum);
	}
	/* Drop the trailing comma for the plain series. */
	metrics_printf(b, "%s_sum{%.*s} %.6f\n%s_count{%.*s} %llu\n", name,
	    (int)(strlen(labels) > 0 ? strlen(labels) - 1 : 0), labels,
	    (double)metrics_get(&h->sum_us) / 1e6, name,
	    (int)(strlen(labels) > 0 ? strlen(labels) - 1 : 0), labels,
	    (unsigned long long)cum);
}

/* "200"...; "other" for the last slot (any status not listed, or none). */
static const char *
metrics_status_name(size_t s)
{
	static char names[M_NSTATUS][8];

	if (s == M_NSTATUS - 1)
		return ("other");
	if (names[s][0] == '\0')
		snprintf(names[s], sizeof(names[s]), "%d", metrics_statuses[s]);
	return (names[s]);
}

static void
metrics_reattach_out(struct buf *b)
{
	static const char *const names[METRICS_NREATTACH] = {
		[METRICS_REATTACH_RESUMED] = "resumed",
		[METRICS_REATTACH_GONE] = "gone",
		[METRICS_REATTACH_EXPIRED] = "expired",
	};
	int i;

	metrics_head(b, "ptyd_fcgi_stream_reattaches_total", "counter",
	    "Output streams whose ptyd connection ended without "
	    "terminal_closed, by how attaching again in place ended.");
	for (i = 0; i < METRICS_NREATTACH; i++)
		metrics_printf(b,
		    "ptyd_fcgi_stream_reattaches_total{result=\"%s\"} %llu\n",
		    names[i],
		    (unsigned long long)metrics_get(&metrics->reattaches[i]));
}

static void
metrics_front(struct buf *b)
{
	char   labels[64];
	size_t e, s;

	metrics_head(b, "ptyd_fcgi_requests_total", "counter",
	    "HTTP requests answered, by endpoint and status.");
	for (e = 0; e < M_NEP; e++)
		for (s = 0; s < M_NSTATUS; s++)
			if (metrics_get(&metrics->requests[e][s]) > 0)
				metrics_printf(b,
				    "ptyd_fcgi_requests_total{endpoint=\"%s\","
				    "status=\"%s\"} %llu\n",
				    metrics_ep_name(e), metrics_status_name(s),
				    (unsigned long long)metrics_get(
					&metrics->requests[e][s]));
	metrics_head(b, "ptyd_fcgi_request_duration_seconds", "histogram",
	    "Time to answer a request, by endpoint; the output stream is "
	    "not here (ptyd_fcgi_stream_duration_seconds).");
	for (e = 0; e < M_NEP; e++) {
		if (e == CONTRACT_EP_OUTPUT)
			continue;
		snprintf(labels, sizeof(labels), "endpoint=\"%s\",",
		    metrics_ep_name(e));
		metrics_hist_out(b, "ptyd_fcgi_request_duration_seconds",
		    labels, &metrics->latency[e], metrics_lat_us, M_NLAT);
	}
	metrics_head(b, "ptyd_fcgi_stream_duration_seconds", "histogram",
	    "Lifetime of output stream requests, from request to end.");
	metrics_hist_out(b, "ptyd_fcgi_stream_duration_seconds", "",
	    &metrics->stream, metrics_stream_us, M_NSTREAMB);
	metrics_head(b, "ptyd_fcgi_streams", "gauge",
	    "Output streams open now.");
	metrics_printf(b, "ptyd_fcgi_streams %lld\n",
	    (long long)__atomic_load_n(&metrics->streams, __ATOMIC_RELAXED));
	metrics_reattach_out(b);
	metrics_head(b, "ptyd_fcgi_connections_total", "counter",
	    "Requests by the FastCGI connection they came on: accepted for "
	    "it, or kept from an earlier request (FCGI_KEEP_CONN).");
	metrics_printf(b,
	    "ptyd_fcgi_connections_total{how=\"accepted\"} %llu\n"
	    "ptyd_fcgi_connections_total{how=\"kept\"} %llu\n",
	    (unsigned long long)metrics_get(&metrics->conns[0]),
	    (unsigned long long)metrics_get(&metrics->conns[1]));
	metrics_head(b, "ptyd_fcgi_start_time_seconds", "gauge",
	    "When ptyd.fcgi started: its counters count from there.");
	metrics_printf(b, "ptyd_fcgi_start_time_seconds %llu\n",
	    (unsigned long long)metrics->started);
	metrics_head(b, "ptyd_fcgi_counters_shared", "gauge",
	    "1: the request counters are shared by every ptyd.fcgi process; "
	    "0: this process's only.");
	metrics_printf(b, "ptyd_fcgi_counters_shared %d\n", metrics_shared);
}

/* ptyd's counters and gauges: one table, read from MSG_STATS_REPLY. */
enum metrics_kind {
	MK_U64,
	MK_U32,
	MK_U8,
	MK_US, /* i64 microseconds, shown as seconds */
};

static const struct {
	const char	 *name;
	const char	 *type;
	enum metrics_kind kind;
	size_t		  off;
	const char	 *help;
} metrics_ptyd[] = {
	{ "ptyd_uptime_seconds", "gauge", MK_US,
	    offsetof(struct msg_stats_reply, uptime_us),
	    "Seconds since ptyd started." },
	{ "ptyd_viewers", "gauge", MK_U32,
	    offsetof(struct msg_stats_reply, viewers),
	    "Output streams attached to terminals." },
	{ "ptyd_input_bytes_total", "counter", MK_U64,
	    offsetof(struct msg_stats_reply, bytes_in),
	    "Bytes written to terminals (input)." },
	{ "ptyd_output_bytes_total", "counter", MK_U64,
	    offsetof(struct msg_stats_reply, bytes_out),
	    "Bytes read from terminals (output)." },
	{ "ptyd_inputs_total", "counter", MK_U64,
	    offsetof(struct msg_stats_reply, inputs),
	    "Input requests accepted (each one an input event)." },
	{ "ptyd_starts_total", "counter", MK_U64,
	    offsetof(struct msg_stats_reply, starts), "Terminals started." },
	{ "ptyd_closes_total", "counter", MK_U64,
	    offsetof(struct msg_stats_reply, closes),
	    "Terminals closed by request or restart." },
	{ "ptyd_reaps_total", "counter", MK_U64,
	    offsetof(struct msg_stats_reply, reaps), "Idle terminals reaped." },
	{ "ptyd_evictions_total", "counter", MK_U64,
	    offsetof(struct msg_stats_reply, evictions),
	    "Terminals evicted at the terminal cap." },
	{ "ptyd_exits_total", "counter", MK_U64,
	    offsetof(struct msg_stats_reply, exits),
	    "Shells that ended by themselves." },
	{ "ptyd_shutdowns_total", "counter", MK_U64,
	    offsetof(struct msg_stats_reply, shutdowns),
	    "Terminals ended by ptyd's shutdown." },
	{ "ptyd_lost_total", "counter", MK_U64,
	    offsetof(struct msg_stats_reply, lost),
	    "Terminals an earlier ptyd left running, closed as lost." },
	{ "ptyd_db_errors_total", "counter", MK_U64,
	    offsetof(struct msg_stats_reply, db_errors),
	    "Failed writes to the database (flushes)." },
	{ "ptyd_audit_lines_total", "counter", MK_U64,
	    offsetof(struct msg_stats_reply, audit_lines_sent),
	    "Audit events sent as lines to audit_log." },
	{ "ptyd_audit_lines_lost_total", "counter", MK_U64,
	    offsetof(struct msg_stats_reply, audit_lines_lost),
	    "Audit lines not sent: audit_log's reader was absent or full." },
	{ "ptyd_db_failing", "gauge", MK_U8,
	    offsetof(struct msg_stats_reply, db_failing),
	    "1 while writes to the database are failing." },
	{ "ptyd_db_flush_lag_seconds", "gauge", MK_US,
	    offsetof(struct msg_stats_reply, db_lag_us),
	    "Age of the oldest change not yet in the database." },
};

static void
metrics_ptyd_value(struct buf *b, const char *name, enum metrics_kind kind,
    const void *p)
{
	uint64_t u = 0;
	uint32_t u32;
	int64_t	 i;

	switch (kind) {
	case MK_U64:
		memcpy(&u, p, sizeof(u));
		break;
	case MK_U32:
		memcpy(&u32, p, sizeof(u32));
		u = u32;
		break;
	case MK_U8:
		u = *(const uint8_t *)p;
		break;
	case MK_US:
		memcpy(&i, p, sizeof(i));
		metrics_printf(b, "%s %.6f\n", name, (double)i / 1e6);
		return;
	}
	metrics_printf(b, "%s %llu\n", name, (unsigned long long)u);
}

static void
metrics_ptyd_out(struct buf *b, const struct msg_stats_reply *st)
{
	size_t i;

	metrics_head(b, "ptyd_terminals", "gauge",
	    "Terminals in ptyd's memory, by state.");
	metrics_printf(b,
	    "ptyd_terminals{state=\"running\"} %u\n"
	    "ptyd_terminals{state=\"ending\"} %u\n"
	    "ptyd_terminals{state=\"draining\"} %u\n"
	    "ptyd_terminals{state=\"exited\"} %u\n",
	    st->running, st->ending, st->draining, st->exited);
	for (i = 0; i < sizeof(metrics_ptyd) / sizeof(metrics_ptyd[0]); i++) {
		metrics_head(b, metrics_ptyd[i].name, metrics_ptyd[i].type,
		    metrics_ptyd[i].help);
		metrics_ptyd_value(b, metrics_ptyd[i].name,
		    metrics_ptyd[i].kind,
		    (const char *)st + metrics_ptyd[i].off);
	}
}

int
metrics_pool(struct buf *b, const char *pool)
{
	const char *p;

	metrics_head(b, "ptyd_pool_info", "gauge",
	    "1, labelled with the pool of ptyd-pool this ptyd.fcgi serves.");
	buf_adds(b, "ptyd_pool_info{pool=\"");
	/* A label value's escapes: backslash, quote, newline. */
	for (p = pool; *p != '\0'; p++) {
		if (*p == '\\' || *p == '"' || *p == '\n')
			buf_addc(b, '\\');
		buf_addc(b, *p == '\n' ? 'n' : *p);
	}
	buf_adds(b, "\"} 1\n");
	return (b->failed ? -1 : 0);
}

int
metrics_render(struct buf *b, const struct msg_stats_reply *st)
{
	metrics_head(b, "ptyd_up", "gauge",
	    "1 if ptyd answered this scrape; its metrics follow only then.");
	metrics_printf(b, "ptyd_up %d\n", st != NULL);
	if (st != NULL)
		metrics_ptyd_out(b, st);
	metrics_front(b);
	return (b->failed ? -1 : 0);
}
