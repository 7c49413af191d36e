/*
 * test_http.c -- request-line parsing: the endpoint is the last path
 * segment under any mount point, query values are percent-decoded with
 * bounds, and only application/json counts as JSON.
 */
#include <criterion/criterion.h>

#include <string.h>

#include "http.h"

static const char *
seg(const char *path)
{
	static char	out[32];

	http_last_segment(path, out, sizeof(out));
	return (out);
}

Test(http, endpoint_is_last_segment)
{
	cr_expect_str_eq(seg("/api/terminal/start"), "start");
	cr_expect_str_eq(seg("/deep/mount/point/api/x/output"), "output");
	cr_expect_str_eq(seg("/start"), "start");
	cr_expect_str_eq(seg("/api/terminal/input/"), "input");
	cr_expect_str_eq(seg("/api/terminal/list?session_id=x"), "list");
	cr_expect_str_eq(seg("health"), "health");
	cr_expect_str_eq(seg("/"), "");
	cr_expect_str_eq(seg(""), "");
	cr_expect_str_eq(seg(NULL), "");
	cr_expect_str_eq(seg("/a/averyveryveryveryveryverylongsegmentname"),
	    "", "too long for the buffer: no endpoint");
}

static int
q(const char *query, const char *name, char *out, size_t size)
{
	return (http_query_get(query, name, out, size));
}

Test(http, query_values)
{
	char	v[16];

	cr_expect_eq(q("session_id=abc", "session_id", v, sizeof(v)), 1);
	cr_expect_str_eq(v, "abc");
	cr_expect_eq(q("a=1&session_id=x%3Ay&b=2", "session_id", v,
	    sizeof(v)), 1);
	cr_expect_str_eq(v, "x:y");
	cr_expect_eq(q("a=1+2", "a", v, sizeof(v)), 1);
	cr_expect_str_eq(v, "1 2");
	cr_expect_eq(q("a=", "a", v, sizeof(v)), 1);
	cr_expect_str_eq(v, "");
	cr_expect_eq(q("a", "a", v, sizeof(v)), 1);
	cr_expect_str_eq(v, "");
	cr_expect_eq(q("a=1&a=2", "a", v, sizeof(v)), 1);
	cr_expect_str_eq(v, "1", "first wins");
	cr_expect_eq(q("ab=1", "a", v, sizeof(v)), 0);
	cr_expect_eq(q("xa=1", "a", v, sizeof(v)), 0);
	cr_expect_eq(q("", "a", v, sizeof(v)), 0);
	cr_expect_eq(q(NULL, "a", v, sizeof(v)), 0);
	cr_expect_eq(q("a=%zz", "a", v, sizeof(v)), -1, "bad escape");
	cr_expect_eq(q("a=%4", "a", v, sizeof(v)), -1, "short escape");
	cr_expect_eq(q("a=x%00y", "a", v, sizeof(v)), -1, "NUL");
	cr_expect_eq(q("a=0123456789abcdef", "a", v, sizeof(v)), -1,
	    "too long");
	cr_expect_eq(q("a=0123456789abcde", "a", v, sizeof(v)), 1);
}

Test(http, json_content_type)
{
	cr_expect(http_is_json("application/json"));
	cr_expect(http_is_json("application/json; charset=utf-8"));
	cr_expect(http_is_json("Application/JSON;charset=UTF-8"));
	cr_expect(http_is_json("  application/json ; x=y"));
	cr_expect(!http_is_json(NULL));
	cr_expect(!http_is_json(""));
	cr_expect(!http_is_json("text/plain"));
	cr_expect(!http_is_json("application/jsonx"));
	cr_expect(!http_is_json("application/json-patch+json"));
	cr_expect(!http_is_json("application/x-www-form-urlencoded"));
	cr_expect(!http_is_json("multipart/form-data; boundary=x"));
}

Test(http, reasons)
{
	cr_expect_str_eq(http_reason(404), "Not Found");
	cr_expect_str_eq(http_reason(429), "Too Many Requests");
	cr_expect_str_eq(http_reason(503), "Service Unavailable");
}
