/*
 * fuzz_screen_cost.c -- output that costs the screen emulator more than
 * its work units say (issue 29).  ptyd bounds a step of the emulator by
 * units (a byte parsed, a cell written, moved or erased: screen.h), so a
 * step's time is SCREEN_SLICE_WORK times the time of a unit; output whose
 * units are cheap to count but dear to do would stretch a step, and with
 * it every other terminal's keystrokes.
 *
 * Input: two bytes for the size (rows 1..256, cols 1..256, within
 * SCREEN_CELLS_MAX), then a pattern repeated into a 64 kB ring, fed in
 * steps as termview.c feeds it.  Each step's time per unit is taken
 * (thread CPU time; steps of at least a quarter of the budget); a new
 * worst is printed, and a unit dearer than FUZZ_NS_MAX aborts: a step
 * would take SCREEN_SLICE_WORK times that.  Built only by `make fuzz`
 * (libFuzzer, no sanitizers, -O2, so the times are ptyd's):
 *	make fuzz && tests/fuzz/fuzz_screen_cost-libfuzzer -max_len=66 \
 *	    -max_total_time=300 $(srcdir)/tests/fuzz/corpus/screen
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ring.h"
#include "screen.h"

#define FUZZ_RING   (64 * 1024)
#define FUZZ_NS_MAX 100.0 /* 26 ms a step at 2^18 units */

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static double worst;

static double
fuzz_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ((double)ts.tv_sec * 1e9 + (double)ts.tv_nsec);
}

static void
fuzz_fill(struct ring *r, const uint8_t *p, size_t n)
{
	size_t i;

	ring_init(r, 1, FUZZ_RING);
	for (i = 0; i + n <= FUZZ_RING; i += n)
		ring_append(r, p, n);
}

/* One step, timed: its nanoseconds per unit, or 0 if it did too little
 * work to say. */
static double
fuzz_step(struct screen *s, const struct ring *r, int *done)
{
	uint64_t w = screen_work(s);
	double	 t = fuzz_ns();

	*done = screen_sync_step(s, r, ring_end(r), SCREEN_SLICE_WORK);
	t = fuzz_ns() - t;
	w = screen_work(s) - w;
	return (w >= SCREEN_SLICE_WORK / 4 ? t / (double)w : 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct screen *s;
	struct ring    r;
	unsigned int   rows, cols;
	double	       ns;
	int	       done = 0;

	if (size < 3 || size > 66)
		return (0);
	rows = 1 + data[0];
	cols = 1 + data[1];
	if (!screen_fits(rows, cols))
		return (0);
	s = screen_new(rows, cols);
	fuzz_fill(&r, data + 2, size - 2);
	while (!done) {
		ns = fuzz_step(s, &r, &done);
		if (ns > worst) {
			worst = ns;
			fprintf(stderr, "worst %.1f ns/unit at %ux%u\n", ns, rows,
			    cols);
		}
		if (ns > FUZZ_NS_MAX)
			abort();
	}
	ring_free(&r);
	screen_free(s);
	return (0);
}
