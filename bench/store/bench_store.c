/*
 * bench_store.c -- what the SQLite mirror (ptyd/store.c) costs: the time
 * of one flush with N live terminals all changing, beside baselines taken
 * in the same run on the same disk, and the database's growth per 1,000
 * terminal lifetimes.
 *
 * Owns: nothing of ptyd; it drives the store's public interface as term.c
 * does.  Not a test: it prints figures and asserts nothing.
 *
 *	bench_store [-n terminals] [-r flushes] [-e events] [-l lifetimes]
 *	    [-d dir]
 */
#include <sys/stat.h>

#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "auditlog.h"
#include "store.h"

static double
mono(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9);
}

static double
wall(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9);
}

static int
cmp_double(const void *a, const void *b)
{
	double	x = *(const double *)a, y = *(const double *)b;

	return ((x > y) - (x < y));
}

static void
report(const char *what, double *ms, int n)
{
	qsort(ms, (size_t)n, sizeof(ms[0]), cmp_double);
	printf("  %-48s p50 %7.3f ms  p99 %7.3f ms  max %7.3f ms\n", what,
	    ms[n / 2], ms[(n * 99) / 100], ms[n - 1]);
}

static void
fill(struct store_term *t, int64_t id, const char *sid, double now)
{
	memset(t, 0, sizeof(*t));
	t->id = id;
	t->sid = sid;
	t->owner = "alice";
	t->pid = 10000 + (int)(id % 50000);
	t->workspace = "/home/alice/src/project";
	t->rows = 40;
	t->cols = 120;
	t->started_at = now;
	t->last_activity = now;
	t->subscribers = 1;
	t->unwatched_since = -1;
	t->state = TERM_DB_RUNNING;
	t->ended_at = -1;
}

static sqlite3 *
raw_open(const char *path)
{
	sqlite3	*db;

	if (sqlite3_open(path, &db) != SQLITE_OK ||
	    sqlite3_exec(db, "PRAGMA journal_mode = WAL;"
	    "PRAGMA synchronous = NORMAL", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(db, store_schema_sql, NULL, NULL, NULL) != SQLITE_OK) {
		fprintf(stderr, "%s: %s\n", path, sqlite3_errmsg(db));
		exit(1);
	}
	return (db);
}

/* The same N upserts as a flush, but each in its own transaction. */
static double
raw_upserts(sqlite3 *db, sqlite3_stmt *up, int n, int round, double now)
{
	double	t0 = mono();
	int	i;

	for (i = 0; i < n; i++) {
		sqlite3_bind_int64(up, 1, i + 1);
		sqlite3_bind_text(up, 2, "tab", -1, SQLITE_STATIC);
		sqlite3_bind_double(up, 3, now);
		sqlite3_bind_double(up, 4, now + round);
		sqlite3_bind_int64(up, 5, (int64_t)round * 100 + i);
		if (sqlite3_step(up) != SQLITE_DONE) {
			fprintf(stderr, "upsert: %s\n", sqlite3_errmsg(db));
			exit(1);
		}
		sqlite3_reset(up);
	}
	return ((mono() - t0) * 1e3);
}

static double
raw_empty(sqlite3 *db)
{
	double	t0 = mono();

	if (sqlite3_exec(db, "BEGIN IMMEDIATE; COMMIT", NULL, NULL, NULL) !=
	    SQLITE_OK) {
		fprintf(stderr, "empty: %s\n", sqlite3_errmsg(db));
		exit(1);
	}
	return ((mono() - t0) * 1e3);
}

static void
bench_flush(const char *dir, int n, int rounds, int events)
{
	struct store		*st;
	struct store_term	 t;
	sqlite3			*raw;
	sqlite3_stmt		*up;
	char			 path[600], (*sids)[32];
	double			*ms, now = wall(), wall0 = now;
	int64_t			*ids;
	int			 r, i;

	snprintf(path, sizeof(path), "%s/flush.db", dir);
	st = store_open(path, now);
	ids = calloc((size_t)n, sizeof(*ids));
	sids = calloc((size_t)n, sizeof(*sids));
	ms = calloc((size_t)rounds * 2, sizeof(*ms));
	if (ids == NULL || sids == NULL || ms == NULL)
		exit(1);
	for (i = 0; i < n; i++) {
		ids[i] = store_next_id(st);
		snprintf(sids[i], sizeof(sids[i]), "tab-%d", i);
		fill(&t, ids[i], sids[i], now);
		store_put_term(st, &t);
	}
	if (store_flush(st, now) == -1)
		exit(1);

	printf("flush: %d live terminals, every one changed before each"
	    " flush, plus %d events; %d flushes\n", n, events, rounds);
	for (r = 0; r < 2 * rounds; r++) {
		now += 1;
		for (i = 0; i < n; i++) {
			fill(&t, ids[i], sids[i], wall0);
			t.last_activity = now;
			t.bytes_out = (uint64_t)r * 4096 + (uint64_t)i;
			t.bytes_in = (uint64_t)r * 10;
			t.subscribers = (r + i) % 3;
			t.unwatched_since = t.subscribers ? -1 : now - 1;
			/* Second half: a column the cheap UPDATE does not
			 * cover changes too, as at a start or an exit. */
			if (r >= rounds)
				t.pid += r;
			store_put_term(st, &t);
		}
		for (i = 0; i < events; i++)
			store_event(st, now, sids[i % n], ids[i % n],
			    TERM_EV_INPUT, NULL, "12 bytes");
		ms[r] = mono();
		if (store_flush(st, now) == -1) {
			fprintf(stderr, "flush failed\n");
			exit(1);
		}
		ms[r] = (mono() - ms[r]) * 1e3;
	}
	report("store_flush: activity, viewers, bytes changed", ms, rounds);
	report("store_flush: every row rewritten whole", ms + rounds, rounds);

	/* An auditor holds the write lock: each flush must give up at once. */
	if (sqlite3_open(path, &raw) != SQLITE_OK ||
	    sqlite3_exec(raw, "BEGIN EXCLUSIVE", NULL, NULL, NULL) != SQLITE_OK) {
		fprintf(stderr, "lock: %s\n", sqlite3_errmsg(raw));
		exit(1);
	}
	for (r = 0; r < rounds; r++) {
		now += 1;
		for (i = 0; i < n; i++) {
			fill(&t, ids[i], sids[i], wall0);
			t.last_activity = now;
			store_put_term(st, &t);
		}
		ms[r] = mono();
		if (store_flush(st, now) != -1) {
			fprintf(stderr, "flush under a lock succeeded\n");
			exit(1);
		}
		ms[r] = (mono() - ms[r]) * 1e3;
	}
	report("store_flush refused: auditor holds the lock", ms, rounds);
	sqlite3_exec(raw, "COMMIT", NULL, NULL, NULL);
	sqlite3_close(raw);
	ms[0] = mono();
	if (store_flush(st, now) == -1)
		exit(1);
	printf("  %-48s %7.3f ms\n", "store_flush catching up after it",
	    (mono() - ms[0]) * 1e3);
	store_close(st);

	snprintf(path, sizeof(path), "%s/raw.db", dir);
	raw = raw_open(path);
	if (sqlite3_prepare_v2(raw, "INSERT INTO terminals (id, session_id,"
	    " started_at, last_activity, bytes_out, state) VALUES (?1, ?2, ?3,"
	    " ?4, ?5, 'running') ON CONFLICT (id) DO UPDATE SET"
	    " last_activity = excluded.last_activity,"
	    " bytes_out = excluded.bytes_out", -1, &up, NULL) != SQLITE_OK) {
		fprintf(stderr, "prepare: %s\n", sqlite3_errmsg(raw));
		exit(1);
	}
	raw_upserts(raw, up, n, 0, now);
	for (r = 0; r < rounds; r++)
		ms[r] = raw_upserts(raw, up, n, r + 1, now);
	snprintf(path, sizeof(path), "baseline: %d upserts, one transaction"
	    " each", n);
	report(path, ms, rounds);
	for (r = 0; r < rounds; r++)
		ms[r] = raw_empty(raw);
	report("baseline: empty BEGIN IMMEDIATE; COMMIT", ms, rounds);
	sqlite3_finalize(up);
	sqlite3_close(raw);
	free(ids);
	free(sids);
	free(ms);
}

static int64_t
file_size(const char *path)
{
	struct stat	sb;

	return (stat(path, &sb) == -1 ? 0 : (int64_t)sb.st_size);
}

/*
 * One lifetime as ptyd mirrors it: start; three viewers come and go;
 * a resize; input batched into a few events; the shell exits.  Flushes
 * come once a second of simulated time, with 20 lifetimes in flight.
 */
static void
bench_size(const char *dir, int lifetimes)
{
	struct store		*st;
	struct store_term	 t;
	sqlite3			*db;
	sqlite3_stmt		*s;
	char			 path[600], sid[32];
	double			 now = wall();
	int64_t			 before, after, id, nrows, nev;
	int			 i, k;

	snprintf(path, sizeof(path), "%s/size.db", dir);
	st = store_open(path, now);
	store_close(st);	/* an empty database, checkpointed */
	before = file_size(path);

	st = store_open(path, now);
	for (i = 0; i < lifetimes; i++) {
		id = store_next_id(st);
		snprintf(sid, sizeof(sid), "tab-%d", i % 40);
		fill(&t, id, sid, now);
		t.subscribers = 0;
		t.unwatched_since = now;
		store_put_term(st, &t);
		store_event(st, now, sid, id, TERM_EV_START, "alice@192.0.2.10",
		    "40x120 /home/alice/src/project");
		for (k = 0; k < 3; k++) {
			t.subscribers = 1;
			t.unwatched_since = -1;
			store_put_term(st, &t);
			store_event(st, now, sid, id, TERM_EV_ATTACH,
			    "alice@192.0.2.10", NULL);
			t.last_activity = now + k;
			t.bytes_out += 20000;
			t.subscribers = 0;
			t.unwatched_since = now + k;
			store_put_term(st, &t);
			store_event(st, now + k, sid, id, TERM_EV_DETACH,
			    "alice@192.0.2.10", NULL);
		}
		store_event(st, now, sid, id, TERM_EV_RESIZE,
		    "alice@192.0.2.10", "50x160");
		for (k = 0; k < 4; k++) {
			t.bytes_in += 37;
			store_event(st, now + k, sid, id, TERM_EV_INPUT, NULL,
			    "37 bytes");
		}
		t.state = TERM_DB_EXITED;
		t.ended_at = now + 4;
		t.has_exit_code = 1;
		t.end_reason = "exit";
		store_put_term(st, &t);
		store_event(st, now + 4, sid, id, TERM_EV_EXIT, NULL,
		    "status 0");
		if (i % 20 == 19) {
			now += 1;
			if (store_flush(st, now) == -1)
				exit(1);
		}
	}
	store_close(st);	/* last flush, checkpoint, WAL removed */
	after = file_size(path);

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) !=
	    SQLITE_OK || sqlite3_prepare_v2(db, "SELECT (SELECT count(*) FROM"
	    " terminals), (SELECT count(*) FROM terminal_events)", -1, &s,
	    NULL) != SQLITE_OK || sqlite3_step(s) != SQLITE_ROW) {
		fprintf(stderr, "%s: %s\n", path, sqlite3_errmsg(db));
		exit(1);
	}
	nrows = sqlite3_column_int64(s, 0);
	nev = sqlite3_column_int64(s, 1);
	sqlite3_finalize(s);
	sqlite3_close(db);
	printf("size: %d terminal lifetimes (start, 3 attach+detach, resize,"
	    " 4 input, exit = %.0f events each)\n", lifetimes,
	    (double)nev / lifetimes);
	printf("  %" PRId64 " rows, %" PRId64 " events: database %" PRId64
	    " -> %" PRId64 " bytes, %.0f bytes per lifetime, %.0f KiB per"
	    " 1,000\n", nrows, nev, before, after,
	    (double)(after - before) / lifetimes,
	    (double)(after - before) / lifetimes * 1000 / 1024);
}

static int
rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return (remove(path));
}

/* -a: each committed event to the audit log, as mirror.c sends it. */
static void
audit_log_cb(const struct store_done *d)
{
	auditlog_send(d, (time_t)d->at);
}

int
main(int argc, char **argv)
{
	char		 dir[512];
	const char	*base = getenv("TMPDIR");
	int		 ch, n = 500, rounds = 200, events = 100;
	int		 lifetimes = 1000;

	if (base == NULL || *base == '\0')
		base = "/tmp";
	while ((ch = getopt(argc, argv, "n:r:e:l:d:a:")) != -1) {
		switch (ch) {
		case 'n':
			n = atoi(optarg);
			break;
		case 'r':
			rounds = atoi(optarg);
			break;
		case 'e':
			events = atoi(optarg);
			break;
		case 'l':
			lifetimes = atoi(optarg);
			break;
		case 'd':
			base = optarg;
			break;
		case 'a':
			if (auditlog_init(optarg) == -1)
				return (2);
			if (auditlog_on())
				store_set_committed(audit_log_cb);
			break;
		default:
			fprintf(stderr,
			    "usage: bench_store [-n terminals]"
			    " [-r flushes] [-e events] [-l lifetimes]"
			    " [-d dir] [-a audit_log]\n");
			return (2);
		}
	}
	if (n < 1 || rounds < 1 || events < 0 || lifetimes < 1)
		return (2);
	snprintf(dir, sizeof(dir), "%s/bench_store.XXXXXX", base);
	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		return (1);
	}
	printf("sqlite %s, databases in %s (WAL, synchronous=NORMAL)\n",
	    sqlite3_libversion(), base);
	bench_flush(dir, n, rounds, events);
	bench_size(dir, lifetimes);
	nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	if (auditlog_on())
		printf("audit log: %llu lines sent, %llu lost\n",
		    (unsigned long long)auditlog_sent(),
		    (unsigned long long)auditlog_lost());
	auditlog_done();
	return (0);
}
