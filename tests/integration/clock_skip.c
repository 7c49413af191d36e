/*
 * clock_skip.c -- LD_PRELOAD shim for test_fcgi_keep_conn: CLOCK_MONOTONIC
 * runs ahead by the whole seconds written in the file named by
 * $CLOCK_SKIP_FILE (0 while it is missing or empty), so a test can let two
 * minutes pass in an instant.  The file is read again at most every 20 ms
 * of real time.  The path is taken when the library loads: ptyd.fcgi wipes
 * its environment once it has started.  Built by the test with the
 * machine's cc.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int (*real_gettime)(clockid_t, struct timespec *);
static char    skip_path[4096];
static int64_t skip_s;		/* seconds ahead, last read */
static int64_t skip_read_at_ns; /* real time of that read; 0: never */

__attribute__((constructor)) static void
skip_init(void)
{
	const char *p = getenv("CLOCK_SKIP_FILE");

	*(void **)&real_gettime = dlsym(RTLD_NEXT, "clock_gettime");
	if (p != NULL && strlen(p) < sizeof(skip_path))
		strcpy(skip_path, p);
}

static int64_t
skip_now(int64_t real_ns)
{
	char	buf[32];
	ssize_t n;
	int	fd;
	int64_t last = __atomic_load_n(&skip_read_at_ns, __ATOMIC_RELAXED);

	if (skip_path[0] == '\0')
		return (0);
	if (last != 0 && real_ns - last < 20 * 1000000LL)
		return (__atomic_load_n(&skip_s, __ATOMIC_RELAXED));
	__atomic_store_n(&skip_read_at_ns, real_ns, __ATOMIC_RELAXED);
	if ((fd = open(skip_path, O_RDONLY | O_CLOEXEC)) == -1)
		return (__atomic_load_n(&skip_s, __ATOMIC_RELAXED));
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n > 0) {
		buf[n] = '\0';
		__atomic_store_n(&skip_s, strtoll(buf, NULL, 10),
		    __ATOMIC_RELAXED);
	}
	return (__atomic_load_n(&skip_s, __ATOMIC_RELAXED));
}

int
clock_gettime(clockid_t id, struct timespec *ts)
{
	int rv;

	if (real_gettime == NULL)
		*(void **)&real_gettime = dlsym(RTLD_NEXT, "clock_gettime");
	rv = real_gettime(id, ts);
	if (rv == 0 && id == CLOCK_MONOTONIC)
		ts->tv_sec += skip_now(
		    (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec);
	return (rv);
}
