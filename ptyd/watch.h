/*
 * watch.h -- who watches a terminal (DESIGN 3): the list of its viewers
 * (user, role, share, since) as MSG_WATCHERS_REPLY and MSG_WATCHERS_EV
 * carry it, and the event's timing: to the owner's streams after each
 * join and leave, at most one a second, and once after each owner
 * stream's replay.
 *
 * Owns: the list's encoding, each terminal's watch timer.  Does not own:
 * the viewers (termview.c) or their streams (connstream.c, which sends
 * the frame when a viewer's watch_due is set).
 */
#ifndef PTYD_WATCH_H
#define PTYD_WATCH_H

#include <stdint.h>

#include "frame.h"

#define WATCH_EVERY (1000 * 1000) /* us between two events at least */

struct term;

/* A viewer joined or left t. */
void watch_changed(struct term *t, int64_t now);
/* t's watchers into m, its entries in buf (PROTO_WATCHERS_BYTES). */
void watch_fill(const struct term *t, struct msg_watchers_reply *m,
    uint8_t *buf);
/* t is being freed. */
void watch_term_free(struct term *t);

#endif /* PTYD_WATCH_H */
