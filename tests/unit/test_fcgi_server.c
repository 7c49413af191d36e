/*
 * test_fcgi_server.c -- ptyd.fcgi as a FastCGI server, driven by a small
 * FastCGI client written here (no web server in between), so each property
 * of the worker model is pinned on its own:
 *
 * - the server closes the connection right after FCGI_END_REQUEST, without
 *   libfcgi's OS_Close wait for the peer to close first (a worker that
 *   waits there is a worker that serves nobody for up to 2 s);
 * - an open output stream does not keep a POST waiting, even with two
 *   threads;
 * - closing the stream's connection detaches the viewer within a second;
 * - SIGTERM ends the server within about two seconds with a stream open and
 *   a connection that never sent its request;
 * - every worker process lifts its RLIMIT_NOFILE to the hard limit: its
 *   streams live at 1024 and above (fcgi/streamloop.c), its requests
 *   below, where libfcgi's select() can take them;
 * - the output stream, fed by a scripted ptyd (exact frames, exact timing):
 *   every frame of a burst becomes its event, records stay well formed
 *   when the web server reads slowly, split and broken UTF-8 is joined or
 *   replaced with the right ids.
 */
#include <criterion/criterion.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "frame.h"

#ifndef FCGI_BIN
#error FCGI_BIN must name the built ptyd.fcgi
#endif
#ifndef PTYD_BIN
#error PTYD_BIN must name the built ptyd
#endif

static char	dir[128], fsock[200], psock[200];
static pid_t	server = -1, ptyd = -1;

static int64_t
now_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

static int
dial(const char *path)
{
	struct sockaddr_un	sun;
	int			fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return (-1);
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		close(fd);
		return (-1);
	}
	return (fd);
}

static void
wait_socket(const char *path)
{
	int64_t	deadline = now_ms() + 10000;
	int	fd;

	while ((fd = dial(path)) == -1) {
		cr_assert_lt(now_ms(), deadline, "%s never answered", path);
		poll(NULL, 0, 10);
	}
	close(fd);
}

/* ---- a minimal FastCGI client ---- */

static void
put_record(int fd, int type, const void *data, size_t len)
{
	uint8_t	h[8];

	h[0] = 1;
	h[1] = (uint8_t)type;
	h[2] = 0;
	h[3] = 1;		/* request id 1 */
	h[4] = (uint8_t)(len >> 8);
	h[5] = (uint8_t)len;
	h[6] = 0;
	h[7] = 0;
	cr_assert_eq(write(fd, h, 8), 8);
	if (len > 0)
		cr_assert_eq(write(fd, data, len), (ssize_t)len);
}

static size_t
put_pair(uint8_t *p, const char *kv)
{
	size_t	nl = strcspn(kv, "="), vl = strlen(kv + nl + 1);

	p[0] = (uint8_t)nl;
	p[1] = (uint8_t)vl;
	memcpy(p + 2, kv, nl);
	memcpy(p + 2 + nl, kv + nl + 1, vl);
	return (2 + nl + vl);
}

/* Send a whole request: params (NULL-terminated "K=V"), then body. */
static int
fcgi_request(const char *const *params, const char *body)
{
	static const uint8_t	begin[8] = { 0, 1, 0, 0, 0, 0, 0, 0 };
	uint8_t			buf[8192];
	size_t			n = 0;
	int			fd, i;

	cr_assert_neq(fd = dial(fsock), -1);
	put_record(fd, 1, begin, sizeof(begin));	/* BEGIN_REQUEST */
	for (i = 0; params[i] != NULL; i++)
		n += put_pair(buf + n, params[i]);
	put_record(fd, 4, buf, n);			/* PARAMS */
	put_record(fd, 4, NULL, 0);
	if (body != NULL && body[0] != '\0')
		put_record(fd, 5, body, strlen(body));	/* STDIN */
	put_record(fd, 5, NULL, 0);
	return (fd);
}

struct reply {
	char	out[1 << 21];
	size_t	len;
	int	ended;		/* FCGI_END_REQUEST seen */
	int64_t	ended_at;
	int	eof;
	int64_t	eof_at;
};

/*
 * Read records until END_REQUEST, EOF, needle in stdout, or deadline.  A
 * malformed record (bad version or type) fails the test: the stream writes
 * its records itself.
 */
static void
fcgi_read(int fd, struct reply *r, const char *needle, int64_t deadline)
{
	static uint8_t	buf[1 << 17];
	static size_t	have;
	struct pollfd	pfd = { fd, POLLIN, 0 };
	ssize_t		n;
	size_t		clen, plen;

	if (r->len == 0)
		have = 0;
	for (;;) {
		while (have >= 8) {
			clen = (size_t)buf[4] << 8 | buf[5];
			plen = buf[6];
			if (have < 8 + clen + plen)
				break;
			cr_assert(buf[0] == 1 && (buf[1] == 3 || buf[1] == 6 ||
			    buf[1] == 7) && buf[2] == 0 && buf[3] == 1,
			    "bad record header %02x %02x %02x %02x", buf[0],
			    buf[1], buf[2], buf[3]);
			if (buf[1] == 6 && r->len + clen < sizeof(r->out)) {
				memcpy(r->out + r->len, buf + 8, clen);
				r->len += clen;
				r->out[r->len] = '\0';
			} else if (buf[1] == 3) {
				r->ended = 1;
				r->ended_at = now_ms();
			}
			memmove(buf, buf + 8 + clen + plen,
			    have - 8 - clen - plen);
			have -= 8 + clen + plen;
		}
		if (r->ended || r->eof ||
		    (needle != NULL && strstr(r->out, needle) != NULL))
			return;
		if (poll(&pfd, 1, (int)(deadline - now_ms())) != 1)
			return;
		n = read(fd, buf + have, sizeof(buf) - have);
		if (n <= 0) {
			r->eof = 1;
			r->eof_at = now_ms();
			return;
		}
		have += (size_t)n;
	}
}

static int
status(const struct reply *r)
{
	return (strncmp(r->out, "Status: ", 8) == 0 ? atoi(r->out + 8) : 0);
}

#define BASE	"REMOTE_ADDR=127.0.0.1", "HTTP_HOST=localhost:8080", \
		"REQUEST_SCHEME=http"

/* ---- fixtures ---- */

static void
start_server_hb(const char *threads, const char *procs, const char *hb)
{
	server = fork();
	cr_assert_neq(server, -1);
	if (server == 0) {
		/* The requests here are parameters, with no TCP socket
		 * behind them whose owner could be checked. */
		setenv("PTYD_LOCAL", "address", 1);
		execl(FCGI_BIN, "ptyd.fcgi", "--listen", fsock,
		    "--ptyd-socket", psock, "--no-autostart", "--heartbeat",
		    hb, "--max-threads", threads, "--processes", procs,
		    (char *)NULL);
		_exit(127);
	}
	wait_socket(fsock);
}

static void
start_server(const char *threads, const char *procs)
{
	start_server_hb(threads, procs, "0.5");
}

static int
have_ptyd(void)
{
	return (access(PTYD_BIN, X_OK) == 0);
}

static void
start_ptyd(void)
{
	char	run[200], db[200];

	snprintf(run, sizeof(run), "%s/run", dir);
	snprintf(db, sizeof(db), "%s/ptyd.db", dir);
	cr_assert_eq(mkdir(run, 0700), 0);
	ptyd = fork();
	cr_assert_neq(ptyd, -1);
	if (ptyd == 0) {
		setenv("HOME", dir, 1);
		execl(PTYD_BIN, "ptyd", "-f", "--socket", psock, "--db", db,
		    "--shell", "/bin/sh", (char *)NULL);
		_exit(127);
	}
	wait_socket(psock);
}

static void
stop(pid_t *pid)
{
	int64_t	deadline = now_ms() + 5000;

	if (*pid <= 0)
		return;
	kill(*pid, SIGTERM);
	while (waitpid(*pid, NULL, WNOHANG) == 0 && now_ms() < deadline)
		poll(NULL, 0, 10);
	if (waitpid(*pid, NULL, WNOHANG) == 0) {
		kill(*pid, SIGKILL);
		waitpid(*pid, NULL, 0);
	}
	*pid = -1;
}

static void
setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/ptyd-fcgi-test.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(fsock, sizeof(fsock), "%s/fcgi.sock", dir);
	snprintf(psock, sizeof(psock), "%s/run/ptyd.sock", dir);
}

static void
teardown(void)
{
	char	cmd[256];

	stop(&server);
	stop(&ptyd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

TestSuite(server, .init = setup, .fini = teardown, .timeout = 60);

Test(server, closes_right_after_end_request_without_linger)
{
	static const char *const	p[] = { BASE, "REQUEST_METHOD=GET",
	    "DOCUMENT_URI=/api/terminal/health", NULL };
	static struct reply		r;
	int				fd;

	start_server("4", "1");
	fd = fcgi_request(p, NULL);
	memset(&r, 0, sizeof(r));
	fcgi_read(fd, &r, NULL, now_ms() + 10000);
	cr_assert(r.ended, "END_REQUEST");
	cr_expect_eq(status(&r), 503, "%s", r.out);
	/* We never close our side: a lingering server would wait for us. */
	r.ended = 0;
	fcgi_read(fd, &r, NULL, now_ms() + 3000);
	cr_assert(r.eof, "the server closed the connection");
	cr_expect_lt(r.eof_at - r.ended_at, 500, "closed %lld ms after "
	    "END_REQUEST", (long long)(r.eof_at - r.ended_at));
	close(fd);
}

/* Workers of the server whose soft RLIMIT_NOFILE is their hard one. */
static int
count_lifted_workers(void)
{
	char		 path[300], line[256];
	FILE		*f;
	DIR		*d;
	struct dirent	*e;
	int		 kids = 0, ppid;
	long		 soft, hard;
	char		*end;

	cr_assert_not_null(d = opendir("/proc"));
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		if ((f = fopen(path, "r")) == NULL)
			continue;
		ppid = 0;
		if (fscanf(f, "%*d (%*[^)]) %*c %d", &ppid) != 1)
			ppid = 0;
		fclose(f);
		if (ppid != server)
			continue;
		snprintf(path, sizeof(path), "/proc/%s/limits", e->d_name);
		if ((f = fopen(path, "r")) == NULL)
			continue;
		soft = hard = -1;
		while (fgets(line, sizeof(line), f) != NULL)
			if (strncmp(line, "Max open files", 14) == 0) {
				soft = strtol(line + 26, &end, 10);
				hard = strtol(end, NULL, 10);
			}
		fclose(f);
		if (soft > 0 && soft == hard)
			kids++;
	}
	closedir(d);
	return (kids);
}

Test(server, workers_lift_their_descriptor_limit_for_streams)
{
	int64_t	deadline;
	int	kids = 0;

	start_server("4", "3");
	/* The workers may still be forking. */
	deadline = now_ms() + 5000;
	while ((kids = count_lifted_workers()) < 3 && now_ms() < deadline)
		poll(NULL, 0, 20);
	cr_expect_eq(kids, 3, "three worker processes at their hard limit");
}

/* Threads of process pid (from /proc). */
static int
count_threads(pid_t pid)
{
	char		 path[64];
	DIR		*d;
	struct dirent	*e;
	int		 n = 0;

	snprintf(path, sizeof(path), "/proc/%ld/task", (long)pid);
	cr_assert_not_null(d = opendir(path));
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return (n);
}

/*
 * A quick request is served by the thread that accepted it, which then
 * accepts the next: handing leadership to another thread for each one cost
 * three wakeups per request (the regression: one more thread woken per
 * request, a second thread in the pool after the first).
 */
Test(server, quick_requests_wake_no_other_thread)
{
	static const char *const	p[] = { BASE, "REQUEST_METHOD=GET",
	    "DOCUMENT_URI=/api/terminal/health", NULL };
	static struct reply		r;
	int				fd, i;
	long				loops;

	/* One process, no master: the server is the worker. */
	start_server("8", "1");
	for (i = 0; i < 50; i++) {
		fd = fcgi_request(p, NULL);
		memset(&r, 0, sizeof(r));
		fcgi_read(fd, &r, NULL, now_ms() + 5000);
		close(fd);
		cr_assert_eq(status(&r), 503, "%s", r.out);
	}
	/* The main thread, the one leader and the stream loops (one per
	 * CPU, at most 4: fcgi/streamloop.c). */
	loops = sysconf(_SC_NPROCESSORS_ONLN);
	loops = loops < 1 ? 1 : loops > 4 ? 4 : loops;
	cr_expect_eq(count_threads(server), 2 + (int)loops, "%d threads",
	    count_threads(server));
}

/*
 * A request that is not known to last but does (here its body is late)
 * hands leadership on after the hand-off delay, so the next request is
 * served meanwhile by another thread.
 */
Test(server, a_slow_request_does_not_hold_up_the_next)
{
	static const char *const	slow[] = { BASE, "REQUEST_METHOD=POST",
	    "DOCUMENT_URI=/api/terminal/input",
	    "CONTENT_TYPE=application/json", "CONTENT_LENGTH=2", NULL };
	static const char *const	quick[] = { BASE, "REQUEST_METHOD=GET",
	    "DOCUMENT_URI=/api/terminal/health", NULL };
	static const uint8_t		begin[8] = { 0, 1, 0, 0, 0, 0, 0, 0 };
	static struct reply		r;
	uint8_t				buf[1024];
	size_t				n = 0;
	int64_t				t0;
	int				sfd, fd, i;

	start_server("2", "1");
	/* Params, no body yet: the thread that took it waits in read. */
	cr_assert_neq(sfd = dial(fsock), -1);
	put_record(sfd, 1, begin, sizeof(begin));
	for (i = 0; slow[i] != NULL; i++)
		n += put_pair(buf + n, slow[i]);
	put_record(sfd, 4, buf, n);
	put_record(sfd, 4, NULL, 0);
	poll(NULL, 0, 50);

	t0 = now_ms();
	fd = fcgi_request(quick, NULL);
	memset(&r, 0, sizeof(r));
	fcgi_read(fd, &r, NULL, now_ms() + 5000);
	close(fd);
	cr_expect_eq(status(&r), 503, "%s", r.out);
	cr_expect_lt(now_ms() - t0, 1000, "answered after %lld ms",
	    (long long)(now_ms() - t0));

	/* The slow one still gets its answer. */
	put_record(sfd, 5, "{}", 2);
	put_record(sfd, 5, NULL, 0);
	memset(&r, 0, sizeof(r));
	fcgi_read(sfd, &r, NULL, now_ms() + 5000);
	cr_expect_eq(status(&r), 400, "%s", r.out);
	close(sfd);
}

Test(server, stream_never_blocks_a_post_and_detaches_on_close)
{
	static const char *const	start[] = { BASE,
	    "REQUEST_METHOD=POST", "DOCUMENT_URI=/api/terminal/start",
	    "CONTENT_TYPE=application/json", "CONTENT_LENGTH=22", NULL };
	static const char *const	out[] = { BASE, "REQUEST_METHOD=GET",
	    "DOCUMENT_URI=/api/terminal/output",
	    "QUERY_STRING=session_id=srv1", NULL };
	static const char *const	input[] = { BASE,
	    "REQUEST_METHOD=POST", "DOCUMENT_URI=/api/terminal/input",
	    "CONTENT_TYPE=application/json", NULL };
	static const char *const	list[] = { BASE, "REQUEST_METHOD=GET",
	    "DOCUMENT_URI=/api/terminal/list", NULL };
	static struct reply		r, s;
	int				fd, sfd;
	int64_t				t0;

	if (!have_ptyd())
		cr_skip_test("ptyd is not built");
	start_ptyd();
	/* Two threads: one for the stream, one left for everything else. */
	start_server("2", "1");

	fd = fcgi_request(start, "{\"session_id\": \"srv1\"}");
	memset(&r, 0, sizeof(r));
	fcgi_read(fd, &r, NULL, now_ms() + 10000);
	close(fd);
	cr_assert_eq(status(&r), 200, "%s", r.out);

	sfd = fcgi_request(out, NULL);
	memset(&s, 0, sizeof(s));
	fcgi_read(sfd, &s, "Status: 200", now_ms() + 10000);
	cr_assert_eq(status(&s), 200);

	fd = fcgi_request(input, "{\"session_id\": \"srv1\", \"data\": "
	    "\"echo via-$((2+3))\\n\"}");
	memset(&r, 0, sizeof(r));
	fcgi_read(fd, &r, NULL, now_ms() + 5000);
	close(fd);
	cr_assert_eq(status(&r), 200, "the POST was answered: %s", r.out);
	fcgi_read(sfd, &s, "via-5", now_ms() + 10000);
	cr_expect(strstr(s.out, "via-5") != NULL);
	fcgi_read(sfd, &s, ": heartbeat\n\n", now_ms() + 3000);
	cr_expect(strstr(s.out, ": heartbeat\n\n") != NULL, "heartbeat");

	fd = fcgi_request(list, NULL);
	memset(&r, 0, sizeof(r));
	fcgi_read(fd, &r, NULL, now_ms() + 5000);
	close(fd);
	cr_expect(strstr(r.out, "\"subscribers\": 1") != NULL, "%s", r.out);

	/* The web server closes the connection (its client aborted). */
	close(sfd);
	t0 = now_ms();
	for (;;) {
		fd = fcgi_request(list, NULL);
		memset(&r, 0, sizeof(r));
		fcgi_read(fd, &r, NULL, now_ms() + 5000);
		close(fd);
		if (strstr(r.out, "\"subscribers\": 0") != NULL)
			break;
		cr_assert_lt(now_ms() - t0, 1000, "still attached: %s", r.out);
		poll(NULL, 0, 20);
	}
	cr_expect(strstr(r.out, "\"unwatched_since\": null") == NULL,
	    "unwatched again");
}

Test(server, sigterm_ends_it_with_a_stream_and_a_silent_connection_open)
{
	static const char *const	start[] = { BASE,
	    "REQUEST_METHOD=POST", "DOCUMENT_URI=/api/terminal/start",
	    "CONTENT_TYPE=application/json", NULL };
	static const char *const	out[] = { BASE, "REQUEST_METHOD=GET",
	    "DOCUMENT_URI=/api/terminal/output",
	    "QUERY_STRING=session_id=srv2", NULL };
	static struct reply		r, s;
	int				fd, sfd, silent, st;
	int64_t				t0;

	if (!have_ptyd())
		cr_skip_test("ptyd is not built");
	start_ptyd();
	start_server("8", "2");
	fd = fcgi_request(start, "{\"session_id\": \"srv2\"}");
	memset(&r, 0, sizeof(r));
	fcgi_read(fd, &r, NULL, now_ms() + 10000);
	close(fd);
	cr_assert_eq(status(&r), 200, "%s", r.out);
	sfd = fcgi_request(out, NULL);
	memset(&s, 0, sizeof(s));
	fcgi_read(sfd, &s, "Status: 200", now_ms() + 10000);
	cr_assert_eq(status(&s), 200);
	/* Connected, never sends: a thread sits in FCGX_Accept_r. */
	cr_assert_neq(silent = dial(fsock), -1);
	poll(NULL, 0, 100);

	t0 = now_ms();
	kill(server, SIGTERM);
	while (waitpid(server, &st, WNOHANG) == 0) {
		cr_assert_lt(now_ms() - t0, 3000, "still running");
		poll(NULL, 0, 10);
	}
	server = -1;
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	cr_expect_lt(now_ms() - t0, 2600, "ended in %lld ms",
	    (long long)(now_ms() - t0));
	/* The stream ended properly, and the socket file is gone. */
	fcgi_read(sfd, &s, NULL, now_ms() + 1000);
	cr_expect(s.ended || s.eof);
	cr_expect_eq(access(fsock, F_OK), -1, "socket removed");
	close(sfd);
	close(silent);
}

/* ---- a scripted ptyd ---- */

struct script {
	uint8_t	buf[1 << 21];
	size_t	len;
	uint64_t pos;		/* stream position after the last byte */
};

static void
script_add(struct script *sc, const struct frame_out *fo)
{
	cr_assert_lt(sc->len + fo->len, sizeof(sc->buf));
	memcpy(sc->buf + sc->len, fo->buf, fo->len);
	sc->len += fo->len;
}

static void
script_attached(struct script *sc, uint64_t base)
{
	struct frame_out	fo;
	struct msg_attached	m = { base, base };

	frame_out_init(&fo);
	cr_assert_eq(msg_encode(&fo, MSG_ATTACHED, &m), 0);
	script_add(sc, &fo);
	frame_out_free(&fo);
	sc->pos = base;
}

static void
script_output(struct script *sc, const void *data, size_t len)
{
	cr_assert_lt(sc->len + FRAME_OUTPUT_PREFIX + len, sizeof(sc->buf));
	sc->pos += len;
	frame_output_prefix(sc->buf + sc->len, sc->pos, len);
	memcpy(sc->buf + sc->len + FRAME_OUTPUT_PREFIX, data, len);
	sc->len += FRAME_OUTPUT_PREFIX + len;
}

static void
script_exit(struct script *sc)
{
	struct frame_out	fo;
	struct msg_exit		m;

	memset(&m, 0, sizeof(m));
	m.has_exit_code = 1;
	m.exit_code = 7;
	strcpy(m.reason, "exit");
	m.pos = sc->pos + 1;
	frame_out_init(&fo);
	cr_assert_eq(msg_encode(&fo, MSG_EXIT, &m), 0);
	script_add(sc, &fo);
	frame_out_free(&fo);
}

/*
 * Serve one connection on psock from a child: read the request frame,
 * write the whole script at once, then hold the connection until the peer
 * closes it (the viewer detaching).  The child exits 0 when it saw that
 * close, 1 otherwise.
 */
static void
start_scripted_ptyd(const struct script *sc)
{
	struct sockaddr_un	sun;
	struct pollfd		pfd;
	uint8_t			req[8192];
	size_t			off;
	ssize_t			n;
	int			l, fd;
	char			run[200];

	snprintf(run, sizeof(run), "%s/run", dir);
	cr_assert_eq(mkdir(run, 0700), 0);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	cr_assert_lt(strlen(psock), sizeof(sun.sun_path));
	memcpy(sun.sun_path, psock, strlen(psock) + 1);
	cr_assert_neq(l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), -1);
	cr_assert_eq(bind(l, (struct sockaddr *)&sun, sizeof(sun)), 0);
	cr_assert_eq(listen(l, 8), 0);
	ptyd = fork();
	cr_assert_neq(ptyd, -1);
	if (ptyd != 0) {
		close(l);
		return;
	}
	if ((fd = accept(l, NULL, NULL)) == -1)
		_exit(1);
	/* One request frame: its header says how long it is. */
	for (off = 0; off < 8 || off < 8 + ((size_t)req[4] << 24 |
	    (size_t)req[5] << 16 | (size_t)req[6] << 8 | req[7]); off += (size_t)n)
		if ((n = read(fd, req + off, sizeof(req) - off)) <= 0)
			_exit(1);
	for (off = 0; off < sc->len; off += (size_t)n)
		if ((n = write(fd, sc->buf + off, sc->len - off)) <= 0)
			_exit(1);
	pfd.fd = fd;
	pfd.events = POLLIN;
	while (poll(&pfd, 1, 30000) == 1)
		if (read(fd, req, sizeof(req)) <= 0)
			_exit(0);
	_exit(1);
}

/* The scripted ptyd's verdict: did the viewer detach? */
static int
scripted_ptyd_saw_detach(void)
{
	int64_t	deadline = now_ms() + 5000;
	pid_t	w;
	int	st;

	while ((w = waitpid(ptyd, &st, WNOHANG)) == 0 && now_ms() < deadline)
		poll(NULL, 0, 10);
	if (w != ptyd)
		return (0);
	ptyd = -1;
	return (WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

struct event {
	uint64_t	 id;
	char		 name[32];
	const char	*data;		/* into the reply, up to '\n' */
	size_t		 len;
};

/* The next SSE event after *p in the stream's body, skipping comments. */
static int
next_event(const char **p, struct event *ev)
{
	const char	*s = *p, *e;

	for (;;) {
		if (strncmp(s, ": ", 2) == 0) {
			if ((e = strstr(s, "\n\n")) == NULL)
				return (0);
			s = e + 2;
			continue;
		}
		if (sscanf(s, "id: %" SCNu64 "\nevent: %31[a-z_]\ndata: ",
		    &ev->id, ev->name) != 2 ||
		    (s = strstr(s, "\ndata: ")) == NULL)
			return (0);
		ev->data = s + 7;
		if ((e = strstr(ev->data, "\n\n")) == NULL)
			return (0);
		ev->len = (size_t)(e - ev->data);
		*p = e + 2;
		return (1);
	}
}

static int
data_is(const struct event *ev, const char *want)
{
	return (ev->len == strlen(want) && memcmp(ev->data, want, ev->len) ==
	    0);
}

static const char *const stream_params[] = { BASE, "REQUEST_METHOD=GET",
    "DOCUMENT_URI=/api/terminal/output", "QUERY_STRING=session_id=fake",
    NULL };

/* Raw bytes carried by the JSON string text[0..len) of ASCII output. */
static size_t
ascii_text_bytes(const char *t, size_t len)
{
	size_t	i, n = 0;

	for (i = 0; i < len; n++)
		i += t[i] != '\\' ? 1 : t[i + 1] == 'u' ? 6 : 2;
	return (n);
}

/*
 * Check a stream of ASCII output: every output event's id is the position
 * after its text, ids increase, the texts add up to want bytes, and it
 * ends with terminal_closed.
 */
static void
check_ascii(const struct reply *r, uint64_t base, size_t want)
{
	struct event	 ev;
	const char	*p;
	uint64_t	 pos = base;
	size_t		 total = 0, n;
	int		 closed = 0;

	cr_assert_not_null(p = strstr(r->out, "\r\n\r\n"), "headers");
	p += 4;
	while (next_event(&p, &ev)) {
		cr_assert(!closed, "an event after terminal_closed");
		if (strcmp(ev.name, "terminal_closed") == 0) {
			cr_expect_eq(ev.id, pos + 1);
			closed = 1;
			continue;
		}
		cr_assert_str_eq(ev.name, "output");
		cr_assert(strncmp(ev.data, "{\"text\": \"", 10) == 0);
		n = ascii_text_bytes(ev.data + 10, ev.len - 12);
		total += n;
		pos += n;
		cr_assert_eq(ev.id, pos, "id %" PRIu64 " after %zu bytes",
		    ev.id, total);
	}
	cr_expect_eq(total, want, "%zu of %zu bytes", total, want);
	cr_expect(closed, "terminal_closed");
}

/*
 * Regression: frames read from ptyd but left over when the output buffer
 * filled up were only turned into events at the next read or heartbeat
 * timeout, so the tail of a burst and its terminal_closed waited for ptyd
 * to send more, or for 60 s here.
 */
Test(server, stream_turns_every_frame_of_a_burst_into_events)
{
	static struct script	sc;
	static struct reply	r;
	static char		chunk[PROTO_OUTPUT_CHUNK];
	int			fd, i;

	memset(&sc, 0, sizeof(sc));
	script_attached(&sc, 1000);
	for (i = 0; i < 3; i++) {
		memset(chunk, 'a' + i, sizeof(chunk));
		script_output(&sc, chunk, sizeof(chunk));
	}
	script_exit(&sc);
	start_scripted_ptyd(&sc);
	start_server_hb("2", "1", "60");
	fd = fcgi_request(stream_params, NULL);
	memset(&r, 0, sizeof(r));
	fcgi_read(fd, &r, "event: terminal_closed", now_ms() + 5000);
	cr_assert_eq(status(&r), 200, "%.200s", r.out);
	check_ascii(&r, 1000, 3 * sizeof(chunk));
	fcgi_read(fd, &r, NULL, now_ms() + 5000);
	cr_expect(r.ended, "END_REQUEST after terminal_closed");
	close(fd);
	cr_expect(scripted_ptyd_saw_detach(), "the viewer detached");
}

Test(server, stream_records_stay_whole_when_the_web_server_reads_slowly)
{
	static struct script	sc;
	static struct reply	r;
	static char		chunk[PROTO_OUTPUT_CHUNK];
	int			fd, i;

	memset(&sc, 0, sizeof(sc));
	script_attached(&sc, 5);
	for (i = 0; i < 12; i++) {
		/* Control bytes escape to six: events of 192 KiB, written
		 * with several records per sendmsg, which the full socket
		 * then takes only part of. */
		memset(chunk, i % 2 ? 'a' + i % 26 : 1, sizeof(chunk));
		/* Odd sizes, so records end at every offset. */
		script_output(&sc, chunk, sizeof(chunk) - (size_t)i * 377);
	}
	script_exit(&sc);
	start_scripted_ptyd(&sc);
	start_server("2", "1");
	fd = fcgi_request(stream_params, NULL);
	memset(&r, 0, sizeof(r));
	fcgi_read(fd, &r, "Status: 200", now_ms() + 5000);
	/* Not reading: the server's writes fill the socket and stop midway. */
	poll(NULL, 0, 300);
	fcgi_read(fd, &r, NULL, now_ms() + 10000);
	cr_assert(r.ended, "END_REQUEST");
	check_ascii(&r, 5, sc.pos - 5);
	close(fd);
	cr_expect(scripted_ptyd_saw_detach(), "the viewer detached");
}

Test(server, stream_joins_split_characters_and_replaces_bad_bytes)
{
	static struct script	sc;
	static struct reply	r;
	struct event		ev;
	const char		*p;
	int			fd;

	memset(&sc, 0, sizeof(sc));
	script_attached(&sc, 100);
	script_output(&sc, "ab\xe2\x82", 4);		/* U+20AC, split */
	script_output(&sc, "\xac" "c\xff", 3);	/* ..., a bad byte */
	script_output(&sc, "\xf0\x9f", 2);		/* held, then cut */
	script_exit(&sc);
	start_scripted_ptyd(&sc);
	start_server("2", "1");
	fd = fcgi_request(stream_params, NULL);
	memset(&r, 0, sizeof(r));
	fcgi_read(fd, &r, NULL, now_ms() + 5000);
	cr_assert(r.ended, "END_REQUEST");
	cr_assert_not_null(p = strstr(r.out, "\r\n\r\n"));
	p += 4;
	/* "ab": the id stops before the held two bytes. */
	cr_assert(next_event(&p, &ev));
	cr_expect_eq(ev.id, 102);
	cr_expect(data_is(&ev, "{\"text\": \"ab\"}"), "%.*s", (int)ev.len,
	    ev.data);
	/* The euro joined, c, and U+FFFD for 0xff. */
	cr_assert(next_event(&p, &ev));
	cr_expect_eq(ev.id, 107);
	cr_expect(data_is(&ev, "{\"text\": \"\xe2\x82\xac" "c\xef\xbf\xbd\"}"),
	    "%.*s", (int)ev.len, ev.data);
	/* The lead bytes held to the end come out as one U+FFFD. */
	cr_assert(next_event(&p, &ev));
	cr_expect_eq(ev.id, 109);
	cr_expect(data_is(&ev, "{\"text\": \"\xef\xbf\xbd\"}"), "%.*s",
	    (int)ev.len, ev.data);
	cr_assert(next_event(&p, &ev));
	cr_expect_str_eq(ev.name, "terminal_closed");
	cr_expect_eq(ev.id, 110);
	cr_expect(data_is(&ev, "{\"exit_code\": 7, \"reason\": \"exit\"}"),
	    "%.*s", (int)ev.len, ev.data);
	close(fd);
	cr_expect(scripted_ptyd_saw_detach(), "the viewer detached");
}
