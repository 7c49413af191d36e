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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "ev.h"
#include "frame.h"
#include "proto.h"
#include "ptyd.h"
#include "record.h"
#include "request.h"
#include "share.h"
#include "store.h"
#include "spawn.h"
#include "stats.h"
#include "term.h"
#include "watch.h"
#include "xmalloc.h"

/* Any request's decoded payload. */
union request_msg {
	struct msg_start  start;
	struct msg_input  input;
	struct msg_resize resize;
	struct msg_close  close;
	struct msg_attach attach;
	struct msg_list	  list;
	struct msg_share    share;
	struct msg_shares   shares;
	struct msg_unshare  unshare;
	struct msg_shared   shared;
	struct msg_watchers watchers;
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

/*
 * The share a request's token names, if its requester may use it now,
 * and the session id the request names is none or the share's.  NULL
 * when answered: every reason a share cannot be used is one answer.
 */
static struct share *
request_share(struct conn *c, const char *token, const char *requester,
    const char *sid, int64_t now)
{
	struct share *s;

	if ((s = share_use(token, requester, now)) == NULL) {
		conn_error(c, PROTO_ERR_SHARE_INVALID, "share not valid");
		return (NULL);
	}
	if (sid[0] != '\0' && strcmp(sid, s->term->sid) != 0) {
		conn_error(c, PROTO_ERR_SHARE_SID,
		    "session_id does not match the share");
		return (NULL);
	}
	return (s);
}

/* What a request through a share may change (input, resize): a control
 * share's terminal; NULL when answered. */
static struct share *
request_share_control(struct conn *c, const char *token, const char *requester,
    const char *sid, int64_t now)
{
	struct share *s;

	if ((s = request_share(c, token, requester, sid, now)) == NULL)
		return (NULL);
	if (s->role != PROTO_ROLE_CONTROL) {
		conn_error(c, PROTO_ERR_READ_ONLY, "read-only viewer");
		return (NULL);
	}
	return (s);
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

	struct share *s;
	const char   *owner = m->input.owner, *sid = m->input.sid;

	if (m->input.share[0] != '\0') {
		if ((s = request_share_control(c, m->input.share, owner, sid,
			 now)) == NULL)
			return;
		owner = s->term->owner;
		sid = s->term->sid;
	} else if (!request_sid(c, sid))
		return;
	e = term_input_once(owner, sid, m->input.input_id, m->input.actor,
	    m->input.data, m->input.len, now, &dup);
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
	struct share *s;
	const char   *owner = m->resize.owner, *sid = m->resize.sid;

	if (m->resize.share[0] != '\0') {
		if ((s = request_share_control(c, m->resize.share, owner, sid,
			 now)) == NULL)
			return;
		owner = s->term->owner;
		sid = s->term->sid;
	} else if (!request_sid(c, sid))
		return;
	e = term_resize(owner, sid, m->resize.rows, m->resize.cols, now);
	if (e != TERM_OK)
		request_term_error(c, e);
	else
		conn_reply(c, MSG_OK, NULL);
}

static void
request_close(struct conn *c, union request_msg *m, int64_t now)
{
	struct msg_close_reply mc;
	struct share	      *s;

	/* Never through a share: a view share is told it is read-only, a
	 * control one that closing is the owner's. */
	if (m->close.share[0] != '\0') {
		if ((s = request_share(c, m->close.share, m->close.owner,
			 m->close.sid, now)) == NULL)
			return;
		if (s->role != PROTO_ROLE_CONTROL)
			conn_error(c, PROTO_ERR_READ_ONLY, "read-only viewer");
		else
			conn_error(c, PROTO_ERR_NOT_SHARED,
			    "forbidden: not through a share");
		return;
	}
	if (!request_sid(c, m->close.sid))
		return;
	mc.closed = (uint8_t)term_close(m->close.owner, m->close.sid,
	    m->close.actor, now);
	conn_reply(c, MSG_CLOSE_REPLY, &mc);
}

static void
request_attach(struct conn *c, union request_msg *m, int64_t now)
{
	struct msg_attach *a = &m->attach;
	struct conn_who	   who;
	struct share	  *s;
	enum term_err	   e;

	if (a->mode != PROTO_ATTACH_RAW && a->mode != PROTO_ATTACH_SCREEN) {
		conn_error(c, PROTO_ERR_BAD_REQUEST, "unknown attach mode");
		return;
	}
	if (a->role != 0 && share_role_name(a->role) == NULL) {
		conn_error(c, PROTO_ERR_BAD_REQUEST, "unknown role");
		return;
	}
	/* The viewer is the requester; through a share, on the share's
	 * terminal with at most its role. */
	who.name = a->owner;
	who.role = a->role == PROTO_ROLE_VIEW ? PROTO_ROLE_VIEW :
						PROTO_ROLE_CONTROL;
	who.share_id = 0;
	who.watchers = a->watchers != 0;
	if (a->share[0] != '\0') {
		if ((s = request_share(c, a->share, a->owner, a->sid, now)) ==
		    NULL)
			return;
		if (s->role == PROTO_ROLE_VIEW)
			who.role = PROTO_ROLE_VIEW;
		who.share_id = s->id;
		who.name = xstrdup(a->owner);
		snprintf(a->owner, sizeof(a->owner), "%s", s->term->owner);
		snprintf(a->sid, sizeof(a->sid), "%s", s->term->sid);
		e = conn_attach(c, a, &who, now);
		free((char *)(uintptr_t)who.name);
	} else if (!request_sid(c, a->sid))
		return;
	else
		e = conn_attach(c, a, &who, now);
	if (e != TERM_OK)
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

/* Shares (DESIGN 2, 6): the owner's own requests. */

/* The owner's running terminal a share request names; NULL when
 * answered. */
static struct term *
request_own_term(struct conn *c, const char *owner, const char *sid)
{
	struct term *t;

	if (!request_sid(c, sid))
		return (NULL);
	if ((t = term_find(owner, sid)) == NULL || t->state != TERM_RUNNING) {
		conn_error(c, PROTO_ERR_NOT_RUNNING, "terminal not running");
		return (NULL);
	}
	return (t);
}

static void
request_share_error(struct conn *c, enum share_err e)
{
	char msg[128];

	switch (e) {
	case SHARE_EROLE:
		conn_error(c, PROTO_ERR_BAD_REQUEST,
		    "role must be view or control");
		break;
	case SHARE_ETTL:
		snprintf(msg, sizeof(msg),
		    "expires_in must be from %lld to %lld seconds",
		    (long long)(ptyd_conf.share_min_ttl / PTYD_SEC),
		    (long long)(ptyd_conf.share_max_ttl / PTYD_SEC));
		conn_error(c, PROTO_ERR_BAD_REQUEST, msg);
		break;
	case SHARE_EANONYMOUS:
		conn_error(c, PROTO_ERR_ANONYMOUS,
		    "anonymous share links are off");
		break;
	case SHARE_ELIMIT:
		conn_error(c, PROTO_ERR_SHARE_LIMIT,
		    "too many shares for this terminal");
		break;
	default:
		conn_error(c, PROTO_ERR_INTERNAL, "internal error");
		break;
	}
}

static void
request_share_new(struct conn *c, union request_msg *m, int64_t now)
{
	struct msg_share      *ms = &m->share;
	struct msg_share_reply r;
	struct share	      *s;
	struct term	      *t;
	enum share_err	       e;

	if ((t = request_own_term(c, ms->owner, ms->sid)) == NULL)
		return;
	memset(&r, 0, sizeof(r));
	e = share_create(t, ms->role, (int64_t)ms->expires_in * PTYD_SEC,
	    ms->has_user ? ms->user : NULL, ms->actor, now, &s, r.token);
	if (e != SHARE_OK) {
		request_share_error(c, e);
		return;
	}
	r.share_id = s->id;
	r.role = s->role;
	r.has_user = s->user != NULL;
	snprintf(r.user, sizeof(r.user), "%s", s->user != NULL ? s->user : "");
	r.created_at_us = ev_wall_us(s->created_at);
	r.expires_at_us = ev_wall_us(s->expires_at);
	conn_reply(c, MSG_SHARE_REPLY, &r);
	explicit_bzero(r.token, sizeof(r.token));
}

static void
request_shares(struct conn *c, union request_msg *m, int64_t now)
{
	struct msg_share_item it;
	struct msg_list_end   me;
	struct share	     *s;
	struct term	     *t;

	(void)now;
	if (!request_sid(c, m->shares.sid))
		return;
	me.count = 0;
	t = term_find(m->shares.owner, m->shares.sid);
	if (t != NULL)
		TAILQ_FOREACH (s, &t->shares, tentry) {
			memset(&it, 0, sizeof(it));
			it.share_id = s->id;
			it.role = s->role;
			it.has_user = s->user != NULL;
			snprintf(it.user, sizeof(it.user), "%s",
			    s->user != NULL ? s->user : "");
			it.created_at_us = ev_wall_us(s->created_at);
			it.expires_at_us = ev_wall_us(s->expires_at);
			it.viewers = share_viewers(s);
			conn_reply(c, MSG_SHARE_ITEM, &it);
			me.count++;
		}
	conn_reply(c, MSG_LIST_END, &me);
}

static void
request_unshare(struct conn *c, union request_msg *m, int64_t now)
{
	struct msg_unshare_reply r;
	struct term		*t;

	if (!request_sid(c, m->unshare.sid))
		return;
	t = term_find(m->unshare.owner, m->unshare.sid);
	r.revoked = t != NULL &&
	    share_revoke(t, m->unshare.share_id, m->unshare.actor, now);
	conn_reply(c, MSG_UNSHARE_REPLY, &r);
}

static void
request_shared(struct conn *c, union request_msg *m, int64_t now)
{
	struct msg_shared_reply r;
	struct share	       *s;

	if ((s = request_share(c, m->shared.share, m->shared.owner, "", now)) ==
	    NULL)
		return;
	memset(&r, 0, sizeof(r));
	snprintf(r.sid, sizeof(r.sid), "%s", s->term->sid);
	snprintf(r.owner, sizeof(r.owner), "%s", s->term->owner);
	r.role = s->role;
	r.expires_at_us = ev_wall_us(s->expires_at);
	r.rows = s->term->rows;
	r.cols = s->term->cols;
	r.running = s->term->state == TERM_RUNNING;
	conn_reply(c, MSG_SHARED_REPLY, &r);
}

static void
request_watchers(struct conn *c, union request_msg *m, int64_t now)
{
	struct msg_watchers_reply r;
	struct share		 *s;
	struct term		 *t;
	uint8_t			 *buf;

	if (m->watchers.share[0] != '\0') {
		if ((s = request_share(c, m->watchers.share, m->watchers.owner,
			 m->watchers.sid, now)) == NULL)
			return;
		t = s->term;
	} else {
		if (!request_sid(c, m->watchers.sid))
			return;
		if ((t = term_find(m->watchers.owner, m->watchers.sid)) ==
		    NULL) {
			conn_error(c, PROTO_ERR_NOT_RUNNING,
			    "terminal not running");
			return;
		}
	}
	buf = xmalloc(PROTO_WATCHERS_BYTES);
	watch_fill(t, &r, buf);
	conn_reply(c, MSG_WATCHERS_REPLY, &r);
	free(buf);
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
	{ MSG_SHARE, request_share_new },
	{ MSG_SHARES, request_shares },
	{ MSG_UNSHARE, request_unshare },
	{ MSG_SHARED, request_shared },
	{ MSG_WATCHERS, request_watchers },
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
