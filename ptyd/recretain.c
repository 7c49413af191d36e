/*
 * recretain.c -- retention of recordings (DESIGN 4): which go, by age
 * (record_max_age) then by size (record_max_bytes), and their removal;
 * run 2 s after start, then hourly, or when asked (rec_prune).
 *
 * Owns: the choice (rec_retention, pure), the prune timer, deleting a
 * file and marking its row `removed`.  Does not own: the table nor the
 * folder (record.c); never a recording still being written.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "ev.h"
#include "log.h"
#include "record.h"
#include "record_int.h"
#include "store.h"
#include "xmalloc.h"

#define REC_PRUNE_INTERVAL (3600 * 1000000LL)
#define REC_PRUNE_FIRST	   (2 * 1000000LL) /* after start */

static struct ev_timer rec_prune_timer;

size_t
rec_retention(const struct rec_item *it, size_t n, double now,
    int64_t max_age_s, uint64_t max_bytes, int *why)
{
	uint64_t total = 0;
	size_t	 i, gone = 0;

	for (i = 0; i < n; i++) {
		why[i] = REC_KEEP;
		if (it[i].removable && it[i].at < now - (double)max_age_s) {
			why[i] = REC_AGE;
			gone++;
		} else
			total += it[i].bytes;
	}
	/* Oldest first until the rest fits. */
	for (i = 0; i < n && total > max_bytes; i++) {
		if (why[i] != REC_KEEP || !it[i].removable)
			continue;
		why[i] = REC_SIZE;
		total -= it[i].bytes;
		gone++;
	}
	return (gone);
}

/* Delete r's file, then mark its row. */
static void
rec_remove(struct rec *r, int why, int64_t now)
{
	char detail[128];

	if (unlinkat(rec_dir, r->row.file, 0) == -1 && errno != ENOENT) {
		log_warn("recording %" PRId64 ": removing its file", r->row.id);
		return;
	}
	snprintf(detail, sizeof(detail),
	    "recording=%" PRId64 " bytes=%" PRIu64 " reason=%s", r->row.id,
	    r->row.bytes, why == REC_AGE ? "age" : "size");
	snprintf(r->row.state, sizeof(r->row.state), "removed");
	rec_put(r);
	rec_audit(r, now, TERM_EV_RECORDING_REMOVED, detail);
}

void
rec_prune(int64_t now, unsigned int *removed, uint64_t *bytes)
{
	struct rec_item *it;
	struct rec	*r;
	size_t		 i, n = 0;
	int		*why;

	*removed = 0;
	*bytes = 0;
	if (rec_dir == -1 || rec_n == 0)
		return;
	it = xcalloc(rec_n, sizeof(*it));
	why = xcalloc(rec_n, sizeof(*why));
	/* The rows still holding a file, oldest first. */
	for (i = 0; i < rec_n; i++) {
		r = rec_all[i];
		if (rec_is(r, "removed"))
			continue;
		it[n].removable = !rec_is(r, "recording");
		it[n].at = r->row.ended_at >= 0 ? r->row.ended_at :
						  r->row.started_at;
		it[n].bytes = rec_is(r, "recording") ? rec_file_size(r) :
						       r->row.bytes;
		n++;
	}
	(void)rec_retention(it, n, rec_wall(now), rec_conf.max_age_s,
	    rec_conf.max_bytes, why);
	for (i = 0, n = 0; i < rec_n; i++) {
		r = rec_all[i];
		if (rec_is(r, "removed"))
			continue;
		if (why[n++] == REC_KEEP)
			continue;
		rec_remove(r, why[n - 1], now);
		if (rec_is(r, "removed")) {
			(*removed)++;
			*bytes += r->row.bytes;
		}
	}
	if (*removed > 0)
		log_info("retention: %u recording(s) removed, %" PRIu64
			 " bytes",
		    *removed, *bytes);
	free(it);
	free(why);
}

static void
rec_prune_cb(void *arg)
{
	unsigned int n;
	uint64_t     b;

	(void)arg;
	rec_prune(ev_now(), &n, &b);
	ev_timer_at(&rec_prune_timer, ev_now() + REC_PRUNE_INTERVAL);
}

/* At start, the folder open: the first run armed. */
void
rec_retain_init(int64_t now)
{
	ev_timer_init(&rec_prune_timer, rec_prune_cb, NULL);
	if (rec_dir != -1)
		ev_timer_at(&rec_prune_timer, now + REC_PRUNE_FIRST);
}

void
rec_retain_done(void)
{
	ev_timer_stop(&rec_prune_timer);
}
