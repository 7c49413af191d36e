/*
 * stream_int.h -- what stream.c and streamloop.c share about one output
 * stream, and nothing else may use.
 *
 * Owns: the layout of struct stream and the names of its steps.  stream.c
 * owns the request, the attach and turning frames into events; streamloop.c
 * owns moving a handed-over stream's bytes from an event loop thread.
 */
#ifndef FRONT_STREAM_INT_H
#define FRONT_STREAM_INT_H

#include <sys/queue.h>

#include <stdint.h>

#include <fcgiapp.h>

#include "buf.h"
#include "frame.h"
#include "http.h"
#include "proto.h"
#include "utf8.h"

/* Largest frame of the stream: MSG_OUTPUT with a full chunk. */
#define STREAM_FRAME_MAX (PROTO_HDR_LEN + 8 + PROTO_OUTPUT_CHUNK)
/* One read from ptyd takes up to this much: several full frames. */
#define STREAM_IN_MAX (4 * STREAM_FRAME_MAX)
/* Bound on one event: every byte escaped as \u00XX is six. */
#define STREAM_EVENT_MAX (8 * PROTO_OUTPUT_CHUNK)
/* Sanitised text of one frame: a byte can become U+FFFD, three. */
#define STREAM_TEXT_MAX (4 * PROTO_OUTPUT_CHUNK)
/* Frames are turned into events while the output holds less than this. */
#define STREAM_OUT_HIGH (64 * 1024)
#define STREAM_OUT_MAX	(STREAM_OUT_HIGH + STREAM_EVENT_MAX)
/* Silence on the viewer's side, after ptyd hung up, that means stuck. */
#define STREAM_STUCK_MS 10000
/*
 * How long a stream whose ptyd connection ended without terminal_closed
 * tries to attach again in place (stream_lost) before it ends as it did
 * before there was a re-attach.  ptyd's keeper has a new ptyd serving the
 * same terminals within about a second of a crash or an upgrade; five
 * seconds leaves room for a loaded machine, and is still short enough
 * that a viewer whose ptyd is gone for good hears of it soon.
 */
#define STREAM_REATTACH_MS 5000

enum stream_end {
	END_NONE,
	END_DONE,  /* terminal_closed queued, or ptyd ended the stream */
	END_GONE,  /* the viewer went away or a write failed */
	END_STOP,  /* this process is shutting down */
	END_ERROR, /* internal failure: terminal_error */
	END_STUCK, /* ptyd hung up and the viewer takes nothing */
	END_PTYD,  /* ptyd's connection ended without terminal_closed */
};

/*
 * One per open viewer, held for the stream's life: 10,000 idle viewers
 * hold 10,000 of these, so flags are bits and the session id is sized to
 * fit (docs/scaling.md).
 */
struct stream {
	struct req	 *r;
	int		  fd;	/* ptyd */
	uint8_t		  mode; /* PROTO_ATTACH_* (attach=, replay=) */
	uint8_t		  role; /* PROTO_ROLE_VIEW (role=view), or 0 */
	unsigned	  b64 : 1;
	unsigned	  hb_event : 1;	 /* heartbeat=event */
	unsigned	  replayed : 1;	 /* the replay's end was marked */
	unsigned	  in_screen : 1; /* a screen event is half written */
	unsigned	  ptyd_eof : 1;	 /* a read of ptyd gave EOF/EAGAIN */
	unsigned	  positioned : 1;  /* pos is a resume point */
	unsigned	  reattaching : 1; /* ptyd lost, not attached again */
	unsigned	  grown : 1;	   /* stream_sndbuf_fast is set */
	uint8_t		  tries;	   /* of the re-attach, for backoff */
	int64_t		  reattach_until;  /* then it gives up */
	int64_t		  retry_at;	   /* its next attempt */
	uint64_t	  replay_end;	 /* the ring's end at the attach */
	struct utf8_state u8;
	uint64_t	  pos;	 /* id of the last event */
	uint64_t	  end;	 /* position after the last byte seen */
	uint8_t		 *in;	 /* frames from ptyd; NULL while idle */
	size_t		  inoff; /* first byte not yet handled */
	size_t		  inlen;
	struct buf	  text;	       /* sanitised text (slow path) */
	struct buf	  out;	       /* events for the viewer */
	size_t		  outoff;      /* bytes of out already sent */
	uint64_t	  taken;       /* bytes the web server took */
	int64_t		  quiet_since; /* last bytes to the viewer */
	int64_t		  gone_at;     /* ptyd hung up then; 0: not */

	/* Once handed to the loop (streamloop.c), which owns all below. */
	struct req   req; /* the request, taken from the thread */
	FCGX_Request fq;  /* its FastCGI ids; libfcgi's part gone */
	TAILQ_ENTRY(stream) hb_entry;	 /* by hb_at */
	TAILQ_ENTRY(stream) stuck_entry; /* by stuck_at, once gone_at */
	TAILQ_ENTRY(stream) ready_entry; /* work left for the next round */
	TAILQ_ENTRY(stream) reattach_entry; /* while reattaching */
	int64_t	 hb_at;			 /* last progress or heartbeat check */
	int64_t	 stuck_at;		 /* max(quiet_since, gone_at) */
	int64_t	 born_us;		 /* for the duration metric */
	size_t	 end_off;		 /* of END_REQUEST's bytes, sent */
	unsigned begun : 1;		 /* headers queued */
	unsigned ptyd_ready : 1;	 /* ptyd said readable */
	unsigned conn_full : 1;		 /* wait for EPOLLOUT */
	unsigned want_out : 1;		 /* EPOLLOUT registered */
	unsigned ending : 1;		 /* END_DONE: drain, then finish */
	unsigned dead : 1;		 /* ended; freed at turn's end */
	unsigned on_stuck : 1;
	unsigned on_ready : 1;
	unsigned on_reattach : 1;
	/* The session id (for the log), then the owner, the actor and the
	 * share's token ("" without one), each NUL-terminated: what a
	 * re-attach sends again.  The token is never logged. */
	char sid[];
};

int		stream_pending(const struct stream *);
enum stream_end stream_push(struct stream *);
int		stream_has_frame(struct stream *, struct frame_hdr *);
enum stream_end stream_frames(struct stream *);
enum stream_end stream_read(struct stream *);
int		stream_heartbeat(struct stream *);
void		stream_begin(struct stream *);
int		stream_lost(struct stream *, int64_t now);
int		stream_reattach(struct stream *, int64_t now);
void		stream_free(struct stream *);

#endif /* FRONT_STREAM_INT_H */
