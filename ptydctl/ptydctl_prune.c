/*
 * ptydctl_prune.c -- `ptydctl prune`: remove old events from the audit log
 * (--before), after asking ptyd to apply the recordings' retention now
 * (ptydctl_rec.c; not with --db, which names another database).
 *
 * Owns: the one way events leave terminal_events.  The table refuses
 * UPDATE and DELETE (sql/schema.sql's triggers) unless a row of
 * prune_permit allows the DELETE of events older than its cutoff; this
 * command inserts that permit, deletes, logs a `prune` event saying how
 * many events went, who asked and through which seq the chain went
 * (chaindb_prune), and deletes the permit, all in one transaction, so no
 * permit ever outlives it.  prune events themselves are never pruned.
 * Once committed, the prune event goes as a line to audit_log, as ptyd
 * sends every other event, and two anchor lines go to the audit_anchor
 * destination: the prune (through seq N, row N's hash) and the head (the
 * prune event's own row), so that ptydctl audit verify can tell this
 * prune from rows removed by hand.  Works on the database file directly (ptyd need not
 * run); it waits up to CTL_PRUNE_WAIT_MS for ptyd's write lock, and ptyd,
 * which never waits, retries its own flush a second later, and takes the
 * prune event as part of its chain.  Does not own: the schema
 * (sql/schema.sql), the chain (chaindb.c) or the other commands
 * (ptydctl.c).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>
#include <syslog.h>

#include "anchor.h"
#include "auditlog.h"
#include "chaindb.h"
#include "ptydctl.h"
#include "termstate.h"

#define CTL_PRUNE_WAIT_MS    10000
#define CTL_PRUNE_MIN_SCHEMA 5 /* the version with the hash chain */

/* DAYS (a whole number) or YYYY-MM-DD (UTC midnight) as Unix seconds. */
static double
ctl_prune_cutoff(const char *s)
{
	struct tm tm;
	char	 *end;
	long	  days;

	errno = 0;
	days = strtol(s, &end, 10);
	if (errno == 0 && end != s && *end == '\0' && days >= 0 &&
	    days <= 100000)
		return ((double)time(NULL) - (double)days * 86400);
	memset(&tm, 0, sizeof(tm));
	end = strptime(s, "%Y-%m-%d", &tm);
	if (end == NULL || *end != '\0') {
		fprintf(stderr,
		    "ptydctl: prune: --before wants a number of"
		    " days or a date YYYY-MM-DD, not '%s'\n",
		    s);
		exit(2);
	}
	return ((double)timegm(&tm));
}

/* The prune's two anchor lines; a failure is said, not fatal: the rows
 * are gone either way, and verify will say the prune is not vouched for. */
static void
ctl_prune_anchor(const char *path, const struct chaindb_prune *p)
{
	struct anchor_dest d;
	struct anchor	   a;
	char		   line[ANCHOR_LINE_MAX];
	int		   i;

	if (anchor_dest_parse(ctl_audit_anchor(), &d) == -1 ||
	    d.to == ANCHOR_TO_NONE)
		return;
	for (i = 0; i < 2; i++) {
		memset(&a, 0, sizeof(a));
		a.kind = i == 0 ? ANCHOR_PRUNE : ANCHOR_HEAD;
		a.seq = i == 0 ? p->through : p->seq;
		a.has_hash = i == 0 ? p->has_hash : 1;
		memcpy(a.hash, i == 0 ? p->hash : p->seq_hash, CHAIN_HASH_LEN);
		if (anchor_format(line, sizeof(line), &a, path) == -1 ||
		    anchor_send(&d, LOG_NOTICE, line, time(NULL)) == -1)
			fprintf(stderr,
			    "ptydctl: prune: the anchor \"%s\" was not sent to"
			    " %s: %s; ptydctl audit verify will report this"
			    " prune as not vouched for\n",
			    line, d.path, strerror(errno));
	}
}

/* The prune event's line for audit_log, as ptyd sends every other event's
 * (DESIGN 7): after the commit, never waited for; one lost is said. */
static void
ctl_prune_line(const struct chaindb_prune *p)
{
	struct store_done ev;

	if (auditlog_init(ctl_audit_log()) == -1 || !auditlog_on())
		return;
	memset(&ev, 0, sizeof(ev));
	ev.seq = p->seq;
	ev.at = p->at;
	ev.kind = term_event_name(TERM_EV_PRUNE);
	ev.actor = ctl_actor();
	ev.detail = p->detail;
	auditlog_send(&ev, time(NULL));
	if (auditlog_lost() > 0)
		fprintf(stderr,
		    "ptydctl: prune: the prune's audit_log line was not"
		    " sent; its row is in the database (seq %" PRId64 ")\n",
		    p->seq);
	auditlog_done();
}

/* Open path for writing, and check it has the prune permit's schema. */
static sqlite3 *
ctl_prune_open(const char *path)
{
	sqlite3	     *db = NULL;
	sqlite3_stmt *st = NULL;
	int	      version = -1;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) !=
	    SQLITE_OK) {
		fprintf(stderr, "ptydctl: prune: %s: %s\n", path,
		    db != NULL ? sqlite3_errmsg(db) : "cannot open");
		sqlite3_close(db);
		exit(2);
	}
	sqlite3_busy_timeout(db, CTL_PRUNE_WAIT_MS);
	if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) ==
		SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		version = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	if (version < CTL_PRUNE_MIN_SCHEMA) {
		fprintf(stderr,
		    "ptydctl: prune: %s has schema version %d (no hash"
		    " chain); start ptyd on it once to upgrade it\n",
		    path, version);
		sqlite3_close(db);
		exit(2);
	}
	return (db);
}

int
ctl_prune(int argc, char **argv)
{
	static const struct option opts[] = { { "before", required_argument,
						  NULL, 'b' },
		{ "db", required_argument, NULL, 'd' }, { NULL, 0, NULL, 0 } };
	char			   date[32];
	const char		  *path = NULL, *when = NULL, *why = NULL;
	struct chaindb_prune	   p;
	struct tm		   tm;
	time_t			   t;
	sqlite3			  *db;
	double			   before;
	int			   ch;

	optind = 0;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (ch == 'b')
			when = optarg;
		else if (ch == 'd')
			path = optarg;
		else
			usage();
	}
	if (optind != argc || (when == NULL && path != NULL))
		usage();
	/* Recordings' retention is ptyd's (it holds the rows): asked of
	 * it, for the database it runs on. */
	if (path == NULL && ctl_prune_recordings() != 0)
		return (1);
	if (when == NULL)
		return (0);
	before = ctl_prune_cutoff(when);
	if (path == NULL)
		path = ctl_db();
	db = ctl_prune_open(path);
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) !=
		SQLITE_OK ||
	    chaindb_prune(db, before, ctl_actor(), &p, &why) == -1 ||
	    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		fprintf(stderr, "ptydctl: prune: %s: %s; nothing removed\n",
		    path, why != NULL ? why : sqlite3_errmsg(db));
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		sqlite3_close(db);
		return (1);
	}
	sqlite3_close(db);
	ctl_prune_anchor(path, &p);
	ctl_prune_line(&p);
	t = (time_t)before;
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S", gmtime_r(&t, &tm));
	printf("removed %" PRId64 " events before %s UTC (the chain now"
	       " starts after seq %" PRId64 "; the prune is seq %" PRId64 ")\n",
	    p.removed, date, p.through, p.seq);
	return (0);
}
