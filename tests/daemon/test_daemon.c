/*
 * test_daemon.c -- the real ptyd, real shells, real SQLite: lifecycle,
 * leaks, strays, stalls, throughput, reaping and shutdown end to end.
 *
 * Each test starts its own ptyd through the shared harness (harness.h:
 * PTYD_BIN, -f, as our child, with PR_SET_PDEATHSIG so a crashed test
 * leaves nothing) in a fresh temporary directory, with /bin/sh as the
 * shell and HOME inside the directory, and stops it with SIGTERM, which
 * must end it with status 0.  Every wait polls a condition against a
 * deadline; nothing sleeps to synchronise.  Here: the options and limits
 * a test starts ptyd with, and the stream, /proc and SQLite checks.
 */
#include <criterion/criterion.h>

#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "client.h"
#include "frame.h"
#include "proto.h"

#include "harness.h"

static rlim_t		nofile_limit;	/* 0: inherit */
static rlim_t		fsize_limit;	/* 0: inherit */

/* Start ptyd with the common options plus extra (NULL-terminated). */
static void
daemon_start_with(const char *const *extra)
{
	struct daemon_opts	o = { .dir = "/tmp/ptyd-dt-XXXXXX",
				    .extra = extra, .nofile = nofile_limit,
				    .fsize = fsize_limit, .wrapper = 1 };

	daemon_start_opts(&o);
}

static void
daemon_start(void)
{
	daemon_start_with(NULL);
}

/* Requests. */

static int
t_close(const char *sid)
{
	struct msg_close	m;
	struct msg_close_reply	r;

	memset(&m, 0, sizeof(m));
	snprintf(m.sid, sizeof(m.sid), "%s", sid);
	snprintf(m.actor, sizeof(m.actor), "test");
	cr_assert_eq(call(MSG_CLOSE, &m, &r), MSG_CLOSE_REPLY);
	return (r.closed);
}

struct find {
	const char		*sid;
	int			 found;
	struct msg_list_item	 item;
};

static int
find_cb(const struct msg_list_item *it, void *arg)
{
	struct find	*f = arg;

	if (strcmp(it->sid, f->sid) != 0)
		return (0);
	f->found = 1;
	f->item = *it;
	return (1);
}

/* The list entry of sid, or found = 0. */
static struct find
t_find(const char *sid)
{
	struct find	f;

	memset(&f, 0, sizeof(f));
	f.sid = sid;
	(void)t_list(find_cb, &f);
	return (f);
}

static int
running_cb(const struct msg_list_item *it, void *arg)
{
	if (it->running)
		(*(int *)arg)++;
	return (0);
}

static int
t_running(void)
{
	int	n = 0;

	(void)t_list(running_cb, &n);
	return (n);
}

static int	t_attach_as(const char *, int, uint64_t, uint64_t *,
		    const char *);

/* Attach; returns the fd with MSG_ATTACHED read, base in *base. */
static int
t_attach(const char *sid, int has_pos, uint64_t pos, uint64_t *base)
{
	return (t_attach_as(sid, has_pos, pos, base, NULL));
}

/* The same, as actor ("user@address" for the audit log; NULL: none). */
static int
t_attach_as(const char *sid, int has_pos, uint64_t pos, uint64_t *base,
    const char *actor)
{
	struct msg_attach	 m;
	struct msg_attached	 a;
	struct frame_hdr	 h;
	int			 fd;
	int64_t			 dl = now_ms() + CALL_MS;

	memset(&m, 0, sizeof(m));
	snprintf(m.sid, sizeof(m.sid), "%s", sid);
	m.has_pos = (uint8_t)has_pos;
	m.pos = pos;
	if (actor != NULL)
		snprintf(m.actor, sizeof(m.actor), "%s", actor);
	fd = request(MSG_ATTACH, &m, dl);
	cr_assert_eq(client_recv(fd, &h, fbuf, sizeof(fbuf), dl), 0);
	cr_assert_eq(h.type, MSG_ATTACHED, "attach %s: %s", sid,
	    msg_name(h.type));
	cr_assert_eq(msg_decode(h.type, fbuf + PROTO_HDR_LEN, h.len, &a), 0);
	if (base != NULL)
		*base = a.base;
	return (fd);
}

/* A viewer's stream, read frame by frame and checked as it goes. */
struct stream {
	int		 fd;
	uint64_t	 base;
	uint64_t	 end;		/* position after the last byte seen */
	uint8_t		*data;		/* everything received */
	size_t		 len, cap;
	int		 exited;
	struct msg_exit	 exit;
	int		 gaps;
	uint64_t	 lost;
};

static void
stream_open(struct stream *st, const char *sid, int has_pos, uint64_t pos)
{
	memset(st, 0, sizeof(*st));
	st->fd = t_attach(sid, has_pos, pos, &st->base);
	st->end = 0;
}

static void
stream_close(struct stream *st)
{
	if (st->fd != -1)
		close(st->fd);
	st->fd = -1;
	free(st->data);
	st->data = NULL;
}

/*
 * Read one frame (waiting until dl) and check the stream invariants: ids
 * strictly increase, consecutive outputs are contiguous.  Returns 1 for a
 * frame, 0 on timeout, -1 when the connection ended.
 */
static int
stream_step(struct stream *st, int64_t dl)
{
	struct frame_hdr	h;
	struct msg_output	o;
	struct msg_gap		g;

	if (client_recv(st->fd, &h, fbuf, sizeof(fbuf), dl) == -1) {
		if (errno == ETIMEDOUT)
			return (0);
		return (-1);
	}
	cr_assert_eq(st->exited, 0, "a frame after MSG_EXIT");
	switch (h.type) {
	case MSG_OUTPUT:
		cr_assert_eq(msg_decode(h.type, fbuf + PROTO_HDR_LEN, h.len,
		    &o), 0);
		cr_assert_gt(o.len, 0);
		cr_assert_leq(o.len, PROTO_OUTPUT_CHUNK);
		if (st->end != 0)
			cr_assert_eq(o.end - o.len, st->end,
			    "output not contiguous: %llu after %llu",
			    (unsigned long long)(o.end - o.len),
			    (unsigned long long)st->end);
		cr_assert_geq(o.end - o.len, st->base);
		st->end = o.end;
		if (st->len + o.len > st->cap) {
			st->cap = (st->len + o.len) * 2;
			st->data = realloc(st->data, st->cap);
			cr_assert_not_null(st->data);
		}
		memcpy(st->data + st->len, o.data, o.len);
		st->len += o.len;
		return (1);
	case MSG_GAP:
		cr_assert_eq(msg_decode(h.type, fbuf + PROTO_HDR_LEN, h.len,
		    &g), 0);
		cr_assert_eq(st->len, 0, "a gap only comes first");
		st->gaps++;
		st->lost = g.lost;
		st->end = g.pos;
		return (1);
	case MSG_EXIT:
		cr_assert_eq(msg_decode(h.type, fbuf + PROTO_HDR_LEN, h.len,
		    &st->exit), 0);
		if (st->end != 0)
			cr_assert_eq(st->exit.pos, st->end + 1);
		st->exited = 1;
		return (1);
	default:
		cr_assert_fail("unexpected %s in a stream", msg_name(h.type));
	}
	return (-1);
}

static int
stream_has(const struct stream *st, const char *needle)
{
	return (st->len > 0 && memmem(st->data, st->len, needle,
	    strlen(needle)) != NULL);
}

/* Read until needle shows up or dl passes. */
static int
stream_wait_for(struct stream *st, const char *needle, int ms)
{
	int64_t	dl = now_ms() + ms;

	while (!stream_has(st, needle)) {
		if (stream_step(st, dl) <= 0)
			return (stream_has(st, needle));
	}
	return (1);
}

/* Read until MSG_EXIT, then expect the connection to end. */
static void
stream_wait_exit(struct stream *st, int ms)
{
	int64_t	dl = now_ms() + ms;

	while (!st->exited)
		cr_assert_eq(stream_step(st, dl), 1, "no MSG_EXIT in time");
	cr_assert_eq(stream_step(st, now_ms() + 3000), -1,
	    "ptyd keeps the stream open after MSG_EXIT");
}

/* /proc. */

static int
fd_count(pid_t pid)
{
	char		 path[64];
	DIR		*d;
	struct dirent	*de;
	int		 n = 0;

	snprintf(path, sizeof(path), "/proc/%ld/fd", (long)pid);
	if ((d = opendir(path)) == NULL)
		return (-1);
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return (n);
}

static int
read_file(const char *path, char *buf, size_t size)
{
	ssize_t	n;
	int	fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return (-1);
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return (-1);
	buf[n] = '\0';
	return ((int)n);
}

static char
proc_state(pid_t pid)
{
	char	path[64], buf[512], *p;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if (read_file(path, buf, sizeof(buf)) <= 0 ||
	    (p = strrchr(buf, ')')) == NULL)
		return ('?');
	return (p[2]);
}

/* ptyd's children; zombies counted into *zombies. */
static int
child_count(pid_t pid, int *zombies)
{
	char	 path[64], buf[65536], *p, *e;
	long	 c;
	int	 n = 0;

	if (zombies != NULL)
		*zombies = 0;
	snprintf(path, sizeof(path), "/proc/%ld/task/%ld/children", (long)pid,
	    (long)pid);
	if (read_file(path, buf, sizeof(buf)) < 0)
		return (-1);
	for (p = buf;; p = e) {
		c = strtol(p, &e, 10);
		if (e == p)
			break;
		n++;
		if (zombies != NULL && proc_state((pid_t)c) == 'Z')
			(*zombies)++;
	}
	return (n);
}

/* The targets of ptyd's fds, for a failure message. */
static const char *
fd_list(pid_t pid)
{
	static char	 out[4096];
	char		 path[300], target[256];
	DIR		*d;
	struct dirent	*de;
	size_t		 n = 0;
	ssize_t		 r;

	out[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%ld/fd", (long)pid);
	if ((d = opendir(path)) == NULL)
		return ("?");
	while ((de = readdir(d)) != NULL && n < sizeof(out) - 300) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/fd/%s", (long)pid,
		    de->d_name);
		if ((r = readlink(path, target, sizeof(target) - 1)) < 0)
			r = 0;
		target[r] = '\0';
		n += (size_t)snprintf(out + n, sizeof(out) - n, " %s=%s",
		    de->d_name, target);
	}
	closedir(d);
	return (out);
}

/*
 * The fd count once the probe connection of daemon_start is closed: its
 * EOF was reported no later than the first request below, so by the time
 * the second is answered ptyd has closed it.
 */
static int
settled_fd_count(void)
{
	int	i, n, min = -1;

	(void)t_list(NULL, NULL);
	(void)t_list(NULL, NULL);
	/* ptyd may hold a /proc or database fd for an instant: take the
	 * least of a few samples as the resting count. */
	for (i = 0; i < 5; i++) {
		n = fd_count(D.pid);
		if (min == -1 || n < min)
			min = n;
		pause_ms(20);
	}
	return (min);
}

static int
back_to(int fds, int kids)
{
	int	z;

	return (fd_count(D.pid) == fds && child_count(D.pid, &z) == kids &&
	    z == 0);
}

/* Whether a live process runs exactly `argv0 arg` (NUL-separated). */
static int
proc_running(const char *argv0, const char *arg)
{
	char		 path[300], buf[256];
	DIR		*d;
	struct dirent	*de;
	int		 n, found = 0;
	size_t		 l0 = strlen(argv0);

	if ((d = opendir("/proc")) == NULL)
		return (0);
	while (!found && (de = readdir(d)) != NULL) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
		if ((n = read_file(path, buf, sizeof(buf))) <= 0)
			continue;
		if ((size_t)n == l0 + strlen(arg) + 2 &&
		    strcmp(buf, argv0) == 0 && strcmp(buf + l0 + 1, arg) == 0 &&
		    proc_state((pid_t)atol(de->d_name)) != 'Z')
			found = 1;
	}
	closedir(d);
	return (found);
}

/* No .timeout here: make check's tap-wrap gives each test 60 s, and a
 * run under valgrind passes a longer --timeout. */
TestSuite(daemon, .fini = daemon_cleanup);

Test(daemon, shell_output_input_resize_and_exit_code)
{
	struct stream	st;
	pid_t		pid;

	daemon_start();
	pid = t_start("a");
	cr_assert_gt(pid, 0);
	stream_open(&st, "a", 0, 0);
	t_input("a", "echo hello-$((6*7)) $COLUMNS $LINES $TERM $PTYD\n");
	cr_assert(stream_wait_for(&st, "hello-42 80 24 xterm-256color 1",
	    5000));
	struct msg_resize r;
	memset(&r, 0, sizeof(r));
	snprintf(r.sid, sizeof(r.sid), "a");
	r.rows = 33;
	r.cols = 101;
	cr_assert_eq(call(MSG_RESIZE, &r, NULL), MSG_OK);
	t_input("a", "stty size\n");
	cr_assert(stream_wait_for(&st, "33 101", 5000));
	t_input("a", "exit 7\n");
	stream_wait_exit(&st, 5000);
	cr_assert_eq(st.exit.has_exit_code, 1);
	cr_assert_eq(st.exit.exit_code, 7);
	cr_assert_str_eq(st.exit.reason, "exit");
	cr_assert(WAIT_UNTIL(kill(pid, 0) == -1, 3000), "shell not reaped");
	stream_close(&st);
	/* Lingering: a late viewer still gets the tail and the exit. */
	stream_open(&st, "a", 0, 0);
	stream_wait_exit(&st, 5000);
	cr_assert(stream_has(&st, "hello-42"));
	cr_assert_eq(st.exit.exit_code, 7);
	stream_close(&st);
	cr_assert_eq(daemon_stop_status(5000), 0);
}

Test(daemon, resume_from_a_position_sends_only_newer_output)
{
	struct stream	st, st2;
	uint64_t	mark;

	daemon_start();
	t_start("a");
	stream_open(&st, "a", 0, 0);
	t_input("a", "echo one-$((1+1))\n");
	cr_assert(stream_wait_for(&st, "one-2", 5000));
	mark = st.end;
	stream_close(&st);
	t_input("a", "echo two-$((2+1))\n");
	stream_open(&st2, "a", 1, mark);
	cr_assert(stream_wait_for(&st2, "two-3", 5000));
	cr_assert_not(stream_has(&st2, "one-2"), "old output replayed");
	cr_assert_eq(st2.gaps, 0);
	stream_close(&st2);
}

Test(daemon, restart_gives_ids_above_the_old_incarnation)
{
	struct stream	old, fresh;
	uint64_t	stale;

	daemon_start();
	t_start("a");
	stream_open(&old, "a", 0, 0);
	t_input("a", "echo first\n");
	cr_assert(stream_wait_for(&old, "first", 5000));
	t_start_opts("a", 1);
	stream_wait_exit(&old, 5000);
	cr_assert_str_eq(old.exit.reason, "restarted");
	stale = old.exit.pos;
	stream_open(&fresh, "a", 1, stale);
	cr_assert_gt(fresh.base, stale, "new ids must exceed every old one");
	t_input("a", "echo second\n");
	cr_assert(stream_wait_for(&fresh, "second", 5000));
	cr_assert_not(stream_has(&fresh, "first"));
	cr_assert_eq(fresh.gaps, 0, "a stale id replays the new backlog");
	stream_close(&old);
	stream_close(&fresh);
}

Test(daemon, start_close_cycles_leave_no_fd_child_or_zombie)
{
	char	sid[32];
	int	fds, kids, i;

	daemon_start();
	fds = settled_fd_count();
	kids = child_count(D.pid, NULL);
	cr_assert_geq(fds, 0);
	for (i = 0; i < 300; i++) {
		snprintf(sid, sizeof(sid), "c%d", i);
		cr_assert_gt(t_start(sid), 0);
		cr_assert_eq(t_close(sid), 1);
	}
	cr_assert(WAIT_UNTIL(back_to(fds, kids), 15000),
	    "fds %d (was %d), children %d (was %d):%s", fd_count(D.pid), fds,
	    child_count(D.pid, NULL), kids, fd_list(D.pid));
	cr_assert_eq(t_list(NULL, NULL), 0);
	cr_assert_eq(daemon_stop_status(5000), 0);
}

Test(daemon, shells_that_exit_by_themselves_leave_no_fd_child_or_zombie)
{
	static const char *const opts[] = { "--max-terminals", "400", NULL };
	char	sid[32];
	int	fds, kids, i;

	daemon_start_with(opts);
	fds = settled_fd_count();
	kids = child_count(D.pid, NULL);
	for (i = 0; i < 300; i++) {
		snprintf(sid, sizeof(sid), "e%d", i);
		cr_assert_gt(t_start(sid), 0);
		t_input(sid, "exit 5\n");
	}
	cr_assert(WAIT_UNTIL(t_running() == 0, 20000), "%d still running",
	    t_running());
	cr_assert(WAIT_UNTIL(back_to(fds, kids), 15000),
	    "fds %d (was %d), children %d (was %d):%s", fd_count(D.pid), fds,
	    child_count(D.pid, NULL), kids, fd_list(D.pid));
	{
		struct find f = t_find("e123");

		cr_assert(f.found, "an exited terminal lingers");
		cr_assert_eq(f.item.running, 0);
		cr_assert_eq(f.item.has_exit_code, 1);
		cr_assert_eq(f.item.exit_code, 5);
	}
	cr_assert_eq(daemon_stop_status(5000), 0);
}

static void
check_no_strays(int self_exit)
{
	char	a1[16], a2[16], cmd[128];
	int	n;

	srand((unsigned int)(getpid() ^ time(NULL)));
	n = 100000 + rand() % 800000;
	snprintf(a1, sizeof(a1), "%d", n);
	snprintf(a2, sizeof(a2), "%d", n + 1);
	daemon_start();
	t_start("a");
	snprintf(cmd, sizeof(cmd), "sleep %s & (setsid sleep %s &)\n", a1,
	    a2);
	t_input("a", cmd);
	cr_assert(WAIT_UNTIL(proc_running("sleep", a1) &&
	    proc_running("sleep", a2), 5000), "the sleeps never ran");
	if (self_exit)
		t_input("a", "exit 0\n");
	else
		cr_assert_eq(t_close("a"), 1);
	cr_assert(WAIT_UNTIL(!proc_running("sleep", a1) &&
	    !proc_running("sleep", a2), 8000), "left behind: %s%s",
	    proc_running("sleep", a1) ? "the background job " : "",
	    proc_running("sleep", a2) ? "the double-forked child" : "");
	cr_assert(WAIT_UNTIL(child_count(D.pid, NULL) == 0, 5000),
	    "ptyd still has children");
}

Test(daemon, close_ends_background_jobs_and_double_forked_children)
{
	check_no_strays(0);
}

Test(daemon, shell_exit_ends_background_jobs_and_double_forked_children)
{
	check_no_strays(1);
}

Test(daemon, ten_megabytes_arrive_complete_and_in_order)
{
	struct stream	 st;
	char		*ref, *start;
	size_t		 reflen = 0, cap = 11 * 1024 * 1024;
	int		 i;

	ref = malloc(cap);
	cr_assert_not_null(ref);
	for (i = 1; i <= 1400000; i++)
		reflen += (size_t)snprintf(ref + reflen, cap - reflen, "%d\n",
		    i);
	cr_assert_gt(reflen, 10000000);

	daemon_start();
	t_start("big");
	stream_open(&st, "big", 0, 0);
	t_input("big", "stty -echo -onlcr; echo START; seq 1 1400000; "
	    "exit 0\n");
	stream_wait_exit(&st, 30000);
	cr_assert_eq(st.exit.exit_code, 0);
	cr_assert_eq(st.gaps, 0);
	start = memmem(st.data, st.len, "START\n", 6);
	cr_assert_not_null(start);
	start += 6;
	cr_assert_eq((size_t)(st.data + st.len - (uint8_t *)start), reflen,
	    "got %zu bytes after the marker, want %zu",
	    (size_t)(st.data + st.len - (uint8_t *)start), reflen);
	cr_assert_eq(memcmp(start, ref, reflen), 0, "bytes differ");
	stream_close(&st);
	free(ref);
}

static int
subscribers(const char *sid)
{
	struct find	f = t_find(sid);

	return (f.found ? (int)f.item.subscribers : -1);
}

Test(daemon, stuck_viewer_is_cut_off_while_others_keep_flowing)
{
	static const char *const opts[] = { "--stall-timeout", "2",
	    "--ring-size", "65536", NULL };
	struct stream	 fast, other;
	struct pollfd	 pfd[2];
	uint64_t	 stuck_base;
	uint64_t	 fast_at_cut = 0;
	int		 stuck, rcv = 4096, marks_sent = 0, cut = 0;
	int64_t		 t0, next_mark, cut_at = 0;
	char		 mark[64];
	struct frame_hdr h;

	daemon_start_with(opts);
	t_start("yes");
	t_start("other");
	stuck = t_attach("yes", 0, 0, &stuck_base);
	setsockopt(stuck, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	stream_open(&fast, "yes", 0, 0);
	stream_open(&other, "other", 0, 0);
	t_input("yes", "yes\n");
	t0 = next_mark = now_ms();
	while (now_ms() - t0 < 6000) {
		if (now_ms() >= next_mark) {
			snprintf(mark, sizeof(mark), "echo mark-%d\n",
			    marks_sent++);
			t_input("other", mark);
			next_mark += 250;
		}
		pfd[0].fd = fast.fd;
		pfd[1].fd = other.fd;
		pfd[0].events = pfd[1].events = POLLIN;
		if (poll(pfd, 2, 50) > 0) {
			if (pfd[0].revents)
				cr_assert_eq(stream_step(&fast, now_ms() +
				    2000), 1);
			if (pfd[1].revents)
				cr_assert_eq(stream_step(&other, now_ms() +
				    2000), 1);
		}
		/* Its bytes are not looked at: keep the buffer small. */
		if (fast.len > (1 << 20))
			fast.len = 0;
		if (!cut && now_ms() - t0 > 1000 && now_ms() - t0 < 1500)
			cr_assert_eq(subscribers("yes"), 2,
			    "cut off before the stall timeout");
		if (!cut && subscribers("yes") == 1) {
			cut = 1;
			cut_at = now_ms() - t0;
			fast_at_cut = fast.end;
		}
	}
	cr_assert(cut, "the stuck viewer was never cut off");
	cr_assert_geq(cut_at, 1500, "cut at %lld ms", (long long)cut_at);
	cr_assert_leq(cut_at, 4500, "cut at %lld ms", (long long)cut_at);
	cr_assert_gt(fast.end, 0);
	cr_assert_gt(fast.end, fast_at_cut + 65536,
	    "the fast viewer did not resume after the cut");
	snprintf(mark, sizeof(mark), "mark-%d", marks_sent - 3);
	cr_assert(stream_has(&other, mark),
	    "another terminal stopped flowing during the stall");
	/* The stuck viewer's connection ends without MSG_EXIT. */
	for (;;) {
		if (client_recv(stuck, &h, fbuf, sizeof(fbuf), now_ms() + 3000)
		    == -1) {
			cr_assert_eq(errno, ECONNRESET, "%s", strerror(errno));
			break;
		}
		cr_assert_neq(h.type, MSG_EXIT);
	}
	close(stuck);
	cr_assert_eq(subscribers("yes"), 1);
	cr_assert(t_find("yes").item.running, "the terminal is intact");
	stream_close(&fast);
	stream_close(&other);
}

static int
db_count(const char *sql)
{
	sqlite3		*db;
	sqlite3_stmt	*st;
	int		 n = -1;

	if (sqlite3_open_v2(D.db, &db, SQLITE_OPEN_READONLY, NULL) !=
	    SQLITE_OK) {
		sqlite3_close(db);
		return (-1);
	}
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			n = sqlite3_column_int(st, 0);
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	return (n);
}

Test(daemon, reaper_takes_the_unwatched_and_spares_the_watched)
{
	static const char *const opts[] = { "--idle-grace", "2",
	    "--reap-interval", "1", NULL };
	struct stream	st;
	pid_t		idle_pid;
	int64_t		t0;

	daemon_start_with(opts);
	idle_pid = t_start("idle");
	t_start("watched");
	stream_open(&st, "watched", 0, 0);
	t0 = now_ms();
	cr_assert(WAIT_UNTIL(!t_find("idle").found, 8000),
	    "the unwatched terminal was not reaped");
	cr_assert_geq(now_ms() - t0, 1500, "reaped before its grace");
	cr_assert(WAIT_UNTIL(kill(idle_pid, 0) == -1, 5000));
	pause_ms(3000);		/* a few more reaper ticks */
	cr_assert(t_find("watched").found, "a watched terminal was reaped");
	cr_assert(WAIT_UNTIL(db_count("SELECT count(*) FROM terminal_events "
	    "WHERE kind = 'reap' AND session_id = 'idle'") == 1, 5000),
	    "no reap in the audit log");
	cr_assert(WAIT_UNTIL(db_count("SELECT count(*) FROM terminals WHERE "
	    "session_id = 'idle' AND state = 'reaped'") == 1, 5000));
	cr_assert_eq(db_count("SELECT count(*) FROM terminal_events WHERE "
	    "kind = 'reap' AND session_id = 'watched'"), 0);
	stream_close(&st);
}

Test(daemon, sigterm_ends_every_terminal_tells_viewers_and_exits_zero)
{
	struct stream	st;
	pid_t		a, b;
	int		status;
	int64_t		t0;

	daemon_start();
	a = t_start("a");
	b = t_start("b");
	t_input("b", "trap '' HUP\n");	/* b ignores SIGHUP: needs SIGKILL */
	stream_open(&st, "a", 0, 0);
	t_input("a", "echo ready-$((5*5))\n");
	cr_assert(stream_wait_for(&st, "ready-25", 5000));
	t0 = now_ms();
	kill(D.pid, SIGTERM);
	stream_wait_exit(&st, 5000);
	cr_assert_str_eq(st.exit.reason, "shutdown");
	cr_assert(WAIT_UNTIL(waitpid(D.pid, &status, WNOHANG) == D.pid, 5000),
	    "ptyd did not exit");
	D.pid = 0;
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	cr_assert_lt(now_ms() - t0, 4000);
	cr_assert_eq(kill(a, 0), -1);
	cr_assert_eq(kill(b, 0), -1, "a shell ignoring SIGHUP survived");
	cr_assert_eq(access(D.sock, F_OK), -1, "socket left behind");
	cr_assert(WAIT_UNTIL(db_count("SELECT count(*) FROM terminals WHERE "
	    "state = 'shutdown'") == 2, 2000));
	stream_close(&st);
}

Test(daemon, bad_frames_drop_the_connection_not_the_daemon)
{
	uint8_t			 hdr[PROTO_HDR_LEN];
	struct frame_hdr	 h;
	struct msg_error	 e;
	int			 fd;

	daemon_start();
	/* Wrong version: answered, then closed. */
	fd = client_connect(D.sock, now_ms() + CALL_MS);
	frame_hdr_encode(hdr, MSG_STATS, 0);
	hdr[2] = PROTO_VERSION + 1;
	cr_assert_eq(write(fd, hdr, sizeof(hdr)), (ssize_t)sizeof(hdr));
	cr_assert_eq(client_recv(fd, &h, fbuf, sizeof(fbuf), now_ms() +
	    CALL_MS), 0);
	cr_assert_eq(h.type, MSG_ERROR);
	cr_assert_eq(msg_decode(h.type, fbuf + PROTO_HDR_LEN, h.len, &e), 0);
	cr_assert_eq(e.code, PROTO_ERR_VERSION);
	close(fd);
	/* Oversized: refused before anything is allocated. */
	fd = client_connect(D.sock, now_ms() + CALL_MS);
	frame_hdr_encode(hdr, MSG_START, 0xffffffffu);
	cr_assert_eq(write(fd, hdr, sizeof(hdr)), (ssize_t)sizeof(hdr));
	cr_assert_eq(client_recv(fd, &h, fbuf, sizeof(fbuf), now_ms() +
	    CALL_MS), 0);
	cr_assert_eq(h.type, MSG_ERROR);
	cr_assert_eq(client_recv(fd, &h, fbuf, sizeof(fbuf), now_ms() +
	    CALL_MS), -1);
	close(fd);
	/* A reply type sent as a request, and a malformed payload. */
	fd = client_connect(D.sock, now_ms() + CALL_MS);
	frame_hdr_encode(hdr, MSG_OK, 0);
	cr_assert_eq(write(fd, hdr, sizeof(hdr)), (ssize_t)sizeof(hdr));
	cr_assert_eq(client_recv(fd, &h, fbuf, sizeof(fbuf), now_ms() +
	    CALL_MS), 0);
	cr_assert_eq(h.type, MSG_ERROR);
	close(fd);
	fd = client_connect(D.sock, now_ms() + CALL_MS);
	frame_hdr_encode(hdr, MSG_CLOSE, 3);
	cr_assert_eq(write(fd, hdr, sizeof(hdr)), (ssize_t)sizeof(hdr));
	cr_assert_eq(write(fd, "abc", 3), 3);
	cr_assert_eq(client_recv(fd, &h, fbuf, sizeof(fbuf), now_ms() +
	    CALL_MS), 0);
	cr_assert_eq(msg_decode(h.type, fbuf + PROTO_HDR_LEN, h.len, &e), 0);
	cr_assert_eq(e.code, PROTO_ERR_BAD_REQUEST);
	close(fd);
	/* Still serving. */
	cr_assert_gt(t_start("ok"), 0);
	cr_assert_eq(daemon_stop_status(5000), 0);
}

Test(daemon, errors_for_unknown_terminals_limits_and_bad_requests)
{
	static const char *const opts[] = { "--max-viewers", "1", NULL };
	struct msg_start	 m;
	struct msg_input	 in;
	struct msg_attach	 at;
	struct msg_error	 e;
	int			 fd;

	daemon_start_with(opts);
	memset(&in, 0, sizeof(in));
	snprintf(in.sid, sizeof(in.sid), "nope");
	in.data = (const uint8_t *)"x";
	in.len = 1;
	cr_assert_eq(call(MSG_INPUT, &in, &e), MSG_ERROR);
	cr_assert_eq(e.code, PROTO_ERR_NOT_RUNNING);
	memset(&at, 0, sizeof(at));
	snprintf(at.sid, sizeof(at.sid), "nope");
	cr_assert_eq(call(MSG_ATTACH, &at, &e), MSG_ERROR);
	cr_assert_eq(e.code, PROTO_ERR_NOT_RUNNING);
	memset(&m, 0, sizeof(m));
	snprintf(m.sid, sizeof(m.sid), "bad id");
	cr_assert_eq(call(MSG_START, &m, &e), MSG_ERROR);
	cr_assert_eq(e.code, PROTO_ERR_BAD_REQUEST);
	snprintf(m.sid, sizeof(m.sid), "w");
	snprintf(m.workspace, sizeof(m.workspace), "/etc");
	cr_assert_eq(call(MSG_START, &m, &e), MSG_ERROR);
	cr_assert_eq(e.code, PROTO_ERR_BAD_REQUEST);
	cr_assert_str_eq(e.message, "workspace not allowed");
	t_start("v");
	fd = t_attach("v", 0, 0, NULL);
	snprintf(at.sid, sizeof(at.sid), "v");
	cr_assert_eq(call(MSG_ATTACH, &at, &e), MSG_ERROR);
	cr_assert_eq(e.code, PROTO_ERR_VIEWER_LIMIT);
	close(fd);
	cr_assert_eq(t_close("nope"), 0);
}

Test(daemon, socket_directory_must_be_private)
{
	char	dir[64], sock[128], cmd[300];
	int	status;
	pid_t	pid;

	snprintf(dir, sizeof(dir), "/tmp/ptyd-dt-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(chmod(dir, 0755), 0);
	snprintf(sock, sizeof(sock), "%s/ptyd.sock", dir);
	pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);

		dup2(devnull, 2);
		execl(PTYD_BIN, PTYD_BIN, "-f", "--socket", sock, "--db",
		    "/dev/null/x", (char *)NULL);
		_exit(127);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1,
	    "ptyd accepted a group/other-accessible socket directory");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

Test(daemon, second_daemon_on_the_same_socket_refuses_and_stale_is_replaced)
{
	const char	*argv[] = { PTYD_BIN, "-f", "--socket", NULL, "--db",
			    NULL, NULL };
	int		 status;
	pid_t		 pid;

	daemon_start();
	argv[3] = D.sock;
	argv[5] = D.db;
	pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);

		dup2(devnull, 2);
		execv(PTYD_BIN, (char *const *)argv);
		_exit(127);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1);
	cr_assert(daemon_answers(), "the first daemon lost its socket");
	/* A daemon killed outright leaves its socket; the next replaces it. */
	kill(D.pid, SIGKILL);
	waitpid(D.pid, &status, 0);
	D.pid = 0;
	cr_assert_eq(access(D.sock, F_OK), 0);
	daemon_start_with(NULL);
	cr_assert_gt(t_start("after"), 0);
}

/* A MSG_STATS round trip, without asserting (for polling). */
static int
stats_answered(void)
{
	struct frame_out	fo;
	struct frame_hdr	h;
	int			r;

	encode(&fo, MSG_STATS, NULL);
	r = client_call(D.sock, &fo, &h, fbuf, sizeof(fbuf), now_ms() + 500);
	frame_out_free(&fo);
	return (r == 0 && h.type == MSG_STATS_REPLY);
}

static uint64_t
db_errors(void)
{
	struct msg_stats_reply	r;

	cr_assert_eq(call(MSG_STATS, NULL, &r), MSG_STATS_REPLY);
	return (r.db_errors);
}

/* CPU seconds (user + system) ptyd has used. */
static double
cpu_seconds(pid_t pid)
{
	char			 path[64], buf[1024], *p;
	unsigned long		 ut, st;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if (read_file(path, buf, sizeof(buf)) <= 0 ||
	    (p = strrchr(buf, ')')) == NULL)
		return (-1);
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
	    &ut, &st) != 2)
		return (-1);
	return ((double)(ut + st) / (double)sysconf(_SC_CLK_TCK));
}

Test(daemon, out_of_descriptors_sheds_connections_without_spinning)
{
	int	fds[80], i, n = 0;
	double	cpu0, cpu1;

	nofile_limit = 48;
	daemon_start();
	/* Idle connections pin ptyd's descriptors until it runs out. */
	for (i = 0; i < 80; i++) {
		fds[n] = client_connect(D.sock, now_ms() + 1000);
		if (fds[n] != -1)
			n++;
	}
	pause_ms(300);
	cpu0 = cpu_seconds(D.pid);
	pause_ms(1000);
	cpu1 = cpu_seconds(D.pid);
	/* Backing off, ptyd wakes ten times a second; spinning would burn
	 * the whole second (a wrapper such as valgrind costs 10x). */
	cr_assert_lt(cpu1 - cpu0, getenv("PTYD_TEST_WRAPPER") ? 0.9 : 0.3,
	    "ptyd spins at EMFILE: %.2f s of CPU", cpu1 - cpu0);
	cr_assert_lt(fd_count(D.pid), 49);
	for (i = 0; i < n; i++)
		close(fds[i]);
	/* Once they are gone, service resumes. */
	cr_assert(WAIT_UNTIL(stats_answered(), 5000));
	cr_assert_gt(t_start("after"), 0);
	cr_assert_eq(t_close("after"), 1);
	cr_assert_eq(daemon_stop_status(5000), 0);
}

Test(daemon, sighup_reopens_the_log)
{
	char	moved[160];

	daemon_start();
	snprintf(moved, sizeof(moved), "%s.1", D.log);
	cr_assert_eq(rename(D.log, moved), 0);
	kill(D.pid, SIGHUP);
	cr_assert(WAIT_UNTIL(access(D.log, F_OK) == 0, 5000),
	    "SIGHUP did not reopen the log");
	cr_assert(stats_answered(), "SIGHUP must not stop the daemon");
	cr_assert_eq(daemon_stop_status(5000), 0);
}

/* A text column of the one row sql selects, into buf ("" if none). */
static const char *
db_text(const char *sql, char *buf, size_t size)
{
	sqlite3		*db;
	sqlite3_stmt	*st;
	const unsigned char *p;

	buf[0] = '\0';
	if (sqlite3_open_v2(D.db, &db, SQLITE_OPEN_READONLY, NULL) !=
	    SQLITE_OK) {
		sqlite3_close(db);
		return (buf);
	}
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW &&
		    (p = sqlite3_column_text(st, 0)) != NULL)
			snprintf(buf, size, "%s", (const char *)p);
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	return (buf);
}

Test(daemon, audit_events_carry_who_and_what)
{
	/* Prevents: an audit log that cannot say who was connected (detach
	 * without the viewer's actor), merges input requests into one event
	 * (DESIGN 7: one per accepted request), or loses the exit code of a
	 * closed shell. */
	char	buf[512];
	int	fd, i, n;

	daemon_start();
	t_start("au");
	fd = t_attach_as("au", 0, 0, NULL, "alice@192.0.2.7");
	for (i = 0; i < 20; i++)
		t_input("au", "x");
	t_input("au", "\n");
	close(fd);
	cr_assert(WAIT_UNTIL(db_count("SELECT count(*) FROM terminal_events "
	    "WHERE session_id = 'au' AND kind = 'detach'") == 1, 5000),
	    "no detach event");
	cr_assert_str_eq(db_text("SELECT actor FROM terminal_events WHERE "
	    "session_id = 'au' AND kind = 'detach'", buf, sizeof(buf)),
	    "alice@192.0.2.7");
	cr_assert_str_eq(db_text("SELECT actor FROM terminal_events WHERE "
	    "session_id = 'au' AND kind = 'attach'", buf, sizeof(buf)),
	    "alice@192.0.2.7");
	cr_assert_eq(db_count("SELECT sum(CAST(detail AS INTEGER)) FROM "
	    "terminal_events WHERE session_id = 'au' AND kind = 'input'"), 21,
	    "every input byte counted");
	n = db_count("SELECT count(*) FROM terminal_events WHERE "
	    "session_id = 'au' AND kind = 'input'");
	cr_assert_eq(n, 21, "one input event per request, never merged: %d"
	    " events for 21 inputs", n);
	cr_assert_eq(t_close("au"), 1);
	cr_assert(WAIT_UNTIL(db_count("SELECT count(*) FROM terminal_events "
	    "WHERE session_id = 'au' AND kind = 'exit'") == 1, 5000),
	    "no exit event after close");
	cr_assert_str_eq(db_text("SELECT detail FROM terminal_events WHERE "
	    "session_id = 'au' AND kind = 'exit'", buf, sizeof(buf)),
	    "exit code -1, closed");
	cr_assert_str_eq(db_text("SELECT actor FROM terminal_events WHERE "
	    "session_id = 'au' AND kind = 'close'", buf, sizeof(buf)), "test");
	cr_assert(WAIT_UNTIL(db_count("SELECT count(*) FROM terminals WHERE "
	    "session_id = 'au' AND state = 'closed' AND exit_code = -1 AND "
	    "ended_at IS NOT NULL AND subscribers = 0") == 1, 5000));
}

Test(daemon, database_deleted_while_idle_is_rewritten)
{
	/* Prevents: an operator who deletes the database while nothing
	 * changes seeing no live terminals until the next keystroke. */
	char	path[160];

	daemon_start();
	t_start("keep");
	cr_assert(WAIT_UNTIL(db_count("SELECT count(*) FROM live_terminals "
	    "WHERE session_id = 'keep'") == 1, 5000));
	pause_ms(1200);		/* nothing pending any more */
	cr_assert_eq(unlink(D.db), 0);
	snprintf(path, sizeof(path), "%s-wal", D.db);
	(void)unlink(path);
	snprintf(path, sizeof(path), "%s-shm", D.db);
	(void)unlink(path);
	cr_assert(WAIT_UNTIL(db_count("SELECT count(*) FROM live_terminals "
	    "WHERE session_id = 'keep'") == 1, 5000),
	    "the idle ptyd did not rewrite its live terminals");
}

Test(daemon, file_size_limit_fails_writes_without_killing_ptyd)
{
	/* Prevents: SIGXFSZ (a full quota, a file-size limit) killing the
	 * daemon and every shell with it instead of failing a write. */
	struct stream	st;
	char		word[32];
	int		i;

	fsize_limit = 96 * 1024;
	daemon_start();
	fsize_limit = 0;
	t_start("fz");
	stream_open(&st, "fz", 0, 0);
	/* Each flush appends pages to the WAL: a few seconds of activity
	 * cross the limit. */
	for (i = 0; i < 8; i++) {
		snprintf(word, sizeof(word), "echo w$((%d*7))\n", i + 100);
		t_input("fz", word);
		snprintf(word, sizeof(word), "w%d", (i + 100) * 7);
		cr_assert(stream_wait_for(&st, word, 5000), "no echo");
		pause_ms(600);
	}
	cr_assert_eq(kill(D.pid, 0), 0, "ptyd died");
	cr_assert_gt(db_errors(), 0, "the limit was never reached");
	stream_close(&st);
}
