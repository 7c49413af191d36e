/*
 * sse.c -- Server-Sent Events formatting (sse.h).
 *
 * Owns: event text.  Data lines never hold a raw newline: every JSON value
 * here is escaped (json_escape), so one "data:" line carries one event.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "frame.h"
#include "json.h"
#include "sse.h"
#include "utf8.h"

static int
sse_head(struct buf *b, uint64_t id, const char *name)
{
	buf_adds(b, "id: ");
	buf_addu64(b, id);
	buf_adds(b, "\nevent: ");
	buf_adds(b, name);
	return (buf_adds(b, "\ndata: "));
}

static int
sse_tail(struct buf *b)
{
	buf_adds(b, "\n\n");
	return (b->failed ? -1 : 0);
}

int
sse_output_begin(struct buf *b, uint64_t id)
{
	sse_head(b, id, "output");
	return (buf_adds(b, "{\"text\": \""));
}

int
sse_output_end(struct buf *b)
{
	buf_adds(b, "\"}");
	return (sse_tail(b));
}

int
sse_output_text(struct buf *b, uint64_t id, const char *text, size_t len)
{
	sse_output_begin(b, id);
	json_escape(b, text, len);
	return (sse_output_end(b));
}

int
sse_screen(struct buf *b, struct buf *scratch, int first,
    const struct msg_screen *m)
{
	struct utf8_state u8;
	size_t		  clean;

	if (first) {
		sse_head(b, m->pos, "screen");
		buf_adds(b, "{\"text\": \"");
	}
	/* ptyd sends whole characters; anything else is repaired here, as
	 * output is, piece by piece. */
	clean = utf8_valid_prefix(m->data, m->len);
	json_escape(b, (const char *)m->data, clean);
	if (clean < m->len) {
		utf8_init(&u8);
		buf_reset(scratch);
		if (utf8_sanitise(&u8, m->data + clean, m->len - clean,
			scratch) == -1 ||
		    utf8_flush(&u8, scratch) == -1)
			return (-1);
		json_escape(b, scratch->p, scratch->len);
	}
	if (!m->last)
		return (b->failed ? -1 : 0);
	buf_adds(b, "\", \"rows\": ");
	buf_addu64(b, m->rows);
	buf_adds(b, ", \"cols\": ");
	buf_addu64(b, m->cols);
	buf_adds(b, "}");
	return (sse_tail(b));
}

int
sse_base64(struct buf *out, const uint8_t *d, size_t len)
{
	static const char tab[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char	*q;
	size_t	 i;
	uint32_t v;

	/* Room for all of it once, then written in place. */
	if (buf_reserve(out, (len + 2) / 3 * 4) == -1)
		return (-1);
	if (len == 0)
		return (0);
	q = out->p + out->len;
	for (i = 0; i + 3 <= len; i += 3) {
		v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8 | d[i + 2];
		*q++ = tab[v >> 18];
		*q++ = tab[(v >> 12) & 63];
		*q++ = tab[(v >> 6) & 63];
		*q++ = tab[v & 63];
	}
	if (len - i == 1) {
		v = (uint32_t)d[i] << 16;
		*q++ = tab[v >> 18];
		*q++ = tab[(v >> 12) & 63];
		*q++ = '=';
		*q++ = '=';
	} else if (len - i == 2) {
		v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8;
		*q++ = tab[v >> 18];
		*q++ = tab[(v >> 12) & 63];
		*q++ = tab[(v >> 6) & 63];
		*q++ = '=';
	}
	out->len = (size_t)(q - out->p);
	return (0);
}

int
sse_output_b64(struct buf *b, uint64_t id, const uint8_t *data, size_t len)
{
	sse_head(b, id, "output");
	buf_adds(b, "{\"b64\": \"");
	sse_base64(b, data, len);
	buf_adds(b, "\"}");
	return (sse_tail(b));
}

int
sse_gap(struct buf *b, uint64_t id, uint64_t lost)
{
	sse_head(b, id, "gap");
	buf_adds(b, "{\"lost\": ");
	buf_addu64(b, lost);
	buf_adds(b, "}");
	return (sse_tail(b));
}

int
sse_replay(struct buf *b, uint64_t id, int reason)
{
	sse_head(b, id, "replay");
	buf_adds(b,
	    reason == PROTO_REPLAY_SIZE ? "{\"reason\": \"size\"}" :
					  "{\"reason\": \"cost\"}");
	return (sse_tail(b));
}

int
sse_closed(struct buf *b, uint64_t id, int has_code, int32_t code,
    const char *reason)
{
	sse_head(b, id, "terminal_closed");
	buf_adds(b, "{\"exit_code\": ");
	if (has_code)
		buf_addi64(b, code);
	else
		buf_adds(b, "null");
	buf_adds(b, ", \"reason\": \"");
	json_escape(b, reason, strlen(reason));
	buf_adds(b, "\"}");
	return (sse_tail(b));
}

int
sse_error(struct buf *b, uint64_t id, enum contract_answer a)
{
	const char *msg = contract_answer(a)->message;

	sse_head(b, id, "terminal_error");
	buf_adds(b, "{\"error\": \"");
	json_escape(b, msg, strlen(msg));
	buf_adds(b, "\"}");
	return (sse_tail(b));
}

int
sse_parse_pos(const char *s, uint64_t *pos)
{
	uint64_t v = 0;
	size_t	 i;

	if (s == NULL || s[0] == '\0')
		return (-1);
	for (i = 0; s[i] != '\0'; i++) {
		if (s[i] < '0' || s[i] > '9')
			return (-1);
		if (v > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10)
			return (-1);
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*pos = v;
	return (0);
}

/* Shares and watchers (issue 34). */

int
sse_watchers_json(struct buf *b, const struct msg_watchers_reply *m)
{
	struct watcher_entry e;
	char		     t[64];
	size_t		     off = 0;
	int		     r, n = 0;

	buf_adds(b, "{\"watchers\": [");
	while ((r = watchers_next(m->data, m->len, &off, &e)) == 1) {
		buf_adds(b, n++ > 0 ? ", {\"actor\": \"" : "{\"actor\": \"");
		json_escape(b, e.actor, e.actor_len);
		buf_adds(b,
		    e.role == PROTO_ROLE_VIEW ?
			"\", \"role\": \"view\", \"share\": " :
			"\", \"role\": \"control\", \"share\": ");
		if (e.share != 0)
			buf_addu64(b, e.share);
		else
			buf_adds(b, "null");
		/* Unix seconds, as every time of the API. */
		snprintf(t, sizeof(t), ", \"since\": %.6f}",
		    (double)e.since_us / 1e6);
		buf_adds(b, t);
	}
	buf_adds(b, "]}");
	return (r == 0 && !b->failed ? 0 : -1);
}

int
sse_watchers(struct buf *b, const struct msg_watchers_reply *m)
{
	buf_adds(b, "event: watchers\ndata: ");
	if (sse_watchers_json(b, m) == -1)
		return (-1);
	return (sse_tail(b));
}

int
sse_resize(struct buf *b, unsigned int rows, unsigned int cols)
{
	char t[64];

	snprintf(t, sizeof(t),
	    "event: resize\ndata: {\"rows\": %u, "
	    "\"cols\": %u}",
	    rows, cols);
	buf_adds(b, t);
	return (sse_tail(b));
}

int
sse_share_ended(struct buf *b, const char *reason)
{
	buf_adds(b, "event: share_ended\ndata: {\"reason\": \"");
	json_escape(b, reason, strlen(reason));
	buf_adds(b, "\"}");
	return (sse_tail(b));
}
