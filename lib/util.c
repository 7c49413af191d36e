/*
 * util.c -- small helpers more than one program needs, written once.
 *
 * Owns: making the parent directories of a path, one hex digit's value,
 * descriptors 0-2 kept open.
 * Does not own: what a missing or foreign directory means to the caller
 * (listen.c checks the socket directory itself; store.c the database's).
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

int
util_mkparents(const char *path, mode_t mode, char *failed, size_t size)
{
	char buf[PATH_MAX], *p;
	int  saved;

	if (strlen(path) >= sizeof(buf)) {
		errno = ENAMETOOLONG;
		return (-1);
	}
	strcpy(buf, path);
	for (p = buf + 1; *p != '\0'; p++) {
		if (*p != '/' || p[-1] == '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) == -1 && errno != EEXIST) {
			saved = errno;
			if (failed != NULL && size > 0)
				snprintf(failed, size, "%s", buf);
			errno = saved;
			return (-1);
		}
		*p = '/';
	}
	return (0);
}

int
util_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return (c - '0');
	if (c >= 'a' && c <= 'f')
		return (c - 'a' + 10);
	if (c >= 'A' && c <= 'F')
		return (c - 'A' + 10);
	return (-1);
}

int
util_stdio_open(void)
{
	int fd, i;

	/* In order: /dev/null takes the lowest free number, the one closed. */
	for (i = 0; i <= 2; i++) {
		if (fcntl(i, F_GETFD) != -1 || errno != EBADF)
			continue;
		if ((fd = open("/dev/null", O_RDWR)) == -1)
			return (-1);
		if (fd != i) {
			/* Not possible while 0..i-1 are open; never keep it. */
			close(fd);
			errno = EBADF;
			return (-1);
		}
	}
	return (0);
}
