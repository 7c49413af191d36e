/*
 * test_ring.c -- the output ring: lazy growth, wrap, replay from a
 * position, positions that fell out, and the UTF-8 position helpers.
 */
#include <criterion/criterion.h>

#include <stdint.h>
#include <string.h>

#include "ring.h"

#define BASE	1000000000000ULL

static void
fill_pattern(uint8_t *buf, size_t n, uint64_t from)
{
	size_t	i;

	for (i = 0; i < n; i++)
		buf[i] = (uint8_t)((from + i) * 7 + 3);
}

Test(ring, empty_ring_allocates_nothing)
{
	struct ring	r;
	struct iovec	iov[2];
	int		cnt;

	ring_init(&r, BASE, 1 << 20);
	cr_assert_eq(r.cap, 0, "an idle terminal must not pay for a ring");
	cr_assert_eq(ring_start(&r), BASE);
	cr_assert_eq(ring_end(&r), BASE);
	cr_assert_eq(ring_peek(&r, BASE, 10, iov, &cnt), 0);
	ring_free(&r);
}

Test(ring, grows_lazily_and_doubles_up_to_max)
{
	struct ring	r;
	uint8_t		in[20000], out[20000];

	ring_init(&r, BASE, 16384);
	ring_append(&r, "$ ", 2);
	cr_assert_eq(r.cap, RING_INITIAL, "first output allocates a small ring");
	fill_pattern(in, sizeof(in), 0);
	ring_append(&r, in, 5000);
	cr_assert_eq(r.cap, 8192);
	cr_assert_eq(ring_start(&r), BASE, "growth below max loses nothing");
	cr_assert_eq(ring_copy(&r, BASE + 2, out, 5000), 5000);
	cr_assert_eq(memcmp(in, out, 5000), 0);
	ring_append(&r, in + 5000, 15000);
	cr_assert_eq(r.cap, 16384, "never beyond max");
	cr_assert_eq(ring_end(&r) - ring_start(&r), 16384);
	ring_free(&r);
}

Test(ring, wraps_and_keeps_the_newest_bytes)
{
	struct ring	r;
	uint8_t		in[10000], out[4096];
	struct iovec	iov[2];
	int		cnt;

	ring_init(&r, BASE, 4096);
	fill_pattern(in, sizeof(in), 0);
	ring_append(&r, in, sizeof(in));
	cr_assert_eq(ring_end(&r), BASE + 10000);
	cr_assert_eq(ring_start(&r), BASE + 10000 - 4096);
	cr_assert_eq(ring_copy(&r, ring_start(&r), out, sizeof(out)), 4096);
	cr_assert_eq(memcmp(out, in + 10000 - 4096, 4096), 0);
	/* The kept bytes straddle the buffer's end: two slices. */
	cr_assert_eq(ring_peek(&r, ring_start(&r), 4096, iov, &cnt), 4096);
	cr_assert_eq(cnt, 2);
	cr_assert_eq(iov[0].iov_len + iov[1].iov_len, 4096);
	ring_free(&r);
}

Test(ring, replays_exactly_from_any_kept_position)
{
	struct ring	r;
	uint8_t		in[9000], out[9000];
	uint64_t	pos;
	size_t		n;

	ring_init(&r, BASE, 5000);	/* not a power of two */
	fill_pattern(in, sizeof(in), 0);
	ring_append(&r, in, sizeof(in));
	for (pos = ring_start(&r); pos < ring_end(&r); pos += 333) {
		n = ring_copy(&r, pos, out, sizeof(out));
		cr_assert_eq(n, ring_end(&r) - pos);
		cr_assert_eq(memcmp(out, in + (pos - BASE), n), 0,
		    "replay from %llu differs", (unsigned long long)pos);
	}
	ring_free(&r);
}

Test(ring, positions_that_fell_out_give_nothing)
{
	struct ring	r;
	uint8_t		in[6000], out[16];
	struct iovec	iov[2];
	int		cnt;

	ring_init(&r, BASE, 4096);
	fill_pattern(in, sizeof(in), 0);
	ring_append(&r, in, sizeof(in));
	cr_assert_eq(ring_peek(&r, ring_start(&r) - 1, 10, iov, &cnt), 0);
	cr_assert_eq(ring_peek(&r, BASE, 10, iov, &cnt), 0);
	cr_assert_eq(ring_peek(&r, ring_end(&r), 10, iov, &cnt), 0,
	    "nothing at or past the end");
	cr_assert_eq(ring_copy(&r, ring_end(&r) - 1, out, sizeof(out)), 1);
	ring_free(&r);
}

Test(ring, space_respects_the_limit_and_below_max_never_overwrites)
{
	struct ring	r;
	uint8_t		*p, in[4096];
	size_t		n;

	ring_init(&r, BASE, 1 << 20);
	fill_pattern(in, sizeof(in), 0);
	ring_append(&r, in, sizeof(in));	/* exactly the initial cap */
	n = ring_space(&r, 100, &p);
	cr_assert_eq(n, 100, "limit honoured");
	n = ring_space(&r, 1 << 20, &p);
	cr_assert_leq(n, r.cap - ring_used(&r), "grows instead of overwriting");
	cr_assert_eq(ring_space(&r, 0, &p), 0);
	memset(p, 'x', n);
	ring_commit(&r, n);
	cr_assert_eq(ring_start(&r), BASE);
	ring_free(&r);
}

Test(ring, at_max_new_output_overwrites_the_oldest)
{
	struct ring	r;
	uint8_t		*p;
	size_t		n, total = 0;

	ring_init(&r, BASE, 4096);
	while (total < 3 * 4096) {
		n = ring_space(&r, 1000, &p);
		cr_assert_gt(n, 0);
		memset(p, 'a', n);
		ring_commit(&r, n);
		total += n;
	}
	cr_assert_eq(ring_used(&r), 4096);
	cr_assert_eq(ring_start(&r), ring_end(&r) - 4096);
	ring_free(&r);
}

Test(ring, boundary_skips_continuation_bytes_only)
{
	struct ring	r;
	/* "a" then U+20AC (E2 82 AC) then "b" */
	const uint8_t	s[] = { 'a', 0xe2, 0x82, 0xac, 'b' };

	ring_init(&r, BASE, 64);
	ring_append(&r, s, sizeof(s));
	cr_assert_eq(ring_boundary(&r, BASE), BASE);
	cr_assert_eq(ring_boundary(&r, BASE + 1), BASE + 1, "a lead byte starts");
	cr_assert_eq(ring_boundary(&r, BASE + 2), BASE + 4);
	cr_assert_eq(ring_boundary(&r, BASE + 3), BASE + 4);
	cr_assert_eq(ring_boundary(&r, BASE - 5), BASE, "clamped to start");
	ring_free(&r);
}

Test(ring, boundary_after_the_oldest_byte_was_overwritten_mid_character)
{
	struct ring	r;
	uint8_t		s[8];

	/* Ring of 8; "x" then three 3-byte characters: the oldest kept
	 * byte ends up inside a character. */
	ring_init(&r, BASE, 8);
	ring_append(&r, "x", 1);
	memcpy(s, "\xe2\x82\xac\xe2\x82\xac", 6);
	ring_append(&r, s, 6);
	ring_append(&r, "\xe2\x82\xac", 3);
	cr_assert_eq(ring_start(&r), BASE + 2);	/* the 0x82 of the first */
	cr_assert_eq(ring_boundary(&r, ring_start(&r)), BASE + 4);
	ring_free(&r);
}

Test(ring, boundary_stops_after_three_continuation_bytes)
{
	struct ring	r;
	const uint8_t	s[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 'z' };

	ring_init(&r, BASE, 64);
	ring_append(&r, s, sizeof(s));
	cr_assert_eq(ring_boundary(&r, BASE), BASE + 3,
	    "malformed runs do not swallow output");
	ring_free(&r);
}

Test(ring, char_end_never_cuts_a_character)
{
	struct ring	r;
	/* "ab" U+1F600 (F0 9F 98 80) "c" */
	const uint8_t	s[] = { 'a', 'b', 0xf0, 0x9f, 0x98, 0x80, 'c' };

	ring_init(&r, BASE, 64);
	ring_append(&r, s, sizeof(s));
	cr_assert_eq(ring_char_end(&r, BASE, BASE + 2), BASE + 2);
	cr_assert_eq(ring_char_end(&r, BASE, BASE + 3), BASE + 2);
	cr_assert_eq(ring_char_end(&r, BASE, BASE + 4), BASE + 2);
	cr_assert_eq(ring_char_end(&r, BASE, BASE + 5), BASE + 2);
	cr_assert_eq(ring_char_end(&r, BASE, BASE + 6), BASE + 6);
	cr_assert_eq(ring_char_end(&r, BASE + 2, BASE + 4), BASE + 2,
	    "a span that is one incomplete character yields nothing");
	ring_free(&r);
}

Test(ring, char_end_lets_malformed_bytes_through)
{
	struct ring	r;
	const uint8_t	s[] = { 'a', 0xc3, 'A', 0xff, 0xc0 };

	ring_init(&r, BASE, 64);
	ring_append(&r, s, sizeof(s));
	cr_assert_eq(ring_char_end(&r, BASE, BASE + 3), BASE + 3,
	    "a lead byte followed by ASCII is malformed, not incomplete");
	cr_assert_eq(ring_char_end(&r, BASE, BASE + 4), BASE + 4);
	cr_assert_eq(ring_char_end(&r, BASE, BASE + 5), BASE + 5,
	    "0xc0 can never start a character: never held back");
	ring_free(&r);
}
