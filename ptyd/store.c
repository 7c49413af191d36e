/*
 * store.c -- the SQLite mirror of live terminal state and the audit log.
 *
 * Owns: the database connection and its prepared statements, the pending
 * rows and events (bounded), the write-behind flush, schema migrations,
 * start-up reconciliation, terminal ids, the count of failed flushes, and
 * the audit chain's head: every event is chained as it is written (its id
 * the seq after the head, its hash from chain.c), and each flush checks
 * first that the last event ptyd wrote is still the file's (audit.c sends
 * the head out, and a tamper line when it is not).  After each commit,
 * the events it wrote go to the hook of store_set_committed (the audit
 * log's lines): only committed rows, each once.  Does not own: any decision (term.c's registry is authoritative and
 * nothing here is read back), the flush timer (main.c), nor the schema text
 * (sql/schema.sql, built in as store_schema_sql).
 *
 * The loop never waits on the database: busy_timeout is 0, so a lock held
 * by an auditor makes BEGIN IMMEDIATE fail at once and the work stays
 * pending for the next flush.  Any other failure (read-only, full, corrupt,
 * deleted file or directory) also closes the connection, so that the next
 * flush starts from a fresh open of the path: a connection that opened a
 * read-only file stays read-only, and one whose file was unlinked writes
 * into a file nobody can see.
 *
 * Pending rows live in one array sorted by id: each is the copy of a
 * snapshot the caller (mirror.c) took at flush time, kept only until it is
 * written; a newer put of the same id replaces it.  No row outlives its
 * commit: the terminal's state lives in ptyd's memory, and when the
 * database needs every row again (a reconnect after a failure, a file
 * deleted under us, a live row dropped at the bound) store_rewrite_due
 * says so and the caller puts every terminal it holds.  What stays after a
 * commit is, per live row, its id and a hash of its identity and indexed
 * columns (the "seen" index): a row whose hash is unchanged is written
 * with the cheap UPDATE of the columns that move (store_sql_touch).
 */
#include <sys/queue.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "audit.h"
#include "chain.h"
#include "chaindb.h"
#include "lock.h"
#include "log.h"
#include "store.h"
#include "util.h"
#include "xmalloc.h"

/* The user_version that sql/schema.sql sets. */
#define STORE_SCHEMA_VERSION 6

#define STORE_EVENTS_MAX    10000 /* pending audit events */
#define STORE_ROWS_MAX	    65536 /* pending rows, live ones included */
#define STORE_TEXT_MAX	    4096  /* bytes kept of any text field */
#define STORE_CLOSE_WAIT_MS 1000  /* lock wait allowed at store_close */
/* Consecutive failed flushes (about one a second) before the store says it
 * is failing (health "degraded"): a lock an auditor or `ptydctl prune`
 * holds for a moment is retried, not reported. */
#define STORE_FAILING_AFTER 3

/*
 * store_migrations[v - 1] takes a database from user_version v to v + 1.
 * They run in order inside the transaction that then runs
 * store_schema_sql (which creates what the new version adds: tables,
 * indexes, views, and sets user_version), so an upgrade is all or nothing.
 *
 * To change the schema: edit sql/schema.sql and bump its user_version and
 * STORE_SCHEMA_VERSION together; add the step here (ALTER TABLE, and DROP
 * VIEW for every view whose definition changes, since CREATE VIEW IF NOT
 * EXISTS keeps an old one); extend the migration test.
 */
static const char *const store_migrations[STORE_SCHEMA_VERSION - 1] = {
	/*
	 * 1 -> 2.  Version 1 is the walking skeleton's mirror (the columns
	 * issue 2 asks for: no owner, size, end_reason or byte counts; a
	 * live_terminals view; no audit log).  It was never released; the
	 * step stays as the model for the next one, and keeps the upgrade
	 * path under test.  New columns come at the end (order is
	 * immaterial: every statement names its columns); the view is
	 * dropped so that schema.sql makes it again with the new columns.
	 */
	"ALTER TABLE terminals ADD COLUMN owner TEXT;"
	"ALTER TABLE terminals ADD COLUMN rows INTEGER;"
	"ALTER TABLE terminals ADD COLUMN cols INTEGER;"
	"ALTER TABLE terminals ADD COLUMN end_reason TEXT;"
	"ALTER TABLE terminals ADD COLUMN bytes_in INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE terminals ADD COLUMN bytes_out INTEGER NOT NULL DEFAULT 0;"
	"DROP VIEW IF EXISTS live_terminals;",
	/*
	 * 2 -> 3.  terminal_events refuses DELETE too, except for a prune
	 * that holds a permit (prune_permit); an `events` view.  Both are
	 * new objects that schema.sql creates: nothing to alter.
	 */
	"SELECT 1;",
	/*
	 * 3 -> 4.  REPLACE INTO could rewrite an event (its implicit delete
	 * fires no trigger): an insert naming an existing id is refused.  A
	 * new trigger that schema.sql creates.
	 */
	"SELECT 1;",
	/*
	 * 4 -> 5.  The hash chain: every event carries prev and hash.  Rows
	 * from before stay without; store_chain_load then writes a `chain`
	 * event saying where the chain starts and how many came before.
	 * A version 1 file has no audit log yet: it gets the old table
	 * here, so the same ALTERs make it the new one.
	 */
	"CREATE TABLE IF NOT EXISTS terminal_events (id INTEGER PRIMARY KEY"
	" AUTOINCREMENT, at REAL NOT NULL, session_id TEXT, terminal_id"
	" INTEGER, kind TEXT NOT NULL, actor TEXT, detail TEXT);"
	"ALTER TABLE terminal_events ADD COLUMN prev TEXT;"
	"ALTER TABLE terminal_events ADD COLUMN hash TEXT;",
	/*
	 * 5 -> 6.  Recordings (DESIGN 4): a new table that schema.sql
	 * creates.
	 */
	"SELECT 1;",
};

static const char store_sql_upsert[] =
    "INSERT INTO terminals (id, session_id, owner, pid, workspace, rows,"
    " cols, started_at, last_activity, subscribers, unwatched_since,"
    " state, ended_at, exit_code, end_reason, bytes_in, bytes_out)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14,"
    " ?15, ?16, ?17)"
    " ON CONFLICT (id) DO UPDATE SET session_id = excluded.session_id,"
    " owner = excluded.owner, pid = excluded.pid,"
    " workspace = excluded.workspace, rows = excluded.rows,"
    " cols = excluded.cols, started_at = excluded.started_at,"
    " last_activity = excluded.last_activity,"
    " subscribers = excluded.subscribers,"
    " unwatched_since = excluded.unwatched_since, state = excluded.state,"
    " ended_at = excluded.ended_at, exit_code = excluded.exit_code,"
    " end_reason = excluded.end_reason, bytes_in = excluded.bytes_in,"
    " bytes_out = excluded.bytes_out";

/*
 * Most puts change only these columns (activity, viewers, byte counts),
 * none of them indexed: an UPDATE of just them leaves every index alone,
 * where the upsert, setting all columns, rewrites three index entries per
 * row.  With 500 terminals changed, about five times cheaper
 * (bench/store).
 */
static const char store_sql_touch[] =
    "UPDATE terminals SET rows = ?2, cols = ?3, last_activity = ?4,"
    " subscribers = ?5, unwatched_since = ?6, bytes_in = ?7,"
    " bytes_out = ?8 WHERE id = ?1";

/* ptyd names each event's id: the chain's seq, one after its head. */
static const char store_sql_event[] =
    "INSERT INTO terminal_events (at, session_id, terminal_id, kind, actor,"
    " detail, id, prev, hash) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";

/* The chain's tail from ptyd's head on (the head, then rows someone else
 * chained on: a prune), and the id after the last row. */
static const char store_sql_tail[] = "SELECT " CHAINDB_COLS
				     " FROM terminal_events WHERE id >= ?1"
				     " ORDER BY id LIMIT 65";
static const char store_sql_maxev[] = "SELECT max(id) FROM terminal_events";
static const char store_sql_head[] =
    "SELECT id, hash FROM terminal_events WHERE hash IS NOT NULL"
    " ORDER BY id DESC LIMIT 1";
static const char store_sql_unchained[] =
    "SELECT count(*) FROM terminal_events WHERE hash IS NULL";

/* Start-up reconciliation: the events first (chained one by one, as
 * every event is), while the rows still say what the earlier daemon
 * left.  The rest of a lost row is its last known state (subscribers,
 * bytes). */
static const char store_sql_lost_events[] =
    "SELECT session_id, id, coalesce(pid, '?'), owner FROM terminals"
    " WHERE state = 'running' AND id NOT IN (SELECT id FROM temp.live)"
    " ORDER BY id";
static const char store_sql_lost_rows[] =
    "UPDATE terminals SET state = 'lost', ended_at = ?1,"
    " end_reason = 'lost' WHERE state = 'running'"
    " AND id NOT IN (SELECT id FROM temp.live)";
/* The terminals a keeper still holds (DESIGN 10): not lost. */
static const char store_sql_live[] =
    "CREATE TEMP TABLE IF NOT EXISTS live (id INTEGER PRIMARY KEY);"
    " DELETE FROM temp.live;";
static int64_t *store_live_ids;
static size_t	store_nkept;

/* Ids ever used: rows, and events that may outlive pruned rows. */
static const char *const store_sql_maxid[] = {
	"SELECT max(m) FROM (SELECT max(id) AS m FROM terminals"
	" UNION ALL SELECT max(terminal_id) FROM terminal_events)",
	"SELECT max(id) FROM terminals",
};

enum store_db {
	STORE_DB_CLOSED, /* no connection: the next flush opens */
	STORE_DB_OPEN,	 /* connected, schema not yet applied */
	STORE_DB_READY,	 /* schema applied, statements prepared */
	STORE_DB_OFF,	 /* newer schema than ours: no mirror */
};

struct store_row {
	int64_t	    id;
	char	   *sid;
	char	   *owner;
	char	   *workspace;
	char	   *end_reason;
	const char *state; /* term_dbstate_name's */
	int	    live;
	int	    pid;
	int	    rows;
	int	    cols;
	int	    subscribers;
	int	    has_exit_code;
	int	    exit_code;
	double	    started_at;
	double	    last_activity;
	double	    unwatched_since;
	double	    ended_at;
	uint64_t    bytes_in;
	uint64_t    bytes_out;
	uint64_t    hash; /* of the identity and indexed columns */
	int	    bad;  /* refused by a constraint: drop */
};

/* A live row written through this connection: its id and column hash. */
struct store_seen {
	int64_t	 id;
	uint64_t hash;
};

/* A point of the hash chain: a row's seq and hash. */
struct store_head {
	int	known;
	int64_t seq;
	uint8_t hash[CHAIN_HASH_LEN];
};

struct store_ev {
	STAILQ_ENTRY(store_ev) entry;
	double	    at;
	int64_t	    term_id;
	int64_t	    seq; /* on the done list: the id it was written with */
	const char *sid; /* these point into buf, or NULL */
	const char *kind;
	const char *owner; /* not a column: for the audit log's lines */
	const char *actor;
	const char *detail;
	char	    buf[];
};
STAILQ_HEAD(store_evq, store_ev);

struct store {
	char	     *path;
	sqlite3	     *db;
	enum store_db dbstate;
	int	      busy_ms;

	sqlite3_stmt *st_begin;
	sqlite3_stmt *st_commit;
	sqlite3_stmt *st_rollback;
	sqlite3_stmt *st_upsert;
	sqlite3_stmt *st_touch;
	sqlite3_stmt *st_event;
	sqlite3_stmt *st_tail;

	/* The chain: head is the last row committed (kept across
	 * reconnects: what ptyd wrote, whatever the file says now); txhead
	 * and txnext move inside a transaction. */
	struct store_head head;
	struct store_head txhead;
	int64_t		  txnext;

	int64_t next_id;
	int	ids_known; /* next_id read from the db */
	int	reconciled;
	int	recreated; /* write a 'recreated' marker */
	int	wal_warned;

	int	 failing; /* in an outage, logged */
	uint64_t errors;
	uint64_t outage_errors;
	uint64_t lost; /* rows an earlier ptyd left running */
	char	 cause[512];

	struct store_row *rows; /* pending, sorted by id */
	size_t		  nrows;
	size_t		  rowscap;
	int		  rewrite; /* the caller must put every row */

	struct store_seen *seen; /* sorted by id */
	size_t		   nseen;
	size_t		   seencap;

	struct store_evq events;
	size_t		 nevents;
	struct store_evq done; /* written by this transaction, for the hook */
	size_t		 ev_max;     /* events one flush writes; 0: all */
	size_t		 ev_written; /* by the last store_write */

	uint64_t dropped_events;
	uint64_t dropped_rows;
	double	 dropped_at; /* first drop, for the marker */

	struct store_rec *recs; /* pending recordings' rows */
	size_t		  nrecs;
	size_t		  recscap;
};

static double
store_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9);
}

static void store_cause(struct store *st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int  store_write_event(struct store *st, double at, const char *sid,
     int64_t term_id, const char *owner, const char *kind, const char *actor,
     const char *detail);
static void store_done_clear(struct store *st);
static int  store_write_recs(struct store *st);
static void store_done_report(struct store *st);

/* Told of every event after the commit that wrote it (store_set_committed). */
static void (*store_committed_cb)(const struct store_done *);

/* Remember why the last attempt failed, for the one log line per outage. */
static void
store_cause(struct store *st, const char *fmt, ...)
{
	va_list ap;
	int	n;

	va_start(ap, fmt);
	n = vsnprintf(st->cause, sizeof(st->cause), fmt, ap);
	va_end(ap);
	if (n < 0)
		st->cause[0] = '\0';
}

/* The length of s cut to at most max bytes, not inside a UTF-8 sequence. */
static size_t
store_textlen(const char *s, size_t max)
{
	size_t n;

	n = strnlen(s, max + 1);
	if (n <= max)
		return (n);
	n = max;
	while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	return (n);
}

/* Replace *dst by a bounded copy of src (NULL stays NULL); keeps the old
 * copy when equal, as a row put twice before a flush mostly is. */
static void
store_setstr(char **dst, const char *src)
{
	size_t n;

	if (src == NULL) {
		free(*dst);
		*dst = NULL;
		return;
	}
	n = store_textlen(src, STORE_TEXT_MAX);
	if (*dst != NULL && strlen(*dst) == n && memcmp(*dst, src, n) == 0)
		return;
	free(*dst);
	*dst = xmalloc(n + 1);
	memcpy(*dst, src, n);
	(*dst)[n] = '\0';
}

/*
 * Index of the element with this id in a sorted array whose elements start
 * with their int64_t id (rows, seen), or where it would go (*found = 0).
 */
static size_t
store_id_search(const void *base, size_t n, size_t size, int64_t id, int *found)
{
	const char *p = base;
	size_t	    lo = 0, hi = n, mid;
	int64_t	    v;

	/* Ids mostly grow: a new terminal goes at the end. */
	if (hi > 0) {
		memcpy(&v, p + (hi - 1) * size, sizeof(v));
		if (v < id) {
			*found = 0;
			return (hi);
		}
	}
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		memcpy(&v, p + mid * size, sizeof(v));
		if (v < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if ((*found = lo < n)) {
		memcpy(&v, p + lo * size, sizeof(v));
		*found = v == id;
	}
	return (lo);
}

/* Make room for one element at i in a growable array; returns it zeroed. */
static void *
store_insert(void **base, size_t *n, size_t *cap, size_t size, size_t i)
{
	char *p;

	if (*n == *cap) {
		*cap = *cap == 0 ? 16 : *cap * 2;
		*base = xreallocarray(*base, *cap, size);
	}
	p = *base;
	memmove(p + (i + 1) * size, p + i * size, (*n - i) * size);
	(*n)++;
	memset(p + i * size, 0, size);
	return (p + i * size);
}

static void
store_seen_set(struct store *st, int64_t id, uint64_t hash)
{
	struct store_seen *s;
	size_t		   i;
	int		   found;

	i = store_id_search(st->seen, st->nseen, sizeof(*st->seen), id, &found);
	if (found)
		s = &st->seen[i];
	else
		s = store_insert((void **)&st->seen, &st->nseen, &st->seencap,
		    sizeof(*st->seen), i);
	s->id = id;
	s->hash = hash;
}

static void
store_seen_del(struct store *st, int64_t id)
{
	size_t i;
	int    found;

	i = store_id_search(st->seen, st->nseen, sizeof(*st->seen), id, &found);
	if (!found)
		return;
	memmove(&st->seen[i], &st->seen[i + 1],
	    (st->nseen - i - 1) * sizeof(st->seen[0]));
	st->nseen--;
}

/* Whether the row is in the database with these identity columns. */
static int
store_seen_same(const struct store *st, const struct store_row *r)
{
	size_t i;
	int    found;

	i = store_id_search(st->seen, st->nseen, sizeof(*st->seen), r->id,
	    &found);
	return (found && st->seen[i].hash == r->hash);
}

static void
store_row_clear(struct store_row *r)
{
	free(r->sid);
	free(r->owner);
	free(r->workspace);
	free(r->end_reason);
}

static void
store_row_remove(struct store *st, size_t i)
{
	store_row_clear(&st->rows[i]);
	memmove(&st->rows[i], &st->rows[i + 1],
	    (st->nrows - i - 1) * sizeof(st->rows[0]));
	st->nrows--;
}

/*
 * At the bound, make room by giving up the oldest row in a final state:
 * its terminal is gone and only its last row is lost (the mirror keeps an
 * earlier one, which the next start closes as lost).  Live rows are never
 * given up; -1 if every row is live.
 */
static int
store_row_evict(struct store *st)
{
	size_t i;

	for (i = 0; i < st->nrows; i++) {
		if (!st->rows[i].live) {
			store_row_remove(st, i);
			st->dropped_rows++;
			return (0);
		}
	}
	return (-1);
}

static size_t
store_nlive(const struct store *st)
{
	size_t i, n = 0;

	for (i = 0; i < st->nrows; i++)
		n += st->rows[i].live;
	return (n);
}

/* Everything is to be written whole: the file may be a new one.  The
 * pending rows stay; the caller is asked for every other. */
static void
store_mark_all(struct store *st)
{
	size_t i;

	for (i = 0; i < st->nrows; i++)
		st->rows[i].bad = 0;
	st->nseen = 0;
	st->rewrite = 1;
}

static void
store_note_drop(struct store *st, double at)
{
	if (st->dropped_events == 0 && st->dropped_rows == 0) {
		st->dropped_at = at;
		log_warnx("database %s: pending queue full (%d events, %d rows)"
			  "; dropping until it accepts writes",
		    st->path, STORE_EVENTS_MAX, STORE_ROWS_MAX);
	}
}

/*
 * SQLite creates the -shm (and -wal) with the database file's mode.  An
 * attempt on a read-only file thus leaves a read-only -shm of ours, and
 * once the file is writable again every connection would still be refused
 * writes through it.  Give our own leftovers the file's mode back.
 */
static void
store_fix_modes(const char *path)
{
	static const char *const sfx[] = { "-wal", "-shm" };
	char			 buf[PATH_MAX + 8];
	struct stat		 db, sb;
	size_t			 i;

	if (stat(path, &db) == -1 || (db.st_mode & S_IWUSR) == 0)
		return;
	for (i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
		if ((size_t)snprintf(buf, sizeof(buf), "%s%s", path, sfx[i]) >=
		    sizeof(buf))
			continue;
		if (stat(buf, &sb) == 0 && sb.st_uid == geteuid() &&
		    (sb.st_mode & S_IWUSR) == 0 &&
		    chmod(buf, db.st_mode & 0666) == -1)
			log_warn("database %s: chmod %s", path, buf);
	}
}

static void
store_finalize(sqlite3_stmt **stp)
{
	sqlite3_finalize(*stp);
	*stp = NULL;
}

static void
store_db_close(struct store *st)
{
	store_finalize(&st->st_begin);
	store_finalize(&st->st_commit);
	store_finalize(&st->st_rollback);
	store_finalize(&st->st_upsert);
	store_finalize(&st->st_touch);
	store_finalize(&st->st_event);
	store_finalize(&st->st_tail);
	if (st->db != NULL && sqlite3_close(st->db) != SQLITE_OK)
		log_warnx("database %s: close: %s", st->path,
		    sqlite3_errmsg(st->db));
	st->db = NULL;
	if (st->dbstate != STORE_DB_OFF)
		st->dbstate = STORE_DB_CLOSED;
}

/* Run one statement that returns at most an integer; -1 on error. */
static int
store_db_int(sqlite3 *db, const char *sql, int64_t *val)
{
	sqlite3_stmt *stmt = NULL;
	int	      rc;

	*val = 0;
	if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) != SQLITE_OK)
		goto fail;
	if ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		*val = sqlite3_column_int64(stmt, 0);
		rc = sqlite3_step(stmt);
	}
	if (rc != SQLITE_DONE)
		goto fail;
	sqlite3_finalize(stmt);
	return (0);
fail:
	sqlite3_finalize(stmt);
	return (-1);
}

static void
store_db_maxid(struct store *st)
{
	int64_t max;
	size_t	i;

	for (i = 0; i < sizeof(store_sql_maxid) / sizeof(store_sql_maxid[0]);
	     i++) {
		if (store_db_int(st->db, store_sql_maxid[i], &max) == 0) {
			if (max >= st->next_id)
				st->next_id = max + 1;
			st->ids_known = 1;
			return;
		}
	}
}

/* Forget the pending events and the notes kept beside them (drop counts,
 * a recreated file). */
static void
store_queue_drop(struct store *st, size_t n)
{
	struct store_ev *ev;

	while (n-- > 0 && (ev = STAILQ_FIRST(&st->events)) != NULL) {
		STAILQ_REMOVE_HEAD(&st->events, entry);
		free(ev);
		st->nevents--;
	}
	st->dropped_events = st->dropped_rows = 0;
	st->recreated = 0;
}

static void
store_queue_clear(struct store *st)
{
	store_queue_drop(st, st->nevents);
}

/* Forget everything pending (and the live copies). */
static void
store_discard(struct store *st)
{
	size_t i;

	for (i = 0; i < st->nrows; i++)
		store_row_clear(&st->rows[i]);
	free(st->rows);
	st->rows = NULL;
	st->nrows = st->rowscap = 0;
	free(st->seen);
	st->seen = NULL;
	st->nseen = st->seencap = 0;
	store_queue_clear(st);
	free(st->recs);
	st->recs = NULL;
	st->nrecs = st->recscap = 0;
}

/* A database from a newer ptyd: leave it alone and run without mirror. */
static void
store_db_off(struct store *st, int64_t version)
{
	log_warnx("database %s has schema version %" PRId64 ", newer than"
		  " this ptyd's %d: running without the mirror (move the file"
		  " away or upgrade ptyd, then restart it)",
	    st->path, version, STORE_SCHEMA_VERSION);
	st->dbstate = STORE_DB_OFF;
	store_db_close(st);
	store_discard(st);
}

/* WAL (warned about once if refused) and the durability pragmas. */
static int
store_db_pragmas(struct store *st)
{
	sqlite3_stmt *stmt = NULL;
	const char   *mode;

	if (sqlite3_prepare_v2(st->db, "PRAGMA journal_mode = WAL", -1, &stmt,
		NULL) != SQLITE_OK ||
	    sqlite3_step(stmt) != SQLITE_ROW) {
		store_cause(st, "cannot set WAL: %s", sqlite3_errmsg(st->db));
		store_finalize(&stmt);
		return (-1);
	}
	mode = (const char *)sqlite3_column_text(stmt, 0);
	if ((mode == NULL || strcmp(mode, "wal") != 0) && !st->wal_warned) {
		/* Still a mirror, but readers and ptyd now block each other. */
		log_warnx("database %s: journal mode is %s, not wal", st->path,
		    mode == NULL ? "unknown" : mode);
		st->wal_warned = 1;
	}
	store_finalize(&stmt);
	/*
	 * NORMAL: in WAL mode a commit is durable at the next checkpoint; a
	 * power cut may lose the last flushes, never consistency.  The WAL is
	 * cut back after checkpoints so a long reader cannot leave it huge.
	 * A checkpoint runs inside the commit that brings the WAL to
	 * wal_autocheckpoint pages: at SQLite's 1,000 that commit copied up to
	 * 4 MB and held the loop 50-60 ms with 5,000 terminals; at 100 each
	 * one is short (bench/terms: longest flush 14-27 ms).
	 */
	if (sqlite3_exec(st->db,
		"PRAGMA synchronous = NORMAL;"
		"PRAGMA journal_size_limit = 4194304;"
		"PRAGMA wal_autocheckpoint = 100",
		NULL, NULL, NULL) != SQLITE_OK) {
		store_cause(st, "pragma: %s", sqlite3_errmsg(st->db));
		return (-1);
	}
	return (0);
}

/* sqlite3_open_v2 of the path, its directory made first.  0 or -1. */
static int
store_db_open(struct store *st)
{
	int rc;

	if (util_mkparents(st->path, 0700, NULL, 0) == -1) {
		store_cause(st, "cannot create its directory: %s",
		    strerror(errno));
		return (-1);
	}
	/* A -wal left beside a deleted file is SQLite's to discard: it drops
	 * the WAL of an empty database file when it opens it. */
	store_fix_modes(st->path);
	rc = sqlite3_open_v2(st->path, &st->db,
	    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
	    NULL);
	if (rc == SQLITE_OK)
		return (0);
	if (st->db == NULL)
		store_cause(st, "cannot open: %s", sqlite3_errstr(rc));
	else
		store_cause(st, "cannot open: %s", sqlite3_errmsg(st->db));
	return (-1);
}

/* CLOSED -> OPEN: a connection, WAL, and the ids in use.  Takes no write
 * lock, so an auditor's lock does not keep store_open from learning ids. */
static int
store_db_connect(struct store *st)
{
	int64_t version;

	if (store_db_open(st) == -1)
		goto fail;
	st->dbstate = STORE_DB_OPEN;
	sqlite3_extended_result_codes(st->db, 1);
	sqlite3_busy_timeout(st->db, st->busy_ms);
	/* Reads first: ids are worth learning even from a file we cannot
	 * write yet. */
	if (store_db_int(st->db, "PRAGMA user_version", &version) == -1) {
		store_cause(st, "cannot read it: %s", sqlite3_errmsg(st->db));
		goto fail;
	}
	store_db_maxid(st);
	if (version > STORE_SCHEMA_VERSION) {
		store_db_off(st, version);
		return (-1);
	}
	if (sqlite3_db_readonly(st->db, "main") == 1) {
		store_cause(st, "the file is read-only");
		goto fail;
	}
	if (store_db_pragmas(st) == -1)
		goto fail;
	return (0);
fail:
	if (st->db != NULL)
		store_db_close(st);
	return (-1);
}

static int
store_prepare(struct store *st, const char *sql, sqlite3_stmt **stp)
{
	if (sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, stp,
		NULL) != SQLITE_OK) {
		store_cause(st, "cannot prepare: %s", sqlite3_errmsg(st->db));
		return (-1);
	}
	return (0);
}

static int
store_exec_now(struct store *st, const char *sql, double now, int *changes)
{
	sqlite3_stmt *stmt = NULL;

	if (store_prepare(st, sql, &stmt) == -1)
		return (-1);
	sqlite3_bind_double(stmt, 1, now);
	if (sqlite3_step(stmt) != SQLITE_DONE) {
		store_cause(st, "reconcile: %s", sqlite3_errmsg(st->db));
		sqlite3_finalize(stmt);
		return (-1);
	}
	if (changes != NULL)
		*changes = sqlite3_changes(st->db);
	sqlite3_finalize(stmt);
	return (0);
}

/* Inside the transaction: the migrations from version, then the schema.
 * 0, or -1 with the cause set. */
static int
store_db_migrate(struct store *st, int64_t version)
{
	/* 0 is a new, empty database: schema.sql creates it whole. */
	for (; version >= 1 && version < STORE_SCHEMA_VERSION; version++) {
		if (sqlite3_exec(st->db, store_migrations[version - 1], NULL,
			NULL, NULL) != SQLITE_OK) {
			store_cause(st,
			    "migrating from version %" PRId64 ": %s", version,
			    sqlite3_errmsg(st->db));
			return (-1);
		}
		log_info("database %s: migrated from schema version %" PRId64
			 " to %" PRId64,
		    st->path, version, version + 1);
	}
	if (sqlite3_exec(st->db, store_schema_sql, NULL, NULL, NULL) !=
	    SQLITE_OK) {
		store_cause(st, "applying the schema: %s",
		    sqlite3_errmsg(st->db));
		return (-1);
	}
	if (store_db_int(st->db, "PRAGMA user_version", &version) == -1 ||
	    version != STORE_SCHEMA_VERSION) {
		/* A build whose schema.sql and store.c disagree. */
		store_cause(st,
		    "schema.sql sets user_version %" PRId64
		    ", store.c expects %d",
		    version, STORE_SCHEMA_VERSION);
		return (-1);
	}
	return (0);
}

/* One `lost` event per row an earlier daemon left running.  0 or -1. */
static int
store_db_lost_events(struct store *st, double now)
{
	sqlite3_stmt *stmt = NULL;
	char	      detail[128];
	int	      rc;

	if (store_prepare(st, store_sql_lost_events, &stmt) == -1)
		return (-1);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		snprintf(detail, sizeof(detail),
		    "still running (pid %s) when an earlier ptyd stopped",
		    (const char *)sqlite3_column_text(stmt, 2));
		rc = store_write_event(st, now,
		    (const char *)sqlite3_column_text(stmt, 0),
		    sqlite3_column_int64(stmt, 1),
		    (const char *)sqlite3_column_text(stmt, 3),
		    term_event_name(TERM_EV_LOST), NULL, detail);
		if (rc != SQLITE_DONE)
			break;
	}
	if (rc != SQLITE_DONE)
		store_cause(st, "reconcile: %s", sqlite3_errmsg(st->db));
	sqlite3_finalize(stmt);
	return (rc == SQLITE_DONE ? 0 : -1);
}

/* Inside the transaction, the first time this process gets there: close
 * what an earlier daemon left registered as lost.  0 or -1. */
static int
store_db_live(struct store *st)
{
	sqlite3_stmt *stmt = NULL;
	size_t	      i;
	int	      rc = SQLITE_DONE;

	if (sqlite3_exec(st->db, store_sql_live, NULL, NULL, NULL) !=
		SQLITE_OK ||
	    store_prepare(st, "INSERT OR IGNORE INTO temp.live VALUES (?1)",
		&stmt) == -1) {
		store_cause(st, "reconcile: %s", sqlite3_errmsg(st->db));
		return (-1);
	}
	for (i = 0; i < store_nkept && rc == SQLITE_DONE; i++) {
		sqlite3_bind_int64(stmt, 1, store_live_ids[i]);
		rc = sqlite3_step(stmt);
		sqlite3_reset(stmt);
	}
	if (rc != SQLITE_DONE)
		store_cause(st, "reconcile: %s", sqlite3_errmsg(st->db));
	sqlite3_finalize(stmt);
	return (rc == SQLITE_DONE ? 0 : -1);
}

void
store_set_live(const int64_t *ids, size_t n)
{
	store_live_ids = xreallocarray(NULL, n + 1, sizeof(*ids));
	memcpy(store_live_ids, ids, n * sizeof(*ids));
	store_nkept = n;
}

void
store_reserve_id(struct store *st, int64_t id)
{
	if (id >= st->next_id)
		st->next_id = id + 1;
}

static int
store_db_reconcile(struct store *st, double now, int *lost)
{
	if (st->reconciled)
		return (0);
	if (store_db_live(st) == -1 || store_db_lost_events(st, now) == -1 ||
	    store_exec_now(st, store_sql_lost_rows, now, lost) == -1)
		return (-1);
	return (0);
}

/* The last chained row of the file, if any, into txhead. */
static int
store_chain_find(struct store *st)
{
	sqlite3_stmt *stmt = NULL;
	int	      rc;

	if (store_prepare(st, store_sql_head, &stmt) == -1)
		return (-1);
	if ((rc = sqlite3_step(stmt)) == SQLITE_ROW &&
	    chaindb_col_hash(stmt, 1, st->txhead.hash) == 0) {
		st->txhead.known = 1;
		st->txhead.seq = sqlite3_column_int64(stmt, 0);
	}
	sqlite3_finalize(stmt);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		store_cause(st, "reading the chain: %s",
		    sqlite3_errmsg(st->db));
		return (-1);
	}
	return (0);
}

/*
 * Inside the transaction that readies the file: where the chain goes on.
 * A reconnect keeps the head in memory (the flush's check compares it
 * with the file).  The first time, the head is the file's last chained
 * row; a file with none (new, or from before schema 5) gets a `chain`
 * event starting the chain from the genesis hash.  0 or -1.
 */
static int
store_chain_load(struct store *st, double now)
{
	char	detail[160];
	int64_t max, unchained;

	if (store_db_int(st->db, store_sql_maxev, &max) == -1) {
		store_cause(st, "reading the chain: %s",
		    sqlite3_errmsg(st->db));
		return (-1);
	}
	st->txhead = st->head;
	st->txnext = (st->head.known && st->head.seq > max ? st->head.seq :
							     max) +
	    1;
	if (st->head.known)
		return (0);
	if (store_chain_find(st) == -1)
		return (-1);
	if (st->txhead.known)
		return (0);
	if (store_db_int(st->db, store_sql_unchained, &unchained) == -1)
		unchained = 0;
	st->txhead.known = 1;
	st->txhead.seq = st->txnext - 1;
	memcpy(st->txhead.hash, chain_genesis, CHAIN_HASH_LEN);
	/* A new file's first event starts the chain (seq 0 is the empty
	 * chain); an older file's history is marked as coming before it. */
	if (unchained == 0)
		return (0);
	snprintf(detail, sizeof(detail),
	    "the hash chain starts here; the %" PRId64 " events before it"
	    " are not chained (schema 4)",
	    unchained);
	if (store_write_event(st, now, NULL, 0, NULL,
		term_event_name(TERM_EV_CHAIN), NULL, detail) != SQLITE_DONE) {
		store_cause(st, "starting the chain: %s",
		    sqlite3_errmsg(st->db));
		return (-1);
	}
	return (0);
}

/* After a commit: what the transaction chained is the head, and goes to
 * the anchors (the first head of this process as the start anchor). */
static void
store_chain_committed(struct store *st, double now)
{
	int first = !st->head.known;

	if (!st->txhead.known ||
	    (st->head.known && st->head.seq == st->txhead.seq &&
		memcmp(st->head.hash, st->txhead.hash, CHAIN_HASH_LEN) == 0))
		return;
	st->head = st->txhead;
	if (first)
		audit_start(st->head.seq, st->head.hash, now);
	else
		audit_head(st->head.seq, st->head.hash, now);
}

static int
store_db_prepare_all(struct store *st)
{
	/* Made inside the transaction that readies the file, which may fail
	 * and run again on the same connection. */
	store_finalize(&st->st_begin);
	store_finalize(&st->st_commit);
	store_finalize(&st->st_rollback);
	store_finalize(&st->st_upsert);
	store_finalize(&st->st_touch);
	store_finalize(&st->st_event);
	store_finalize(&st->st_tail);
	if (store_prepare(st, "BEGIN IMMEDIATE", &st->st_begin) == -1 ||
	    store_prepare(st, "COMMIT", &st->st_commit) == -1 ||
	    store_prepare(st, "ROLLBACK", &st->st_rollback) == -1 ||
	    store_prepare(st, store_sql_upsert, &st->st_upsert) == -1 ||
	    store_prepare(st, store_sql_touch, &st->st_touch) == -1 ||
	    store_prepare(st, store_sql_event, &st->st_event) == -1 ||
	    store_prepare(st, store_sql_tail, &st->st_tail) == -1)
		return (-1);
	return (0);
}

/*
 * OPEN -> READY: in one write transaction, migrate an older database step
 * by step, apply the schema (idempotent), and, the first time this process
 * gets here, close what an earlier daemon left registered as lost.  Then
 * prepare the statements every flush reuses.  Returns SQLITE_OK or the
 * error code (SQLITE_BUSY: someone holds the write lock).
 */
static int
store_db_ready(struct store *st, double now)
{
	int64_t version;
	int	lost = 0, rc;

	store_done_clear(st);
	if ((rc = sqlite3_exec(st->db, "BEGIN IMMEDIATE", NULL, NULL, NULL)) !=
	    SQLITE_OK) {
		store_cause(st, "%s", sqlite3_errmsg(st->db));
		return (rc);
	}
	/* Read again under the lock: another process may have moved it. */
	if (store_db_int(st->db, "PRAGMA user_version", &version) == -1) {
		store_cause(st, "cannot read it: %s", sqlite3_errmsg(st->db));
		goto fail;
	}
	if (version > STORE_SCHEMA_VERSION) {
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
		store_db_off(st, version);
		return (SQLITE_READONLY);
	}
	if (store_db_migrate(st, version) == -1)
		goto fail;
	if (store_db_prepare_all(st) == -1 || store_chain_load(st, now) == -1 ||
	    store_db_reconcile(st, now, &lost) == -1)
		goto fail;
	store_db_maxid(st);
	if (sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		store_cause(st, "%s", sqlite3_errmsg(st->db));
		goto fail;
	}
	store_chain_committed(st, now);
	store_done_report(st);
	/* The lock (lock.c) says whose they were: no live ptyd's. */
	if (lost > 0 && lock_previous_pid() > 0)
		log_info("database %s: marked %d terminal(s) of a previous ptyd"
			 " (pid %ld) lost",
		    st->path, lost, (long)lock_previous_pid());
	else if (lost > 0)
		log_info("database %s: marked %d terminal(s) of a previous ptyd"
			 " lost",
		    st->path, lost);
	st->lost += (uint64_t)lost;
	st->reconciled = 1;
	st->dbstate = STORE_DB_READY;
	return (SQLITE_OK);
fail:
	store_done_clear(st);
	rc = sqlite3_extended_errcode(st->db);
	if (!sqlite3_get_autocommit(st->db))
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	return (rc == SQLITE_OK ? SQLITE_ERROR : rc);
}

/* A failed attempt: count it, log the first of an outage, and unless it
 * was only a lock, drop the connection so the next flush reopens. */
static void
store_fail(struct store *st, int rc)
{
	st->errors++;
	st->outage_errors++;
	if (!st->failing) {
		log_warnx("database %s: %s; keeping %zu rows and %zu events"
			  " in memory and retrying",
		    st->path, st->cause, st->nrows, st->nevents);
		st->failing = 1;
	}
	if (st->dbstate == STORE_DB_OFF)
		return;
	if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED)
		return;
	if (st->db != NULL) {
		store_db_close(st);
		store_mark_all(st);
	}
}

/* Get the database to READY; -1 (counted and logged) if it will not. */
static int
store_attempt(struct store *st, double now)
{
	int rc = SQLITE_ERROR;

	if (st->dbstate == STORE_DB_OFF)
		return (-1);
	if (st->dbstate == STORE_DB_CLOSED && store_db_connect(st) == -1)
		goto fail;
	if (st->dbstate == STORE_DB_OPEN &&
	    (rc = store_db_ready(st, now)) != SQLITE_OK)
		goto fail;
	return (0);
fail:
	if (st->dbstate == STORE_DB_OFF) {
		/* Counted once: it stays off, flushes become no-ops. */
		st->errors++;
		return (-1);
	}
	store_fail(st, rc);
	return (-1);
}

struct store *
store_open(const char *path, double now)
{
	struct store *st;
	char	      cwd[PATH_MAX];

	st = xcalloc(1, sizeof(*st));
	STAILQ_INIT(&st->events);
	STAILQ_INIT(&st->done);
	st->dbstate = STORE_DB_CLOSED;
	/* Reopens happen later, after a daemon's chdir("/"). */
	if (path[0] != '/' && getcwd(cwd, sizeof(cwd)) != NULL)
		xasprintf(&st->path, "%s/%s", cwd, path);
	else
		st->path = xstrdup(path);
	st->next_id = 1;

	store_attempt(st, now);
	if (!st->ids_known) {
		/*
		 * Ids from the clock in microseconds: far above any id a
		 * database hands out by counting, so they never meet one.
		 */
		st->next_id = (int64_t)(now * 1e6);
		log_warnx("database %s: ids in use unknown; numbering"
			  " terminals from %" PRId64,
		    st->path, st->next_id);
	}
	return (st);
}

int64_t
store_next_id(struct store *st)
{
	return (st->next_id++);
}

/* FNV-1a over n bytes, continuing from h. */
static uint64_t
store_fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;

	while (n-- > 0) {
		h ^= *c++;
		h *= 0x100000001b3ULL;
	}
	return (h);
}

static uint64_t
store_fnv_str(uint64_t h, const char *s)
{
	/* NULL and "" differ: the length is hashed with a marker. */
	if (s == NULL)
		return (store_fnv(h, "\xff", 1));
	return (store_fnv(store_fnv(h, s, strlen(s)), "", 1));
}

/* What the touch UPDATE leaves alone: identity and indexed columns. */
static uint64_t
store_row_hash(const struct store_row *r)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	h = store_fnv_str(h, r->sid);
	h = store_fnv_str(h, r->owner);
	h = store_fnv_str(h, r->workspace);
	h = store_fnv_str(h, r->end_reason);
	h = store_fnv_str(h, r->state);
	h = store_fnv(h, &r->pid, sizeof(r->pid));
	h = store_fnv(h, &r->has_exit_code, sizeof(r->has_exit_code));
	h = store_fnv(h, &r->exit_code, sizeof(r->exit_code));
	h = store_fnv(h, &r->started_at, sizeof(r->started_at));
	return (store_fnv(h, &r->ended_at, sizeof(r->ended_at)));
}

/* The pending row for id, made if need be; NULL if the bound is reached
 * and every pending row is live (then the put is dropped). */
static struct store_row *
store_row_slot(struct store *st, int64_t id)
{
	size_t i;
	int    found;

	i = store_id_search(st->rows, st->nrows, sizeof(*st->rows), id, &found);
	if (found)
		return (&st->rows[i]);
	if (st->nrows >= STORE_ROWS_MAX) {
		store_note_drop(st, store_now());
		if (store_row_evict(st) == -1)
			return (NULL);
		i = store_id_search(st->rows, st->nrows, sizeof(*st->rows), id,
		    &found);
	}
	return (store_insert((void **)&st->rows, &st->nrows, &st->rowscap,
	    sizeof(*st->rows), i));
}

void
store_put_term(struct store *st, const struct store_term *t)
{
	struct store_row *r;
	const char	 *state;
	int		  live;

	if (st->dbstate == STORE_DB_OFF)
		return;
	if (t->sid == NULL || (state = term_dbstate_name(t->state)) == NULL) {
		log_warnx("database %s: terminal %" PRId64 ": no session id or"
			  " bad state %d; row not written",
		    st->path, t->id, (int)t->state);
		return;
	}
	/* A live row is kept for re-puts; every other state is final. */
	live = t->state == TERM_DB_RUNNING;
	if ((r = store_row_slot(st, t->id)) == NULL) {
		/* A live terminal's row: asked for again once writes work. */
		st->dropped_rows++;
		st->rewrite = 1;
		return;
	}
	r->id = t->id;
	store_setstr(&r->sid, t->sid);
	store_setstr(&r->owner, t->owner);
	store_setstr(&r->workspace, t->workspace);
	store_setstr(&r->end_reason, t->end_reason);
	r->state = state;
	r->live = live;
	r->pid = t->pid;
	r->rows = t->rows;
	r->cols = t->cols;
	r->subscribers = t->subscribers;
	r->has_exit_code = t->has_exit_code;
	r->exit_code = t->exit_code;
	r->started_at = t->started_at;
	r->last_activity = t->last_activity;
	r->unwatched_since = t->unwatched_since;
	r->ended_at = t->ended_at;
	r->bytes_in = t->bytes_in;
	r->bytes_out = t->bytes_out;
	r->hash = store_row_hash(r);
	r->bad = 0;
}

/* Copy s (bounded) into the event's buffer at *p; NULL stays NULL. */
static const char *
store_ev_str(char **p, const char *s, size_t n)
{
	const char *start = *p;

	if (s == NULL)
		return (NULL);
	memcpy(*p, s, n);
	(*p)[n] = '\0';
	*p += n + 1;
	return (start);
}

/* One event's copy, its strings bounded as they are written. */
static struct store_ev *
store_ev_new(double at, const char *sid, int64_t term_id, const char *owner,
    const char *kind, const char *actor, const char *detail)
{
	struct store_ev *ev;
	size_t		 ls, lo, lk, la, ld;
	char		*p;

	ls = sid == NULL ? 0 : store_textlen(sid, STORE_TEXT_MAX);
	lo = owner == NULL ? 0 : store_textlen(owner, STORE_TEXT_MAX);
	lk = store_textlen(kind, STORE_TEXT_MAX);
	la = actor == NULL ? 0 : store_textlen(actor, STORE_TEXT_MAX);
	ld = detail == NULL ? 0 : store_textlen(detail, STORE_TEXT_MAX);
	ev = xmalloc(sizeof(*ev) + ls + lo + lk + la + ld + 5);
	memset(ev, 0, sizeof(*ev));
	p = ev->buf;
	ev->at = at;
	ev->term_id = term_id;
	ev->sid = store_ev_str(&p, sid, ls);
	ev->owner = store_ev_str(&p, owner, lo);
	ev->kind = store_ev_str(&p, kind, lk);
	ev->actor = store_ev_str(&p, actor, la);
	ev->detail = store_ev_str(&p, detail, ld);
	return (ev);
}

void
store_set_committed(void (*cb)(const struct store_done *))
{
	store_committed_cb = cb;
}

/* The transaction that wrote the done list did not commit: its events
 * are told of when a later one writes them again. */
static void
store_done_clear(struct store *st)
{
	struct store_ev *ev;

	while ((ev = STAILQ_FIRST(&st->done)) != NULL) {
		STAILQ_REMOVE_HEAD(&st->done, entry);
		free(ev);
	}
}

/* After a commit: every event it wrote, in seq order, to the hook. */
static void
store_done_report(struct store *st)
{
	struct store_done d;
	struct store_ev	 *ev;

	STAILQ_FOREACH (ev, &st->done, entry) {
		d.seq = ev->seq;
		d.at = ev->at;
		d.sid = ev->sid;
		d.term_id = ev->term_id;
		d.owner = ev->owner;
		d.kind = ev->kind;
		d.actor = ev->actor;
		d.detail = ev->detail;
		store_committed_cb(&d);
	}
	store_done_clear(st);
}

void
store_event(struct store *st, double at, const char *sid, int64_t term_id,
    enum term_event ev, const char *actor, const char *detail)
{
	store_event_owned(st, at, sid, term_id, NULL, ev, actor, detail);
}

void
store_event_owned(struct store *st, double at, const char *sid, int64_t term_id,
    const char *owner, enum term_event ev, const char *actor,
    const char *detail)
{
	struct store_ev *e;
	const char *kind = term_event_name(ev);

	if (st->dbstate == STORE_DB_OFF)
		return;
	if (kind == NULL) {
		log_warnx("database %s: event without a kind not written",
		    st->path);
		return;
	}
	if (st->nevents >= STORE_EVENTS_MAX) {
		store_note_drop(st, at);
		st->dropped_events++;
		return;
	}
	e = store_ev_new(at, sid, term_id, owner, kind, actor, detail);
	STAILQ_INSERT_TAIL(&st->events, e, entry);
	st->nevents++;
}

static void
store_bind_time(sqlite3_stmt *stmt, int i, double t)
{
	if (t < 0)
		sqlite3_bind_null(stmt, i);
	else
		sqlite3_bind_double(stmt, i, t);
}

static void
store_bind_text(sqlite3_stmt *stmt, int i, const char *s)
{
	/* A NULL pointer binds SQL NULL. */
	sqlite3_bind_text(stmt, i, s, -1, SQLITE_STATIC);
}

static int64_t
store_u64(uint64_t v)
{
	return (v > INT64_MAX ? INT64_MAX : (int64_t)v);
}

/* Step a write; SQLITE_DONE, or the error (the statement is reset). */
static int
store_step(sqlite3_stmt *stmt)
{
	int rc;

	rc = sqlite3_step(stmt);
	sqlite3_reset(stmt);
	return (rc);
}

static int
store_write_row(struct store *st, struct store_row *r)
{
	sqlite3_stmt *s = st->st_touch;
	int	      rc;

	if (store_seen_same(st, r)) {
		sqlite3_bind_int64(s, 1, r->id);
		sqlite3_bind_int(s, 2, r->rows);
		sqlite3_bind_int(s, 3, r->cols);
		store_bind_time(s, 4, r->last_activity);
		sqlite3_bind_int(s, 5, r->subscribers);
		store_bind_time(s, 6, r->unwatched_since);
		sqlite3_bind_int64(s, 7, store_u64(r->bytes_in));
		sqlite3_bind_int64(s, 8, store_u64(r->bytes_out));
		/* No row: an operator deleted it; the upsert puts it back. */
		if ((rc = store_step(s)) != SQLITE_DONE ||
		    sqlite3_changes(st->db) > 0)
			return (rc);
	}
	s = st->st_upsert;
	sqlite3_bind_int64(s, 1, r->id);
	store_bind_text(s, 2, r->sid);
	store_bind_text(s, 3, r->owner);
	if (r->pid > 0)
		sqlite3_bind_int(s, 4, r->pid);
	else
		sqlite3_bind_null(s, 4); /* not spawned (yet) */
	store_bind_text(s, 5, r->workspace);
	sqlite3_bind_int(s, 6, r->rows);
	sqlite3_bind_int(s, 7, r->cols);
	store_bind_time(s, 8, r->started_at);
	store_bind_time(s, 9, r->last_activity);
	sqlite3_bind_int(s, 10, r->subscribers);
	store_bind_time(s, 11, r->unwatched_since);
	store_bind_text(s, 12, r->state);
	store_bind_time(s, 13, r->ended_at);
	if (r->has_exit_code)
		sqlite3_bind_int(s, 14, r->exit_code);
	else
		sqlite3_bind_null(s, 14);
	store_bind_text(s, 15, r->end_reason);
	sqlite3_bind_int64(s, 16, store_u64(r->bytes_in));
	sqlite3_bind_int64(s, 17, store_u64(r->bytes_out));
	return (store_step(s));
}

/* One event, chained onto txhead at seq txnext (chain.c hashes what is
 * bound here, field for field); txhead moves only if the row went in. */
static int
store_write_event(struct store *st, double at, const char *sid, int64_t term_id,
    const char *owner, const char *kind, const char *actor, const char *detail)
{
	struct store_ev *ev;
	sqlite3_stmt	*s = st->st_event;
	struct chain_row r = { st->txnext, at, sid, term_id, kind, actor,
		detail };
	uint8_t		 h[CHAIN_HASH_LEN];
	char		 hex[CHAIN_HEX_LEN + 1], prev[CHAIN_HEX_LEN + 1];
	int		 rc;

	chain_row_hash(&r, st->txhead.hash, h);
	chain_hex(h, hex);
	chain_hex(st->txhead.hash, prev);
	sqlite3_bind_double(s, 1, at);
	store_bind_text(s, 2, sid);
	if (term_id != 0)
		sqlite3_bind_int64(s, 3, term_id);
	else
		sqlite3_bind_null(s, 3);
	store_bind_text(s, 4, kind);
	store_bind_text(s, 5, actor);
	store_bind_text(s, 6, detail);
	sqlite3_bind_int64(s, 7, r.seq);
	store_bind_text(s, 8, prev);
	store_bind_text(s, 9, hex);
	if ((rc = store_step(s)) == SQLITE_DONE) {
		st->txhead.known = 1;
		st->txhead.seq = r.seq;
		memcpy(st->txhead.hash, h, CHAIN_HASH_LEN);
		st->txnext++;
		if (store_committed_cb != NULL) {
			ev = store_ev_new(at, sid, term_id, owner, kind, actor,
			    detail);
			ev->seq = r.seq;
			STAILQ_INSERT_TAIL(&st->done, ev, entry);
		}
	}
	return (rc);
}

/* A prune (chaindb_prune) may remove ptyd's head row itself: then its
 * event is the next seq and follows the head's hash. */
static int
store_chain_pruned(const struct store *st, sqlite3_stmt *s,
    const uint8_t prev[CHAIN_HASH_LEN])
{
	const char *kind = (const char *)sqlite3_column_text(s, 4);

	return (sqlite3_column_int64(s, 0) == st->head.seq + 1 &&
	    kind != NULL && strcmp(kind, term_event_name(TERM_EV_PRUNE)) == 0 &&
	    memcmp(prev, st->head.hash, CHAIN_HASH_LEN) == 0);
}

/* The n-th row of the tail from ptyd's head on, last the row before it:
 * NULL if it is what it should be (its hash in stored), else what. */
static const char *
store_chain_row(const struct store *st, sqlite3_stmt *s, int n,
    const struct store_head *last, uint8_t stored[CHAIN_HASH_LEN])
{
	uint8_t prev[CHAIN_HASH_LEN], calc[CHAIN_HASH_LEN];
	int64_t id = sqlite3_column_int64(s, 0);

	if (chaindb_col_hash(s, CHAINDB_COL_HASH, stored) == -1 ||
	    chaindb_col_hash(s, CHAINDB_COL_PREV, prev) == -1)
		return (n == 0 ? "changed" : "foreign");
	chaindb_row_hash(s, prev, calc);
	if (memcmp(calc, stored, CHAIN_HASH_LEN) != 0)
		return (n == 0 && id == st->head.seq ? "changed" : "foreign");
	if (n == 0 && id == st->head.seq)
		return (memcmp(stored, st->head.hash, CHAIN_HASH_LEN) != 0 ?
			"changed" :
			NULL);
	if (n == 0)
		return (store_chain_pruned(st, s, prev) ? NULL : "missing");
	if (id != last->seq + 1 ||
	    memcmp(prev, last->hash, CHAIN_HASH_LEN) != 0)
		return ("foreign");
	return (NULL);
}

/*
 * Whether the file's tail, from ptyd's head on, is what ptyd wrote: the
 * head row there, unchanged (recomputed from its fields), and any row
 * after it chained properly onto it (ptydctl prune's event).  NULL if so
 * (txhead is then the last of them), else what was found.
 */
static const char *
store_chain_tail(struct store *st, int *rcp)
{
	sqlite3_stmt	 *s = st->st_tail;
	struct store_head last = st->head;
	uint8_t		  stored[CHAIN_HASH_LEN];
	const char	 *found = NULL;
	int		  n, rc;

	/* Seq 0, the empty chain: every row must follow the genesis. */
	n = st->head.seq == 0 ? 1 : 0;
	sqlite3_bind_int64(s, 1, st->head.seq);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if ((found = store_chain_row(st, s, n, &last, stored)) != NULL)
			break;
		last.seq = sqlite3_column_int64(s, 0);
		memcpy(last.hash, stored, CHAIN_HASH_LEN);
		n++;
	}
	*rcp = rc;
	sqlite3_reset(s);
	if (found == NULL && n == 0)
		found = "missing";
	else if (found == NULL && n >= 65)
		found = "foreign"; /* more than a prune writes */
	if (found == NULL)
		st->txhead = last;
	return (found);
}

/*
 * At the start of each flush's transaction: is ptyd's head still the
 * file's?  If its own last row was changed or removed, that is told to
 * the anchors and logged, and a `tamper` event continues the chain from
 * what ptyd wrote: honest, and verify sees the break there.  SQLITE_DONE,
 * or the error that fails the flush.
 */
static int
store_chain_check(struct store *st, double now)
{
	const char *found;
	char	    detail[256], hex[CHAIN_HEX_LEN + 1];
	int64_t	    max;
	int	    rc;

	st->txhead = st->head;
	found = store_chain_tail(st, &rc);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return (rc);
	if (store_db_int(st->db, store_sql_maxev, &max) == -1)
		return (SQLITE_ERROR);
	st->txnext = (max > st->txhead.seq ? max : st->txhead.seq) + 1;
	if (found == NULL)
		return (SQLITE_DONE);
	audit_tamper(st->head.seq, st->head.hash, found, now);
	chain_hex(st->head.hash, hex);
	snprintf(detail, sizeof(detail),
	    "the last event ptyd wrote, seq %" PRId64 " (hash %.16s...), is %s"
	    " in the database; the chain goes on from it here",
	    st->head.seq, hex, found);
	return (store_write_event(st, now, NULL, 0, NULL,
	    term_event_name(TERM_EV_TAMPER), NULL, detail));
}

/*
 * A constraint failure belongs to one row or event (a caller's bug, say a
 * NULL start time): it is logged and dropped at commit, so it cannot hold
 * every later flush hostage.  Anything else fails the whole flush.
 */
static int
store_refused(struct store *st, int rc, const char *what, int64_t id)
{
	if ((rc & 0xff) != SQLITE_CONSTRAINT)
		return (0);
	log_warnx("database %s: %s %" PRId64 " refused, dropped: %s", st->path,
	    what, id, sqlite3_errmsg(st->db));
	return (1);
}

/* The pending events, the oldest first, ev_max of them at most (0: all);
 * how many in ev_written.  SQLITE_DONE, or the error that fails the
 * flush. */
static int
store_write_events(struct store *st)
{
	struct store_ev *ev;
	int		 rc;

	st->ev_written = 0;
	STAILQ_FOREACH (ev, &st->events, entry) {
		if (st->ev_max > 0 && st->ev_written == st->ev_max)
			break;
		st->ev_written++;
		rc = store_write_event(st, ev->at, ev->sid, ev->term_id,
		    ev->owner, ev->kind, ev->actor, ev->detail);
		if (rc == SQLITE_DONE)
			continue;
		/* A refused event is dropped with the rest at commit. */
		if (!store_refused(st, rc, "event of terminal", ev->term_id))
			return (rc);
	}
	return (SQLITE_DONE);
}

/* One transaction: every dirty row, every event, then the markers. */
static int
store_write(struct store *st, double now)
{
	struct store_row *r;
	char		  detail[256];
	size_t		  i;
	int		  rc;

	store_done_clear(st);
	if ((rc = store_step(st->st_begin)) != SQLITE_DONE)
		goto fail;
	if ((rc = store_chain_check(st, now)) != SQLITE_DONE)
		goto fail;
	for (i = 0; i < st->nrows; i++) {
		r = &st->rows[i];
		if ((rc = store_write_row(st, r)) == SQLITE_DONE)
			continue;
		if (!store_refused(st, rc, "terminal", r->id))
			goto fail;
		r->bad = 1;
	}
	if ((rc = store_write_events(st)) != SQLITE_DONE)
		goto fail;
	if ((rc = store_write_recs(st)) != SQLITE_DONE)
		goto fail;
	if (st->dropped_events > 0 || st->dropped_rows > 0) {
		snprintf(detail, sizeof(detail),
		    "dropped %" PRIu64 " events,"
		    " %" PRIu64 " terminal rows: the database was unavailable"
		    " and the pending queue full (%d events, %d rows)",
		    st->dropped_events, st->dropped_rows, STORE_EVENTS_MAX,
		    STORE_ROWS_MAX);
		rc = store_write_event(st, st->dropped_at, NULL, 0, NULL,
		    term_event_name(TERM_EV_DROPPED), NULL, detail);
		if (rc != SQLITE_DONE)
			goto fail;
	}
	if (st->recreated) {
		snprintf(detail, sizeof(detail),
		    "the database file was"
		    " deleted, moved or replaced under ptyd; %zu live terminals"
		    " rewritten, earlier history is not here",
		    store_nlive(st));
		rc = store_write_event(st, now, NULL, 0, NULL,
		    term_event_name(TERM_EV_RECREATED), NULL, detail);
		if (rc != SQLITE_DONE)
			goto fail;
	}
	if ((rc = store_step(st->st_commit)) != SQLITE_DONE)
		goto fail;
	store_chain_committed(st, now);
	store_done_report(st);
	return (0);
fail:
	store_done_clear(st);
	store_cause(st, "%s", sqlite3_errmsg(st->db));
	if (!sqlite3_get_autocommit(st->db))
		store_step(st->st_rollback);
	return (rc == SQLITE_DONE || rc == SQLITE_OK ? SQLITE_ERROR : rc);
}

/* After a commit: forget what was written; remember which live rows are
 * in the database, and with which identity columns. */
static void
store_written(struct store *st)
{
	struct store_row *r;
	size_t		  i;

	for (i = 0; i < st->nrows; i++) {
		r = &st->rows[i];
		if (r->live && !r->bad)
			store_seen_set(st, r->id, r->hash);
		else
			store_seen_del(st, r->id);
		store_row_clear(r);
	}
	st->nrows = 0;
	st->nrecs = 0;
	store_queue_drop(st, st->ev_written);
}

/*
 * A file unlinked or renamed while open still takes our writes, where
 * nobody will ever read them.  Checked at every flush (one stat), so an
 * idle ptyd also notices and rewrites its live state.  1 if it moved: the
 * connection is closed and every row asked for again.
 */
static int
store_check_moved(struct store *st)
{
	int moved = 0;

	if (st->db == NULL ||
	    sqlite3_file_control(st->db, "main", SQLITE_FCNTL_HAS_MOVED,
		&moved) != SQLITE_OK ||
	    !moved)
		return (0);
	log_warnx("database %s was deleted, moved or replaced: writing a new"
		  " one with every terminal ptyd holds",
	    st->path);
	/*
	 * If it was only renamed (archived), the moved file should hold
	 * everything: SQLite will not checkpoint a moved file on close, and
	 * its WAL goes by the old name.
	 */
	sqlite3_wal_checkpoint_v2(st->db, "main", SQLITE_CHECKPOINT_TRUNCATE,
	    NULL, NULL);
	store_db_close(st);
	store_mark_all(st);
	st->recreated = 1;
	return (1);
}

int
store_rewrite_due(struct store *st)
{
	int due;

	if (st->dbstate == STORE_DB_OFF)
		return (0);
	(void)store_check_moved(st);
	due = st->rewrite;
	st->rewrite = 0;
	return (due);
}

int
store_flush_some(struct store *st, double now, size_t max_events)
{
	int rc;

	st->ev_max = max_events;
	rc = store_flush(st, now);
	st->ev_max = 0;
	return (rc);
}

int
store_flush(struct store *st, double now)
{
	int rc;

	if (st->dbstate == STORE_DB_OFF)
		return (0);
	/* mirror.c asks store_rewrite_due first, which checks the same and
	 * puts every row before this writes the recreated marker. */
	(void)store_check_moved(st);
	audit_tick(now);
	if (!store_pending(st))
		return (0);
	if (store_attempt(st, now) == -1)
		return (-1);
	if ((rc = store_write(st, now)) != 0) {
		store_fail(st, rc);
		return (-1);
	}
	store_written(st);
	if (st->failing) {
		log_info("database %s: writing again after %" PRIu64 " failed"
			 " attempts",
		    st->path, st->outage_errors);
		st->failing = 0;
		st->outage_errors = 0;
	}
	return (0);
}

void
store_close(struct store *st)
{
	if (st == NULL)
		return;
	if (store_pending(st)) {
		/* The loop is ending: a short wait for a lock is fine now. */
		st->busy_ms = STORE_CLOSE_WAIT_MS;
		if (st->db != NULL)
			sqlite3_busy_timeout(st->db, st->busy_ms);
		if (store_flush(st, store_now()) == -1)
			log_warnx("database %s: %zu rows and %zu events not"
				  " written",
			    st->path, st->nrows, st->nevents);
	}
	audit_stop(store_now());
	store_db_close(st);
	store_discard(st);
	store_done_clear(st);
	free(st->path);
	free(st);
}

uint64_t
store_errors(const struct store *st)
{
	return (st->errors);
}

int
store_failing(const struct store *st)
{
	return (st->dbstate == STORE_DB_OFF ||
	    st->outage_errors >= STORE_FAILING_AFTER);
}

uint64_t
store_lost(const struct store *st)
{
	return (st->lost);
}

int
store_pending(const struct store *st)
{
	if (st->dbstate == STORE_DB_OFF)
		return (0);
	return (st->nrows > 0 || st->nevents > 0 || st->dropped_events > 0 ||
	    st->dropped_rows > 0 || st->recreated || st->nrecs > 0);
}

/* ---- recordings (DESIGN 4) ---------------------------------------------- */

#define STORE_RECS_MAX 65536 /* pending recordings' rows */

static const char store_sql_rec[] =
    "INSERT INTO recordings (id, terminal_id, session_id, owner, part, file,"
    " started_at, ended_at, bytes, sha256, state, cut_reason, cols, rows)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)"
    " ON CONFLICT (id) DO UPDATE SET ended_at = ?8, bytes = ?9,"
    " sha256 = ?10, state = ?11, cut_reason = ?12";

static const char store_sql_recs[] =
    "SELECT id, terminal_id, session_id, owner, part, file, started_at,"
    " ended_at, bytes, sha256, state, cut_reason, cols, rows"
    " FROM recordings ORDER BY id";

void
store_put_rec(struct store *st, const struct store_rec *r)
{
	size_t i;

	if (st->dbstate == STORE_DB_OFF)
		return;
	for (i = 0; i < st->nrecs; i++)
		if (st->recs[i].id == r->id) {
			st->recs[i] = *r;
			return;
		}
	if (st->nrecs == STORE_RECS_MAX) {
		st->dropped_rows++;
		return;
	}
	if (st->nrecs == st->recscap) {
		st->recscap = st->recscap != 0 ? st->recscap * 2 : 16;
		st->recs = xreallocarray(st->recs, st->recscap,
		    sizeof(*st->recs));
	}
	st->recs[st->nrecs++] = *r;
}

static void
store_bind_opt(sqlite3_stmt *s, int i, const char *v)
{
	store_bind_text(s, i, v[0] != '\0' ? v : NULL);
}

/* Inside store_write's transaction: every pending row.  Recordings are
 * few, so the statement is made here each time. */
static int
store_write_recs(struct store *st)
{
	sqlite3_stmt	       *s = NULL;
	const struct store_rec *r;
	size_t			i;
	int			rc = SQLITE_DONE;

	if (st->nrecs == 0)
		return (SQLITE_DONE);
	if (sqlite3_prepare_v2(st->db, store_sql_rec, -1, &s, NULL) !=
	    SQLITE_OK)
		return (sqlite3_errcode(st->db));
	for (i = 0; i < st->nrecs; i++) {
		r = &st->recs[i];
		sqlite3_bind_int64(s, 1, r->id);
		sqlite3_bind_int64(s, 2, r->terminal_id);
		store_bind_text(s, 3, r->sid);
		store_bind_text(s, 4, r->owner);
		sqlite3_bind_int(s, 5, (int)r->part);
		store_bind_text(s, 6, r->file);
		store_bind_time(s, 7, r->started_at);
		store_bind_time(s, 8, r->ended_at);
		sqlite3_bind_int64(s, 9, store_u64(r->bytes));
		store_bind_opt(s, 10, r->sha256);
		store_bind_text(s, 11, r->state);
		store_bind_opt(s, 12, r->cut_reason);
		sqlite3_bind_int(s, 13, r->cols);
		sqlite3_bind_int(s, 14, r->rows);
		if ((rc = store_step(s)) != SQLITE_DONE &&
		    !store_refused(st, rc, "recording", r->id))
			break;
		rc = SQLITE_DONE;
	}
	sqlite3_finalize(s);
	return (rc);
}

static void
store_col_str(sqlite3_stmt *s, int i, char *out, size_t size)
{
	const char *v = (const char *)sqlite3_column_text(s, i);

	snprintf(out, size, "%s", v != NULL ? v : "");
}

static double
store_col_time(sqlite3_stmt *s, int i)
{
	return (sqlite3_column_type(s, i) == SQLITE_NULL ?
		-1 :
		sqlite3_column_double(s, i));
}

int
store_recs_load(struct store *st, void (*cb)(const struct store_rec *, void *),
    void		     *arg)
{
	sqlite3_stmt	*s = NULL;
	struct store_rec r;
	int		 rc;

	if (st->dbstate != STORE_DB_READY ||
	    sqlite3_prepare_v2(st->db, store_sql_recs, -1, &s, NULL) !=
		SQLITE_OK)
		return (-1);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		memset(&r, 0, sizeof(r));
		r.id = sqlite3_column_int64(s, 0);
		r.terminal_id = sqlite3_column_int64(s, 1);
		store_col_str(s, 2, r.sid, sizeof(r.sid));
		store_col_str(s, 3, r.owner, sizeof(r.owner));
		r.part = (unsigned int)sqlite3_column_int(s, 4);
		store_col_str(s, 5, r.file, sizeof(r.file));
		r.started_at = store_col_time(s, 6);
		r.ended_at = store_col_time(s, 7);
		r.bytes = (uint64_t)sqlite3_column_int64(s, 8);
		store_col_str(s, 9, r.sha256, sizeof(r.sha256));
		store_col_str(s, 10, r.state, sizeof(r.state));
		store_col_str(s, 11, r.cut_reason, sizeof(r.cut_reason));
		r.cols = sqlite3_column_int(s, 12);
		r.rows = sqlite3_column_int(s, 13);
		cb(&r, arg);
	}
	sqlite3_finalize(s);
	return (rc == SQLITE_DONE ? 0 : -1);
}
