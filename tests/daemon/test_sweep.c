/*
 * test_sweep.c -- the real ptyd ending what an exited shell leaves behind
 * (ptyd/proc.c), and only that.
 *
 * Owns: the sweep's end-to-end tests: the SIGHUP pass, the delayed SIGKILL
 * pass, and what neither may touch.  Does not own: the general lifecycle
 * tests (test_daemon.c), or the harness both use (harness.h).
 *
 * Each test starts its own ptyd through the harness (PTYD_BIN, -f, as our
 * child, with PR_SET_PDEATHSIG) in a fresh temporary directory with
 * /bin/sh as the shell, and stops it with SIGTERM.  Waits poll a condition
 * against a deadline (WAIT_UNTIL, every 10 ms).  The one timed wait is for
 * something that must NOT happen (a stale SIGKILL pass): it watches for
 * the whole window the pass could fire in, and fails the moment the victim
 * dies.
 */
#include <criterion/criterion.h>

#include <sys/types.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frame.h"
#include "proto.h"

#include "harness.h"

/* ptyd's SIGHUP -> SIGKILL delay (PTYD_KILL_DELAY) and a margin. */
#define KILL_WINDOW_MS	(1500 + 1000)

static void
daemon_start(void)
{
	static const struct daemon_opts	o = { .dir = "/tmp/ptyd-sw-XXXXXX" };

	daemon_start_opts(&o);
}

struct exited {
	const char	*sid;
	int		 exited;
};

static int
exited_cb(const struct msg_list_item *it, void *arg)
{
	struct exited	*e = arg;

	if (strcmp(it->sid, e->sid) == 0 && !it->running &&
	    it->has_exit_code)
		e->exited = 1;
	return (0);
}

/* Whether sid is listed and has exited (shell reaped, pty drained). */
static int
t_exited(const char *sid)
{
	struct exited	e = { sid, 0 };

	(void)t_list(exited_cb, &e);
	return (e.exited);
}

/* The first line of file name in the test directory; "" until written. */
static const char *
dir_line(const char *name)
{
	static char	 line[128];
	char		 path[192], *nl;
	ssize_t		 n;
	int		 fd;

	line[0] = '\0';
	snprintf(path, sizeof(path), "%s/%s", D.dir, name);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return (line);
	n = read(fd, line, sizeof(line) - 1);
	close(fd);
	line[n > 0 ? n : 0] = '\0';
	if ((nl = strchr(line, '\n')) == NULL)
		line[0] = '\0';		/* not complete yet */
	else
		*nl = '\0';
	return (line);
}

/* The pid written (as "pid\n") to name in the test directory; 0 until. */
static pid_t
dir_pid(const char *name)
{
	return ((pid_t)atol(dir_line(name)));
}

/* Whether pid is alive and not a zombie. */
static int
alive(pid_t pid)
{
	char	path[64], buf[512], *p;
	ssize_t	n;
	int	fd;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return (0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return (0);
	buf[n] = '\0';
	if ((p = strrchr(buf, ')')) == NULL)
		return (0);
	return (p[2] != 'Z' && p[2] != 'X');
}

TestSuite(sweep, .fini = daemon_cleanup);

/*
 * Regression: terminal A exits leaving `sleep &`; the SIGHUP pass ends it
 * and armed a SIGKILL pass that, 1.5 s later, matched again by A's tty
 * device number.  A's master closes at once, so a terminal B started in
 * that window is given the same /dev/pts/N, and B's double-forked job
 * (a ptyd child on B's tty, in B's session) was SIGKILLed by A's stale
 * pass.  The pass must kill only what it signalled the first time.
 */
Test(sweep, stale_kill_pass_spares_a_new_terminal_on_the_reused_tty)
{
	char	cmd[256], tty_a[64];
	pid_t	job;
	int	attempt;

	daemon_start();
	/* B gets A's pty when it is the lowest free one; anything else on
	 * the machine opening ptys at that moment can take it first, so
	 * try a few times before calling the setup impossible. */
	for (attempt = 0; attempt < 5; attempt++) {
		char	a[16], b[16];

		snprintf(a, sizeof(a), "a%d", attempt);
		snprintf(b, sizeof(b), "b%d", attempt);
		t_start(a);
		snprintf(cmd, sizeof(cmd), "tty > %s/tty.%s; sleep 1001 & "
		    "exit\n", D.dir, a);
		t_input(a, cmd);
		cr_assert(WAIT_UNTIL(t_exited(a), 5000),
		    "terminal %s never exited", a);
		snprintf(cmd, sizeof(cmd), "tty.%s", a);
		snprintf(tty_a, sizeof(tty_a), "%s", dir_line(cmd));
		cr_assert_neq(tty_a[0], '\0', "no tty recorded for %s", a);

		t_start(b);
		snprintf(cmd, sizeof(cmd), "tty > %s/tty.%s; "
		    "(sleep 1002 & echo $! > %s/job.%s)\n", D.dir, b, D.dir,
		    b);
		t_input(b, cmd);
		snprintf(cmd, sizeof(cmd), "job.%s", b);
		cr_assert(WAIT_UNTIL((job = dir_pid(cmd)) > 0, 5000),
		    "terminal %s never started its job", b);
		snprintf(cmd, sizeof(cmd), "tty.%s", b);
		cr_assert(WAIT_UNTIL(dir_line(cmd)[0] != '\0', 5000));
		if (strcmp(dir_line(cmd), tty_a) != 0)
			continue;	/* another pty won the race */

		cr_assert(alive(job));
		/* A's SIGKILL pass is due 1.5 s after A's shell was reaped,
		 * which is before t_exited(a) held. */
		cr_assert_not(WAIT_UNTIL(!alive(job), KILL_WINDOW_MS),
		    "%s's job on %s was killed by %s's stale sweep", b,
		    tty_a, a);
		cr_assert_eq(daemon_stop_status(5000), 0);
		return;
	}
	cr_skip_test("no run gave the new terminal the old one's tty");
}

/*
 * The SIGKILL pass still does its job without re-matching: leftovers that
 * ignore SIGHUP (a background job, and a double-forked `setsid` child on
 * the tty) are killed, and so is a child one of them forks after the
 * SIGHUP pass (it is in nobody's list but is its parent's descendant).
 */
Test(sweep, kill_pass_ends_hup_ignoring_leftovers_and_what_they_fork_later)
{
	char	cmd[512];
	pid_t	job, daemon_child, late;

	daemon_start();
	t_start("a");
	/* job: ignores SIGHUP (inherited across exec by sleep);
	 * daemon_child: setsid, holds the tty, ignores SIGHUP;
	 * late: the catcher's trap forks it when the SIGHUP pass comes. */
	snprintf(cmd, sizeof(cmd),
	    "sh -c 'trap \"\" HUP; echo $$ > %s/job; exec sleep 1003' & "
	    "(setsid sh -c 'trap \"\" HUP; echo $$ > %s/dc; "
	    "exec sleep 1004' &); "
	    "sh -c 'trap \"sleep 1005 & echo \\$! > %s/late\" HUP; "
	    "echo $$ > %s/catcher; while :; do sleep 1; done' &\n",
	    D.dir, D.dir, D.dir, D.dir);
	t_input("a", cmd);
	cr_assert(WAIT_UNTIL((job = dir_pid("job")) > 0 &&
	    (daemon_child = dir_pid("dc")) > 0 && dir_pid("catcher") > 0,
	    5000), "the leftovers never started");
	t_input("a", "exit\n");
	/* The SIGHUP pass makes the catcher fork `late`. */
	cr_assert(WAIT_UNTIL((late = dir_pid("late")) > 0, 5000),
	    "the SIGHUP pass never reached the catcher");
	cr_assert(alive(job) && alive(daemon_child),
	    "SIGHUP ended a process that ignores it");
	cr_assert(WAIT_UNTIL(!alive(job) && !alive(daemon_child) &&
	    !alive(late), KILL_WINDOW_MS + 2000), "left behind:%s%s%s",
	    alive(job) ? " the job" : "",
	    alive(daemon_child) ? " the double-forked child" : "",
	    alive(late) ? " the child forked after the SIGHUP pass" : "");
	cr_assert(WAIT_UNTIL(t_exited("a"), 5000));
	cr_assert_eq(daemon_stop_status(5000), 0);
}
