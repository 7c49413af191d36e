/*
 * chaindb.c -- the audit chain as it stands in SQLite, for the tools:
 * hashing a row as stored, the chained prune, and the verifier.
 *
 * Owns: what a row read back hashes to, the prune that keeps the chain
 * whole (what it removed, through which seq, with that row's hash), and
 * the verdicts of `ptydctl audit verify` (DESIGN 7): each row's hash
 * recomputed from its fields, each row following the one before, every
 * absence explained by a prune, every anchor matched.  Does not own: the
 * encoding (chain.c), ptyd's writes (store.c), anchor lines (anchor.c), or
 * what is printed (ptydctl/ptydctl_audit.c).
 */
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chaindb.h"
#include "termstate.h"

static const char *const chaindb_breaks[CHAINDB_NBREAKS] = {
	[CHAINDB_EDITED] = "edited",
	[CHAINDB_MISSING] = "missing",
	[CHAINDB_BROKEN] = "broken",
	[CHAINDB_TAIL] = "tail_removed",
	[CHAINDB_ANCHOR] = "anchor_mismatch",
	[CHAINDB_UNCHAINED] = "unchained",
	[CHAINDB_TAMPER] = "tamper",
	[CHAINDB_CONFLICT] = "anchor_conflict",
	[CHAINDB_PRUNE_ALONE] = "prune_unmatched",
};

const char *
chaindb_break_name(enum chaindb_break b)
{
	return (b < CHAINDB_NBREAKS ? chaindb_breaks[b] : "?");
}

static void
chaindb_col(struct chain_ctx *c, sqlite3_stmt *s, int col)
{
	switch (sqlite3_column_type(s, col)) {
	case SQLITE_INTEGER:
		chain_int(c, sqlite3_column_int64(s, col));
		break;
	case SQLITE_FLOAT:
		chain_real(c, sqlite3_column_double(s, col));
		break;
	case SQLITE_TEXT:
		chain_text(c, sqlite3_column_text(s, col),
		    (size_t)sqlite3_column_bytes(s, col));
		break;
	case SQLITE_BLOB:
		chain_blob(c, sqlite3_column_blob(s, col),
		    (size_t)sqlite3_column_bytes(s, col));
		break;
	default:
		chain_null(c);
		break;
	}
}

void
chaindb_row_hash(sqlite3_stmt *s, const uint8_t prev[CHAIN_HASH_LEN],
    uint8_t out[CHAIN_HASH_LEN])
{
	struct chain_ctx c;
	int		 col;

	chain_begin(&c, prev);
	for (col = 0; col < CHAINDB_COL_PREV; col++)
		chaindb_col(&c, s, col);
	chain_end(&c, out);
}

int
chaindb_col_hash(sqlite3_stmt *s, int col, uint8_t out[CHAIN_HASH_LEN])
{
	if (sqlite3_column_type(s, col) != SQLITE_TEXT)
		return (-1);
	return (chain_unhex((const char *)sqlite3_column_text(s, col),
	    (size_t)sqlite3_column_bytes(s, col), out));
}

/* ---- pruning ---------------------------------------------------------- */

/* One statement with ?1 a double and an integer result in *out (NULL: 0,
 * *isnull set).  0 or -1. */
static int
chaindb_int(sqlite3 *db, const char *sql, double arg, int64_t *out, int *isnull)
{
	sqlite3_stmt *st = NULL;
	int	      rc;

	*out = 0;
	if (isnull != NULL)
		*isnull = 1;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return (-1);
	if (sqlite3_bind_parameter_count(st) >= 1)
		sqlite3_bind_double(st, 1, arg);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW &&
	    sqlite3_column_type(st, 0) != SQLITE_NULL) {
		*out = sqlite3_column_int64(st, 0);
		if (isnull != NULL)
			*isnull = 0;
	}
	sqlite3_finalize(st);
	return (rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -1);
}

/* The hash of row id, if it is chained; 1, 0 (unchained or none), -1. */
static int
chaindb_hash_of(sqlite3 *db, int64_t id, uint8_t out[CHAIN_HASH_LEN])
{
	sqlite3_stmt *st = NULL;
	int	      rc, found = 0;

	if (sqlite3_prepare_v2(db,
		"SELECT hash FROM terminal_events WHERE id = ?1", -1, &st,
		NULL) != SQLITE_OK)
		return (-1);
	sqlite3_bind_int64(st, 1, id);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW)
		found = chaindb_col_hash(st, 0, out) == 0;
	sqlite3_finalize(st);
	return (rc == SQLITE_ROW || rc == SQLITE_DONE ? found : -1);
}

/* Run sql with ?1 = before; sqlite3_changes in *n if n.  0 or -1. */
static int
chaindb_exec(sqlite3 *db, const char *sql, double before, int64_t through,
    int64_t *n)
{
	sqlite3_stmt *st = NULL;
	int	      rc;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return (-1);
	sqlite3_bind_double(st, 1, before);
	if (sqlite3_bind_parameter_count(st) >= 2)
		sqlite3_bind_int64(st, 2, through);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (n != NULL)
		*n = sqlite3_changes(db);
	return (rc == SQLITE_DONE ? 0 : -1);
}

/* The prune event, chained onto the last row (last, lasthash). */
static int
chaindb_prune_event(sqlite3 *db, const char *actor, double before, int64_t last,
    const uint8_t lasthash[CHAIN_HASH_LEN], struct chaindb_prune *p)
{
	struct timespec	 ts;
	struct chain_row r;
	struct tm	 tm;
	time_t		 t = (time_t)before;
	sqlite3_stmt	*st = NULL;
	char date[32], hex[CHAIN_HEX_LEN + 1], prev[CHAIN_HEX_LEN + 1],
	    thash[CHAIN_HEX_LEN + 1];
	char *detail = p->detail;
	int rc;

	clock_gettime(CLOCK_REALTIME, &ts);
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S", gmtime_r(&t, &tm));
	if (p->has_hash)
		chain_hex(p->hash, thash);
	else
		snprintf(thash, sizeof(thash), "-");
	snprintf(detail, sizeof(p->detail),
	    "removed %" PRId64 " events before %s UTC; chain through=%" PRId64
	    " hash=%s",
	    p->removed, date, p->through, thash);
	memset(&r, 0, sizeof(r));
	r.seq = last + 1;
	r.at = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	r.kind = term_event_name(TERM_EV_PRUNE);
	r.actor = actor;
	r.detail = detail;
	chain_row_hash(&r, lasthash, p->seq_hash);
	p->seq = r.seq;
	p->at = r.at;
	chain_hex(p->seq_hash, hex);
	chain_hex(lasthash, prev);
	if (sqlite3_prepare_v2(db,
		"INSERT INTO terminal_events (id, at, kind, actor, detail,"
		" prev, hash) VALUES (?1, ?2, 'prune', ?3, ?4, ?5, ?6)",
		-1, &st, NULL) != SQLITE_OK)
		return (-1);
	sqlite3_bind_int64(st, 1, r.seq);
	sqlite3_bind_double(st, 2, r.at);
	sqlite3_bind_text(st, 3, actor, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, detail, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, prev, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, hex, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return (rc == SQLITE_DONE ? 0 : -1);
}

int
chaindb_prune(sqlite3 *db, double before, const char *actor,
    struct chaindb_prune *p, const char **why)
{
	uint8_t lasthash[CHAIN_HASH_LEN];
	int64_t last, keep;
	int	isnull, rc;

	memset(p, 0, sizeof(*p));
	*why = NULL;
	if (chaindb_int(db, "SELECT max(id) FROM terminal_events", 0, &last,
		NULL) == -1 ||
	    (rc = chaindb_hash_of(db, last, lasthash)) == -1)
		return (-1);
	if (rc == 0) {
		*why = "the audit log's last event is not chained (start ptyd"
		       " on the database once, or see ptydctl audit verify)";
		return (-1);
	}
	/* Up to the first event at or after the cutoff, whatever the clock
	 * did in between: what stays is a whole tail of the chain. */
	if (chaindb_int(db,
		"SELECT min(id) FROM terminal_events WHERE at >= ?1"
		" AND kind <> 'prune'",
		before, &keep, &isnull) == -1)
		return (-1);
	if (isnull)
		keep = last + 1;
	if (chaindb_int(db, "SELECT max(id) FROM terminal_events WHERE id < ?1",
		(double)keep, &p->through, NULL) == -1 ||
	    (rc = chaindb_hash_of(db, p->through, p->hash)) == -1)
		return (-1);
	p->has_hash = rc;
	if (chaindb_exec(db, "INSERT INTO prune_permit (before) VALUES (?1)",
		before, 0, NULL) == -1 ||
	    chaindb_exec(db,
		"DELETE FROM terminal_events WHERE at < ?1 AND id <= ?2"
		" AND kind <> 'prune'",
		before, p->through, &p->removed) == -1 ||
	    chaindb_prune_event(db, actor, before, last, lasthash, p) == -1 ||
	    chaindb_exec(db, "DELETE FROM prune_permit", before, 0, NULL) == -1)
		return (-1);
	return (0);
}

/* ---- verifying -------------------------------------------------------- */

/* A prune as its event in the table says it. */
struct chaindb_pev {
	int64_t seq;
	int64_t through;
	int	has_hash;
	uint8_t hash[CHAIN_HASH_LEN];
	int	matched;
};

/* One anchor that names a row: seq and the hash it must have. */
struct chaindb_pin {
	int64_t		 seq;
	uint8_t		 hash[CHAIN_HASH_LEN];
	enum anchor_kind kind;
};

struct chaindb_walk {
	struct chaindb_report *r;
	const char	      *why;
	/* the prunes: every row up to through may be gone */
	struct chaindb_pev *pevs;
	size_t		    npevs;
	int64_t		    through;
	int		    through_has_hash;
	uint8_t		    through_hash[CHAIN_HASH_LEN];
	/* the anchors naming rows, by seq */
	struct chaindb_pin *pins;
	size_t		    npins;
	size_t		    pin; /* the next to meet */
	/* the row before */
	int	started;
	int64_t last;
	uint8_t lasthash[CHAIN_HASH_LEN];
};

static void chaindb_problem(struct chaindb_report *, enum chaindb_break,
    int64_t, const char *, ...) __attribute__((format(printf, 4, 5)));

static void
chaindb_problem(struct chaindb_report *r, enum chaindb_break kind, int64_t seq,
    const char *fmt, ...)
{
	struct chaindb_problem *p;
	va_list			ap;

	p = reallocarray(r->problems, r->nproblems + 1, sizeof(*p));
	if (p == NULL)
		abort();
	r->problems = p;
	p = &r->problems[r->nproblems++];
	p->kind = kind;
	p->seq = seq;
	va_start(ap, fmt);
	vsnprintf(p->msg, sizeof(p->msg), fmt, ap);
	va_end(ap);
}

static void
chaindb_warning(struct chaindb_report *r, int64_t from, int64_t to,
    const char *msg)
{
	struct chaindb_warning *w;

	w = reallocarray(r->warnings, r->nwarnings + 1, sizeof(*w));
	if (w == NULL)
		abort();
	r->warnings = w;
	w = &r->warnings[r->nwarnings++];
	w->from = from;
	w->to = to;
	snprintf(w->msg, sizeof(w->msg), "%s", msg);
}

void
chaindb_report_free(struct chaindb_report *r)
{
	free(r->problems);
	free(r->warnings);
	memset(r, 0, sizeof(*r));
}

/* "through=N hash=HEX|-" in a prune event's detail; 0 or -1. */
static int
chaindb_pev_parse(const char *detail, struct chaindb_pev *e)
{
	const char *t, *h;
	char	   *end;

	if (detail == NULL || (t = strstr(detail, "through=")) == NULL ||
	    (h = strstr(t, " hash=")) == NULL)
		return (-1);
	e->through = strtoll(t + 8, &end, 10);
	if (end != h || e->through < 0)
		return (-1);
	h += 6;
	e->has_hash = !(h[0] == '-' && (h[1] == '\0' || h[1] == ' '));
	if (e->has_hash && chain_unhex(h, strcspn(h, " "), e->hash) == -1)
		return (-1);
	return (0);
}

/* The chained prune events of the table. */
static int
chaindb_load_prunes(sqlite3 *db, struct chaindb_walk *w)
{
	sqlite3_stmt	  *st = NULL;
	struct chaindb_pev e, *grown;
	int		   rc;

	if (sqlite3_prepare_v2(db,
		"SELECT id, detail FROM terminal_events WHERE kind = 'prune'"
		" AND hash IS NOT NULL ORDER BY id",
		-1, &st, NULL) != SQLITE_OK)
		return (-1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		memset(&e, 0, sizeof(e));
		e.seq = sqlite3_column_int64(st, 0);
		if (chaindb_pev_parse((const char *)sqlite3_column_text(st, 1),
			&e) == -1) {
			chaindb_problem(w->r, CHAINDB_EDITED, e.seq,
			    "seq %" PRId64 ": a prune event that does not say"
			    " what it removed",
			    e.seq);
			continue;
		}
		grown = reallocarray(w->pevs, w->npevs + 1, sizeof(*grown));
		if (grown == NULL)
			abort();
		w->pevs = grown;
		w->pevs[w->npevs++] = e;
	}
	sqlite3_finalize(st);
	return (rc == SQLITE_DONE ? 0 : -1);
}

static void
chaindb_cover(struct chaindb_walk *w, int64_t through, int has_hash,
    const uint8_t *hash)
{
	if (through <= w->through)
		return;
	w->through = through;
	w->through_has_hash = has_hash;
	if (has_hash)
		memcpy(w->through_hash, hash, CHAIN_HASH_LEN);
}

/* With anchors, a prune counts when its anchor and its event agree;
 * without, the events alone say what was pruned. */
static void
chaindb_match_prunes(struct chaindb_walk *w, const struct anchor *a, size_t n)
{
	size_t i, j;
	int    found;

	for (i = 0; i < n; i++) {
		if (a[i].kind != ANCHOR_PRUNE)
			continue;
		w->r->nprunes++;
		for (j = 0, found = 0; j < w->npevs && !found; j++)
			if (w->pevs[j].through == a[i].seq &&
			    w->pevs[j].has_hash == a[i].has_hash &&
			    (!a[i].has_hash ||
				memcmp(w->pevs[j].hash, a[i].hash,
				    CHAIN_HASH_LEN) == 0))
				found = w->pevs[j].matched = 1;
		if (!found)
			chaindb_problem(w->r, CHAINDB_PRUNE_ALONE, a[i].seq,
			    "a prune anchor (through seq %" PRId64 ") has no"
			    " prune event in the table: its event was removed",
			    a[i].seq);
		chaindb_cover(w, a[i].seq, a[i].has_hash, a[i].hash);
	}
	for (j = 0; j < w->npevs; j++) {
		if (!w->r->have_anchors) {
			w->r->nprunes++;
			chaindb_cover(w, w->pevs[j].through,
			    w->pevs[j].has_hash, w->pevs[j].hash);
		} else if (!w->pevs[j].matched)
			chaindb_problem(w->r, CHAINDB_PRUNE_ALONE,
			    w->pevs[j].seq,
			    "seq %" PRId64 ": a prune (through seq %" PRId64
			    ") that no anchor vouches for: made inside the"
			    " database, or its anchor was never sent",
			    w->pevs[j].seq, w->pevs[j].through);
	}
}

static int
chaindb_pin_cmp(const void *a, const void *b)
{
	const struct chaindb_pin *x = a, *y = b;

	return (x->seq < y->seq ? -1 : x->seq > y->seq);
}

/* The anchors that name a row (all but prune's), sorted by seq; tamper
 * anchors and disagreeing anchors are problems in themselves. */
static void
chaindb_load_pins(struct chaindb_walk *w, const struct anchor *a, size_t n)
{
	size_t i;

	w->pins = calloc(n + 1, sizeof(*w->pins));
	if (w->pins == NULL)
		abort();
	for (i = 0; i < n; i++) {
		if (a[i].kind == ANCHOR_TAMPER)
			chaindb_problem(w->r, CHAINDB_TAMPER, a[i].seq,
			    "ptyd found the last row it wrote, seq %" PRId64
			    ", %s in the database (a tamper anchor)",
			    a[i].seq,
			    a[i].found[0] != '\0' ? a[i].found : "rewritten");
		/* Seq 0 is the empty chain of a new file: nothing to pin. */
		if (a[i].kind == ANCHOR_PRUNE || !a[i].has_hash ||
		    a[i].seq == 0)
			continue;
		w->pins[w->npins].seq = a[i].seq;
		w->pins[w->npins].kind = a[i].kind;
		memcpy(w->pins[w->npins].hash, a[i].hash, CHAIN_HASH_LEN);
		w->npins++;
	}
	qsort(w->pins, w->npins, sizeof(*w->pins), chaindb_pin_cmp);
	for (i = 1; i < w->npins; i++)
		if (w->pins[i].seq == w->pins[i - 1].seq &&
		    memcmp(w->pins[i].hash, w->pins[i - 1].hash,
			CHAIN_HASH_LEN) != 0)
			chaindb_problem(w->r, CHAINDB_CONFLICT, w->pins[i].seq,
			    "two anchors give seq %" PRId64 " different hashes:"
			    " one is forged (the journal's _PID and _EXE of"
			    " each line say which)",
			    w->pins[i].seq);
}

/* Anchors whose seq the walk passed without meeting its row. */
static void
chaindb_pins_absent(struct chaindb_walk *w, int64_t upto)
{
	struct chaindb_pin *p;

	for (; w->pin < w->npins && w->pins[w->pin].seq < upto; w->pin++) {
		p = &w->pins[w->pin];
		if (p->seq <= w->through)
			continue; /* pruned, and the prune is vouched for */
		chaindb_problem(w->r, CHAINDB_MISSING, p->seq,
		    "seq %" PRId64 ": the row a %s anchor names is gone",
		    p->seq, anchor_kind_name(p->kind));
	}
}

/* The anchors naming row id, which has the hash stored. */
static void
chaindb_pins_row(struct chaindb_walk *w, int64_t id,
    const uint8_t stored[CHAIN_HASH_LEN])
{
	struct chaindb_pin *p;

	chaindb_pins_absent(w, id);
	for (; w->pin < w->npins && w->pins[w->pin].seq == id; w->pin++) {
		p = &w->pins[w->pin];
		if (memcmp(p->hash, stored, CHAIN_HASH_LEN) == 0) {
			if (id > w->r->anchored)
				w->r->anchored = id;
			continue;
		}
		chaindb_problem(w->r, CHAINDB_ANCHOR, id,
		    "seq %" PRId64 ": its hash is not the one its %s anchor"
		    " gave: the chain was recomputed after an edit at or"
		    " before it",
		    id, anchor_kind_name(p->kind));
	}
}

/* Does row id (prev, its hash's predecessor) follow the row before? */
static void
chaindb_link(struct chaindb_walk *w, sqlite3_stmt *s, int64_t id,
    const uint8_t prev[CHAIN_HASH_LEN])
{
	const char *kind = (const char *)sqlite3_column_text(s, 4);

	if (!w->started && w->through > 0 && id > w->through &&
	    w->through_has_hash) {
		w->started = 1;
		w->last = w->through;
		memcpy(w->lasthash, w->through_hash, CHAIN_HASH_LEN);
	}
	if (!w->started) {
		if (memcmp(prev, chain_genesis, CHAIN_HASH_LEN) != 0)
			chaindb_problem(w->r, CHAINDB_MISSING, id - 1,
			    "seq %" PRId64 ": the rows before it are gone"
			    " (it follows a row no longer here, and no prune"
			    " covers it)",
			    id);
		w->started = 1;
		return;
	}
	if (id > w->last + 1)
		chaindb_problem(w->r, CHAINDB_MISSING, w->last + 1,
		    "seq %" PRId64 "-%" PRId64 ": %" PRId64 " row(s) missing,"
		    " removed without a prune",
		    w->last + 1, id - 1, id - 1 - w->last);
	else if (memcmp(prev, w->lasthash, CHAIN_HASH_LEN) != 0 &&
	    !(kind != NULL &&
		strcmp(kind, term_event_name(TERM_EV_TAMPER)) == 0))
		chaindb_problem(w->r, CHAINDB_BROKEN, id,
		    "seq %" PRId64 ": does not follow seq %" PRId64 " (its prev"
		    " is not that row's hash): a row replaced or re-chained",
		    id, w->last);
	else if (memcmp(prev, w->lasthash, CHAIN_HASH_LEN) != 0)
		chaindb_problem(w->r, CHAINDB_BROKEN, id,
		    "seq %" PRId64 ": ptyd's tamper event: the chain before it"
		    " was rewritten while ptyd ran",
		    id);
}

/* One row of the walk, in id order. */
static void
chaindb_row(struct chaindb_walk *w, sqlite3_stmt *s)
{
	uint8_t stored[CHAIN_HASH_LEN], prev[CHAIN_HASH_LEN],
	    calc[CHAIN_HASH_LEN];
	int64_t	    id = sqlite3_column_int64(s, 0);
	const char *kind = (const char *)sqlite3_column_text(s, 4);
	int	    island;

	w->r->rows++;
	if (sqlite3_column_type(s, CHAINDB_COL_HASH) == SQLITE_NULL &&
	    sqlite3_column_type(s, CHAINDB_COL_PREV) == SQLITE_NULL) {
		if (!w->started)
			w->r->unchained++;
		else
			chaindb_problem(w->r, CHAINDB_UNCHAINED, id,
			    "seq %" PRId64 ": a row without a hash inside the"
			    " chain: inserted",
			    id);
		return;
	}
	if (chaindb_col_hash(s, CHAINDB_COL_HASH, stored) == -1 ||
	    chaindb_col_hash(s, CHAINDB_COL_PREV, prev) == -1) {
		chaindb_problem(w->r, CHAINDB_EDITED, id,
		    "seq %" PRId64 ": its prev or hash is not a hash", id);
		memset(stored, 0, sizeof(stored));
		memset(prev, 0xff, sizeof(prev));
	} else {
		chaindb_row_hash(s, prev, calc);
		if (memcmp(calc, stored, CHAIN_HASH_LEN) != 0)
			chaindb_problem(w->r, CHAINDB_EDITED, id,
			    "seq %" PRId64 ": edited (its fields no longer"
			    " hash to its hash)",
			    id);
	}
	if (w->r->first_seq == 0)
		w->r->first_seq = id;
	w->r->last_seq = id;
	chaindb_pins_row(w, id, stored);
	/* What a prune left at or below its seq: its own events. */
	island = id <= w->through && kind != NULL &&
	    strcmp(kind, term_event_name(TERM_EV_PRUNE)) == 0;
	if (id <= w->through && !island)
		chaindb_problem(w->r, CHAINDB_BROKEN, id,
		    "seq %" PRId64 ": inside a prune (through seq %" PRId64 ")"
		    " yet still here: inserted",
		    id, w->through);
	if (island || id <= w->through)
		return;
	chaindb_link(w, s, id, prev);
	w->last = id;
	memcpy(w->lasthash, stored, CHAIN_HASH_LEN);
}

static int
chaindb_walk_rows(sqlite3 *db, struct chaindb_walk *w)
{
	sqlite3_stmt *st = NULL;
	int	      rc;

	if (sqlite3_prepare_v2(db,
		"SELECT " CHAINDB_COLS " FROM terminal_events ORDER BY id", -1,
		&st, NULL) != SQLITE_OK)
		return (-1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		chaindb_row(w, st);
	sqlite3_finalize(st);
	return (rc == SQLITE_DONE ? 0 : -1);
}

/* After the last row: anchors past it mean rows were cut off the end. */
static void
chaindb_tail(struct chaindb_walk *w)
{
	int64_t last = w->r->last_seq;

	if (last == 0 && w->through > 0)
		last = w->through;
	for (; w->pin < w->npins; w->pin++) {
		if (w->pins[w->pin].seq <= w->through)
			continue;
		chaindb_problem(w->r, CHAINDB_TAIL, last + 1,
		    "tail removed after anchor seq %" PRId64 ": the last row"
		    " is seq %" PRId64 " (a %s anchor named seq %" PRId64 ")",
		    last, last, anchor_kind_name(w->pins[w->pin].kind),
		    w->pins[w->pin].seq);
		w->pin = w->npins;
		break;
	}
}

/* A start with no stop before it: ptyd was killed, and what it wrote
 * after its last anchor was never vouched for. */
static void
chaindb_kills(struct chaindb_report *r, const struct anchor *a, size_t n)
{
	const struct anchor *prev = NULL;
	char		     msg[256];
	size_t		     i;

	for (i = 0; i < n; i++) {
		if (a[i].kind == ANCHOR_PRUNE)
			continue;
		/*
		 * A start after anything but a stop: ptyd was killed.  Until
		 * the next start, anything of the account's may have served
		 * and written rows, or removed them, unanchored (an attacker's
		 * ptyd: seen in a review, the next start even came at the same
		 * seq).  Not proven, whatever the seqs say.
		 */
		if (a[i].kind == ANCHOR_START && prev != NULL &&
		    prev->kind != ANCHOR_STOP) {
			snprintf(msg, sizeof(msg),
			    "ptyd stopped without a stop anchor after seq %" PRId64
			    " (killed?); the next start came at seq %" PRId64
			    ": what was written or removed between is not"
			    " proven",
			    prev->seq, a[i].seq);
			chaindb_warning(r, prev->seq + 1, a[i].seq, msg);
			r->unclean++;
		}
		prev = &a[i];
	}
}

int
chaindb_verify(sqlite3 *db, const struct anchor *anchors, size_t n,
    int have_anchors, struct chaindb_report *r, const char **why)
{
	struct chaindb_walk w;
	char		    msg[256];
	int		    rc = 0;

	memset(r, 0, sizeof(*r));
	memset(&w, 0, sizeof(w));
	r->have_anchors = have_anchors;
	r->nanchors = n;
	w.r = r;
	*why = NULL;
	if (chaindb_load_prunes(db, &w) == -1) {
		*why = sqlite3_errmsg(db);
		rc = -1;
		goto out;
	}
	chaindb_match_prunes(&w, anchors, n);
	chaindb_load_pins(&w, anchors, n);
	chaindb_kills(r, anchors, n);
	r->pruned_through = w.through;
	if (chaindb_walk_rows(db, &w) == -1) {
		*why = sqlite3_errmsg(db);
		rc = -1;
		goto out;
	}
	chaindb_tail(&w);
	if (have_anchors && r->last_seq > r->anchored) {
		snprintf(msg, sizeof(msg),
		    "seq %" PRId64 "-%" PRId64 " are not covered by an anchor"
		    " yet (written in the last seconds, or ptyd never sent"
		    " them)",
		    r->anchored + 1, r->last_seq);
		chaindb_warning(r, r->anchored + 1, r->last_seq, msg);
	}
out:
	free(w.pevs);
	free(w.pins);
	return (rc);
}
