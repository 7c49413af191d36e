/*
 * screen.h -- a terminal emulator's view of one terminal (libvterm), so a
 * new viewer can be sent the current screen instead of the raw backlog.
 *
 * Owns: the emulator (fed from the ring when a viewer needs the screen,
 * so its state stands for a ring position: screen.c), a bounded
 * scrollback kept as already-encoded redraw lines (compressed:
 * scrollback.c), the few modes libvterm does not expose (tracked by a
 * small scanner of its own: screenscan.c), and the redraw text built from
 * all of that, its frames cached while a viewer sends them
 * (screenredraw.c).  Does not own: the output bytes (ring.c), the pty or
 * its size (termio.c), or sending the frames (connstream.c).
 *
 * The redraw text, written to a reset terminal of the same size, redraws
 * the scrollback, then the screen (the normal screen, and the alternate one
 * over it if active), cursor position and visibility, SGR pen, scroll
 * region and the input modes that matter (application cursor keys and
 * keypad, bracketed paste, mouse tracking and encoding, focus events).  It
 * never holds a terminal query: it is made, not replayed.
 */
#ifndef PTYD_SCREEN_H
#define PTYD_SCREEN_H

#include <stddef.h>
#include <stdint.h>

/* Scrollback bounds: lines, and bytes of their encoded text. */
#define SCREEN_SB_LINES 1000
#define SCREEN_SB_BYTES (128 * 1024)

/*
 * Screens of more cells than this have no emulator: attach=screen gets the
 * raw replay (a screen is 8 bytes a cell, twice with the alternate one, and
 * up to 34 bytes a cell more for the pens if each cell has its own: 5.5 MB
 * at the cap, 1 MB with a few pens; a resize past it frees what was held).
 */
#define SCREEN_CELLS_MAX (256 * 256)
/*
 * The emulator's work is counted in units: a byte parsed, or a cell
 * written, moved or erased.  What output costs is not what it weighs (ESC
 * # 8 writes every cell of the screen in 3 bytes; a line feed inside left
 * and right margins moves every cell of the region), and it runs on
 * ptyd's one thread, so it is bounded by units, never by bytes: a step
 * does at most SCREEN_SLICE_WORK (1 to 4 ms: bench/screenbench)
 * before the loop serves everyone else again, and one attach's sync at
 * most SCREEN_SYNC_WORK before its viewer gets the raw replay instead.
 */
#define SCREEN_SLICE_WORK ((uint64_t)1 << 18)
#define SCREEN_SYNC_WORK  ((uint64_t)1 << 27)

struct ring;
struct screen;

/* A redraw, framed: MSG_SCREEN frames ready to send, shared by every
 * viewer attaching at the same position (screen_shot_unref when sent). */
struct screen_shot {
	unsigned int   refs;
	struct screen *owner; /* caching it; NULL once it let go */
	uint64_t       pos;
	size_t	       textlen; /* the redraw text's bytes, frames excluded */
	size_t	       len;	/* bytes of data */
	uint8_t	       data[];
};

/* Whether a screen of that size has an emulator (SCREEN_CELLS_MAX). */
int screen_fits(unsigned int rows, unsigned int cols);

/* The scanner only; the emulator starts at the first feed or sync. */
struct screen *screen_new(unsigned int rows, unsigned int cols);
void	       screen_free(struct screen *);
/*
 * Output as it enters the ring, pos the ring position of its first byte:
 * only the scanner sees it now (it is cheap: a memchr for ESC).  The
 * emulator is fed lazily, by screen_sync_step, from the
 * ring: it costs 20 to 50 MB/s, a fraction of what the output path carries,
 * and only terminals someone attaches to with attach=screen need it.
 */
void screen_scan_output(struct screen *, uint64_t pos, const uint8_t *, size_t);
/*
 * One step of the emulator catching up with the ring, up to target (at
 * most the ring's end), spending about budget units at most: 1 once it
 * stands at or past target.  It starts again from the ring's oldest byte
 * if bytes it never saw have left the ring.
 */
int screen_sync_step(struct screen *, const struct ring *, uint64_t target,
    uint64_t budget);
/* Steps until it stands at the ring's end (tests, fuzzing). */
void screen_sync(struct screen *, const struct ring *);
/* The ring position it stands for; the units it has spent, ever. */
uint64_t screen_fed(const struct screen *);
/* Whether it stands for a position of r: a screen can be made there. */
int	 screen_valid(const struct screen *, const struct ring *);
uint64_t screen_work(const struct screen *);
/* Scan and feed the emulator at once (tests, and callers without a ring). */
void screen_feed(struct screen *, const uint8_t *, size_t);
/* After a step of syncing with r of at most budget units (if r is not NULL
 * and it synced before): if that does not catch up (budget 0: if it is
 * behind at all), the emulator is dropped and rebuilt later. */
void screen_resize(struct screen *, const struct ring *r, unsigned int rows,
    unsigned int cols, uint64_t budget);

/* The redraw text (malloc'd, not NUL-terminated), its length in *len. */
uint8_t *screen_redraw(struct screen *, size_t *len);

/* The redraw as MSG_SCREEN frames standing for position pos: cached until
 * the next feed or resize.  A reference for the caller. */
struct screen_shot *screen_shot_get(struct screen *, uint64_t pos);
void		    screen_shot_unref(struct screen_shot *);

/* Bytes this emulator holds now: libvterm's allocations, the scrollback,
 * the alternate screen's backdrop (headers of malloc not counted). */
size_t	     screen_memory(const struct screen *);
unsigned int screen_sb_lines(const struct screen *);

#endif /* PTYD_SCREEN_H */
