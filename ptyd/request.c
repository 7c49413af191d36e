/*
 * request.c -- what each request means: a decoded frame turned into a call
 * on the terminals and a reply.
 *
 * Owns: decoding a request's payload, the session-id check every request
 * naming a terminal passes, the table from message type to handler, the
 * mapping of term.c's errors to the protocol's, and the reply messages
 * (STARTED, INPUT_DONE, OK, CLOSE_REPLY, the LIST items, STATS_REPLY).
 * Does not own: the connection, its fd, its buffers or the stream
 * (conn.c, connstream.c: request_serve only calls conn_reply, conn_error
 * and conn_attach), nor any terminal (term.c).
 */
#include <stdio.h>
#include <string.h>

#include "conn.h"
#include "ev.h"
#include "frame.h"
#include "proto.h"
#include "record.h"
#include "request.h"
#include "store.h"
#include "spawn.h"
#include "stats.h"
#include "term.h"

/* Any request's decoded payload. */
union request_msg {
	struct msg_start  start;
	struct msg_input  input;
	struct msg_resize resize;
	struct msg_close  close;
	struct msg_attach attach;
	struct msg_list	  list;
	struct msg_recordings recordings;
	struct msg_recording  recording;
};

static void
request_term_error(struct conn *c, enum term_err e)
{
	static const struct {
		enum proto_err code;
		const char    *message;
	} map[] = {
		[TERM_EBADREQ] = { PROTO_ERR_BAD_REQUEST, "bad request" },
		[TERM_ENOTRUNNING] = { PROTO_ERR_NOT_RUNNING,
		    "terminal not running" },
		[TERM_EVIEWERS] = { PROTO_ERR_VIEWER_LIMIT,
		    "viewer limit reached" },
		[TERM_EINPUTFULL] = { PROTO_ERR_INPUT_FULL,
		    "input queue full" },
		[TERM_EINTERNAL] = { PROTO_ERR_INTERNAL, "internal error" },
		[TERM_ELIMIT] = { PROTO_ERR_TERM_LIMIT,
		    "terminal limit reached" },
		[TERM_EBUSY] = { PROTO_ERR_EXHAUSTED,
		    "ptyd is busy: try again" },
	};

	if (e == TERM_ESPAWN)
		conn_error(c,
		    spawn_exhausted() ? PROTO_ERR_EXHAUSTED : PROTO_ERR_SPAWN,
		    spawn_error());
	else if ((size_t)e < sizeof(map) / sizeof(map[0]) &&
	    map[e].message != NULL)
		conn_error(c, map[e].code, map[e].message);
	else
		conn_error(c, PROTO_ERR_INTERNAL, "internal error");
}

/* Every request that names a terminal names it by a valid id. */
static int
request_sid(struct conn *c, const char *sid)
{
	if (term_sid_valid(sid))
		return (1);
	conn_error(c, PROTO_ERR_BAD_REQUEST, "invalid session_id");
	return (0);
}

static void
request_start(struct conn *c, union request_msg *m, int64_t now)
{
	struct term_start_req req;
	struct msg_started    ms;
	struct term	     *t;
	int		      reused;
	enum term_err	      e;

	if (!request_sid(c, m->start.sid))
		return;
	memset(&req, 0, sizeof(req));
	req.owner = m->start.owner;
	req.sid = m->start.sid;
	req.workspace = m->start.workspace;
	req.rows = m->start.rows;
	req.cols = m->start.cols;
	req.restart = m->start.restart;
	req.actor = m->start.actor;
	req.record = m->start.record;
	e = term_start(&req, now, &t, &reused);
	if (e == TERM_EBADREQ) {
		conn_error(c, PROTO_ERR_BAD_REQUEST, "workspace not allowed");
		return;
	}
	if (e != TERM_OK) {
		request_term_error(c, e);
		return;
	}
	memset(&ms, 0, sizeof(ms));
	ms.pid = t->pid;
	snprintf(ms.workspace, sizeof(ms.workspace), "%s", t->workspace);
	ms.reused = (uint8_t)reused;
	ms.recording = t->rec_id != 0;
	conn_reply(c, MSG_STARTED, &ms);
}

static void
request_input(struct conn *c, union request_msg *m, int64_t now)
{
	struct msg_input_done mi;
	int		      dup;
	enum term_err	      e;

	if (!request_sid(c, m->input.sid))
		return;
	e = term_input_once(m->input.owner, m->input.sid, m->input.input_id,
	    m->input.actor, m->input.data, m->input.len, now, &dup);
	if (e != TERM_OK) {
		request_term_error(c, e);
		return;
	}
	mi.duplicate = (uint8_t)dup;
	conn_reply(c, MSG_INPUT_DONE, &mi);
}

static void
request_resize(struct conn *c, union request_msg *m, int64_t now)
{
	enum term_err e;

	if (!request_sid(c, m->resize.sid))
		return;
	e = term_resize(m->resize.owner, m->resize.sid, m->resize.rows,
	    m->resize.cols, now);
	if (e != TERM_OK)
		request_term_error(c, e);
	else
		conn_reply(c, MSG_OK, NULL);
}

static void
request_close(struct conn *c, union request_msg *m, int64_t now)
{
	struct msg_close_reply mc;

	if (!request_sid(c, m->close.sid))
		return;
	mc.closed = (uint8_t)term_close(m->close.owner, m->close.sid,
	    m->close.actor, now);
	conn_reply(c, MSG_CLOSE_REPLY, &mc);
}

static void
request_attach(struct conn *c, union request_msg *m, int64_t now)
{
	enum term_err e;

	if (!request_sid(c, m->attach.sid))
		return;
	if (m->attach.mode != PROTO_ATTACH_RAW &&
	    m->attach.mode != PROTO_ATTACH_SCREEN) {
		conn_error(c, PROTO_ERR_BAD_REQUEST, "unknown attach mode");
		return;
	}
	if ((e = conn_attach(c, &m->attach, now)) != TERM_OK)
		request_term_error(c, e);
}

static void
request_list_item(struct conn *c, const struct term *t)
{
	struct msg_list_item m;

	memset(&m, 0, sizeof(m));
	snprintf(m.sid, sizeof(m.sid), "%s", t->sid);
	snprintf(m.owner, sizeof(m.owner), "%s", t->owner);
	m.pid = t->pid;
	snprintf(m.workspace, sizeof(m.workspace), "%s", t->workspace);
	m.rows = t->rows;
	m.cols = t->cols;
	m.running = t->state == TERM_RUNNING;
	m.has_exit_code = t->state == TERM_EXITED && t->has_exit_code;
	m.exit_code = m.has_exit_code ? t->exit_code : 0;
	m.subscribers = t->nviewers;
	m.unwatched_since_us = t->unwatched_since >= 0 ?
	    ev_wall_us(t->unwatched_since) :
	    -1;
	m.last_activity_us = ev_wall_us(t->last_activity);
	m.started_at_us = ev_wall_us(t->started_at);
	conn_reply(c, MSG_LIST_ITEM, &m);
}

static void
request_list(struct conn *c, union request_msg *m, int64_t now)
{
	struct msg_list_end me;
	struct term	   *t;

	(void)now;
	me.count = 0;
	for (t = term_first(); t != NULL; t = term_next(t)) {
		if (!m->list.all_owners && strcmp(t->owner, m->list.owner) != 0)
			continue;
		request_list_item(c, t);
		me.count++;
	}
	conn_reply(c, MSG_LIST_END, &me);
}

static void
request_stats(struct conn *c, union request_msg *m, int64_t now)
{
	struct msg_stats_reply mst;

	(void)m;
	stats_fill(&mst, conn_uptime(now));
	conn_reply(c, MSG_STATS_REPLY, &mst);
}

/* ---- recordings (DESIGN 4) ---- */

#define REQUEST_RECS_MAX 2000 /* rows one MSG_RECORDINGS answers, newest */

struct request_recs {
	struct conn *c;
	uint32_t     count;
};

static void
request_rec_item(const struct store_rec *row, void *arg)
{
	struct request_recs *rr = arg;
	struct msg_rec_item  m;

	memset(&m, 0, sizeof(m));
	m.id = row->id;
	m.terminal_id = row->terminal_id;
	snprintf(m.sid, sizeof(m.sid), "%s", row->sid);
	snprintf(m.owner, sizeof(m.owner), "%s", row->owner);
	m.part = row->part;
	m.started_at_us = (int64_t)(row->started_at * 1e6);
	m.ended_at_us = row->ended_at >= 0 ? (int64_t)(row->ended_at * 1e6) :
					     -1;
	m.bytes = row->bytes;
	m.state = strcmp(row->state, "finished") == 0 ? PROTO_REC_FINISHED :
	    strcmp(row->state, "cut") == 0	      ? PROTO_REC_CUT :
	    strcmp(row->state, "removed") == 0	      ? PROTO_REC_REMOVED :
							PROTO_REC_RECORDING;
	snprintf(m.cut_reason, sizeof(m.cut_reason), "%s", row->cut_reason);
	snprintf(m.sha256, sizeof(m.sha256), "%s", row->sha256);
	m.cols = (uint16_t)row->cols;
	m.rows = (uint16_t)row->rows;
	conn_reply(rr->c, MSG_REC_ITEM, &m);
	rr->count++;
}

static void
request_recordings(struct conn *c, union request_msg *m, int64_t now)
{
	struct request_recs rr = { c, 0 };
	struct msg_rec_end  me;

	(void)now;
	if (m->recordings.sid[0] != '\0' && !request_sid(c, m->recordings.sid))
		return;
	rec_list(m->recordings.all_owners, m->recordings.owner,
	    m->recordings.sid, REQUEST_RECS_MAX, request_rec_item, &rr);
	me.count = rr.count;
	conn_reply(c, MSG_REC_END, &me);
}

static void
request_recording(struct conn *c, union request_msg *m, int64_t now)
{
	struct msg_rec_file mf;
	int		    fd;

	(void)now;
	if (rec_open(m->recording.all_owners, m->recording.owner,
		m->recording.id, &fd, &mf.size) == -1) {
		conn_error(c, PROTO_ERR_NOT_FOUND, "recording not found");
		return;
	}
	conn_reply_fd(c, MSG_REC_FILE, &mf, fd);
}

static void
request_rec_prune(struct conn *c, union request_msg *m, int64_t now)
{
	struct msg_rec_pruned mp;
	unsigned int	      n;

	(void)m;
	rec_prune(now, &n, &mp.bytes);
	mp.removed = n;
	conn_reply(c, MSG_REC_PRUNED, &mp);
}

static const struct {
	uint16_t type;
	void	 (*serve)(struct conn *, union request_msg *, int64_t);
} request_table[] = {
	{ MSG_START, request_start },
	{ MSG_INPUT, request_input },
	{ MSG_RESIZE, request_resize },
	{ MSG_CLOSE, request_close },
	{ MSG_ATTACH, request_attach },
	{ MSG_LIST, request_list },
	{ MSG_STATS, request_stats },
	{ MSG_RECORDINGS, request_recordings },
	{ MSG_RECORDING, request_recording },
	{ MSG_REC_PRUNE, request_rec_prune },
};

int
request_is_request(uint16_t type)
{
	size_t i;

	for (i = 0; i < sizeof(request_table) / sizeof(request_table[0]); i++)
		if (request_table[i].type == type)
			return (1);
	return (0);
}

void
request_serve(struct conn *c, uint16_t type, const uint8_t *payload,
    size_t len, int shutting_down, int64_t now)
{
	union request_msg m;
	size_t		  i;

	if (msg_decode(type, payload, len, &m) == -1) {
		conn_error(c, PROTO_ERR_BAD_REQUEST, "malformed request");
		return;
	}
	if (shutting_down) {
		conn_error(c, PROTO_ERR_SHUTDOWN, "ptyd is shutting down");
		return;
	}
	for (i = 0; i < sizeof(request_table) / sizeof(request_table[0]); i++)
		if (request_table[i].type == type) {
			request_table[i].serve(c, &m, now);
			return;
		}
	conn_error(c, PROTO_ERR_BAD_REQUEST, "not a request");
}
