/*
 * test_mirror.c -- the mirror's flush timer (ptyd/mirror.c) with
 * thousands of terminals changed at once, on a real database file: every
 * row and every audit event arrives, in flushes of at most 1,000 rows and
 * 1,000 events each, which follow one another at once (loop turns, not
 * seconds); the flush at shutdown writes whatever is left whole.
 */
#include <criterion/criterion.h>

#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "ev.h"
#include "frame.h"
#include "mirror.h"
#include "ptyd.h"
#include "stats.h"
#include "store.h"
#include "term.h"
#include "unit.h"

#define N 2500

static char dir[64], dbpath[128];

static void
setup(void)
{
	unit_tmpdir(dir, sizeof(dir), "test_mirror");
	snprintf(dbpath, sizeof(dbpath), "%s/ptyd.db", dir);
}

static void
teardown(void)
{
	unit_rmtree(dir);
}

TestSuite(mirror, .init = setup, .fini = teardown);

static long
count(const char *sql)
{
	sqlite3	     *db;
	sqlite3_stmt *s;
	long	      n = -1;

	cr_assert_eq(sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READONLY, NULL),
	    SQLITE_OK);
	sqlite3_busy_timeout(db, 2000);
	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK &&
	    sqlite3_step(s) == SQLITE_ROW)
		n = (long)sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(db);
	return (n);
}

/* N terminals started and changed in one turn, as a burst of starts. */
static struct store *
burst(void)
{
	struct store *st;
	struct term  *t;
	char	      sid[32];
	int	      i;

	cr_assert_eq(ev_init(), 0);
	cr_assert_not_null(st = store_open(dbpath, unit_wall()));
	term_init(st);
	/* The first flush of a store rewrites every row, whole: done. */
	mirror_flush(ev_now());
	ptyd_conf.max_terminals = N;
	ptyd_conf.ring_size = 4096;
	for (i = 0; i < N; i++) {
		snprintf(sid, sizeof(sid), "t%d", i);
		t = term_new("", sid, "/tmp", 24, 80, 1000, ev_now());
		term_register(t);
		mirror_event(t, ev_now(), TERM_EV_START, NULL, "burst");
		mirror_mark(t);
	}
	return (st);
}

Test(mirror, thousands_changed_at_once_are_written_in_bounded_flushes)
{
	struct msg_stats_reply r;
	int64_t		       dl = ev_clock() + 15 * PTYD_SEC, first = 0;
	long		       rows = 0, events = 0;
	uint64_t	       f0;

	(void)burst();
	stats_fill(&r, 0);
	f0 = r.flushes;
	while (ev_now() < dl) {
		cr_assert_neq(ev_run_once(100000), -1);
		stats_fill(&r, 0);
		if (r.flushes == f0)
			continue;
		if (first == 0) {
			first = ev_now();
			/* The first flush wrote one chunk, not the burst. */
			rows = count("SELECT count(*) FROM terminals");
			events = count("SELECT count(*) FROM terminal_events");
			cr_expect_eq(rows, 1000, "%ld rows", rows);
			cr_expect_eq(events, 1000, "%ld events", events);
		}
		rows = count("SELECT count(*) FROM terminals WHERE"
			     " state = 'running'");
		events = count("SELECT count(*) FROM terminal_events WHERE"
			       " kind = 'start'");
		if (rows == N && events == N)
			break;
	}
	cr_assert_eq(rows, N, "every row arrives (%ld)", rows);
	cr_assert_eq(events, N, "every event arrives (%ld)", events);
	stats_fill(&r, 0);
	cr_expect_leq(r.flush_max_rows, 1000, "%llu",
	    (unsigned long long)r.flush_max_rows);
	cr_expect_geq(r.flushes - f0, (N + 999) / 1000);
	/* The chunks follow at once, not a second apart. */
	cr_expect_lt(ev_now() - first, PTYD_SEC, "%lld us",
	    (long long)(ev_now() - first));
}

Test(mirror, the_last_flush_writes_everything_left)
{
	(void)burst();
	mirror_flush(ev_now());
	cr_expect_eq(count("SELECT count(*) FROM terminals"), N);
	cr_expect_eq(count("SELECT count(*) FROM terminal_events"), N);
}
