/*
 * benchutil.h -- what the daemon benchmarks (bench/daemon/ptydbench,
 * bench/terms/termsbench) share: clocks, sorting doubles, /proc figures,
 * removing a temporary directory, one request to ptyd.
 *
 * Owns: those helpers only.  Does not own: starting ptyd (each
 * benchmark's own), or any figure.
 */
#ifndef BENCH_BENCHUTIL_H
#define BENCH_BENCHUTIL_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

/* CLOCK_MONOTONIC in seconds. */
double now_s(void);
/* Sleep s seconds, through EINTR. */
void sleep_s(double s);
/* qsort's comparison of doubles. */
int cmp_double(const void *, const void *);
/* The median of v[0..n), sorting v. */
double median(double *v, size_t n);
/* The number (kB) of "field:" in a /proc file such as /proc/PID/status or
 * /proc/meminfo; -1 if absent. */
long proc_field_kb(const char *path, const char *field);
/* The same in /proc/PID/status. */
long proc_status_kb(pid_t pid, const char *field);
/* Remove dir and everything below it (a benchmark's temporary state). */
void rm_tree(const char *dir);
/* One exchange with ptyd on sock, given ms: the reply's type, its body
 * decoded into *reply unless NULL; -1 with *what naming the step that
 * failed ("encode", the call (errno set), "decode"). */
int bench_call(const char *sock, uint16_t type, const void *msg, void *reply,
    int ms, const char **what);

#endif /* BENCH_BENCHUTIL_H */
