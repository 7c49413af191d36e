/*
 * chain.c -- the audit log's hash chain: the encoding of one row of
 * terminal_events and its SHA-256 (nettle) with the previous row's hash.
 *
 * Owns: the encoding, which is part of the contract (DESIGN 7), since
 * ptydctl audit verify recomputes what ptyd wrote, possibly years later:
 *
 *   SHA-256( "ptyd-audit-chain-1" (length-prefixed) || prev (32 bytes) ||
 *            seq || at || session_id || terminal_id || kind || actor ||
 *            detail )
 *
 * each field a tag byte, 0 NULL, 1 integer (8 bytes, big-endian two's
 * complement), 2 real (the IEEE 754 double's 8 bytes, big-endian), 3 text
 * and 4 blob (a 4-byte big-endian length, then the bytes).  Fixed sizes
 * and length prefixes make the encoding unambiguous: no two different
 * rows (nor a NULL and an empty string, nor 5 and '5') encode alike.
 * Does not own: SQL or I/O (store.c, chaindb.c, anchor.c).
 */
#include <stdint.h>
#include <string.h>

#include "chain.h"
#include "util.h"

#define CHAIN_DOMAIN "ptyd-audit-chain-1"

enum {
	CHAIN_T_NULL,
	CHAIN_T_INT,
	CHAIN_T_REAL,
	CHAIN_T_TEXT,
	CHAIN_T_BLOB,
};

const uint8_t chain_genesis[CHAIN_HASH_LEN];

static void
chain_u64(struct chain_ctx *c, uint8_t tag, uint64_t v)
{
	uint8_t b[9];
	int	i;

	b[0] = tag;
	for (i = 0; i < 8; i++)
		b[1 + i] = (uint8_t)(v >> (56 - 8 * i));
	sha256_update(&c->sha, sizeof(b), b);
}

static void
chain_bytes(struct chain_ctx *c, uint8_t tag, const void *p, size_t n)
{
	uint8_t	 b[5];
	uint32_t len = (uint32_t)n;

	/* Every field is bounded far below 4 GB (STORE_TEXT_MAX, SQLite's
	 * own limit): the length cannot wrap. */
	b[0] = tag;
	b[1] = (uint8_t)(len >> 24);
	b[2] = (uint8_t)(len >> 16);
	b[3] = (uint8_t)(len >> 8);
	b[4] = (uint8_t)len;
	sha256_update(&c->sha, sizeof(b), b);
	if (n > 0)
		sha256_update(&c->sha, n, p);
}

void
chain_begin(struct chain_ctx *c, const uint8_t prev[CHAIN_HASH_LEN])
{
	sha256_init(&c->sha);
	chain_bytes(c, CHAIN_T_TEXT, CHAIN_DOMAIN, strlen(CHAIN_DOMAIN));
	sha256_update(&c->sha, CHAIN_HASH_LEN, prev);
}

void
chain_null(struct chain_ctx *c)
{
	uint8_t tag = CHAIN_T_NULL;

	sha256_update(&c->sha, 1, &tag);
}

void
chain_int(struct chain_ctx *c, int64_t v)
{
	chain_u64(c, CHAIN_T_INT, (uint64_t)v);
}

void
chain_real(struct chain_ctx *c, double v)
{
	uint64_t bits;

	memcpy(&bits, &v, sizeof(bits));
	chain_u64(c, CHAIN_T_REAL, bits);
}

void
chain_text(struct chain_ctx *c, const void *p, size_t n)
{
	chain_bytes(c, CHAIN_T_TEXT, p, n);
}

void
chain_blob(struct chain_ctx *c, const void *p, size_t n)
{
	chain_bytes(c, CHAIN_T_BLOB, p, n);
}

void
chain_end(struct chain_ctx *c, uint8_t out[CHAIN_HASH_LEN])
{
	sha256_digest(&c->sha, CHAIN_HASH_LEN, out);
}

static void
chain_str(struct chain_ctx *c, const char *s)
{
	if (s == NULL)
		chain_null(c);
	else
		chain_text(c, s, strlen(s));
}

void
chain_row_hash(const struct chain_row *r, const uint8_t prev[CHAIN_HASH_LEN],
    uint8_t out[CHAIN_HASH_LEN])
{
	struct chain_ctx c;

	chain_begin(&c, prev);
	chain_int(&c, r->seq);
	chain_real(&c, r->at);
	chain_str(&c, r->sid);
	if (r->term_id != 0)
		chain_int(&c, r->term_id);
	else
		chain_null(&c);
	chain_str(&c, r->kind);
	chain_str(&c, r->actor);
	chain_str(&c, r->detail);
	chain_end(&c, out);
}

void
chain_hex(const uint8_t h[CHAIN_HASH_LEN], char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t		  i;

	for (i = 0; i < CHAIN_HASH_LEN; i++) {
		out[2 * i] = digits[h[i] >> 4];
		out[2 * i + 1] = digits[h[i] & 0xf];
	}
	out[CHAIN_HEX_LEN] = '\0';
}

int
chain_unhex(const char *s, size_t n, uint8_t out[CHAIN_HASH_LEN])
{
	size_t i;
	int    hi, lo;

	if (s == NULL || n != CHAIN_HEX_LEN)
		return (-1);
	for (i = 0; i < CHAIN_HASH_LEN; i++) {
		if ((hi = util_hexval(s[2 * i])) == -1 ||
		    (lo = util_hexval(s[2 * i + 1])) == -1)
			return (-1);
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return (0);
}
