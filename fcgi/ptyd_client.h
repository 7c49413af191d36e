/*
 * ptyd_client.h -- one exchange with ptyd for one HTTP request, with a
 * deadline, starting ptyd first if it is not running (autostart).
 *
 * Owns: the socket path and autostart policy, the connections kept
 * between requests, the lock that makes a burst of
 * concurrent requests start ptyd exactly once, and answering what went
 * wrong (after lib/contract.c's table of errors).  Does not own: framing or blocking I/O
 * (lib/client.c), what a request means (handlers.c, stream.c).
 */
#ifndef FRONT_PTYD_CLIENT_H
#define FRONT_PTYD_CLIENT_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "frame.h"

struct ptyd_conf {
	char socket[108]; /* sizeof(sun_path) */
	int  autostart;
	char program[PATH_MAX]; /* ptyd to run; no '/' = PATH */
	/* Passed on to an autostarted ptyd, so it has our settings. */
	const char *config;    /* --config FILE, or NULL */
	const char *state_dir; /* NULL: not passed */
	const char *db;
	/* The umask we were started with, "0022": an autostarted ptyd's
	 * shells get it (ptyd --umask) unless shell_umask says otherwise;
	 * ours is 077.  Empty: not passed. */
	char umask[8];
	int  front; /* auth = front: ptyd --auth front (its caps) */
	int  keep;  /* FastCGI: keep connections between requests */
};

/*
 * Connect to ptyd (starting it if allowed and needed) and send fo.  Returns
 * a CLOEXEC non-blocking fd to read replies from, or -1 with errno: ENOENT
 * or ECONNREFUSED (not running, could not be started), ETIMEDOUT, or an I/O
 * error.  Nothing has reached ptyd when it fails before the send.
 */
int ptyd_open(const struct ptyd_conf *, const struct frame_out *fo,
    int64_t deadline_ms);

/*
 * ptyd_open, then read the first reply frame into buf (size bytes), for a
 * request answered with more than one that is safe to repeat (MSG_LIST,
 * MSG_ATTACH: reads): a connection that ends before that frame (ptyd went
 * away) is followed by another try on a new one until deadline_ms.  The
 * fd to read the rest from, or -1 with errno as ptyd_open.
 */
int ptyd_open_first(const struct ptyd_conf *, const struct frame_out *fo,
    struct frame_hdr *hdr, uint8_t *buf, size_t size, int64_t deadline_ms);

/*
 * Connect to ptyd and send fo without waiting, for the stream loop's
 * thread, which never blocks: no autostart, no poll.  A connect to a
 * Unix socket completes or fails at once: a full backlog (EAGAIN) and a
 * send that would block come back as ETIMEDOUT; ENOENT or ECONNREFUSED:
 * nothing listens.  A CLOEXEC non-blocking fd, or -1 with errno.
 */
int ptyd_open_now(const struct ptyd_conf *, const struct frame_out *fo);

/*
 * Send fo and read its one reply frame into buf (size bytes), on one of
 * the process's kept connections if there is one (conf->keep), else on a
 * new one (ptyd started if need be), which is then kept.  A connection
 * that ends under the request (ptyd closed it, restarted, died) is
 * followed by another try on a new one, until deadline_ms, when nothing
 * reached ptyd, or when retry_safe: fo may reach ptyd twice (an input
 * with an input_id, a resize, stats).  0, or -1 with errno as ptyd_open
 * (ECONNRESET or EPIPE: ptyd went away with the request).
 */
int ptyd_call(const struct ptyd_conf *, const struct frame_out *fo,
    struct frame_hdr *hdr, uint8_t *buf, size_t size, int retry_safe,
    int64_t deadline_ms);

/* Close the process's idle kept connections. */
void ptyd_kept_drop(void);

/*
 * Start ptyd unless it already answers: under an exclusive lock on
 * "<socket>.lock" (re-checked after taking the lock, so one of many
 * concurrent callers starts it), run "<program> [--config FILE]
 * --state-dir DIR --db PATH --socket <socket>", wait
 * for the daemonizing parent to exit, then for the socket to accept.
 * Returns 0 when ptyd answers, -1 with errno otherwise.
 */
int ptyd_autostart(const struct ptyd_conf *, int64_t deadline_ms);

/*
 * The HTTP answer to an exchange with ptyd that failed (shared by the
 * endpoints and the stream): 503 with Retry-After when ptyd is not
 * running or not answering, else 500; and to ptyd's MSG_ERROR, its status
 * and message, with Retry-After on every 429 and 503 (DESIGN 2): both from
 * the one table of lib/contract.c.
 */
struct req;
void ptyd_answer_failed(struct req *, int err);
void ptyd_answer_error(struct req *, const struct msg_error *);

#endif /* FRONT_PTYD_CLIENT_H */
