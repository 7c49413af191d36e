/*
 * request.h -- what each request means: a decoded frame turned into a call
 * on the terminals and a reply (see request.c).
 */
#ifndef PTYD_REQUEST_H
#define PTYD_REQUEST_H

#include <stddef.h>
#include <stdint.h>

struct conn;

/* Whether type is a request a client may send. */
int  request_is_request(uint16_t type);
/* Decode payload and serve it, replying on c (conn_reply, conn_error,
 * conn_attach).  While shutting down every request is refused. */
void request_serve(struct conn *c, uint16_t type, const uint8_t *payload,
    size_t len, int shutting_down, int64_t now);

#endif /* PTYD_REQUEST_H */
