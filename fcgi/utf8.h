/*
 * utf8.h -- UTF-8 sanitising of terminal output, one chunk at a time.
 *
 * Owns: the decision of what is well-formed UTF-8 (RFC 3629: no overlongs,
 * no surrogates, nothing above U+10FFFF), replacement of ill-formed bytes
 * with U+FFFD (one per maximal subpart, as Unicode recommends), and the
 * held-back tail that keeps a character split across two MSG_OUTPUT frames
 * in one piece.  Does not own: JSON escaping (json.c) or stream positions
 * (stream.c; the position after what was emitted is end - utf8_held()).
 */
#ifndef FRONT_UTF8_H
#define FRONT_UTF8_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

struct utf8_state {
	uint8_t tail[3]; /* a valid but incomplete sequence */
	uint8_t ntail;
};

void utf8_init(struct utf8_state *);

/* Bytes currently held back (0..3). */
size_t utf8_held(const struct utf8_state *);

/*
 * Append the well-formed UTF-8 for the held tail followed by in[0..len) to
 * out.  A trailing incomplete sequence that may still be completed by the
 * next chunk is held back instead.  Returns 0, or -1 if out failed (the
 * state is then unspecified).
 */
int utf8_sanitise(struct utf8_state *, const uint8_t *in, size_t len,
    struct buf *out);

/*
 * Length of the longest prefix of p[0..n) made of complete, well-formed
 * sequences: n for clean text, which can then be used as it is (the
 * stream's fast path, no copy); less where sanitising has work to do.
 */
size_t utf8_valid_prefix(const uint8_t *p, size_t n);

/* Emit a held-back tail as U+FFFD (end of stream, gap).  0 or -1. */
int utf8_flush(struct utf8_state *, struct buf *out);

/*
 * Length of the sequence at p (n bytes available): the sequence length if
 * well-formed, 0 if ill-formed (*bad = length of its maximal subpart, at
 * least 1), or -1 if the n bytes are a valid but incomplete prefix.
 */
int utf8_seq(const uint8_t *p, size_t n, size_t *bad);

/* Code points in a string already known to be well-formed. */
size_t utf8_count(const char *s, size_t len);

#endif /* FRONT_UTF8_H */
