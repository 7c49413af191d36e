/*
 * logtime.h -- one log line of ptyd or ptyd.fcgi, built the same way for
 * both, so that the two logs of one stack read side by side.
 */
#ifndef PTYD_LOGTIME_H
#define PTYD_LOGTIME_H

#include <stdarg.h>
#include <stddef.h>

/* "YYYY-MM-DDTHH:MM:SS.mmmZ " (ISO 8601, UTC: one log reads the same
 * whatever TZ each daemon was started with) into buf; its length, or 0 if
 * it does not fit. */
size_t logtime_format(char *buf, size_t size);

/*
 * "TIME PROG[PID]: LEVEL: message[: strerror(err)]" into line, without
 * a newline and at most size - 2 bytes, so the caller may add one and a
 * NUL (a longer message is cut).  With stamp 0 the line is the message
 * alone (syslog stamps the rest).  err 0: no strerror.  Returns the
 * length; *msg (if not NULL) is where the message starts.
 */
size_t logtime_line(char *line, size_t size, int stamp, const char *prog,
    const char *level, int err, size_t *msg, const char *fmt, va_list ap)
    __attribute__((format(printf, 8, 0)));

#endif /* PTYD_LOGTIME_H */
