/*
 * handlers.c -- routing, the contract's checks, and the request/reply
 * endpoints (handlers.h).
 *
 * Owns: DESIGN section 2 apart from the stream, and the observe endpoints
 * (health, metrics).  Every request goes through handlers_serve, which
 * checks in exactly the contract's order, so a request that is wrong in
 * several ways always gets the same status, and then counts it
 * (metrics.c).  Does not own: the stream (stream.c), the Prometheus text
 * (metrics.c).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "client.h"
#include "contract.h"
#include "flog.h"
#include "front.h"
#include "gate.h"
#include "handlers.h"
#include "http.h"
#include "json.h"
#include "metrics.h"
#include "peer.h"
#include "sse.h"
#include "stream.h"
#include "utf8.h"

#define REPLY_BUF (PROTO_HDR_LEN + 16 * 1024)
/* The watchers' list at its longest (64 names of 256 bytes) is more. */
#define WATCHERS_REPLY_BUF (PROTO_HDR_LEN + 16 + PROTO_WATCHERS_BYTES)

/*
 * May msg reach ptyd twice (ptyd_call retries it on a new connection when
 * the kept one was closed under it)?  An input with an input_id runs once
 * (ptyd/once.c); a resize sets a size; stats reads.  A start would say
 * "reused" the second time, a close "not closed", an input without an id
 * would be typed twice.
 */
static int
call_retry_safe(uint16_t type, const void *msg)
{
	switch (type) {
	case MSG_INPUT:
		return (((const struct msg_input *)msg)->input_id[0] != '\0');
	case MSG_RESIZE:
	case MSG_STATS:
		return (1);
	default:
		return (0);
	}
}

/*
 * Send msg and read one reply into buf (size bytes).  Returns 0 with the
 * reply of type want decoded into out, whose bytes fields point into buf;
 * otherwise -1, and unless quiet the error has been answered.  call_as:
 * the same into a buffer of its own, for replies without bytes fields.
 */
static int
call_in(struct ctx *c, uint16_t type, const void *msg, uint16_t want, void *out,
    int quiet, uint8_t *buf, size_t size)
{
	struct frame_out fo;
	struct frame_hdr hdr;
	struct msg_error me;
	int		 rv = -1;

	frame_out_init(&fo);
	if (msg_encode(&fo, type, msg) == -1) {
		if (!quiet)
			http_answer(c->r, CONTRACT_A_INTERNAL);
		goto out;
	}
	if (ptyd_call(&c->r->conf->ptyd, &fo, &hdr, buf, size,
		call_retry_safe(type, msg),
		client_now_ms() + FRONT_CALL_MS) == -1) {
		if (!quiet)
			ptyd_answer_failed(c->r, errno);
		goto out;
	}
	if (quiet) {
		if (hdr.type == want &&
		    msg_decode(want, buf + PROTO_HDR_LEN, hdr.len, out) == 0)
			rv = 0;
		goto out;
	}
	if (hdr.type == MSG_ERROR &&
	    msg_decode(MSG_ERROR, buf + PROTO_HDR_LEN, hdr.len, &me) == 0) {
		ptyd_answer_error(c->r, &me);
		goto out;
	}
	if (hdr.type != want ||
	    msg_decode(want, buf + PROTO_HDR_LEN, hdr.len, out) == -1) {
		flog_warnx("unexpected reply %s to %s", msg_name(hdr.type),
		    msg_name(type));
		http_answer(c->r, CONTRACT_A_INTERNAL);
		goto out;
	}
	rv = 0;
out:
	frame_out_free(&fo);
	return (rv);
}

static int
call_as(struct ctx *c, uint16_t type, const void *msg, uint16_t want, void *out,
    int quiet)
{
	uint8_t *buf;
	int	 rv;

	if ((buf = malloc(REPLY_BUF)) == NULL) {
		if (!quiet)
			http_answer(c->r, CONTRACT_A_INTERNAL);
		return (-1);
	}
	rv = call_in(c, type, msg, want, out, quiet, buf, REPLY_BUF);
	free(buf);
	return (rv);
}

static int
call(struct ctx *c, uint16_t type, const void *msg, uint16_t want, void *out)
{
	return (call_as(c, type, msg, want, out, 0));
}

/* Answer a and fail: the checks' way out. */
static int
bad(struct ctx *c, enum contract_answer a)
{
	http_answer(c->r, a);
	return (-1);
}

/* A text field that must fit limit bytes and hold no NUL; absent or null
 * gives "".  0, or -1 (answered 400). */
static int
get_text(struct ctx *c, json_t *obj, const char *key, char *out, size_t size,
    enum contract_answer a)
{
	json_t	   *v = json_object_get(obj, key);
	const char *s;

	out[0] = '\0';
	if (v == NULL || json_is_null(v))
		return (0);
	if (!json_is_string(v))
		return (bad(c, a));
	s = json_string_value(v);
	if (json_string_length(v) != strlen(s) || strlen(s) >= size)
		return (bad(c, a));
	strcpy(out, s);
	return (0);
}

/* session_id from the body and the query.  0, or -1 (answered 400). */
static int
get_sid(struct ctx *c, json_t *body, char *sid, size_t size)
{
	enum contract_answer err;

	if (json_get_sid(body, c->has_qsid ? c->qsid : NULL, sid, size, &err) ==
	    -1) {
		/* Through a share, the share names the terminal. */
		if (c->share != NULL && err == CONTRACT_A_SID_MISSING) {
			sid[0] = '\0';
			return (0);
		}
		return (bad(c, err));
	}
	return (0);
}

/* session_id, rows and cols (start, resize).  0, or -1 (answered 400). */
static int
get_sid_size(struct ctx *c, json_t *body, char *sid, size_t size,
    uint16_t *rows, uint16_t *cols)
{
	enum contract_answer err;

	if (get_sid(c, body, sid, size) == -1)
		return (-1);
	if (json_get_dim(body, "rows", JSON_ROWS_MIN, JSON_ROWS_MAX, rows,
		&err) == -1 ||
	    json_get_dim(body, "cols", JSON_COLS_MIN, JSON_COLS_MAX, cols,
		&err) == -1)
		return (bad(c, err));
	return (0);
}

/* The share's token into a request's field ("" without one: serve_share
 * let no empty one through). */
static void
share_copy(const struct ctx *c, char *out, size_t size)
{
	snprintf(out, size, "%s", c->share != NULL ? c->share : "");
}

/* 200 {"ok": true} */
static void
answer_ok(struct ctx *c)
{
	json_t *o = json_pack("{s:b}", "ok", 1);

	http_json(c->r, 200, o, NULL);
	json_decref(o);
}

static void
ep_start(struct ctx *c, json_t *body)
{
	struct msg_start   m;
	struct msg_started st;
	json_t		  *v, *o;

	memset(&m, 0, sizeof(m));
	if (get_sid_size(c, body, m.sid, sizeof(m.sid), &m.rows, &m.cols) == -1)
		return;
	v = json_object_get(body, "restart");
	if (v != NULL && !json_is_null(v) && !json_is_boolean(v)) {
		bad(c, CONTRACT_A_RESTART);
		return;
	}
	m.restart = v != NULL && json_is_true(v);
	/* Recordings (DESIGN 4): honoured under record = owner only. */
	v = json_object_get(body, "record");
	if (v != NULL && !json_is_null(v) && !json_is_boolean(v)) {
		bad(c, CONTRACT_A_RECORD);
		return;
	}
	m.record = v != NULL && json_is_true(v);
	if (get_text(c, body, "workspace", m.workspace, sizeof(m.workspace),
		CONTRACT_A_WORKSPACE) == -1)
		return;
	strcpy(m.owner, c->owner);
	strcpy(m.actor, c->actor);
	if (call(c, MSG_START, &m, MSG_STARTED, &st) == -1)
		return;
	o = json_pack("{s:b, s:s, s:s, s:b, s:i, s:b, s:b}", "ok", 1,
	    "session_id", m.sid, "workspace", st.workspace, "running", 1, "pid",
	    (json_int_t)st.pid, "reused", st.reused != 0, "recording",
	    st.recording != 0);
	http_json(c->r, 200, o, NULL);
	json_decref(o);
}

static void
ep_input(struct ctx *c, json_t *body)
{
	struct msg_input      m;
	struct msg_input_done d;
	json_t		     *v, *o;

	memset(&m, 0, sizeof(m));
	if (get_sid(c, body, m.sid, sizeof(m.sid)) == -1)
		return;
	v = json_object_get(body, "data");
	if (v == NULL || json_is_null(v)) {
		bad(c, CONTRACT_A_DATA_MISSING);
		return;
	}
	if (!json_is_string(v)) {
		bad(c, CONTRACT_A_DATA_NOT_STRING);
		return;
	}
	m.data = (const uint8_t *)json_string_value(v);
	m.len = json_string_length(v);
	/* Absent or null: no id (a retry of it could run twice). */
	if (get_text(c, body, "input_id", m.input_id, sizeof(m.input_id),
		CONTRACT_A_INPUT_ID) == -1)
		return;
	v = json_object_get(body, "input_id");
	if (v != NULL && !json_is_null(v) &&
	    !json_token_valid(m.input_id, PROTO_INPUT_ID_MAX)) {
		bad(c, CONTRACT_A_INPUT_ID);
		return;
	}
	if (utf8_count((const char *)m.data, m.len) > FRONT_INPUT_CHARS) {
		http_answer(c->r, CONTRACT_A_INPUT_TOO_LARGE);
		return;
	}
	/*
	 * Empty data still goes to ptyd, which writes nothing: the answer
	 * then says whether the terminal exists (404) like any input.
	 */
	strcpy(m.owner, c->owner);
	strcpy(m.actor, c->actor);
	share_copy(c, m.share, sizeof(m.share));
	if (call(c, MSG_INPUT, &m, MSG_INPUT_DONE, &d) == -1)
		return;
	if (!d.duplicate) {
		answer_ok(c);
		return;
	}
	o = json_pack("{s:b, s:b}", "ok", 1, "duplicate", 1);
	http_json(c->r, 200, o, NULL);
	json_decref(o);
}

static void
ep_resize(struct ctx *c, json_t *body)
{
	struct msg_resize m;

	memset(&m, 0, sizeof(m));
	if (get_sid_size(c, body, m.sid, sizeof(m.sid), &m.rows, &m.cols) == -1)
		return;
	strcpy(m.owner, c->owner);
	share_copy(c, m.share, sizeof(m.share));
	if (call(c, MSG_RESIZE, &m, MSG_OK, NULL) == 0)
		answer_ok(c);
}

static void
ep_close(struct ctx *c, json_t *body)
{
	struct msg_close       m;
	struct msg_close_reply cr;
	json_t		      *o;

	memset(&m, 0, sizeof(m));
	if (get_sid(c, body, m.sid, sizeof(m.sid)) == -1)
		return;
	strcpy(m.owner, c->owner);
	strcpy(m.actor, c->actor);
	share_copy(c, m.share, sizeof(m.share));
	if (call(c, MSG_CLOSE, &m, MSG_CLOSE_REPLY, &cr) == -1)
		return;
	o = json_pack("{s:b, s:b}", "ok", 1, "closed", cr.closed != 0);
	http_json(c->r, 200, o, NULL);
	json_decref(o);
}

static int64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
}

/* Microseconds to the seconds of the JSON API; -1 (never) is null. */
static json_t *
us_to_json(int64_t us)
{
	if (us < 0)
		return (json_null());
	return (json_real((double)us / 1e6));
}

/* One MSG_LIST_ITEM as the JSON API shows it; NULL when out of memory. */
static json_t *
list_item_json(const struct msg_list_item *it)
{
	return (json_pack("{s:s, s:i, s:s, s:i, s:i, s:b, s:o, s:i, "
			  "s:o, s:o, s:o}",
	    "session_id", it->sid, "pid", (json_int_t)it->pid, "workspace",
	    it->workspace, "rows", (json_int_t)it->rows, "cols",
	    (json_int_t)it->cols, "running", it->running != 0, "exit_code",
	    it->has_exit_code ? json_integer(it->exit_code) : json_null(),
	    "subscribers", (json_int_t)it->subscribers, "unwatched_since",
	    us_to_json(it->unwatched_since_us), "last_activity",
	    us_to_json(it->last_activity_us), "started_at",
	    us_to_json(it->started_at_us)));
}

/* A terminal of the list as JSON; *skip for another owner's (ptyd
 * already filters by owner; never show another's). */
static json_t *
list_item(const struct ctx *c, const void *p, int *skip)
{
	const struct msg_list_item *it = p;

	*skip = strcmp(it->owner, c->owner) != 0;
	return (*skip ? NULL : list_item_json(it));
}

/* A list ptyd answers with item frames up to an end frame: their types,
 * the decoded item's size, and one item as JSON (NULL: out of memory, or
 * *skip to leave it out). */
struct list_kind {
	const char *key; /* of the JSON answer's array */
	uint16_t    item_type, end_type;
	size_t	    size;
	json_t *(*json)(const struct ctx *, const void *, int *);
};

/* One reply frame of a list, in buf, into arr: 0 for more, 1 at the
 * list's end, -1 answered. */
static int
list_frame(struct ctx *c, const struct list_kind *k,
    const struct frame_hdr *hdr, const uint8_t *buf, void *it, json_t *arr)
{
	struct msg_error me;
	json_t		*item;
	int		 skip = 0;

	if (hdr->type == k->end_type)
		return (1);
	if (hdr->type == MSG_ERROR &&
	    msg_decode(MSG_ERROR, buf + PROTO_HDR_LEN, hdr->len, &me) == 0) {
		ptyd_answer_error(c->r, &me);
		return (-1);
	}
	if (hdr->type != k->item_type ||
	    msg_decode(k->item_type, buf + PROTO_HDR_LEN, hdr->len, it) == -1) {
		http_answer(c->r, CONTRACT_A_INTERNAL);
		return (-1);
	}
	item = k->json(c, it, &skip);
	if (skip)
		return (0);
	if (item == NULL || json_array_append_new(arr, item) == -1) {
		http_answer(c->r, CONTRACT_A_INTERNAL);
		return (-1);
	}
	return (0);
}

/*
 * Ask ptyd for a list (the request m of type), read its item frames
 * into an array until the end, and answer {key: [...]}.
 */
static void
list_call(struct ctx *c, uint16_t type, const void *m,
    const struct list_kind *k)
{
	struct frame_out fo;
	struct frame_hdr hdr;
	uint8_t		*buf = NULL;
	void		*it = NULL;
	json_t		*arr = NULL, *o;
	int64_t		 deadline;
	int		 fd = -1, r;

	frame_out_init(&fo);
	if (msg_encode(&fo, type, m) == -1 ||
	    (buf = malloc(REPLY_BUF)) == NULL ||
	    (it = malloc(k->size)) == NULL || (arr = json_array()) == NULL) {
		http_answer(c->r, CONTRACT_A_INTERNAL);
		goto out;
	}
	deadline = client_now_ms() + FRONT_CALL_MS;
	if ((fd = ptyd_open_first(&c->r->conf->ptyd, &fo, &hdr, buf, REPLY_BUF,
		 deadline)) == -1) {
		ptyd_answer_failed(c->r, errno);
		goto out;
	}
	while ((r = list_frame(c, k, &hdr, buf, it, arr)) == 0)
		if (client_recv(fd, &hdr, buf, REPLY_BUF, deadline) == -1) {
			ptyd_answer_failed(c->r, errno);
			goto out;
		}
	if (r == 1) {
		o = json_pack("{s:O}", k->key, arr);
		http_json(c->r, 200, o, NULL);
		json_decref(o);
	}
out:
	if (fd != -1)
		close(fd);
	json_decref(arr);
	free(it);
	free(buf);
	frame_out_free(&fo);
}

static void
ep_list(struct ctx *c, json_t *body)
{
	static const struct list_kind k = { "terminals", MSG_LIST_ITEM,
		MSG_LIST_END, sizeof(struct msg_list_item), list_item };
	struct msg_list m;

	(void)body;
	memset(&m, 0, sizeof(m));
	strcpy(m.owner, c->owner);
	list_call(c, MSG_LIST, &m, &k);
}

/*
 * ok while every part works: ptyd answers (else call() answers 503) and
 * its database takes writes.  degraded: 503 with Retry-After, so that a
 * monitor that looks only at the status sees it; the body says why.
 */
static void
ep_health(struct ctx *c, json_t *body)
{
	struct msg_stats_reply st;
	json_t		      *o;
	int		       ok;

	(void)body;
	if (call(c, MSG_STATS, NULL, MSG_STATS_REPLY, &st) == -1)
		return;
	ok = !st.db_failing;
	o = json_pack("{s:s, s:b, s:I, s:b, s:f, s:{s:i, s:f, s:i, s:i, s:i, "
		      "s:I}}",
	    "status", ok ? "ok" : contract_answer(CONTRACT_A_DEGRADED)->message,
	    "ok", ok, "db_errors", (json_int_t)st.db_errors, "db_failing",
	    st.db_failing != 0, "db_lag", (double)st.db_lag_us / 1e6, "ptyd",
	    "pid", (json_int_t)st.pid, "uptime", (double)st.uptime_us / 1e6,
	    "terminals", (json_int_t)st.terminals, "exited",
	    (json_int_t)st.exited, "viewers", (json_int_t)st.viewers,
	    "db_errors", (json_int_t)st.db_errors);
	if (c->r->conf->pool != NULL)
		json_object_set_new(o, "pool", json_string(c->r->conf->pool));
	if (ok)
		http_json(c->r, 200, o, NULL);
	else
		http_answer_json(c->r, CONTRACT_A_DEGRADED, o);
	json_decref(o);
}

/* Prometheus text.  ptyd's part only when it answers (ptyd_up); only to
 * the operator (gate_metrics_ok). */
static void
ep_metrics(struct ctx *c, json_t *body)
{
	struct msg_stats_reply st;
	struct buf	       b;
	int		       up;

	(void)body;
	if (!gate_metrics_ok(&c->r->conf->gate, c->client, c->owner)) {
		http_answer(c->r, CONTRACT_A_METRICS_DENIED);
		return;
	}
	up = call_as(c, MSG_STATS, NULL, MSG_STATS_REPLY, &st, 1) == 0;
	buf_init(&b, 1024 * 1024);
	if (metrics_render(&b, up ? &st : NULL) == -1 ||
	    (c->r->conf->pool != NULL &&
		metrics_pool(&b, c->r->conf->pool) == -1))
		http_answer(c->r, CONTRACT_A_INTERNAL);
	else
		http_respond(c->r, 200, "text/plain; version=0.0.4", "no-store",
		    NULL, b.p, b.len);
	buf_free(&b);
}

/* The caps ptyd has in force, where it answers: terminals at most, and
 * per owner (DESIGN 6, fairness). */
static void
limits_caps(struct ctx *c, json_t *o)
{
	struct msg_stats_reply st;

	if (call_as(c, MSG_STATS, NULL, MSG_STATS_REPLY, &st, 1) != 0)
		return;
	json_object_set_new(o, "terminals",
	    json_pack("{s:I, s:I}", "max", (json_int_t)st.max_terminals,
		"per_owner", (json_int_t)st.max_per_owner));
}

/* The API's limits (lib/contract.h), for the page: it carries none of its
 * own; how often an idle stream beats (heartbeat), so the page knows how
 * long a silence means a dead link; and ptyd's caps, if it answers. */
static void
ep_limits(struct ctx *c, json_t *body)
{
	char	sid[64], iid[64];
	json_t *o;

	(void)body;
	if (contract_token_pattern(sid, sizeof(sid), CONTRACT_SID_MAX) == -1 ||
	    contract_token_pattern(iid, sizeof(iid), CONTRACT_INPUT_ID_MAX) ==
		-1) {
		http_answer(c->r, CONTRACT_A_INTERNAL);
		return;
	}
	o = json_pack("{s:{s:i, s:s}, s:{s:i, s:s}, s:i, s:i, "
		      "s:{s:i, s:i, s:i}, s:{s:i, s:i, s:i}, s:I}",
	    "session_id", "max", CONTRACT_SID_MAX, "pattern", sid, "input_id",
	    "max", CONTRACT_INPUT_ID_MAX, "pattern", iid, "input_chars",
	    CONTRACT_INPUT_CHARS, "body_bytes", CONTRACT_BODY_MAX, "rows",
	    "min", CONTRACT_ROWS_MIN, "max", CONTRACT_ROWS_MAX, "default",
	    CONTRACT_ROWS_DEFAULT, "cols", "min", CONTRACT_COLS_MIN, "max",
	    CONTRACT_COLS_MAX, "default", CONTRACT_COLS_DEFAULT, "heartbeat_ms",
	    (json_int_t)c->r->conf->heartbeat_ms);
	if (o == NULL) {
		http_answer(c->r, CONTRACT_A_INTERNAL);
		return;
	}
	limits_caps(c, o);
	http_json(c->r, 200, o, NULL);
	json_decref(o);
}

static void
ep_output(struct ctx *c, json_t *body)
{
	(void)body;
	metrics_stream(1);
	if (stream_serve(c))
		return; /* the stream loop counts its end */
	metrics_stream(-1);
}

/* Shares and watchers (issue 34, DESIGN 2 and 6). */

/* role: "view" or "control".  PROTO_ROLE_*, or 0 answered. */
static int
get_role(struct ctx *c, json_t *body)
{
	json_t	   *v = json_object_get(body, "role");
	const char *s;

	s = v != NULL && json_is_string(v) ? json_string_value(v) : "";
	if (strcmp(s, "view") == 0)
		return (PROTO_ROLE_VIEW);
	if (strcmp(s, "control") == 0)
		return (PROTO_ROLE_CONTROL);
	bad(c, CONTRACT_A_SHARE_ROLE);
	return (0);
}

/* A positive integer of at most max.  0, or -1 answered a. */
static int
get_count(struct ctx *c, json_t *body, const char *key, json_int_t max,
    uint32_t *out, enum contract_answer a)
{
	json_t *v = json_object_get(body, key);

	if (v == NULL || !json_is_integer(v) || json_integer_value(v) < 1 ||
	    json_integer_value(v) > max)
		return (bad(c, a));
	*out = (uint32_t)json_integer_value(v);
	return (0);
}

static const char *
role_name(uint8_t role)
{
	return (role == PROTO_ROLE_VIEW ? "view" : "control");
}

static void
ep_share(struct ctx *c, json_t *body)
{
	struct msg_share       m;
	struct msg_share_reply r;
	json_t		      *v, *o;
	int		       role;

	memset(&m, 0, sizeof(m));
	if (get_sid(c, body, m.sid, sizeof(m.sid)) == -1 ||
	    (role = get_role(c, body)) == 0 ||
	    get_count(c, body, "expires_in", UINT32_MAX, &m.expires_in,
		CONTRACT_A_SHARE_EXPIRES) == -1)
		return;
	v = json_object_get(body, "user");
	if (v != NULL && !json_is_null(v)) {
		if (get_text(c, body, "user", m.user, sizeof(m.user),
			CONTRACT_A_SHARE_USER) == -1)
			return;
		if (m.user[0] == '\0') {
			bad(c, CONTRACT_A_SHARE_USER);
			return;
		}
		m.has_user = 1;
	}
	m.role = (uint8_t)role;
	strcpy(m.owner, c->owner);
	strcpy(m.actor, c->actor);
	if (call(c, MSG_SHARE, &m, MSG_SHARE_REPLY, &r) == -1)
		return;
	o = json_pack("{s:b, s:i, s:s, s:s, s:o, s:o, s:o}", "ok", 1,
	    "share_id", (json_int_t)r.share_id, "token", r.token, "role",
	    role_name(r.role), "user",
	    r.has_user ? json_string(r.user) : json_null(), "created_at",
	    us_to_json(r.created_at_us), "expires_at",
	    us_to_json(r.expires_at_us));
	explicit_bzero(r.token, sizeof(r.token));
	if (o == NULL) {
		http_answer(c->r, CONTRACT_A_INTERNAL);
		return;
	}
	http_json(c->r, 200, o, NULL);
	json_decref(o);
}

/* A share of GET shares as JSON. */
static json_t *
share_item(const struct ctx *c, const void *p, int *skip)
{
	const struct msg_share_item *it = p;

	(void)c;
	(void)skip;
	return (json_pack("{s:i, s:s, s:o, s:o, s:o, s:i}", "share_id",
	    (json_int_t)it->share_id, "role", role_name(it->role), "user",
	    it->has_user ? json_string(it->user) : json_null(), "created_at",
	    us_to_json(it->created_at_us), "expires_at",
	    us_to_json(it->expires_at_us), "viewers", (json_int_t)it->viewers));
}

static void
ep_shares(struct ctx *c, json_t *body)
{
	static const struct list_kind k = { "shares", MSG_SHARE_ITEM,
		MSG_LIST_END, sizeof(struct msg_share_item), share_item };
	struct msg_shares m;

	memset(&m, 0, sizeof(m));
	if (get_sid(c, body, m.sid, sizeof(m.sid)) == -1)
		return;
	strcpy(m.owner, c->owner);
	list_call(c, MSG_SHARES, &m, &k);
}

static void
ep_unshare(struct ctx *c, json_t *body)
{
	struct msg_unshare	 m;
	struct msg_unshare_reply r;
	json_t			*o;

	memset(&m, 0, sizeof(m));
	if (get_sid(c, body, m.sid, sizeof(m.sid)) == -1 ||
	    get_count(c, body, "share_id", UINT32_MAX, &m.share_id,
		CONTRACT_A_SHARE_ID) == -1)
		return;
	strcpy(m.owner, c->owner);
	strcpy(m.actor, c->actor);
	if (call(c, MSG_UNSHARE, &m, MSG_UNSHARE_REPLY, &r) == -1)
		return;
	o = json_pack("{s:b, s:b}", "ok", 1, "revoked", r.revoked != 0);
	http_json(c->r, 200, o, NULL);
	json_decref(o);
}

/* What a page opened from a link needs to attach (serve_share let no
 * request without the header through). */
static void
ep_shared(struct ctx *c, json_t *body)
{
	struct msg_shared	m;
	struct msg_shared_reply r;
	json_t		       *o;

	(void)body;
	memset(&m, 0, sizeof(m));
	strcpy(m.owner, c->owner);
	strcpy(m.actor, c->actor);
	share_copy(c, m.share, sizeof(m.share));
	if (call(c, MSG_SHARED, &m, MSG_SHARED_REPLY, &r) == -1)
		return;
	o = json_pack("{s:s, s:s, s:s, s:o, s:i, s:i, s:b}", "session_id",
	    r.sid, "owner", r.owner, "role", role_name(r.role), "expires_at",
	    us_to_json(r.expires_at_us), "rows", (json_int_t)r.rows, "cols",
	    (json_int_t)r.cols, "running", r.running != 0);
	if (o == NULL) {
		http_answer(c->r, CONTRACT_A_INTERNAL);
		return;
	}
	http_json(c->r, 200, o, NULL);
	json_decref(o);
}

static void
ep_watchers(struct ctx *c, json_t *body)
{
	struct msg_watchers	  m;
	struct msg_watchers_reply r;
	struct buf		  b;
	uint8_t			 *rb;

	memset(&m, 0, sizeof(m));
	if (get_sid(c, body, m.sid, sizeof(m.sid)) == -1)
		return;
	strcpy(m.owner, c->owner);
	share_copy(c, m.share, sizeof(m.share));
	/* r.data points into rb: kept until the answer is made. */
	if ((rb = malloc(WATCHERS_REPLY_BUF)) == NULL) {
		http_answer(c->r, CONTRACT_A_INTERNAL);
		return;
	}
	if (call_in(c, MSG_WATCHERS, &m, MSG_WATCHERS_REPLY, &r, 0, rb,
		WATCHERS_REPLY_BUF) == -1) {
		free(rb);
		return;
	}
	buf_init(&b, 64 * 1024);
	if (sse_watchers_json(&b, &r) == -1)
		http_answer(c->r, CONTRACT_A_INTERNAL);
	else
		http_respond(c->r, 200, "application/json", "no-store", NULL,
		    b.p, b.len);
	buf_free(&b);
	free(rb);
}

/* ---- recordings (DESIGN 4) ---------------------------------------------- */

#define REC_FILE_CHUNK (64 * 1024)

/* A user the operator lets read every owner's recordings
 * (recordings_readers); only one the web server vouched for. */
static int
rec_reader(struct ctx *c)
{
	return (c->owner[0] != '\0' && c->r->conf->recordings_readers != NULL &&
	    gate_list_has(c->r->conf->recordings_readers, c->owner));
}

static const char *
rec_state_name(uint8_t state)
{
	switch (state) {
	case PROTO_REC_FINISHED:
		return ("finished");
	case PROTO_REC_CUT:
		return ("cut");
	case PROTO_REC_REMOVED:
		return ("removed");
	default:
		return ("recording");
	}
}

static json_t *
rec_item_json(const struct msg_rec_item *it)
{
	return (json_pack("{s:I, s:s, s:s, s:i, s:o, s:o, s:I, s:s, s:o, "
			  "s:o, s:i, s:i}",
	    "id", (json_int_t)it->id, "session_id", it->sid, "owner", it->owner,
	    "part", (json_int_t)it->part, "started_at",
	    us_to_json(it->started_at_us), "ended_at",
	    us_to_json(it->ended_at_us), "bytes", (json_int_t)it->bytes,
	    "state", rec_state_name(it->state), "cut_reason",
	    it->cut_reason[0] != '\0' ? json_string(it->cut_reason) :
					json_null(),
	    "sha256",
	    it->sha256[0] != '\0' ? json_string(it->sha256) : json_null(),
	    "cols", (json_int_t)it->cols, "rows", (json_int_t)it->rows));
}

/* A recording of GET recordings as JSON. */
static json_t *
rec_item(const struct ctx *c, const void *p, int *skip)
{
	(void)c;
	(void)skip;
	return (rec_item_json(p));
}

static void
ep_recordings(struct ctx *c, json_t *body)
{
	static const struct list_kind k = { "recordings", MSG_REC_ITEM,
		MSG_REC_END, sizeof(struct msg_rec_item), rec_item };
	struct msg_recordings m;

	(void)body;
	memset(&m, 0, sizeof(m));
	m.all_owners = (uint8_t)rec_reader(c);
	strcpy(m.owner, c->owner);
	if (c->has_qsid)
		strcpy(m.sid, c->qsid);
	list_call(c, MSG_RECORDINGS, &m, &k);
}

/* ?id=N: 1..18 digits.  0, or -1 answered. */
static int
rec_query_id(struct ctx *c, int64_t *id)
{
	char   q[24];
	size_t i;

	if (http_query_get(req_param(c->r, "QUERY_STRING"), "id", q,
		sizeof(q)) != 1 ||
	    q[0] == '\0' || strlen(q) > 18)
		return (bad(c, CONTRACT_A_RECORDING_ID));
	for (i = 0; q[i] != '\0'; i++)
		if (q[i] < '0' || q[i] > '9')
			return (bad(c, CONTRACT_A_RECORDING_ID));
	*id = strtoll(q, NULL, 10);
	return (0);
}

/* ptyd's answer: the file's descriptor and size, or an error answered. */
static int
rec_file_open(struct ctx *c, int64_t id, int *file, uint64_t *size)
{
	struct frame_out     fo;
	struct frame_hdr     hdr;
	struct msg_recording m;
	struct msg_rec_file  mf;
	struct msg_error     me;
	uint8_t		     buf[PROTO_HDR_LEN + 512];
	int64_t		     deadline = client_now_ms() + FRONT_CALL_MS;
	int		     fd = -1, rv = -1;

	memset(&m, 0, sizeof(m));
	m.all_owners = (uint8_t)rec_reader(c);
	strcpy(m.owner, c->owner);
	m.id = id;
	frame_out_init(&fo);
	if (msg_encode(&fo, MSG_RECORDING, &m) == -1) {
		http_answer(c->r, CONTRACT_A_INTERNAL);
		goto out;
	}
	if ((fd = ptyd_open(&c->r->conf->ptyd, &fo, deadline)) == -1 ||
	    client_recv_fd(fd, &hdr, buf, sizeof(buf), deadline, file) == -1) {
		ptyd_answer_failed(c->r, errno);
		goto out;
	}
	if (hdr.type == MSG_ERROR &&
	    msg_decode(MSG_ERROR, buf + PROTO_HDR_LEN, hdr.len, &me) == 0)
		ptyd_answer_error(c->r, &me);
	else if (hdr.type != MSG_REC_FILE || *file == -1 ||
	    msg_decode(MSG_REC_FILE, buf + PROTO_HDR_LEN, hdr.len, &mf) == -1)
		http_answer(c->r, CONTRACT_A_INTERNAL);
	else {
		*size = mf.size;
		rv = 0;
	}
out:
	if (rv == -1 && *file != -1) {
		close(*file);
		*file = -1;
	}
	if (fd != -1)
		close(fd);
	frame_out_free(&fo);
	return (rv);
}

/* The file's bytes as they were when ptyd opened it: a recording still
 * being written gives what it holds so far. */
static void
ep_recording(struct ctx *c, json_t *body)
{
	char	*chunk = NULL;
	uint64_t size = 0, sent = 0;
	int64_t	 id;
	int	 file = -1;
	ssize_t	 n;

	(void)body;
	if (rec_query_id(c, &id) == -1 ||
	    rec_file_open(c, id, &file, &size) == -1)
		return;
	if ((chunk = malloc(REC_FILE_CHUNK)) == NULL) {
		http_answer(c->r, CONTRACT_A_INTERNAL);
		goto out;
	}
	if (http_respond_head(c->r, 200, "application/x-asciicast", "no-store",
		size) == -1)
		goto out;
	while (sent < size) {
		n = read(file, chunk,
		    size - sent < REC_FILE_CHUNK ? (size_t)(size - sent) :
						   REC_FILE_CHUNK);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* Shorter than it was (a cut's undone line): the
			 * body cannot be what the header promised. */
			flog_warnx("recording %lld: the file ended early",
			    (long long)id);
			break;
		}
		if (req_write(c->r, chunk, (size_t)n) == -1)
			break;
		sent += (uint64_t)n;
	}
out:
	free(chunk);
	close(file);
}

static const struct route {
	enum contract_endpoint ep; /* its name: lib/contract.c */
	const char	      *method;
	void (*serve)(struct ctx *, json_t *);
} routes[] = {
	{ CONTRACT_EP_START, "POST", ep_start },
	{ CONTRACT_EP_INPUT, "POST", ep_input },
	{ CONTRACT_EP_RESIZE, "POST", ep_resize },
	{ CONTRACT_EP_CLOSE, "POST", ep_close },
	{ CONTRACT_EP_OUTPUT, "GET", ep_output },
	{ CONTRACT_EP_LIST, "GET", ep_list },
	{ CONTRACT_EP_HEALTH, "GET", ep_health },
	{ CONTRACT_EP_METRICS, "GET", ep_metrics },
	{ CONTRACT_EP_LIMITS, "GET", ep_limits },
	{ CONTRACT_EP_RECORDINGS, "GET", ep_recordings },
	{ CONTRACT_EP_RECORDING, "GET", ep_recording },
	{ CONTRACT_EP_SHARE, "POST", ep_share },
	{ CONTRACT_EP_SHARES, "GET", ep_shares },
	{ CONTRACT_EP_UNSHARE, "POST", ep_unshare },
	{ CONTRACT_EP_SHARED, "GET", ep_shared },
	{ CONTRACT_EP_WATCHERS, "GET", ep_watchers },
};

static const struct route *
route_find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (strcmp(contract_endpoint_name(routes[i].ep), name) == 0)
			return (&routes[i]);
	return (NULL);
}

/* Read the whole body, at most FRONT_BODY_MAX bytes.  NULL after an
 * answer (413, 500) has been given. */
static char *
read_body(struct ctx *c, size_t *lenp)
{
	char   *body;
	size_t	len = 0;
	ssize_t n;

	if ((body = malloc(FRONT_BODY_MAX + 1)) == NULL) {
		http_answer(c->r, CONTRACT_A_INTERNAL);
		return (NULL);
	}
	/* Read one byte past the limit, never more, to see it is over. */
	while (len <= FRONT_BODY_MAX) {
		n = req_read(c->r, body + len, FRONT_BODY_MAX + 1 - len);
		if (n == -1) {
			free(body);
			http_answer(c->r, CONTRACT_A_BODY_UNREADABLE);
			return (NULL);
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > FRONT_BODY_MAX) {
		free(body);
		http_answer(c->r, CONTRACT_A_BODY_TOO_LARGE);
		return (NULL);
	}
	*lenp = len;
	return (body);
}

/* CONTENT_LENGTH over the limit?  Checked before reading anything. */
static int
content_length_over(struct req *r)
{
	const char	  *cl = req_param(r, "CONTENT_LENGTH");
	unsigned long long v = 0;
	size_t		   i;

	if (cl == NULL)
		return (0);
	for (i = 0; cl[i] != '\0'; i++) {
		if (cl[i] < '0' || cl[i] > '9')
			return (0); /* the web server's business */
		if (v > FRONT_BODY_MAX)
			return (1);
		v = v * 10 + (unsigned long long)(cl[i] - '0');
	}
	return (v > FRONT_BODY_MAX);
}

/*
 * Local by address (PTYD_LOCAL=account): allowed only if the client's socket
 * on this host belongs to the account that runs us, or to root.  Another
 * user of this host, or another customer's script on a shared one, reaches
 * nginx on loopback too.
 */
static enum gate_verdict
check_account(struct req *r)
{
	struct peer_key k;
	uid_t		uid;

	if (peer_key_parse(&k, req_param(r, "REMOTE_ADDR"),
		req_param(r, "REMOTE_PORT"), req_param(r, "SERVER_ADDR"),
		req_param(r, "SERVER_PORT")) == -1 ||
	    peer_uid(&k, &uid) == -1)
		return (GATE_DENY_OTHER_ACCOUNT);
	if (uid != r->conf->account_uid && uid != 0)
		return (GATE_DENY_OTHER_ACCOUNT);
	return (GATE_ALLOW_LOCAL);
}

/* 403: the gate, before anything else.  The owner ("" if local) and
 * the client's address; -1 answered. */
static int
serve_gate(struct req *r, const char **user, char *client, size_t size)
{
	struct gate_req	  g;
	enum gate_verdict v;

	g.remote_user = req_param(r, "REMOTE_USER");
	g.remote_addr = req_param(r, "REMOTE_ADDR");
	/*
	 * Once each, or "": a header whose lines arrive as several params is
	 * a blank hop, which denies where the headers count (DESIGN 6).  Its
	 * first line alone could be the one the client wrote before a
	 * trusted proxy added its own, and the params' order need not be the
	 * lines' (req_param_once).  nginx passes X-Forwarded-For as one
	 * param, its lines joined in order (ptyd-fastcgi.conf).
	 */
	g.forwarded_for = req_param_once(r, "HTTP_X_FORWARDED_FOR");
	g.real_ip = req_param_once(r, "HTTP_X_REAL_IP");
	/* Signs of a proxy; Forwarded is checked against the above. */
	g.forwarded = req_param_once(r, "HTTP_FORWARDED");
	g.via = req_param(r, "HTTP_VIA");
	v = gate_check(&r->conf->gate, &g, client, size);
	if (v == GATE_LOCAL_UNVERIFIED)
		v = check_account(r);
	if (!gate_allowed(v)) {
		http_answer(r, CONTRACT_A_GATE);
		return (-1);
	}
	/* Only a user the front server vouched for owns terminals. */
	*user = v == GATE_ALLOW_USER ? g.remote_user : "";
	return (0);
}

/* 404 (no route), then 405.  0, or -1 answered. */
static int
serve_route(struct ctx *c, const struct route *rt)
{
	char allow[64];

	if (rt == NULL) {
		http_answer(c->r, CONTRACT_A_NO_ENDPOINT);
		return (-1);
	}
	c->method = req_param(c->r, "REQUEST_METHOD");
	if (c->method == NULL || strcmp(c->method, rt->method) != 0) {
		snprintf(allow, sizeof(allow), "Allow: %s\r\n", rt->method);
		http_answer_with(c->r, CONTRACT_A_METHOD, NULL, allow);
		return (-1);
	}
	return (0);
}

/* 403: DNS rebinding (Host) without an authenticated user; CSRF.  0, or
 * -1 answered. */
static int
serve_origin(struct req *r, const char *user)
{
	struct gate_http h;

	memset(&h, 0, sizeof(h));
	h.scheme = req_param(r, "REQUEST_SCHEME");
	h.https = req_param(r, "HTTPS");
	h.host = req_param(r, "HTTP_HOST");
	h.server_name = req_param(r, "SERVER_NAME");
	h.server_port = req_param(r, "SERVER_PORT");
	h.origin = req_param(r, "HTTP_ORIGIN");
	h.fetch_site = req_param(r, "HTTP_SEC_FETCH_SITE");
	if (user[0] == '\0' && !gate_host_ok(&r->conf->gate, &h)) {
		http_answer(r, CONTRACT_A_HOST);
		return (-1);
	}
	if (!gate_csrf_ok(&h)) {
		http_answer(r, CONTRACT_A_CROSS_ORIGIN);
		return (-1);
	}
	return (0);
}

/* A POST's body: 413 from CONTENT_LENGTH before reading, then the body,
 * then 415.  0 with *body (free it), or -1 answered. */
static int
serve_body(struct ctx *c, char **body, size_t *blen)
{
	if (content_length_over(c->r)) {
		http_answer(c->r, CONTRACT_A_BODY_TOO_LARGE);
		return (-1);
	}
	if ((*body = read_body(c, blen)) == NULL)
		return (-1);
	if (!http_is_json(req_param(c->r, "CONTENT_TYPE"))) {
		http_answer(c->r, CONTRACT_A_NOT_JSON);
		return (-1);
	}
	return (0);
}

/* 400: the owner, the query's session_id, the JSON body.  0, or -1
 * answered. */
static int
serve_params(struct ctx *c, const char *user, const char *client,
    const char *body, size_t blen, json_t **obj)
{
	enum contract_answer err;
	int		     q;

	if (strlen(user) > PROTO_OWNER_MAX) {
		http_answer(c->r, CONTRACT_A_USER_TOO_LONG);
		return (-1);
	}
	c->owner = user;
	c->client = client;
	snprintf(c->actor, sizeof(c->actor), "%s@%s", user, client);
	q = http_query_get(req_param(c->r, "QUERY_STRING"), "session_id",
	    c->qsid, sizeof(c->qsid));
	if (q == -1 || (q == 1 && !json_sid_valid(c->qsid))) {
		http_answer(c->r, CONTRACT_A_SID_INVALID);
		return (-1);
	}
	c->has_qsid = q == 1;
	if (body != NULL &&
	    (*obj = json_body_parse(body, blen, &err)) == NULL) {
		http_answer(c->r, err);
		return (-1);
	}
	return (0);
}

/*
 * 403: Ptyd-Share (DESIGN 6) reaches only the endpoints a share may use;
 * shared needs it; an empty or overlong one is a share nobody has.  The
 * token is never read from the query or the body, and goes nowhere but
 * ptyd.  0, or -1 answered.
 */
static int
serve_share(struct ctx *c, const struct route *rt)
{
	const char *tok = req_param(c->r, "HTTP_PTYD_SHARE");

	c->share = NULL;
	if (tok == NULL)
		return (rt->ep == CONTRACT_EP_SHARED ?
			bad(c, CONTRACT_A_SHARE_INVALID) :
			0);
	switch (rt->ep) {
	case CONTRACT_EP_OUTPUT:
	case CONTRACT_EP_INPUT:
	case CONTRACT_EP_RESIZE:
	case CONTRACT_EP_CLOSE:
	case CONTRACT_EP_SHARED:
	case CONTRACT_EP_WATCHERS:
		break;
	default:
		return (bad(c, CONTRACT_A_NOT_SHARED));
	}
	if (tok[0] == '\0' || strlen(tok) > PROTO_TOKEN_MAX)
		return (bad(c, CONTRACT_A_SHARE_INVALID));
	c->share = tok;
	return (0);
}

/* The checks in the contract's order, then the endpoint.  The route the
 * path names, NULL if none (for the metrics, whatever was answered). */
static const struct route *
serve(struct req *r)
{
	struct ctx	    c;
	const struct route *rt;
	char		    client[64];
	const char	   *user;
	char		   *body = NULL;
	size_t		    blen = 0;
	json_t		   *obj = NULL;

	memset(&c, 0, sizeof(c));
	c.r = r;
	http_endpoint(r, c.endpoint, sizeof(c.endpoint));
	rt = route_find(c.endpoint);
	if (serve_gate(r, &user, client, sizeof(client)) == -1 ||
	    serve_route(&c, rt) == -1)
		return (rt);
	if (serve_origin(r, user) == -1 ||
	    (strcmp(rt->method, "POST") == 0 &&
		serve_body(&c, &body, &blen) == -1) ||
	    serve_params(&c, user, client, body, blen, &obj) == -1 ||
	    serve_share(&c, rt) == -1)
		goto out;
	rt->serve(&c, obj);
out:
	json_decref(obj);
	free(body);
	return (rt);
}

void
handlers_serve(struct req *r)
{
	const struct route *rt;
	int64_t		    t0;
	int		    status;

	t0 = now_us();
	rt = serve(r);
	if (r->handed)
		return; /* a stream, now the loop's: it counts its end */
	/* The stream writes its own 200 (stream.c): responded, no status. */
	status = r->status != 0 ? r->status : r->responded ? 200 : 0;
	metrics_request(rt != NULL ? contract_endpoint_name(rt->ep) : NULL,
	    status, now_us() - t0);
}
