/*
 * conn.h -- one client connection: request frames in, one at a time, each
 * answered with its reply frames before the next is read; or, after
 * MSG_ATTACH, a viewer's output stream.
 *
 * Owns: the connection fd and its buffers, the request read (header checked
 * before any allocation), reply framing (conn.c); the stream writer with
 * its stall timer, the output pump and the replay limiter (connstream.c).
 * Does not own: what a request means (request.c), terminals (term.c) or
 * accepting (listen.c).
 */
#ifndef PTYD_CONN_H
#define PTYD_CONN_H

#include <stdint.h>

#include "proto.h"
#include "term.h"

struct conn;
struct msg_attach;

void conn_init(int64_t started_at);
/* Take an accepted, CLOEXEC and NONBLOCK fd. */
void conn_create(int fd);
/* Shutdown has begun: drop idle requests, answer new ones SHUTDOWN. */
void conn_shutdown(void);
/* Close every connection now (shutdown's deadline). */
void	     conn_close_all(void);
unsigned int conn_count(void);
/* Bytes of replay the viewers may be sent now (a rate after a burst). */
int64_t conn_replay_allowance(int64_t now);
/* Microseconds since ptyd started (conn_init). */
int64_t conn_uptime(int64_t now);

/* For request.c, while it serves c's request: append a reply frame, or an
 * error frame; or turn c into a viewer of the terminal m names (on an
 * error nothing changed and nothing was replied). */
void	      conn_reply(struct conn *c, uint16_t type, const void *msg);
void	      conn_error(struct conn *c, enum proto_err code, const char *message);
void conn_reply_fd(struct conn *c, uint16_t type, const void *msg, int fd);
enum term_err conn_attach(struct conn *c, const struct msg_attach *m,
    int64_t now);

#endif /* PTYD_CONN_H */
