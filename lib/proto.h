/*
 * proto.h -- the ptyd wire protocol: the contract between ptyd, ptyd.fcgi,
 * ptydctl and the tests.
 *
 * Owns: the protocol version, message numbers, limits, and the field layout
 * of every message.  Does not own: encoding (frame.c) or any I/O (client.c,
 * ptyd/conn.c).
 *
 * A frame is an 8-byte header followed by a payload, all integers in network
 * byte order (big-endian), decoded byte by byte, never cast to structs:
 *
 *	offset 0  u16  type      message number, see below
 *	offset 2  u8   version   PROTO_VERSION
 *	offset 3  u8   flags     reserved, 0
 *	offset 4  u32  length    payload length, at most PROTO_MAX_PAYLOAD
 *
 * The payload is the message's fields in the order listed beside each
 * message number.  Field types: u8/u16/u32/u64, i32/i64 (two's complement),
 * str (u32 length, then that many bytes, no terminating NUL; the decoder
 * checks the length against the field's limit and the bytes left before it
 * copies anything).  A payload with bytes left over after its last field is
 * malformed.
 *
 * Exchange: a client connects, sends exactly one request frame, and reads
 * reply frames.  For every request but MSG_ATTACH and MSG_LIST the reply is
 * one frame and ptyd then closes the connection.  MSG_LIST answers with
 * MSG_LIST_ITEM frames and one MSG_LIST_END.  MSG_ATTACH answers MSG_ERROR,
 * or MSG_ATTACHED followed by stream frames (MSG_OUTPUT, MSG_GAP, MSG_EXIT,
 * MSG_SCREEN) for as long as the client keeps the connection; MSG_EXIT is
 * the last.
 * Closing the connection detaches the viewer.
 *
 * A frame whose version is not PROTO_VERSION is answered with MSG_ERROR
 * PROTO_ERR_VERSION (encoded at the sender's version, which is this one)
 * and the connection is closed.  Message numbers live in ranges so that a
 * peer can tell a request from a reply from a stream frame at a glance.
 */
#ifndef PTYD_PROTO_H
#define PTYD_PROTO_H

#include <stdint.h>

/* 2: MSG_INPUT carries an input_id.  3: MSG_INPUT carries an actor,
 * MSG_STATS_REPLY the counters of /api/terminal/metrics.  4: MSG_ATTACHED
 * says where the replay ends.  5: MSG_ATTACH carries a mode, MSG_SCREEN.
 * 6: MSG_STATS_REPLY carries the caps in force; MSG_REPLAY.  7:
 * MSG_STATS_REPLY carries the keeper's state (DESIGN 10).  8: shares and
 * watchers (issue 34): INPUT, RESIZE, CLOSE and ATTACH carry a share
 * token, ATTACH a role; SHARE, SHARES, UNSHARE, SHARED, WATCHERS and their
 * replies; the stream's WATCHERS_EV and SHARE_END.  9: recordings
 * (MSG_START's record, MSG_STARTED's recording, MSG_RECORDINGS,
 * MSG_RECORDING with its descriptor, MSG_REC_PRUNE).  10: MSG_ATTACH's
 * sizes, the stream's RESIZE_EV. */
#define PROTO_VERSION	  10
#define PROTO_HDR_LEN	  8
#define PROTO_MAX_PAYLOAD (256 * 1024)

/* Field limits (bytes).  A field over its limit makes the frame malformed.
 * session_id, input_id and input are the HTTP API's (CONTRACT_* in
 * contract.h): contract.c asserts they agree. */
#define PROTO_SID_MAX	   128	/* session_id: 1..128 of [A-Za-z0-9._:-] */
#define PROTO_OWNER_MAX	   256	/* REMOTE_USER; empty = local */
#define PROTO_PATH_MAX	   4096 /* workspace */
#define PROTO_ACTOR_MAX	   320	/* "user@address" for the audit log */
#define PROTO_REASON_MAX   32
#define PROTO_ERRMSG_MAX   256
#define PROTO_INPUT_MAX	   (8192 * 4)  /* 8192 code points of UTF-8 */
#define PROTO_INPUT_ID_MAX 64	       /* input_id: 1..64 of [A-Za-z0-9._:-] */
#define PROTO_SHA256_HEX   64	       /* a recording's SHA-256, hex */
#define PROTO_OUTPUT_CHUNK (32 * 1024) /* max data bytes in one MSG_OUTPUT */
/* max text bytes in one MSG_SCREEN: its frame is no larger than a full
 * MSG_OUTPUT's, so a reader sized for those takes it */
#define PROTO_SCREEN_CHUNK (PROTO_OUTPUT_CHUNK - 8)
/* A share's token as the request carries it (Ptyd-Share): 43 characters
 * of base64url; anything up to this limit is carried and refused as "share
 * not valid" by ptyd, so the answer does not depend on its shape. */
#define PROTO_TOKEN_MAX 64
/* The watchers a WATCHERS reply or event lists at most (the rest are
 * counted in its total), and the bytes of its entries: u8 role, u32
 * share (0: none), i64 since (wall us), u16 actor's length, the actor
 * (a user name, at most PROTO_OWNER_MAX bytes). */
#define PROTO_WATCHERS_MAX  64
#define PROTO_WATCHER_FIXED 15
#define PROTO_WATCHERS_BYTES \
	(PROTO_WATCHERS_MAX * (PROTO_WATCHER_FIXED + PROTO_OWNER_MAX))

/* Requests, client -> ptyd: 0x0100 - 0x01ff. */
enum {
	/* str owner, str session_id, str workspace ("" = default),
	 * u16 rows, u16 cols (0 = default), u8 restart, str actor,
	 * u8 record (asked; honoured under record = owner) */
	MSG_START = 0x0101,
	/* str owner, str session_id, str input_id ("" = none; a repeated
	 * one is answered without writing), str data (raw bytes, may be
	 * empty), str actor (the audit log's input event), str share;
	 * answered MSG_INPUT_DONE */
	MSG_INPUT = 0x0102,
	/* str owner, str session_id, u16 rows, u16 cols (0 = unchanged),
	 * str share */
	MSG_RESIZE = 0x0103,
	/* str owner, str session_id, str actor, str share */
	MSG_CLOSE = 0x0104,
	/* str owner, str session_id, u8 has_pos, u64 pos, str actor,
	 * u8 mode (PROTO_ATTACH_*), str share, u8 role (PROTO_ROLE_*; 0:
	 * what the request may), u8 watchers (1: the owner's stream wants
	 * MSG_WATCHERS_EV; other clients never see one), u8 sizes (1:
	 * MSG_RESIZE_EV wanted) */
	MSG_ATTACH = 0x0105,
	/* u8 all_owners, str owner */
	MSG_LIST = 0x0106,
	/* (no fields) */
	MSG_STATS = 0x0107,
	/*
	 * Shares (DESIGN 2, 6).  "str share" in a request is the token of
	 * the Ptyd-Share header, "" for none; with one, owner is the
	 * requester (REMOTE_USER, "" if none) and the terminal is the
	 * share's, session_id "" or the share's.
	 */
	/* str owner, str session_id, u8 role (PROTO_ROLE_*), u32
	 * expires_in (seconds), u8 has_user, str user, str actor; answered
	 * MSG_SHARE_REPLY */
	MSG_SHARE = 0x0108,
	/* str owner, str session_id; answered MSG_SHARE_ITEMs and
	 * MSG_LIST_END */
	MSG_SHARES = 0x0109,
	/* str owner, str session_id, u32 share_id, str actor; answered
	 * MSG_UNSHARE_REPLY */
	MSG_UNSHARE = 0x010a,
	/* str owner, str share, str actor; answered MSG_SHARED_REPLY */
	MSG_SHARED = 0x010b,
	/* str owner, str session_id, str share; answered
	 * MSG_WATCHERS_REPLY */
	MSG_WATCHERS = 0x010c,
	/* Recordings (DESIGN 4), numbered apart from the other requests.
	 * u8 all_owners (a recordings_readers user, or ptydctl), str owner,
	 * str session_id ("" = every one): answered MSG_REC_ITEM frames,
	 * newest first, and one MSG_REC_END */
	MSG_RECORDINGS = 0x0120,
	/* u8 all_owners, str owner, u64 id: answered MSG_REC_FILE with the
	 * file's descriptor (SCM_RIGHTS on the frame's first byte), or
	 * MSG_ERROR PROTO_ERR_NOT_FOUND (unknown, another's, removed) */
	MSG_RECORDING = 0x0121,
	/* (no fields): retention now; answered MSG_REC_PRUNED */
	MSG_REC_PRUNE = 0x0122,
};

/* Replies, ptyd -> client: 0x0200 - 0x02ff. */
enum {
	/* (no fields): resize done */
	MSG_OK = 0x0201,
	/* u16 code (PROTO_ERR_*), str message (no paths, no internals) */
	MSG_ERROR = 0x0202,
	/* i32 pid, str workspace (resolved), u8 reused, u8 recording */
	MSG_STARTED = 0x0203,
	/* u8 closed */
	MSG_CLOSE_REPLY = 0x0204,
	/* str session_id, str owner, i32 pid, str workspace, u16 rows,
	 * u16 cols, u8 running, u8 has_exit_code, i32 exit_code,
	 * u32 subscribers, i64 unwatched_since_us (-1 = null),
	 * i64 last_activity_us, i64 started_at_us */
	MSG_LIST_ITEM = 0x0205,
	/* u32 count */
	MSG_LIST_END = 0x0206,
	/* i32 pid, i64 uptime_us, u32 terminals, u32 exited, u32 viewers,
	 * u64 db_errors, u8 db_failing, i64 db_lag_us (age of the oldest
	 * change not yet in the database; 0 = none), u32 running,
	 * u32 ending, u32 draining (terminals in memory by state; exited is
	 * above), then counters since start: u64 bytes_in, u64 bytes_out,
	 * u64 starts, u64 closes, u64 reaps, u64 evictions, u64 exits
	 * (shells that ended by themselves), u64 shutdowns, u64 lost (rows an
	 * earlier ptyd left running), u64 inputs (accepted input requests) */
	MSG_STATS_REPLY = 0x0207,
	/* u8 duplicate: the input_id had been accepted before, nothing
	 * was written this time */
	MSG_INPUT_DONE = 0x0208,
	/* u32 share_id, str token (once, never again), u8 role, u8
	 * has_user, str user, i64 created_at_us, i64 expires_at_us (wall) */
	MSG_SHARE_REPLY = 0x0209,
	/* u32 share_id, u8 role, u8 has_user, str user, i64 created_at_us,
	 * i64 expires_at_us, u32 viewers (streams open through it) */
	MSG_SHARE_ITEM = 0x020a,
	/* u8 revoked */
	MSG_UNSHARE_REPLY = 0x020b,
	/* str session_id, str owner, u8 role, i64 expires_at_us, u16 rows,
	 * u16 cols, u8 running */
	MSG_SHARED_REPLY = 0x020c,
	/* u32 total, u32 count, then str entries: count of them, one after
	 * the other (PROTO_WATCHERS_BYTES at most; lib/frame.h's
	 * watchers_next reads them) */
	MSG_WATCHERS_REPLY = 0x020d,
	/* i64 id, i64 terminal_id, str session_id, str owner, u32 part,
	 * i64 started_at_us, i64 ended_at_us (-1 = null), u64 bytes,
	 * u8 state (PROTO_REC_*), str cut_reason ("" = null), str sha256
	 * (hex, "" = null), u16 cols, u16 rows */
	MSG_REC_ITEM = 0x0220,
	/* u32 count */
	MSG_REC_END = 0x0221,
	/* u64 size (the bytes written when it was opened; read no more) */
	MSG_REC_FILE = 0x0222,
	/* u32 removed, u64 bytes (freed) */
	MSG_REC_PRUNED = 0x0223,
};

/* A recording's state (MSG_REC_ITEM). */
enum {
	PROTO_REC_RECORDING = 0,
	PROTO_REC_FINISHED = 1,
	PROTO_REC_CUT = 2,
	PROTO_REC_REMOVED = 3,
};

/* Stream, ptyd -> client after MSG_ATTACH: 0x0300 - 0x03ff. */
enum {
	/* u64 base: the first position of this incarnation */
	MSG_ATTACHED = 0x0301,
	/* u64 end (position after the last byte), then the rest of the payload
	 * is raw output bytes (1..PROTO_OUTPUT_CHUNK), not length-prefixed */
	MSG_OUTPUT = 0x0302,
	/* u64 lost (bytes the viewer will never see), u64 pos (where output
	 * resumes, a UTF-8 character boundary) */
	MSG_GAP = 0x0303,
	/* u8 has_exit_code, i32 exit_code (status, or minus the signal),
	 * str reason (exit|closed|restarted|reaped|evicted|shutdown),
	 * u64 pos (one past the last byte) */
	MSG_EXIT = 0x0304,
	/* u64 pos (the position the screen stands for: output follows from
	 * there), u16 rows, u16 cols, u8 last (1 on the last piece), then the
	 * rest of the payload is a piece of the redraw text
	 * (1..PROTO_SCREEN_CHUNK bytes, whole UTF-8 characters), not
	 * length-prefixed.  Pieces of one redraw come in a row, after
	 * MSG_ATTACHED (and MSG_GAP), to a PROTO_ATTACH_SCREEN viewer without
	 * a usable resume position. */
	MSG_SCREEN = 0x0305,
	/* u64 pos (where the raw replay starts), u8 reason
	 * (PROTO_REPLAY_*): a PROTO_ATTACH_SCREEN viewer gets no screen but
	 * the raw replay, in place of MSG_SCREEN. */
	MSG_REPLAY = 0x0306,
	/* As MSG_WATCHERS_REPLY, to the owner's streams after the replay
	 * and after each join and leave (at most one a second). */
	MSG_WATCHERS_EV = 0x0307,
	/* str reason ("revoked" or "expired"): the last frame of a stream
	 * opened through a share that ended. */
	MSG_SHARE_END = 0x0308,
	/* u16 rows, u16 cols: the pty's size from here on in the stream
	 * (no position of its own: output before the change comes before
	 * it, output after after it), and once after the attach's replay;
	 * to a viewer that asked (MSG_ATTACH's sizes) only. */
	MSG_RESIZE_EV = 0x0309,
};

/* A viewer's role. */
enum {
	PROTO_ROLE_CONTROL = 1, /* input and resize (the owner: close too) */
	PROTO_ROLE_VIEW = 2,	/* the output stream only */
};

/* Why a viewer that asked for the screen gets the raw replay. */
enum {
	PROTO_REPLAY_SIZE = 1, /* too big for an emulator */
	PROTO_REPLAY_COST = 2, /* the screen would cost too much to draw */
};

/* MSG_ATTACH modes: how a viewer without a usable resume position starts. */
enum {
	PROTO_ATTACH_RAW = 0,	 /* the backlog, replayed as output */
	PROTO_ATTACH_SCREEN = 1, /* MSG_SCREEN, then live output */
};

/* Error codes carried by MSG_ERROR, and the HTTP status each maps to. */
enum proto_err {
	PROTO_ERR_BAD_REQUEST = 1,  /* 400 */
	PROTO_ERR_NOT_RUNNING = 2,  /* 404 terminal not running */
	PROTO_ERR_TOO_LARGE = 3,    /* 413 */
	PROTO_ERR_VIEWER_LIMIT = 4, /* 429 viewer limit */
	PROTO_ERR_INPUT_FULL =
	    5, /* 429 + Retry-After: pending input over bound */
	PROTO_ERR_INTERNAL = 6,	  /* 500 */
	PROTO_ERR_VERSION = 7,	  /* 500: peers disagree on PROTO_VERSION */
	PROTO_ERR_SHUTDOWN = 8,	  /* 503: ptyd is going away */
	PROTO_ERR_TERM_LIMIT = 9, /* 429 + Retry-After: the cap is full
					 * of other owners' terminals */
	PROTO_ERR_SPAWN = 10,	  /* 500: the shell could not start; the
				   * message says why, without a path */
	PROTO_ERR_EXHAUSTED = 11, /* 503 + Retry-After: a system limit (ptys,
				   * processes, descriptors) refused the
				   * shell; the message says which */
	PROTO_ERR_SHARE_INVALID = 12, /* 403: unknown, revoked, expired,
				       * ended or another user's share */
	PROTO_ERR_READ_ONLY = 13,     /* 403: a view share's input, resize,
				       * close */
	PROTO_ERR_NOT_SHARED = 14,    /* 403: not through a share */
	PROTO_ERR_ANONYMOUS = 15,     /* 403: share_anonymous = no */
	PROTO_ERR_SHARE_LIMIT = 16,   /* 429: max_shares live */
	PROTO_ERR_SHARE_SID = 17,     /* 400: session_id is not the
				       * share's */
	PROTO_ERR_NOT_FOUND = 18, /* 404: no such recording of theirs */
};

#endif /* PTYD_PROTO_H */
