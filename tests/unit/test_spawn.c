/*
 * test_spawn.c -- spawn.c: a shell starts with descriptors 0-2 only, also
 * where close_range is missing or filtered (a seccomp profile, a kernel
 * before 5.9) and the child falls back to closing them one by one.
 *
 * Each case runs in a forked process, so the seccomp filter stays there.
 */
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/filter.h>
#include <linux/seccomp.h>

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spawn.h"

/* close_range answers err; 0: no filter. */
static void
filter_close_range(int err)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		    offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_close_range, 0, 1),
		BPF_STMT(BPF_RET | BPF_K,
		    SECCOMP_RET_ERRNO | ((unsigned)err & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog p = { sizeof(f) / sizeof(f[0]), f };

	if (err == 0)
		return;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &p) == -1)
		_exit(2);
}

/* In a child: a descriptor of ours (CLOEXEC cleared, as a leak would be),
 * a shell whose ls lists its own, the list read from the pty.  Exit 0 if
 * ls held 0-3 only. */
static void
spawn_case(int err)
{
	static char	    sh[] = "/bin/sh", c[] = "-c",
		cmd[] = "printf 'FDS '; ls /proc/self/fd | tr '\\n' ' '; echo END",
		path[] = "PATH=/usr/bin:/bin";
	char		   *av[] = { sh, c, cmd, NULL };
	char		   *env[] = { path, NULL };
	struct spawn_req    rq = { "/bin/sh", av, env, "/", 24, 80, 022, 0 };
	struct spawn_result res;
	struct pollfd	    pfd;
	char		    buf[512], *p;
	size_t		    len = 0;
	ssize_t		    n;
	int		    leak;

	leak = open("/dev/null", O_RDONLY);
	if (leak == -1 || dup2(leak, 200) == -1)
		_exit(3);
	filter_close_range(err);
	if (spawn_shell(&rq, &res) == -1)
		_exit(4);
	pfd.fd = res.master;
	pfd.events = POLLIN;
	while (len < sizeof(buf) - 1 && strstr(buf, "END") == NULL &&
	    poll(&pfd, 1, 5000) == 1) {
		n = read(res.master, buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		buf[len] = '\0';
	}
	buf[len] = '\0';
	waitpid(res.pid, NULL, 0);
	if ((p = strstr(buf, "FDS ")) == NULL)
		_exit(5);
	/* ls's own table: the pty, its pipe to tr, the pty, and the
	 * directory it reads; never our 200. */
	_exit(strncmp(p, "FDS 0 1 2 3 END", 15) == 0 ? 0 : 6);
}

static int
run_case(int err)
{
	pid_t pid = fork();
	int   st;

	if (pid == 0)
		spawn_case(err);
	cr_assert(pid > 0);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return (WIFEXITED(st) ? WEXITSTATUS(st) : 100);
}

Test(spawn, a_shell_holds_only_its_pty)
{
	cr_assert_eq(run_case(0), 0, "exit %d", run_case(0));
}

Test(spawn, without_close_range_the_shell_still_starts_with_nothing_of_ours)
{
	cr_assert_eq(run_case(ENOSYS), 0, "ENOSYS: exit %d", run_case(ENOSYS));
	cr_assert_eq(run_case(EPERM), 0, "EPERM: exit %d", run_case(EPERM));
}
