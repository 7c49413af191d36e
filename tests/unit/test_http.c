/*
 * test_http.c -- request-line parsing: the endpoint is the last path
 * segment under any mount point, query values are percent-decoded with
 * bounds, and only application/json counts as JSON; and the stream's
 * FastCGI record writer, whose records must stay whole whatever a full
 * socket takes of each write.
 */
#include <criterion/criterion.h>

#include <sys/socket.h>

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

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

/* The test stream: byte i of it. */
static uint8_t
pattern(size_t i)
{
	return ((uint8_t)(i * 7 + i / 251));
}

/*
 * Parse FastCGI STDOUT records of request id 0x1234 out of raw, checking
 * their content against the pattern from *got on.  Returns the bytes of
 * raw consumed.
 */
static size_t
parse_records(const uint8_t *raw, size_t len, size_t *got)
{
	size_t	off = 0, clen, i;

	while (len - off >= 8) {
		clen = (size_t)raw[off + 4] << 8 | raw[off + 5];
		if (len - off < 8 + clen + raw[off + 6])
			break;
		cr_assert_eq(raw[off], 1, "version");
		cr_assert_eq(raw[off + 1], 6, "FCGI_STDOUT");
		cr_assert_eq(raw[off + 2] << 8 | raw[off + 3], 0x1234, "id");
		cr_assert_gt(clen, 0, "an empty record would end the stream");
		cr_assert_leq(clen, HTTP_RECORD_MAX);
		for (i = 0; i < clen; i++)
			cr_assert_eq(raw[off + 8 + i], pattern(*got + i),
			    "byte %zu", *got + i);
		*got += clen;
		off += 8 + clen + raw[off + 6];
	}
	return (off);
}

/*
 * A full socket takes part of a write, cut where its buffers end: in a
 * record's content or in its header.  The caller offers every size from
 * 1 to 9000 bytes in turn (and sometimes all that is left), so the records
 * end at every offset of those buffers, whatever their size.
 */
Test(http, stream_records_stay_whole_across_partial_writes)
{
	static uint8_t	offer[HTTP_RECORD_MAX * 8], raw[1 << 20];
	FCGX_Request	q;
	struct req	r;
	const size_t	total = 30 * 1000 * 1000;
	size_t		off = 0, rawlen = 0, got = 0, used, m, i, step = 0;
	ssize_t		n;
	int		sv[2], sz = 4096, hdr_cut = 0, partial = 0;

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	/* A small send buffer: most writes are taken only in part. */
	cr_assert_eq(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sz,
	    sizeof(sz)), 0);
	memset(&q, 0, sizeof(q));
	q.requestId = 0x1234;
	q.ipcFd = sv[0];
	memset(&r, 0, sizeof(r));
	r.fcgx = &q;
	r.in_fd = r.out_fd = r.stop_fd = -1;

	while (off < total || r.rec_left > 0) {
		/* The caller offers the same bytes again from the first one
		 * not taken, as many as it has. */
		m = step++ % 10 == 9 ? sizeof(offer) : 1 + step % 9000;
		if (m > total - off)
			m = total - off;
		for (i = 0; i < m; i++)
			offer[i] = pattern(off + i);
		n = req_send(&r, offer, m);
		cr_assert_geq(n, 0);
		off += (size_t)n;
		if (r.rec_left > 0)
			partial++;
		if (r.rec_left > 0 && r.rec_hdr_off < 8)
			hdr_cut++;
		/* The peer reads a little less than comes, mostly: the
		 * socket stays nearly full, with room for a buffer or two. */
		n = recv(sv[1], raw + rawlen, step % 50 == 0 ?
		    sizeof(raw) - rawlen : 1 + step % 4000, MSG_DONTWAIT);
		if (n > 0)
			rawlen += (size_t)n;
		else
			cr_assert(n == -1 && errno == EAGAIN);
		used = parse_records(raw, rawlen, &got);
		memmove(raw, raw + used, rawlen - used);
		rawlen -= used;
	}
	close(sv[0]);
	while ((n = read(sv[1], raw + rawlen, sizeof(raw) - rawlen)) > 0)
		rawlen += (size_t)n;
	used = parse_records(raw, rawlen, &got);
	cr_expect_eq(used, rawlen, "%zu bytes of a cut record", rawlen - used);
	cr_expect_eq(got, total);
	cr_expect_gt(partial, 0, "no write was taken in part");
	cr_expect_gt(hdr_cut, 0, "no write ended inside a record header");
	close(sv[1]);
}

/*
 * A repeated header is every one of its lines, in order: nginx passes
 * each as a param of its own, and a proxy's line comes after the one the
 * client wrote.  A list too long for the buffer is none ("", -1).
 */
Test(http, a_param_that_comes_twice_is_no_value)
{
	static char p1[] = "HTTP_X_FORWARDED_FOR=192.168.1.5",
		    p2[] = "HTTP_X_FORWARDED_FOR_NOT=1",
		    p3[] = "REMOTE_ADDR=127.0.0.1",
		    p4[] = "HTTP_X_FORWARDED_FOR=203.0.113.9, 10.0.0.1",
		    p5[] = "HTTP_X_REAL_IP=10.0.0.7";
	char	    *envp[] = { p1, p2, p3, p4, p5, NULL };
	FCGX_Request q;
	struct req   r;

	memset(&q, 0, sizeof(q));
	q.envp = envp;
	memset(&r, 0, sizeof(r));
	r.fcgx = &q;
	/* Two lines, in an order no one can vouch for: neither counts. */
	cr_expect_str_eq(req_param_once(&r, "HTTP_X_FORWARDED_FOR"), "");
	cr_expect_str_eq(req_param(&r, "HTTP_X_FORWARDED_FOR"), "192.168.1.5",
	    "libfcgi's lookup sees only the first line");
	cr_expect_str_eq(req_param_once(&r, "HTTP_X_REAL_IP"), "10.0.0.7");
	cr_expect_str_eq(req_param_once(&r, "REMOTE_ADDR"), "127.0.0.1");
	cr_expect_null(req_param_once(&r, "HTTP_X_REAL"),
	    "a prefix of a name is not the name");
	cr_expect_null(req_param_once(&r, "HTTP_X_FORWARDED"));
	q.envp = NULL;
	cr_expect_null(req_param_once(&r, "REMOTE_ADDR"));
}

Test(http, a_cgi_variable_that_comes_twice_is_no_value)
{
	/* A CGI server's environment can hold a name twice (fcgiwrap and
	 * lighttpd pass on every param); getenv finds the first. */
	static char p1[] = "HTTP_X_FORWARDED_FOR=192.168.1.5",
		    p2[] = "HTTP_X_REAL_IP=10.0.0.7",
		    p3[] = "HTTP_X_FORWARDED_FOR=203.0.113.9";
	char	   *env[] = { p1, p2, p3, NULL };
	char	  **saved = environ;
	struct req  r;
	const char *xff, *first, *rip;

	memset(&r, 0, sizeof(r));
	environ = env;
	xff = req_param_once(&r, "HTTP_X_FORWARDED_FOR");
	first = req_param(&r, "HTTP_X_FORWARDED_FOR");
	rip = req_param_once(&r, "HTTP_X_REAL_IP");
	environ = saved;
	cr_expect_str_eq(xff, "");
	cr_expect_str_eq(first, "192.168.1.5", "getenv sees the first");
	cr_expect_str_eq(rip, "10.0.0.7");
}

/*
 * The frame rule (DESIGN 6): another site framed the terminal page and the
 * visitor's clicks ran in their shell.  Every answer says who may frame
 * it; X-Frame-Options only where it agrees with the CSP.
 */
static const char *
frame(const char *ancestors)
{
	static char out[1024];
	const char *cause;

	if (http_frame_headers(ancestors, out, sizeof(out), &cause) == -1)
		return (NULL);
	return (out);
}

Test(http, frame_rule_default_is_same_origin)
{
	cr_expect_str_eq(frame("'self'"),
	    "Content-Security-Policy: frame-ancestors 'self'; "
	    "default-src 'none'\r\nX-Frame-Options: SAMEORIGIN\r\n");
	cr_expect_str_eq(frame(HTTP_FRAME_DEFAULT_ANCESTORS),
	    HTTP_FRAME_DEFAULT);
	cr_expect_str_eq(frame("'none'"),
	    "Content-Security-Policy: frame-ancestors 'none'; "
	    "default-src 'none'\r\nX-Frame-Options: DENY\r\n");
}

Test(http, frame_rule_other_origins_drop_x_frame_options)
{
	cr_expect_str_eq(frame("  'self'   https://portal.example.com:8443 "),
	    "Content-Security-Policy: frame-ancestors 'self' "
	    "https://portal.example.com:8443; default-src 'none'\r\n");
	cr_expect_str_eq(frame("https://*.example.com"),
	    "Content-Security-Policy: frame-ancestors https://*.example.com; "
	    "default-src 'none'\r\n");
}

Test(http, frame_rule_refuses_what_could_end_the_header)
{
	cr_expect_null(frame(""));
	cr_expect_null(frame("   "));
	cr_expect_null(frame(NULL));
	cr_expect_null(frame("'self'; script-src *"));
	cr_expect_null(frame("https://a.example,https://b.example"));
	cr_expect_null(frame("https://a.example\r\nSet-Cookie: x=1"));
	cr_expect_null(frame("'unsafe-inline'"));
	cr_expect_null(frame("\"https://a.example\""));
	cr_expect_null(frame("'none' https://a.example"));
}
