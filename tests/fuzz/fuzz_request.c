/*
 * fuzz_request.c -- fuzz target for everything ptyd.fcgi parses out of an
 * HTTP request, and for the UTF-8 sanitiser that every byte of terminal
 * output goes through.
 *
 * Input: eleven lines, then the body (whatever follows the eleventh
 * newline):
 *
 *	REQUEST_METHOD, PATH_INFO, QUERY_STRING, CONTENT_TYPE,
 *	HTTP_LAST_EVENT_ID, REMOTE_USER, REMOTE_ADDR, HTTP_X_FORWARDED_FOR,
 *	HTTP_HOST, HTTP_ORIGIN, HTTP_FORWARDED
 *
 * An empty line leaves the variable unset.  Each input is used twice:
 *
 * - Piece by piece, against properties: the query, Last-Event-ID, body
 *   field and UTF-8 functions of fcgi/ (http.c, sse.c, json.c, utf8.c),
 *   each result checked against what the contract says it must be.
 * - Whole, as one plain-CGI request through handlers_serve (every check of
 *   DESIGN section 2 in its order, the body parsed by jansson, the fields
 *   judged), with ptyd unreachable and autostart off, so a request that
 *   passes every check ends in 503.  The response must be a well-formed
 *   JSON error with one of the contract's statuses.
 *
 * Anything else aborts.  Built with libFuzzer by `make fuzz` (clang), and
 * run over the seed corpus with fixed mutations by `make check` through
 * fuzz_main.c.
 */
#include <sys/mman.h>

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "front.h"
#include "handlers.h"
#include "http.h"
#include "json.h"
#include "sse.h"
#include "utf8.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define NLINES		11
#define LINE_MAX_LEN	4096

static const char *const line_vars[NLINES] = {
	"REQUEST_METHOD",
	"PATH_INFO",
	"QUERY_STRING",
	"CONTENT_TYPE",
	"HTTP_LAST_EVENT_ID",
	"REMOTE_USER",
	"REMOTE_ADDR",
	"HTTP_X_FORWARDED_FOR",
	"HTTP_HOST",
	"HTTP_ORIGIN",
	"HTTP_FORWARDED",
};

#define CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "fuzz_request: %s:%d: %s\n", __FILE__,	\
		    __LINE__, #cond);					\
		abort();						\
	}								\
} while (0)

static struct front_conf	conf;
static int			in_fd = -1, out_fd = -1;

static void
setup(void)
{
	const char	*cause;

	if (in_fd != -1)
		return;
	/* Trust a proxy on loopback, so X-Forwarded-For walks get fuzzed. */
	if (gate_conf_load(&conf.gate, NULL, "1", "127.0.0.1/32,::1",
	    "localhost,127.0.0.1,[::1],example.org:8080", &cause) == -1) {
		fprintf(stderr, "fuzz_request: %s\n", cause);
		abort();
	}
	/* REMOTE_USER believed, locality by address: the deepest paths. */
	if (gate_conf_mode(&conf.gate, "front", "address", &cause) == -1)
		abort();
	/* A socket that does not exist: every exchange is a fast ENOENT. */
	snprintf(conf.ptyd.socket, sizeof(conf.ptyd.socket),
	    "/nonexistent/ptyd-fuzz/ptyd.sock");
	conf.ptyd.autostart = 0;
	conf.heartbeat_ms = 5000;
	in_fd = memfd_create("fuzz-body", MFD_CLOEXEC);
	out_fd = memfd_create("fuzz-response", MFD_CLOEXEC);
	CHECK(in_fd != -1 && out_fd != -1);
	/* Fixed parts of the request; nothing else from our environment. */
	setenv("REQUEST_SCHEME", "http", 1);
	setenv("SERVER_NAME", "localhost", 1);
	setenv("SERVER_PORT", "8080", 1);
	unsetenv("DOCUMENT_URI");
	unsetenv("REQUEST_URI");
	unsetenv("HTTPS");
	unsetenv("HTTP_SEC_FETCH_SITE");
	unsetenv("HTTP_X_REAL_IP");
	unsetenv("HTTP_VIA");
}

/* ---- piece by piece ---- */

/*
 * The reference for http_query_get: the first "name" or "name=..." item,
 * '+' as space, %XX decoded, %00 and broken escapes refused.  Written the
 * slow, obvious way, with the C library doing the hex.  1, 0 or -1, like
 * the real one.
 */
static int
ref_query_get(const char *q, const char *name, char *out, size_t size)
{
	const char	*item = q, *amp, *eq, *p;
	char		 hex[3];
	size_t		 nlen = strlen(name), ilen, o = 0;
	unsigned long	 v;

	if (q == NULL)
		return (0);
	for (;;) {
		amp = strchr(item, '&');
		ilen = amp != NULL ? (size_t)(amp - item) : strlen(item);
		eq = memchr(item, '=', ilen);
		if ((eq != NULL ? (size_t)(eq - item) : ilen) == nlen &&
		    strncmp(item, name, nlen) == 0) {
			for (p = eq != NULL ? eq + 1 : item + ilen;
			    p < item + ilen; p++) {
				if (o + 1 >= size)
					return (-1);
				if (*p == '%') {
					if (item + ilen - p < 3 ||
					    !isxdigit((unsigned char)p[1]) ||
					    !isxdigit((unsigned char)p[2]))
						return (-1);
					memcpy(hex, p + 1, 2);
					hex[2] = '\0';
					if ((v = strtoul(hex, NULL, 16)) == 0)
						return (-1);
					out[o++] = (char)v;
					p += 2;
				} else
					out[o++] = *p == '+' ? ' ' : *p;
			}
			out[o] = '\0';
			return (1);
		}
		if (amp == NULL)
			return (0);
		item = amp + 1;
	}
}

static void
check_query(const char *q)
{
	static const char *const	names[] = { "session_id",
	    "last_event_id", "encoding" };
	char				a[256], b[256];
	size_t				i, size;
	int				ra, rb;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		for (size = 1; size <= sizeof(a); size += 127) {
			ra = http_query_get(q, names[i], a, size);
			rb = ref_query_get(q, names[i], b, size);
			CHECK(ra == rb);
			if (ra == 1) {
				CHECK(strlen(a) < size);
				CHECK(strcmp(a, b) == 0);
			}
		}
	}
}

/* Last-Event-ID: decimal digits only, fitting in 64 bits. */
static void
check_resume(const char *s)
{
	uint64_t	pos = 0, v = 0;
	size_t		i;
	int		digits = s[0] != '\0', overflow = 0;

	for (i = 0; s[i] != '\0'; i++) {
		if (s[i] < '0' || s[i] > '9') {
			digits = 0;
			break;
		}
		if (v > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10)
			overflow = 1;
		else
			v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (sse_parse_pos(s, &pos) == 0)
		CHECK(digits && !overflow && pos == v);
	else
		CHECK(!digits || overflow);
}

/* session_id: 1..128 of [A-Za-z0-9._:-]. */
static int
ref_sid_valid(const char *s)
{
	size_t	n = strlen(s);

	return (n >= 1 && n <= 128 &&
	    strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789._:-") == n);
}

static void
check_body_fields(const char *body, size_t len, const char *query)
{
	enum contract_answer err = CONTRACT_NANSWERS;
	char		 qsid[PROTO_SID_MAX + 1], sid[PROTO_SID_MAX + 1];
	json_t		*obj, *v;
	uint16_t	 dim;
	int		 q;

	q = http_query_get(query, "session_id", qsid, sizeof(qsid));
	if (q == 1)
		CHECK(json_sid_valid(qsid) == ref_sid_valid(qsid));
	if ((obj = json_body_parse(body, len, &err)) == NULL) {
		CHECK(err != CONTRACT_NANSWERS &&
		    contract_answer(err)->status == 400);
		return;
	}
	CHECK(json_is_object(obj));
	err = CONTRACT_NANSWERS;
	if (json_get_sid(obj, q == 1 ? qsid : NULL, sid, sizeof(sid),
	    &err) == 0) {
		CHECK(ref_sid_valid(sid));
		v = json_object_get(obj, "session_id");
		if (v != NULL && json_is_string(v))
			CHECK(strcmp(json_string_value(v), sid) == 0);
		if (q == 1)
			CHECK(strcmp(qsid, sid) == 0);
	} else
		CHECK(err != CONTRACT_NANSWERS &&
		    contract_answer(err)->status == 400);
	err = CONTRACT_NANSWERS;
	if (json_get_dim(obj, "rows", JSON_ROWS_MIN, JSON_ROWS_MAX, &dim,
	    &err) == 0)
		CHECK(dim == 0 || (dim >= JSON_ROWS_MIN &&
		    dim <= JSON_ROWS_MAX));
	else
		CHECK(err != CONTRACT_NANSWERS &&
		    contract_answer(err)->status == 400);
	err = CONTRACT_NANSWERS;
	if (json_get_dim(obj, "cols", JSON_COLS_MIN, JSON_COLS_MAX, &dim,
	    &err) == 0) {
		CHECK(dim == 0 || (dim >= JSON_COLS_MIN &&
		    dim <= JSON_COLS_MAX));
		/* A string, boolean or fraction never passes as a size. */
		v = json_object_get(obj, "cols");
		CHECK(v == NULL || json_is_null(v) || json_is_number(v));
	} else
		CHECK(err != CONTRACT_NANSWERS &&
		    contract_answer(err)->status == 400);
	json_decref(obj);
}

/* memcmp, where an empty buffer may be NULL. */
static int
same(const void *a, const void *b, size_t n)
{
	return (n == 0 || memcmp(a, b, n) == 0);
}

/* Independent of utf8.c: the code points of well-formed UTF-8. */
static size_t
ref_count(const uint8_t *p, size_t n)
{
	size_t	i, c = 0;

	for (i = 0; i < n; i++)
		c += (p[i] & 0xc0) != 0x80;
	return (c);
}

/*
 * The sanitiser: its output is well-formed whatever the input, well-formed
 * input passes untouched, and cutting the input into chunks anywhere
 * changes nothing (a character split across chunks is joined).  Then the
 * escaper: its output, quoted, parses back to the same text and holds no
 * raw control character, DEL or line separator.
 */
static void
check_utf8(const uint8_t *in, size_t len, const uint8_t *cuts, size_t ncuts)
{
	static struct buf	whole, chunked, esc, quoted;
	struct utf8_state	st;
	json_error_t		jerr;
	json_t			*s;
	size_t			off, n, i, valid;

	buf_init(&whole, 8 * len + 64);
	buf_init(&chunked, 8 * len + 64);
	utf8_init(&st);
	CHECK(utf8_sanitise(&st, in, len, &whole) == 0);
	CHECK(utf8_held(&st) <= 3);
	CHECK(utf8_flush(&st, &whole) == 0);
	CHECK(utf8_held(&st) == 0);
	CHECK(utf8_valid_prefix((const uint8_t *)whole.p, whole.len) ==
	    whole.len);
	valid = utf8_valid_prefix(in, len);
	CHECK(valid <= len);
	if (valid == len)
		CHECK(whole.len == len && same(whole.p, in, len));
	else
		CHECK(whole.len >= valid && same(whole.p, in, valid));
	CHECK(utf8_count(whole.p, whole.len) ==
	    ref_count((const uint8_t *)whole.p, whole.len));

	utf8_init(&st);
	for (off = 0, i = 0; off < len; off += n, i++) {
		n = i < ncuts ? cuts[i] % 17 : len - off;
		if (n > len - off)
			n = len - off;
		CHECK(utf8_sanitise(&st, in + off, n, &chunked) == 0);
		CHECK(utf8_held(&st) <= 3);
	}
	CHECK(utf8_flush(&st, &chunked) == 0);
	CHECK(chunked.len == whole.len && same(chunked.p, whole.p, whole.len));

	buf_init(&esc, 6 * whole.len + 64);
	buf_init(&quoted, 6 * whole.len + 64);
	CHECK(json_escape(&esc, whole.p, whole.len) == 0);
	for (i = 0; i < esc.len; i++) {
		CHECK((uint8_t)esc.p[i] >= 0x20 && esc.p[i] != 0x7f);
		if (i + 2 < esc.len && (uint8_t)esc.p[i] == 0xe2 &&
		    (uint8_t)esc.p[i + 1] == 0x80)
			CHECK((uint8_t)esc.p[i + 2] != 0xa8 &&
			    (uint8_t)esc.p[i + 2] != 0xa9);
		if (i + 1 < esc.len && (uint8_t)esc.p[i] == 0xc2)
			CHECK((uint8_t)esc.p[i + 1] >= 0xa0);
	}
	buf_addc(&quoted, '"');
	buf_add(&quoted, esc.p, esc.len);
	buf_addc(&quoted, '"');
	CHECK(!quoted.failed);
	s = json_loadb(quoted.p, quoted.len, JSON_DECODE_ANY | JSON_ALLOW_NUL,
	    &jerr);
	CHECK(s != NULL && json_is_string(s));
	CHECK(json_string_length(s) == whole.len &&
	    same(json_string_value(s), whole.p, whole.len));
	json_decref(s);
	buf_free(&whole);
	buf_free(&chunked);
	buf_free(&esc);
	buf_free(&quoted);
}

/* ---- whole, through handlers_serve ---- */

static int
allowed_status(int st)
{
	switch (st) {
	case 400:
	case 403:
	case 404:
	case 405:
	case 413:
	case 415:
	case 503:
		return (1);
	}
	return (0);
}

/* A 200 without ptyd: limits (a JSON object, no error in it) or metrics
 * (Prometheus text saying ptyd is down). */
static void
check_ok(const char *resp, size_t len)
{
	const char  *eoh;
	json_error_t jerr;
	json_t	    *obj;
	size_t	     blen;

	CHECK((eoh = strstr(resp, "\r\n\r\n")) != NULL);
	blen = len - (size_t)(eoh + 4 - resp);
	if (strstr(resp, "\r\nContent-Type: text/plain; version=0.0.4") !=
	    NULL && strstr(resp, "\r\nContent-Type: text/plain") < eoh) {
		CHECK(strstr(eoh, "\nptyd_up 0\n") != NULL);
		return;
	}
	obj = json_loadb(eoh + 4, blen, 0, &jerr);
	CHECK(obj != NULL && json_is_object(obj));
	CHECK(json_object_get(obj, "error") == NULL);
	CHECK(json_object_get(obj, "session_id") != NULL);
	json_decref(obj);
}

static void
check_response(const char *resp, size_t len)
{
	const char	*eoh, *cl;
	json_error_t	 jerr;
	json_t		*obj, *e;
	size_t		 blen;
	int		 st;

	CHECK(len > 8 && strncmp(resp, "Status: ", 8) == 0);
	st = atoi(resp + 8);
	/* Without ptyd only limits and metrics answer 200. */
	if (st == 200) {
		check_ok(resp, len);
		return;
	}
	if (!allowed_status(st)) {
		fprintf(stderr, "fuzz_request: status %d\n%.*s\n", st,
		    (int)len, resp);
		abort();
	}
	CHECK((eoh = strstr(resp, "\r\n\r\n")) != NULL);
	CHECK((cl = strstr(resp, "\r\nContent-Length: ")) != NULL && cl < eoh);
	blen = len - (size_t)(eoh + 4 - resp);
	CHECK(strtoul(cl + 18, NULL, 10) == blen);
	CHECK(strstr(resp, "\r\nContent-Type: application/json; "
	    "charset=utf-8\r\n") != NULL);
	CHECK(strstr(resp, "\r\nCache-Control: no-store\r\n") != NULL);
	obj = json_loadb(eoh + 4, blen, 0, &jerr);
	CHECK(obj != NULL && json_is_object(obj));
	e = json_object_get(obj, "error");
	CHECK(e != NULL && json_is_string(e));
	/* No path or internals in a message: nothing to do with our socket. */
	CHECK(strstr(json_string_value(e), "/nonexistent") == NULL);
	json_decref(obj);
	if (st == 503)
		CHECK(strstr(resp, "\r\nRetry-After: ") != NULL);
	if (st == 405)
		CHECK(strstr(resp, "\r\nAllow: ") != NULL);
}

static void
run_request(const uint8_t *body, size_t blen, char lines[NLINES][LINE_MAX_LEN])
{
	static char	resp[256 * 1024];
	struct req	r;
	char		cl[32];
	ssize_t		n;
	size_t		i;

	for (i = 0; i < NLINES; i++) {
		if (lines[i][0] == '\0')
			unsetenv(line_vars[i]);
		else
			setenv(line_vars[i], lines[i], 1);
	}
	snprintf(cl, sizeof(cl), "%zu", blen);
	setenv("CONTENT_LENGTH", cl, 1);

	CHECK(ftruncate(in_fd, 0) == 0 && ftruncate(out_fd, 0) == 0);
	CHECK(blen == 0 || pwrite(in_fd, body, blen, 0) == (ssize_t)blen);
	CHECK(lseek(in_fd, 0, SEEK_SET) == 0 && lseek(out_fd, 0, SEEK_SET) ==
	    0);
	req_init_cgi(&r, &conf);
	r.in_fd = in_fd;
	r.out_fd = out_fd;
	handlers_serve(&r);
	CHECK(r.responded);
	n = pread(out_fd, resp, sizeof(resp) - 1, 0);
	CHECK(n > 0);
	resp[n] = '\0';
	check_response(resp, (size_t)n);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char	lines[NLINES][LINE_MAX_LEN];
	const uint8_t	*p = data, *nl, *end = data + size;
	size_t		 i, n;

	setup();
	for (i = 0; i < NLINES; i++) {
		nl = memchr(p, '\n', (size_t)(end - p));
		n = (size_t)((nl != NULL ? nl : end) - p);
		if (n >= LINE_MAX_LEN)
			n = LINE_MAX_LEN - 1;
		memcpy(lines[i], p, n);
		lines[i][n] = '\0';
		p = nl != NULL ? nl + 1 : end;
	}

	check_query(lines[2]);
	check_resume(lines[4]);
	check_body_fields((const char *)p, (size_t)(end - p), lines[2]);
	/* The lines double as chunk sizes for the sanitiser's cuts. */
	check_utf8(p, (size_t)(end - p), (const uint8_t *)lines[1],
	    strlen(lines[1]));
	run_request(p, (size_t)(end - p), lines);
	return (0);
}
