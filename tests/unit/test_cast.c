/*
 * test_cast.c -- asciicast v2 lines (recorder/cast.c): the header, an
 * event's time to the microsecond, output text that is the live
 * stream's (U+FFFD for ill-formed bytes, a character split between two
 * reads joined, never replaced, the held tail flushed at the end), and
 * the resize, input and cut lines.
 */
#include <criterion/criterion.h>

#include <string.h>

#include "cast.h"

static struct buf out;

static void
setup(void)
{
	buf_init(&out, 1 << 20);
}

static void
teardown(void)
{
	buf_free(&out);
}

TestSuite(cast, .init = setup, .fini = teardown);

static void
expect(const char *want)
{
	cr_expect_eq(out.len, strlen(want), "got %.*s want %s", (int)out.len,
	    out.p, want);
	cr_expect(out.len == strlen(want) &&
	    (out.len == 0 || memcmp(out.p, want, out.len) == 0),
	    "got %.*s want %s", (int)out.len, out.p, want);
	buf_reset(&out);
}

Test(cast, header_is_asciicast_v2_with_size_time_and_term)
{
	cr_assert_eq(cast_header(&out, 100, 30, 1796615154), 0);
	expect("{\"version\": 2, \"width\": 100, \"height\": 30, "
	       "\"timestamp\": 1796615154, \"env\": {\"TERM\": "
	       "\"xterm-256color\"}}\n");
}

Test(cast, output_time_is_seconds_to_the_microsecond_text_json_escaped)
{
	struct cast c;
	const char *s = "a\"b\\c\r\n\x1b[0m\x7f";

	cast_init(&c);
	cr_assert_eq(cast_output(&c, &out, 12345678, (const uint8_t *)s,
			 strlen(s)),
	    0);
	expect("[12.345678, \"o\", \"a\\\"b\\\\c\\r\\n\\u001b[0m\\u007f\"]\n");
	cr_assert_eq(cast_output(&c, &out, 5, (const uint8_t *)"x", 1), 0);
	expect("[0.000005, \"o\", \"x\"]\n");
	cast_free(&c);
}

Test(cast, ill_formed_bytes_are_u_fffd_one_per_maximal_subpart)
{
	struct cast c;

	cast_init(&c);
	cr_assert_eq(cast_output(&c, &out, 0,
			 (const uint8_t *)"a\xff\xfe"
					  "b\xe2\x82z",
			 7),
	    0);
	expect("[0.000000, \"o\", \"a\xef\xbf\xbd\xef\xbf\xbd"
	       "b\xef\xbf\xbdz\"]\n");
	cast_free(&c);
}

Test(cast, a_character_split_between_reads_is_joined_not_replaced)
{
	struct cast c;

	cast_init(&c);
	/* The lead bytes alone: held back, no line at all. */
	cr_assert_eq(cast_output(&c, &out, 1, (const uint8_t *)"\xf0\x9f", 2),
	    0);
	expect("");
	cr_assert_eq(cast_output(&c, &out, 2, (const uint8_t *)"\x98\x80!", 3),
	    0);
	expect("[0.000002, \"o\", \"\xf0\x9f\x98\x80!\"]\n");
	cast_free(&c);
}

Test(cast, a_tail_held_at_the_end_is_flushed_as_u_fffd)
{
	struct cast c;

	cast_init(&c);
	cr_assert_eq(cast_output(&c, &out, 1, (const uint8_t *)"ok\xe2\x82", 4),
	    0);
	expect("[0.000001, \"o\", \"ok\"]\n");
	cr_assert_eq(cast_finish(&c, &out, 3), 0);
	expect("[0.000003, \"o\", \"\xef\xbf\xbd\"]\n");
	cr_assert_eq(cast_finish(&c, &out, 4), 0);
	expect("");
	cast_free(&c);
}

Test(cast, resize_input_and_cut_lines)
{
	cr_assert_eq(cast_resize(&out, 1500000, 132, 43), 0);
	expect("[1.500000, \"r\", \"132x43\"]\n");
	cr_assert_eq(cast_input(&out, 2000000, (const uint8_t *)"ls\r\xc3", 4),
	    0);
	expect("[2.000000, \"i\", \"ls\\r\xef\xbf\xbd\"]\n");
	cr_assert_eq(cast_cut(&out, 3000001, "disk"), 0);
	expect("[3.000001, \"m\", \"cut: disk\"]\n");
}
