/*
 * safetext.h -- a line of an account's text, as it may stand in root's
 * log or on root's terminal: printable ASCII and well-formed UTF-8 stay;
 * every byte of a control (C0, DEL, C1: U+009B is CSI to some
 * terminals), of a directional mark, embedding, override or isolate, or
 * of a malformed sequence becomes '?'.  So nothing in it ends the line,
 * moves the cursor back over a prefix, or steers the terminal.
 */
#ifndef PTYD_SAFETEXT_H
#define PTYD_SAFETEXT_H

#include <stddef.h>

/* text's len bytes into out (len + 1 bytes, NUL-terminated); the
 * length written. */
size_t safetext(char *out, const char *text, size_t len);

#endif /* PTYD_SAFETEXT_H */
