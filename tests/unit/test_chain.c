/*
 * test_chain.c -- the audit log's hash chain (ptyd/chain.c), its anchor
 * lines (ptyd/anchor.c), ptyd's side of it (store.c, audit.c) and the
 * verifier's verdicts (ptyd/chaindb.c).
 *
 * Issue 29, item 4: a web user's shell, running as the account that owns
 * ptyd.db, deleted and edited its own audit rows and nothing showed.  Each
 * verdict test below plays one such edit on rows the real store wrote, and
 * pins what ptydctl audit verify says of it.
 */
#include <criterion/criterion.h>

#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nettle/sha2.h>
#include <sqlite3.h>

#include "anchor.h"
#include "audit.h"
#include "chain.h"
#include "chaindb.h"
#include "store.h"
#include "unit.h"

static char dir[64];
static char dbpath[128];

static void
setup(void)
{
	unit_tmpdir(dir, sizeof(dir), "test_chain");
	snprintf(dbpath, sizeof(dbpath), "%s/ptyd.db", dir);
}

static void
teardown(void)
{
	audit_done();
	unit_rmtree(dir);
}

TestSuite(chain, .init = setup, .fini = teardown);
TestSuite(verify, .init = setup, .fini = teardown);

/* ---- the encoding ------------------------------------------------------ */

static void
be64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (56 - 8 * i));
}

static size_t
put_text(uint8_t *p, const char *s)
{
	size_t n = strlen(s);

	p[0] = 3;
	p[1] = (uint8_t)(n >> 24);
	p[2] = (uint8_t)(n >> 16);
	p[3] = (uint8_t)(n >> 8);
	p[4] = (uint8_t)n;
	memcpy(p + 5, s, n);
	return (5 + n);
}

/* The encoding written out byte by byte, as DESIGN 7 states it: a change
 * to chain.c that would orphan every chain ever written fails here. */
Test(chain, row_hash_is_sha256_of_the_documented_encoding)
{
	struct chain_row  r = { 7, 1.5, "tab", 0, "input", NULL, "3 bytes" };
	struct sha256_ctx sha;
	uint8_t		  prev[CHAIN_HASH_LEN], buf[512], want[CHAIN_HASH_LEN],
	    got[CHAIN_HASH_LEN];
	uint64_t bits;
	size_t	 n = 0;

	memset(prev, 0xab, sizeof(prev));
	n += put_text(buf + n, "ptyd-audit-chain-1");
	memcpy(buf + n, prev, sizeof(prev));
	n += sizeof(prev);
	buf[n++] = 1;
	be64(buf + n, 7);
	n += 8;
	buf[n++] = 2;
	memcpy(&bits, &r.at, sizeof(bits));
	be64(buf + n, bits);
	n += 8;
	n += put_text(buf + n, "tab");
	buf[n++] = 0; /* terminal_id NULL */
	n += put_text(buf + n, "input");
	buf[n++] = 0; /* actor NULL */
	n += put_text(buf + n, "3 bytes");
	sha256_init(&sha);
	sha256_update(&sha, n, buf);
	sha256_digest(&sha, sizeof(want), want);
	chain_row_hash(&r, prev, got);
	cr_assert_eq(memcmp(got, want, sizeof(want)), 0);
}

static void
hash_of(const struct chain_row *r, uint8_t out[CHAIN_HASH_LEN])
{
	chain_row_hash(r, chain_genesis, out);
}

Test(chain, no_two_different_rows_encode_alike)
{
	struct chain_row a = { 1, 2.0, "ab", 0, "c", NULL, NULL };
	struct chain_row b = a;
	uint8_t		 ha[CHAIN_HASH_LEN], hb[CHAIN_HASH_LEN];

	hash_of(&a, ha);
	/* A byte moved across a field boundary. */
	b.sid = "a";
	b.kind = "bc";
	hash_of(&b, hb);
	cr_expect_neq(memcmp(ha, hb, sizeof(ha)), 0);
	/* NULL against the empty string. */
	b = a;
	b.actor = "";
	hash_of(&b, hb);
	cr_expect_neq(memcmp(ha, hb, sizeof(ha)), 0);
	/* Every field counts, the seq and the previous hash included. */
	b = a;
	b.seq = 2;
	hash_of(&b, hb);
	cr_expect_neq(memcmp(ha, hb, sizeof(ha)), 0);
	b = a;
	b.term_id = 9;
	hash_of(&b, hb);
	cr_expect_neq(memcmp(ha, hb, sizeof(ha)), 0);
	b = a;
	b.at = 2.000001;
	hash_of(&b, hb);
	cr_expect_neq(memcmp(ha, hb, sizeof(ha)), 0);
	chain_row_hash(&a, ha, hb);
	cr_expect_neq(memcmp(ha, hb, sizeof(ha)), 0);
}

Test(chain, an_integer_and_its_text_hash_apart)
{
	struct chain_ctx c;
	uint8_t		 h1[CHAIN_HASH_LEN], h2[CHAIN_HASH_LEN];

	chain_begin(&c, chain_genesis);
	chain_int(&c, 5);
	chain_end(&c, h1);
	chain_begin(&c, chain_genesis);
	chain_text(&c, "5", 1);
	chain_end(&c, h2);
	cr_assert_neq(memcmp(h1, h2, sizeof(h1)), 0);
}

Test(chain, hex_round_trips_and_refuses_what_is_not_a_hash)
{
	uint8_t h[CHAIN_HASH_LEN], back[CHAIN_HASH_LEN];
	char	hex[CHAIN_HEX_LEN + 1];
	size_t	i;

	for (i = 0; i < sizeof(h); i++)
		h[i] = (uint8_t)(i * 37);
	chain_hex(h, hex);
	cr_assert_eq(strlen(hex), CHAIN_HEX_LEN);
	cr_assert_eq(chain_unhex(hex, strlen(hex), back), 0);
	cr_assert_eq(memcmp(h, back, sizeof(h)), 0);
	cr_assert_eq(chain_unhex(hex, CHAIN_HEX_LEN - 1, back), -1);
	hex[3] = 'g';
	cr_assert_eq(chain_unhex(hex, CHAIN_HEX_LEN, back), -1);
}

Test(chain, anchor_lines_round_trip_through_a_syslog_prefix)
{
	struct anchor a, b;
	char	      line[ANCHOR_LINE_MAX], syslog[ANCHOR_LINE_MAX + 64];
	char	      db[256];

	memset(&a, 0, sizeof(a));
	a.kind = ANCHOR_TAMPER;
	a.seq = 42;
	a.has_hash = 1;
	memset(a.hash, 0x5c, sizeof(a.hash));
	snprintf(a.found, sizeof(a.found), "missing");
	cr_assert(
	    anchor_format(line, sizeof(line), &a, "/srv/my state/p%.db") > 0);
	cr_assert_not_null(strstr(line, "db=/srv/my%20state/p%25.db "), "%s",
	    line);
	snprintf(syslog, sizeof(syslog),
	    "Jan  1 00:00:00 host ptyd-audit[12]: %s\n", line);
	cr_assert_eq(anchor_parse(syslog, &b, db, sizeof(db)), 0);
	cr_assert_str_eq(db, "/srv/my state/p%.db");
	cr_assert_eq(b.kind, ANCHOR_TAMPER);
	cr_assert_eq(b.seq, 42);
	cr_assert_eq(memcmp(a.hash, b.hash, sizeof(a.hash)), 0);
	cr_assert_str_eq(b.found, "missing");
	cr_assert_eq(anchor_parse("sshd[1]: audit of nothing", &b, db,
			 sizeof(db)),
	    -1);
	cr_assert_eq(anchor_parse("ptyd-audit: audit head db=/x seq=3 hash=zz",
			 &b, db, sizeof(db)),
	    -1);
}

Test(chain, the_setting_takes_syslog_none_and_an_absolute_unix_path)
{
	struct anchor_dest d;

	cr_assert_eq(anchor_dest_parse("syslog", &d), 0);
	cr_assert_str_eq(d.path, "/dev/log");
	cr_assert_eq(anchor_dest_parse("none", &d), 0);
	cr_assert_eq(d.to, ANCHOR_TO_NONE);
	cr_assert_eq(anchor_dest_parse("unix:/run/a.sock", &d), 0);
	cr_assert_str_eq(d.path, "/run/a.sock");
	cr_assert_eq(anchor_dest_parse("unix:relative", &d), -1);
	cr_assert_eq(anchor_dest_parse("udp:1.2.3.4", &d), -1);
}

/* ---- rows the real store wrote ----------------------------------------- */

/* n events through the store, as ptyd writes them; the store closed. */
static void
write_events(int n, double at)
{
	struct store *st;
	char	      detail[32];
	int	      i;

	st = store_open(dbpath, at);
	cr_assert_not_null(st);
	for (i = 0; i < n; i++) {
		snprintf(detail, sizeof(detail), "%d bytes", i + 1);
		store_event(st, at + i, "tab", 1, TERM_EV_INPUT,
		    "mallory@10.0.0.9", detail);
	}
	cr_assert_eq(store_flush(st, at + n), 0);
	store_close(st);
}

static sqlite3 *
db_open(void)
{
	sqlite3 *db = NULL;

	cr_assert_eq(sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READWRITE, NULL),
	    SQLITE_OK);
	return (db);
}

/* What an account can do to its own file: the triggers go first. */
static void
db_exec(sqlite3 *db, const char *sql)
{
	char *err = NULL;

	cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, &err), SQLITE_OK,
	    "%s: %s", sql, err != NULL ? err : "");
}

static void
db_untrigger(sqlite3 *db)
{
	db_exec(db,
	    "DROP TRIGGER terminal_events_append_only;"
	    "DROP TRIGGER terminal_events_no_delete;");
}

/* The anchor ptyd sends for row seq as it is in the file now. */
static struct anchor
anchor_now(sqlite3 *db, enum anchor_kind kind, int64_t seq)
{
	struct anchor a;
	sqlite3_stmt *s = NULL;

	memset(&a, 0, sizeof(a));
	a.kind = kind;
	a.seq = seq;
	a.has_hash = 1;
	cr_assert_eq(sqlite3_prepare_v2(db,
			 "SELECT hash FROM terminal_events WHERE id = ?1", -1,
			 &s, NULL),
	    SQLITE_OK);
	sqlite3_bind_int64(s, 1, seq);
	cr_assert_eq(sqlite3_step(s), SQLITE_ROW, "row %" PRId64, seq);
	cr_assert_eq(chaindb_col_hash(s, 0, a.hash), 0);
	sqlite3_finalize(s);
	return (a);
}

static void
verify(sqlite3 *db, const struct anchor *a, size_t n, int have,
    struct chaindb_report *r)
{
	const char *why = NULL;

	cr_assert_eq(chaindb_verify(db, a, n, have, r, &why), 0, "%s",
	    why != NULL ? why : "");
}

/* Is there a problem of kind at seq? */
static int
has_problem(const struct chaindb_report *r, enum chaindb_break kind,
    int64_t seq)
{
	size_t i;

	for (i = 0; i < r->nproblems; i++)
		if (r->problems[i].kind == kind && r->problems[i].seq == seq)
			return (1);
	return (0);
}

static const char *
problems(const struct chaindb_report *r)
{
	static char buf[4096];
	size_t	    i, n = 0;

	buf[0] = '\0';
	for (i = 0; i < r->nproblems && n < sizeof(buf) - 300; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n,
		    "%s@%" PRId64 ": %s\n",
		    chaindb_break_name(r->problems[i].kind), r->problems[i].seq,
		    r->problems[i].msg);
	return (buf);
}

Test(chain, rows_the_store_writes_recompute_from_the_file)
{
	struct chaindb_report r;
	sqlite3		     *db;

	write_events(5, unit_wall());
	db = db_open();
	verify(db, NULL, 0, 0, &r);
	cr_assert_eq(r.nproblems, 0, "%s", problems(&r));
	cr_assert_eq(r.rows, 5);
	cr_assert_eq(r.first_seq, 1);
	cr_assert_eq(r.last_seq, 5);
	chaindb_report_free(&r);
	sqlite3_close(db);
}

Test(verify, untouched_rows_are_consistent_with_their_anchors)
{
	struct chaindb_report r;
	struct anchor	      a[2];
	sqlite3		     *db;

	write_events(6, unit_wall());
	db = db_open();
	a[0] = anchor_now(db, ANCHOR_HEAD, 3);
	a[1] = anchor_now(db, ANCHOR_STOP, 6);
	verify(db, a, 2, 1, &r);
	cr_assert_eq(r.nproblems, 0, "%s", problems(&r));
	cr_assert_eq(r.anchored, 6);
	chaindb_report_free(&r);
	sqlite3_close(db);
}

Test(verify, an_edited_row_is_named_by_its_seq)
{
	struct chaindb_report r;
	struct anchor	      a;
	sqlite3		     *db;

	write_events(6, unit_wall());
	db = db_open();
	a = anchor_now(db, ANCHOR_HEAD, 6);
	db_untrigger(db);
	db_exec(db,
	    "UPDATE terminal_events SET detail = '1 bytes' WHERE id = 4");
	verify(db, &a, 1, 1, &r);
	cr_assert(has_problem(&r, CHAINDB_EDITED, 4), "%s", problems(&r));
	cr_assert_eq(r.nproblems, 1, "%s", problems(&r));
	chaindb_report_free(&r);
	/* Even with no anchor at all: the row no longer hashes to its hash. */
	verify(db, NULL, 0, 0, &r);
	cr_assert(has_problem(&r, CHAINDB_EDITED, 4), "%s", problems(&r));
	chaindb_report_free(&r);
	sqlite3_close(db);
}

Test(verify, a_row_deleted_from_the_middle_is_named_missing)
{
	struct chaindb_report r;
	struct anchor	      a;
	sqlite3		     *db;

	write_events(6, unit_wall());
	db = db_open();
	a = anchor_now(db, ANCHOR_HEAD, 6);
	/* The shell's own way in: a permit the trigger honours. */
	db_exec(db,
	    "INSERT INTO prune_permit VALUES (1e12);"
	    "DELETE FROM terminal_events WHERE id = 3;"
	    "DELETE FROM prune_permit;");
	verify(db, &a, 1, 1, &r);
	cr_assert(has_problem(&r, CHAINDB_MISSING, 3), "%s", problems(&r));
	cr_assert_eq(r.nproblems, 1, "%s", problems(&r));
	chaindb_report_free(&r);
	sqlite3_close(db);
}

Test(verify, rows_deleted_after_an_anchor_are_a_removed_tail)
{
	struct chaindb_report r;
	struct anchor	      a[2];
	sqlite3		     *db;

	write_events(8, unit_wall());
	db = db_open();
	a[0] = anchor_now(db, ANCHOR_HEAD, 4);
	a[1] = anchor_now(db, ANCHOR_HEAD, 8);
	db_untrigger(db);
	db_exec(db, "DELETE FROM terminal_events WHERE id >= 6");
	verify(db, a, 2, 1, &r);
	cr_assert(has_problem(&r, CHAINDB_TAIL, 6), "%s", problems(&r));
	chaindb_report_free(&r);
	/* Without the anchors, a shorter chain is still a whole one. */
	verify(db, NULL, 0, 0, &r);
	cr_assert_eq(r.nproblems, 0, "%s", problems(&r));
	chaindb_report_free(&r);
	sqlite3_close(db);
}

/* The attacker knows the encoding: after an edit, every later row's hash
 * is recomputed, and the file is consistent in itself again. */
static void
rechain_from(sqlite3 *db, int64_t from)
{
	sqlite3_stmt *s = NULL, *u = NULL;
	uint8_t	      prev[CHAIN_HASH_LEN], h[CHAIN_HASH_LEN];
	char	      hex[CHAIN_HEX_LEN + 1], phex[CHAIN_HEX_LEN + 1];

	cr_assert_eq(sqlite3_prepare_v2(db,
			 "SELECT " CHAINDB_COLS " FROM terminal_events"
			 " WHERE id >= ?1 - 1 ORDER BY id",
			 -1, &s, NULL),
	    SQLITE_OK);
	cr_assert_eq(sqlite3_prepare_v2(db,
			 "UPDATE terminal_events SET prev = ?1, hash = ?2"
			 " WHERE id = ?3",
			 -1, &u, NULL),
	    SQLITE_OK);
	sqlite3_bind_int64(s, 1, from);
	cr_assert_eq(sqlite3_step(s), SQLITE_ROW);
	cr_assert_eq(chaindb_col_hash(s, CHAINDB_COL_HASH, prev), 0);
	while (sqlite3_step(s) == SQLITE_ROW) {
		chaindb_row_hash(s, prev, h);
		chain_hex(prev, phex);
		chain_hex(h, hex);
		sqlite3_bind_text(u, 1, phex, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(u, 2, hex, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(u, 3, sqlite3_column_int64(s, 0));
		cr_assert_eq(sqlite3_step(u), SQLITE_DONE);
		sqlite3_reset(u);
		memcpy(prev, h, sizeof(prev));
	}
	sqlite3_finalize(s);
	sqlite3_finalize(u);
}

Test(verify, a_chain_recomputed_after_an_edit_contradicts_its_anchor)
{
	struct chaindb_report r;
	struct anchor	      a[2];
	sqlite3		     *db;

	write_events(6, unit_wall());
	db = db_open();
	a[0] = anchor_now(db, ANCHOR_HEAD, 2);
	a[1] = anchor_now(db, ANCHOR_HEAD, 5);
	db_untrigger(db);
	db_exec(db,
	    "UPDATE terminal_events SET actor = 'alice@10.0.0.1'"
	    " WHERE id = 3");
	rechain_from(db, 3);
	verify(db, NULL, 0, 0, &r);
	cr_assert_eq(r.nproblems, 0,
	    "consistent in itself: why anchors are needed: %s", problems(&r));
	chaindb_report_free(&r);
	verify(db, a, 2, 1, &r);
	cr_assert(has_problem(&r, CHAINDB_ANCHOR, 5), "%s", problems(&r));
	cr_assert_eq(r.nproblems, 1, "%s", problems(&r));
	cr_assert_eq(r.anchored, 2, "seq 2 still holds");
	chaindb_report_free(&r);
	sqlite3_close(db);
}

/* A prune as ptydctl makes it, with the anchors it sends. */
static void
prune(sqlite3 *db, double before, struct anchor a[2])
{
	struct chaindb_prune p;
	const char	    *why = NULL;

	db_exec(db, "BEGIN IMMEDIATE");
	cr_assert_eq(chaindb_prune(db, before, "root@ptydctl", &p, &why), 0,
	    "%s", why != NULL ? why : sqlite3_errmsg(db));
	db_exec(db, "COMMIT");
	memset(a, 0, 2 * sizeof(*a));
	a[0].kind = ANCHOR_PRUNE;
	a[0].seq = p.through;
	a[0].has_hash = p.has_hash;
	memcpy(a[0].hash, p.hash, CHAIN_HASH_LEN);
	a[1].kind = ANCHOR_HEAD;
	a[1].seq = p.seq;
	a[1].has_hash = 1;
	memcpy(a[1].hash, p.seq_hash, CHAIN_HASH_LEN);
}

Test(verify, a_prune_by_ptydctl_is_accepted_and_ptyd_chains_on)
{
	struct chaindb_report r;
	struct anchor	      a[6];
	struct store	     *st;
	double		      t0 = unit_wall() - 1000;
	sqlite3		     *db;

	write_events(6, t0);
	db = db_open();
	a[0] = anchor_now(db, ANCHOR_HEAD, 2);
	a[1] = anchor_now(db, ANCHOR_STOP, 6);
	prune(db, t0 + 3.5, &a[2]); /* the events at t0 .. t0 + 3 */
	cr_assert_eq(a[2].seq, 4);
	cr_assert_eq(a[3].seq, 7);
	/* ptyd starts again and goes on from the prune's event. */
	st = store_open(dbpath, t0 + 10);
	store_event(st, t0 + 10, "tab", 1, TERM_EV_INPUT, NULL, "1 bytes");
	cr_assert_eq(store_flush(st, t0 + 10), 0);
	store_close(st);
	a[4] = anchor_now(db, ANCHOR_HEAD, 8);
	verify(db, a, 5, 1, &r);
	cr_assert_eq(r.nproblems, 0, "%s", problems(&r));
	cr_assert_eq(r.pruned_through, 4);
	cr_assert_eq(r.anchored, 8);
	chaindb_report_free(&r);
	/* A second prune keeps the first one's event, and verifies too. */
	prune(db, t0 + 20, &a[4]);
	verify(db, a, 6, 1, &r);
	cr_assert_eq(r.nproblems, 0, "%s", problems(&r));
	chaindb_report_free(&r);
	sqlite3_close(db);
}

Test(verify, rows_removed_under_a_permit_without_a_prune_are_missing)
{
	struct chaindb_report r;
	struct anchor	      a[2];
	sqlite3		     *db;

	write_events(6, unit_wall());
	db = db_open();
	a[0] = anchor_now(db, ANCHOR_HEAD, 2);
	a[1] = anchor_now(db, ANCHOR_HEAD, 6);
	db_exec(db,
	    "INSERT INTO prune_permit VALUES (1e12);"
	    "DELETE FROM terminal_events WHERE id <= 3;"
	    "DELETE FROM prune_permit;");
	verify(db, a, 2, 1, &r);
	cr_assert(has_problem(&r, CHAINDB_MISSING, 2), "%s", problems(&r));
	chaindb_report_free(&r);
	/* Alone, the file still shows the hole: row 4 follows nothing. */
	verify(db, NULL, 0, 0, &r);
	cr_assert(has_problem(&r, CHAINDB_MISSING, 3), "%s", problems(&r));
	chaindb_report_free(&r);
	sqlite3_close(db);
}

Test(verify, two_anchors_that_disagree_are_a_forgery)
{
	struct chaindb_report r;
	struct anchor	      a[2];
	sqlite3		     *db;

	write_events(3, unit_wall());
	db = db_open();
	a[0] = anchor_now(db, ANCHOR_HEAD, 3);
	a[1] = a[0];
	a[1].hash[0] ^= 1;
	verify(db, a, 2, 1, &r);
	cr_assert(has_problem(&r, CHAINDB_CONFLICT, 3), "%s", problems(&r));
	chaindb_report_free(&r);
	sqlite3_close(db);
}

/* ---- ptyd's side: the head, its check, its anchors ----------------------- */

static int
collector(char *path, size_t size)
{
	struct sockaddr_un sun;
	int		   fd;

	snprintf(path, size, "%s/anchors.sock", dir);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	cr_assert(fd != -1);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	return (fd);
}

/* The next anchor line received, parsed; -1 if none waits. */
static int
collect(int fd, struct anchor *a)
{
	char	buf[ANCHOR_LINE_MAX + 128], db[256];
	ssize_t n;

	if ((n = recv(fd, buf, sizeof(buf) - 1, 0)) <= 0)
		return (-1);
	buf[n] = '\0';
	cr_assert_not_null(strstr(buf, "ptyd-audit["), "%s", buf);
	cr_assert_eq(anchor_parse(buf, a, db, sizeof(db)), 0, "%s", buf);
	cr_assert_str_eq(db, dbpath);
	return (0);
}

Test(chain, ptyd_anchors_its_head_at_start_interval_and_stop)
{
	struct anchor a;
	struct store *st;
	char	      sock[128], dest[160];
	double	      t = unit_wall();
	int	      fd;

	fd = collector(sock, sizeof(sock));
	snprintf(dest, sizeof(dest), "unix:%s", sock);
	cr_assert_eq(audit_init(dest, dbpath), 0);
	st = store_open(dbpath, t);
	cr_assert_eq(collect(fd, &a), 0);
	cr_assert_eq(a.kind, ANCHOR_START);
	cr_assert_eq(a.seq, 0, "a new file: the empty chain");
	cr_assert_eq(memcmp(a.hash, chain_genesis, CHAIN_HASH_LEN), 0);
	/* Within the interval: nothing; after it, the head. */
	store_event(st, t, "tab", 1, TERM_EV_START, NULL, NULL);
	cr_assert_eq(store_flush(st, t), 0);
	store_event(st, t + 1, "tab", 1, TERM_EV_INPUT, NULL, "1 bytes");
	cr_assert_eq(store_flush(st, t + 1), 0);
	cr_assert_eq(collect(fd, &a), -1);
	cr_assert_eq(store_flush(st, t + 1 + AUDIT_ANCHOR_INTERVAL), 0);
	cr_assert_eq(collect(fd, &a), 0);
	cr_assert_eq(a.kind, ANCHOR_HEAD);
	cr_assert_eq(a.seq, 2);
	store_close(st);
	cr_assert_eq(collect(fd, &a), 0);
	cr_assert_eq(a.kind, ANCHOR_STOP);
	cr_assert_eq(a.seq, 2);
	close(fd);
}

Test(chain, ptyd_seeing_its_head_row_gone_says_so_and_chains_on_honestly)
{
	struct chaindb_report r;
	struct anchor	      a[3];
	struct store	     *st;
	char		      sock[128], dest[160];
	double		      t = unit_wall();
	sqlite3		     *db;
	int		      fd;

	fd = collector(sock, sizeof(sock));
	snprintf(dest, sizeof(dest), "unix:%s", sock);
	cr_assert_eq(audit_init(dest, dbpath), 0);
	st = store_open(dbpath, t);
	store_event(st, t, "tab", 1, TERM_EV_START, NULL, NULL);
	store_event(st, t, "tab", 1, TERM_EV_INPUT, NULL, "9 bytes");
	cr_assert_eq(store_flush(st, t + AUDIT_ANCHOR_INTERVAL), 0);
	cr_assert_eq(collect(fd, &a[0]), 0); /* start, seq 0 */
	cr_assert_eq(collect(fd, &a[0]), 0);
	cr_assert_eq(a[0].kind, ANCHOR_HEAD);
	cr_assert_eq(a[0].seq, 2);
	db = db_open();
	db_untrigger(db);
	db_exec(db, "DELETE FROM terminal_events WHERE id = 2");
	store_event(st, t + 6, "tab", 1, TERM_EV_INPUT, NULL, "1 bytes");
	cr_assert_eq(store_flush(st, t + 6), 0);
	cr_assert_eq(collect(fd, &a[1]), 0);
	cr_assert_eq(a[1].kind, ANCHOR_TAMPER);
	cr_assert_eq(a[1].seq, 2);
	cr_assert_str_eq(a[1].found, "missing");
	store_close(st);
	cr_assert_eq(collect(fd, &a[2]), 0); /* stop */
	cr_assert_eq(a[2].kind, ANCHOR_STOP);
	verify(db, a, 3, 1, &r);
	cr_assert(has_problem(&r, CHAINDB_TAMPER, 2), "%s", problems(&r));
	cr_assert(has_problem(&r, CHAINDB_MISSING, 2), "%s", problems(&r));
	chaindb_report_free(&r);
	sqlite3_close(db);
	close(fd);
}

Test(chain, an_older_database_marks_where_its_chain_starts)
{
	struct chaindb_report r;
	struct store	     *st;
	sqlite3		     *db = NULL;
	double		      t = unit_wall();

	cr_assert_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
	db_exec(db,
	    "CREATE TABLE terminal_events (id INTEGER PRIMARY KEY"
	    " AUTOINCREMENT, at REAL NOT NULL, session_id TEXT, terminal_id"
	    " INTEGER, kind TEXT NOT NULL, actor TEXT, detail TEXT);"
	    "INSERT INTO terminal_events (at, kind) VALUES (1, 'start'),"
	    " (2, 'exit');"
	    "PRAGMA user_version = 4;");
	sqlite3_close(db);
	st = store_open(dbpath, t);
	store_event(st, t, "tab", 1, TERM_EV_START, NULL, NULL);
	cr_assert_eq(store_flush(st, t), 0);
	store_close(st);
	db = db_open();
	verify(db, NULL, 0, 0, &r);
	cr_assert_eq(r.nproblems, 0, "%s", problems(&r));
	cr_assert_eq(r.unchained, 2);
	cr_assert_eq(r.first_seq, 3, "the chain event");
	chaindb_report_free(&r);
	sqlite3_close(db);
}

/*
 * A review's attack: ptyd killed (no stop anchor), an unanchored ptyd of
 * the account serves and its rows are deleted, then the real ptyd starts
 * again at the very seq it had anchored.  The rows match every anchor,
 * yet the span is not proven: the start after a start says so, and it
 * counts (ptydctl exits 3).  A clean stop and start does not.
 */
Test(verify, a_start_after_no_stop_is_not_proven_even_at_the_same_seq)
{
	struct chaindb_report r;
	struct anchor	      a[4];
	sqlite3		     *db;

	write_events(5, unit_wall());
	db = db_open();
	a[0] = anchor_now(db, ANCHOR_START, 5);
	a[1] = anchor_now(db, ANCHOR_START, 5);
	verify(db, a, 2, 1, &r);
	cr_assert_eq(r.nproblems, 0, "%s", problems(&r));
	cr_assert_eq(r.unclean, 1);
	cr_assert_eq(r.nwarnings, 1);
	chaindb_report_free(&r);
	a[1] = anchor_now(db, ANCHOR_STOP, 5);
	a[2] = anchor_now(db, ANCHOR_START, 5);
	a[3] = anchor_now(db, ANCHOR_STOP, 5);
	verify(db, a, 4, 1, &r);
	cr_assert_eq(r.unclean, 0);
	chaindb_report_free(&r);
	sqlite3_close(db);
}
