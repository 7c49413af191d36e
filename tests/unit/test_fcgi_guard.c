/*
 * test_fcgi_guard.c -- the FastCGI record guard (fcgi_guard.c): every
 * malformed shape it must refuse before libfcgi sees it (libfcgi aborts the
 * whole worker on some of them), the size boundaries, nginx-shaped
 * requests, name-value pairs cut anywhere across records, and guard_conn
 * over a real socket: it consumes nothing, waits for a request sent in
 * pieces, and gives up on one that is slow, cut short or shut down.
 */
#include <criterion/criterion.h>

#include <sys/socket.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fcgi_guard.h"

#define T_BEGIN		1
#define T_ABORT		2
#define T_PARAMS	4
#define T_STDIN		5
#define T_DATA		8
#define T_GET_VALUES	9

struct msg {
	uint8_t	*b;
	size_t	 len;
	size_t	 cap;
};

static void
msg_put(struct msg *m, const void *p, size_t n)
{
	if (m->len + n > m->cap) {
		m->cap = (m->len + n) * 2 + 64;
		cr_assert_not_null(m->b = realloc(m->b, m->cap));
	}
	if (n > 0)
		memcpy(m->b + m->len, p, n);
	m->len += n;
}

static void
msg_rec(struct msg *m, int type, unsigned id, const void *c, size_t clen,
    unsigned pad)
{
	uint8_t	h[8], zero[255];

	h[0] = 1;
	h[1] = (uint8_t)type;
	h[2] = (uint8_t)(id >> 8);
	h[3] = (uint8_t)id;
	h[4] = (uint8_t)(clen >> 8);
	h[5] = (uint8_t)clen;
	h[6] = (uint8_t)pad;
	h[7] = 0;
	msg_put(m, h, 8);
	msg_put(m, c, clen);
	memset(zero, 0, sizeof(zero));
	msg_put(m, zero, pad);
}

static void
msg_begin(struct msg *m, unsigned id, unsigned role, unsigned flags)
{
	uint8_t	b[8] = { 0 };

	b[0] = (uint8_t)(role >> 8);
	b[1] = (uint8_t)role;
	b[2] = (uint8_t)flags;
	msg_rec(m, T_BEGIN, id, b, 8, 0);
}

static void
len_put(struct msg *m, uint32_t n, int four)
{
	uint8_t	b[4];

	if (!four && n < 128) {
		b[0] = (uint8_t)n;
		msg_put(m, b, 1);
		return;
	}
	b[0] = (uint8_t)(0x80 | (n >> 24));
	b[1] = (uint8_t)(n >> 16);
	b[2] = (uint8_t)(n >> 8);
	b[3] = (uint8_t)n;
	msg_put(m, b, 4);
}

/* Pair content (not a record): name and value lengths as nginx writes. */
static void
pair_put(struct msg *m, const char *name, const char *value)
{
	len_put(m, (uint32_t)strlen(name), 0);
	len_put(m, (uint32_t)strlen(value), 0);
	msg_put(m, name, strlen(name));
	msg_put(m, value, strlen(value));
}

/* nginx's params: a 200-byte cookie needs a 4-byte value length. */
static void
nginx_params(struct msg *p)
{
	char	cookie[201];

	memset(cookie, 'c', 200);
	cookie[200] = '\0';
	pair_put(p, "REQUEST_METHOD", "POST");
	pair_put(p, "CONTENT_TYPE", "application/json");
	pair_put(p, "CONTENT_LENGTH", "27");
	pair_put(p, "SCRIPT_NAME", "/api/terminal");
	pair_put(p, "PATH_INFO", "/input");
	pair_put(p, "REMOTE_ADDR", "127.0.0.1");
	pair_put(p, "HTTPS", "");
	pair_put(p, "HTTP_COOKIE", cookie);
	pair_put(p, "HTTP_HOST", "localhost");
}

/* A whole nginx-shaped request: records padded to 8 like nginx's. */
static void
nginx_request(struct msg *m, const char *body)
{
	struct msg	p = { 0 };
	size_t		blen = strlen(body);

	nginx_params(&p);
	msg_begin(m, 1, 1, 0);
	msg_rec(m, T_PARAMS, 1, p.b, p.len, (unsigned)((8 - p.len % 8) % 8));
	msg_rec(m, T_PARAMS, 1, NULL, 0, 0);
	if (blen > 0)
		msg_rec(m, T_STDIN, 1, body, blen,
		    (unsigned)((8 - blen % 8) % 8));
	msg_rec(m, T_STDIN, 1, NULL, 0, 0);
	free(p.b);
}

/* BEGIN, then the given PARAMS content in one record, then the ends. */
static void
params_request(struct msg *m, const struct msg *p)
{
	msg_begin(m, 1, 1, 0);
	if (p->len > 0)
		msg_rec(m, T_PARAMS, 1, p->b, p->len, 0);
	msg_rec(m, T_PARAMS, 1, NULL, 0, 0);
	msg_rec(m, T_STDIN, 1, NULL, 0, 0);
}

static void
want_bad(const struct msg *m, const char *cause_part)
{
	const char	*cause = NULL;

	cr_assert_eq(guard_check(m->b, m->len, &cause), GUARD_BAD);
	cr_assert_not_null(cause);
	if (cause_part != NULL)
		cr_assert(strstr(cause, cause_part) != NULL,
		    "cause \"%s\", want \"%s\"", cause, cause_part);
}

Test(guard_check, nginx_shaped_post_is_ok_and_every_prefix_waits)
{
	struct msg	m = { 0 };
	size_t		i;

	nginx_request(&m, "{\"session_id\":\"a\",\"d\":\"x\"}");
	cr_assert_eq(guard_check(m.b, m.len, NULL), GUARD_OK);
	for (i = 0; i < m.len; i++)
		cr_assert_eq(guard_check(m.b, i, NULL), GUARD_MORE,
		    "prefix of %zu bytes", i);
	free(m.b);
}

Test(guard_check, get_without_body_is_ok)
{
	struct msg	m = { 0 };

	nginx_request(&m, "");
	cr_assert_eq(guard_check(m.b, m.len, NULL), GUARD_OK);
	free(m.b);
}

Test(guard_check, bytes_after_the_end_of_stdin_are_not_looked_at)
{
	struct msg	m = { 0 };

	nginx_request(&m, "{}");
	msg_put(&m, "\xff\xff garbage", 10);
	cr_assert_eq(guard_check(m.b, m.len, NULL), GUARD_OK);
	free(m.b);
}

Test(guard_check, keep_conn_flag_and_full_padding_of_data_records_are_ok)
{
	struct msg	m = { 0 }, p = { 0 };

	pair_put(&p, "A", "b");
	msg_begin(&m, 7, 1, 1);
	msg_rec(&m, T_PARAMS, 7, p.b, p.len, 255);
	msg_rec(&m, T_PARAMS, 7, NULL, 0, 0);
	msg_rec(&m, T_STDIN, 7, "x", 1, 255);
	msg_rec(&m, T_STDIN, 7, NULL, 0, 0);
	cr_assert_eq(guard_check(m.b, m.len, NULL), GUARD_OK);
	free(m.b);
	free(p.b);
}

/*
 * libfcgi reads pairs as one byte stream across PARAMS records: a length,
 * even one byte of a 4-byte length, may sit in one record and the rest in
 * the next.  Cut nginx's params at every byte into two records.
 */
Test(guard_check, pairs_cut_anywhere_across_records_are_ok)
{
	struct msg	p = { 0 };
	size_t		cut;

	nginx_params(&p);
	for (cut = 1; cut < p.len; cut++) {
		struct msg	m = { 0 };

		msg_begin(&m, 1, 1, 0);
		msg_rec(&m, T_PARAMS, 1, p.b, cut, 3);
		msg_rec(&m, T_PARAMS, 1, p.b + cut, p.len - cut, 0);
		msg_rec(&m, T_PARAMS, 1, NULL, 0, 0);
		msg_rec(&m, T_STDIN, 1, NULL, 0, 0);
		cr_assert_eq(guard_check(m.b, m.len, NULL), GUARD_OK,
		    "cut at %zu", cut);
		free(m.b);
	}
	free(p.b);
}

/*
 * libfcgi's SetReaderType zeroes the padding left of BEGIN_REQUEST and of
 * the empty PARAMS record, then reads that padding as a record header: a
 * GET_VALUES record hidden there would pass a guard that skipped padding
 * the way the specification says.  Found by fuzz_fcgi.
 */
Test(guard_check, padding_libfcgi_would_misread_is_bad)
{
	struct msg	m1 = { 0 }, m2 = { 0 }, p = { 0 };
	uint8_t		b[8] = { 0, 1 };

	pair_put(&p, "A", "b");
	msg_rec(&m1, T_BEGIN, 1, b, 8, 8);
	want_bad(&m1, "padding after BEGIN_REQUEST");
	msg_begin(&m2, 1, 1, 0);
	msg_rec(&m2, T_PARAMS, 1, p.b, p.len, 6);
	msg_rec(&m2, T_PARAMS, 1, NULL, 0, 8);
	want_bad(&m2, "padding after the end of PARAMS");
	free(m1.b);
	free(m2.b);
	free(p.b);
}

Test(guard_check, empty_input_and_partial_header_wait)
{
	struct msg	m = { 0 };

	cr_assert_eq(guard_check((const uint8_t *)"", 0, NULL), GUARD_MORE);
	msg_begin(&m, 1, 1, 0);
	cr_assert_eq(guard_check(m.b, 7, NULL), GUARD_MORE);
	cr_assert_eq(guard_check(m.b, 15, NULL), GUARD_MORE);
	cr_assert_eq(guard_check(m.b, 16, NULL), GUARD_MORE);
	free(m.b);
}

Test(guard_check, garbage_is_bad)
{
	struct msg	m = { 0 };

	msg_put(&m, "GET / HTTP/1.1\r\n\r\n", 18);
	want_bad(&m, "version");
	free(m.b);
}

Test(guard_check, version_other_than_1_is_bad)
{
	struct msg	m = { 0 };

	msg_begin(&m, 1, 1, 0);
	m.b[0] = 2;
	want_bad(&m, "version");
	free(m.b);
}

Test(guard_check, first_record_must_be_begin_request)
{
	struct msg	m = { 0 }, p = { 0 };

	pair_put(&p, "A", "b");
	msg_rec(&m, T_PARAMS, 1, p.b, p.len, 0);
	want_bad(&m, "BEGIN_REQUEST");
	free(m.b);
	free(p.b);
}

/* libfcgi answers GET_VALUES from a 64-byte stack buffer, one entry per
 * known name asked for, however many times it is asked. */
Test(guard_check, management_records_are_bad_anywhere)
{
	struct msg	p = { 0 }, m1 = { 0 }, m2 = { 0 }, m3 = { 0 };
	int		i;

	for (i = 0; i < 8; i++)
		pair_put(&p, "FCGI_MPXS_CONNS", "");
	msg_rec(&m1, T_GET_VALUES, 0, p.b, p.len, 0);
	want_bad(&m1, "BEGIN_REQUEST");

	msg_begin(&m2, 1, 1, 0);
	msg_rec(&m2, T_GET_VALUES, 0, p.b, p.len, 0);
	want_bad(&m2, "request id");

	msg_begin(&m3, 1, 1, 0);
	msg_rec(&m3, T_PARAMS, 1, NULL, 0, 0);
	msg_rec(&m3, T_STDIN, 1, "ab", 2, 0);
	msg_rec(&m3, T_GET_VALUES, 0, p.b, p.len, 0);
	want_bad(&m3, "request id");
	/* Refused from its header alone, before its content arrives. */
	m3.len -= p.len;
	want_bad(&m3, "request id");
	free(p.b);
	free(m1.b);
	free(m2.b);
	free(m3.b);
}

Test(guard_check, begin_request_of_id_0_or_wrong_length_is_bad)
{
	struct msg	m = { 0 }, m7 = { 0 }, m9 = { 0 };
	uint8_t		b[9] = { 0, 1 };

	msg_begin(&m, 0, 1, 0);
	want_bad(&m, "id 0");
	msg_rec(&m7, T_BEGIN, 1, b, 7, 1);
	want_bad(&m7, "8 bytes");
	msg_rec(&m9, T_BEGIN, 1, b, 9, 0);
	want_bad(&m9, "8 bytes");
	free(m.b);
	free(m7.b);
	free(m9.b);
}

Test(guard_check, roles_other_than_responder_and_unknown_flags_are_bad)
{
	unsigned	role[] = { 0, 2, 3, 4, 0x101, 0xffff };
	size_t		i;

	for (i = 0; i < sizeof(role) / sizeof(role[0]); i++) {
		struct msg	m = { 0 };

		msg_begin(&m, 1, role[i], 0);
		want_bad(&m, "role");
		free(m.b);
	}
	{
		struct msg	m = { 0 };

		msg_begin(&m, 1, 1, 2);
		want_bad(&m, "flags");
		free(m.b);
	}
}

Test(guard_check, records_of_another_id_or_type_are_bad)
{
	struct msg	m = { 0 };
	int		type[] = { T_BEGIN, T_ABORT, T_STDIN, T_DATA, 3, 6, 11,
			    0, 255 };
	size_t		i;

	msg_begin(&m, 1, 1, 0);
	msg_rec(&m, T_PARAMS, 2, NULL, 0, 0);
	want_bad(&m, "request id");
	free(m.b);

	for (i = 0; i < sizeof(type) / sizeof(type[0]); i++) {
		struct msg	mp = { 0 }, ms = { 0 };

		msg_begin(&mp, 1, 1, 0);
		msg_rec(&mp, type[i], 1, NULL, 0, 0);
		want_bad(&mp, "type");

		if (type[i] == T_STDIN) {
			free(mp.b);
			continue;
		}
		msg_begin(&ms, 1, 1, 0);
		msg_rec(&ms, T_PARAMS, 1, NULL, 0, 0);
		msg_rec(&ms, type[i], 1, NULL, 0, 0);
		want_bad(&ms, "type");
		free(mp.b);
		free(ms.b);
	}

	m = (struct msg){ 0 };
	msg_begin(&m, 1, 1, 0);
	msg_rec(&m, T_PARAMS, 1, NULL, 0, 0);
	msg_rec(&m, T_STDIN, 256 + 1, "x", 1, 0);
	want_bad(&m, "request id");
	free(m.b);
}

/* A name length pointing past the PARAMS stream ("PARAMS length beyond
 * the record"): libfcgi reads on into the next records. */
Test(guard_check, pair_cut_short_by_the_end_of_params_is_bad)
{
	struct msg	p = { 0 }, m = { 0 };

	len_put(&p, 100, 0);
	len_put(&p, 0, 0);
	msg_put(&p, "ABCDEFGH", 8);
	params_request(&m, &p);
	want_bad(&m, "cut short");
	free(p.b);
	free(m.b);
}

Test(guard_check, lengths_cut_short_by_the_end_of_params_are_bad)
{
	static const uint8_t	cuts[][4] = {
		{ 1, 0, 0, 0 },			/* name length only */
		{ 0x80, 0, 0, 0 },		/* 1 byte of a 4-byte length */
		{ 0x80, 0, 0 , 0 },
	};
	size_t			i, n[] = { 1, 1, 3 };

	for (i = 0; i < 3; i++) {
		struct msg	p = { 0 }, m = { 0 };

		msg_put(&p, cuts[i], n[i]);
		params_request(&m, &p);
		want_bad(&m, "cut short");
		free(p.b);
		free(m.b);
	}
}

/* libfcgi: Malloc(nameLen + valueLen + 2) in int: past 2^31 it wraps,
 * malloc fails and its ASSERT aborts the process. */
Test(guard_check, huge_four_byte_lengths_are_bad_before_the_data)
{
	uint32_t	nl[] = { 0x7fffffff, 0x7ffffffe, 0x40000000,
			    GUARD_PARAMS_MAX + 1, 1 };
	uint32_t	vl[] = { 0x7fffffff, 0x7ffffffe, 0x40000000, 0,
			    GUARD_PARAMS_MAX };
	size_t		i;

	for (i = 0; i < sizeof(nl) / sizeof(nl[0]); i++) {
		struct msg	p = { 0 }, m = { 0 };

		len_put(&p, nl[i], 1);
		len_put(&p, vl[i], 1);
		msg_put(&p, "ABCDEFGH", 8);
		/* Only the lengths and a little data: refused at once. */
		msg_begin(&m, 1, 1, 0);
		msg_rec(&m, T_PARAMS, 1, p.b, p.len, 0);
		want_bad(&m, "longer than");
		free(p.b);
		free(m.b);
	}
}

Test(guard_check, empty_or_equals_or_nul_in_name_is_bad)
{
	struct msg	p1 = { 0 }, p2 = { 0 }, p3 = { 0 };
	struct msg	m1 = { 0 }, m2 = { 0 }, m3 = { 0 }, m4 = { 0 }, p4 = { 0 };

	pair_put(&p1, "", "x");
	params_request(&m1, &p1);
	want_bad(&m1, "empty");
	pair_put(&p2, "REMOTE_USER=root", "");
	params_request(&m2, &p2);
	want_bad(&m2, "'='");
	len_put(&p3, 3, 0);
	len_put(&p3, 0, 0);
	msg_put(&p3, "A\0B", 3);
	params_request(&m3, &p3);
	want_bad(&m3, "NUL");
	/* Past the first eight bytes, and in the last one, too. */
	{
		static const char	*names[] = {
			"ABCDEFGHIJKLMNOPQ\0ST", "ABCDEFGHIJKLMNOP=", "ABCDEFG=",
			"ABCDEFGHIJKLMNO\0"
		};
		static const size_t	 lens[] = { 20, 17, 8, 16 };
		size_t			 i;

		for (i = 0; i < 4; i++) {
			struct msg	p = { 0 }, m = { 0 };

			len_put(&p, (uint32_t)lens[i], 0);
			len_put(&p, 1, 0);
			msg_put(&p, names[i], lens[i]);
			msg_put(&p, "v", 1);
			params_request(&m, &p);
			want_bad(&m, "in a parameter name");
			free(p.b);
			free(m.b);
		}
	}
	/* NUL and '=' in a value only end the value early for libfcgi. */
	len_put(&p4, 1, 0);
	len_put(&p4, 3, 0);
	msg_put(&p4, "Aa=\0", 4);
	params_request(&m4, &p4);
	cr_assert_eq(guard_check(m4.b, m4.len, NULL), GUARD_OK);
	free(p1.b); free(p2.b); free(p3.b); free(p4.b);
	free(m1.b); free(m2.b); free(m3.b); free(m4.b);
}

/* BEGIN (16) + PARAMS header (8) + content + empty PARAMS (8) may be
 * exactly GUARD_PARAMS_MAX, not a byte more. */
static void
params_of_size(struct msg *m, size_t clen)
{
	struct msg	p = { 0 };
	char		*v;
	size_t		vlen = clen - 1 - 4 - 1;

	cr_assert_not_null(v = malloc(vlen));
	memset(v, 'v', vlen);
	len_put(&p, 1, 0);
	len_put(&p, (uint32_t)vlen, 1);
	msg_put(&p, "A", 1);
	msg_put(&p, v, vlen);
	params_request(m, &p);
	free(v);
	free(p.b);
}

Test(guard_check, params_up_to_the_limit_are_ok_and_no_more)
{
	struct msg	ok = { 0 }, over = { 0 };

	params_of_size(&ok, GUARD_PARAMS_MAX - 32);
	cr_assert_eq(guard_check(ok.b, ok.len, NULL), GUARD_OK);
	params_of_size(&over, GUARD_PARAMS_MAX - 31);
	want_bad(&over, "params too large");
	free(ok.b);
	free(over.b);
}

Test(guard_check, body_up_to_the_limit_is_ok_and_no_more)
{
	struct msg	m = { 0 };
	char		*body;
	size_t		left, n, room;

	cr_assert_not_null(body = malloc(65535));
	memset(body, 'b', 65535);
	nginx_request(&m, "");
	m.len -= 8;			/* take the empty STDIN off again */
	room = GUARD_MAX - m.len - 8;
	for (left = room; left > 0; left -= 8 + n) {
		n = left - 8;
		if (n > 32768) {
			n = 32768;
			if (left - 8 - n < 9)
				n -= 9;		/* a record needs 8 + 1 */
		}
		msg_rec(&m, T_STDIN, 1, body, n, 0);
	}
	msg_rec(&m, T_STDIN, 1, NULL, 0, 0);
	cr_assert_eq(m.len, GUARD_MAX);
	cr_assert_eq(guard_check(m.b, m.len, NULL), GUARD_OK);

	/* One byte of padding on the empty STDIN record passes the limit. */
	m.b[m.len - 8 + 6] = 1;
	want_bad(&m, "request too large");
	free(m.b);
	free(body);
}

/* guard_conn over a socketpair. */

static int
pair_new(int sv[2])
{
	return (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
}

static int64_t
ms_now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

Test(guard_conn, valid_request_is_left_unconsumed)
{
	struct msg	m = { 0 };
	uint8_t		back[4096];
	int		sv[2];

	nginx_request(&m, "{\"d\":\"x\"}");
	cr_assert_eq(pair_new(sv), 0);
	cr_assert_eq(write(sv[1], m.b, m.len), (ssize_t)m.len);
	cr_assert_eq(guard_conn(sv[0], -1, 1000), 0);
	cr_assert_eq(read(sv[0], back, sizeof(back)), (ssize_t)m.len);
	cr_assert_eq(memcmp(back, m.b, m.len), 0);
	close(sv[0]);
	close(sv[1]);
	free(m.b);
}

Test(guard_conn, large_body_past_the_small_buffer_is_ok)
{
	struct msg	m = { 0 };
	char		*body;
	int		sv[2];

	cr_assert_not_null(body = malloc(60001));
	memset(body, 'b', 60000);
	body[60000] = '\0';
	nginx_request(&m, body);
	cr_assert_eq(pair_new(sv), 0);
	cr_assert_eq(write(sv[1], m.b, m.len), (ssize_t)m.len);
	cr_assert_eq(guard_conn(sv[0], -1, 1000), 0);
	close(sv[0]);
	close(sv[1]);
	free(m.b);
	free(body);
}

struct slow {
	int		 fd;
	struct msg	*m;
	int		 pieces;
	int		 gap_ms;
	int		 close_early;
};

static void *
slow_writer(void *arg)
{
	struct slow		*s = arg;
	struct timespec		 ts = { 0, 0 };
	size_t			 off = 0, n;
	int			 i;

	ts.tv_nsec = (long)s->gap_ms * 1000000L;
	for (i = 0; i < s->pieces; i++) {
		n = i == s->pieces - 1 ? s->m->len - off :
		    s->m->len / (size_t)s->pieces;
		if (s->close_early && i == s->pieces - 1)
			break;
		if (write(s->fd, s->m->b + off, n) != (ssize_t)n)
			break;
		off += n;
		nanosleep(&ts, NULL);
	}
	if (s->close_early)
		close(s->fd);
	return (NULL);
}

Test(guard_conn, request_sent_in_pieces_is_waited_for)
{
	struct msg	m = { 0 };
	struct slow	s;
	pthread_t	t;
	int		sv[2];

	nginx_request(&m, "{\"d\":\"x\"}");
	cr_assert_eq(pair_new(sv), 0);
	s = (struct slow){ sv[1], &m, 8, 5, 0 };
	cr_assert_eq(pthread_create(&t, NULL, slow_writer, &s), 0);
	cr_assert_eq(guard_conn(sv[0], -1, 5000), 0);
	pthread_join(t, NULL);
	close(sv[0]);
	close(sv[1]);
	free(m.b);
}

/* A peer dribbling a byte at a time costs a peek per byte: refused after
 * GUARD_PEEKS_MAX deliveries, long before the deadline. */
Test(guard_conn, request_dribbled_byte_by_byte_is_refused)
{
	struct msg	m = { 0 };
	struct slow	s;
	pthread_t	t;
	int64_t		t0;
	int		sv[2];

	signal(SIGPIPE, SIG_IGN);	/* the writer outlives the reader */
	nginx_request(&m, "{}");
	cr_assert_eq(pair_new(sv), 0);
	s = (struct slow){ sv[1], &m, (int)m.len, 11, 0 };
	cr_assert_eq(pthread_create(&t, NULL, slow_writer, &s), 0);
	t0 = ms_now();
	cr_assert_eq(guard_conn(sv[0], -1, 30000), -1);
	cr_assert_lt(ms_now() - t0, 5000);
	close(sv[0]);
	pthread_join(t, NULL);
	close(sv[1]);
	free(m.b);
}

Test(guard_conn, malformed_request_is_refused)
{
	struct msg	m = { 0 }, p = { 0 };
	int		sv[2];

	len_put(&p, 0x7ffffffe, 1);
	len_put(&p, 0x7ffffffe, 1);
	params_request(&m, &p);
	cr_assert_eq(pair_new(sv), 0);
	cr_assert_eq(write(sv[1], m.b, m.len), (ssize_t)m.len);
	cr_assert_eq(guard_conn(sv[0], -1, 1000), -1);
	close(sv[0]);
	close(sv[1]);
	free(m.b);
	free(p.b);
}

Test(guard_conn, peer_closing_mid_request_is_refused_at_once)
{
	struct msg	m = { 0 };
	struct slow	s;
	pthread_t	t;
	int64_t		t0;
	int		sv[2];

	nginx_request(&m, "{}");
	cr_assert_eq(pair_new(sv), 0);
	s = (struct slow){ sv[1], &m, 2, 1, 1 };
	cr_assert_eq(pthread_create(&t, NULL, slow_writer, &s), 0);
	t0 = ms_now();
	cr_assert_eq(guard_conn(sv[0], -1, 5000), -1);
	cr_assert_lt(ms_now() - t0, 1000);
	pthread_join(t, NULL);
	close(sv[0]);
	free(m.b);
}

Test(guard_conn, silent_or_slow_peer_times_out)
{
	struct msg	m = { 0 };
	int64_t		t0;
	int		sv[2];

	cr_assert_eq(pair_new(sv), 0);
	t0 = ms_now();
	cr_assert_eq(guard_conn(sv[0], -1, 100), -1);
	cr_assert_geq(ms_now() - t0, 100);
	cr_assert_lt(ms_now() - t0, 1000);
	nginx_request(&m, "{}");
	cr_assert_eq(write(sv[1], m.b, 20), 20);
	t0 = ms_now();
	cr_assert_eq(guard_conn(sv[0], -1, 100), -1);
	cr_assert_lt(ms_now() - t0, 1000);
	close(sv[0]);
	close(sv[1]);
	free(m.b);
}

Test(guard_conn, stop_fd_ends_the_wait)
{
	int	sv[2], st[2];
	int64_t	t0;

	cr_assert_eq(pair_new(sv), 0);
	cr_assert_eq(pair_new(st), 0);
	cr_assert_eq(write(st[1], "x", 1), 1);
	t0 = ms_now();
	cr_assert_eq(guard_conn(sv[0], st[0], 5000), -1);
	cr_assert_lt(ms_now() - t0, 1000);
	close(sv[0]);
	close(sv[1]);
	close(st[0]);
	close(st[1]);
}
