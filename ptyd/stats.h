/*
 * stats.h -- ptyd's counters for MSG_STATS: what health and the metrics
 * endpoint of ptyd.fcgi report about the daemon.
 *
 * Owns: the counters since start (starts, closes, reaps, evictions, exits,
 * shutdowns, inputs, bytes of terminals already freed) and filling a
 * MSG_STATS_REPLY from them, the registry and the mirror.  Does not own:
 * the events themselves (mirror.c tells it of each one) or any decision.
 */
#ifndef PTYD_STATS_H
#define PTYD_STATS_H

#include <stdint.h>

#include "termstate.h"

struct msg_stats_reply;
struct term;

/* An audit event of this kind about t (mirror_event). */
void stats_event(const struct term *t, enum term_event kind);
/* t is being freed: keep its byte counts in the totals. */
void stats_gone(const struct term *t);
/* A reaper tick took us microseconds. */
void stats_reap_tick(uint64_t us);
/* A mirror flush of rows terminal rows took us microseconds. */
void stats_flush(uint64_t us, uint64_t rows);
/* Microseconds since some fixed point (CLOCK_MONOTONIC, not the loop's
 * cached clock): what the two above are timed with. */
uint64_t stats_clock_us(void);
/* The whole reply; uptime_us is the caller's (conn.c knows the start). */
void stats_fill(struct msg_stats_reply *, int64_t uptime_us);

#endif /* PTYD_STATS_H */
