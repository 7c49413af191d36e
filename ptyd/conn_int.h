/*
 * conn_int.h -- what conn.c and connstream.c share and nothing else may
 * call: struct conn and its states, the connection's wait and teardown,
 * and the stream's entry points.
 */
#ifndef PTYD_CONN_INT_H
#define PTYD_CONN_INT_H

#include <sys/queue.h>

#include <stddef.h>
#include <stdint.h>

#include "conn.h"
#include "ev.h"
#include "frame.h"
#include "proto.h"
#include "term.h"

#define CONN_CTL_MAX 128 /* ATTACHED + GAP + REPLAY, or EXIT */

/* Where a stream waits for the pump (conn.ready). */
#define CONN_QUEUED 1 /* conn_ready */
#define CONN_HELD   2 /* conn_held: out of replay allowance */

enum conn_state {
	CONN_READ_HDR,	/* reading the 8-byte header */
	CONN_READ_BODY, /* reading the payload */
	CONN_REPLY,	/* writing the reply, then the next request */
	CONN_STREAM,	/* an attached viewer */
	CONN_DEAD,	/* torn down, freed at the end of the turn */
};

struct conn {
	LIST_ENTRY(conn) entry;
	TAILQ_ENTRY(conn) ready_entry; /* in conn_ready or conn_held */
	int		ready;	       /* CONN_QUEUED, CONN_HELD */
	uint64_t	replay_end;    /* ring end when it attached */
	int		fd;
	struct ev_io	io;
	enum conn_state state;
	struct ev_timer timer; /* request deadline, or stall */
	struct ev_defer defer; /* free */

	uint8_t		 hdr[PROTO_HDR_LEN];
	struct frame_hdr fh;
	size_t		 got;
	uint8_t		*payload;

	int	 passfd; /* sent with the reply's first byte; -1: none */
	uint8_t *out; /* CONN_REPLY */
	size_t	 outlen;
	size_t	 outcap;
	size_t	 outoff;
	int	 close_after; /* this reply is the last: framing is lost */
	int	 kept;	      /* served a request before (conn_next) */

	struct viewer v; /* CONN_STREAM */
	uint8_t	      ctl[CONN_CTL_MAX];
	uint8_t	      ctl_len;
	uint8_t	      ctl_off;
	size_t	      shot_off; /* of v.shot: MSG_SCREEN frames, after ctl */
	uint8_t	      exit_queued;
	uint8_t	      gapped; /* a GAP went first: it says the replay is raw */
	uint8_t	      blocked;	/* socket full */
	uint8_t	      inflight; /* a frame partly written */
	uint8_t	      prefix[FRAME_OUTPUT_PREFIX];
	uint32_t      flen;  /* its data bytes */
	uint32_t      fsent; /* its bytes sent, prefix incl. */
	int64_t	      last_progress;
};

/* conn.c: wait for events (registered with epoll on the first wait; on
 * failure the connection is torn down and -1 returned); the one
 * teardown. */
int  conn_want(struct conn *, uint32_t events);
void conn_destroy(struct conn *);

/* connstream.c: ptyd started (the replay allowance's clock); c torn
 * down, out of the pump's queues; write what c is owed (budget: see
 * there); c's events, its timer, while it streams. */
void conn_stream_init(int64_t started_at);
void conn_stream_unqueue(struct conn *);
int  conn_stream_flush(struct conn *, size_t budget);
void conn_stream_io(struct conn *, uint32_t events);
void conn_stream_timer(struct conn *, int64_t now);

#endif /* PTYD_CONN_INT_H */
