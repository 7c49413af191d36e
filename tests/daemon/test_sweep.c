/*
 * test_sweep.c -- the real ptyd ending what an exited shell leaves behind
 * (ptyd/proc.c), and only that.
 *
 * Owns: the sweep's end-to-end tests: the SIGHUP pass, the delayed SIGKILL
 * pass, and what neither may touch.  Does not own: the general lifecycle
 * tests (test_daemon.c, whose harness this repeats in small).
 *
 * Each test starts its own ptyd (PTYD_BIN, -f, as our child, with
 * PR_SET_PDEATHSIG) in a fresh temporary directory with /bin/sh as the
 * shell, and stops it with SIGTERM.  Waits poll a condition against a
 * deadline.  The one timed wait is for something that must NOT happen
 * (a stale SIGKILL pass): it watches for the whole window the pass could
 * fire in, and fails the moment the victim dies.
 */
#include <criterion/criterion.h>

#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "frame.h"
#include "proto.h"

#define CALL_MS		5000
/* ptyd's SIGHUP -> SIGKILL delay (PTYD_KILL_DELAY) and a margin. */
#define KILL_WINDOW_MS	(1500 + 1000)

struct daemon {
	char	dir[64];
	char	sock[128];
	char	db[128];
	char	log[128];
	char	home[128];
	pid_t	pid;
};

static struct daemon	D;
static uint8_t		fbuf[PROTO_HDR_LEN + PROTO_MAX_PAYLOAD];

static int64_t
now_ms(void)
{
	return (client_now_ms());
}

static void
pause_ms(int ms)
{
	struct timespec	ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Poll cond every 10 ms until it holds or ms pass; returns it. */
#define WAIT_UNTIL(cond, ms) __extension__ ({				\
	int64_t	_dl = now_ms() + (ms);					\
	int	_ok;							\
	while (!(_ok = (cond)) && now_ms() < _dl)			\
		pause_ms(10);						\
	_ok;								\
})

static int
daemon_answers(void)
{
	int	fd;

	if ((fd = client_connect(D.sock, now_ms() + 200)) == -1)
		return (0);
	close(fd);
	return (1);
}

static void
daemon_start(void)
{
	const char	*argv[16];
	char		 run[96];
	int		 n = 0;
	pid_t		 parent = getpid();

	snprintf(D.dir, sizeof(D.dir), "/tmp/ptyd-sw-XXXXXX");
	cr_assert_not_null(mkdtemp(D.dir));
	snprintf(D.sock, sizeof(D.sock), "%s/run/ptyd.sock", D.dir);
	snprintf(D.db, sizeof(D.db), "%s/ptyd.db", D.dir);
	snprintf(D.log, sizeof(D.log), "%s/ptyd.log", D.dir);
	snprintf(D.home, sizeof(D.home), "%s/home", D.dir);
	snprintf(run, sizeof(run), "%s/run", D.dir);
	cr_assert_eq(mkdir(run, 0700), 0);
	cr_assert_eq(mkdir(D.home, 0700), 0);

	argv[n++] = PTYD_BIN;
	argv[n++] = "-f";
	argv[n++] = "--socket";
	argv[n++] = D.sock;
	argv[n++] = "--db";
	argv[n++] = D.db;
	argv[n++] = "--log";
	argv[n++] = D.log;
	argv[n++] = "--shell";
	argv[n++] = "/bin/sh";
	argv[n] = NULL;

	D.pid = fork();
	cr_assert_neq(D.pid, -1);
	if (D.pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(1);
		setenv("HOME", D.home, 1);
		unsetenv("PTYD_SOCKET");
		unsetenv("ENV");
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	cr_assert(WAIT_UNTIL(daemon_answers(), 10000),
	    "ptyd did not come up (log %s)", D.log);
}

/* SIGTERM; returns ptyd's wait status, -1 if it had to be killed. */
static int
daemon_stop_status(int deadline_ms)
{
	int	status = -1;
	pid_t	r = 0;

	if (D.pid <= 0)
		return (0);
	kill(D.pid, SIGTERM);
	if (!WAIT_UNTIL((r = waitpid(D.pid, &status, WNOHANG)) != 0,
	    deadline_ms)) {
		kill(D.pid, SIGKILL);
		waitpid(D.pid, &status, 0);
		D.pid = 0;
		return (-1);
	}
	D.pid = 0;
	return (status);
}

static void
daemon_cleanup(void)
{
	char	cmd[256];

	/* ptyd's shutdown ends every process its terminals left. */
	if (D.pid > 0)
		(void)daemon_stop_status(10000);
	if (D.dir[0] != '\0') {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", D.dir);
		if (system(cmd) != 0)
			fprintf(stderr, "cleanup of %s failed\n", D.dir);
	}
	D.dir[0] = '\0';
}

static uint16_t
call(uint16_t type, const void *msg, void *reply)
{
	struct frame_out	fo;
	struct frame_hdr	h;

	frame_out_init(&fo);
	cr_assert_eq(msg_encode(&fo, type, msg), 0);
	cr_assert_eq(client_call(D.sock, &fo, &h, fbuf, sizeof(fbuf),
	    now_ms() + CALL_MS), 0, "%s: %s", msg_name(type), strerror(errno));
	frame_out_free(&fo);
	if (reply != NULL)
		cr_assert_eq(msg_decode(h.type, fbuf + PROTO_HDR_LEN, h.len,
		    reply), 0);
	return (h.type);
}

static pid_t
t_start(const char *sid)
{
	struct msg_start	m;
	union {
		struct msg_started	ok;
		struct msg_error	err;
	}			r;
	uint16_t		type;

	memset(&m, 0, sizeof(m));
	snprintf(m.sid, sizeof(m.sid), "%s", sid);
	snprintf(m.actor, sizeof(m.actor), "test");
	type = call(MSG_START, &m, &r);
	cr_assert_eq(type, MSG_STARTED, "start %s: %s", sid,
	    type == MSG_ERROR ? r.err.message : msg_name(type));
	return (r.ok.pid);
}

static void
t_input(const char *sid, const char *s)
{
	struct msg_input	m;
	struct msg_error	e;
	uint16_t		type;

	memset(&m, 0, sizeof(m));
	snprintf(m.sid, sizeof(m.sid), "%s", sid);
	m.data = (const uint8_t *)s;
	m.len = strlen(s);
	type = call(MSG_INPUT, &m, &e);
	cr_assert_eq(type, MSG_OK, "input %s: %s", sid,
	    type == MSG_ERROR ? e.message : msg_name(type));
}

/* Whether sid is listed and has exited (shell reaped, pty drained). */
static int
t_exited(const char *sid)
{
	struct msg_list		 m;
	struct msg_list_item	 it;
	struct frame_out	 fo;
	struct frame_hdr	 h;
	int			 fd, exited = 0;
	int64_t			 dl = now_ms() + CALL_MS;

	memset(&m, 0, sizeof(m));
	frame_out_init(&fo);
	cr_assert_eq(msg_encode(&fo, MSG_LIST, &m), 0);
	fd = client_connect(D.sock, dl);
	cr_assert_neq(fd, -1);
	cr_assert_eq(client_send(fd, &fo, dl), 0);
	frame_out_free(&fo);
	for (;;) {
		cr_assert_eq(client_recv(fd, &h, fbuf, sizeof(fbuf), dl), 0);
		if (h.type == MSG_LIST_END)
			break;
		cr_assert_eq(h.type, MSG_LIST_ITEM);
		cr_assert_eq(msg_decode(h.type, fbuf + PROTO_HDR_LEN, h.len,
		    &it), 0);
		if (strcmp(it.sid, sid) == 0 && !it.running &&
		    it.has_exit_code)
			exited = 1;
	}
	close(fd);
	return (exited);
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
