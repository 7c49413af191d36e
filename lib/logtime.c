/*
 * logtime.c -- the timestamp of a log line (logtime.h).
 */
#include <stdio.h>
#include <time.h>

#include "logtime.h"

size_t
logtime_format(char *buf, size_t size)
{
	struct timespec ts;
	struct tm	tm;
	size_t		n;
	int		r;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	if ((n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm)) == 0)
		return (0);
	r = snprintf(buf + n, size - n, ".%03ldZ ", ts.tv_nsec / 1000000);
	if (r < 0 || (size_t)r >= size - n)
		return (0);
	return (n + (size_t)r);
}
