/*
 * benchutil.c -- helpers the daemon benchmarks share (benchutil.h).
 *
 * Owns: clocks, sorting doubles, /proc figures, removing a temporary
 * directory, one request to ptyd and its reply buffer.  Does not own:
 * starting ptyd.
 */
#include <sys/stat.h>

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "benchutil.h"
#include "client.h"
#include "frame.h"
#include "proto.h"

static uint8_t bench_buf[PROTO_HDR_LEN + PROTO_MAX_PAYLOAD];

double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9);
}

void
sleep_s(double s)
{
	struct timespec ts;

	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return ((x > y) - (x < y));
}

double
median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2);
}

long
proc_field_kb(const char *path, const char *field)
{
	char   line[256];
	size_t n = strlen(field);
	long   v = -1;
	FILE  *f;

	if ((f = fopen(path, "re")) == NULL)
		return (-1);
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, field, n) == 0 && line[n] == ':') {
			v = strtol(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return (v);
}

long
proc_status_kb(pid_t pid, const char *field)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	return (proc_field_kb(path, field));
}

static int
rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	(void)remove(path);
	return (0);
}

void
rm_tree(const char *dir)
{
	(void)nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

int
bench_call(const char *sock, uint16_t type, const void *msg, void *reply,
    int ms, const char **what)
{
	struct frame_out fo;
	struct frame_hdr h;
	int		 rc;

	frame_out_init(&fo);
	*what = "encode";
	if (msg_encode(&fo, type, msg) == -1) {
		frame_out_free(&fo);
		return (-1);
	}
	*what = msg_name(type);
	rc = client_call(sock, &fo, &h, bench_buf, sizeof(bench_buf),
	    client_now_ms() + ms);
	frame_out_free(&fo);
	if (rc == -1)
		return (-1);
	*what = "decode";
	if (reply != NULL &&
	    msg_decode(h.type, bench_buf + PROTO_HDR_LEN, h.len, reply) == -1)
		return (-1);
	return (h.type);
}
