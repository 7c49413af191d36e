/*
 * fuzz_screen.c -- the screen's emulator (ptyd/screen.c, grid.c) under
 * hostile output: whatever a program prints, ptyd must neither crash nor
 * put a terminal query into the redraw it sends new viewers.
 *
 * Input: two bytes for the size (rows 1..64, cols 1..200), then output
 * bytes; the pair 0xff 0xfe followed by two bytes resizes mid-stream.  At
 * the end the redraw is taken, checked for queries (a CSI ending in c or n,
 * an OSC holding '?'), framed, and fed to a fresh screen of the same size,
 * whose own redraw is taken too.  The same output also goes the way ptyd
 * takes it: into a small ring and the scanner, the emulator rebuilt from
 * what the ring still holds (primed with the modes it missed) at each
 * resize and at the end.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"
#include "screen.h"

/* Small, so that most inputs push their first bytes out of it. */
#define FUZZ_RING 512

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static unsigned int
fuzz_rows(uint8_t b)
{
	return (1 + b % 64);
}

static unsigned int
fuzz_cols(uint8_t b)
{
	return (1 + b % 200);
}

/* A query in the redraw would be answered by every viewer's terminal. */
static void
fuzz_no_query(const uint8_t *p, size_t len)
{
	size_t i, j;

	for (i = 0; i + 1 < len; i++) {
		if (p[i] != 0x1b)
			continue;
		if (p[i + 1] == '[') {
			for (j = i + 2; j < len && p[j] >= 0x20 && p[j] < 0x40; j++)
				;
			if (j < len && (p[j] == 'c' || p[j] == 'n'))
				abort();
		} else if (p[i + 1] == ']') {
			for (j = i + 2; j < len && p[j] != 0x07 && p[j] != 0x1b;
			     j++)
				if (p[j] == '?')
					abort();
		}
	}
}

static void
fuzz_redraw(struct screen *s, unsigned int rows, unsigned int cols)
{
	struct screen	   *again;
	struct screen_shot *shot;
	uint8_t		   *text;
	size_t		    len;

	text = screen_redraw(s, &len);
	fuzz_no_query(text, len);
	shot = screen_shot_get(s, 1000);
	screen_shot_unref(shot);
	again = screen_new(rows, cols);
	screen_feed(again, text, len);
	free(text);
	text = screen_redraw(again, &len);
	fuzz_no_query(text, len);
	free(text);
	screen_free(again);
}

/* Output both ways: fed at once (s), and through the ring (lazy). */
static void
fuzz_output(struct screen *s, struct screen *lazy, struct ring *r,
    const uint8_t *p, size_t n)
{
	screen_feed(s, p, n);
	ring_append(r, p, n);
	screen_scan_output(lazy, ring_end(r) - n, p, n);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct screen *s, *lazy;
	struct ring    r;
	unsigned int   rows, cols;
	size_t	       i, start;

	if (size < 2)
		return (0);
	rows = fuzz_rows(data[0]);
	cols = fuzz_cols(data[1]);
	s = screen_new(rows, cols);
	lazy = screen_new(rows, cols);
	ring_init(&r, 1000, FUZZ_RING);
	for (start = i = 2; i + 3 < size; i++) {
		if (data[i] != 0xff || data[i + 1] != 0xfe)
			continue;
		fuzz_output(s, lazy, &r, data + start, i - start);
		rows = fuzz_rows(data[i + 2]);
		cols = fuzz_cols(data[i + 3]);
		screen_resize(s, NULL, rows, cols, SCREEN_SLICE_WORK);
		screen_sync(lazy, &r);
		screen_resize(lazy, &r, rows, cols, SCREEN_SLICE_WORK);
		start = i + 4;
		i += 3;
	}
	if (start < size)
		fuzz_output(s, lazy, &r, data + start, size - start);
	fuzz_redraw(s, rows, cols);
	screen_sync(lazy, &r);
	fuzz_redraw(lazy, rows, cols);
	ring_free(&r);
	screen_free(lazy);
	screen_free(s);
	return (0);
}
