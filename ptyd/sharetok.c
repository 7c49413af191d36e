/*
 * sharetok.c -- a share's token: text, hash, comparison (sharetok.h).
 *
 * The token has 256 random bits, so a fast hash is enough: nobody can
 * try enough of them for a slow one to matter.  The text never leaves
 * the functions that make and read it: callers keep the hash.
 */
#include <sys/random.h>

#include <errno.h>
#include <string.h>

#include <nettle/sha2.h>

#include "sharetok.h"

static const char sharetok_b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int
sharetok_new(uint8_t raw[SHARETOK_LEN])
{
	ssize_t n;
	size_t	got = 0;

	while (got < SHARETOK_LEN) {
		n = getrandom(raw + got, SHARETOK_LEN - got, GRND_NONBLOCK);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return (-1);
		got += (size_t)n;
	}
	return (0);
}

void
sharetok_encode(const uint8_t raw[SHARETOK_LEN], char out[SHARETOK_TEXT + 1])
{
	uint32_t acc = 0;
	size_t	 i, o = 0;
	int	 bits = 0;

	for (i = 0; i < SHARETOK_LEN; i++) {
		acc = (acc << 8) | raw[i];
		bits += 8;
		while (bits >= 6) {
			bits -= 6;
			out[o++] = sharetok_b64[(acc >> bits) & 0x3f];
		}
	}
	if (bits > 0)
		out[o++] = sharetok_b64[(acc << (6 - bits)) & 0x3f];
	out[o] = '\0';
}

static int
sharetok_value(char c)
{
	const char *p;

	if (c == '\0' || (p = strchr(sharetok_b64, c)) == NULL)
		return (-1);
	return ((int)(p - sharetok_b64));
}

int
sharetok_decode(const char *text, uint8_t raw[SHARETOK_LEN])
{
	uint32_t acc = 0;
	size_t	 i, o = 0;
	int	 bits = 0, v;

	if (strlen(text) != SHARETOK_TEXT)
		return (-1);
	for (i = 0; i < SHARETOK_TEXT; i++) {
		if ((v = sharetok_value(text[i])) == -1)
			return (-1);
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			raw[o++] = (uint8_t)(acc >> bits);
		}
	}
	/* 43 characters carry 258 bits: the last two must be zero, or
	 * two texts would name one token. */
	if ((acc & ((1U << bits) - 1)) != 0)
		return (-1);
	return (o == SHARETOK_LEN ? 0 : -1);
}

void
sharetok_hash(const uint8_t raw[SHARETOK_LEN], uint8_t hash[SHARETOK_HASH])
{
	struct sha256_ctx c;

	sha256_init(&c);
	sha256_update(&c, SHARETOK_LEN, raw);
	sha256_digest(&c, SHARETOK_HASH, hash);
}

int
sharetok_equal(const uint8_t a[SHARETOK_HASH], const uint8_t b[SHARETOK_HASH])
{
	volatile uint8_t d = 0;
	size_t		 i;

	for (i = 0; i < SHARETOK_HASH; i++)
		d |= a[i] ^ b[i];
	return (d == 0);
}

void
sharetok_hex(const uint8_t hash[SHARETOK_HASH], char out[2 * SHARETOK_HASH + 1])
{
	static const char hex[] = "0123456789abcdef";
	size_t		  i;

	for (i = 0; i < SHARETOK_HASH; i++) {
		out[2 * i] = hex[hash[i] >> 4];
		out[2 * i + 1] = hex[hash[i] & 0xf];
	}
	out[2 * SHARETOK_HASH] = '\0';
}
