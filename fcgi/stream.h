/*
 * stream.h -- GET output: one viewer of one terminal, as Server-Sent Events
 * (DESIGN section 3).
 *
 * Owns: the attach exchange, the loop that turns ptyd's stream frames into
 * events, the heartbeat, noticing a viewer that has gone, and detaching on
 * every way out (closing the ptyd connection detaches the viewer).  Does not
 * own: event text (sse.c), UTF-8 repair (utf8.c), routing (handlers.c).
 */
#ifndef FRONT_STREAM_H
#define FRONT_STREAM_H

struct ctx;

void stream_serve(struct ctx *);

#endif /* FRONT_STREAM_H */
