/*
 * utf8.c -- UTF-8 validation and sanitising (utf8.h).
 *
 * Owns: the well-formedness table of Unicode 15 section 3.9 (table 3-7) and
 * the held-back tail.  Does not own: escaping or positions.  Runs on every
 * byte of terminal output, so ASCII runs are found eight bytes at a time
 * and copied in one go.
 */
#include <string.h>

#include "utf8.h"

static const uint8_t utf8_fffd[3] = { 0xef, 0xbf, 0xbd };

/* The end of the run of ASCII bytes starting at p[i], p[0..n). */
static size_t
utf8_ascii_end(const uint8_t *p, size_t i, size_t n)
{
	uint64_t w;

	/* A word without a high bit set is eight ASCII bytes. */
	for (; i + 8 <= n; i += 8) {
		memcpy(&w, p + i, sizeof(w));
		if ((w & 0x8080808080808080ULL) != 0)
			break;
	}
	while (i < n && p[i] < 0x80)
		i++;
	return (i);
}

void
utf8_init(struct utf8_state *st)
{
	st->ntail = 0;
}

size_t
utf8_held(const struct utf8_state *st)
{
	return (st->ntail);
}

int
utf8_seq(const uint8_t *p, size_t n, size_t *bad)
{
	uint8_t c = p[0], lo = 0x80, hi = 0xbf;
	size_t	need, i;

	*bad = 1;
	if (c < 0x80)
		return (1);
	if (c < 0xc2 || c > 0xf4)
		return (0);
	if (c < 0xe0)
		need = 2;
	else if (c < 0xf0) {
		need = 3;
		if (c == 0xe0)
			lo = 0xa0; /* overlong */
		else if (c == 0xed)
			hi = 0x9f; /* surrogates */
	} else {
		need = 4;
		if (c == 0xf0)
			lo = 0x90; /* overlong */
		else if (c == 0xf4)
			hi = 0x8f; /* above U+10FFFF */
	}
	for (i = 1; i < need; i++) {
		if (i >= n)
			return (-1);
		if (p[i] < lo || p[i] > hi) {
			*bad = i;
			return (0);
		}
		lo = 0x80;
		hi = 0xbf;
	}
	return ((int)need);
}

size_t
utf8_valid_prefix(const uint8_t *p, size_t n)
{
	size_t i = 0, bad;
	int    r;

	for (;;) {
		if ((i = utf8_ascii_end(p, i, n)) >= n)
			return (n);
		if ((r = utf8_seq(p + i, n - i, &bad)) <= 0)
			return (i);
		i += (size_t)r;
	}
}

/*
 * Sanitise p[0..n) into out.  A valid but incomplete sequence at the very
 * end is not emitted: its length goes to *rest for the caller to hold.
 */
static int
utf8_run(const uint8_t *p, size_t n, struct buf *out, size_t *rest)
{
	size_t i = 0, j, bad;

	*rest = 0;
	while (i < n) {
		/* Well-formed runs are copied whole. */
		j = i + utf8_valid_prefix(p + i, n - i);
		if (j > i && buf_add(out, p + i, j - i) == -1)
			return (-1);
		if ((i = j) >= n)
			break;
		if (utf8_seq(p + i, n - i, &bad) == -1) {
			*rest = n - i;
			break;
		}
		if (buf_add(out, utf8_fffd, sizeof(utf8_fffd)) == -1)
			return (-1);
		i += bad;
	}
	return (0);
}

int
utf8_sanitise(struct utf8_state *st, const uint8_t *in, size_t len,
    struct buf *out)
{
	uint8_t tmp[6];
	size_t	take, n, rest, bad;
	int	r;

	/*
	 * Finish the held sequence first, with at most three bytes of the new
	 * chunk; whatever it does not use is then processed in place.
	 */
	if (st->ntail != 0 && len != 0) {
		take = len < 3 ? len : 3;
		memcpy(tmp, st->tail, st->ntail);
		memcpy(tmp + st->ntail, in, take);
		n = st->ntail + take;
		r = utf8_seq(tmp, n, &bad);
		if (r == -1) {
			/* Still incomplete: the whole chunk joins the tail. */
			memcpy(st->tail + st->ntail, in, take);
			st->ntail += take;
			return (0);
		}
		if (r > 0) {
			if (buf_add(out, tmp, (size_t)r) == -1)
				return (-1);
		} else {
			if (buf_add(out, utf8_fffd, sizeof(utf8_fffd)) == -1)
				return (-1);
			r = (int)bad;
		}
		/*
		 * The held bytes are a valid prefix, so both a complete
		 * sequence and a bad subpart cover all of them.
		 */
		in += (size_t)r - st->ntail;
		len -= (size_t)r - st->ntail;
		st->ntail = 0;
	}
	if (utf8_run(in, len, out, &rest) == -1)
		return (-1);
	if (rest != 0) {
		memcpy(st->tail + st->ntail, in + len - rest, rest);
		st->ntail += rest;
	}
	return (0);
}

int
utf8_flush(struct utf8_state *st, struct buf *out)
{
	/* A held tail is one valid prefix: one maximal subpart, one U+FFFD. */
	if (st->ntail == 0)
		return (0);
	st->ntail = 0;
	return (buf_add(out, utf8_fffd, sizeof(utf8_fffd)));
}

size_t
utf8_count(const char *s, size_t len)
{
	size_t i, n = 0;

	for (i = 0; i < len; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			n++;
	return (n);
}
