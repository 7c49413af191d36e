/*
 * unit.c -- temporary directories and the wall clock for the suites on
 * real files (unit.h).
 */
#include <criterion/criterion.h>

#include <sys/stat.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "unit.h"

void
unit_tmpdir(char *dir, size_t size, const char *name)
{
	cr_assert_lt((size_t)snprintf(dir, size, "/tmp/%s.XXXXXX", name), size);
	cr_assert_not_null(mkdtemp(dir));
}

/* A test may have taken a directory's modes away (a read-only state). */
static int
unit_rm(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	(void)chmod(path, 0700);
	return (remove(path));
}

void
unit_rmtree(const char *dir)
{
	(void)nftw(dir, unit_rm, 16, FTW_DEPTH | FTW_PHYS);
}

double
unit_wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9);
}
