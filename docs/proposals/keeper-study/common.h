/* common.h -- helpers for the keeper study benchmarks. */
#define _GNU_SOURCE
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define die(...) do { fprintf(stderr, __VA_ARGS__); fprintf(stderr, ": %s\n", strerror(errno)); exit(1); } while (0)

static inline double now_s(void) {
	struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}
static inline uint64_t now_ns(void) {
	struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}
static inline double ru_cpu(const struct rusage *r) {
	return r->ru_utime.tv_sec + r->ru_utime.tv_usec / 1e6 +
	    r->ru_stime.tv_sec + r->ru_stime.tv_usec / 1e6;
}
static inline double self_cpu(void) {
	struct rusage r; getrusage(RUSAGE_SELF, &r); return ru_cpu(&r);
}
static int cmp_d(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}
static inline double median(double *v, int n) {
	double t[256]; memcpy(t, v, n * sizeof(double));
	qsort(t, n, sizeof(double), cmp_d);
	return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}
/* A pty pair, master nonblocking+cloexec, slave raw. */
static inline void mkpty(int *m, int *s) {
	struct termios tio;
	*m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (*m < 0 || grantpt(*m) || unlockpt(*m)) die("openpt");
	*s = open(ptsname(*m), O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (*s < 0) die("slave");
	tcgetattr(*s, &tio); cfmakeraw(&tio); tcsetattr(*s, TCSANOW, &tio);
}
static inline void raise_nofile(void) {
	struct rlimit rl; getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max; setrlimit(RLIMIT_NOFILE, &rl);
}
/* Writer: `total` bytes of "y\n" to fd, in 8 KiB writes (as yes does). */
static inline void writer(int fd, uint64_t total) {
	static char buf[8192];
	for (size_t i = 0; i < sizeof(buf); i += 2) { buf[i] = 'y'; buf[i+1] = '\n'; }
	while (total > 0) {
		size_t n = total < sizeof(buf) ? total : sizeof(buf);
		ssize_t r = write(fd, buf, n);
		if (r < 0) { if (errno == EINTR) continue; _exit(3); }
		total -= r;
	}
	_exit(0);
}
