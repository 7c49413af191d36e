/*
 * ptydctl_prune.c -- `ptydctl prune`: remove old events from the audit log.
 *
 * Owns: the one way events leave terminal_events.  The table refuses
 * UPDATE and DELETE (sql/schema.sql's triggers) unless a row of
 * prune_permit allows the DELETE of events older than its cutoff; this
 * command inserts that permit, deletes, logs a `prune` event saying how
 * many events went and who asked, and deletes the permit, all in one
 * transaction, so no permit ever outlives it.  prune events themselves are
 * never pruned.  Works on the database file directly (ptyd need not run);
 * it waits up to CTL_PRUNE_WAIT_MS for ptyd's write lock, and ptyd, which
 * never waits, retries its own flush a second later.  Does not own: the
 * schema (sql/schema.sql) or the other commands (ptydctl.c).
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

#include "ptydctl.h"

#define CTL_PRUNE_WAIT_MS    10000
#define CTL_PRUNE_MIN_SCHEMA 3 /* the version with prune_permit */

/* The steps inside the transaction, in order; ?1 is the cutoff. */
static const char *const ctl_prune_sql[] = {
	"INSERT INTO prune_permit (before) VALUES (?1)",
	"DELETE FROM terminal_events WHERE at < ?1 AND kind <> 'prune'",
	"INSERT INTO terminal_events (at, kind, actor, detail) VALUES"
	" ((julianday('now') - 2440587.5) * 86400, 'prune', ?2,"
	" 'removed ' || ?3 || ' events before ' ||"
	" datetime(?1, 'unixepoch') || ' UTC')",
	"DELETE FROM prune_permit",
};

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

/* Run the steps; the number of events deleted, or -1 (message printed). */
static int64_t
ctl_prune_run(sqlite3 *db, double before)
{
	sqlite3_stmt *st = NULL;
	int64_t	      n = 0;
	size_t	      i;

	for (i = 0; i < sizeof(ctl_prune_sql) / sizeof(ctl_prune_sql[0]); i++) {
		if (sqlite3_prepare_v2(db, ctl_prune_sql[i], -1, &st, NULL) !=
		    SQLITE_OK)
			return (-1);
		sqlite3_bind_double(st, 1, before);
		if (sqlite3_bind_parameter_count(st) >= 2) {
			sqlite3_bind_text(st, 2, ctl_actor(), -1,
			    SQLITE_STATIC);
			sqlite3_bind_int64(st, 3, n);
		}
		if (sqlite3_step(st) != SQLITE_DONE) {
			sqlite3_finalize(st);
			return (-1);
		}
		if (i == 1)
			n = sqlite3_changes(db);
		sqlite3_finalize(st);
	}
	return (n);
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
		    "ptydctl: prune: %s has schema version %d; start ptyd"
		    " on it once to upgrade it\n",
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
	const char		  *path = NULL, *when = NULL;
	struct tm		   tm;
	time_t			   t;
	sqlite3			  *db;
	double			   before;
	int64_t			   n;
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
	if (when == NULL || optind != argc)
		usage();
	before = ctl_prune_cutoff(when);
	if (path == NULL)
		path = ctl_db();
	db = ctl_prune_open(path);
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) !=
		SQLITE_OK ||
	    (n = ctl_prune_run(db, before)) == -1 ||
	    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		fprintf(stderr, "ptydctl: prune: %s: %s; nothing removed\n",
		    path, sqlite3_errmsg(db));
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		sqlite3_close(db);
		return (1);
	}
	sqlite3_close(db);
	t = (time_t)before;
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S", gmtime_r(&t, &tm));
	printf("removed %" PRId64 " events before %s UTC\n", n, date);
	return (0);
}
