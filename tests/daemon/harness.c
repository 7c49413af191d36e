/*
 * harness.c -- the daemon tests' shared harness (harness.h): a real ptyd
 * per test, and the plain requests the tests make of it.
 *
 * Owns: starting ptyd (PTYD_BIN, -f, as our child, with PR_SET_PDEATHSIG
 * so a crashed test leaves nothing) in a fresh temporary directory, with
 * /bin/sh as the shell and HOME inside the directory; stopping it with
 * SIGTERM; removing the directory; one request and its reply.  Does not
 * own: any test, or what a suite checks of the daemon.
 */
#include <criterion/criterion.h>

#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "frame.h"
#include "proto.h"

#include "harness.h"

struct daemon	D;
uint8_t		fbuf[PROTO_HDR_LEN + PROTO_MAX_PAYLOAD];

int64_t
now_ms(void)
{
	return (client_now_ms());
}

void
pause_ms(int ms)
{
	struct timespec	ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

int
daemon_answers(void)
{
	int	fd;

	if ((fd = client_connect(D.sock, now_ms() + 200)) == -1)
		return (0);
	close(fd);
	return (1);
}

/* In the child: set resource to lim (0: leave it), or exit 126. */
static void
child_limit(int resource, rlim_t lim)
{
	struct rlimit	rl = { lim, lim };

	if (lim != 0 && setrlimit(resource, &rl) == -1)
		_exit(126);
}

/* Start ptyd with the common options plus o->extra. */
void
daemon_start_opts(const struct daemon_opts *o)
{
	const char	*argv[64];
	char		*wrap = NULL, *w, *save = NULL, run[96];
	int		 n = 0, i;
	pid_t		 parent = getpid();

	/* A second start in the same test reuses the directory (and finds
	 * whatever the first daemon left there). */
	if (D.dir[0] == '\0') {
		snprintf(D.dir, sizeof(D.dir), "%s", o->dir);
		cr_assert_not_null(mkdtemp(D.dir));
	}
	snprintf(D.sock, sizeof(D.sock), "%s/run/ptyd.sock", D.dir);
	snprintf(D.db, sizeof(D.db), "%s/ptyd.db", D.dir);
	snprintf(D.log, sizeof(D.log), "%s/ptyd.log", D.dir);
	snprintf(D.home, sizeof(D.home), "%s/home", D.dir);
	snprintf(run, sizeof(run), "%s/run", D.dir);
	cr_assert(mkdir(run, 0700) == 0 || errno == EEXIST);
	cr_assert(mkdir(D.home, 0700) == 0 || errno == EEXIST);

	if (o->wrapper && getenv("PTYD_TEST_WRAPPER") != NULL) {
		wrap = strdup(getenv("PTYD_TEST_WRAPPER"));
		for (w = strtok_r(wrap, " ", &save); w != NULL && n < 16;
		    w = strtok_r(NULL, " ", &save))
			argv[n++] = w;
	}
	argv[n++] = PTYD_BIN;
	argv[n++] = "-f";
	/* These tests look inside one daemon (its children, descriptors,
	 * limits): the keeper's own are tested beside the stack
	 * (tests/integration/test_keeper.py). */
	argv[n++] = "--no-keeper";
	argv[n++] = "--socket";
	argv[n++] = D.sock;
	argv[n++] = "--db";
	argv[n++] = D.db;
	argv[n++] = "--log";
	argv[n++] = D.log;
	argv[n++] = "--shell";
	argv[n++] = "/bin/sh";
	for (i = 0; o->extra != NULL && o->extra[i] != NULL && n < 62; i++)
		argv[n++] = o->extra[i];
	argv[n] = NULL;

	D.pid = fork();
	cr_assert_neq(D.pid, -1);
	if (D.pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(1);
		child_limit(RLIMIT_NOFILE, o->nofile);
		child_limit(RLIMIT_FSIZE, o->fsize);
		setenv("HOME", D.home, 1);
		unsetenv("PTYD_SOCKET");
		unsetenv("ENV");
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	free(wrap);
	cr_assert(WAIT_UNTIL(daemon_answers(), 10000),
	    "ptyd did not come up (log %s)", D.log);
}

/* SIGTERM; returns ptyd's wait status, -1 if it had to be killed. */
int
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

/* The suites' .fini: stop ptyd if it runs, remove the directory. */
void
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

/* Requests. */

void
encode(struct frame_out *fo, uint16_t type, const void *msg)
{
	frame_out_init(fo);
	cr_assert_eq(msg_encode(fo, type, msg), 0);
}

/* Send one request on a connection of its own; returns its fd. */
int
request(uint16_t type, const void *msg, int64_t dl)
{
	struct frame_out	fo;
	int			fd;

	encode(&fo, type, msg);
	fd = client_connect(D.sock, dl);
	cr_assert_neq(fd, -1);
	cr_assert_eq(client_send(fd, &fo, dl), 0);
	frame_out_free(&fo);
	return (fd);
}

/* One request; the reply decoded into reply (if not NULL), its type. */
uint16_t
call(uint16_t type, const void *msg, void *reply)
{
	struct frame_out	fo;
	struct frame_hdr	h;

	encode(&fo, type, msg);
	cr_assert_eq(client_call(D.sock, &fo, &h, fbuf, sizeof(fbuf),
	    now_ms() + CALL_MS), 0, "%s: %s", msg_name(type), strerror(errno));
	frame_out_free(&fo);
	if (reply != NULL)
		cr_assert_eq(msg_decode(h.type, fbuf + PROTO_HDR_LEN, h.len,
		    reply), 0);
	return (h.type);
}

pid_t
t_start_opts(const char *sid, int restart)
{
	struct msg_start	m;
	union {
		struct msg_started	ok;
		struct msg_error	err;
	}			r;
	uint16_t		type;

	memset(&m, 0, sizeof(m));
	snprintf(m.sid, sizeof(m.sid), "%s", sid);
	m.restart = (uint8_t)restart;
	snprintf(m.actor, sizeof(m.actor), "test");
	type = call(MSG_START, &m, &r);
	cr_assert_eq(type, MSG_STARTED, "start %s: %s", sid,
	    type == MSG_ERROR ? r.err.message : msg_name(type));
	return (r.ok.pid);
}

pid_t
t_start(const char *sid)
{
	return (t_start_opts(sid, 0));
}

void
t_input(const char *sid, const char *s)
{
	struct msg_input	m;
	union {
		struct msg_input_done	ok;
		struct msg_error	err;
	}			r;
	uint16_t		type;

	memset(&m, 0, sizeof(m));
	snprintf(m.sid, sizeof(m.sid), "%s", sid);
	m.data = (const uint8_t *)s;
	m.len = strlen(s);
	type = call(MSG_INPUT, &m, &r);
	cr_assert_eq(type, MSG_INPUT_DONE, "input %s: %s", sid,
	    type == MSG_ERROR ? r.err.message : msg_name(type));
	cr_assert_eq(r.ok.duplicate, 0);
}

/* Visit every terminal of owner "" until cb returns 1; returns how many. */
int
t_list(int (*cb)(const struct msg_list_item *, void *), void *arg)
{
	struct msg_list		 m;
	struct msg_list_item	 it;
	struct frame_hdr	 h;
	int			 fd, n = 0;
	int64_t			 dl = now_ms() + CALL_MS;

	memset(&m, 0, sizeof(m));
	fd = request(MSG_LIST, &m, dl);
	for (;;) {
		cr_assert_eq(client_recv(fd, &h, fbuf, sizeof(fbuf), dl), 0);
		if (h.type == MSG_LIST_END)
			break;
		cr_assert_eq(h.type, MSG_LIST_ITEM);
		cr_assert_eq(msg_decode(h.type, fbuf + PROTO_HDR_LEN, h.len,
		    &it), 0);
		n++;
		if (cb != NULL && cb(&it, arg))
			break;
	}
	close(fd);
	return (n);
}
