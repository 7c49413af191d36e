/*
 * stats.c -- ptyd's counters for MSG_STATS (stats.h).
 *
 * Owns: the counters since start and the filling of MSG_STATS_REPLY.
 * The reaper's ticks and the mirror's flushes are timed by their callers
 * (main.c, mirror.c) and kept here as last and longest.
 * Counts come from the audit events (every start, close, reap... is one),
 * so the metrics and the audit log cannot disagree on what happened.  The
 * gauges (terminals by state, viewers) and byte counts are read from the
 * terminals in memory when asked, plus what freed terminals carried.  Does
 * not own: the events, the registry (term.c), the database (mirror.c).
 */
#include <time.h>
#include <unistd.h>

#include "auditlog.h"
#include "frame.h"
#include "keeperlink.h"
#include "mirror.h"
#include "ptyd.h"
#include "stats.h"
#include "term.h"

/* The counters since start, kept in the reply's own fields (bytes_in and
 * bytes_out: of terminals already freed); the rest is filled when asked. */
static struct msg_stats_reply stats;

/* The counter each audit event kind adds to (NULL: none). */
static uint64_t *const stats_kinds[TERM_NEVENTS] = {
	[TERM_EV_START] = &stats.starts,
	[TERM_EV_CLOSE] = &stats.closes,
	[TERM_EV_REAP] = &stats.reaps,
	[TERM_EV_EVICT] = &stats.evictions,
	[TERM_EV_SHUTDOWN] = &stats.shutdowns,
	[TERM_EV_INPUT] = &stats.inputs,
};

void
stats_event(const struct term *t, enum term_event kind)
{
	if ((unsigned int)kind >= TERM_NEVENTS)
		return;
	/* Every shell's end is an exit event; only one that ended by
	 * itself (no teardown asked for it) counts as an exit. */
	if (kind == TERM_EV_EXIT) {
		if (t->reason == TERM_R_NONE || t->reason == TERM_R_EXIT)
			stats.exits++;
		return;
	}
	if (stats_kinds[kind] != NULL)
		(*stats_kinds[kind])++;
}

void
stats_gone(const struct term *t)
{
	stats.bytes_in += t->bytes_in;
	stats.bytes_out += t->bytes_out;
}

uint64_t
stats_clock_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000);
}

void
stats_reap_tick(uint64_t us)
{
	stats.reap_ticks++;
	stats.reap_last_us = us;
	if (us > stats.reap_max_us)
		stats.reap_max_us = us;
}

void
stats_flush(uint64_t us, uint64_t rows)
{
	stats.flushes++;
	stats.flush_last_us = us;
	stats.flush_last_rows = rows;
	if (us > stats.flush_max_us) {
		stats.flush_max_us = us;
		stats.flush_max_rows = rows;
	}
}

/* Gauges from the terminals in memory; their bytes added to the totals. */
static void
stats_terms(struct msg_stats_reply *r)
{
	const struct term *t;

	for (t = term_all_first(); t != NULL; t = term_all_next(t)) {
		r->bytes_in += t->bytes_in;
		r->bytes_out += t->bytes_out;
		switch (t->state) {
		case TERM_RUNNING:
			r->running++;
			break;
		case TERM_ENDING:
			r->ending++;
			break;
		case TERM_DRAINING:
			r->draining++;
			break;
		case TERM_EXITED:
			break;
		}
	}
}

void
stats_fill(struct msg_stats_reply *r, int64_t uptime_us)
{
	unsigned int terms, exited, viewers;

	*r = stats;
	term_stats(&terms, &exited, &viewers);
	r->pid = (int32_t)getpid();
	r->uptime_us = uptime_us;
	r->terminals = terms;
	r->exited = exited;
	r->viewers = viewers;
	r->db_errors = mirror_db_errors();
	r->db_failing = (uint8_t)mirror_db_failing();
	r->db_lag_us = mirror_db_lag(ev_now());
	r->lost = mirror_db_lost();
	r->audit_lines_sent = auditlog_sent();
	r->audit_lines_lost = auditlog_lost();
	r->max_terminals = ptyd_conf.max_terminals;
	r->max_per_owner = ptyd_conf.max_per_owner;
	keeperlink_stats(r);
	stats_terms(r);
}
