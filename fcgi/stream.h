/*
 * stream.h -- GET output: one viewer of one terminal, as Server-Sent Events
 * (DESIGN section 3).
 *
 * Owns: the attach exchange, the loop that turns ptyd's stream frames into
 * events, the heartbeat, noticing a viewer that has gone, and detaching on
 * every way out (closing the ptyd connection detaches the viewer).  Does not
 * own: event text (sse.c), UTF-8 repair (utf8.c), routing (handlers.c),
 * moving a handed-over stream's bytes (streamloop.c).
 */
#ifndef FRONT_STREAM_H
#define FRONT_STREAM_H

struct ctx;

/* Serve GET output.  1 when the stream was handed to this process's
 * event loop (streamloop.c), which then ends it and counts it; 0 when it
 * was served here to its end, or answered with an error. */
int stream_serve(struct ctx *);

#endif /* FRONT_STREAM_H */
