/*
 * test_utf8.c -- the UTF-8 sanitiser on hostile input: every ill-formed
 * sequence becomes U+FFFD (one per maximal subpart), well-formed text
 * passes untouched, and a character split across chunks at any byte is
 * joined, never replaced, with the held-back tail bounding event ids.
 */
#include <criterion/criterion.h>

#include <string.h>

#include "utf8.h"

#define R	"\xef\xbf\xbd"		/* U+FFFD */

/* Sanitise the chunks (NULL-terminated list) then flush; compare. */
static void
check_chunks(const char *const *chunks, const size_t *lens, const char *want,
    size_t wantlen)
{
	struct utf8_state	st;
	struct buf		out;
	size_t			i;

	utf8_init(&st);
	buf_init(&out, 1 << 20);
	for (i = 0; chunks[i] != NULL; i++)
		cr_assert_eq(utf8_sanitise(&st, (const uint8_t *)chunks[i],
		    lens[i], &out), 0);
	cr_assert_eq(utf8_flush(&st, &out), 0);
	cr_expect_eq(out.len, wantlen, "length %zu, want %zu", out.len,
	    wantlen);
	cr_expect(out.len == wantlen && memcmp(out.p, want, wantlen) == 0,
	    "content differs");
	buf_free(&out);
}

static void
check(const char *in, size_t len, const char *want, size_t wantlen)
{
	const char	*chunks[2] = { in, NULL };
	size_t		 lens[1] = { len };

	check_chunks(chunks, lens, want, wantlen);
}

#define CHECK(in, want) check(in, sizeof(in) - 1, want, sizeof(want) - 1)

Test(utf8, well_formed_passes_untouched)
{
	CHECK("hello \x1b[31mred\x1b[0m\r\n", "hello \x1b[31mred\x1b[0m\r\n");
	CHECK("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "\xc3\xa9\xe2\x82\xac"
	    "\xf0\x9f\x98\x80");
	CHECK("\x00\x7f", "\x00\x7f");
	/* Boundaries: U+0080, U+07FF, U+0800, U+FFFF, U+10000, U+10FFFF. */
	CHECK("\xc2\x80\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf\xf0\x90\x80\x80"
	    "\xf4\x8f\xbf\xbf", "\xc2\x80\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf"
	    "\xf0\x90\x80\x80\xf4\x8f\xbf\xbf");
	CHECK("\xed\x9f\xbf\xee\x80\x80", "\xed\x9f\xbf\xee\x80\x80");
}

Test(utf8, overlongs_are_replaced)
{
	CHECK("\xc0\xaf", R R);
	CHECK("\xc1\xbf", R R);
	CHECK("\xe0\x80\xaf", R R R);
	CHECK("\xe0\x9f\xbf", R R R);
	CHECK("\xf0\x80\x80\xaf", R R R R);
	CHECK("\xf0\x8f\xbf\xbf", R R R R);
}

Test(utf8, surrogates_are_replaced)
{
	CHECK("\xed\xa0\x80", R R R);
	CHECK("\xed\xbf\xbf", R R R);
	CHECK("a\xed\xa0\x80\xed\xb0\x80z", "a" R R R R R R "z");
}

Test(utf8, out_of_range_leads_are_replaced)
{
	CHECK("\xf4\x90\x80\x80", R R R R);
	CHECK("\xf5\x80\x80\x80", R R R R);
	CHECK("\xf8\x88\x80\x80\x80", R R R R R);
	CHECK("\xfc\x84\x80\x80\x80\x80", R R R R R R);
	CHECK("\xfe\xff", R R);
	CHECK("x\xf5y\xffz", "x" R "y" R "z");
}

Test(utf8, lone_continuations_are_replaced)
{
	CHECK("\x80", R);
	CHECK("a\xbf\x80" "b", "a" R R "b");
}

Test(utf8, truncated_sequences_are_one_replacement_each)
{
	/* Maximal subparts: a valid prefix cut short is one U+FFFD. */
	CHECK("\xe2\x82" "A", R "A");
	CHECK("\xf0\x9f\x98" "A", R "A");
	CHECK("\xf0\x9f" "\xe2\x82\xac", R "\xe2\x82\xac");
	CHECK("\xc3" "\xc3\xa9", R "\xc3\xa9");
	/* At the very end of the stream the flush replaces it. */
	CHECK("ok\xe2\x82", "ok" R);
	CHECK("ok\xf0", "ok" R);
}

Test(utf8, character_split_across_chunks_is_joined)
{
	static const char	euro[] = "\xe2\x82\xac", smile[] =
	    "\xf0\x9f\x98\x80";
	const char		*chunks[5];
	size_t			 lens[4];
	size_t			 cut;

	for (cut = 1; cut < 3; cut++) {
		chunks[0] = euro;
		lens[0] = cut;
		chunks[1] = euro + cut;
		lens[1] = 3 - cut;
		chunks[2] = NULL;
		check_chunks(chunks, lens, euro, 3);
	}
	/* One byte per chunk. */
	chunks[0] = smile;
	chunks[1] = smile + 1;
	chunks[2] = smile + 2;
	chunks[3] = smile + 3;
	chunks[4] = NULL;
	lens[0] = lens[1] = lens[2] = lens[3] = 1;
	check_chunks(chunks, lens, smile, 4);
}

Test(utf8, split_then_invalid_continuation)
{
	const char	*chunks[] = { "a\xe2\x82", "Zb", NULL };
	size_t		 lens[] = { 3, 2 };

	check_chunks(chunks, lens, "a" R "Zb", 6);
}

Test(utf8, split_overlong_is_not_held)
{
	struct utf8_state	st;
	struct buf		out;

	utf8_init(&st);
	buf_init(&out, 1024);
	/* E0 80 can never complete: replaced now, nothing held. */
	cr_assert_eq(utf8_sanitise(&st, (const uint8_t *)"\xe0\x80", 2, &out),
	    0);
	cr_expect_eq(utf8_held(&st), 0);
	cr_expect_eq(out.len, 6);
	buf_free(&out);
}

Test(utf8, held_tail_is_at_most_three_bytes)
{
	struct utf8_state	st;
	struct buf		out;

	utf8_init(&st);
	buf_init(&out, 1024);
	cr_assert_eq(utf8_sanitise(&st, (const uint8_t *)"ab\xf0\x9f\x98", 5,
	    &out), 0);
	cr_expect_eq(utf8_held(&st), 3);
	cr_expect_eq(out.len, 2, "the id covers only 'ab'");
	cr_assert_eq(utf8_sanitise(&st, (const uint8_t *)"\x80", 1, &out), 0);
	cr_expect_eq(utf8_held(&st), 0);
	cr_expect_eq(out.len, 6);
	/* A chunk that is only a lead byte emits nothing. */
	buf_reset(&out);
	cr_assert_eq(utf8_sanitise(&st, (const uint8_t *)"\xe2", 1, &out), 0);
	cr_expect_eq(out.len, 0);
	cr_expect_eq(utf8_held(&st), 1);
	cr_assert_eq(utf8_flush(&st, &out), 0);
	cr_expect_eq(out.len, 3);
	cr_expect_eq(utf8_held(&st), 0);
	buf_free(&out);
}

Test(utf8, every_byte_value_in_every_split_is_total)
{
	/* No input crashes or loses ASCII: all 256 bytes, split anywhere. */
	uint8_t			all[256 * 2];
	struct utf8_state	st;
	struct buf		out;
	size_t			cut, i, ascii;

	for (i = 0; i < sizeof(all); i++)
		all[i] = (uint8_t)(i % 256);
	for (cut = 0; cut <= sizeof(all); cut += 7) {
		utf8_init(&st);
		buf_init(&out, 1 << 16);
		cr_assert_eq(utf8_sanitise(&st, all, cut, &out), 0);
		cr_assert_eq(utf8_sanitise(&st, all + cut, sizeof(all) - cut,
		    &out), 0);
		cr_assert_eq(utf8_flush(&st, &out), 0);
		for (i = 0, ascii = 0; i < out.len; i++)
			if ((uint8_t)out.p[i] < 0x80)
				ascii++;
		cr_expect_eq(ascii, 256, "cut %zu", cut);
		buf_free(&out);
	}
}

Test(utf8, count_code_points)
{
	cr_expect_eq(utf8_count("", 0), 0);
	cr_expect_eq(utf8_count("abc", 3), 3);
	cr_expect_eq(utf8_count("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9), 3);
	cr_expect_eq(utf8_count("a\0b", 3), 3);
}
