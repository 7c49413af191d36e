/*
 * chain.h -- the audit log's hash chain: how one row of terminal_events is
 * encoded and hashed (SHA-256, nettle) together with the hash of the row
 * before it.
 *
 * Owns: the encoding (DESIGN 7) and nothing else: no SQL, no I/O.  Does
 * not own: where the rows are (store.c writes them, chaindb.c reads them
 * back for ptydctl), nor where the chain's head is sent (anchor.c).
 */
#ifndef PTYD_CHAIN_H
#define PTYD_CHAIN_H

#include <stddef.h>
#include <stdint.h>

#include <nettle/sha2.h>

#define CHAIN_HASH_LEN 32
#define CHAIN_HEX_LEN  (2 * CHAIN_HASH_LEN)

/* The prev of a chain's first row: 32 zero bytes. */
extern const uint8_t chain_genesis[CHAIN_HASH_LEN];

/* One row as ptyd writes it.  NULL strings and term_id 0 are SQL NULL. */
struct chain_row {
	int64_t	    seq; /* the row's id */
	double	    at;
	const char *sid;
	int64_t	    term_id;
	const char *kind;
	const char *actor;
	const char *detail;
};

/* A row's hash built field by field, in the columns' order: seq, at,
 * session_id, terminal_id, kind, actor, detail.  Each field is one tag
 * byte and a payload whose length is fixed or prefixed, so no two rows
 * encode alike. */
struct chain_ctx {
	struct sha256_ctx sha;
};

void chain_begin(struct chain_ctx *, const uint8_t prev[CHAIN_HASH_LEN]);
void chain_null(struct chain_ctx *);
void chain_int(struct chain_ctx *, int64_t);
void chain_real(struct chain_ctx *, double);
void chain_text(struct chain_ctx *, const void *, size_t);
void chain_blob(struct chain_ctx *, const void *, size_t);
void chain_end(struct chain_ctx *, uint8_t out[CHAIN_HASH_LEN]);

/* The hash of r following prev. */
void chain_row_hash(const struct chain_row *r,
    const uint8_t prev[CHAIN_HASH_LEN], uint8_t out[CHAIN_HASH_LEN]);

/* Lower-case hex, NUL-terminated (CHAIN_HEX_LEN + 1 bytes). */
void chain_hex(const uint8_t h[CHAIN_HASH_LEN], char *out);
/* Exactly CHAIN_HEX_LEN hex digits (either case) of s[0..n); 0 or -1. */
int chain_unhex(const char *s, size_t n, uint8_t out[CHAIN_HASH_LEN]);

#endif /* PTYD_CHAIN_H */
