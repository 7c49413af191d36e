/*
 * scrollback.h -- a screen's scrollback: the encoded text of the lines that
 * left the top of the normal screen, compressed in blocks (zlib).
 *
 * Owns: the lines' bytes, their blocks, the bounds (SCREEN_SB_LINES lines
 * and SCREEN_SB_BYTES bytes of encoded text, screen.h) and the compressor.
 * Does not own: encoding a row of cells into a line (screenredraw.c) or
 * what the redraw puts between the lines.
 *
 * Lines go into an open block; a full block is closed, and compressed at
 * the next scrollback_pack (screen.c calls it once a feed or sync is done,
 * so a sync through a megabyte of output compresses only the blocks still
 * kept at its end).  The lines kept are exactly those an uncompressed ring
 * would keep (the newest that fit both bounds): whole oldest blocks go
 * once no line of theirs can be kept, and the redraw skips the lines of the
 * oldest block that are past the bounds.  So the text held may pass the
 * byte bound by that oldest block (4 kB of lines, or one long line), and
 * the open block is held whole (up to 4 kB, uncompressed).
 */
#ifndef PTYD_SCROLLBACK_H
#define PTYD_SCROLLBACK_H

#include <stddef.h>
#include <stdint.h>

struct sb_block;

struct scrollback {
	struct sb_block *b; /* closed blocks, oldest first */
	size_t		 nb, capb;
	uint8_t		*open; /* the open block: lines, each ending '\n' */
	size_t		 open_len, open_cap;
	unsigned int	 open_lines;
	size_t		 lines; /* all lines held, the open block's too */
	size_t		 bytes; /* their encoded bytes, '\n' included */
};

void scrollback_init(struct scrollback *);
void scrollback_free(struct scrollback *);
/* One line (without its '\n'); a line longer than the byte bound is not
 * kept, as no ring of that bound could keep it. */
void scrollback_push(struct scrollback *, const uint8_t *, size_t);
/* Compress the closed blocks not yet compressed. */
void scrollback_pack(struct scrollback *);
/* Each line kept, oldest first, without its '\n'. */
void	     scrollback_each(const struct scrollback *,
	    void (*)(const uint8_t *, size_t, void *), void *);
unsigned int scrollback_lines(const struct scrollback *);
/* Bytes held (allocations, headers of malloc not counted). */
size_t scrollback_memory(const struct scrollback *);

#endif /* PTYD_SCROLLBACK_H */
