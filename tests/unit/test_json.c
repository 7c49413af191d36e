/*
 * test_json.c -- the JSON string escaper on the output hot path, and the
 * request field rules: session_id syntax, query/body agreement, rows/cols
 * types and clamping.
 */
#include <criterion/criterion.h>

#include <string.h>

#include "json.h"

static char *
esc(const char *s, size_t len)
{
	static char	res[4096];
	struct buf	b;

	buf_init(&b, sizeof(res) - 1);
	cr_assert_eq(json_escape(&b, s, len), 0);
	if (b.len > 0)
		memcpy(res, b.p, b.len);
	res[b.len] = '\0';
	buf_free(&b);
	return (res);
}

#define ESC(s)	esc(s, sizeof(s) - 1)

Test(escape, plain_text_is_copied)
{
	cr_expect_str_eq(ESC("hello, world/<>&'"), "hello, world/<>&'");
	cr_expect_str_eq(ESC("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"),
	    "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
	cr_expect_str_eq(ESC(""), "");
}

Test(escape, quotes_and_backslashes)
{
	cr_expect_str_eq(ESC("\"\\"), "\\\"\\\\");
}

Test(escape, every_c0_control_is_escaped)
{
	char	in[1], want[8], *got;
	int	c;

	for (c = 0; c < 0x20; c++) {
		in[0] = (char)c;
		got = esc(in, 1);
		switch (c) {
		case '\n':
			strcpy(want, "\\n");
			break;
		case '\r':
			strcpy(want, "\\r");
			break;
		case '\t':
			strcpy(want, "\\t");
			break;
		case '\b':
			strcpy(want, "\\b");
			break;
		case '\f':
			strcpy(want, "\\f");
			break;
		default:
			snprintf(want, sizeof(want), "\\u%04x", c);
		}
		cr_expect_str_eq(got, want, "byte %#x", c);
	}
}

Test(escape, escape_sequences_survive_escaped)
{
	cr_expect_str_eq(ESC("\x1b[1;31mX\x1b[0m"),
	    "\\u001b[1;31mX\\u001b[0m");
	cr_expect_str_eq(ESC("a\0b"), "a\\u0000b");
}

Test(escape, del_c1_and_line_separators)
{
	cr_expect_str_eq(ESC("\x7f"), "\\u007f");
	cr_expect_str_eq(ESC("\xc2\x80\xc2\x9f\xc2\xa0"),
	    "\\u0080\\u009f\xc2\xa0");
	cr_expect_str_eq(ESC("\xe2\x80\xa8\xe2\x80\xa9\xe2\x80\xaa"),
	    "\\u2028\\u2029\xe2\x80\xaa");
}

/*
 * Every byte the escaper must see, at every offset of a long plain run:
 * the run is scanned 16, then 8 bytes at a time, and a byte missed at any
 * lane would go out raw.
 */
Test(escape, specials_at_every_offset_of_a_long_run)
{
	static const struct {
		const char *in, *out;
	} sp[] = {
		{ "\x01", "\\u0001" }, { "\x1f", "\\u001f" },
		{ "\x7f", "\\u007f" }, { "\"", "\\\"" },
		{ "\\", "\\\\" }, { "\n", "\\n" },
		{ "\xc2\x85", "\\u0085" }, { "\xe2\x80\xa8", "\\u2028" },
		{ "\xc2\xa0", "\xc2\xa0" }, { "\xe2\x82\xac", "\xe2\x82\xac" },
		{ " ", " " }, { "\x80", "\x80" },
	};
	char   in[64], want[128];
	size_t i, k, n;

	for (i = 0; i < sizeof(sp) / sizeof(sp[0]); i++)
		for (k = 0; k < 40; k++) {
			n = strlen(sp[i].in);
			memset(in, 'a', sizeof(in));
			memcpy(in + k, sp[i].in, n);
			memset(want, 'a', k);
			strcpy(want + k, sp[i].out);
			memset(want + strlen(want), 'a', sizeof(in) - k - n);
			want[k + strlen(sp[i].out) + sizeof(in) - k - n] = '\0';
			cr_expect_str_eq(esc(in, sizeof(in)), want,
			    "special %zu at offset %zu", i, k);
		}
}

Test(escape, output_parses_back_with_jansson)
{
	char		 in[256], doc[2048];
	json_t		*v;
	json_error_t	 err;
	struct buf	 b;
	int		 i;

	/* Every ASCII byte, then some multi-byte text. */
	for (i = 0; i < 128; i++)
		in[i] = (char)i;
	memcpy(in + 128, "\xc2\x85\xe2\x80\xa8\xf0\x9f\x98\x80", 9);
	buf_init(&b, 4096);
	cr_assert_eq(json_escape(&b, in, 137), 0);
	snprintf(doc, sizeof(doc), "\"%.*s\"", (int)b.len, b.p);
	v = json_loads(doc, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
	cr_assert_not_null(v, "%s", err.text);
	cr_expect_eq(json_string_length(v), 137);
	cr_expect(memcmp(json_string_value(v), in, 137) == 0);
	json_decref(v);
	buf_free(&b);
}

Test(escape, bounded_buffer_fails_cleanly)
{
	struct buf	b;

	buf_init(&b, 5);
	cr_expect_eq(json_escape(&b, "\x01\x02", 2), -1);
	cr_expect(b.failed);
	buf_free(&b);
}

Test(sid, syntax)
{
	char	long_ok[129], too_long[130];

	cr_expect(json_sid_valid("a"));
	cr_expect(json_sid_valid("tab-1:x.y_Z9"));
	cr_expect(!json_sid_valid(""));
	cr_expect(!json_sid_valid("a b"));
	cr_expect(!json_sid_valid("a/b"));
	cr_expect(!json_sid_valid("\xc3\xa9"));
	cr_expect(!json_sid_valid("a\nb"));
	memset(long_ok, 'x', 128);
	long_ok[128] = '\0';
	cr_expect(json_sid_valid(long_ok));
	memset(too_long, 'x', 129);
	too_long[129] = '\0';
	cr_expect(!json_sid_valid(too_long));
}

static json_t *
parse(const char *s)
{
	enum contract_answer err;
	json_t		*o = json_body_parse(s, strlen(s), &err);

	return (o);
}

Test(body, parse_rules)
{
	enum contract_answer err = CONTRACT_A_INTERNAL;
	json_t		*o;

	cr_expect_null(json_body_parse("", 0, &err));
	cr_expect_null(json_body_parse("{", 1, &err));
	cr_expect_eq(err, CONTRACT_A_JSON_MALFORMED);
	cr_expect_null(json_body_parse("[1]", 3, &err), "not an object");
	cr_expect_eq(err, CONTRACT_A_JSON_NOT_OBJECT);
	cr_expect_null(json_body_parse("\"x\"", 3, &err));
	cr_expect_null(json_body_parse("{\"a\":1,\"a\":2}", 13, &err),
	    "duplicate keys");
	cr_expect_null(json_body_parse("{} x", 4, &err), "trailing garbage");
	o = json_body_parse("{\"d\":\"a\\u0000b\"}", 16, &err);
	cr_assert_not_null(o, "NUL allowed in strings (terminal input)");
	cr_expect_eq(json_string_length(json_object_get(o, "d")), 3);
	json_decref(o);
}

Test(body, session_id_from_body_and_query)
{
	char		 sid[129];
	enum contract_answer err;
	json_t		*o;

	o = parse("{\"session_id\": \"abc\"}");
	cr_expect_eq(json_get_sid(o, NULL, sid, sizeof(sid), &err), 0);
	cr_expect_str_eq(sid, "abc");
	cr_expect_eq(json_get_sid(o, "abc", sid, sizeof(sid), &err), 0);
	cr_expect_eq(json_get_sid(o, "abd", sid, sizeof(sid), &err), -1,
	    "mismatch");
	cr_expect_eq(err, CONTRACT_A_SID_DIFFER);
	json_decref(o);

	o = parse("{}");
	cr_expect_eq(json_get_sid(o, "q1", sid, sizeof(sid), &err), 0);
	cr_expect_str_eq(sid, "q1");
	cr_expect_eq(json_get_sid(o, NULL, sid, sizeof(sid), &err), -1,
	    "missing");
	cr_expect_eq(err, CONTRACT_A_SID_MISSING);
	cr_expect_eq(json_get_sid(NULL, "q2", sid, sizeof(sid), &err), 0);
	json_decref(o);

	o = parse("{\"session_id\": 5}");
	cr_expect_eq(json_get_sid(o, NULL, sid, sizeof(sid), &err), -1);
	cr_expect_eq(err, CONTRACT_A_SID_NOT_STRING);
	json_decref(o);
	o = parse("{\"session_id\": \"a b\"}");
	cr_expect_eq(json_get_sid(o, NULL, sid, sizeof(sid), &err), -1);
	cr_expect_eq(err, CONTRACT_A_SID_INVALID);
	json_decref(o);
	o = parse("{\"session_id\": \"ab\\u0000c\"}");
	cr_expect_eq(json_get_sid(o, NULL, sid, sizeof(sid), &err), -1,
	    "an embedded NUL is not a shorter id");
	json_decref(o);
	o = parse("{\"session_id\": \"\"}");
	cr_expect_eq(json_get_sid(o, NULL, sid, sizeof(sid), &err), -1);
	json_decref(o);
}

static int
dim(const char *body, uint16_t *v)
{
	enum contract_answer err;
	json_t		*o = parse(body);
	int		 r;

	cr_assert_not_null(o, "%s", body);
	r = json_get_dim(o, "rows", JSON_ROWS_MIN, JSON_ROWS_MAX, v, &err);
	json_decref(o);
	return (r);
}

Test(body, rows_cols_types_and_clamping)
{
	uint16_t	v;

	cr_expect_eq(dim("{\"rows\": 30}", &v), 0);
	cr_expect_eq(v, 30);
	cr_expect_eq(dim("{\"rows\": 30.0}", &v), 0, "integral float");
	cr_expect_eq(v, 30);
	cr_expect_eq(dim("{\"rows\": 3e1}", &v), 0);
	cr_expect_eq(v, 30);
	cr_expect_eq(dim("{\"rows\": 30.5}", &v), -1, "fraction");
	cr_expect_eq(dim("{\"rows\": \"30\"}", &v), -1, "string");
	cr_expect_eq(dim("{\"rows\": true}", &v), -1, "boolean");
	cr_expect_eq(dim("{\"rows\": [30]}", &v), -1, "array");
	cr_expect_eq(dim("{\"rows\": {}}", &v), -1, "object");
	cr_expect_eq(dim("{\"rows\": null}", &v), 0);
	cr_expect_eq(v, 0, "null is the default");
	cr_expect_eq(dim("{}", &v), 0);
	cr_expect_eq(v, 0, "missing is the default");
	cr_expect_eq(dim("{\"rows\": 0}", &v), 0);
	cr_expect_eq(v, 0, "0 is the default");
	cr_expect_eq(dim("{\"rows\": 1}", &v), 0);
	cr_expect_eq(v, 2, "clamped up");
	cr_expect_eq(dim("{\"rows\": -7}", &v), 0);
	cr_expect_eq(v, 2, "negative clamped up");
	cr_expect_eq(dim("{\"rows\": 501}", &v), 0);
	cr_expect_eq(v, 500, "clamped down");
	cr_expect_eq(dim("{\"rows\": 1e300}", &v), 0);
	cr_expect_eq(v, 500);
	cr_expect_eq(dim("{\"rows\": 9223372036854775807}", &v), 0);
	cr_expect_eq(v, 500);
	cr_expect_eq(json_clamp_dim(5, JSON_COLS_MIN, JSON_COLS_MAX), 10);
	cr_expect_eq(json_clamp_dim(5000, JSON_COLS_MIN, JSON_COLS_MAX), 1000);
}

/*
 * Answers: ", " and ": " between members, keys in the order given, and a
 * real with no binary noise (the default 17 digits print health's uptime
 * 0.1 s as 0.10000000000000001).
 */
Test(dump, spacing_order_and_reals)
{
	json_t	*o;
	char	*s;

	o = json_pack("{s:b, s:f, s:f, s:I}", "ok", 1, "uptime", 0.1,
	    "long", 123456.789012, "n", (json_int_t)3);
	cr_assert_not_null(o);
	s = json_dump(o);
	cr_assert_not_null(s);
	cr_expect_str_eq(s, "{\"ok\": true, \"uptime\": 0.1, "
	    "\"long\": 123456.789012, \"n\": 3}");
	free(s);
	json_decref(o);
}
