/*
 * test_fcgi_guard.c -- the FastCGI records that open a connection are
 * checked before libfcgi reads them (fcgi/fcgi_guard.c).  Regression:
 * name and value lengths whose sum passes 2^31 made libfcgi's ReadParams
 * assert, aborting the worker process and every stream on it.
 */
#include <criterion/criterion.h>

#include <sys/socket.h>

#include <string.h>
#include <unistd.h>

#include "client.h"
#include "fcgi_guard.h"

static uint8_t	b[FCGI_GUARD_MAX + 64];
static size_t	n;

static void
rec(int type, int id, const void *content, size_t len, int pad)
{
	b[n++] = 1;
	b[n++] = (uint8_t)type;
	b[n++] = (uint8_t)(id >> 8);
	b[n++] = (uint8_t)id;
	b[n++] = (uint8_t)(len >> 8);
	b[n++] = (uint8_t)len;
	b[n++] = (uint8_t)pad;
	b[n++] = 0;
	if (len > 0)
		memcpy(b + n, content, len);
	n += len;
	memset(b + n, 0, (size_t)pad);
	n += (size_t)pad;
}

static void
begin(int id)
{
	static const uint8_t	body[8] = { 0, 1, 0, 0, 0, 0, 0, 0 };

	n = 0;
	rec(1, id, body, sizeof(body), 0);
}

/* A pair with 1-byte lengths. */
static size_t
pair(uint8_t *out, const char *k, const char *v)
{
	size_t	kl = strlen(k), vl = strlen(v);

	out[0] = (uint8_t)kl;
	out[1] = (uint8_t)vl;
	memcpy(out + 2, k, kl);
	memcpy(out + 2 + kl, v, vl);
	return (2 + kl + vl);
}

static enum fcgi_guard
check(void)
{
	const char	*why;

	return (fcgi_guard_check(b, n, &why));
}

Test(fcgi_guard, an_nginx_shaped_request_is_ok_and_every_prefix_wants_more)
{
	uint8_t		p[512];
	size_t		pl = 0, i, end;
	const char	*why;

	begin(1);
	pl += pair(p + pl, "REQUEST_METHOD", "GET");
	pl += pair(p + pl, "DOCUMENT_URI", "/api/terminal/list");
	pl += pair(p + pl, "EMPTY", "");
	rec(4, 1, p, pl, 3);
	rec(4, 1, NULL, 0, 0);
	end = n;
	rec(5, 1, NULL, 0, 0);		/* STDIN after the end is not ours */
	cr_expect_eq(check(), FCGI_GUARD_OK);
	for (i = 0; i < end; i++)
		cr_expect_eq(fcgi_guard_check(b, i, &why), FCGI_GUARD_MORE,
		    "prefix of %zu bytes", i);
}

Test(fcgi_guard, a_pair_may_span_params_records)
{
	uint8_t	p[64];
	size_t	pl = pair(p, "NAME", "value");

	begin(7);
	rec(4, 7, p, 3, 0);
	rec(4, 7, p + 3, pl - 3, 0);
	rec(4, 7, NULL, 0, 0);
	cr_expect_eq(check(), FCGI_GUARD_OK);
}

Test(fcgi_guard, four_byte_lengths_within_the_limit_are_ok)
{
	uint8_t	p[300];

	memset(p, 'x', sizeof(p));
	p[0] = 0x80;		/* name length 200, four bytes */
	p[1] = 0;
	p[2] = 0;
	p[3] = 200;
	p[4] = 80;		/* value length 80, one byte */
	begin(1);
	rec(4, 1, p, 5 + 200 + 80, 0);
	rec(4, 1, NULL, 0, 0);
	cr_expect_eq(check(), FCGI_GUARD_OK);
}

Test(fcgi_guard, lengths_past_the_limit_or_past_2_31_are_bad)
{
	static const uint8_t	huge[] = {
		0xc0, 0, 0, 0, 0xc0, 0, 0, 0, 'x', 'y'
	};
	static const uint8_t	past[] = { 0x80, 0x01, 0x00, 0x01, 1, 'a' };

	begin(1);
	rec(4, 1, huge, sizeof(huge), 0);
	rec(4, 1, NULL, 0, 0);
	cr_expect_eq(check(), FCGI_GUARD_BAD, "sum passes 2^31");
	begin(1);
	rec(4, 1, past, sizeof(past), 0);
	cr_expect_eq(check(), FCGI_GUARD_BAD, "a length past 64 KiB");
}

Test(fcgi_guard, a_cut_pair_at_the_end_of_the_params_is_bad)
{
	static const uint8_t	cut[] = { 5, 5, 'a', 'b' };

	begin(1);
	rec(4, 1, cut, sizeof(cut), 0);
	rec(4, 1, NULL, 0, 0);
	cr_expect_eq(check(), FCGI_GUARD_BAD);
	begin(1);
	rec(4, 1, cut, 1, 0);		/* half a length */
	rec(4, 1, NULL, 0, 0);
	cr_expect_eq(check(), FCGI_GUARD_BAD);
}

Test(fcgi_guard, records_out_of_place_are_bad)
{
	static const uint8_t	body[8] = { 0, 1 };
	uint8_t			p[16];
	size_t			pl = pair(p, "A", "B");

	n = 0;
	rec(4, 1, p, pl, 0);
	cr_expect_eq(check(), FCGI_GUARD_BAD, "PARAMS before BEGIN");
	begin(1);
	rec(4, 2, p, pl, 0);
	cr_expect_eq(check(), FCGI_GUARD_BAD, "another request id");
	begin(1);
	rec(5, 1, "x", 1, 0);
	cr_expect_eq(check(), FCGI_GUARD_BAD, "STDIN before the end");
	begin(1);
	rec(1, 1, body, 8, 0);
	cr_expect_eq(check(), FCGI_GUARD_BAD, "a second BEGIN");
	begin(0);
	cr_expect_eq(check(), FCGI_GUARD_BAD, "request id 0");
	n = 0;
	rec(1, 1, body, 7, 0);
	cr_expect_eq(check(), FCGI_GUARD_BAD, "BEGIN of 7 bytes");
	begin(1);
	b[0] = 2;
	cr_expect_eq(check(), FCGI_GUARD_BAD, "version 2");
	begin(1);
	rec(2, 1, NULL, 0, 0);
	cr_expect_eq(check(), FCGI_GUARD_BAD, "ABORT before the end");
}

/* libfcgi leaks a request's parameters after a GET_VALUES record (found
 * by fuzz_fcgi); no web server sends one. */
Test(fcgi_guard, management_records_are_refused)
{
	uint8_t	p[64];
	size_t	pl = pair(p, "FCGI_MPXS_CONNS", "");

	n = 0;
	rec(9, 0, p, pl, 0);
	rec(1, 1, (const uint8_t[8]){ 0, 1 }, 8, 0);
	rec(4, 1, NULL, 0, 0);
	cr_expect_eq(check(), FCGI_GUARD_BAD);
	begin(1);
	rec(9, 0, p, pl, 0);
	cr_expect_eq(check(), FCGI_GUARD_BAD);
}

Test(fcgi_guard, params_past_64_kib_are_bad)
{
	static uint8_t	p[65535];
	size_t		i;

	memset(p, 'x', sizeof(p));
	begin(1);
	for (i = 0; n < FCGI_GUARD_MAX - 100; i++) {
		p[0] = 127;
		p[1] = 127;
		rec(4, 1, p, 2 + 254, 0);
	}
	rec(4, 1, p, 2 + 254, 0);
	cr_expect_eq(check(), FCGI_GUARD_BAD);
}

Test(fcgi_guard, peek_consumes_nothing_and_refuses_a_silent_or_bad_peer)
{
	int		sv[2];
	uint8_t		p[32], back[256];
	size_t		pl = pair(p, "K", "V");
	const char	*why;

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	begin(1);
	rec(4, 1, p, pl, 0);
	rec(4, 1, NULL, 0, 0);
	cr_assert_eq(write(sv[1], b, n), (ssize_t)n);
	cr_expect_eq(fcgi_guard_peek(sv[0], client_now_ms() + 2000, &why), 0);
	cr_expect_eq(read(sv[0], back, sizeof(back)), (ssize_t)n,
	    "every byte is left for libfcgi");
	/* Silent: refused at the deadline. */
	cr_expect_eq(fcgi_guard_peek(sv[0], client_now_ms() + 200, &why), -1);
	/* Half a request, then the peer closes. */
	cr_assert_eq(write(sv[1], b, 12), 12);
	close(sv[1]);
	cr_expect_eq(fcgi_guard_peek(sv[0], client_now_ms() + 2000, &why), -1);
	close(sv[0]);
}
