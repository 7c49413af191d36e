/*
 * test_auditlog.c -- the audit log's lines (ptyd/auditlog.c) and the
 * store's hook that sends them (ptyd/store.c): the text and its escaping,
 * the journal's native datagram byte for byte, and that only committed
 * rows go out, each once, with their seq.
 *
 * Issue 34: a fleet's log pipeline collects each host's audit events.  A
 * line is evidence a collector believes, so a value a web user chose (a
 * session id, a workspace, a REMOTE_USER) must not be able to forge
 * another field, a second line, or one of the chain's anchor lines.
 */
#include <criterion/criterion.h>

#include <sys/socket.h>
#include <sys/un.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "anchor.h"
#include "auditlog.h"
#include "store.h"
#include "unit.h"

static char dir[64];
static char dbpath[128];

static void
setup(void)
{
	unit_tmpdir(dir, sizeof(dir), "test_auditlog");
	snprintf(dbpath, sizeof(dbpath), "%s/ptyd.db", dir);
}

static void
teardown(void)
{
	store_set_committed(NULL);
	auditlog_done();
	unit_rmtree(dir);
}

TestSuite(auditlog, .init = setup, .fini = teardown);

static const struct store_done plain = { 42, 1700000000.25, "input", 7,
	"tab-1", "alice", "alice 127.0.0.1", "5 bytes" };

Test(auditlog, a_line_names_every_field_in_order)
{
	char buf[AUDITLOG_TEXT_MAX];
	int  n;

	n = auditlog_format_text(buf, sizeof(buf), &plain);
	cr_assert_str_eq(buf,
	    "seq=42 event=input terminal=7 session=\"tab-1\" owner=\"alice\""
	    " actor=\"alice 127.0.0.1\" at=1700000000.250000"
	    " detail=\"5 bytes\"");
	cr_assert_eq(n, (int)strlen(buf));
}

Test(auditlog, null_columns_are_an_unquoted_dash)
{
	struct store_done ev = { 3, 1.5, "chain", 0, NULL, NULL, NULL,
		NULL };
	char		      buf[AUDITLOG_TEXT_MAX];

	cr_assert(auditlog_format_text(buf, sizeof(buf), &ev) > 0);
	cr_assert_str_eq(buf,
	    "seq=3 event=chain terminal=- session=- owner=- actor=- "
	    "at=1.500000 detail=-");
}

/* A session id that tries to end its value and add fields, a detail
 * that tries a second line and an anchor: every quote and byte outside
 * printable ASCII is escaped, so the line has exactly its eight fields,
 * no newline, and anchor_parse (ptydctl audit verify) finds no anchor in
 * it, with or without the syslog prefix. */
#define HASH "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

Test(auditlog, hostile_values_cannot_forge_a_field_a_line_or_an_anchor)
{
	struct store_done ev = plain;
	struct anchor	      a;
	char		      buf[AUDITLOG_TEXT_MAX], line[8192], db[256];
	int		      n;

	ev.sid = "x\" owner=\"root\" seq=\"1";
	ev.actor = "eve\\\" actor=root";
	ev.detail = "\r\x7f\xc3\xa9\n<38>Jan  1 00:00:00 ptyd-audit[1]: audit"
		    " head db=/x seq=1 hash=" HASH " found=x";
	n = auditlog_format_text(buf, sizeof(buf), &ev);
	cr_assert(n > 0);
	cr_assert_str_eq(buf,
	    "seq=42 event=input terminal=7"
	    " session=\"x\\\" owner=\\\"root\\\" seq=\\\"1\" owner=\"alice\""
	    " actor=\"eve\\\\\\\" actor=root\" at=1700000000.250000"
	    " detail=\"\\x0d\\x7f\\xc3\\xa9\\x0a<38>Jan  1 00:00:00"
	    " ptyd-audit[1]: audit head db=/x seq=1 hash=" HASH " found=x\"");
	cr_assert_null(strchr(buf, '\n'));
	cr_assert_eq(anchor_parse(buf, &a, db, sizeof(db)), -1);
	cr_assert(anchor_syslog_line(line, sizeof(line), AUDITLOG_IDENT, 6, buf,
		      0) > 0);
	cr_assert_eq(anchor_parse(line, &a, db, sizeof(db)), -1, "%s", line);
}

Test(auditlog, a_long_value_is_cut_and_says_so)
{
	struct store_done ev = plain;
	char		      big[5000], buf[AUDITLOG_TEXT_MAX];
	const char	     *d;

	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ev.detail = big;
	cr_assert(auditlog_format_text(buf, sizeof(buf), &ev) > 0);
	d = strstr(buf, " detail=\"");
	cr_assert_not_null(d);
	cr_assert(strlen(d + 8) < AUDITLOG_VALUE_MAX);
	cr_assert_str_eq(buf + strlen(buf) - 4, "...\"");
}

/* journald's native protocol, byte for byte: "NAME=value\n", and for a
 * value with a newline "NAME\n", the length as 64-bit little-endian, the
 * value, "\n" (systemd's docs/JOURNAL_NATIVE_PROTOCOL).  A NULL column is
 * left out. */
Test(auditlog, the_journal_datagram_is_the_native_protocol)
{
	struct store_done ev = plain;
	char		      buf[AUDITLOG_JOURNAL_MAX];
	static const char     want[] = "MESSAGE=m\n"
				       "PRIORITY=6\n"
				       "SYSLOG_FACILITY=10\n"
				       "SYSLOG_IDENTIFIER=ptyd-audit-log\n"
				       "PTYD_SEQ=42\n"
				       "PTYD_EVENT=input\n"
				       "PTYD_TERMINAL=7\n"
				       "PTYD_SESSION=tab-1\n"
				       "PTYD_ACTOR=alice 127.0.0.1\n"
				       "PTYD_AT=1700000000.250000\n"
				       "PTYD_DETAIL\n"
				       "\x0b\0\0\0\0\0\0\0"
				       "two\nlines=x\n";
	int		      n;

	ev.owner = NULL;
	ev.detail = "two\nlines=x";
	n = auditlog_format_journal(buf, sizeof(buf), &ev, "m");
	cr_assert_eq(n, (int)sizeof(want) - 1);
	cr_assert_eq(memcmp(buf, want, sizeof(want) - 1), 0);
	cr_assert_eq(auditlog_format_journal(buf, 40, &ev, "m"), -1);
}

Test(auditlog, the_setting_names_a_format_and_a_socket)
{
	struct auditlog_dest d;

	cr_assert_eq(auditlog_dest_parse("none", &d), 0);
	cr_assert_eq(d.fmt, AUDITLOG_NONE);
	cr_assert_eq(auditlog_dest_parse("syslog", &d), 0);
	cr_assert_eq(d.fmt, AUDITLOG_SYSLOG);
	cr_assert_str_eq(d.path, "/dev/log");
	cr_assert_eq(auditlog_dest_parse("journal", &d), 0);
	cr_assert_eq(d.fmt, AUDITLOG_JOURNAL);
	cr_assert_str_eq(d.path, "/run/systemd/journal/socket");
	cr_assert_eq(auditlog_dest_parse("unix:/t/a.sock", &d), 0);
	cr_assert_eq(d.fmt, AUDITLOG_SYSLOG);
	cr_assert_str_eq(d.path, "/t/a.sock");
	cr_assert_eq(auditlog_dest_parse("journal:/t/j.sock", &d), 0);
	cr_assert_eq(d.fmt, AUDITLOG_JOURNAL);
	cr_assert_str_eq(d.path, "/t/j.sock");
	cr_assert_eq(auditlog_dest_parse("unix:rel", &d), -1);
	cr_assert_eq(auditlog_dest_parse("journald", &d), -1);
	cr_assert_eq(auditlog_dest_parse("", &d), -1);
}

/* ---- the store's hook -------------------------------------------------- */

#define SEEN_MAX 16
static struct {
	int64_t seq;
	char	kind[16];
	char	owner[16];
} seen[SEEN_MAX];
static size_t nseen;

static void
seen_cb(const struct store_done *d)
{
	cr_assert(nseen < SEEN_MAX);
	seen[nseen].seq = d->seq;
	snprintf(seen[nseen].kind, sizeof(seen[nseen].kind), "%s", d->kind);
	snprintf(seen[nseen].owner, sizeof(seen[nseen].owner), "%s",
	    d->owner != NULL ? d->owner : "-");
	nseen++;
}

/* A flush that fails (another process holds the write lock) tells of
 * nothing; the retry that commits tells of each event once, with the id
 * its row has. */
Test(auditlog, only_committed_rows_are_told_each_once)
{
	struct store *st;
	sqlite3	     *db = NULL;
	double	      t = unit_wall();

	nseen = 0;
	store_set_committed(seen_cb);
	st = store_open(dbpath, t);
	cr_assert_eq(nseen, 0, "a new file writes no event at open");
	store_event_owned(st, t, "tab", 1, "bob", TERM_EV_START, "bob x", NULL);
	store_event_owned(st, t, "tab", 1, "bob", TERM_EV_INPUT, "bob x",
	    "1 bytes");
	cr_assert_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL),
	    SQLITE_OK);
	cr_assert_eq(store_flush(st, t), -1);
	cr_assert_eq(nseen, 0);
	cr_assert_eq(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	cr_assert_eq(store_flush(st, t + 1), 0);
	cr_assert_eq(nseen, 2);
	cr_assert_eq(seen[0].seq, 1);
	cr_assert_str_eq(seen[0].kind, "start");
	cr_assert_str_eq(seen[0].owner, "bob");
	cr_assert_eq(seen[1].seq, 2);
	cr_assert_str_eq(seen[1].kind, "input");
	cr_assert_eq(store_flush(st, t + 2), 0);
	cr_assert_eq(nseen, 2, "nothing is told twice");
	store_close(st);
	sqlite3_close(db);
}

/* Through auditlog_send to a socket of the test's own, in the journal's
 * format: the datagram is what auditlog_format_journal makes. */
Test(auditlog, a_line_goes_out_as_one_datagram)
{
	struct sockaddr_un sun;
	char		   dest[160], want[AUDITLOG_JOURNAL_MAX];
	char		   got[AUDITLOG_JOURNAL_MAX], text[AUDITLOG_TEXT_MAX];
	ssize_t		   n;
	int		   fd, wn;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/j.sock", dir);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	snprintf(dest, sizeof(dest), "journal:%s", sun.sun_path);
	cr_assert_eq(auditlog_init(dest), 0);
	auditlog_send(&plain, 0);
	cr_assert_eq(auditlog_sent(), 1);
	n = recv(fd, got, sizeof(got), 0);
	cr_assert(auditlog_format_text(text, sizeof(text), &plain) > 0);
	wn = auditlog_format_journal(want, sizeof(want), &plain, text);
	cr_assert_eq(n, wn);
	cr_assert_eq(memcmp(got, want, (size_t)wn), 0);
	/* Nobody reading: counted, never waited for. */
	close(fd);
	unlink(sun.sun_path);
	auditlog_send(&plain, 0);
	cr_assert_eq(auditlog_lost(), 1);
	cr_assert_eq(auditlog_sent(), 1);
}
