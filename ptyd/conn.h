/*
 * conn.h -- one client connection: one request frame in, reply frames out,
 * or, after MSG_ATTACH, a viewer's output stream.
 *
 * Owns: the connection fd and its buffers, the request read (header checked
 * before any allocation), dispatch to term.c, reply encoding, the stream
 * writer with its stall timer.  Does not own: terminals (term.c) or
 * accepting (listen.c).
 */
#ifndef PTYD_CONN_H
#define PTYD_CONN_H

#include <stdint.h>

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

#endif /* PTYD_CONN_H */
