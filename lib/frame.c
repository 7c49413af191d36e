/*
 * frame.c -- encode, decode and validate ptyd protocol frames.
 *
 * Owns: the byte layout of proto.h, written once as a field table per
 * message.  Does not own: I/O (client.c, ptyd/conn.c) or request policy.
 * Wire fields are read and written byte by byte in network order, never by
 * casting the buffer, so alignment and padding never reach the wire.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"

enum field_type {
	F_U8,
	F_U16,
	F_U32,
	F_U64,
	F_I32,
	F_I64,
	F_TEXT,	 /* char[max + 1] inline, NUL-terminated, no NUL inside */
	F_BYTES, /* const uint8_t * at off, size_t at lenoff; u32-prefixed */
	F_REST,	 /* like F_BYTES, but the rest of the payload, no prefix */
};

struct field {
	enum field_type type;
	size_t		off;
	size_t		max;	/* F_TEXT, F_BYTES, F_REST */
	size_t		lenoff; /* F_BYTES, F_REST */
};

struct msg_desc {
	uint16_t	    type;
	const char	   *name;
	const struct field *fields;
	size_t		    nfields;
};

#define TEXT(s, m, lim) \
	{ \
		F_TEXT, offsetof(struct s, m), (lim), 0 \
	}
#define NUM(t, s, m) \
	{ \
		t, offsetof(struct s, m), 0, 0 \
	}
#define BYTES(t, s, m, l, lim) \
	{ \
		t, offsetof(struct s, m), (lim), offsetof(struct s, l) \
	}

static const struct field start_fields[] = {
	TEXT(msg_start, owner, PROTO_OWNER_MAX),
	TEXT(msg_start, sid, PROTO_SID_MAX),
	TEXT(msg_start, workspace, PROTO_PATH_MAX),
	NUM(F_U16, msg_start, rows),
	NUM(F_U16, msg_start, cols),
	NUM(F_U8, msg_start, restart),
	TEXT(msg_start, actor, PROTO_ACTOR_MAX),
	NUM(F_U8, msg_start, record),
};
static const struct field input_fields[] = {
	TEXT(msg_input, owner, PROTO_OWNER_MAX),
	TEXT(msg_input, sid, PROTO_SID_MAX),
	TEXT(msg_input, input_id, PROTO_INPUT_ID_MAX),
	BYTES(F_BYTES, msg_input, data, len, PROTO_INPUT_MAX),
	TEXT(msg_input, actor, PROTO_ACTOR_MAX),
	TEXT(msg_input, share, PROTO_TOKEN_MAX),
};
static const struct field input_done_fields[] = {
	NUM(F_U8, msg_input_done, duplicate),
};
static const struct field resize_fields[] = {
	TEXT(msg_resize, owner, PROTO_OWNER_MAX),
	TEXT(msg_resize, sid, PROTO_SID_MAX),
	NUM(F_U16, msg_resize, rows),
	NUM(F_U16, msg_resize, cols),
	TEXT(msg_resize, share, PROTO_TOKEN_MAX),
};
static const struct field close_fields[] = {
	TEXT(msg_close, owner, PROTO_OWNER_MAX),
	TEXT(msg_close, sid, PROTO_SID_MAX),
	TEXT(msg_close, actor, PROTO_ACTOR_MAX),
	TEXT(msg_close, share, PROTO_TOKEN_MAX),
};
static const struct field attach_fields[] = {
	TEXT(msg_attach, owner, PROTO_OWNER_MAX),
	TEXT(msg_attach, sid, PROTO_SID_MAX),
	NUM(F_U8, msg_attach, has_pos),
	NUM(F_U64, msg_attach, pos),
	TEXT(msg_attach, actor, PROTO_ACTOR_MAX),
	NUM(F_U8, msg_attach, mode),
	TEXT(msg_attach, share, PROTO_TOKEN_MAX),
	NUM(F_U8, msg_attach, role),
	NUM(F_U8, msg_attach, watchers),
	NUM(F_U8, msg_attach, sizes),
};
static const struct field list_fields[] = {
	NUM(F_U8, msg_list, all_owners),
	TEXT(msg_list, owner, PROTO_OWNER_MAX),
};
static const struct field share_fields[] = {
	TEXT(msg_share, owner, PROTO_OWNER_MAX),
	TEXT(msg_share, sid, PROTO_SID_MAX),
	NUM(F_U8, msg_share, role),
	NUM(F_U32, msg_share, expires_in),
	NUM(F_U8, msg_share, has_user),
	TEXT(msg_share, user, PROTO_OWNER_MAX),
	TEXT(msg_share, actor, PROTO_ACTOR_MAX),
};
static const struct field shares_fields[] = {
	TEXT(msg_shares, owner, PROTO_OWNER_MAX),
	TEXT(msg_shares, sid, PROTO_SID_MAX),
};
static const struct field unshare_fields[] = {
	TEXT(msg_unshare, owner, PROTO_OWNER_MAX),
	TEXT(msg_unshare, sid, PROTO_SID_MAX),
	NUM(F_U32, msg_unshare, share_id),
	TEXT(msg_unshare, actor, PROTO_ACTOR_MAX),
};
static const struct field shared_fields[] = {
	TEXT(msg_shared, owner, PROTO_OWNER_MAX),
	TEXT(msg_shared, share, PROTO_TOKEN_MAX),
	TEXT(msg_shared, actor, PROTO_ACTOR_MAX),
};
static const struct field watchers_fields[] = {
	TEXT(msg_watchers, owner, PROTO_OWNER_MAX),
	TEXT(msg_watchers, sid, PROTO_SID_MAX),
	TEXT(msg_watchers, share, PROTO_TOKEN_MAX),
};
static const struct field share_reply_fields[] = {
	NUM(F_U32, msg_share_reply, share_id),
	TEXT(msg_share_reply, token, PROTO_TOKEN_MAX),
	NUM(F_U8, msg_share_reply, role),
	NUM(F_U8, msg_share_reply, has_user),
	TEXT(msg_share_reply, user, PROTO_OWNER_MAX),
	NUM(F_I64, msg_share_reply, created_at_us),
	NUM(F_I64, msg_share_reply, expires_at_us),
};
static const struct field share_item_fields[] = {
	NUM(F_U32, msg_share_item, share_id),
	NUM(F_U8, msg_share_item, role),
	NUM(F_U8, msg_share_item, has_user),
	TEXT(msg_share_item, user, PROTO_OWNER_MAX),
	NUM(F_I64, msg_share_item, created_at_us),
	NUM(F_I64, msg_share_item, expires_at_us),
	NUM(F_U32, msg_share_item, viewers),
};
static const struct field unshare_reply_fields[] = {
	NUM(F_U8, msg_unshare_reply, revoked),
};
static const struct field shared_reply_fields[] = {
	TEXT(msg_shared_reply, sid, PROTO_SID_MAX),
	TEXT(msg_shared_reply, owner, PROTO_OWNER_MAX),
	NUM(F_U8, msg_shared_reply, role),
	NUM(F_I64, msg_shared_reply, expires_at_us),
	NUM(F_U16, msg_shared_reply, rows),
	NUM(F_U16, msg_shared_reply, cols),
	NUM(F_U8, msg_shared_reply, running),
};
static const struct field watchers_reply_fields[] = {
	NUM(F_U32, msg_watchers_reply, total),
	NUM(F_U32, msg_watchers_reply, count),
	BYTES(F_BYTES, msg_watchers_reply, data, len, PROTO_WATCHERS_BYTES),
};
static const struct field share_end_fields[] = {
	TEXT(msg_share_end, reason, PROTO_REASON_MAX),
};
static const struct field resize_ev_fields[] = {
	NUM(F_U16, msg_resize_ev, rows),
	NUM(F_U16, msg_resize_ev, cols),
};
static const struct field error_fields[] = {
	NUM(F_U16, msg_error, code),
	TEXT(msg_error, message, PROTO_ERRMSG_MAX),
};
static const struct field started_fields[] = {
	NUM(F_I32, msg_started, pid),
	TEXT(msg_started, workspace, PROTO_PATH_MAX),
	NUM(F_U8, msg_started, reused),
	NUM(F_U8, msg_started, recording),
};
/* Recordings (DESIGN 4). */
static const struct field recordings_fields[] = {
	NUM(F_U8, msg_recordings, all_owners),
	TEXT(msg_recordings, owner, PROTO_OWNER_MAX),
	TEXT(msg_recordings, sid, PROTO_SID_MAX),
};
static const struct field recording_fields[] = {
	NUM(F_U8, msg_recording, all_owners),
	TEXT(msg_recording, owner, PROTO_OWNER_MAX),
	NUM(F_I64, msg_recording, id),
};
static const struct field rec_item_fields[] = {
	NUM(F_I64, msg_rec_item, id),
	NUM(F_I64, msg_rec_item, terminal_id),
	TEXT(msg_rec_item, sid, PROTO_SID_MAX),
	TEXT(msg_rec_item, owner, PROTO_OWNER_MAX),
	NUM(F_U32, msg_rec_item, part),
	NUM(F_I64, msg_rec_item, started_at_us),
	NUM(F_I64, msg_rec_item, ended_at_us),
	NUM(F_U64, msg_rec_item, bytes),
	NUM(F_U8, msg_rec_item, state),
	TEXT(msg_rec_item, cut_reason, PROTO_REASON_MAX),
	TEXT(msg_rec_item, sha256, PROTO_SHA256_HEX),
	NUM(F_U16, msg_rec_item, cols),
	NUM(F_U16, msg_rec_item, rows),
};
static const struct field rec_end_fields[] = {
	NUM(F_U32, msg_rec_end, count),
};
static const struct field rec_file_fields[] = {
	NUM(F_U64, msg_rec_file, size),
};
static const struct field rec_pruned_fields[] = {
	NUM(F_U32, msg_rec_pruned, removed),
	NUM(F_U64, msg_rec_pruned, bytes),
};
static const struct field close_reply_fields[] = {
	NUM(F_U8, msg_close_reply, closed),
};
static const struct field list_item_fields[] = {
	TEXT(msg_list_item, sid, PROTO_SID_MAX),
	TEXT(msg_list_item, owner, PROTO_OWNER_MAX),
	NUM(F_I32, msg_list_item, pid),
	TEXT(msg_list_item, workspace, PROTO_PATH_MAX),
	NUM(F_U16, msg_list_item, rows),
	NUM(F_U16, msg_list_item, cols),
	NUM(F_U8, msg_list_item, running),
	NUM(F_U8, msg_list_item, has_exit_code),
	NUM(F_I32, msg_list_item, exit_code),
	NUM(F_U32, msg_list_item, subscribers),
	NUM(F_I64, msg_list_item, unwatched_since_us),
	NUM(F_I64, msg_list_item, last_activity_us),
	NUM(F_I64, msg_list_item, started_at_us),
};
static const struct field list_end_fields[] = {
	NUM(F_U32, msg_list_end, count),
};
static const struct field stats_reply_fields[] = {
	NUM(F_I32, msg_stats_reply, pid),
	NUM(F_I64, msg_stats_reply, uptime_us),
	NUM(F_U32, msg_stats_reply, terminals),
	NUM(F_U32, msg_stats_reply, exited),
	NUM(F_U32, msg_stats_reply, viewers),
	NUM(F_U64, msg_stats_reply, db_errors),
	NUM(F_U8, msg_stats_reply, db_failing),
	NUM(F_I64, msg_stats_reply, db_lag_us),
	NUM(F_U32, msg_stats_reply, running),
	NUM(F_U32, msg_stats_reply, ending),
	NUM(F_U32, msg_stats_reply, draining),
	NUM(F_U64, msg_stats_reply, bytes_in),
	NUM(F_U64, msg_stats_reply, bytes_out),
	NUM(F_U64, msg_stats_reply, starts),
	NUM(F_U64, msg_stats_reply, closes),
	NUM(F_U64, msg_stats_reply, reaps),
	NUM(F_U64, msg_stats_reply, evictions),
	NUM(F_U64, msg_stats_reply, exits),
	NUM(F_U64, msg_stats_reply, shutdowns),
	NUM(F_U64, msg_stats_reply, lost),
	NUM(F_U64, msg_stats_reply, inputs),
	NUM(F_U64, msg_stats_reply, reap_ticks),
	NUM(F_U64, msg_stats_reply, reap_last_us),
	NUM(F_U64, msg_stats_reply, reap_max_us),
	NUM(F_U64, msg_stats_reply, flushes),
	NUM(F_U64, msg_stats_reply, flush_last_us),
	NUM(F_U64, msg_stats_reply, flush_max_us),
	NUM(F_U64, msg_stats_reply, flush_last_rows),
	NUM(F_U64, msg_stats_reply, flush_max_rows),
	NUM(F_U32, msg_stats_reply, max_terminals),
	NUM(F_U32, msg_stats_reply, max_per_owner),
	NUM(F_I32, msg_stats_reply, keeper_pid),
	NUM(F_U32, msg_stats_reply, generation),
	NUM(F_U32, msg_stats_reply, upgrades),
	NUM(F_U8, msg_stats_reply, upgrade_failed),
	TEXT(msg_stats_reply, upgrade_reason, PROTO_ERRMSG_MAX),
	NUM(F_U32, msg_stats_reply, takeovers),
	NUM(F_U64, msg_stats_reply, audit_lines_sent),
	NUM(F_U64, msg_stats_reply, audit_lines_lost),
};
static const struct field attached_fields[] = {
	NUM(F_U64, msg_attached, base),
	NUM(F_U64, msg_attached, end),
};
static const struct field output_fields[] = {
	NUM(F_U64, msg_output, end),
	BYTES(F_REST, msg_output, data, len, PROTO_OUTPUT_CHUNK),
};
static const struct field screen_fields[] = {
	NUM(F_U64, msg_screen, pos),
	NUM(F_U16, msg_screen, rows),
	NUM(F_U16, msg_screen, cols),
	NUM(F_U8, msg_screen, last),
	BYTES(F_REST, msg_screen, data, len, PROTO_SCREEN_CHUNK),
};
static const struct field gap_fields[] = {
	NUM(F_U64, msg_gap, lost),
	NUM(F_U64, msg_gap, pos),
};
static const struct field replay_fields[] = {
	NUM(F_U64, msg_replay, pos),
	NUM(F_U8, msg_replay, reason),
};
static const struct field exit_fields[] = {
	NUM(F_U8, msg_exit, has_exit_code),
	NUM(F_I32, msg_exit, exit_code),
	TEXT(msg_exit, reason, PROTO_REASON_MAX),
	NUM(F_U64, msg_exit, pos),
};

#define DESC(t, f) \
	{ \
		t, #t, f, sizeof(f) / sizeof((f)[0]) \
	}
#define DESC0(t) \
	{ \
		t, #t, NULL, 0 \
	}

static const struct msg_desc msgs[] = {
	DESC(MSG_START, start_fields),
	DESC(MSG_INPUT, input_fields),
	DESC(MSG_RESIZE, resize_fields),
	DESC(MSG_CLOSE, close_fields),
	DESC(MSG_ATTACH, attach_fields),
	DESC(MSG_LIST, list_fields),
	DESC0(MSG_STATS),
	DESC0(MSG_OK),
	DESC(MSG_ERROR, error_fields),
	DESC(MSG_STARTED, started_fields),
	DESC(MSG_CLOSE_REPLY, close_reply_fields),
	DESC(MSG_LIST_ITEM, list_item_fields),
	DESC(MSG_LIST_END, list_end_fields),
	DESC(MSG_STATS_REPLY, stats_reply_fields),
	DESC(MSG_INPUT_DONE, input_done_fields),
	DESC(MSG_ATTACHED, attached_fields),
	DESC(MSG_OUTPUT, output_fields),
	DESC(MSG_GAP, gap_fields),
	DESC(MSG_EXIT, exit_fields),
	DESC(MSG_SCREEN, screen_fields),
	DESC(MSG_REPLAY, replay_fields),
	DESC(MSG_SHARE, share_fields),
	DESC(MSG_SHARES, shares_fields),
	DESC(MSG_UNSHARE, unshare_fields),
	DESC(MSG_SHARED, shared_fields),
	DESC(MSG_WATCHERS, watchers_fields),
	DESC(MSG_SHARE_REPLY, share_reply_fields),
	DESC(MSG_SHARE_ITEM, share_item_fields),
	DESC(MSG_UNSHARE_REPLY, unshare_reply_fields),
	DESC(MSG_SHARED_REPLY, shared_reply_fields),
	DESC(MSG_WATCHERS_REPLY, watchers_reply_fields),
	DESC(MSG_WATCHERS_EV, watchers_reply_fields),
	DESC(MSG_SHARE_END, share_end_fields),
	DESC(MSG_RESIZE_EV, resize_ev_fields),
	DESC(MSG_RECORDINGS, recordings_fields),
	DESC(MSG_RECORDING, recording_fields),
	DESC0(MSG_REC_PRUNE),
	DESC(MSG_REC_ITEM, rec_item_fields),
	DESC(MSG_REC_END, rec_end_fields),
	DESC(MSG_REC_FILE, rec_file_fields),
	DESC(MSG_REC_PRUNED, rec_pruned_fields),
};

static const struct msg_desc *
msg_desc_find(uint16_t type)
{
	size_t i;

	for (i = 0; i < sizeof(msgs) / sizeof(msgs[0]); i++)
		if (msgs[i].type == type)
			return (&msgs[i]);
	return (NULL);
}

const char *
msg_name(uint16_t type)
{
	const struct msg_desc *d = msg_desc_find(type);

	return (d != NULL ? d->name : "unknown");
}

static void
put_be(uint8_t *p, uint64_t v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

static uint64_t
get_be(const uint8_t *p, size_t n)
{
	uint64_t v = 0;
	size_t	 i;

	for (i = 0; i < n; i++)
		v = (v << 8) | p[i];
	return (v);
}

void
frame_hdr_encode(uint8_t *buf, uint16_t type, uint32_t len)
{
	put_be(buf, type, 2);
	buf[2] = PROTO_VERSION;
	buf[3] = 0;
	put_be(buf + 4, len, 4);
}

int
frame_hdr_decode(const uint8_t *buf, struct frame_hdr *h)
{
	h->type = (uint16_t)get_be(buf, 2);
	h->version = buf[2];
	h->flags = buf[3];
	h->len = (uint32_t)get_be(buf + 4, 4);
	if (h->version != PROTO_VERSION) {
		errno = EPROTO;
		return (-1);
	}
	if (h->len > PROTO_MAX_PAYLOAD) {
		errno = EMSGSIZE;
		return (-1);
	}
	return (0);
}

void
frame_output_prefix(uint8_t *buf, uint64_t end, size_t len)
{
	frame_hdr_encode(buf, MSG_OUTPUT, (uint32_t)(8 + len));
	put_be(buf + PROTO_HDR_LEN, end, 8);
}

void
frame_out_init(struct frame_out *fo)
{
	memset(fo, 0, sizeof(*fo));
}

void
frame_out_free(struct frame_out *fo)
{
	free(fo->buf);
	frame_out_init(fo);
}

/* Reserve n more bytes; on failure mark the frame failed and return NULL. */
static uint8_t *
frame_out_reserve(struct frame_out *fo, size_t n)
{
	uint8_t *nbuf;
	size_t	 ncap;

	if (fo->failed)
		return (NULL);
	if (n > PROTO_HDR_LEN + PROTO_MAX_PAYLOAD - fo->len) {
		fo->failed = EMSGSIZE;
		return (NULL);
	}
	if (fo->len + n > fo->cap) {
		ncap = fo->cap != 0 ? fo->cap : 256;
		while (ncap < fo->len + n)
			ncap *= 2;
		if (ncap > PROTO_HDR_LEN + PROTO_MAX_PAYLOAD)
			ncap = PROTO_HDR_LEN + PROTO_MAX_PAYLOAD;
		if ((nbuf = realloc(fo->buf, ncap)) == NULL) {
			fo->failed = ENOMEM;
			return (NULL);
		}
		fo->buf = nbuf;
		fo->cap = ncap;
	}
	fo->len += n;
	return (fo->buf + fo->len - n);
}

static void
put_num(struct frame_out *fo, uint64_t v, size_t n)
{
	uint8_t *p;

	if ((p = frame_out_reserve(fo, n)) != NULL)
		put_be(p, v, n);
}

static void
put_bytes(struct frame_out *fo, const void *data, size_t len, int prefix)
{
	uint8_t *p;

	if (prefix)
		put_num(fo, len, 4);
	if (len != 0 && (p = frame_out_reserve(fo, len)) != NULL)
		memcpy(p, data, len);
}

int
msg_encode(struct frame_out *fo, uint16_t type, const void *msg)
{
	const struct msg_desc *d;
	const struct field    *f;
	const uint8_t	      *m = msg;
	size_t		       i, len;

	if ((d = msg_desc_find(type)) == NULL) {
		errno = EINVAL;
		return (-1);
	}
	fo->len = 0;
	fo->failed = 0;
	(void)frame_out_reserve(fo, PROTO_HDR_LEN);
	for (i = 0; i < d->nfields; i++) {
		f = &d->fields[i];
		switch (f->type) {
		case F_U8:
			put_num(fo, *(const uint8_t *)(m + f->off), 1);
			break;
		case F_U16:
			put_num(fo, *(const uint16_t *)(m + f->off), 2);
			break;
		case F_U32:
			put_num(fo, *(const uint32_t *)(m + f->off), 4);
			break;
		case F_U64:
			put_num(fo, *(const uint64_t *)(m + f->off), 8);
			break;
		case F_I32:
			put_num(fo, (uint32_t) * (const int32_t *)(m + f->off),
			    4);
			break;
		case F_I64:
			put_num(fo, (uint64_t) * (const int64_t *)(m + f->off),
			    8);
			break;
		case F_TEXT:
			len = strnlen((const char *)(m + f->off), f->max + 1);
			if (len > f->max) {
				errno = EINVAL;
				return (-1);
			}
			put_bytes(fo, m + f->off, len, 1);
			break;
		case F_BYTES:
		case F_REST:
			len = *(const size_t *)(m + f->lenoff);
			if (len > f->max || (len == 0 && f->type == F_REST)) {
				errno = EINVAL;
				return (-1);
			}
			put_bytes(fo, *(const uint8_t *const *)(m + f->off),
			    len, f->type == F_BYTES);
			break;
		}
	}
	if (fo->failed) {
		errno = fo->failed;
		return (-1);
	}
	frame_hdr_encode(fo->buf, type, (uint32_t)(fo->len - PROTO_HDR_LEN));
	return (0);
}

/* Decode field f from *p (left bytes) into the message at m, moving *p
 * and *left past it.  -1 if it does not fit or breaks its rule. */
static int
field_decode(const struct field *f, uint8_t *m, const uint8_t **p,
    size_t *left)
{
	size_t	 n, len;
	uint64_t v;

	switch (f->type) {
	case F_U8:
	case F_U16:
	case F_U32:
	case F_U64:
	case F_I32:
	case F_I64:
		n = f->type == F_U8 ? 1 : f->type == F_U16 ? 2 :
		    (f->type == F_U32 || f->type == F_I32) ? 4 : 8;
		if (*left < n)
			return (-1);
		v = get_be(*p, n);
		if (f->type == F_U8)
			*(uint8_t *)(m + f->off) = (uint8_t)v;
		else if (f->type == F_U16)
			*(uint16_t *)(m + f->off) = (uint16_t)v;
		else if (f->type == F_U32)
			*(uint32_t *)(m + f->off) = (uint32_t)v;
		else if (f->type == F_I32)
			*(int32_t *)(m + f->off) = (int32_t)(uint32_t)v;
		else if (f->type == F_I64)
			*(int64_t *)(m + f->off) = (int64_t)v;
		else
			*(uint64_t *)(m + f->off) = v;
		break;
	case F_TEXT:
	case F_BYTES:
		if (*left < 4)
			return (-1);
		len = (size_t)get_be(*p, 4);
		*p += 4;
		*left -= 4;
		if (len > f->max || len > *left)
			return (-1);
		if (f->type == F_TEXT) {
			if (memchr(*p, '\0', len) != NULL)
				return (-1);
			memcpy(m + f->off, *p, len);
			((char *)(m + f->off))[len] = '\0';
		} else {
			*(const uint8_t **)(m + f->off) = *p;
			*(size_t *)(m + f->lenoff) = len;
		}
		n = len;
		break;
	case F_REST:
		if (*left == 0 || *left > f->max)
			return (-1);
		*(const uint8_t **)(m + f->off) = *p;
		*(size_t *)(m + f->lenoff) = *left;
		n = *left;
		break;
	default:
		return (-1);
	}
	*p += n;
	*left -= n;
	return (0);
}

int
msg_decode(uint16_t type, const uint8_t *p, size_t left, void *msg)
{
	const struct msg_desc *d;
	size_t		       i;

	if ((d = msg_desc_find(type)) == NULL) {
		errno = EINVAL;
		return (-1);
	}
	for (i = 0; i < d->nfields; i++)
		if (field_decode(&d->fields[i], msg, &p, &left) == -1)
			goto bad;
	if (left != 0)
		goto bad;
	return (0);
bad:
	errno = EBADMSG;
	return (-1);
}

size_t
watchers_put(uint8_t *buf, const struct watcher_entry *e)
{
	size_t n = e->actor_len > PROTO_OWNER_MAX ? PROTO_OWNER_MAX :
						    e->actor_len;

	buf[0] = e->role;
	put_be(buf + 1, e->share, 4);
	put_be(buf + 5, (uint64_t)e->since_us, 8);
	put_be(buf + 13, n, 2);
	memcpy(buf + PROTO_WATCHER_FIXED, e->actor, n);
	return (PROTO_WATCHER_FIXED + n);
}

int
watchers_next(const uint8_t *data, size_t len, size_t *off,
    struct watcher_entry *e)
{
	size_t n;

	if (*off == len)
		return (0);
	if (*off > len || len - *off < PROTO_WATCHER_FIXED)
		return (-1);
	data += *off;
	n = (size_t)get_be(data + 13, 2);
	if (n > PROTO_OWNER_MAX || len - *off - PROTO_WATCHER_FIXED < n ||
	    memchr(data + PROTO_WATCHER_FIXED, '\0', n) != NULL)
		return (-1);
	e->role = data[0];
	e->share = (uint32_t)get_be(data + 1, 4);
	e->since_us = (int64_t)get_be(data + 5, 8);
	e->actor = (const char *)data + PROTO_WATCHER_FIXED;
	e->actor_len = n;
	*off += PROTO_WATCHER_FIXED + n;
	return (1);
}
