/*
 * logtime.h -- the time at the start of every log line of ptyd and
 * ptyd.fcgi, so that the two logs of one stack read side by side.
 */
#ifndef PTYD_LOGTIME_H
#define PTYD_LOGTIME_H

#include <stddef.h>

/* "YYYY-MM-DDTHH:MM:SS.mmmZ " (ISO 8601, UTC: one log reads the same
 * whatever TZ each daemon was started with) into buf; its length, or 0 if
 * it does not fit. */
size_t logtime_format(char *buf, size_t size);

#endif /* PTYD_LOGTIME_H */
