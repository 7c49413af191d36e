/*
 * sharetok.h -- a share's token (DESIGN 6): 32 random bytes, shown once
 * to the owner as 43 characters of base64url without padding, kept only
 * as its SHA-256, found by that hash and compared in constant time.
 *
 * Owns: the token's text form, its hash, the comparison.  Pure but for
 * sharetok_new (getrandom).  Does not own: where a hash is kept (share.c)
 * or anything a share may do.
 */
#ifndef PTYD_SHARETOK_H
#define PTYD_SHARETOK_H

#include <stddef.h>
#include <stdint.h>

#define SHARETOK_LEN  32 /* random bytes */
#define SHARETOK_TEXT 43 /* base64url characters, no padding */
#define SHARETOK_HASH 32 /* SHA-256 */

/* Fill raw with fresh random bytes.  0, or -1 (no entropy yet). */
int sharetok_new(uint8_t raw[SHARETOK_LEN]);
/* raw as text: SHARETOK_TEXT characters and a NUL in out. */
void sharetok_encode(const uint8_t raw[SHARETOK_LEN],
    char			   out[SHARETOK_TEXT + 1]);
/* text back to raw: 0, or -1 unless it is exactly SHARETOK_TEXT
 * characters of base64url whose last one carries no stray bits. */
int sharetok_decode(const char *text, uint8_t raw[SHARETOK_LEN]);
/* SHA-256 of the raw bytes. */
void sharetok_hash(const uint8_t raw[SHARETOK_LEN],
    uint8_t			 hash[SHARETOK_HASH]);
/* 1 if a and b are the same hash; the time taken does not depend on
 * where they differ. */
int sharetok_equal(const uint8_t a[SHARETOK_HASH],
    const uint8_t		 b[SHARETOK_HASH]);
/* The hash as 64 lowercase hex digits and a NUL (the database's
 * shares.token_hash). */
void sharetok_hex(const uint8_t hash[SHARETOK_HASH],
    char			out[2 * SHARETOK_HASH + 1]);

#endif /* PTYD_SHARETOK_H */
