/*
 * term_int.h -- what term.c, termio.c, termlife.c, termview.c and
 * termadopt.c share and nothing else may call: the pieces of one
 * terminal's machinery that cross those files.
 */
#ifndef PTYD_TERM_INT_H
#define PTYD_TERM_INT_H

#include <sys/queue.h>
#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

struct term;

/* A piece of input the pty has not taken yet. */
struct term_chunk {
	STAILQ_ENTRY(term_chunk) entry;
	size_t	len;
	size_t	off;
	uint8_t data[];
};

/* term.c: the object and the pid hash (adding and removing a pid starts
 * and stops watching it, termlife.c). */
void term_pid_add(struct term *);
void term_pid_remove(struct term *);
int  term_is_live_shell(pid_t);

/* termlife.c: the shell's end, through its pidfd or SIGCHLD's loop. */
void term_watch_pid(struct term *);
void term_unwatch_pid(struct term *);

/* term.c: the object. */
void term_maybe_free(struct term *);   /* at the end of the turn */
void term_wake_viewers(struct term *); /* at the end of the turn */
void term_input_drop(struct term *);

/* termio.c: the pty. */
int  term_spawn(struct term *);
void term_io_cb(int, uint32_t, void *);
void term_update_events(struct term *);
void term_set_size(struct term *, unsigned int rows, unsigned int cols);
void term_size_reassert(struct term *);

/* termlife.c: the state machine's timer and its last step. */
void term_timer_cb(void *);
void term_finish(struct term *, int64_t now);

#endif /* PTYD_TERM_INT_H */
