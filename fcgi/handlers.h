/*
 * handlers.h -- the HTTP API of DESIGN section 2: routing, the checks in
 * their contract order, and the endpoints that are one exchange with ptyd
 * (start, input, resize, close, list, health).
 *
 * Owns: the order of status codes (403 gate, 405, 403 Host/CSRF, 413, 415,
 * 400, then what ptyd says), request validation, and the JSON answers.
 * Does not own: the output stream (stream.c), the gate's logic (gate.c),
 * transport (http.c).
 */
#ifndef FRONT_HANDLERS_H
#define FRONT_HANDLERS_H

#include "proto.h"

struct req;

/* What every endpoint knows about its request once the checks passed. */
struct ctx {
	struct req *r;
	const char *method;
	char	    endpoint[32];
	const char *owner;			/* REMOTE_USER, "" if local */
	char	    actor[PROTO_ACTOR_MAX + 1]; /* user@address */
	const char *client;			/* the address alone */
	char	    qsid[PROTO_SID_MAX + 1];	/* from the query */
	int	    has_qsid;
	const char *share; /* Ptyd-Share's token; NULL: none */
};

/* Serve one request from first check to last byte (not the finish). */
void handlers_serve(struct req *);

#endif /* FRONT_HANDLERS_H */
