/*
 * test_sse.c -- the exact bytes of every output-stream event (DESIGN
 * section 3: "id: N\nevent: NAME\ndata: JSON\n\n", ": " after keys), base64,
 * and the parsing of resume positions.
 */
#include <criterion/criterion.h>

#include <string.h>

#include "frame.h"
#include "sse.h"

static struct buf	b;

static void
setup(void)
{
	buf_init(&b, 1 << 20);
}

static void
teardown(void)
{
	buf_free(&b);
}

static const char *
text(void)
{
	buf_addc(&b, '\0');
	return (b.p);
}

TestSuite(sse, .init = setup, .fini = teardown);

Test(sse, output_text_event)
{
	cr_assert_eq(sse_output_text(&b, 42, "B", 1), 0);
	cr_expect_str_eq(text(), "id: 42\nevent: output\ndata: {\"text\": "
	    "\"B\"}\n\n");
}

Test(sse, output_text_escapes_newlines_so_one_data_line)
{
	cr_assert_eq(sse_output_text(&b, 7, "a\r\nb\x1b[0m\"", 9), 0);
	cr_expect_str_eq(text(), "id: 7\nevent: output\ndata: {\"text\": "
	    "\"a\\r\\nb\\u001b[0m\\\"\"}\n\n");
}

Test(sse, output_b64_event)
{
	cr_assert_eq(sse_output_b64(&b, 18446744073709551615ULL,
	    (const uint8_t *)"\xff\x00\x01", 3), 0);
	cr_expect_str_eq(text(), "id: 18446744073709551615\nevent: output\n"
	    "data: {\"b64\": \"/wAB\"}\n\n");
}

Test(sse, gap_event)
{
	cr_assert_eq(sse_gap(&b, 1000, 250), 0);
	cr_expect_str_eq(text(), "id: 1000\nevent: gap\ndata: {\"lost\": 250}"
	    "\n\n");
}

Test(sse, closed_event_with_code_signal_and_null)
{
	cr_assert_eq(sse_closed(&b, 9, 1, 7, "exit"), 0);
	cr_expect_str_eq(text(), "id: 9\nevent: terminal_closed\ndata: "
	    "{\"exit_code\": 7, \"reason\": \"exit\"}\n\n");
	buf_reset(&b);
	cr_assert_eq(sse_closed(&b, 10, 1, -9, "closed"), 0);
	cr_expect_str_eq(text(), "id: 10\nevent: terminal_closed\ndata: "
	    "{\"exit_code\": -9, \"reason\": \"closed\"}\n\n");
	buf_reset(&b);
	cr_assert_eq(sse_closed(&b, 11, 0, 0, "shutdown"), 0);
	cr_expect_str_eq(text(), "id: 11\nevent: terminal_closed\ndata: "
	    "{\"exit_code\": null, \"reason\": \"shutdown\"}\n\n");
}

Test(sse, error_event)
{
	cr_assert_eq(sse_error(&b, 3, CONTRACT_A_INTERNAL), 0);
	cr_expect_str_eq(text(), "id: 3\nevent: terminal_error\ndata: "
	    "{\"error\": \"internal error\"}\n\n");
}

Test(sse, heartbeat_is_a_comment)
{
	cr_expect_str_eq(SSE_HEARTBEAT, ": heartbeat\n\n");
}

Test(sse, base64_vectors)
{
	/* RFC 4648 section 10. */
	static const char *const	in[] = { "", "f", "fo", "foo", "foob",
	    "fooba", "foobar" };
	static const char *const	out[] = { "", "Zg==", "Zm8=", "Zm9v",
	    "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy" };
	size_t				i;

	for (i = 0; i < 7; i++) {
		buf_reset(&b);
		cr_assert_eq(sse_base64(&b, (const uint8_t *)in[i],
		    strlen(in[i])), 0);
		cr_expect_str_eq(text(), out[i]);
	}
}

Test(sse, event_over_bound_fails)
{
	struct buf	small;

	buf_init(&small, 16);
	cr_expect_eq(sse_output_text(&small, 1, "0123456789", 10), -1);
	buf_free(&small);
}

Test(sse, resume_position_parsing)
{
	uint64_t	p = 99;

	cr_expect_eq(sse_parse_pos("0", &p), 0);
	cr_expect_eq(p, 0);
	cr_expect_eq(sse_parse_pos("1733000000000000123", &p), 0);
	cr_expect_eq(p, 1733000000000000123ULL);
	cr_expect_eq(sse_parse_pos("18446744073709551615", &p), 0);
	cr_expect_eq(p, UINT64_MAX);
	cr_expect_eq(sse_parse_pos("18446744073709551616", &p), -1,
	    "overflow");
	cr_expect_eq(sse_parse_pos("-1", &p), -1, "negative is none");
	cr_expect_eq(sse_parse_pos("+1", &p), -1);
	cr_expect_eq(sse_parse_pos("1.5", &p), -1);
	cr_expect_eq(sse_parse_pos("12x", &p), -1);
	cr_expect_eq(sse_parse_pos(" 12", &p), -1);
	cr_expect_eq(sse_parse_pos("", &p), -1);
	cr_expect_eq(sse_parse_pos(NULL, &p), -1);
}

Test(sse, screen_event_from_pieces)
{
	struct msg_screen m;
	struct buf	  scratch;

	buf_init(&scratch, 1 << 16);
	memset(&m, 0, sizeof(m));
	m.pos = 99;
	m.rows = 24;
	m.cols = 80;
	m.data = (const uint8_t *)"a\r\n\x1b[1m";
	m.len = 7;
	cr_assert_eq(sse_screen(&b, &scratch, 1, &m), 0);
	/* A piece that is not UTF-8 is repaired, as output is. */
	m.data = (const uint8_t *)"\xff\"b";
	m.len = 3;
	m.last = 1;
	cr_assert_eq(sse_screen(&b, &scratch, 0, &m), 0);
	cr_expect_str_eq(text(), "id: 99\nevent: screen\ndata: {\"text\": "
				 "\"a\\r\\n\\u001b[1m\ufffd\\\"b\", \"rows\": 24, "
				 "\"cols\": 80}\n\n");
	buf_free(&scratch);
}
