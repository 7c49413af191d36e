/*
 * test_cgi.c -- ptyd.fcgi run as plain CGI, the way a web server runs it:
 * the request in environment variables and stdin, the response on stdout.
 *
 * This is how the security gate and the order of status codes are tested
 * end to end, on the real binary: each case sets the environment of one
 * request and reads the status line back.  Cases that need a daemon start
 * the real ptyd in a temporary directory (skipped when it is not built)
 * and drive start, input, output and close through CGI, plus autostart
 * under concurrent requests.
 */
#include <criterion/criterion.h>

#include <sys/stat.h>
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

#ifndef FCGI_BIN
#error FCGI_BIN must name the built ptyd.fcgi
#endif
#ifndef PTYD_BIN
#error PTYD_BIN must name the built ptyd
#endif

#define MAXENV	40

struct res {
	int	 status;
	char	 out[1 << 17];
	size_t	 len;
	char	*body;
};

static char	tmpdir[256];
static char	sockpath[300];
static pid_t	ptyd_pid = -1;

static int64_t
now_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

/* A request environment: defaults plus overrides ("NAME=" removes). */
struct env {
	char	*v[MAXENV + 1];
	int	 n;
};

static void
env_set(struct env *e, const char *kv)
{
	size_t	nl = strcspn(kv, "=");
	int	i;

	for (i = 0; i < e->n; i++) {
		if (strncmp(e->v[i], kv, nl + 1) == 0) {
			free(e->v[i]);
			e->v[i] = e->v[--e->n];
			break;
		}
	}
	if (kv[nl] == '=' && kv[nl + 1] == '\0')
		return;		/* "NAME=" unsets */
	cr_assert_lt(e->n, MAXENV);
	e->v[e->n++] = strdup(kv);
	e->v[e->n] = NULL;
}

static void
env_base(struct env *e, const char *method, const char *endpoint)
{
	char	tmp[512];

	e->n = 0;
	e->v[0] = NULL;
	env_set(e, "PATH=/usr/bin:/bin");
	snprintf(tmp, sizeof(tmp), "HOME=%s", tmpdir);
	env_set(e, tmp);
	/* The state an autostarted ptyd keeps: the account's own folder
	 * (from the password file, not HOME) is not the test's to touch. */
	snprintf(tmp, sizeof(tmp), "PTYD_STATE_DIR=%s/state", tmpdir);
	env_set(e, tmp);
	/* The seed's gate: front authentication, locality by address.  The
	 * defaults (PTYD_AUTH=none, PTYD_LOCAL=account) have their own test;
	 * a CGI run has no socket whose owner could be checked. */
	env_set(e, "PTYD_AUTH=front");
	env_set(e, "PTYD_LOCAL=address");
	env_set(e, "REMOTE_ADDR=127.0.0.1");
	env_set(e, "HTTP_HOST=127.0.0.1:8080");
	env_set(e, "SERVER_PORT=8080");
	env_set(e, "REQUEST_SCHEME=http");
	snprintf(tmp, sizeof(tmp), "REQUEST_METHOD=%s", method);
	env_set(e, tmp);
	snprintf(tmp, sizeof(tmp), "DOCUMENT_URI=/api/terminal/%s", endpoint);
	env_set(e, tmp);
	if (strcmp(method, "POST") == 0)
		env_set(e, "CONTENT_TYPE=application/json");
}

static void
env_free(struct env *e)
{
	int	i;

	for (i = 0; i < e->n; i++)
		free(e->v[i]);
	e->n = 0;
}

/* Start ptyd.fcgi as CGI.  Returns its pid; *outfd reads its stdout. */
static pid_t
cgi_spawn(struct env *e, const char *body, size_t blen, int autostart,
    int *outfd)
{
	char	 inpath[300], cl[64];
	int	 p[2], in;
	pid_t	 pid;
	char	*argv[8];
	int	 a = 0;

	if (body != NULL) {
		snprintf(cl, sizeof(cl), "CONTENT_LENGTH=%zu", blen);
		if (blen != (size_t)-1)
			env_set(e, cl);
	}
	snprintf(inpath, sizeof(inpath), "%s/stdin.XXXXXX", tmpdir);
	cr_assert_neq(in = mkstemp(inpath), -1);
	unlink(inpath);
	if (body != NULL)
		cr_assert_eq(write(in, body, blen), (ssize_t)blen);
	lseek(in, 0, SEEK_SET);
	cr_assert_eq(pipe(p), 0);
	argv[a++] = (char *)FCGI_BIN;
	argv[a++] = (char *)"--ptyd-socket";
	argv[a++] = sockpath;
	if (autostart) {
		argv[a++] = (char *)"--ptyd";
		argv[a++] = (char *)PTYD_BIN;
	} else
		argv[a++] = (char *)"--no-autostart";
	argv[a] = NULL;
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		dup2(in, 0);
		dup2(p[1], 1);
		close(in);
		close(p[0]);
		close(p[1]);
		execve(FCGI_BIN, argv, e->v);
		_exit(127);
	}
	close(in);
	close(p[1]);
	*outfd = p[0];
	return (pid);
}

/* Read until EOF or the deadline. */
static void
read_all(int fd, struct res *r, int64_t deadline)
{
	struct pollfd	pfd = { fd, POLLIN, 0 };
	ssize_t		n;

	r->len = 0;
	while (r->len < sizeof(r->out) - 1) {
		int64_t left = deadline - now_ms();

		if (left <= 0 || poll(&pfd, 1, (int)left) != 1)
			break;
		n = read(fd, r->out + r->len, sizeof(r->out) - 1 - r->len);
		if (n <= 0)
			break;
		r->len += (size_t)n;
	}
	r->out[r->len] = '\0';
}

static void
parse(struct res *r)
{
	char	*b;

	r->status = 0;
	if (strncmp(r->out, "Status: ", 8) == 0)
		r->status = atoi(r->out + 8);
	b = strstr(r->out, "\r\n\r\n");
	r->body = b != NULL ? b + 4 : r->out + r->len;
}

static int
waitpid_deadline(pid_t pid, int64_t deadline)
{
	int	status;

	while (now_ms() < deadline) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return (status);
		poll(NULL, 0, 10);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return (-1);
}

/* One complete CGI request. */
static void
cgi_run(struct env *e, const char *body, size_t blen, int autostart,
    struct res *r)
{
	int	fd;
	pid_t	pid;

	pid = cgi_spawn(e, body, blen, autostart, &fd);
	read_all(fd, r, now_ms() + 20000);
	close(fd);
	cr_assert_eq(waitpid_deadline(pid, now_ms() + 5000), 0,
	    "ptyd.fcgi exits 0 after one CGI request");
	parse(r);
}

static int
status_of(const char *method, const char *endpoint, const char *body,
    const char *const *extra)
{
	struct env	 e;
	static struct res r;
	int		 i;

	env_base(&e, method, endpoint);
	for (i = 0; extra != NULL && extra[i] != NULL; i++)
		env_set(&e, extra[i]);
	cgi_run(&e, body, body != NULL ? strlen(body) : 0, 0, &r);
	env_free(&e);
	return (r.status);
}

static void
setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/ptyd-cgi-test.XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	/* Short: sun_path is 108 bytes. */
	snprintf(sockpath, sizeof(sockpath), "%s/run/ptyd.sock", tmpdir);
	ptyd_pid = -1;
}

static void
rm_rf(const char *path)
{
	char		 sub[1024];
	struct dirent	*d;
	struct stat	 sb;
	DIR		*dir;

	if (lstat(path, &sb) == -1)
		return;
	if (S_ISDIR(sb.st_mode) && (dir = opendir(path)) != NULL) {
		while ((d = readdir(dir)) != NULL) {
			if (strcmp(d->d_name, ".") == 0 ||
			    strcmp(d->d_name, "..") == 0)
				continue;
			snprintf(sub, sizeof(sub), "%s/%s", path, d->d_name);
			rm_rf(sub);
		}
		closedir(dir);
		rmdir(path);
	} else
		unlink(path);
}

/* Stop a ptyd by pid and wait for it to be gone. */
static void
ptyd_stop(pid_t pid)
{
	int64_t	deadline = now_ms() + 5000;

	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	while (kill(pid, 0) == 0 && now_ms() < deadline) {
		waitpid(pid, NULL, WNOHANG);
		poll(NULL, 0, 10);
	}
	if (kill(pid, 0) == 0)
		kill(pid, SIGKILL);
	waitpid(pid, NULL, WNOHANG);
}

static void
teardown(void)
{
	ptyd_stop(ptyd_pid);
	rm_rf(tmpdir);
}

TestSuite(cgi, .init = setup, .fini = teardown, .timeout = 60);

/* ---- the gate, end to end: 403, or past it (503: ptyd is down) ---- */

struct gate_case {
	const char	*name;
	const char	*env[6];
	int		 want;
};

Test(cgi, gate_rows_end_to_end)
{
	static const struct gate_case	cases[] = {
		{ "loopback", { NULL }, 503 },
		{ "public peer", { "REMOTE_ADDR=8.8.8.8", NULL }, 403 },
		{ "private peer", { "REMOTE_ADDR=192.168.1.9", NULL }, 503 },
		{ "cgnat peer", { "REMOTE_ADDR=100.64.1.1", NULL }, 403 },
		{ "no peer", { "REMOTE_ADDR=", NULL }, 403 },
		{ "mapped loopback", { "REMOTE_ADDR=::ffff:127.0.0.1", NULL },
		    503 },
		{ "user", { "REMOTE_ADDR=8.8.8.8", "REMOTE_USER=alice",
		    NULL }, 503 },
		{ "allow remote", { "REMOTE_ADDR=8.8.8.8",
		    "PTYD_ALLOW_REMOTE=1", NULL }, 503 },
		{ "private peer with xff", { "REMOTE_ADDR=10.0.0.1",
		    "HTTP_X_FORWARDED_FOR=10.0.0.2", NULL }, 403 },
		{ "private peer with x-real-ip", { "REMOTE_ADDR=10.0.0.1",
		    "HTTP_X_REAL_IP=10.0.0.2", NULL }, 403 },
		{ "trusted proxy, public client", { "PTYD_TRUST_FORWARDED_FOR=1",
		    "HTTP_X_FORWARDED_FOR=8.8.8.8", NULL }, 403 },
		{ "trusted proxy, private client",
		    { "PTYD_TRUST_FORWARDED_FOR=1",
		    "HTTP_X_FORWARDED_FOR=10.9.9.9", NULL }, 503 },
		{ "trusted proxy, bad hop", { "PTYD_TRUST_FORWARDED_FOR=1",
		    "HTTP_X_FORWARDED_FOR=10.0.0.1, junk", NULL }, 403 },
		{ "cidr proxy", { "REMOTE_ADDR=203.0.113.5",
		    "PTYD_TRUST_FORWARDED_FOR=1",
		    "PTYD_TRUSTED_PROXY_CIDRS=203.0.113.0/24",
		    "HTTP_X_FORWARDED_FOR=192.168.3.3", NULL }, 503 },
		{ "untrusted proxy", { "REMOTE_ADDR=203.0.113.5",
		    "PTYD_TRUST_FORWARDED_FOR=1",
		    "HTTP_X_FORWARDED_FOR=192.168.3.3", NULL }, 403 },
	};
	size_t	i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_expect_eq(status_of("GET", "health", NULL, cases[i].env),
		    cases[i].want, "%s", cases[i].name);
}

/*
 * The defaults.  Regression: REMOTE_USER from nginx's $remote_user (parsed
 * from any Authorization header) was believed without PTYD_AUTH=front, and
 * a loopback address was local whoever's socket it was.  Here no socket
 * exists for the four-tuple, so nothing local gets in; 403 is the gate, 503
 * is past it (ptyd is down).
 */
Test(cgi, default_gate_believes_no_user_and_verifies_the_account)
{
	static const struct gate_case	cases[] = {
		{ "forged user, public", { "PTYD_AUTH=", "PTYD_LOCAL=",
		    "REMOTE_ADDR=8.8.8.8", "REMOTE_USER=mallory", NULL }, 403 },
		{ "forged user, loopback, no socket", { "PTYD_AUTH=",
		    "PTYD_LOCAL=", "REMOTE_USER=mallory", "REMOTE_PORT=1",
		    "SERVER_ADDR=127.0.0.1", NULL }, 403 },
		{ "loopback without a port", { "PTYD_AUTH=", "PTYD_LOCAL=",
		    NULL }, 403 },
		{ "loopback, no such socket", { "PTYD_AUTH=", "PTYD_LOCAL=",
		    "REMOTE_PORT=1", "SERVER_ADDR=127.0.0.1", NULL }, 403 },
		{ "front auth believes the user", { "PTYD_AUTH=front",
		    "PTYD_LOCAL=", "REMOTE_ADDR=8.8.8.8", "REMOTE_USER=alice",
		    NULL }, 503 },
		{ "address mode", { "PTYD_AUTH=", "PTYD_LOCAL=address", NULL },
		    503 },
	};
	size_t	i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_expect_eq(status_of("GET", "health", NULL, cases[i].env),
		    cases[i].want, "%s", cases[i].name);
}

Test(cgi, denial_is_json_with_the_fixed_message)
{
	struct env	e;
	static struct res r;

	env_base(&e, "GET", "list");
	env_set(&e, "REMOTE_ADDR=8.8.8.8");
	cgi_run(&e, NULL, 0, 0, &r);
	env_free(&e);
	cr_expect_eq(r.status, 403);
	cr_expect(strstr(r.out, "Content-Type: application/json; "
	    "charset=utf-8\r\n") != NULL);
	cr_expect(strstr(r.out, "Cache-Control: no-store\r\n") != NULL);
	cr_expect(strstr(r.body, "{\"error\": \"forbidden: ") == r.body);
	cr_expect(strstr(r.body, "REMOTE_USER") != NULL);
}

/* ---- status codes in the contract's order ---- */

Test(cgi, status_order)
{
	static const char	json[] = "{\"session_id\": \"a\"}";
	char			big[80000];
	const char		*ct_text[] = { "CONTENT_TYPE=text/plain", NULL };
	const char		*public[] = { "REMOTE_ADDR=8.8.8.8", NULL };
	const char		*badhost[] = { "HTTP_HOST=evil.example", NULL };
	const char		*badhost_ct[] = { "HTTP_HOST=evil.example",
	    "CONTENT_TYPE=text/plain", NULL };
	const char		*xorigin[] = {
	    "HTTP_ORIGIN=http://evil.example", NULL };
	const char		*nullorigin[] = { "HTTP_ORIGIN=null", NULL };
	const char		*okorigin[] = {
	    "HTTP_ORIGIN=http://127.0.0.1:8080", NULL };
	const char		*xsite[] = { "HTTP_SEC_FETCH_SITE=cross-site",
	    NULL };
	const char		*samesite[] = { "HTTP_SEC_FETCH_SITE=same-site",
	    NULL };
	const char		*qmismatch[] = { "QUERY_STRING=session_id=b",
	    NULL };
	const char		*qbad[] = { "QUERY_STRING=session_id=a%20b",
	    NULL };

	memset(big, ' ', sizeof(big) - 1);
	big[0] = '{';
	big[sizeof(big) - 2] = '}';
	big[sizeof(big) - 1] = '\0';

	/* 403 gate beats everything, even a wrong method. */
	cr_expect_eq(status_of("GET", "start", NULL, public), 403);
	/* 405 beats Host, CSRF, size, type. */
	cr_expect_eq(status_of("GET", "start", NULL, badhost), 405);
	cr_expect_eq(status_of("POST", "output", json, NULL), 405);
	cr_expect_eq(status_of("DELETE", "list", NULL, NULL), 405);
	/* 403 Host and CSRF beat 413 and 415. */
	cr_expect_eq(status_of("POST", "start", big, badhost_ct), 403);
	cr_expect_eq(status_of("POST", "start", big, xorigin), 403);
	cr_expect_eq(status_of("POST", "start", json, nullorigin), 403);
	cr_expect_eq(status_of("POST", "start", json, xsite), 403);
	cr_expect_eq(status_of("POST", "start", json, samesite), 403);
	cr_expect_eq(status_of("GET", "list", NULL, xorigin), 403);
	/* 413 beats 415. */
	cr_expect_eq(status_of("POST", "start", big, ct_text), 413);
	cr_expect_eq(status_of("POST", "start", big, NULL), 413);
	/* 415 beats 400. */
	cr_expect_eq(status_of("POST", "start", "{nope", ct_text), 415);
	/* 400 beats 503 (ptyd is down in these cases). */
	cr_expect_eq(status_of("POST", "start", "{nope", NULL), 400);
	cr_expect_eq(status_of("POST", "start", "[]", NULL), 400);
	cr_expect_eq(status_of("POST", "start", "{}", NULL), 400);
	cr_expect_eq(status_of("POST", "start", json, qmismatch), 400);
	cr_expect_eq(status_of("POST", "start", json, qbad), 400);
	cr_expect_eq(status_of("POST", "start",
	    "{\"session_id\": \"a\", \"rows\": \"30\"}", NULL), 400);
	cr_expect_eq(status_of("POST", "resize",
	    "{\"session_id\": \"a\", \"cols\": 80.5}", NULL), 400);
	cr_expect_eq(status_of("POST", "start",
	    "{\"session_id\": \"a\", \"restart\": 1}", NULL), 400);
	cr_expect_eq(status_of("POST", "input", json, NULL), 400,
	    "missing data");
	cr_expect_eq(status_of("POST", "input",
	    "{\"session_id\": \"a\", \"data\": null}", NULL), 400);
	cr_expect_eq(status_of("POST", "input",
	    "{\"session_id\": \"a\", \"data\": 5}", NULL), 400);
	cr_expect_eq(status_of("GET", "output", NULL, NULL), 400,
	    "output needs session_id");
	/* Past the checks: ptyd is down. */
	cr_expect_eq(status_of("POST", "start", json, okorigin), 503);
	cr_expect_eq(status_of("POST", "start",
	    "{\"session_id\": \"a\", \"rows\": 30.0, \"cols\": null}", NULL),
	    503);
	cr_expect_eq(status_of("POST", "close", json, NULL), 503);
	/* Unknown endpoints. */
	cr_expect_eq(status_of("GET", "nosuch", NULL, NULL), 404);
}

Test(cgi, input_limit_counts_code_points)
{
	/* 8192 three-byte characters pass; 8193 one-byte ones do not. */
	static char	body[8192 * 3 + 64];
	size_t		i, n;

	n = (size_t)snprintf(body, sizeof(body),
	    "{\"session_id\": \"a\", \"data\": \"");
	for (i = 0; i < 8192; i++) {
		memcpy(body + n, "\xe2\x82\xac", 3);
		n += 3;
	}
	memcpy(body + n, "\"}", 3);
	cr_expect_eq(status_of("POST", "input", body, NULL), 503);

	n = (size_t)snprintf(body, sizeof(body),
	    "{\"session_id\": \"a\", \"data\": \"");
	memset(body + n, 'x', 8193);
	memcpy(body + n + 8193, "\"}", 3);
	cr_expect_eq(status_of("POST", "input", body, NULL), 413);
}

Test(cgi, unreachable_ptyd_is_503_with_retry_after)
{
	struct env	e;
	static struct res r;

	env_base(&e, "GET", "health");
	cgi_run(&e, NULL, 0, 0, &r);
	env_free(&e);
	cr_expect_eq(r.status, 503);
	cr_expect(strstr(r.out, "Retry-After: ") != NULL);
	cr_expect(strstr(r.body, tmpdir) == NULL, "no paths in errors");
}

Test(cgi, endpoint_from_path_info_or_request_uri)
{
	const char	*pi[] = { "DOCUMENT_URI=", "PATH_INFO=/x/nosuch",
	    NULL };
	const char	*ru[] = { "DOCUMENT_URI=",
	    "REQUEST_URI=/any/mount/nosuch?session_id=a", NULL };
	const char	*ru2[] = { "DOCUMENT_URI=",
	    "REQUEST_URI=/any/mount/health?x=1", NULL };

	cr_expect_eq(status_of("GET", "health", NULL, pi), 404);
	cr_expect_eq(status_of("GET", "health", NULL, ru), 404);
	cr_expect_eq(status_of("GET", "health", NULL, ru2), 503);
}

/* ---- against the real ptyd ---- */

static int
have_ptyd(void)
{
	return (access(PTYD_BIN, X_OK) == 0);
}

static void
ptyd_start_args(const char *const *extra)
{
	char	run[300], db[300], home[300];
	char	*argv[20];
	int	a = 0, i;

	snprintf(run, sizeof(run), "%s/run", tmpdir);
	snprintf(db, sizeof(db), "%s/ptyd.db", tmpdir);
	snprintf(home, sizeof(home), "%s", tmpdir);
	cr_assert_eq(mkdir(run, 0700), 0);
	ptyd_pid = fork();
	cr_assert_neq(ptyd_pid, -1);
	if (ptyd_pid == 0) {
		int	null = open("/dev/null", O_RDWR);

		dup2(null, 0);
		setenv("HOME", home, 1);
		argv[a++] = (char *)"ptyd";
		argv[a++] = (char *)"-f";
		argv[a++] = (char *)"--socket";
		argv[a++] = sockpath;
		argv[a++] = (char *)"--db";
		argv[a++] = db;
		argv[a++] = (char *)"--shell";
		argv[a++] = (char *)"/bin/sh";
		for (i = 0; extra != NULL && extra[i] != NULL && a < 19; i++)
			argv[a++] = (char *)extra[i];
		argv[a] = NULL;
		execv(PTYD_BIN, argv);
		_exit(127);
	}
	/* Wait for the socket to appear and answer. */
	{
		int64_t	deadline = now_ms() + 10000;
		struct stat sb;

		while (stat(sockpath, &sb) == -1 && now_ms() < deadline)
			poll(NULL, 0, 10);
	}
}

static void
ptyd_start(void)
{
	ptyd_start_args(NULL);
}

static struct res *
req(const char *method, const char *endpoint, const char *body,
    const char *const *extra)
{
	static struct res	r;
	struct env		e;
	int			i;

	env_base(&e, method, endpoint);
	for (i = 0; extra != NULL && extra[i] != NULL; i++)
		env_set(&e, extra[i]);
	cgi_run(&e, body, body != NULL ? strlen(body) : 0, 0, &r);
	env_free(&e);
	return (&r);
}

/* Read a CGI output stream until needle shows up (or the deadline). */
static int
stream_until(int fd, struct res *r, const char *needle, int64_t deadline)
{
	struct pollfd	pfd = { fd, POLLIN, 0 };
	ssize_t		n;

	while (strstr(r->out, needle) == NULL) {
		int64_t left = deadline - now_ms();

		if (left <= 0 || poll(&pfd, 1, (int)left) != 1)
			return (0);
		n = read(fd, r->out + r->len, sizeof(r->out) - 1 - r->len);
		if (n <= 0)
			return (0);
		r->len += (size_t)n;
		r->out[r->len] = '\0';
	}
	return (1);
}

Test(cgi, end_to_end_start_input_output_close)
{
	static struct res	 s;
	struct res		*r;
	struct env		 e;
	const char		*q[] = { "QUERY_STRING=session_id=e2e", NULL };
	char			 lei[64], *id;
	int			 fd;
	pid_t			 pid;
	int64_t			 t0;

	if (!have_ptyd())
		cr_skip_test("ptyd is not built");
	ptyd_start();

	r = req("POST", "start", "{\"session_id\": \"e2e\", \"rows\": 1, "
	    "\"cols\": 5000}", NULL);
	cr_assert_eq(r->status, 200, "%s", r->out);
	cr_expect(strstr(r->body, "\"ok\": true") != NULL);
	cr_expect(strstr(r->body, "\"session_id\": \"e2e\"") != NULL);
	cr_expect(strstr(r->body, "\"running\": true") != NULL);
	r = req("POST", "input", "{\"session_id\": \"e2e\", \"data\": "
	    "\"echo mark-$((40+2)) $LINES $COLUMNS\\n\"}", NULL);
	cr_assert_eq(r->status, 200, "%s", r->out);
	r = req("POST", "input", "{\"session_id\": \"e2e\", \"data\": \"\"}",
	    NULL);
	cr_expect_eq(r->status, 200, "empty input is fine");

	/* The stream, as CGI: headers, then the replayed backlog. */
	env_base(&e, "GET", "output");
	env_set(&e, q[0]);
	pid = cgi_spawn(&e, NULL, 0, 0, &fd);
	env_free(&e);
	s.len = 0;
	s.out[0] = '\0';
	cr_assert(stream_until(fd, &s, "mark-42 2 1000", now_ms() + 10000),
	    "clamped size and marker in the stream: %s", s.out);
	cr_expect(strncmp(s.out, "Status: 200 OK\r\nContent-Type: "
	    "text/event-stream; charset=utf-8\r\nCache-Control: no-cache\r\n"
	    "X-Accel-Buffering: no\r\n\r\n", 106) == 0, "%s", s.out);
	cr_expect(strstr(s.out, "\nevent: output\ndata: {\"text\": \"") !=
	    NULL);
	/* The id of the event that carried the marker. */
	id = strstr(s.out, "mark-42 2 1000");
	while (id > s.out && strncmp(id, "id: ", 4) != 0)
		id--;
	cr_assert(strncmp(id, "id: ", 4) == 0);
	snprintf(lei, sizeof(lei), "HTTP_LAST_EVENT_ID=%.*s",
	    (int)strcspn(id + 4, "\n"), id + 4);

	/* The client goes away: the CGI process ends within a second. */
	t0 = now_ms();
	close(fd);
	cr_expect_eq(waitpid_deadline(pid, now_ms() + 3000), 0);
	cr_expect_lt(now_ms() - t0, 1500, "noticed the client leaving");

	/* Reconnect with Last-Event-ID: only newer output. */
	r = req("POST", "input", "{\"session_id\": \"e2e\", \"data\": "
	    "\"echo second-$((1+1))\\n\"}", NULL);
	cr_assert_eq(r->status, 200);
	env_base(&e, "GET", "output");
	env_set(&e, q[0]);
	env_set(&e, lei);
	pid = cgi_spawn(&e, NULL, 0, 0, &fd);
	env_free(&e);
	s.len = 0;
	s.out[0] = '\0';
	cr_assert(stream_until(fd, &s, "second-2", now_ms() + 10000));
	cr_expect(strstr(s.out, "mark-42") == NULL, "no byte twice");

	/* Exit: terminal_closed with the code, and the CGI stream ends. */
	r = req("POST", "input", "{\"session_id\": \"e2e\", \"data\": "
	    "\"exit 7\\n\"}", NULL);
	cr_assert_eq(r->status, 200);
	cr_assert(stream_until(fd, &s, "\"reason\": \"exit\"}",
	    now_ms() + 10000), "%s", s.out);
	cr_expect(strstr(s.out, "event: terminal_closed\ndata: "
	    "{\"exit_code\": 7, \"reason\": \"exit\"}\n\n") != NULL);
	cr_expect_eq(waitpid_deadline(pid, now_ms() + 3000), 0,
	    "the stream ends after terminal_closed");
	close(fd);

	/* Lingering: input 404, list shows it exited, close retires it. */
	r = req("POST", "input", "{\"session_id\": \"e2e\", \"data\": \"x\"}",
	    NULL);
	cr_expect_eq(r->status, 404);
	cr_expect(strstr(r->body, "terminal not running") != NULL);
	r = req("GET", "list", NULL, NULL);
	cr_expect_eq(r->status, 200);
	cr_expect(strstr(r->body, "\"exit_code\": 7") != NULL, "%s", r->body);
	r = req("POST", "close", "{\"session_id\": \"e2e\"}", NULL);
	cr_expect_eq(r->status, 200);
	r = req("POST", "close", "{\"session_id\": \"e2e\"}", NULL);
	cr_expect_eq(r->status, 200);
	cr_expect(strstr(r->body, "\"closed\": false") != NULL);
	r = req("GET", "output", NULL, q);
	cr_expect_eq(r->status, 404, "not registered: 404 before any 200");
	cr_expect(strstr(r->body, "terminal not running") != NULL);
	r = req("GET", "health", NULL, NULL);
	cr_expect_eq(r->status, 200);
	cr_expect(strstr(r->body, "{\"status\": \"ok\", \"ok\": true, ") ==
	    r->body, "%s", r->body);
	cr_expect(strstr(r->body, "\"ptyd\": {\"pid\": ") != NULL, "%s",
	    r->body);
}

Test(cgi, owners_are_separate)
{
	struct res	*r;
	const char	*alice[] = { "REMOTE_USER=alice", NULL };
	const char	*bob[] = { "REMOTE_USER=bob", NULL };

	if (!have_ptyd())
		cr_skip_test("ptyd is not built");
	ptyd_start();
	r = req("POST", "start", "{\"session_id\": \"same\"}", alice);
	cr_assert_eq(r->status, 200, "%s", r->out);
	r = req("POST", "input", "{\"session_id\": \"same\", \"data\": \"x\"}",
	    bob);
	cr_expect_eq(r->status, 404, "bob cannot type into alice's");
	r = req("GET", "list", NULL, bob);
	cr_expect(strstr(r->body, "\"terminals\": []") != NULL, "%s",
	    r->body);
	r = req("POST", "close", "{\"session_id\": \"same\"}", bob);
	cr_expect(strstr(r->body, "\"closed\": false") != NULL);
	r = req("GET", "list", NULL, alice);
	cr_expect(strstr(r->body, "\"session_id\": \"same\"") != NULL);
	r = req("POST", "close", "{\"session_id\": \"same\"}", alice);
	cr_expect(strstr(r->body, "\"closed\": true") != NULL);
}

/* Count processes whose command line mentions our socket. */
/* Processes of this account's socket: ptyd (keeper 0) or its keeper (1). */
static int
count_ptyd_kind(int keeper)
{
	char		 path[300], buf[4096];
	struct dirent	*d;
	DIR		*dir;
	int		 n = 0, fd;
	ssize_t		 len, i;

	cr_assert_not_null(dir = opendir("/proc"));
	while ((d = readdir(dir)) != NULL) {
		if (d->d_name[0] < '0' || d->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", d->d_name);
		if ((fd = open(path, O_RDONLY)) == -1)
			continue;
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;
		for (i = 0; i < len; i++)
			if (buf[i] == '\0')
				buf[i] = ' ';
		buf[len] = '\0';
		if (strstr(buf, sockpath) != NULL &&
		    strstr(buf, "ptyd.fcgi") == NULL &&
		    (strncmp(buf, "ptyd-keeper ", 12) == 0) == keeper)
			n++;
	}
	closedir(dir);
	return (n);
}

static int
count_ptyd(void)
{
	return (count_ptyd_kind(0));
}

Test(cgi, autostart_starts_ptyd_exactly_once)
{
	enum { N = 8 };
	static struct res	r[N];
	struct env		e;
	pid_t			pids[N];
	int			fds[N], i;
	char			*p;

	if (!have_ptyd())
		cr_skip_test("ptyd is not built");
	/* N concurrent requests all find ptyd down. */
	for (i = 0; i < N; i++) {
		env_base(&e, "GET", "health");
		pids[i] = cgi_spawn(&e, NULL, 0, 1, &fds[i]);
		env_free(&e);
	}
	for (i = 0; i < N; i++) {
		read_all(fds[i], &r[i], now_ms() + 20000);
		close(fds[i]);
		cr_expect_eq(waitpid_deadline(pids[i], now_ms() + 5000), 0);
		parse(&r[i]);
		cr_expect_eq(r[i].status, 200, "%s", r[i].out);
	}
	cr_expect_eq(count_ptyd(), 1, "one ptyd for the account");
	cr_expect_eq(count_ptyd_kind(1), 1, "one keeper for the account");
	cr_assert_not_null(p = strstr(r[0].body, "\"pid\": "));
	ptyd_pid = (pid_t)atoi(p + 7);
	for (i = 1; i < N; i++) {
		cr_assert_not_null(p = strstr(r[i].body, "\"pid\": "));
		cr_expect_eq(atoi(p + 7), ptyd_pid, "every request met the "
		    "same ptyd");
	}
}

/* An open CGI stream (pid, fd) with the response so far in r. */
static pid_t
stream_open(const char *query, const char *lei, int *fd, struct res *r)
{
	struct env	e;
	char		q[256];
	pid_t		pid;

	env_base(&e, "GET", "output");
	snprintf(q, sizeof(q), "QUERY_STRING=%s", query);
	env_set(&e, q);
	if (lei != NULL)
		env_set(&e, lei);
	pid = cgi_spawn(&e, NULL, 0, 0, fd);
	env_free(&e);
	r->len = 0;
	r->out[0] = '\0';
	return (pid);
}

Test(cgi, gap_viewer_limit_and_base64)
{
	static const char *const	 opts[] = { "--ring-size", "4096",
	    "--max-viewers", "1", NULL };
	static struct res		 s, s2;
	struct res			*r;
	char				 lei[64], *p;
	int				 fd, fd2;
	pid_t				 pid, pid2;

	if (!have_ptyd())
		cr_skip_test("ptyd is not built");
	ptyd_start_args(opts);
	r = req("POST", "start", "{\"session_id\": \"g\"}", NULL);
	cr_assert_eq(r->status, 200, "%s", r->out);
	r = req("POST", "input", "{\"session_id\": \"g\", \"data\": "
	    "\"echo first-$((1+1))\\n\"}", NULL);
	cr_assert_eq(r->status, 200);

	/* One viewer: note the first event's id. */
	pid = stream_open("session_id=g", NULL, &fd, &s);
	cr_assert(stream_until(fd, &s, "first-2", now_ms() + 10000));
	cr_assert_not_null(p = strstr(s.out, "\nid: "));
	snprintf(lei, sizeof(lei), "HTTP_LAST_EVENT_ID=%.*s",
	    (int)strcspn(p + 5, "\n"), p + 5);

	/* At the viewer limit a second stream is refused before any 200. */
	r = req("GET", "output", NULL, (const char *const[]){
	    "QUERY_STRING=session_id=g", NULL });
	cr_expect_eq(r->status, 429, "%s", r->out);
	close(fd);
	cr_expect_eq(waitpid_deadline(pid, now_ms() + 3000), 0);

	/* Overflow the 4 KiB ring, then resume from the old id: gap. */
	r = req("POST", "input", "{\"session_id\": \"g\", \"data\": "
	    "\"i=0; while [ $i -lt 200 ]; do echo "
	    "0123456789012345678901234567890123456789; i=$((i+1)); done; "
	    "echo done-$((3+4))\\n\"}", NULL);
	cr_assert_eq(r->status, 200);
	/* The loop has ended (a viewer of the tail saw it) before the old id
	 * comes back: a resume while it ran could still find its bytes. */
	pid = stream_open("session_id=g", NULL, &fd, &s2);
	cr_assert(stream_until(fd, &s2, "done-7", now_ms() + 15000), "%s",
	    s2.out);
	close(fd);
	cr_expect_eq(waitpid_deadline(pid, now_ms() + 3000), 0);
	pid = stream_open("session_id=g", lei, &fd, &s);
	cr_assert(stream_until(fd, &s, "done-7", now_ms() + 15000), "%s",
	    s.out);
	cr_expect(strstr(s.out, "event: gap\ndata: {\"lost\": ") != NULL,
	    "%s", s.out);
	cr_expect(strstr(s.out, "first-2") == NULL);
	close(fd);
	cr_expect_eq(waitpid_deadline(pid, now_ms() + 3000), 0);

	/* Base64: the raw bytes, in {"b64": ...}. */
	pid2 = stream_open("session_id=g&encoding=base64", NULL, &fd2, &s2);
	cr_assert(stream_until(fd2, &s2, "event: output\ndata: {\"b64\": \"",
	    now_ms() + 10000), "%s", s2.out);
	cr_expect(strstr(s2.out, "\"text\"") == NULL);
	close(fd2);
	cr_expect_eq(waitpid_deadline(pid2, now_ms() + 3000), 0);
	r = req("GET", "output", NULL, (const char *const[]){
	    "QUERY_STRING=session_id=g&encoding=hex", NULL });
	cr_expect_eq(r->status, 400);
}
