/*
 * termsbench.c -- issue 17's scale of terminals: N real shells (/bin/sh,
 * dash on Debian, to keep memory sane) in one ptyd, each started over
 * ptyd's socket as ptyd.fcgi would, beside a baseline from the same run.
 *
 * Owns: a private ptyd in a temporary directory with its caps raised to
 * N; the kernel's limits that apply (ptys, pids, threads, descriptors,
 * processes) and, as root and only when N needs it, raising
 * kernel.pty.max for the run (put back after); each start's latency per
 * band of 500 terminals against the latency with 10 present; the reaper's
 * tick and the mirror's flush with N terminals (ptyd's own timing, read
 * from MSG_STATS); ptyd's memory per terminal; that every terminal
 * answers (input, then its output read back on a viewer) and that the
 * mirror holds one running row for each.  Prints what it did and exits
 * non-zero on any correctness failure, never on a speed figure.
 * Does not own: the other daemon figures (bench/daemon/ptydbench).
 */
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "benchutil.h"
#include "client.h"
#include "frame.h"
#include "proto.h"

#ifndef PTYD_BIN
#define PTYD_BIN "ptyd/ptyd"
#endif

#define CALL_MS	  30000
#define BAND	  500
#define BASE_N	  10  /* terminals present for the baseline */
#define BASE_REPS 200 /* baseline starts timed */
#define PTY_MAX	  "/proc/sys/kernel/pty/max"

static const char *ptyd_bin = PTYD_BIN;
static int	   nterms = 5000;
static int	   raise_pty = 1;
static int	   quiet;
static int	   keep; /* --keep: leave the daemons' directories */
static uint8_t	   fbuf[PROTO_HDR_LEN + PROTO_MAX_PAYLOAD];
struct daemon {
	char  dir[64];
	char  sock[128];
	pid_t pid;
};
/* big: the N terminals; base: BASE_N terminals, the baseline's daemon,
 * timed between big's bands so that both see the same moments. */
static struct daemon big = { "", "", -1 }, base = { "", "", -1 };
static struct daemon *cur = &big; /* the one requests go to */
static long	   pty_max_was = -1; /* what we changed, to put back */
static int	   failures;

/* The q quantile (0..1) of v[0..n), sorting v. */
static double
quantile(double *v, size_t n, double q)
{
	size_t i;

	qsort(v, n, sizeof(*v), cmp_double);
	i = (size_t)(q * (double)(n - 1) + 0.5);
	return (v[i < n ? i : n - 1]);
}

static void fail(const char *, ...) __attribute__((format(printf, 1, 2)));

static void
fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "termsbench: FAIL: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	failures++;
}

static void pty_max_restore(void);

static void
diex(const char *what)
{
	fprintf(stderr, "termsbench: %s\n", what);
	if (big.pid > 0)
		kill(big.pid, SIGKILL);
	if (base.pid > 0)
		kill(base.pid, SIGKILL);
	pty_max_restore();
	exit(1);
}

/* Kernel limits. */

static long
read_long(const char *path)
{
	FILE *f;
	long  v = -1;

	if ((f = fopen(path, "r")) == NULL)
		return (-1);
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return (v);
}

static int
write_long(const char *path, long v)
{
	FILE *f;
	int   r;

	if ((f = fopen(path, "w")) == NULL)
		return (-1);
	r = fprintf(f, "%ld\n", v) < 0;
	return (fclose(f) != 0 || r ? -1 : 0);
}

static void
print_rlimit(const char *name, int res)
{
	struct rlimit rl;

	if (getrlimit(res, &rl) == -1)
		return;
	printf("limit\t%s soft %lld hard %lld\n", name,
	    rl.rlim_cur == RLIM_INFINITY ? -1LL : (long long)rl.rlim_cur,
	    rl.rlim_max == RLIM_INFINITY ? -1LL : (long long)rl.rlim_max);
}

static void
limits_print(void)
{
	printf("limit\tkernel.pty.max %ld nr %ld reserve %ld\n",
	    read_long(PTY_MAX), read_long("/proc/sys/kernel/pty/nr"),
	    read_long("/proc/sys/kernel/pty/reserve"));
	printf("limit\tkernel.pid_max %ld threads-max %ld cgroup pids.max %ld"
	    " (-1: none or unreadable)\n",
	    read_long("/proc/sys/kernel/pid_max"),
	    read_long("/proc/sys/kernel/threads-max"),
	    read_long("/sys/fs/cgroup/pids.max"));
	print_rlimit("RLIMIT_NOFILE (ptyd raises soft to hard)", RLIMIT_NOFILE);
	print_rlimit("RLIMIT_NPROC", RLIMIT_NPROC);
}

/* Room for n more ptys: raise kernel.pty.max if we must and may. */
static void
pty_max_ensure(int n)
{
	long max = read_long(PTY_MAX), nr = read_long("/proc/sys/kernel/pty/nr");
	long want;

	if (max < 0 || nr < 0 || nr + n + 64 <= max) {
		printf("pty\tkernel.pty.max %ld leaves room for %d more: left"
		       " as it is\n",
		    max, n);
		return;
	}
	want = ((nr + n + 64) / 1024 + 1) * 1024;
	if (!raise_pty) {
		printf("pty\tkernel.pty.max %ld < %ld needed: not raised"
		       " (--no-raise); expect the start past it to fail\n",
		    max, nr + n);
		return;
	}
	if (write_long(PTY_MAX, want) == -1 || read_long(PTY_MAX) != want) {
		printf("pty\tkernel.pty.max %ld: raising it to %ld refused"
		       " (%s); expect the start past it to fail\n",
		    max, want, strerror(errno));
		return;
	}
	pty_max_was = max;
	printf("pty\tkernel.pty.max raised %ld -> %ld for this run (root;"
	       " put back at the end)\n",
	    max, want);
}

static void
pty_max_restore(void)
{
	if (pty_max_was < 0)
		return;
	if (write_long(PTY_MAX, pty_max_was) == 0)
		printf("pty\tkernel.pty.max put back to %ld\n", pty_max_was);
	pty_max_was = -1;
}

/* The private ptyd. */

static void
ptyd_start(struct daemon *d, int maxterms)
{
	char	   *dir = d->dir, *sock = d->sock;
	char	    db[128], log[128], cap[32];
	const char *argv[] = { ptyd_bin, "-f", "--socket", sock, "--db", db,
		"--log", log, "--shell", "/bin/sh", "--max-terminals", cap,
		"--max-per-owner", cap, "--idle-grace", "100000",
		"--reap-interval", "1", "--linger", "2", NULL };
	double	    dl;
	int	    fd;

	snprintf(d->dir, sizeof(d->dir), "/tmp/termsbench-XXXXXX");
	if (mkdtemp(dir) == NULL)
		diex("mkdtemp");
	snprintf(d->sock, sizeof(d->sock), "%s/ptyd.sock", dir);
	snprintf(db, sizeof(db), "%s/ptyd.db", dir);
	snprintf(log, sizeof(log), "%s/ptyd.log", dir);
	snprintf(cap, sizeof(cap), "%d", maxterms);
	if ((d->pid = fork()) == -1)
		diex("fork");
	if (d->pid == 0) {
		setenv("HOME", dir, 1);
		unsetenv("ENV");
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	dl = now_s() + 10;
	while ((fd = client_connect(sock, client_now_ms() + 200)) == -1) {
		if (now_s() > dl || waitpid(d->pid, NULL, WNOHANG) != 0)
			diex("ptyd did not come up");
		sleep_s(0.02);
	}
	close(fd);
}

/* SIGTERM; how long the shutdown of every terminal took. */
static double
ptyd_stop(struct daemon *d)
{
	double t0 = now_s();
	int    status;

	kill(d->pid, SIGTERM);
	while (waitpid(d->pid, &status, 0) == -1 && errno == EINTR)
		;
	d->pid = -1;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail("ptyd ended badly (status %d)", status);
	t0 = now_s() - t0;
	if (keep)
		printf("kept\t%s (ptyd.log, ptyd.db)\n", d->dir);
	else
		rm_tree(d->dir);
	return (t0);
}

/* One exchange; the reply's type, its body in *reply. */
static uint16_t
call(uint16_t type, const void *msg, void *reply)
{
	const char *what;
	int	    t;

	if ((t = bench_call(cur->sock, type, msg, reply, CALL_MS, &what)) ==
	    -1) {
		if (waitpid(cur->pid, NULL, WNOHANG) != 0)
			diex("ptyd died");
		diex(what);
	}
	return ((uint16_t)t);
}

/* Start sid: 0, or -1 with the error (code and words) printed. */
static int
t_start(const char *sid)
{
	struct msg_start m;
	union {
		struct msg_started ok;
		struct msg_error   err;
	} r;

	memset(&m, 0, sizeof(m));
	snprintf(m.sid, sizeof(m.sid), "%s", sid);
	if (call(MSG_START, &m, &r) == MSG_STARTED)
		return (0);
	printf("start\t%s refused: code %u: %s\n", sid, r.err.code,
	    r.err.message);
	return (-1);
}

static void
t_close(const char *sid)
{
	struct msg_close       m;
	struct msg_close_reply r;

	memset(&m, 0, sizeof(m));
	snprintf(m.sid, sizeof(m.sid), "%s", sid);
	if (call(MSG_CLOSE, &m, &r) != MSG_CLOSE_REPLY || !r.closed)
		diex("close");
}

static int
t_input(const char *sid, const char *s)
{
	struct msg_input m;

	memset(&m, 0, sizeof(m));
	snprintf(m.sid, sizeof(m.sid), "%s", sid);
	m.data = (const uint8_t *)s;
	m.len = strlen(s);
	return (call(MSG_INPUT, &m, NULL) == MSG_INPUT_DONE ? 0 : -1);
}

static void
t_resize(const char *sid, unsigned int rows)
{
	struct msg_resize m;

	memset(&m, 0, sizeof(m));
	snprintf(m.sid, sizeof(m.sid), "%s", sid);
	m.rows = (uint16_t)rows;
	m.cols = 80;
	(void)call(MSG_RESIZE, &m, NULL);
}

static void
t_stats(struct msg_stats_reply *r)
{
	if (call(MSG_STATS, NULL, r) != MSG_STATS_REPLY)
		diex("stats");
}

/* Attach to sid and read until want turns up: 0, or -1 within ms. */
static int
t_expect(const char *sid, const char *want, int ms)
{
	struct msg_attach m;
	struct frame_out  fo;
	struct frame_hdr  h;
	int64_t		  dl = client_now_ms() + ms;
	char		  seen[8192];
	size_t		  n = 0, k;
	int		  fd, r = -1;

	memset(&m, 0, sizeof(m));
	snprintf(m.sid, sizeof(m.sid), "%s", sid);
	frame_out_init(&fo);
	if (msg_encode(&fo, MSG_ATTACH, &m) == -1)
		diex("encode");
	if ((fd = client_connect(cur->sock, dl)) == -1 ||
	    client_send(fd, &fo, dl) == -1)
		diex("attach");
	frame_out_free(&fo);
	while (r == -1 && client_recv(fd, &h, fbuf, sizeof(fbuf), dl) == 0) {
		if (h.type != MSG_OUTPUT && h.type != MSG_ATTACHED)
			break;
		if (h.type != MSG_OUTPUT || h.len <= 8)
			continue;
		k = h.len - 8;
		if (k > sizeof(seen) - 1 - n) {
			n = 0; /* keep the tail only: the answer comes last */
			k = k < sizeof(seen) - 1 ? k : sizeof(seen) - 1;
		}
		memcpy(seen + n, fbuf + PROTO_HDR_LEN + 8 + (h.len - 8 - k), k);
		n += k;
		seen[n] = '\0';
		if (memmem(seen, n, want, strlen(want)) != NULL)
			r = 0;
	}
	close(fd);
	return (r);
}

/* Wait until ptyd has finished k more flushes than when called. */
static void
wait_flushes(int k)
{
	struct msg_stats_reply s;
	uint64_t	       f0;
	double		       dl = now_s() + 10;

	t_stats(&s);
	f0 = s.flushes;
	do {
		sleep_s(0.1);
		t_stats(&s);
	} while (s.flushes < f0 + (uint64_t)k && now_s() < dl);
}

/* BASE_N terminals b0.. in d. */
static void
start_base_terms(struct daemon *d)
{
	char sid[32];
	int  i;

	cur = d;
	for (i = 0; i < BASE_N; i++) {
		snprintf(sid, sizeof(sid), "b%d", i);
		if (t_start(sid) == -1)
			diex("start refused below any limit");
	}
	cur = &big;
}

/*
 * The baseline: BASE_REPS starts in the base daemon, which holds BASE_N
 * terminals, in batches of BASE_N started back to back (as the bands are)
 * and then closed; their times into v.
 */
static void
base_sample(double *v)
{
	double t0;
	char   sid[32];
	int    i, j;

	cur = &base;
	for (i = 0; i < BASE_REPS; i += BASE_N) {
		for (j = 0; j < BASE_N; j++) {
			snprintf(sid, sizeof(sid), "x%d", j);
			t0 = now_s();
			if (t_start(sid) == -1)
				diex("baseline start refused");
			v[i + j] = now_s() - t0;
		}
		for (j = 0; j < BASE_N; j++) {
			snprintf(sid, sizeof(sid), "x%d", j);
			t_close(sid);
		}
	}
	cur = &big;
}

/*
 * Start terminals n<BASE_N>..n<N-1> in big (b0.. already there), timing
 * each; after each band of BAND, the baseline sampled again, and one line
 * with both.  Stops at the first refusal (a limit); returns how many
 * terminals big holds.  *worst: the highest band p50 and its ratio.
 */
static int
bench_spawn(double *worst50, double *worst_ratio)
{
	double *v, bv[BASE_REPS], t0, p50, p99, b50;
	char	sid[32];
	int	i, k = 0, lo = BASE_N, refused = 0;

	v = calloc(BAND, sizeof(*v));
	*worst50 = *worst_ratio = 0;
	for (i = BASE_N; i < nterms && !refused; i++) {
		snprintf(sid, sizeof(sid), "n%d", i);
		t0 = now_s();
		if (t_start(sid) == -1)
			refused = 1;
		else
			v[k++] = now_s() - t0;
		if (k == 0 ||
		    ((i + 1) % BAND != 0 && i + 1 < nterms && !refused))
			continue;
		base_sample(bv);
		b50 = quantile(bv, BASE_REPS, 0.5);
		p99 = quantile(v, (size_t)k, 0.99);
		p50 = quantile(v, (size_t)k, 0.5);
		if (p50 > *worst50)
			*worst50 = p50;
		if (p50 / b50 > *worst_ratio)
			*worst_ratio = p50 / b50;
		if (!quiet)
			printf("spawn	terminals %5d-%5d: start p50 %.3f ms"
			       " p99 %.3f ms max %.3f ms	baseline (%d present,"
			       " same moments) p50 %.3f ms	ratio %.2f\n",
			    lo, lo + k, p50 * 1e3, p99 * 1e3, v[k - 1] * 1e3,
			    BASE_N, b50 * 1e3, p50 / b50);
		lo += k;
		k = 0;
	}
	free(v);
	return (refused ? i - 1 : i);
}

/* Every terminal types a line and its answer is read back on a viewer. */
static void
check_answers(int n)
{
	char sid[32], line[64], want[32];
	int  i, bad = 0;

	for (i = 0; i < n; i++) {
		snprintf(sid, sizeof(sid), i < BASE_N ? "b%d" : "n%d", i);
		snprintf(line, sizeof(line), "echo ok''%d.\n", i);
		if (t_input(sid, line) == -1)
			bad++;
	}
	for (i = 0; i < n; i++) {
		snprintf(sid, sizeof(sid), i < BASE_N ? "b%d" : "n%d", i);
		snprintf(want, sizeof(want), "ok%d.", i);
		if (t_expect(sid, want, 10000) == -1 && bad++ < 5)
			fail("terminal %s did not answer", sid);
	}
	printf("check\t%d of %d terminals answered their input on a viewer\n",
	    n - bad, n);
	if (bad > 0)
		fail("%d terminals did not answer", bad);
}

/* The mirror: one running row per terminal. */
static void
check_rows(int n)
{
	sqlite3	     *db;
	sqlite3_stmt *st;
	char	      path[128];
	long	      rows = -1;

	wait_flushes(2);
	snprintf(path, sizeof(path), "%s/ptyd.db", big.dir);
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		diex("open ptyd.db");
	sqlite3_busy_timeout(db, 5000);
	if (sqlite3_prepare_v2(db,
		"SELECT count(*) FROM terminals WHERE state = 'running'", -1,
		&st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		rows = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	printf("check\tmirror: %ld running rows for %d terminals\n", rows, n);
	if (rows != n)
		fail("mirror rows: %ld", rows);
}

/* The reaper's tick with n terminals (none due): ptyd's own timing.
 * --linger 2 makes the tick walk every terminal every other second (a
 * walk is due once a grace or a linger, see ptyd/reap.c): the longest
 * tick is a walk over all n, the last one may be a tick without. */
static void
bench_reaper(int n)
{
	struct msg_stats_reply s;
	uint64_t	       ticks, lo = UINT64_MAX, hi = 0;
	double		       dl = now_s() + 6.5;
	int		       seen = 0;

	t_stats(&s);
	ticks = s.reap_ticks;
	while (now_s() < dl) { /* every tick's duration, as it comes */
		sleep_s(0.1);
		t_stats(&s);
		if (s.reap_ticks == ticks)
			continue;
		ticks = s.reap_ticks;
		seen++;
		lo = s.reap_last_us < lo ? s.reap_last_us : lo;
		hi = s.reap_last_us > hi ? s.reap_last_us : hi;
	}
	if (seen == 0) {
		fail("the reaper did not tick");
		return;
	}
	printf("reaper\t%d terminals, %d ticks seen: shortest %.3f ms,"
	       " longest %.3f ms (a walk over all %d; before pidfds, also"
	       " the SIGCHLD net); longest since start %.3f ms\ttarget < 1 ms:"
	       " %s\n",
	    n, seen, (double)lo / 1e3, (double)hi / 1e3, n,
	    (double)s.reap_max_us / 1e3, hi < 1000 ? "met" : "MISSED");
	if (s.reaps != 0)
		fail("the reaper reaped %llu terminals",
		    (unsigned long long)s.reaps);
}

/*
 * The mirror's flush with n terminals: three rounds of every terminal
 * resized (each one's row changes, as output changes bytes_out), each
 * round's flushes watched as they come (ptyd writes a bounded number of
 * rows a flush and the rest at the next loop turns); then the database
 * file deleted, which makes ptyd rewrite every row in one transaction
 * (the worst case there is, and a rare one).
 */
static void
bench_flush(int n)
{
	struct msg_stats_reply s;
	char		       sid[32], path[160];
	uint64_t	       f0, hi = 0, hirows = 0, rows;
	double		       dl;
	int		       r, i, nf;

	for (r = 0; r < 3; r++) {
		t_stats(&s);
		f0 = s.flushes;
		for (i = 0; i < n; i++) {
			snprintf(sid, sizeof(sid), i < BASE_N ? "b%d" : "n%d",
			    i);
			t_resize(sid, 24 + (unsigned int)(r % 2 == 0));
		}
		/* Until every row is written: the lag is back to 0. */
		dl = now_s() + 15;
		do {
			sleep_s(0.05);
			t_stats(&s);
			if (s.flush_last_us > hi) {
				hi = s.flush_last_us;
				hirows = s.flush_last_rows;
			}
		} while (
		    (s.db_lag_us > 0 || s.flushes < f0 + 2) && now_s() < dl);
		nf = (int)(s.flushes - f0);
		printf("flush\tround %d: %d rows changed, written in %d flushes"
		       " (ptyd's longest since start %.2f ms, %llu rows)\n",
		    r + 1, n, nf, (double)s.flush_max_us / 1e3,
		    (unsigned long long)s.flush_max_rows);
	}
	printf("flush\tlongest flush seen over the rounds %.2f ms (%llu rows)"
	       "\ttarget < 50 ms: %s\n",
	    (double)s.flush_max_us / 1e3, (unsigned long long)s.flush_max_rows,
	    s.flush_max_us < 50000 ? "met" : "MISSED");
	(void)hi;
	(void)hirows;
	snprintf(path, sizeof(path), "%s/ptyd.db", big.dir);
	(void)unlink(path);
	dl = now_s() + 15;
	do {
		sleep_s(0.05);
		t_stats(&s);
		rows = s.flush_last_rows;
	} while (rows < (uint64_t)n && now_s() < dl);
	printf("flush\tdatabase deleted under ptyd: every row rewritten in"
	       " one flush %.2f ms (%llu rows; rare, not chunked)\n",
	    (double)s.flush_last_us / 1e3, (unsigned long long)rows);
}

/* MSG_STATS (health, metrics, ptydctl stats) with n terminals, against
 * the base daemon's 10: its gauges are counted by walking every terminal. */
static void
bench_stats(int n)
{
	struct msg_stats_reply s;
	double		       v[50], b[50], t0;
	int		       i;

	for (i = 0; i < 50; i++) {
		cur = &big;
		t0 = now_s();
		t_stats(&s);
		v[i] = now_s() - t0;
		cur = &base;
		t0 = now_s();
		t_stats(&s);
		b[i] = now_s() - t0;
	}
	cur = &big;
	printf(
	    "stats\tMSG_STATS (health, metrics) with %d terminals p50 %.3f ms"
	    "\tbaseline (%d present) p50 %.3f ms\tratio %.1f\n",
	    n, quantile(v, 50, 0.5) * 1e3, BASE_N, quantile(b, 50, 0.5) * 1e3,
	    quantile(v, 50, 0.5) / quantile(b, 50, 0.5));
}

static void
usage(void)
{
	fprintf(stderr,
	    "usage: termsbench [--ptyd PATH] [-n N] [--no-raise]"
	    " [--quiet] [--keep]\n");
	exit(2);
}

static void
options(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "ptyd", required_argument, NULL, 'p' },
		{ "no-raise", no_argument, NULL, 'R' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "keep", no_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "n:", opts, NULL)) != -1) {
		switch (ch) {
		case 'p':
			ptyd_bin = optarg;
			break;
		case 'n':
			if ((nterms = atoi(optarg)) < BASE_N + 1)
				usage();
			break;
		case 'R':
			raise_pty = 0;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'k':
			keep = 1;
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
}

int
main(int argc, char **argv)
{
	double worst50, ratio, down;
	long   anon0, rss0, avail0, anon1, rss1, avail1;
	int    n;
	char  *sh;

	options(argc, argv);
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	sh = realpath("/bin/sh", NULL);
	printf("terms\t%d terminals, each /bin/sh -> %s (dash keeps memory"
	       " low), one ptyd\n",
	    nterms, sh != NULL ? sh : "?");
	free(sh);
	limits_print();
	pty_max_ensure(nterms + BASE_N);
	ptyd_start(&big, nterms + BASE_N + 16);
	ptyd_start(&base, 2 * BASE_N + 16);
	start_base_terms(&big);
	start_base_terms(&base);
	sleep_s(1.5);
	anon0 = proc_status_kb(big.pid, "RssAnon");
	rss0 = proc_status_kb(big.pid, "VmRSS");
	avail0 = proc_field_kb("/proc/meminfo", "MemAvailable");
	n = bench_spawn(&worst50, &ratio);
	printf("spawn\tworst band p50 %.3f ms, worst ratio to its baseline"
	       " %.2f\ttarget < 2 ms throughout: %s\n",
	    worst50 * 1e3, ratio, worst50 < 0.002 ? "met" : "MISSED");
	if (n < nterms)
		printf("spawn\tstopped at %d terminals: the start past them was"
		       " refused (above); ptyd is %s\n",
		    n, waitpid(big.pid, NULL, WNOHANG) == 0 ? "still up" :
							     "GONE");
	sleep_s(2);
	anon1 = proc_status_kb(big.pid, "RssAnon");
	rss1 = proc_status_kb(big.pid, "VmRSS");
	avail1 = proc_field_kb("/proc/meminfo", "MemAvailable");
	printf("memory\tptyd RssAnon %ld -> %ld kB, VmRSS %ld -> %ld kB: %.2f"
	       " kB anon a terminal\tsystem MemAvailable down %.0f kB a"
	       " terminal (shell, pty, ptyd; shared machine: rough)\n",
	    anon0, anon1, rss0, rss1, (double)(anon1 - anon0) / (n - BASE_N),
	    (double)(avail0 - avail1) / (n - BASE_N));
	bench_reaper(n);
	bench_stats(n);
	bench_flush(n);
	check_answers(n);
	check_rows(n);
	(void)ptyd_stop(&base);
	down = ptyd_stop(&big);
	printf("stop\tptyd shut %d terminals down in %.2f s\n", n, down);
	pty_max_restore();
	printf("result\t%s\n", failures ? "FAILED" : "ok");
	return (failures ? 1 : 0);
}
