/*
 * sse.h -- the text of Server-Sent Events for the output stream (DESIGN
 * section 3): "id: N\nevent: NAME\ndata: JSON\n\n", JSON with ": " after
 * keys.
 *
 * Owns: the byte layout of every event and of the heartbeat comment, and
 * the parsing of resume positions (Last-Event-ID, last_event_id).  Does not
 * own: when events are sent (stream.c) or UTF-8 repair (utf8.c).
 */
#ifndef FRONT_SSE_H
#define FRONT_SSE_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "contract.h"

#define SSE_HEARTBEAT ": heartbeat\n\n"
/* heartbeat=event: a visible one, so a page can time out on silence (and
 * knows, seeing one, that nothing was queued: a replay is over).  It
 * carries no id: it stands for no position, and the next resume point
 * stays the last output's. */
#define SSE_HEARTBEAT_EVENT "event: heartbeat\ndata: {}\n\n"

/* output {"text": "..."}: text is well-formed UTF-8. */
int sse_output_text(struct buf *, uint64_t id, const char *text, size_t len);
/*
 * The same event in parts, for text escaped from more than one place:
 * sse_output_begin, json_escape of each part, sse_output_end.  The end
 * returns -1 if any part failed (the buffer remembers).
 */
int sse_output_begin(struct buf *, uint64_t id);
int sse_output_end(struct buf *);
/* output {"b64": "..."}: raw bytes, base64 (RFC 4648, padded). */
int sse_output_b64(struct buf *, uint64_t id, const uint8_t *data, size_t len);
/*
 * screen {"text": "...", "rows": R, "cols": C} (attach=screen), from
 * MSG_SCREEN pieces: the first piece opens the event (its id the position
 * the screen stands for), the last closes it.  The text is always UTF-8
 * text, also with encoding=base64: it is made by ptyd, not raw output.
 * scratch: room for repairing a piece that is not UTF-8.
 */
struct msg_screen;
int sse_screen(struct buf *, struct buf *scratch, int first,
    const struct msg_screen *);
/* gap {"lost": N} */
int sse_gap(struct buf *, uint64_t id, uint64_t lost);
/* attach=screen got no screen but the raw replay from id on: reason
 * PROTO_REPLAY_SIZE ("size") or PROTO_REPLAY_COST ("cost"). */
int sse_replay(struct buf *, uint64_t id, int reason);
/* terminal_closed {"exit_code": N|null, "reason": "..."} */
int sse_closed(struct buf *, uint64_t id, int has_code, int32_t code,
    const char *reason);
/* terminal_error {"error": "..."}, the message the answer a's
 * (lib/contract.c) */
int sse_error(struct buf *, uint64_t id, enum contract_answer a);

/* watchers {"watchers": [{"actor", "role", "share", "since"}]}, no id:
 * it stands for no position (DESIGN 3).  m is MSG_WATCHERS_EV's; -1 if
 * its entries are malformed. */
struct msg_watchers_reply;
int sse_watchers(struct buf *, const struct msg_watchers_reply *m);
/* The watchers list alone, as GET watchers answers it (the event's data). */
int sse_watchers_json(struct buf *, const struct msg_watchers_reply *m);
/* share_ended {"reason": "revoked"|"expired"}, no id: the stream's last
 * event when the share it was opened through ends. */
int sse_share_ended(struct buf *, const char *reason);

/* resize {"rows": R, "cols": C}, no id: the terminal's size from here
 * on in the stream (DESIGN 3). */
int sse_resize(struct buf *, unsigned int rows, unsigned int cols);

/* Standard base64 of data appended to out. */
int sse_base64(struct buf *out, const uint8_t *data, size_t len);

/*
 * A resume position: decimal digits only, no sign, no spaces, fitting in 64
 * bits.  Returns 0 with *pos, or -1 (counts as none).
 */
int sse_parse_pos(const char *s, uint64_t *pos);

#endif /* FRONT_SSE_H */
