/*
 * screenbench.c -- what output costs the screen emulator (issue 29): for
 * each kind of output, 600 kB of it in a ring, the time of a whole sync
 * (what one attach=screen cost ptyd's one thread before steps) and of the
 * longest step of SCREEN_SLICE_WORK units (what the loop waits now), and
 * nanoseconds per unit.  Times are CPU time of this thread, the median of
 * --rounds runs; compare kinds with each other, not across machines.
 *
 *	bench/screenbench [--rounds N] [--rows R --cols C]
 *
 * Owns nothing of ptyd: it links the daemon's library and drives
 * screen.c as termview.c does.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ring.h"
#include "screen.h"

static const struct {
	const char *name;
	const char *seq;
} kinds[] = {
	{ "text",
	    "the quick brown fox jumps over the lazy dog 0123456789\r\n" },
	{ "sgr text",
	    "\033[1;31mred\033[0m \033[38;5;33mblue\033[0m plain\r\n" },
	{ "DECALN", "\033#8" },
	{ "margins", "\033[?69h\033[2;79s\033[1;24r\033[24H\n" },
	{ "REP", "x\033[65535b\r" },
	{ "IL/DL", "\033[1;24r\033[2H\033[99L\033[99M" },
	{ "ED", "\033[J\033[1J" },
	{ "wide", "\xe4\xb8\xad\xe6\x96\x87\xe5\xad\x97\r\n" },
	{ "U+0301", "\xcc\x81" },
	{ "U+0301 SGR", "\xcc\x81\033[m" },
	{ "tabs", "\033[3g\033[999I\033[999Z" },
};

static double
cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ((double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6);
}

static int
cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x < y ? -1 : x > y);
}

static void
fill(struct ring *r, const char *seq)
{
	size_t len = strlen(seq), n;

	ring_init(r, 1000, 1 << 20);
	for (n = 0; n + len <= 600 * 1024; n += len)
		ring_append(r, seq, len);
}

/* One round: the whole sync's time, the longest step's, units spent. */
static void
round_of(const char *seq, unsigned rows, unsigned cols, double *whole,
    double *step, double *ns_unit)
{
	struct screen *s = screen_new(rows, cols);
	struct ring    r;
	double	       t0, t, longest = 0;
	uint64_t       w0;

	fill(&r, seq);
	w0 = screen_work(s);
	t0 = cpu_ms();
	for (;;) {
		t = cpu_ms();
		if (screen_sync_step(s, &r, ring_end(&r), SCREEN_SLICE_WORK))
			break;
		if (cpu_ms() - t > longest)
			longest = cpu_ms() - t;
	}
	*whole = cpu_ms() - t0;
	*step = longest;
	*ns_unit = *whole * 1e6 / (double)(screen_work(s) - w0);
	ring_free(&r);
	screen_free(s);
}

int
main(int argc, char **argv)
{
	unsigned rounds = 3, rows = 24, cols = 80, i, k;
	double	 w[16], st[16], ns[16];

	for (i = 1; i + 1 < (unsigned)argc; i += 2) {
		if (strcmp(argv[i], "--rounds") == 0)
			rounds = (unsigned)atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--rows") == 0)
			rows = (unsigned)atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--cols") == 0)
			cols = (unsigned)atoi(argv[i + 1]);
	}
	if (rounds < 1 || rounds > 16 || !screen_fits(rows, cols)) {
		fprintf(stderr,
		    "usage: screenbench [--rounds 1-16] "
		    "[--rows R --cols C] (at most %d cells)\n",
		    SCREEN_CELLS_MAX);
		return (2);
	}
	printf("%ux%u, 600 kB each, median of %u (CPU ms)\n", rows, cols,
	    rounds);
	printf("%-10s %12s %14s %8s\n", "output", "whole sync", "longest step",
	    "ns/unit");
	for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		for (i = 0; i < rounds; i++)
			round_of(kinds[k].seq, rows, cols, &w[i], &st[i],
			    &ns[i]);
		qsort(w, rounds, sizeof(w[0]), cmp);
		qsort(st, rounds, sizeof(st[0]), cmp);
		qsort(ns, rounds, sizeof(ns[0]), cmp);
		printf("%-10s %12.1f %14.2f %8.1f\n", kinds[k].name,
		    w[rounds / 2], st[rounds / 2], ns[rounds / 2]);
	}
	return (0);
}
