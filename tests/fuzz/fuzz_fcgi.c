/*
 * fuzz_fcgi.c -- fuzz target for the FastCGI records ptyd.fcgi reads
 * (fcgi/fcgi_guard.c), then for libfcgi behind it.
 *
 * Any input goes to guard_check, which must not crash and must give one
 * of its three answers.  An input it accepts is what libfcgi will parse in
 * production, so it is written to a socketpair and read the way
 * server_serve_conn and http.c read a request: FCGX_Accept_r on the open
 * descriptor, then STDIN to its end.  libfcgi aborting there (its ASSERTs,
 * a stack overflow caught by the sanitizers) or refusing the request is a
 * hole in the guard, and this target aborts so that the run fails.
 */
#include <sys/socket.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fcgiapp.h>

#include "fcgi_guard.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

struct feed {
	int		 fd;
	const uint8_t	*p;
	size_t		 len;
};

/* Write the input, then close: libfcgi sees EOF, never a hang. */
static void *
fuzz_feed(void *arg)
{
	struct feed	*f = arg;
	size_t		 off = 0;
	ssize_t		 n;

	while (off < f->len) {
		if ((n = write(f->fd, f->p + off, f->len - off)) <= 0)
			break;
		off += (size_t)n;
	}
	close(f->fd);
	return (NULL);
}

/* Keep the input that showed a hole, for a unit test (fuzz_main.c runs
 * mutations nobody could otherwise name). */
static void
fuzz_fail(const char *what, const uint8_t *data, size_t size)
{
	FILE	*f;

	fprintf(stderr, "fuzz_fcgi: guard accepted a request %s "
	    "(input in fuzz_fcgi-fail)\n", what);
	if ((f = fopen("fuzz_fcgi-fail", "wb")) != NULL) {
		fwrite(data, 1, size, f);
		fclose(f);
	}
	abort();
}

static void
fuzz_libfcgi(const uint8_t *data, size_t size)
{
	static int	 inited;
	FCGX_Request	 q;
	struct feed	 f;
	pthread_t	 t;
	char		 buf[4096];
	char		**e;
	int		 sv[2], n;

	if (!inited) {
		if (FCGX_Init() != 0)
			abort();
		inited = 1;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1)
		abort();
	f.fd = sv[1];
	f.p = data;
	f.len = size;
	if (pthread_create(&t, NULL, fuzz_feed, &f) != 0)
		abort();

	if (FCGX_InitRequest(&q, -1, 0) != 0)
		abort();
	q.ipcFd = sv[0];
	q.keepConnection = 1;
	if (FCGX_Accept_r(&q) != 0)
		fuzz_fail("libfcgi refused", data, size);
	for (e = q.envp; *e != NULL; e++)
		if (strchr(*e, '=') == NULL)
			abort();
	while ((n = FCGX_GetStr(buf, sizeof(buf), q.in)) > 0)
		;
	if (FCGX_GetError(q.in) != 0 || FCGX_HasSeenEOF(q.in) != EOF)
		fuzz_fail("whose STDIN libfcgi did not read to its end", data,
		    size);
	pthread_join(t, NULL);
	/* As req_finish_fcgi does: free without libfcgi's close. */
	FCGX_Free(&q, 0);
	close(sv[0]);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char	*cause = NULL;
	int		 v;

	v = guard_check(data, size, &cause);
	if (v == GUARD_BAD && cause == NULL)
		abort();
	if (v != GUARD_OK && v != GUARD_MORE && v != GUARD_BAD)
		abort();
	if (v == GUARD_OK)
		fuzz_libfcgi(data, size);
	return (0);
}
