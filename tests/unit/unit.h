/*
 * unit.h -- what the suites on real files share (unit.c): a temporary
 * directory per test and its removal, and the wall clock the store's rows
 * are stamped with.
 */
#ifndef TESTS_UNIT_H
#define TESTS_UNIT_H

#include <stddef.h>

/* /tmp/<name>.XXXXXX made into dir (size bytes); fails the test if it
 * cannot be. */
void unit_tmpdir(char *dir, size_t size, const char *name);
/* dir and everything in it, whatever modes a test left on them. */
void unit_rmtree(const char *dir);
/* Seconds since the epoch, as ptyd stamps its rows. */
double unit_wall(void);

#endif /* TESTS_UNIT_H */
