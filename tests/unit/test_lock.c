/*
 * test_lock.c -- one ptyd per database (ptyd/lock.c): a held lock refuses
 * with exit 1, a stale one is taken over and names the dead holder.  Each
 * test runs in its own process (Criterion forks).
 */
#include <criterion/criterion.h>

#include <sys/file.h>
#include <sys/stat.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lock.h"
#include "log.h"

static char dir[] = "/tmp/ptyd-lock-XXXXXX";
static char db[64], lockpath[64];

static void
setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
	snprintf(db, sizeof(db), "%s/ptyd.db", dir);
	snprintf(lockpath, sizeof(lockpath), "%s/ptyd.db.lock", dir);
	log_init("-", 0, 0);
}

static void
teardown(void)
{
	unlink(lockpath);
	rmdir(dir);
}

static void
write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	cr_assert_neq(fd, -1);
	cr_assert_eq(write(fd, s, strlen(s)), (ssize_t)strlen(s));
	close(fd);
}

Test(lock, a_stale_lock_is_taken_and_names_the_dead_holder,
    .init = setup, .fini = teardown)
{
	char	    buf[32];
	struct stat st;
	FILE	   *f;

	write_file(lockpath, "4242\n");
	lock_take(db);
	cr_expect_eq(lock_previous_pid(), 4242);
	cr_assert_not_null(f = fopen(lockpath, "r"));
	cr_assert_not_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	cr_expect_eq(atol(buf), (long)getpid());
	cr_assert_eq(stat(lockpath, &st), 0);
	cr_expect_eq(st.st_mode & 0777, 0600);
}

Test(lock, a_held_lock_refuses_with_exit_1, .init = setup,
    .fini = teardown, .exit_code = 1)
{
	int fd;

	/* Another open file description: flock conflicts as between two
	 * processes. */
	write_file(lockpath, "777\n");
	fd = open(lockpath, O_RDWR | O_CLOEXEC);
	cr_assert_neq(fd, -1);
	cr_assert_eq(flock(fd, LOCK_EX | LOCK_NB), 0);
	atexit(teardown); /* fatal exits: .fini would not run */
	lock_take(db);
	cr_assert_fail("lock_take returned while another holds the lock");
}

Test(lock, no_lock_file_yet_is_created, .init = setup, .fini = teardown)
{
	lock_take(db);
	cr_expect_eq(lock_previous_pid(), 0);
	cr_expect_eq(access(lockpath, F_OK), 0);
}
