/*
 * chaindb.h -- the audit chain as it stands in SQLite: reading rows back
 * and hashing them as stored, the chained prune, and the verifier behind
 * `ptydctl audit verify`.
 *
 * Owns: the SQL over terminal_events' chain columns for tools, and the
 * verdicts (what kind of break, at which seq).  Does not own: the
 * encoding (chain.c), ptyd's own writes (store.c), the anchor lines
 * (anchor.c), or printing (ptydctl/ptydctl_audit.c).
 */
#ifndef PTYD_CHAINDB_H
#define PTYD_CHAINDB_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "anchor.h"
#include "chain.h"

/* The columns every chain query selects, in this order, from col 0. */
#define CHAINDB_COLS \
	"id, at, session_id, terminal_id, kind, actor, detail, prev, hash"
#define CHAINDB_COL_PREV 7
#define CHAINDB_COL_HASH 8

/* The hash of the row in stmt's columns 0..6 following prev, each column
 * encoded by the type it has in the file (an edit of a type shows). */
void chaindb_row_hash(sqlite3_stmt *, const uint8_t prev[CHAIN_HASH_LEN],
    uint8_t out[CHAIN_HASH_LEN]);
/* Column col as a hash; -1 when NULL or not 64 hex digits. */
int chaindb_col_hash(sqlite3_stmt *, int col, uint8_t out[CHAIN_HASH_LEN]);

/* ---- pruning (ptydctl prune) ---- */

struct chaindb_prune {
	int64_t removed;  /* events deleted */
	int64_t through;  /* every row up to it (but prune events) went */
	int	has_hash; /* row through was chained */
	uint8_t hash[CHAIN_HASH_LEN];
	int64_t seq; /* the prune event's own row */
	uint8_t seq_hash[CHAIN_HASH_LEN];
	double	at; /* its time and detail, for its audit_log line */
	char	detail[256];
};

/* Inside the caller's BEGIN IMMEDIATE: remove the events before `before`
 * (Unix seconds) up to the first row at or after it, and log a prune
 * event by actor chained onto the last row.  0, or -1 (sqlite3_errmsg, or
 * *why for a database whose chain has no start). */
int chaindb_prune(sqlite3 *, double before, const char *actor,
    struct chaindb_prune *, const char **why);

/* ---- verifying (ptydctl audit verify) ---- */

enum chaindb_break {
	CHAINDB_EDITED,	     /* a row's hash is not that of its fields */
	CHAINDB_MISSING,     /* rows absent that no prune removed */
	CHAINDB_BROKEN,	     /* a row does not follow the one before */
	CHAINDB_TAIL,	     /* rows gone after an anchor's seq */
	CHAINDB_ANCHOR,	     /* a row's hash is not the anchor's */
	CHAINDB_UNCHAINED,   /* a row without a hash inside the chain */
	CHAINDB_TAMPER,	     /* ptyd itself saw its head row rewritten */
	CHAINDB_CONFLICT,    /* two anchors disagree about one seq */
	CHAINDB_PRUNE_ALONE, /* a prune with no anchor, or no event */
	CHAINDB_NBREAKS
};

struct chaindb_problem {
	enum chaindb_break kind;
	int64_t		   seq;
	char		   msg[256];
};

/* A kill -9 and its window: anchors without a stop before a start. */
struct chaindb_warning {
	int64_t from, to; /* rows written after the last anchor */
	char	msg[256];
};

struct chaindb_report {
	int64_t rows;		     /* events in the table */
	int64_t unchained;	     /* from before the chain (schema 4) */
	int64_t first_seq, last_seq; /* of the chain; 0: none */
	int64_t anchored;	     /* the highest seq an anchor covers */
	int64_t pruned_through;	     /* 0: never pruned */
	size_t	nanchors;
	size_t	nprunes;
	struct chaindb_problem *problems;
	size_t			nproblems;
	struct chaindb_warning *warnings;
	size_t			nwarnings;
	size_t			unclean; /* starts after no stop: not proven */
	int			have_anchors;
};

/* Verify every row of db against anchors[0..n) (already those of this
 * database, in the order they were logged); have_anchors 0 checks the
 * chain alone.  0, or -1 if the table cannot be read (*why).  The report
 * is ok when it has no problems; chaindb_report_free frees it. */
int	    chaindb_verify(sqlite3 *, const struct anchor *anchors, size_t n,
	    int have_anchors, struct chaindb_report *, const char **why);
void	    chaindb_report_free(struct chaindb_report *);
const char *chaindb_break_name(enum chaindb_break);

#endif /* PTYD_CHAINDB_H */
