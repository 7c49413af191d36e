/*
 * client.h -- the client side of the ptyd socket: connect, send one request,
 * read frames, each bounded by a deadline.  Used by ptyd.fcgi, ptydctl and
 * the tests.
 *
 * Owns: blocking I/O on one connection with poll() deadlines.  The
 * default socket path is lib/config.c's (<state_dir>/ptyd.sock).  Does not own: what a request means (callers), frame layout
 * (frame.c).  Thread-safe: no globals.
 */
#ifndef PTYD_CLIENT_H
#define PTYD_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "frame.h"

/* Monotonic clock in milliseconds, for deadlines. */
int64_t client_now_ms(void);

/*
 * Connect to the socket at path before deadline_ms (client_now_ms() time).
 * Returns a CLOEXEC, non-blocking fd, or -1 with errno (ENOENT,
 * ECONNREFUSED: ptyd is not running; ETIMEDOUT).
 */
int client_connect(const char *path, int64_t deadline_ms);

/* Send the whole frame.  Returns 0, or -1 with errno (ETIMEDOUT, EPIPE, ...). */
int client_send(int fd, const struct frame_out *fo, int64_t deadline_ms);

/*
 * Read one frame into buf (size bytes, at least PROTO_HDR_LEN; the payload
 * lands at buf + PROTO_HDR_LEN).  Returns 0 with *hdr filled, or -1 with
 * errno: ETIMEDOUT, ECONNRESET (the peer closed, even mid-frame), EPROTO,
 * EMSGSIZE (payload over PROTO_MAX_PAYLOAD or over size).  After -1 the
 * connection is unusable.  deadline_ms < 0 waits for ever.
 */
int client_recv(int fd, struct frame_hdr *hdr, uint8_t *buf, size_t size,
    int64_t deadline_ms);

/*
 * The one reply frame to the one request outstanding on fd, as client_recv
 * but header and payload in one read where they arrived together (a
 * connection kept for several requests: nothing else can follow).  Also
 * EPROTO when bytes past the frame arrived.
 */
int client_recv_reply(int fd, struct frame_hdr *hdr, uint8_t *buf, size_t size,
    int64_t deadline_ms);

/*
 * client_recv_reply for a reply that may carry a descriptor (SCM_RIGHTS,
 * MSG_REC_FILE: a recording's file): *passed is it (CLOEXEC, the
 * caller's to close), or -1 when none came.
 */
int client_recv_fd(int fd, struct frame_hdr *hdr, uint8_t *buf, size_t size,
    int64_t deadline_ms, int *passed);

/*
 * One request, one reply: connect, send fo, read one frame into buf, close.
 * Returns 0, or -1 with errno as above.
 */
int client_call(const char *path, const struct frame_out *fo,
    struct frame_hdr *hdr, uint8_t *buf, size_t size, int64_t deadline_ms);

#endif /* PTYD_CLIENT_H */
