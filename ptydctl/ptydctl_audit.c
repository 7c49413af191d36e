/*
 * ptydctl_audit.c -- `ptydctl audit verify`: is the audit log what ptyd
 * wrote and what it sent out?
 *
 * Owns: the command line of `audit verify`, reading the anchor lines (a
 * file of the system log, or stdin: journalctl's output, /var/log/auth.log,
 * or what a test collected), keeping those of this database, and printing
 * the verdict for people or as JSON.  Exit status: 0 when everything is
 * consistent, 1 when something is not (or with no anchors at all for this
 * database), 3 when the rows match their anchors but ptyd stopped without
 * a stop anchor (killed: what happened until its next start is not
 * proven), 2 for usage or a database that cannot be read.  Does not own:
 * the verdicts (chaindb.c), the line format (anchor.c).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "anchor.h"
#include "chaindb.h"
#include "ptydctl.h"

#define CTL_AUDIT_MIN_SCHEMA 5 /* the hash chain */

struct ctl_anchors {
	struct anchor *a;
	size_t	       n;
	size_t	       other; /* anchor lines of other databases */
	int	       given;
};

/* Does an anchor's db name the database at path?  By name, else by the
 * file both resolve to (a symlink, a relative --db). */
static int
ctl_audit_same_db(const char *db, const char *path, const char *real)
{
	char r[PATH_MAX];

	if (strcmp(db, path) == 0)
		return (1);
	return (
	    real != NULL && realpath(db, r) != NULL && strcmp(r, real) == 0);
}

static void
ctl_audit_read(FILE *f, const char *path, struct ctl_anchors *out)
{
	struct anchor a, *grown;
	char	     *line = NULL, db[PATH_MAX], real[PATH_MAX];
	const char   *rp;
	size_t	      cap = 0;

	rp = realpath(path, real);
	while (getline(&line, &cap, f) != -1) {
		if (anchor_parse(line, &a, db, sizeof(db)) == -1)
			continue;
		if (!ctl_audit_same_db(db, path, rp)) {
			out->other++;
			continue;
		}
		grown = reallocarray(out->a, out->n + 1, sizeof(*grown));
		if (grown == NULL)
			die("memory");
		out->a = grown;
		out->a[out->n++] = a;
	}
	free(line);
}

static void
ctl_audit_anchors(const char *file, const char *path, struct ctl_anchors *out)
{
	FILE *f;

	memset(out, 0, sizeof(*out));
	if (file == NULL)
		return;
	out->given = 1;
	if (strcmp(file, "-") == 0)
		f = stdin;
	else if ((f = fopen(file, "r")) == NULL)
		die(file);
	ctl_audit_read(f, path, out);
	if (f != stdin)
		fclose(f);
}

/* Open read-only, in one read transaction (one snapshot for every
 * query), with the chain's schema; exits 2 otherwise. */
static sqlite3 *
ctl_audit_open(const char *path)
{
	sqlite3	     *db = NULL;
	sqlite3_stmt *st = NULL;
	int	      version = -1;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) !=
		SQLITE_OK ||
	    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
		fprintf(stderr, "ptydctl: audit verify: %s: %s\n", path,
		    db != NULL ? sqlite3_errmsg(db) : "cannot open");
		sqlite3_close(db);
		exit(2);
	}
	sqlite3_busy_timeout(db, 5000);
	if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) ==
		SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		version = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	if (version < CTL_AUDIT_MIN_SCHEMA) {
		fprintf(stderr,
		    "ptydctl: audit verify: %s has schema version %d, which"
		    " has no hash chain; start ptyd on it once to upgrade"
		    " it\n",
		    path, version);
		sqlite3_close(db);
		exit(2);
	}
	return (db);
}

static int64_t
ctl_audit_first_bad(const struct chaindb_report *r)
{
	int64_t first = -1;
	size_t	i;

	for (i = 0; i < r->nproblems; i++)
		if (first == -1 || r->problems[i].seq < first)
			first = r->problems[i].seq;
	return (first);
}

static void
ctl_audit_json(const char *path, const struct ctl_anchors *an,
    const struct chaindb_report *r, int ok)
{
	size_t i;

	printf("{\"db\": ");
	ctl_json_str(path);
	printf(", \"ok\": %s, \"anchors_given\": %s, \"anchors\": %zu,"
	       " \"other_anchors\": %zu, \"rows\": %" PRId64
	       ", \"unchained\": %" PRId64 ", \"first_seq\": %" PRId64
	       ", \"last_seq\": %" PRId64 ", \"anchored_through\": %" PRId64
	       ", \"pruned_through\": %" PRId64 ", \"first_bad_seq\": ",
	    ok ? "true" : "false", an->given ? "true" : "false", an->n,
	    an->other, r->rows, r->unchained, r->first_seq, r->last_seq,
	    r->anchored, r->pruned_through);
	if (r->nproblems > 0)
		printf("%" PRId64, ctl_audit_first_bad(r));
	else
		printf("null");
	printf(", \"problems\": [");
	for (i = 0; i < r->nproblems; i++) {
		printf("%s{\"seq\": %" PRId64
		       ", \"kind\": \"%s\", \"message\": ",
		    i > 0 ? ", " : "", r->problems[i].seq,
		    chaindb_break_name(r->problems[i].kind));
		ctl_json_str(r->problems[i].msg);
		printf("}");
	}
	printf("], \"warnings\": [");
	for (i = 0; i < r->nwarnings; i++) {
		printf("%s{\"from\": %" PRId64 ", \"to\": %" PRId64
		       ", \"message\": ",
		    i > 0 ? ", " : "", r->warnings[i].from, r->warnings[i].to);
		ctl_json_str(r->warnings[i].msg);
		printf("}");
	}
	printf("]}\n");
}

static void
ctl_audit_verdict(const struct ctl_anchors *an, const struct chaindb_report *r)
{
	if (r->nproblems > 0)
		printf("verdict: NOT CONSISTENT: first bad seq %" PRId64
		       " (%s)\n",
		    ctl_audit_first_bad(r),
		    chaindb_break_name(r->problems[0].kind));
	else if (!an->given)
		printf("verdict: the chain is consistent in itself; without"
		       " anchors that proves little (whoever can write the"
		       " file can rewrite the whole chain): give --anchors\n");
	else if (an->n == 0)
		printf("verdict: NOT PROVEN: no anchor names this database\n");
	else if (r->unclean > 0)
		printf("verdict: NOT PROVEN: the rows match their anchors, but"
		       " ptyd stopped %zu time(s) without a stop anchor (see"
		       " the warnings): what happened until the next start"
		       " is not proven\n",
		    r->unclean);
	else
		printf("verdict: consistent with %zu anchors: every row through"
		       " seq %" PRId64 " is what ptyd sent out\n",
		    an->n, r->anchored);
}

static void
ctl_audit_text(const char *path, const struct ctl_anchors *an,
    const struct chaindb_report *r)
{
	size_t i;

	printf("database %s: %" PRId64 " events", path, r->rows);
	if (r->first_seq > 0)
		printf(", chain seq %" PRId64 "-%" PRId64, r->first_seq,
		    r->last_seq);
	if (r->unchained > 0)
		printf(", %" PRId64 " older events not chained", r->unchained);
	if (r->pruned_through > 0)
		printf(", pruned through seq %" PRId64, r->pruned_through);
	printf("\n");
	if (an->given)
		printf("anchors: %zu for this database (%zu prunes), %zu of"
		       " others ignored\n",
		    an->n, r->nprunes, an->other);
	for (i = 0; i < r->nproblems; i++)
		printf("problem: %s: %s\n",
		    chaindb_break_name(r->problems[i].kind),
		    r->problems[i].msg);
	for (i = 0; i < r->nwarnings; i++)
		printf("warning: %s\n", r->warnings[i].msg);
	ctl_audit_verdict(an, r);
}

static int
ctl_audit_verify(const char *path, const char *file)
{
	struct ctl_anchors    an;
	struct chaindb_report r;
	const char	     *why = NULL;
	sqlite3		     *db;
	int		      ok, rc;

	ctl_audit_anchors(file, path, &an);
	db = ctl_audit_open(path);
	if (chaindb_verify(db, an.a, an.n, an.given, &r, &why) == -1) {
		fprintf(stderr, "ptydctl: audit verify: %s: %s\n", path,
		    why != NULL ? why : "cannot read it");
		sqlite3_close(db);
		free(an.a);
		return (2);
	}
	sqlite3_close(db);
	ok = r.nproblems == 0 && (!an.given || an.n > 0);
	if (ctl_want_json())
		ctl_audit_json(path, &an, &r, ok && r.unclean == 0);
	else
		ctl_audit_text(path, &an, &r);
	rc = !ok ? 1 : r.unclean > 0 ? 3 : 0;
	chaindb_report_free(&r);
	free(an.a);
	return (rc);
}

int
ctl_audit(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'd' },
		{ "anchors", required_argument, NULL, 'a' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = NULL, *file = NULL;
	int	    ch;

	if (argc < 2 || strcmp(argv[1], "verify") != 0)
		usage();
	argc--;
	argv++;
	optind = 0;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (ch == 'd')
			path = optarg;
		else if (ch == 'a')
			file = optarg;
		else
			usage();
	}
	if (optind != argc)
		usage();
	if (path == NULL)
		path = ctl_db();
	return (ctl_audit_verify(path, file));
}
