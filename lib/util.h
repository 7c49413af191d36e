/*
 * util.h -- small helpers more than one program needs, written once.
 */
#ifndef PTYD_UTIL_H
#define PTYD_UTIL_H

#include <sys/types.h>

#include <stddef.h>

/*
 * mkdir -p of every directory above path's last component (the folder of
 * a file, the parents of a directory), each made with mode when missing.
 * 0, or -1 with errno set and, if failed is not NULL, the directory that
 * could not be made in it.
 */
int util_mkparents(const char *path, mode_t mode, char *failed, size_t size);
/* The value of one hex digit (either case), or -1. */
int util_hexval(int c);
/*
 * Descriptors 0, 1 and 2 open: each one closed at start is opened on
 * /dev/null, so that no socket or file of ours is given its number (a
 * connection on 2 would carry our log lines).  0, or -1 with errno.
 */
int util_stdio_open(void);

#endif /* PTYD_UTIL_H */
