/*
 * fcgi_hello.c -- the baseline FastCGI responder for the benchmarks: answers
 * every request with a fixed small JSON body, doing nothing else.  Run
 * behind the same nginx settings as ptyd.fcgi, it measures what nginx plus
 * libfcgi cost on their own, so ptyd's figures can be given as ratios
 * against it (bench/run).
 *
 *	fcgi_hello SOCKETPATH
 */
#include <sys/stat.h>

#include <fcgiapp.h>
#include <stdio.h>
#include <string.h>

int
main(int argc, char **argv)
{
	static const char	reply[] = "Status: 200 OK\r\n"
	    "Content-Type: application/json; charset=utf-8\r\n"
	    "Cache-Control: no-store\r\n\r\n{\"ok\": true}\n";
	FCGX_Request		req;
	int			fd;

	if (argc != 2) {
		fprintf(stderr, "usage: fcgi_hello SOCKETPATH\n");
		return (2);
	}
	if (FCGX_Init() != 0)
		return (1);
	umask(077);
	if ((fd = FCGX_OpenSocket(argv[1], 128)) < 0) {
		fprintf(stderr, "fcgi_hello: cannot listen on the socket\n");
		return (1);
	}
	FCGX_InitRequest(&req, fd, 0);
	while (FCGX_Accept_r(&req) >= 0) {
		FCGX_PutStr(reply, (int)strlen(reply), req.out);
		FCGX_Finish_r(&req);
	}
	return (0);
}
