/*
 * cast.h -- asciicast v2 lines (DESIGN 4), pure: no I/O.
 *
 * Owns: the header line, an event's line `[t, "code", "text"]` with the
 * time in seconds to the microsecond, and the output events' text: the
 * pty's bytes through the same sanitiser as the live stream's text
 * (fcgi/utf8.c: UTF-8, ill-formed bytes as U+FFFD, a character split
 * between reads held back) and the same JSON escaper (fcgi/json.c), so
 * the `o` texts joined are the live stream's output texts joined.  Does
 * not own: files, hashing (recorder.c).
 */
#ifndef PTYD_CAST_H
#define PTYD_CAST_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "utf8.h"

/* One recording's text state: what the sanitiser holds back. */
struct cast {
	struct utf8_state u8;
	struct buf	  text; /* scratch */
};

void cast_init(struct cast *);
void cast_free(struct cast *);

/* The header line, newline included. */
int cast_header(struct buf *out, unsigned int cols, unsigned int rows,
    int64_t timestamp);
/* An `o` line for the bytes (nothing if all of them are held back). */
int cast_output(struct cast *, struct buf *out, uint64_t t_us, const uint8_t *p,
    size_t n);
/* At the end: a held-back tail as an `o` line of U+FFFD. */
int cast_finish(struct cast *, struct buf *out, uint64_t t_us);
/* `[t, "r", "COLSxROWS"]`. */
int cast_resize(struct buf *out, uint64_t t_us, unsigned int cols,
    unsigned int rows);
/* `[t, "i", text]` (sanitised on its own: input is whole requests). */
int cast_input(struct buf *out, uint64_t t_us, const uint8_t *p, size_t n);
/* `[t, "m", "cut: REASON"]`. */
int cast_cut(struct buf *out, uint64_t t_us, const char *reason);

#endif /* PTYD_CAST_H */
