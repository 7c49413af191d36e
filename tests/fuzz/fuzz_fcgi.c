/*
 * fuzz_fcgi.c -- fuzz target for what ptyd.fcgi reads first from a
 * FastCGI connection: the guard (fcgi/fcgi_guard.c) decides; whatever it
 * lets through is then handed to libfcgi itself, over a socketpair, the
 * way server.c hands it a connection, and read to the end.  A guard that
 * lets through anything libfcgi asserts on (or overflows on, under ASan)
 * crashes here.
 */
#include <sys/socket.h>

#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <fcgiapp.h>

#include "fcgi_guard.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int	 inited;
	FCGX_Request	 q;
	const char	*why;
	char		 buf[4096];
	int		 sv[2];

	if (fcgi_guard_check(data, size, &why) != FCGI_GUARD_OK)
		return (0);
	/* Whole into the socket buffer, so no writer thread is needed. */
	if (size > 150 * 1024)
		return (0);
	if (!inited) {
		if (FCGX_Init() != 0)
			abort();
		inited = 1;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1)
		abort();
	if (write(sv[1], data, size) != (ssize_t)size)
		abort();
	shutdown(sv[1], SHUT_WR);
	if (FCGX_InitRequest(&q, -1, 0) != 0)
		abort();
	q.ipcFd = sv[0];
	q.keepConnection = 1;
	if (FCGX_Accept_r(&q) >= 0) {
		(void)FCGX_GetParam("REQUEST_METHOD", q.envp);
		while (FCGX_GetStr(buf, sizeof(buf), q.in) > 0)
			;
		FCGX_FPrintF(q.out, "Status: 200\r\n\r\n");
		FCGX_Finish_r(&q);
	}
	if (q.ipcFd != -1)
		close(q.ipcFd);
	FCGX_Free(&q, 0);
	close(sv[1]);
	return (0);
}
