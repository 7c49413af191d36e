/*
 * test_store.c -- the SQLite mirror (ptyd/store.c) on real database files
 * in a temporary directory: what a flush writes, that a locked, read-only,
 * full, deleted or replaced database never blocks and never loses the
 * live state, the bound on pending events, start-up reconciliation,
 * migrations, and the views operators read.
 *
 * A second connection opened here plays the operator's sqlite3 shell.
 * Each Criterion test runs in its own process, so a test may change its
 * rlimits, its uid or its stderr without affecting the others.
 */
#include <criterion/criterion.h>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store.h"
#include "unit.h"

#define EVENTS_MAX	10000	/* the documented bound in store.c */

static char	 dir[64];	/* the temporary directory */
static char	 dbpath[128];	/* dir/state/ptyd.db: a directory to lose */
static char	 logpath[128];
static int	 saved_stderr = -1;

static void
setup(void)
{
	unit_tmpdir(dir, sizeof(dir), "test_store");
	snprintf(dbpath, sizeof(dbpath), "%s/state/ptyd.db", dir);
	snprintf(logpath, sizeof(logpath), "%s/log", dir);
}

static void
teardown(void)
{
	if (saved_stderr != -1) {
		dup2(saved_stderr, STDERR_FILENO);
		close(saved_stderr);
		saved_stderr = -1;
	}
	unit_rmtree(dir);
}

TestSuite(store, .init = setup, .fini = teardown);

static double
mono_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6);
}

/* Send the store's log lines to a file we can count. */
static void
capture_log(void)
{
	int	fd;

	fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert(fd != -1);
	saved_stderr = dup(STDERR_FILENO);
	cr_assert(saved_stderr != -1);
	cr_assert(dup2(fd, STDERR_FILENO) != -1);
	close(fd);
}

static int
log_count(const char *needle)
{
	FILE	*f;
	char	 line[4096];
	int	 n = 0;

	if ((f = fopen(logpath, "r")) == NULL)
		return (0);
	while (fgets(line, sizeof(line), f) != NULL)
		if (strstr(line, needle) != NULL)
			n++;
	fclose(f);
	return (n);
}

static void
term_init(struct store_term *t, int64_t id, const char *sid, double now)
{
	memset(t, 0, sizeof(*t));
	t->id = id;
	t->sid = sid;
	t->owner = "alice";
	t->pid = 1000 + (int)id;
	t->workspace = "/home/alice";
	t->rows = 24;
	t->cols = 80;
	t->started_at = now - 10;
	t->last_activity = now - 1;
	t->subscribers = 1;
	t->unwatched_since = -1;
	t->state = TERM_DB_RUNNING;
	t->ended_at = -1;
	t->end_reason = NULL;
}

/* The operator's connection. */
static sqlite3 *
peer_open(const char *path)
{
	sqlite3	*db = NULL;

	cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL),
	    SQLITE_OK, "open %s: %s", path, sqlite3_errmsg(db));
	return (db);
}

static void
peer_exec(sqlite3 *db, const char *sql)
{
	char	*err = NULL;

	cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, &err), SQLITE_OK,
	    "%s: %s", sql, err);
}

/* The first column of the first row of sql as an integer (0 if none). */
static int64_t
q_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt	*s;
	int64_t		 v = 0;

	cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK,
	    "%s: %s", sql, sqlite3_errmsg(db));
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return (v);
}

static double
q_double(sqlite3 *db, const char *sql)
{
	sqlite3_stmt	*s;
	double		 v = -1;

	cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK,
	    "%s: %s", sql, sqlite3_errmsg(db));
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_double(s, 0);
	sqlite3_finalize(s);
	return (v);
}

/* The first column of the first row as text, "(null)" for NULL. */
static const char *
q_text(sqlite3 *db, const char *sql)
{
	static char	 buf[8192];
	sqlite3_stmt	*s;
	const char	*t;

	cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK,
	    "%s: %s", sql, sqlite3_errmsg(db));
	strcpy(buf, "(no row)");
	if (sqlite3_step(s) == SQLITE_ROW) {
		t = (const char *)sqlite3_column_text(s, 0);
		snprintf(buf, sizeof(buf), "%s", t == NULL ? "(null)" : t);
	}
	sqlite3_finalize(s);
	return (buf);
}

static int64_t
count_rows(const char *sql)
{
	sqlite3	*db = peer_open(dbpath);
	int64_t	 n = q_int(db, sql);

	sqlite3_close(db);
	return (n);
}

/* Open a store on dbpath and put n running terminals, ids from the store. */
static struct store *
open_with_terms(int n, double now, int64_t *ids)
{
	struct store		*st;
	struct store_term	 t;
	char			 sid[32];
	int			 i;

	st = store_open(dbpath, now);
	cr_assert_not_null(st);
	for (i = 0; i < n; i++) {
		ids[i] = store_next_id(st);
		snprintf(sid, sizeof(sid), "tab-%d", i);
		term_init(&t, ids[i], sid, now);
		store_put_term(st, &t);
	}
	return (st);
}

/*
 * What mirror.c does at each flush: when the store asks for every row
 * (store_rewrite_due), put every terminal ptyd holds; here the n running
 * terminals of open_with_terms.  Then flush.
 */
static int
flush_all(struct store *st, double now, const int64_t *ids, int n)
{
	struct store_term	 t;
	char			 sid[32];
	int			 i;

	if (store_rewrite_due(st)) {
		for (i = 0; i < n; i++) {
			snprintf(sid, sizeof(sid), "tab-%d", i);
			term_init(&t, ids[i], sid, now);
			store_put_term(st, &t);
		}
	}
	return (store_flush(st, now));
}

Test(store, rows_appear_only_after_flush_and_match_what_was_put)
{
	struct store		*st;
	struct store_term	 t;
	sqlite3			*db;
	double			 now = unit_wall();
	int64_t			 a, b;

	st = store_open(dbpath, now);
	a = store_next_id(st);
	b = store_next_id(st);
	term_init(&t, a, "tab-a", now);
	t.bytes_in = 12;
	t.bytes_out = (uint64_t)1 << 40;
	store_put_term(st, &t);
	term_init(&t, b, "tab-b", now);
	t.owner = "";
	t.subscribers = 0;
	t.unwatched_since = now - 5;
	t.state = TERM_DB_EXITED;
	t.ended_at = now - 2;
	t.has_exit_code = 1;
	t.exit_code = -9;
	t.end_reason = "exit";
	store_put_term(st, &t);
	cr_assert(store_pending(st));
	cr_assert_eq(count_rows("SELECT count(*) FROM terminals"), 0,
	    "write-behind: nothing before the flush");

	cr_assert_eq(store_flush(st, now), 0);
	cr_assert_not(store_pending(st));
	db = peer_open(dbpath);
	cr_assert_eq(q_int(db, "SELECT count(*) FROM terminals"), 2);
	cr_assert_str_eq(q_text(db, "SELECT session_id || '|' || owner || '|'"
	    " || pid || '|' || workspace || '|' || rows || '|' || cols || '|'"
	    " || subscribers || '|' || state || '|' || bytes_in || '|' ||"
	    " bytes_out FROM terminals ORDER BY id LIMIT 1"),
	    "tab-a|alice|1001|/home/alice|24|80|1|running|12|1099511627776");
	cr_assert_str_eq(q_text(db, "SELECT quote(unwatched_since) ||"
	    " quote(ended_at) || quote(exit_code) || quote(end_reason)"
	    " FROM terminals ORDER BY id LIMIT 1"), "NULLNULLNULLNULL");
	cr_assert_float_eq(q_double(db, "SELECT started_at FROM terminals"
	    " ORDER BY id LIMIT 1"), now - 10, 1e-6);
	cr_assert_float_eq(q_double(db, "SELECT last_activity FROM terminals"
	    " ORDER BY id LIMIT 1"), now - 1, 1e-6);
	cr_assert_str_eq(q_text(db, "SELECT owner || '|' || state || '|' ||"
	    " exit_code || '|' || end_reason || '|' || subscribers FROM"
	    " terminals ORDER BY id DESC LIMIT 1"), "|exited|-9|exit|0");
	cr_assert_float_eq(q_double(db, "SELECT unwatched_since FROM terminals"
	    " ORDER BY id DESC LIMIT 1"), now - 5, 1e-6);
	cr_assert_float_eq(q_double(db, "SELECT ended_at FROM terminals"
	    " ORDER BY id DESC LIMIT 1"), now - 2, 1e-6);
	cr_assert_str_eq(q_text(db, "PRAGMA journal_mode"), "wal");
	sqlite3_close(db);
	cr_assert_eq(store_errors(st), 0);
	store_close(st);
}

Test(store, database_directory_is_created_0700)
{
	struct store	*st;
	struct stat	 sb;
	char		 d[128];

	st = store_open(dbpath, unit_wall());
	snprintf(d, sizeof(d), "%s/state", dir);
	cr_assert_eq(stat(d, &sb), 0);
	cr_assert(S_ISDIR(sb.st_mode));
	cr_assert_eq(sb.st_mode & 07777, 0700);
	cr_assert_eq(stat(dbpath, &sb), 0);
	store_close(st);
}

Test(store, puts_of_one_id_coalesce_into_one_write_of_the_last)
{
	struct store		*st;
	struct store_term	 t;
	sqlite3			*db;
	double			 now = unit_wall();
	int64_t			 id;
	int			 i;

	st = store_open(dbpath, now);
	cr_assert_eq(store_flush(st, now), 0);
	/* Count the writes the store makes, from inside the database. */
	db = peer_open(dbpath);
	peer_exec(db, "CREATE TABLE writes (n INTEGER);"
	    "CREATE TRIGGER w_ins AFTER INSERT ON terminals"
	    " BEGIN INSERT INTO writes VALUES (1); END;"
	    "CREATE TRIGGER w_upd AFTER UPDATE ON terminals"
	    " BEGIN INSERT INTO writes VALUES (1); END;");
	id = store_next_id(st);
	for (i = 0; i < 100; i++) {
		term_init(&t, id, "tab", now);
		t.bytes_out = (uint64_t)i;
		t.subscribers = i % 3;
		store_put_term(st, &t);
	}
	cr_assert_eq(store_flush(st, now), 0);
	cr_assert_eq(q_int(db, "SELECT count(*) FROM writes"), 1);
	cr_assert_eq(q_int(db, "SELECT bytes_out FROM terminals"), 99);
	cr_assert_eq(q_int(db, "SELECT subscribers FROM terminals"), 0);

	/* A live row written once is not written again unless put. */
	cr_assert_eq(store_flush(st, now), 0);
	cr_assert_eq(q_int(db, "SELECT count(*) FROM writes"), 1);
	sqlite3_close(db);
	store_close(st);
}

Test(store, events_are_appended_in_order_with_nulls_kept)
{
	struct store	*st;
	sqlite3		*db;
	sqlite3_stmt	*s;
	char		 want[64];
	double		 now = unit_wall();
	int		 i;

	st = store_open(dbpath, now);
	for (i = 0; i < 50; i++) {
		store_event(st, now + i, i % 2 ? "tab" : NULL, i % 5,
		    (enum term_event)(i % TERM_NEVENTS),
		    i % 3 ? "bob@10.0.0.1" : NULL, i % 4 ? "d" : NULL);
	}
	cr_assert_eq(store_flush(st, now), 0);
	store_event(st, now + 60, "tab", 7, TERM_EV_GAP, NULL, NULL);
	cr_assert_eq(store_flush(st, now), 0);

	db = peer_open(dbpath);
	cr_assert_eq(sqlite3_prepare_v2(db, "SELECT kind, at,"
	    " quote(session_id) || quote(terminal_id) || quote(actor) ||"
	    " quote(detail) FROM terminal_events ORDER BY id", -1, &s, NULL),
	    SQLITE_OK);
	for (i = 0; i < 50; i++) {
		cr_assert_eq(sqlite3_step(s), SQLITE_ROW);
		cr_assert_str_eq((const char *)sqlite3_column_text(s, 0),
		    term_event_name((enum term_event)(i % TERM_NEVENTS)));
		cr_assert_float_eq(sqlite3_column_double(s, 1), now + i, 1e-6);
		if (i % 5)
			snprintf(want, sizeof(want), "%s%d%s%s",
			    i % 2 ? "'tab'" : "NULL", i % 5,
			    i % 3 ? "'bob@10.0.0.1'" : "NULL",
			    i % 4 ? "'d'" : "NULL");
		else
			snprintf(want, sizeof(want), "%sNULL%s%s",
			    i % 2 ? "'tab'" : "NULL",
			    i % 3 ? "'bob@10.0.0.1'" : "NULL",
			    i % 4 ? "'d'" : "NULL");
		cr_assert_str_eq((const char *)sqlite3_column_text(s, 2), want);
	}
	cr_assert_eq(sqlite3_step(s), SQLITE_ROW);
	cr_assert_str_eq((const char *)sqlite3_column_text(s, 0), "gap");
	cr_assert_eq(sqlite3_step(s), SQLITE_DONE);
	sqlite3_finalize(s);

	/* The log is append-only for the operator too. */
	cr_assert_neq(sqlite3_exec(db, "UPDATE terminal_events SET kind = 'x'",
	    NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	store_close(st);
}

Test(store, lock_held_by_auditor_fails_flush_fast_keeps_work_and_catches_up)
{
	struct store		*st;
	struct store_term	 t;
	sqlite3			*auditor;
	double			 now = unit_wall(), t0, ms;
	int64_t			 ids[5];
	int			 i;

	capture_log();
	st = open_with_terms(5, now, ids);
	cr_assert_eq(store_flush(st, now), 0);

	auditor = peer_open(dbpath);
	peer_exec(auditor, "BEGIN EXCLUSIVE; SELECT count(*) FROM terminals");
	for (i = 0; i < 5; i++) {
		term_init(&t, ids[i], "tab", now);
		t.subscribers = 0;
		t.unwatched_since = now;
		store_put_term(st, &t);
		store_event(st, now, "tab", ids[i], TERM_EV_DETACH, "alice",
		    NULL);
	}
	for (i = 0; i < 10; i++) {
		cr_assert_eq(store_failing(st), i >= 3,
		    "failing after 3 failed flushes in a row, not %d", i);
		t0 = mono_ms();
		cr_assert_eq(store_flush(st, now + i), -1);
		ms = mono_ms() - t0;
		cr_assert_lt(ms, 50.0, "flush blocked %.1f ms on a lock", ms);
		cr_assert(store_pending(st));
	}
	cr_assert_eq(store_errors(st), 10);
	cr_assert_eq(log_count("locked"), 1, "one line per outage");
	cr_assert_eq(q_int(auditor, "SELECT count(*) FROM terminal_events"),
	    0);
	peer_exec(auditor, "COMMIT");

	cr_assert_eq(store_flush(st, now + 11), 0);
	cr_assert_not(store_pending(st));
	cr_assert_not(store_failing(st));
	cr_assert_eq(store_errors(st), 10);
	cr_assert_eq(log_count("writing again after 10 failed"), 1);
	cr_assert_eq(q_int(auditor, "SELECT count(*) FROM terminals"
	    " WHERE subscribers = 0 AND unwatched_since IS NOT NULL"), 5);
	cr_assert_eq(q_int(auditor, "SELECT count(*) FROM terminal_events"
	    " WHERE kind = 'detach'"), 5);
	sqlite3_close(auditor);
	store_close(st);
}

Test(store, open_under_a_lock_learns_ids_and_reconciles_once_unlocked)
{
	struct store		*st;
	struct store_term	 t;
	sqlite3			*auditor;
	double			 now = unit_wall();
	int64_t			 id;

	/* An earlier daemon left terminal 40 running. */
	st = store_open(dbpath, now - 100);
	term_init(&t, 40, "old", now - 100);
	store_put_term(st, &t);
	cr_assert_eq(store_flush(st, now - 100), 0);
	store_close(st);

	auditor = peer_open(dbpath);
	peer_exec(auditor, "BEGIN EXCLUSIVE");
	st = store_open(dbpath, now);
	cr_assert_eq(store_errors(st), 1);
	id = store_next_id(st);
	cr_assert_eq(id, 41, "ids read without the write lock");
	term_init(&t, id, "new", now);
	store_put_term(st, &t);
	cr_assert_eq(store_flush(st, now), -1);
	peer_exec(auditor, "COMMIT");
	cr_assert_eq(store_flush(st, now + 1), 0);
	cr_assert_str_eq(q_text(auditor, "SELECT group_concat(id || state)"
	    " FROM (SELECT * FROM terminals ORDER BY id)"), "40lost,41running");
	sqlite3_close(auditor);
	store_close(st);
}

/*
 * A read-only file.  root ignores file modes, so as root the test drops to
 * an unprivileged uid first (this process only); it checks that the file
 * really refuses writes before it trusts a failed flush.
 */
Test(store, read_only_file_fails_flush_and_recovers_when_writable)
{
	struct store		*st;
	struct store_term	 t;
	double			 now = unit_wall();
	int64_t			 ids[3];
	int			 fd;

	if (geteuid() == 0) {
		cr_assert_eq(chown(dir, 65534, 65534), 0);
		cr_assert_eq(setgroups(0, NULL), 0);
		cr_assert_eq(setresgid(65534, 65534, 65534), 0);
		cr_assert_eq(setresuid(65534, 65534, 65534), 0, "%s",
		    strerror(errno));
	}
	capture_log();
	st = open_with_terms(3, now, ids);
	cr_assert_eq(store_flush(st, now), 0);
	store_close(st);

	cr_assert_eq(chmod(dbpath, 0444), 0);
	fd = open(dbpath, O_WRONLY | O_CLOEXEC);
	cr_assert_eq(fd, -1, "the file must refuse writes for the test");
	cr_assert_eq(errno, EACCES);

	st = store_open(dbpath, now);
	cr_assert_eq(store_next_id(st), ids[2] + 1);
	term_init(&t, ids[0], "tab-0", now);
	t.state = TERM_DB_CLOSED;
	t.ended_at = now;
	t.end_reason = "closed";
	store_put_term(st, &t);
	store_event(st, now, "tab-0", ids[0], TERM_EV_CLOSE, "alice", NULL);
	cr_assert_eq(store_flush(st, now), -1);
	cr_assert_eq(store_flush(st, now), -1);
	cr_assert(store_pending(st));
	cr_assert_eq(log_count("read-only"), 1);

	cr_assert_eq(chmod(dbpath, 0644), 0);
	cr_assert_eq(store_flush(st, now), 0);
	cr_assert_eq(count_rows("SELECT count(*) FROM terminals WHERE"
	    " state = 'closed'"), 1);
	cr_assert_eq(count_rows("SELECT count(*) FROM terminal_events WHERE"
	    " kind = 'close'"), 1);
	cr_assert_eq(log_count("writing again"), 1);
	store_close(st);
}

Test(store, full_disk_fails_flush_and_recovers_with_everything)
{
	struct store	*st;
	struct rlimit	 rl;
	struct stat	 sb;
	char		 detail[4000], wal[160];
	double		 now = unit_wall();
	int64_t		 ids[2];
	int		 i;

	capture_log();
	signal(SIGXFSZ, SIG_IGN);
	st = open_with_terms(2, now, ids);
	cr_assert_eq(store_flush(st, now), 0);
	snprintf(wal, sizeof(wal), "%s-wal", dbpath);
	cr_assert_eq(stat(wal, &sb), 0);
	/* No file may grow past its size now: a full disk, for writes. */
	rl.rlim_cur = (rlim_t)sb.st_size + 4096;
	rl.rlim_max = RLIM_INFINITY;
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);

	memset(detail, 'x', sizeof(detail) - 1);
	detail[sizeof(detail) - 1] = '\0';
	for (i = 0; i < 200; i++)
		store_event(st, now, "tab-0", ids[0], TERM_EV_INPUT, NULL,
		    detail);
	cr_assert_eq(store_flush(st, now), -1);
	cr_assert_eq(store_flush(st, now), -1);
	cr_assert(store_pending(st));
	cr_assert_eq(store_errors(st), 2);

	rl.rlim_cur = RLIM_INFINITY;
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
	cr_assert_eq(store_flush(st, now), 0);
	cr_assert_eq(count_rows("SELECT count(*) FROM terminal_events"), 200);
	cr_assert_eq(count_rows("SELECT count(*) FROM terminals"), 2);
	cr_assert_eq(log_count("retrying"), 1);
	cr_assert_eq(log_count("writing again"), 1);
	store_close(st);
}

/* The file is unlinked under a running ptyd, as `rm ptyd.db` does (the
 * -wal and -shm stay behind). */
Test(store, deleted_file_is_recreated_with_every_live_row)
{
	struct store		*st;
	struct store_term	 t;
	sqlite3			*db;
	double			 now = unit_wall();
	int64_t			 ids[5];

	capture_log();
	st = open_with_terms(5, now, ids);
	term_init(&t, ids[3], "tab-3", now);
	t.state = TERM_DB_CLOSED;
	t.ended_at = now;
	t.end_reason = "closed";
	store_put_term(st, &t);
	store_event(st, now, "tab-3", ids[3], TERM_EV_CLOSE, NULL, NULL);
	term_init(&t, ids[4], "tab-4", now);
	t.state = TERM_DB_EXITED; /* final too: ptyd writes nothing after */
	t.ended_at = now;
	t.has_exit_code = 1;
	store_put_term(st, &t);
	cr_assert_eq(store_flush(st, now), 0);

	cr_assert_eq(unlink(dbpath), 0);
	/* Nothing pending: the tick still notices, and asks for every row;
	 * the store itself kept no copy of them. */
	cr_assert_not(store_pending(st));
	cr_assert_eq(flush_all(st, now + 1, ids, 3), 0);
	cr_assert_not(store_rewrite_due(st), "asking cleared it");
	cr_assert_eq(store_errors(st), 0);
	cr_assert_eq(log_count("deleted, moved or replaced"), 1);

	db = peer_open(dbpath);
	cr_assert_str_eq(q_text(db, "PRAGMA integrity_check"), "ok");
	cr_assert_eq(q_int(db, "SELECT count(*) FROM terminals"), 3,
	    "the three running terminals, not the ended ones");
	cr_assert_eq(q_int(db, "SELECT count(*) FROM terminals WHERE"
	    " state = 'running' AND owner = 'alice'"), 3);
	cr_assert_eq(q_int(db, "SELECT count(*) FROM terminal_events"
	    " WHERE kind = 'recreated'"), 1);
	/* The history went with the file: the chain goes on from the last
	 * event ptyd wrote, and says so first (ptydctl audit verify then
	 * reports what is missing). */
	cr_assert_eq(q_int(db, "SELECT count(*) FROM terminal_events"), 2);
	cr_assert_str_eq(q_text(db,
			     "SELECT kind FROM terminal_events"
			     " ORDER BY id LIMIT 1"),
	    "tamper");
	cr_assert_str_eq(q_text(db,
			     "SELECT detail FROM terminal_events"
			     " WHERE kind = 'recreated'"),
	    "the database file was deleted, moved or replaced under ptyd; 3"
	    " live terminals rewritten, earlier history is not here");
	cr_assert_eq(q_int(db, "PRAGMA user_version"), 6);
	sqlite3_close(db);

	/* And it goes on being the mirror. */
	term_init(&t, ids[0], "tab-0", now);
	t.subscribers = 7;
	store_put_term(st, &t);
	cr_assert_eq(store_flush(st, now + 2), 0);
	cr_assert_eq(count_rows("SELECT subscribers FROM terminals ORDER BY id"
	    " LIMIT 1"), 7);
	store_close(st);
}

Test(store, renamed_file_keeps_its_history_and_a_new_one_takes_over)
{
	struct store	*st;
	sqlite3		*db;
	char		 archive[160];
	double		 now = unit_wall();
	int64_t		 ids[2];
	int		 i;

	st = open_with_terms(2, now, ids);
	for (i = 0; i < 20; i++)
		store_event(st, now, "tab-0", ids[0], TERM_EV_INPUT, NULL,
		    "1 bytes");
	cr_assert_eq(store_flush(st, now), 0);
	snprintf(archive, sizeof(archive), "%s/archive.db", dir);
	cr_assert_eq(rename(dbpath, archive), 0);
	cr_assert_eq(flush_all(st, now, ids, 2), 0);

	/* Everything written before the rename is in the renamed file. */
	db = peer_open(archive);
	cr_assert_eq(q_int(db, "SELECT count(*) FROM terminal_events"), 20);
	cr_assert_eq(q_int(db, "SELECT count(*) FROM terminals"), 2);
	sqlite3_close(db);
	cr_assert_eq(count_rows("SELECT count(*) FROM terminals"), 2);
	store_close(st);
}

/* The directory is deleted and a file takes its name: nothing can be
 * created until the operator clears it. */
Test(store, directory_replaced_by_a_file_fails_then_recovers_all_rows)
{
	struct store		*st;
	struct store_term	 t;
	struct stat		 sb;
	char			 d[128], cmd[256];
	double			 now = unit_wall();
	int64_t			 ids[3];
	int			 fd;

	capture_log();
	st = open_with_terms(3, now, ids);
	cr_assert_eq(store_flush(st, now), 0);

	snprintf(d, sizeof(d), "%s/state", dir);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d);
	cr_assert_eq(system(cmd), 0);
	fd = open(d, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	cr_assert(fd != -1);
	close(fd);

	term_init(&t, ids[1], "tab-1", now);
	t.rows = 50;
	store_put_term(st, &t);
	store_event(st, now, "tab-1", ids[1], TERM_EV_RESIZE, NULL, "50x80");
	cr_assert_eq(store_flush(st, now), -1);
	cr_assert_eq(store_flush(st, now), -1);
	cr_assert(store_pending(st));
	cr_assert_eq(store_errors(st), 2);
	cr_assert_eq(log_count("retrying"), 1);

	cr_assert_eq(unlink(d), 0);
	/* As mirror.c: every terminal as it is now (tab-1 is 50 rows). */
	cr_assert(store_rewrite_due(st));
	store_put_term(st, &t);
	term_init(&t, ids[0], "tab-0", now);
	store_put_term(st, &t);
	term_init(&t, ids[2], "tab-2", now);
	store_put_term(st, &t);
	cr_assert_eq(store_flush(st, now), 0);
	cr_assert_eq(stat(d, &sb), 0);
	cr_assert_eq(sb.st_mode & 07777, 0700);
	cr_assert_eq(count_rows("SELECT count(*) FROM terminals"), 3);
	cr_assert_eq(count_rows("SELECT rows FROM terminals WHERE id = (SELECT"
	    " min(id) + 1 FROM terminals)"), 50);
	cr_assert_eq(count_rows("SELECT count(*) FROM terminal_events"
	    " WHERE kind IN ('resize', 'recreated')"), 2);
	store_close(st);
}

Test(store, event_queue_bound_drops_and_writes_marker_with_exact_count)
{
	struct store	*st;
	sqlite3		*auditor, *db;
	double		   now = unit_wall();
	int		 i, n = EVENTS_MAX + 1234;
	unsigned long long dropped = 0;

	capture_log();
	st = store_open(dbpath, now);
	cr_assert_eq(store_flush(st, now), 0);
	auditor = peer_open(dbpath);
	peer_exec(auditor, "BEGIN EXCLUSIVE");
	for (i = 0; i < n; i++)
		store_event(st, now + i, "tab", 1, TERM_EV_INPUT, NULL,
		    "1 bytes");
	cr_assert_eq(store_flush(st, now), -1);
	cr_assert_eq(log_count("pending queue full"), 1);
	peer_exec(auditor, "COMMIT");
	sqlite3_close(auditor);
	cr_assert_eq(store_flush(st, now), 0);
	cr_assert_not(store_pending(st));

	db = peer_open(dbpath);
	cr_assert_eq(q_int(db, "SELECT count(*) FROM terminal_events"
	    " WHERE kind = 'input'"), EVENTS_MAX);
	cr_assert_eq(q_int(db, "SELECT count(*) FROM terminal_events"
	    " WHERE kind = 'dropped'"), 1);
	cr_assert_str_eq(q_text(db, "SELECT kind FROM terminal_events"
	    " ORDER BY id DESC LIMIT 1"), "dropped", "the marker comes last");
	cr_assert_eq(sscanf(q_text(db, "SELECT detail FROM terminal_events"
	    " WHERE kind = 'dropped'"), "dropped %llu events", &dropped), 1);
	cr_assert_eq(dropped, 1234);
	cr_assert_float_eq(q_double(db, "SELECT at FROM terminal_events"
	    " WHERE kind = 'dropped'"), now + EVENTS_MAX, 1e-6,
	    "the marker is dated at the first drop");
	sqlite3_close(db);

	/* The queue takes events again, and the marker is not repeated. */
	store_event(st, now, "tab", 1, TERM_EV_INPUT, NULL, "1 bytes");
	cr_assert_eq(store_flush(st, now), 0);
	cr_assert_eq(count_rows("SELECT count(*) FROM terminal_events"
	    " WHERE kind = 'dropped'"), 1);
	store_close(st);
}

Test(store, startup_marks_rows_left_running_lost_with_an_event)
{
	struct store		*st;
	struct store_term	 t;
	sqlite3			*db;
	double			 then = unit_wall() - 1000, now = unit_wall();

	st = store_open(dbpath, then);
	term_init(&t, 1, "crashed", then);
	store_put_term(st, &t);
	term_init(&t, 2, "exited", then);
	t.state = TERM_DB_EXITED;
	t.ended_at = then + 5;
	t.has_exit_code = 1;
	t.exit_code = 3;
	t.end_reason = "exit";
	store_put_term(st, &t);
	term_init(&t, 3, "closed", then);
	t.state = TERM_DB_CLOSED;
	t.ended_at = then + 6;
	t.end_reason = "closed";
	store_put_term(st, &t);
	cr_assert_eq(store_flush(st, then), 0);
	store_close(st);	/* as kill -9 leaves it: rows not ended */

	st = store_open(dbpath, now);
	cr_assert_eq(store_errors(st), 0);
	cr_assert_eq(store_next_id(st), 4);
	db = peer_open(dbpath);
	cr_assert_str_eq(q_text(db, "SELECT state || '|' || end_reason ||"
	    " '|' || quote(exit_code) FROM terminals WHERE id = 1"),
	    "lost|lost|NULL");
	cr_assert_float_eq(q_double(db, "SELECT ended_at FROM terminals"
	    " WHERE id = 1"), now, 1e-6);
	cr_assert_str_eq(q_text(db, "SELECT session_id || '|' || terminal_id"
	    " || '|' || detail FROM terminal_events WHERE kind = 'lost'"),
	    "crashed|1|still running (pid 1001) when an earlier ptyd stopped");
	cr_assert_eq(q_int(db, "SELECT count(*) FROM terminal_events"), 1);
	cr_assert_str_eq(q_text(db, "SELECT group_concat(state) FROM"
	    " (SELECT state FROM terminals ORDER BY id)"),
	    "lost,exited,closed", "final states stay as they were");
	sqlite3_close(db);

	/* Only once: our own running rows are not the earlier daemon's. */
	term_init(&t, store_next_id(st), "mine", now);
	store_put_term(st, &t);
	cr_assert_eq(store_flush(st, now), 0);
	cr_assert_eq(unlink(dbpath), 0);
	cr_assert(store_rewrite_due(st));
	store_put_term(st, &t);
	cr_assert_eq(store_flush(st, now), 0);
	cr_assert_eq(count_rows("SELECT count(*) FROM terminals WHERE"
	    " state = 'running'"), 1);
	store_close(st);
}

Test(store, next_id_is_above_every_id_in_rows_and_events_and_never_repeats)
{
	struct store		*st;
	struct store_term	 t;
	int64_t			 a, b;

	st = store_open(dbpath, unit_wall());
	cr_assert_eq(store_next_id(st), 1);
	term_init(&t, 41, "tab", unit_wall());
	t.state = TERM_DB_CLOSED;
	store_put_term(st, &t);
	store_event(st, unit_wall(), "tab", 77, TERM_EV_CLOSE, NULL, NULL);
	cr_assert_eq(store_flush(st, unit_wall()), 0);
	store_close(st);

	st = store_open(dbpath, unit_wall());
	a = store_next_id(st);
	b = store_next_id(st);
	cr_assert_eq(a, 78);
	cr_assert_eq(b, 79);
	/* A recreated (empty) file does not bring ids back down. */
	cr_assert_eq(unlink(dbpath), 0);
	term_init(&t, b, "tab", unit_wall());
	store_put_term(st, &t);
	cr_assert_eq(store_flush(st, unit_wall()), 0);
	cr_assert_eq(store_next_id(st), 80);
	store_close(st);
}

Test(store, next_id_comes_from_the_clock_when_no_database_opens)
{
	struct store	*st;
	char		 d[128];
	double		 now = unit_wall();
	int64_t		 a, b;
	int		 fd;

	capture_log();
	snprintf(d, sizeof(d), "%s/state", dir);
	fd = open(d, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	cr_assert(fd != -1);
	close(fd);
	st = store_open(dbpath, now);
	cr_assert_eq(store_errors(st), 1);
	a = store_next_id(st);
	b = store_next_id(st);
	cr_assert_geq(a, (int64_t)(now * 1e6) - 1);
	cr_assert_eq(b, a + 1);
	store_close(st);
}

/* Version 1 as the skeleton wrote it (store.c's first migration). */
static const char v1_schema[] =
	"CREATE TABLE terminals (id INTEGER PRIMARY KEY,"
	" session_id TEXT NOT NULL, pid INTEGER, workspace TEXT,"
	" started_at REAL NOT NULL, last_activity REAL,"
	" subscribers INTEGER NOT NULL DEFAULT 0, unwatched_since REAL,"
	" state TEXT NOT NULL CHECK (state = 'running' OR state = 'exited' OR"
	" state = 'closed' OR state = 'reaped' OR state = 'evicted' OR"
	" state = 'shutdown' OR state = 'lost'), ended_at REAL,"
	" exit_code INTEGER);"
	"CREATE VIEW live_terminals AS SELECT id, session_id, pid"
	" FROM terminals WHERE state = 'running';"
	"PRAGMA user_version = 1;";

/* name|type of every schema object and column, to compare two files. */
static char *
schema_shape(sqlite3 *db)
{
	sqlite3_stmt	*s;
	char		*out;
	size_t		 len = 0;

	out = calloc(1, 65536);
	cr_assert_eq(sqlite3_prepare_v2(db, "SELECT m.type || ' ' || m.name ||"
	    " coalesce(' ' || (SELECT group_concat(name || ':' || type, ',')"
	    " FROM (SELECT name, type FROM pragma_table_info(m.name)"
	    " ORDER BY name)), '') FROM sqlite_master AS m"
	    " WHERE m.name NOT LIKE 'sqlite_%' ORDER BY m.type, m.name", -1,
	    &s, NULL), SQLITE_OK);
	while (sqlite3_step(s) == SQLITE_ROW)
		len += (size_t)snprintf(out + len, 65536 - len, "%s\n",
		    sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
	return (out);
}

/* A database file made by hand, with the state directory. */
static sqlite3 *
peer_create(const char *path)
{
	sqlite3	*db = NULL;
	char	 d[128];

	snprintf(d, sizeof(d), "%s/state", dir);
	cr_assert(mkdir(d, 0700) == 0 || errno == EEXIST);
	cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_CREATE, NULL), SQLITE_OK);
	return (db);
}

Test(store, older_user_version_is_migrated_forward_to_the_fresh_shape)
{
	struct store		*st;
	struct store_term	 t;
	sqlite3			*db, *fresh;
	char			 freshpath[160], *a, *b;
	double			 now = unit_wall();

	capture_log();
	db = peer_create(dbpath);
	peer_exec(db, v1_schema);
	peer_exec(db, "INSERT INTO terminals (id, session_id, pid, workspace,"
	    " started_at, state, ended_at, exit_code) VALUES"
	    " (5, 'old', 99, '/w', 1.5, 'exited', 2.5, 0),"
	    " (6, 'older', 98, '/w', 1.5, 'running', NULL, NULL)");
	sqlite3_close(db);

	st = store_open(dbpath, now);
	cr_assert_eq(store_errors(st), 0);
	cr_assert_eq(log_count("migrated from schema version 1 to 2"), 1);
	cr_assert_eq(log_count("migrated from schema version 2 to 3"), 1);
	cr_assert_eq(store_next_id(st), 7);
	term_init(&t, 7, "new", now);
	t.bytes_in = 3;
	store_put_term(st, &t);
	store_event(st, now, "new", 7, TERM_EV_START, "alice", NULL);
	cr_assert_eq(store_flush(st, now), 0);
	store_close(st);

	db = peer_open(dbpath);
	cr_assert_eq(q_int(db, "PRAGMA user_version"), 6);
	cr_assert_str_eq(q_text(db, "SELECT group_concat(id || state || "
	    " quote(owner) || bytes_in, ',') FROM (SELECT * FROM terminals"
	    " ORDER BY id)"), "5exitedNULL0,6lostNULL0,7running'alice'3",
	    "old rows kept, the running one closed as lost");
	cr_assert_eq(q_int(db, "SELECT count(*) FROM live_terminals"
	    " WHERE owner = 'alice'"), 1, "view rebuilt with new columns");

	/* Same tables, columns, indexes, views, triggers as a new file. */
	snprintf(freshpath, sizeof(freshpath), "%s/fresh.db", dir);
	st = store_open(freshpath, now);
	store_close(st);
	fresh = peer_open(freshpath);
	a = schema_shape(db);
	b = schema_shape(fresh);
	cr_assert_str_eq(a, b);
	free(a);
	free(b);
	sqlite3_close(fresh);
	sqlite3_close(db);
}

Test(store, newer_user_version_is_left_untouched_and_store_runs_without)
{
	struct store		*st;
	struct store_term	 t;
	sqlite3			*db;
	double			 now = unit_wall();

	capture_log();
	db = peer_create(dbpath);
	peer_exec(db, "CREATE TABLE future (x); PRAGMA user_version = 99");
	sqlite3_close(db);

	st = store_open(dbpath, now);
	cr_assert_not_null(st);
	cr_assert_eq(store_errors(st), 1);
	cr_assert_eq(log_count("newer than"), 1);
	term_init(&t, store_next_id(st), "tab", now);
	store_put_term(st, &t);
	store_event(st, now, "tab", t.id, TERM_EV_START, NULL, NULL);
	cr_assert_not(store_pending(st), "nothing queues without a mirror");
	cr_assert_eq(store_flush(st, now), 0);
	store_close(st);

	db = peer_open(dbpath);
	cr_assert_eq(q_int(db, "PRAGMA user_version"), 99);
	cr_assert_str_eq(q_text(db, "SELECT group_concat(name) FROM"
	    " sqlite_master"), "future");
	sqlite3_close(db);
}

Test(store, views_show_running_terminals_and_idle_seconds)
{
	struct store		*st;
	struct store_term	 t;
	sqlite3			*db;
	double			 now = unit_wall(), t1, t2, idle, quiet;

	st = store_open(dbpath, now);
	term_init(&t, 1, "watched", now);
	store_put_term(st, &t);
	term_init(&t, 2, "idle", now);
	t.subscribers = 0;
	t.unwatched_since = now - 100;
	t.last_activity = now - 250;
	store_put_term(st, &t);
	term_init(&t, 3, "exited", now);
	t.subscribers = 0;
	t.unwatched_since = now - 100;
	t.state = TERM_DB_EXITED;
	t.ended_at = now - 50;
	store_put_term(st, &t);
	term_init(&t, 4, "closed", now);
	t.state = TERM_DB_CLOSED;
	t.ended_at = now - 60;
	store_put_term(st, &t);
	cr_assert_eq(store_flush(st, now), 0);

	db = peer_open(dbpath);
	cr_assert_str_eq(q_text(db, "SELECT group_concat(session_id) FROM"
	    " (SELECT session_id FROM live_terminals ORDER BY id)"),
	    "watched,idle");
	cr_assert_str_eq(q_text(db, "SELECT group_concat(session_id) FROM"
	    " idle_terminals"), "idle");
	/* The views read the clock: bracket the query with ours (the
	 * views round to a tenth of a second). */
	t1 = unit_wall() - now;
	idle = q_double(db, "SELECT idle_seconds FROM idle_terminals");
	quiet = q_double(db, "SELECT quiet_seconds FROM idle_terminals");
	t2 = unit_wall() - now;
	cr_assert(idle >= 100 + t1 - 0.06 && idle <= 100 + t2 + 0.06,
	    "idle_seconds %.3f, expected 100 + [%.3f, %.3f]", idle, t1, t2);
	cr_assert(quiet >= 250 + t1 - 0.06 && quiet <= 250 + t2 + 0.06,
	    "quiet_seconds %.3f, expected 250 + [%.3f, %.3f]", quiet, t1, t2);
	cr_assert_str_eq(q_text(db, "SELECT unwatched_since_utc ="
	    " datetime(unwatched_since, 'unixepoch') AND"
	    " unwatched_since_utc LIKE '____-__-__ __:__:__' FROM"
	    " idle_terminals"), "1");
	cr_assert_str_eq(q_text(db, "SELECT started_utc FROM live_terminals"
	    " WHERE id = 1"), q_text(db, "SELECT datetime(started_at,"
	    " 'unixepoch') FROM terminals WHERE id = 1"));
	sqlite3_close(db);
	store_close(st);
}

Test(store, row_refused_by_a_constraint_is_dropped_not_retried_forever)
{
	struct store		*st;
	struct store_term	 t;
	double			 now = unit_wall();

	capture_log();
	st = store_open(dbpath, now);
	term_init(&t, 1, "good", now);
	store_put_term(st, &t);
	term_init(&t, 2, "no-start-time", now);
	t.started_at = -1;	/* NULL: violates NOT NULL */
	store_put_term(st, &t);
	store_event(st, now, "good", 1, TERM_EV_START, NULL, NULL);
	cr_assert_eq(store_flush(st, now), 0);
	cr_assert_not(store_pending(st));
	cr_assert_eq(store_errors(st), 0);
	cr_assert_eq(log_count("refused"), 1);
	cr_assert_eq(count_rows("SELECT count(*) FROM terminals"), 1);
	cr_assert_eq(count_rows("SELECT count(*) FROM terminal_events"), 1);
	store_close(st);
}

Test(store, unknown_state_or_missing_session_id_is_not_queued)
{
	struct store		*st;
	struct store_term	 t;
	double			 now = unit_wall();

	capture_log();
	st = store_open(dbpath, now);
	term_init(&t, 1, "tab", now);
	t.state = TERM_NDBSTATES; /* no state */
	store_put_term(st, &t);
	term_init(&t, 2, NULL, now);
	store_put_term(st, &t);
	store_event(st, now, "tab", 1, TERM_NEVENTS, NULL, NULL);
	cr_assert_not(store_pending(st));
	cr_assert_eq(log_count("not written"), 3);
	store_close(st);
}

Test(store, long_text_is_cut_at_4096_bytes_on_a_character_boundary)
{
	struct store	*st;
	char		 detail[6001];
	size_t		 i;
	double		 now = unit_wall();

	st = store_open(dbpath, now);
	detail[0] = 'x';	/* shifts the two-byte characters by one */
	for (i = 1; i + 1 < sizeof(detail); i += 2) {
		detail[i] = (char)0xc3;		/* U+00E9 */
		detail[i + 1] = (char)0xa9;
	}
	detail[sizeof(detail) - 1] = '\0';
	store_event(st, now, "tab", 1, TERM_EV_RESIZE, NULL, detail);
	cr_assert_eq(store_flush(st, now), 0);
	cr_assert_eq(count_rows("SELECT length(CAST(detail AS BLOB)) FROM"
	    " terminal_events"), 4095);
	cr_assert_eq(count_rows("SELECT length(detail) FROM terminal_events"),
	    1 + 2047);
	store_close(st);
}

Test(store, close_writes_what_is_pending)
{
	struct store		*st;
	struct store_term	 t;
	double			 now = unit_wall();

	st = store_open(dbpath, now);
	term_init(&t, store_next_id(st), "tab", now);
	t.state = TERM_DB_SHUTDOWN;
	t.ended_at = now;
	t.end_reason = "shutdown";
	store_put_term(st, &t);
	store_event(st, now, "tab", t.id, TERM_EV_SHUTDOWN, NULL, NULL);
	store_close(st);
	cr_assert_eq(count_rows("SELECT count(*) FROM terminals WHERE"
	    " state = 'shutdown'"), 1);
	cr_assert_eq(count_rows("SELECT count(*) FROM terminal_events"), 1);
	store_close(NULL);
}

Test(store, schema_sql_runs_twice_in_one_exec_and_sets_the_version)
{
	sqlite3	*db;

	db = peer_create(dbpath);
	peer_exec(db, store_schema_sql);
	peer_exec(db, "INSERT INTO terminals (id, session_id, started_at,"
	    " state) VALUES (1, 's', 1, 'running')");
	peer_exec(db, store_schema_sql);
	cr_assert_eq(q_int(db, "PRAGMA user_version"), 6);
	cr_assert_eq(q_int(db, "SELECT count(*) FROM terminals"), 1);
	cr_assert_neq(sqlite3_exec(db, "INSERT INTO terminals (id, session_id,"
	    " started_at, state) VALUES (2, 's', 1, 'asleep')", NULL, NULL,
	    NULL), SQLITE_OK, "state is checked");
	sqlite3_close(db);
}

Test(store, row_deleted_by_an_operator_comes_back_whole_at_its_next_change)
{
	struct store		*st;
	struct store_term	 t;
	sqlite3			*db;
	double			 now = unit_wall();
	int64_t			 id;

	st = store_open(dbpath, now);
	id = store_next_id(st);
	term_init(&t, id, "tab", now);
	store_put_term(st, &t);
	cr_assert_eq(store_flush(st, now), 0);
	db = peer_open(dbpath);
	peer_exec(db, "DELETE FROM terminals");

	t.bytes_out = 500;	/* only a counter changes */
	store_put_term(st, &t);
	cr_assert_eq(store_flush(st, now), 0);
	cr_assert_str_eq(q_text(db, "SELECT session_id || '|' || owner || '|'"
	    " || workspace || '|' || bytes_out FROM terminals"),
	    "tab|alice|/home/alice|500");
	sqlite3_close(db);
	store_close(st);
}

Test(store, row_bound_gives_up_the_oldest_ended_rows_and_counts_them)
{
	struct store		*st;
	struct store_term	 t;
	sqlite3			*auditor, *db;
	double			 now = unit_wall();
	unsigned long long	 events = 99, rows = 0;
	int64_t			 live;
	int			 i, n = 65536 + 7;

	capture_log();
	st = store_open(dbpath, now);
	live = store_next_id(st);
	term_init(&t, live, "live", now);
	store_put_term(st, &t);
	cr_assert_eq(store_flush(st, now), 0);
	auditor = peer_open(dbpath);
	peer_exec(auditor, "BEGIN EXCLUSIVE");
	/* A long outage while terminals come and go. */
	for (i = 0; i < n; i++) {
		term_init(&t, store_next_id(st), "gone", now);
		t.state = TERM_DB_CLOSED;
		t.ended_at = now;
		store_put_term(st, &t);
	}
	cr_assert_eq(store_flush(st, now), -1);
	peer_exec(auditor, "COMMIT");
	sqlite3_close(auditor);
	cr_assert_eq(store_flush(st, now), 0);

	db = peer_open(dbpath);
	cr_assert_eq(sscanf(q_text(db, "SELECT detail FROM terminal_events"
	    " WHERE kind = 'dropped'"), "dropped %llu events, %llu terminal"
	    " rows", &events, &rows), 2);
	cr_assert_eq(events, 0);
	cr_assert_eq(rows, 7, "65536 pending rows kept; the live one was"
	    " written before and is no longer kept");
	cr_assert_eq(q_int(db, "SELECT count(*) FROM terminals"), 65537);
	cr_assert_eq(q_int(db, "SELECT min(id) FROM terminals WHERE"
	    " state = 'closed'"), live + 8, "the oldest went first");
	sqlite3_close(db);
	store_close(st);
}

/* ptyd killed with its WAL full, then `rm ptyd.db` while it is down: the
 * -wal and -shm left behind must not leak old pages into the new file
 * (SQLite discards the WAL of an empty database file; this pins it). */
Test(store, database_deleted_after_a_crash_starts_clean_despite_its_wal)
{
	struct store		*st;
	struct store_term	 t;
	struct stat		 sb;
	sqlite3			*db;
	char			 wal[160];
	double			 now = unit_wall();
	pid_t			 pid;
	int			 status, i;

	pid = fork();
	cr_assert(pid != -1);
	if (pid == 0) {
		st = store_open(dbpath, now);
		for (i = 0; i < 50; i++) {
			term_init(&t, store_next_id(st), "old", now);
			store_put_term(st, &t);
			store_event(st, now, "old", t.id, TERM_EV_START, NULL,
			    NULL);
			if (store_flush(st, now) == -1)
				_exit(1);
		}
		_exit(0);	/* no store_close: the WAL stays full */
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	snprintf(wal, sizeof(wal), "%s-wal", dbpath);
	cr_assert_eq(stat(wal, &sb), 0);
	cr_assert_gt(sb.st_size, 0, "the crash must leave a WAL behind");
	cr_assert_eq(unlink(dbpath), 0);

	st = store_open(dbpath, now);
	cr_assert_eq(store_errors(st), 0);
	cr_assert_eq(store_next_id(st), 1);
	term_init(&t, 1, "new", now);
	store_put_term(st, &t);
	cr_assert_eq(store_flush(st, now), 0);
	db = peer_open(dbpath);
	cr_assert_str_eq(q_text(db, "PRAGMA integrity_check"), "ok");
	cr_assert_str_eq(q_text(db, "SELECT group_concat(session_id) FROM"
	    " terminals"), "new");
	cr_assert_eq(q_int(db, "SELECT count(*) FROM terminal_events"), 0);
	sqlite3_close(db);
	store_close(st);
}
