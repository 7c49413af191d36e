/*
 * frame.h -- encode, decode and validate ptyd protocol frames (proto.h).
 *
 * Owns: the byte layout of headers and of every message, and the checks a
 * frame must pass before anyone acts on it.  Does not own: any I/O, any
 * policy about what a valid request may ask for (session_id syntax, size
 * clamping: those belong to ptyd and ptyd.fcgi).
 *
 * Every message has a struct below and a field table in frame.c; msg_encode
 * and msg_decode walk the table, so the order of fields is written once.
 * Text fields are inline NUL-terminated arrays sized limit + 1; a text field
 * holding a NUL byte is malformed.  Byte fields (input data, output data)
 * point into the decoded payload and live as long as it does.
 */
#ifndef PTYD_FRAME_H
#define PTYD_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

struct frame_hdr {
	uint16_t type;
	uint8_t	 version;
	uint8_t	 flags;
	uint32_t len;
};

/*
 * Decode the PROTO_HDR_LEN bytes at buf.  Returns 0, or -1 with errno
 * EPROTO (version is not PROTO_VERSION) or EMSGSIZE (len over
 * PROTO_MAX_PAYLOAD).  The header is filled in either way, so the caller can
 * answer a version mismatch before dropping the connection.
 */
int  frame_hdr_decode(const uint8_t *buf, struct frame_hdr *);
void frame_hdr_encode(uint8_t *buf, uint16_t type, uint32_t len);

/* One outgoing frame, header included, in a buffer grown up to the limit. */
struct frame_out {
	uint8_t *buf;
	size_t	 len; /* bytes used, header included */
	size_t	 cap;
	int	 failed; /* ENOMEM or EMSGSIZE seen */
};

void frame_out_init(struct frame_out *);
void frame_out_free(struct frame_out *); /* keeps the struct usable */

/* msg is the struct for type.  Returns 0 with fo holding the whole frame,
 * or -1 with errno EMSGSIZE, ENOMEM, or EINVAL (unknown type, text field
 * over its limit). */
int msg_encode(struct frame_out *fo, uint16_t type, const void *msg);

/* Decode a payload of the given type into msg (the struct for type).
 * Returns 0, or -1 with errno EBADMSG (malformed: short, long, field over
 * its limit, NUL in text) or EINVAL (unknown type). */
int msg_decode(uint16_t type, const uint8_t *payload, size_t len, void *msg);

/*
 * MSG_OUTPUT without copying the data: write the header and the u64 end
 * (FRAME_OUTPUT_PREFIX bytes) to buf; the caller sends len data bytes after
 * them (1..PROTO_OUTPUT_CHUNK).
 */
#define FRAME_OUTPUT_PREFIX (PROTO_HDR_LEN + 8)
void frame_output_prefix(uint8_t *buf, uint64_t end, size_t len);

/* The name of a message type, for logs ("MSG_START"), or "unknown". */
const char *msg_name(uint16_t type);

struct msg_start {
	char	 owner[PROTO_OWNER_MAX + 1];
	char	 sid[PROTO_SID_MAX + 1];
	char	 workspace[PROTO_PATH_MAX + 1];
	uint16_t rows;
	uint16_t cols;
	uint8_t	 restart;
	char	 actor[PROTO_ACTOR_MAX + 1];
	uint8_t	 record;
};

struct msg_input {
	char	       owner[PROTO_OWNER_MAX + 1];
	char	       sid[PROTO_SID_MAX + 1];
	char	       input_id[PROTO_INPUT_ID_MAX + 1];
	const uint8_t *data;
	size_t	       len;
	char	       actor[PROTO_ACTOR_MAX + 1];
	char	       share[PROTO_TOKEN_MAX + 1];
};

struct msg_input_done {
	uint8_t duplicate;
};

struct msg_resize {
	char	 owner[PROTO_OWNER_MAX + 1];
	char	 sid[PROTO_SID_MAX + 1];
	uint16_t rows;
	uint16_t cols;
	char	 share[PROTO_TOKEN_MAX + 1];
};

struct msg_close {
	char owner[PROTO_OWNER_MAX + 1];
	char sid[PROTO_SID_MAX + 1];
	char actor[PROTO_ACTOR_MAX + 1];
	char share[PROTO_TOKEN_MAX + 1];
};

struct msg_attach {
	char	 owner[PROTO_OWNER_MAX + 1];
	char	 sid[PROTO_SID_MAX + 1];
	uint8_t	 has_pos;
	uint64_t pos;
	char	 actor[PROTO_ACTOR_MAX + 1];
	uint8_t	 mode; /* PROTO_ATTACH_* */
	char	 share[PROTO_TOKEN_MAX + 1];
	uint8_t	 role;	   /* PROTO_ROLE_*, 0: what the request may */
	uint8_t	 watchers; /* 1: MSG_WATCHERS_EV wanted (ptyd.fcgi) */
	uint8_t	 sizes;	   /* 1: MSG_RESIZE_EV wanted (ptyd.fcgi) */
};

struct msg_list {
	uint8_t all_owners;
	char	owner[PROTO_OWNER_MAX + 1];
};

/* MSG_OK and MSG_STATS have no fields: pass NULL. */

struct msg_error {
	uint16_t code; /* enum proto_err */
	char	 message[PROTO_ERRMSG_MAX + 1];
};

struct msg_started {
	int32_t pid;
	char	workspace[PROTO_PATH_MAX + 1];
	uint8_t reused;
	uint8_t recording;
};

/* Recordings (DESIGN 4). */
struct msg_recordings {
	uint8_t all_owners;
	char	owner[PROTO_OWNER_MAX + 1];
	char	sid[PROTO_SID_MAX + 1];
};

struct msg_recording {
	uint8_t all_owners;
	char	owner[PROTO_OWNER_MAX + 1];
	int64_t id;
};

struct msg_rec_item {
	int64_t	 id;
	int64_t	 terminal_id;
	char	 sid[PROTO_SID_MAX + 1];
	char	 owner[PROTO_OWNER_MAX + 1];
	uint32_t part;
	int64_t	 started_at_us;
	int64_t	 ended_at_us;
	uint64_t bytes;
	uint8_t	 state;
	char	 cut_reason[PROTO_REASON_MAX + 1];
	char	 sha256[PROTO_SHA256_HEX + 1];
	uint16_t cols;
	uint16_t rows;
};

struct msg_rec_end {
	uint32_t count;
};

struct msg_rec_file {
	uint64_t size;
};

struct msg_rec_pruned {
	uint32_t removed;
	uint64_t bytes;
};

struct msg_close_reply {
	uint8_t closed;
};

struct msg_list_item {
	char	 sid[PROTO_SID_MAX + 1];
	char	 owner[PROTO_OWNER_MAX + 1];
	int32_t	 pid;
	char	 workspace[PROTO_PATH_MAX + 1];
	uint16_t rows;
	uint16_t cols;
	uint8_t	 running;
	uint8_t	 has_exit_code;
	int32_t	 exit_code;
	uint32_t subscribers;
	int64_t	 unwatched_since_us; /* -1: watched */
	int64_t	 last_activity_us;
	int64_t	 started_at_us;
};

struct msg_list_end {
	uint32_t count;
};

struct msg_stats_reply {
	int32_t	 pid;
	int64_t	 uptime_us;
	uint32_t terminals;
	uint32_t exited;
	uint32_t viewers;
	uint64_t db_errors;
	uint8_t	 db_failing;
	int64_t	 db_lag_us;
	uint32_t running;
	uint32_t ending;
	uint32_t draining;
	uint64_t bytes_in;
	uint64_t bytes_out;
	uint64_t starts;
	uint64_t closes;
	uint64_t reaps;
	uint64_t evictions;
	uint64_t exits;
	uint64_t shutdowns;
	uint64_t lost;
	uint64_t inputs;
	/* The reaper's ticks and the mirror's flushes: how many, the last
	 * one's and the longest one's duration, the rows the last and the
	 * longest flush wrote (issue 17: their cost with many terminals). */
	uint64_t reap_ticks;
	uint64_t reap_last_us;
	uint64_t reap_max_us;
	uint64_t flushes;
	uint64_t flush_last_us;
	uint64_t flush_max_us;
	uint64_t flush_last_rows;
	uint64_t flush_max_rows;
	/* The caps in force (GET limits). */
	uint32_t max_terminals;
	uint32_t max_per_owner;
	/* The keeper (DESIGN 10): its pid (0: none, --no-keeper), which
	 * ptyd this is (1: the first), upgrades finished and whether the
	 * last one failed (why), crash take-overs. */
	int32_t	 keeper_pid;
	uint32_t generation;
	uint32_t upgrades;
	uint8_t	 upgrade_failed;
	char	 upgrade_reason[PROTO_ERRMSG_MAX + 1];
	uint32_t takeovers;
	/* The audit's lines for the fleet (audit_log): sent, and lost to
	 * a full or absent reader. */
	uint64_t audit_lines_sent;
	uint64_t audit_lines_lost;
};

struct msg_attached {
	uint64_t base;
	uint64_t end; /* the ring's end at the attach: what was replay */
};

struct msg_output {
	uint64_t       end;
	const uint8_t *data;
	size_t	       len;
};

struct msg_screen {
	uint64_t       pos;
	uint16_t       rows;
	uint16_t       cols;
	uint8_t	       last;
	const uint8_t *data;
	size_t	       len;
};

struct msg_gap {
	uint64_t lost;
	uint64_t pos;
};

struct msg_replay {
	uint64_t pos;
	uint8_t	 reason;
};

struct msg_exit {
	uint8_t	 has_exit_code;
	int32_t	 exit_code;
	char	 reason[PROTO_REASON_MAX + 1];
	uint64_t pos;
};

/* Shares and watchers (proto.h, protocol 8). */

struct msg_share {
	char	 owner[PROTO_OWNER_MAX + 1];
	char	 sid[PROTO_SID_MAX + 1];
	uint8_t	 role; /* PROTO_ROLE_* */
	uint32_t expires_in;
	uint8_t	 has_user;
	char	 user[PROTO_OWNER_MAX + 1];
	char	 actor[PROTO_ACTOR_MAX + 1];
};

struct msg_shares {
	char owner[PROTO_OWNER_MAX + 1];
	char sid[PROTO_SID_MAX + 1];
};

struct msg_unshare {
	char	 owner[PROTO_OWNER_MAX + 1];
	char	 sid[PROTO_SID_MAX + 1];
	uint32_t share_id;
	char	 actor[PROTO_ACTOR_MAX + 1];
};

struct msg_shared {
	char owner[PROTO_OWNER_MAX + 1];
	char share[PROTO_TOKEN_MAX + 1];
	char actor[PROTO_ACTOR_MAX + 1];
};

struct msg_watchers {
	char owner[PROTO_OWNER_MAX + 1];
	char sid[PROTO_SID_MAX + 1];
	char share[PROTO_TOKEN_MAX + 1];
};

struct msg_share_reply {
	uint32_t share_id;
	char	 token[PROTO_TOKEN_MAX + 1];
	uint8_t	 role;
	uint8_t	 has_user;
	char	 user[PROTO_OWNER_MAX + 1];
	int64_t	 created_at_us;
	int64_t	 expires_at_us;
};

struct msg_share_item {
	uint32_t share_id;
	uint8_t	 role;
	uint8_t	 has_user;
	char	 user[PROTO_OWNER_MAX + 1];
	int64_t	 created_at_us;
	int64_t	 expires_at_us;
	uint32_t viewers;
};

struct msg_unshare_reply {
	uint8_t revoked;
};

struct msg_shared_reply {
	char	 sid[PROTO_SID_MAX + 1];
	char	 owner[PROTO_OWNER_MAX + 1];
	uint8_t	 role;
	int64_t	 expires_at_us;
	uint16_t rows;
	uint16_t cols;
	uint8_t	 running;
};

/* MSG_WATCHERS_REPLY and MSG_WATCHERS_EV. */
struct msg_watchers_reply {
	uint32_t       total; /* watchers in all */
	uint32_t       count; /* entries in data */
	const uint8_t *data;
	size_t	       len;
};

struct msg_share_end {
	char reason[PROTO_REASON_MAX + 1];
};

struct msg_resize_ev {
	uint16_t rows;
	uint16_t cols;
};

/* One watcher of a WATCHERS reply or event. */
struct watcher_entry {
	uint8_t	    role;     /* PROTO_ROLE_* */
	uint32_t    share;    /* 0: none (the owner's own stream) */
	int64_t	    since_us; /* wall clock */
	const char *actor;    /* not NUL-terminated: actor_len bytes */
	size_t	    actor_len;
};

/* Append one entry to buf (room: PROTO_WATCHER_FIXED + the actor's
 * length, which is at most PROTO_OWNER_MAX).  The bytes written. */
size_t watchers_put(uint8_t *buf, const struct watcher_entry *);
/* Read the entry at *off of data[0, len): 1 with e filled and *off moved
 * past it, 0 at the end, -1 if malformed. */
int watchers_next(const uint8_t *data, size_t len, size_t *off,
    struct watcher_entry *e);

#endif /* PTYD_FRAME_H */
