/*
 * termbench.c -- benchmarks for ptyd through the real nginx, each beside a
 * baseline measured in the same run by the same program.
 *
 *	termbench raw CMD
 *		Baseline: run CMD under a pty of our own and read everything
 *		(the raw pty limit).  Prints bytes and MB/s.
 *	termbench stream PORT CMD [VIEWERS]
 *		Start a terminal through nginx, attach VIEWERS streams (default
 *		1), type CMD followed by "; exit", and read every stream to
 *		terminal_closed.  Prints per-viewer bytes and MB/s, and checks
 *		that every viewer got the same byte count.  With
 *		TERMBENCH_PARTS="nginx=PID,PID ptyd.fcgi=PID ptyd=PID" set,
 *		also the CPU each part, this client and the whole machine
 *		used over the timed part (a `cpu` line), which is what says
 *		whether the CPUs, not the code, bound the viewers' rate.
 *	termbench echo PORT N
 *		Keystroke echo latency: a terminal running `stty raw -echo;
 *		exec cat`; N times, POST one character and time until it
 *		appears in the stream (`echo`), and until the POST's own
 *		answer came (`post`), each on its own: as in a browser, the
 *		echo is read when it comes, answered or not.  Prints p50/p99
 *		in microseconds.
 *	termbench siab PORT N
 *		The same echo through ShellInABox on PORT (its service running
 *		`stty raw -echo; exec cat`), as its page asks: a long-polling
 *		POST always outstanding for output, keys=HEX POSTs on a kept
 *		connection.  The comparison of issue 31 (bench/echo-siab).
 *	termbench rtt PORT PATH N [STATUS]
 *		Baseline for echo: N GETs of PATH (a plain FastCGI responder
 *		behind the same nginx), p50/p99 in microseconds.  Each must
 *		answer STATUS (default 200): a refused request times the path
 *		up to the refusal.
 *
 * Requests other than the streams go on one kept HTTP connection, as a
 * browser sends them; TERMBENCH_CLOSE=1 opens one connection per request
 * instead (and echo then waits for the POST's answer before it looks at
 * the stream), the client of the figures before 2026-12-05.
 *
 * Owns: a minimal HTTP/1.1 client (a kept connection or one per request,
 * chunked and Content-Length bodies) and an SSE reader that counts the
 * bytes of `output` events without keeping them.  Not a general HTTP
 * client: it talks to our nginx on 127.0.0.1 only.
 */
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BUFSZ	(256 * 1024)

static int	port;
static int	keepalive = 1; /* TERMBENCH_CLOSE unset */
/* The POST bodies' type: ptyd's API takes JSON, ShellInABox a form. */
static const char *ctype = "application/json";

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	fprintf(stderr, "termbench: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static double
now_s(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (ts.tv_sec + ts.tv_nsec / 1e9);
}

static int
http_connect(void)
{
	struct sockaddr_in	sin;
	int			fd, one = 1;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		die("socket: %s", strerror(errno));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1)
		die("connect 127.0.0.1:%d: %s", port, strerror(errno));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return (fd);
}

static void
write_all(int fd, const char *p, size_t n)
{
	ssize_t	w;

	while (n > 0) {
		if ((w = write(fd, p, n)) == -1) {
			if (errno == EINTR)
				continue;
			die("write: %s", strerror(errno));
		}
		p += w;
		n -= (size_t)w;
	}
}

/* One HTTP connection's read side: raw buffer and chunked decoding. */
struct http {
	int	fd;
	char	buf[BUFSZ];
	size_t	off, len;
	int	chunked;
	size_t	chunk_left;	/* bytes left in the current chunk */
	long	clen;		/* Content-Length, or -1 */
	int	eof;
	int	status;
	int	reuse;	    /* fd kept for the next request */
	int	conn_close; /* the server said Connection: close */
};

static int
http_fill(struct http *h)
{
	ssize_t	n;

	if (h->off > 0 && h->off == h->len)
		h->off = h->len = 0;
	if (h->len == sizeof(h->buf)) {
		memmove(h->buf, h->buf + h->off, h->len - h->off);
		h->len -= h->off;
		h->off = 0;
	}
	n = read(h->fd, h->buf + h->len, sizeof(h->buf) - h->len);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return (1);
	if (n <= 0) {
		h->eof = 1;
		return (-1);
	}
	h->len += (size_t)n;
	return (0);
}

/* Send a request: on h's kept connection if it has one, else a new one
 * (kept after the answer unless once or TERMBENCH_CLOSE). */
static void
http_send(struct http *h, const char *method, const char *path,
    const char *body, int once)
{
	char req[8192];
	int  n, fd = h->reuse ? h->fd : -1;

	memset(h, 0, sizeof(*h));
	h->fd = fd != -1 ? fd : http_connect();
	h->clen = -1;
	once = once || !keepalive;
	if (body != NULL)
		n = snprintf(req, sizeof(req),
		    "%s %s HTTP/1.1\r\n"
		    "Host: 127.0.0.1\r\n%s"
		    "Content-Type: %s\r\n"
		    "Content-Length: %zu\r\n\r\n%s",
		    method, path, once ? "Connection: close\r\n" : "",
		    ctype, strlen(body), body);
	else
		n = snprintf(req, sizeof(req),
		    "%s %s HTTP/1.1\r\n"
		    "Host: 127.0.0.1\r\n%s\r\n",
		    method, path, once ? "Connection: close\r\n" : "");
	if (n < 0 || (size_t)n >= sizeof(req))
		die("request too long");
	h->conn_close = once;
	write_all(h->fd, req, (size_t)n);
}

/* Read the status line and headers of the answer to the request sent. */
static void
http_head(struct http *h, const char *method, const char *path)
{
	char *eoh, *line;

	for (;;) {
		h->buf[h->len < sizeof(h->buf) ? h->len : sizeof(h->buf) - 1] =
		    '\0';
		if ((eoh = strstr(h->buf, "\r\n\r\n")) != NULL)
			break;
		if (http_fill(h) == -1)
			die("%s %s: no response headers", method, path);
	}
	*eoh = '\0';
	if (sscanf(h->buf, "HTTP/1.%*d %d", &h->status) != 1)
		die("%s %s: bad status line", method, path);
	for (line = h->buf; line != NULL; line = strstr(line + 1, "\r\n")) {
		if (strncasecmp(line, "\r\nTransfer-Encoding: chunked", 28) == 0)
			h->chunked = 1;
		else if (strncasecmp(line, "\r\nContent-Length: ", 18) == 0)
			h->clen = strtol(line + 18, NULL, 10);
		else if (strncasecmp(line, "\r\nConnection: close", 19) == 0)
			h->conn_close = 1;
	}
	h->off = (size_t)(eoh - h->buf) + 4;
}

static void
http_request(struct http *h, const char *method, const char *path,
    const char *body)
{
	http_send(h, method, path, body, 0);
	http_head(h, method, path);
}

/*
 * Body bytes available now, reading more if none: > 0 bytes at *p, 0 when a
 * non-blocking socket has nothing yet, -1 at the end of the body.
 */
static ssize_t
http_body(struct http *h, const char **p)
{
	char	*end;
	size_t	 n;
	int	 r;

	for (;;) {
		if (!h->chunked && h->clen == 0)
			return (-1);
		if (!h->chunked || h->chunk_left > 0) {
			n = h->len - h->off;
			if (h->chunked && n > h->chunk_left)
				n = h->chunk_left;
			if (!h->chunked && h->clen > 0 && n > (size_t)h->clen)
				n = (size_t)h->clen;
			if (n > 0) {
				*p = h->buf + h->off;
				h->off += n;
				if (h->chunked)
					h->chunk_left -= n;
				else if (h->clen > 0)
					h->clen -= (long)n;
				return ((ssize_t)n);
			}
			if ((r = http_fill(h)) != 0)
				return (r > 0 ? 0 : -1);
			continue;
		}
		/* At a chunk header: "\r\n"? SIZE "\r\n". */
		while (h->off < h->len && (h->buf[h->off] == '\r' ||
		    h->buf[h->off] == '\n'))
			h->off++;
		if (memchr(h->buf + h->off, '\n', h->len - h->off) == NULL) {
			if ((r = http_fill(h)) != 0)
				return (r > 0 ? 0 : -1);
			continue;
		}
		h->chunk_left = strtoul(h->buf + h->off, &end, 16);
		if (h->chunk_left == 0) {
			/* The last chunk: its line and the empty trailer, read
			 * whole so the connection can carry the next request. */
			if ((end = memmem(h->buf + h->off, h->len - h->off,
				 "\r\n\r\n", 4)) == NULL) {
				if ((r = http_fill(h)) != 0)
					return (r > 0 ? 0 : -1);
				continue;
			}
			h->off = (size_t)(end - h->buf) + 4;
			h->chunked = 0;
			h->clen = 0;
			return (-1);
		}
		h->off = (size_t)((char *)memchr(end, '\n',
		    h->len - (size_t)(end - h->buf)) - h->buf) + 1;
	}
}

static char *
http_slurp(struct http *h)
{
	static char	out[65536];
	const char	*p;
	ssize_t		 n;
	size_t		 len = 0;

	while ((n = http_body(h, &p)) > 0) {
		if (len + (size_t)n < sizeof(out)) {
			memcpy(out + len, p, (size_t)n);
			len += (size_t)n;
		}
	}
	out[len] = '\0';
	/* Kept only where the answer ended on its own, whole. */
	h->reuse = !h->eof && !h->conn_close && h->clen == 0 &&
	    h->off == h->len;
	if (!h->reuse)
		close(h->fd);
	return (out);
}

/* The POSTs' kept connection (static: its buffer is large). */
static struct http posts;

static void
post_check(const char *endpoint)
{
	if (posts.status != 200)
		die("POST %s: %d %s", endpoint, posts.status,
		    http_slurp(&posts));
	http_slurp(&posts);
}

static void
post(const char *endpoint, const char *body)
{
	char path[256];

	snprintf(path, sizeof(path), "/api/terminal/%s", endpoint);
	http_request(&posts, "POST", path, body);
	post_check(endpoint);
}

/*
 * SSE reader: counts the characters of `output` event texts.  The bench
 * commands print plain ASCII, so a text's length in bytes is its length in
 * the JSON string less its escapes; it notes terminal_closed.
 */
struct sse {
	struct http	h;
	char		line[BUFSZ + 64];
	size_t		linelen;
	int		is_output;
	uint64_t	bytes;
	uint64_t	xs;		/* 'x' characters: the payload of the tests */
	int		closed;
	char		last_text[64];
};

static void
sse_open(struct sse *s, const char *sid)
{
	char	path[256];

	memset(s, 0, sizeof(*s));
	snprintf(path, sizeof(path), "/api/terminal/output?session_id=%s", sid);
	s->h.fd = -1;
	http_send(&s->h, "GET", path, NULL, 1);
	http_head(&s->h, "GET", path);
	if (s->h.status != 200)
		die("GET output: %d", s->h.status);
	if (fcntl(s->h.fd, F_SETFL, O_NONBLOCK) == -1)
		die("fcntl: %s", strerror(errno));
}

/*
 * Payload bytes of JSON string text [t, e), and its x's added to *xs.
 * Runs between escapes are counted in a loop the compiler vectorises:
 * with 64 viewers the client must not be what limits the rate.
 */
static size_t
sse_count(const char *t, const char *e, uint64_t *xs)
{
	const char	*bs;
	size_t		 i, k, n = 0, x = 0;

	while (t < e) {
		bs = memchr(t, '\\', (size_t)(e - t));
		k = (size_t)((bs != NULL ? bs : e) - t);
		for (i = 0; i < k; i++)
			x += t[i] == 'x';
		n += k;
		t += k;
		if (bs != NULL) {
			t += t[1] == 'u' ? 6 : 2;
			n++;
		}
	}
	*xs += x;
	return (n);
}

static void
sse_line(struct sse *s)
{
	const char	*t, *e;
	size_t		 n;

	s->line[s->linelen] = '\0';
	if (strncmp(s->line, "event: ", 7) == 0) {
		s->is_output = strcmp(s->line + 7, "output") == 0;
		if (strcmp(s->line + 7, "terminal_closed") == 0)
			s->closed = 1;
	} else if (strncmp(s->line, "data: ", 6) == 0 && s->is_output) {
		if ((t = strstr(s->line, "\"text\": \"")) == NULL)
			die("output event without text");
		t += 9;
		e = s->line + s->linelen - 2;	/* the closing "} */
		s->bytes += sse_count(t, e, &s->xs);
		n = (size_t)(e - (s->line + 6)) < sizeof(s->last_text) - 1 ?
		    (size_t)(e - (s->line + 6)) : sizeof(s->last_text) - 1;
		memcpy(s->last_text, e - n, n);
		s->last_text[n] = '\0';
	}
	s->linelen = 0;
}

/* Consume what is readable now; returns -1 at the end of the stream. */
static void	sse_chunk(struct sse *, const char *, size_t);

static int
sse_step(struct sse *s)
{
	const char	*p;
	ssize_t		 r;
	size_t		 n;

	while ((r = http_body(&s->h, &p)) != 0) {
		if (r == -1)
			return (-1);
		n = (size_t)r;
		sse_chunk(s, p, n);
	}
	return (0);
}

static void
sse_chunk(struct sse *s, const char *p, size_t n)
{
	const char	*nl;
	size_t		 k;

	while (n > 0) {
		nl = memchr(p, '\n', n);
		k = nl != NULL ? (size_t)(nl - p) : n;
		if (s->linelen + k > sizeof(s->line) - 1)
			die("SSE line too long");
		memcpy(s->line + s->linelen, p, k);
		s->linelen += k;
		if (nl != NULL) {
			sse_line(s);
			k++;
		}
		p += k;
		n -= k;
	}
}

/* Read whatever arrives within ms milliseconds of quiet. */
static void
sse_drain(struct sse *s, int ms)
{
	struct pollfd	pfd;

	pfd.fd = s->h.fd;
	pfd.events = POLLIN;
	while (poll(&pfd, 1, ms) > 0)
		if (sse_step(s) == -1)
			break;
}

static void
json_quote(char *dst, size_t size, const char *src)
{
	size_t	n = 0;

	for (; *src != '\0' && n + 3 < size; src++) {
		if (*src == '\r') {
			dst[n++] = '\\';
			dst[n++] = 'r';
			continue;
		}
		if (*src == '"' || *src == '\\')
			dst[n++] = '\\';
		dst[n++] = *src;
	}
	dst[n] = '\0';
}

static int
cmd_raw(const char *cmd)
{
	char		*buf;
	uint64_t	 total = 0;
	double		 t0, dt;
	ssize_t		 n;
	pid_t		 pid;
	int		 master, status;

	if ((buf = malloc(BUFSZ)) == NULL)
		die("malloc");
	t0 = now_s();
	if ((pid = forkpty(&master, NULL, NULL, NULL)) == -1)
		die("forkpty: %s", strerror(errno));
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	while ((n = read(master, buf, BUFSZ)) > 0 ||
	    (n == -1 && errno == EINTR))
		if (n > 0)
			total += (uint64_t)n;
	dt = now_s() - t0;
	waitpid(pid, &status, 0);
	printf("raw-pty bytes=%llu seconds=%.3f MB/s=%.1f\n",
	    (unsigned long long)total, dt, total / dt / 1e6);
	free(buf);
	return (0);
}

/*
 * CPU over the timed part of `stream`: each part named in TERMBENCH_PARTS
 * (utime + stime of its processes, dead threads included, from
 * /proc/PID/stat), this client (getrusage) and the machine (/proc/stat).
 */
#define PARTS_MAX 8
#define PART_PIDS 128

struct part {
	char		   name[32];
	int		   pid[PART_PIDS];
	int		   npid;
	unsigned long long t0; /* ticks at the start */
};

static struct part	  parts[PARTS_MAX];
static int		  nparts;
static unsigned long long machine_busy0, machine_all0;
static double		  self_cpu0;

static void
parts_parse(void)
{
	const char *env = getenv("TERMBENCH_PARTS");
	char	   *copy, *tok, *save, *eq, *pid, *save2;

	if (env == NULL || (copy = strdup(env)) == NULL)
		return;
	for (tok = strtok_r(copy, " ", &save);
	     tok != NULL && nparts < PARTS_MAX;
	     tok = strtok_r(NULL, " ", &save)) {
		if ((eq = strchr(tok, '=')) == NULL)
			die("TERMBENCH_PARTS: %s: want NAME=PID,...", tok);
		*eq = '\0';
		snprintf(parts[nparts].name, sizeof(parts[nparts].name), "%s",
		    tok);
		for (pid = strtok_r(eq + 1, ",", &save2);
		     pid != NULL && parts[nparts].npid < PART_PIDS;
		     pid = strtok_r(NULL, ",", &save2))
			parts[nparts].pid[parts[nparts].npid++] = atoi(pid);
		nparts++;
	}
	free(copy);
}

/* utime + stime of one process, in clock ticks; 0 once it is gone. */
static unsigned long long
pid_ticks(int pid)
{
	char	      path[64], buf[1024], *p;
	unsigned long ut = 0, st = 0;
	FILE	     *f;
	size_t	      n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if ((f = fopen(path, "r")) == NULL)
		return (0);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* The command name may hold spaces and parentheses: skip past its
	 * last ')'; then state, 5 ints, flags, 4 fault counts, utime, stime. */
	if ((p = strrchr(buf, ')')) == NULL ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
		&ut, &st) != 2)
		return (0);
	return ((unsigned long long)ut + st);
}

static unsigned long long
part_ticks(const struct part *pt)
{
	unsigned long long t = 0;
	int		   i;

	for (i = 0; i < pt->npid; i++)
		t += pid_ticks(pt->pid[i]);
	return (t);
}

/* The machine's busy and total ticks over every CPU (/proc/stat). */
static void
machine_ticks(unsigned long long *busy, unsigned long long *all)
{
	unsigned long long v[8] = { 0 };
	FILE		  *f;
	int		   i;

	*busy = *all = 0;
	if ((f = fopen("/proc/stat", "r")) == NULL)
		return;
	if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
		&v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 8) {
		for (i = 0; i < 8; i++)
			*all += v[i];
		*busy = *all - v[3] - v[4]; /* less idle and iowait */
	}
	fclose(f);
}

static double
self_cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	    ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
}

static void
cpu_start(void)
{
	int i;

	for (i = 0; i < nparts; i++)
		parts[i].t0 = part_ticks(&parts[i]);
	machine_ticks(&machine_busy0, &machine_all0);
	self_cpu0 = self_cpu_s();
}

/* One line: milliseconds of CPU per part and the client, machine busy. */
static void
cpu_report(void)
{
	unsigned long long busy, all;
	double		   ms_tick = 1000.0 / (double)sysconf(_SC_CLK_TCK);
	int		   i;

	if (nparts == 0)
		return;
	machine_ticks(&busy, &all);
	printf("cpu");
	for (i = 0; i < nparts; i++)
		printf(" %s_ms=%.0f", parts[i].name,
		    ms_tick * (double)(part_ticks(&parts[i]) - parts[i].t0));
	printf(" client_ms=%.0f busy_pct=%.0f ncpu=%ld\n",
	    1000.0 * (self_cpu_s() - self_cpu0),
	    all > machine_all0 ? 100.0 * (double)(busy - machine_busy0) /
		    (double)(all - machine_all0) :
				 0.0,
	    sysconf(_SC_NPROCESSORS_ONLN));
}

static int
cmd_stream(const char *cmd, int nviewers)
{
	struct sse	*v;
	struct pollfd	*pfd;
	char		 sid[64], body[4096], q[8192];
	double		 t0, dt;
	int		 i, open;

	snprintf(sid, sizeof(sid), "bench-%d-%ld", (int)getpid(),
	    (long)time(NULL));
	snprintf(body, sizeof(body), "{\"session_id\": \"%s\", \"rows\": 50, "
	    "\"cols\": 200}", sid);
	post("start", body);
	if ((v = calloc((size_t)nviewers, sizeof(*v))) == NULL ||
	    (pfd = calloc((size_t)nviewers, sizeof(*pfd))) == NULL)
		die("calloc");
	for (i = 0; i < nviewers; i++)
		sse_open(&v[i], sid);
	/* Let the prompt arrive so it is not counted in the timed part. */
	for (i = 0; i < nviewers; i++)
		sse_drain(&v[i], 300);
	for (i = 0; i < nviewers; i++)
		v[i].bytes = v[i].xs = 0;
	snprintf(q, sizeof(q), "stty -echo; %s; exit\r", cmd);
	json_quote(body, sizeof(body), q);
	snprintf(q, sizeof(q), "{\"session_id\": \"%s\", \"data\": \"%s\"}",
	    sid, body);
	parts_parse();
	cpu_start();
	t0 = now_s();
	post("input", q);
	for (open = nviewers; open > 0;) {
		for (i = 0; i < nviewers; i++) {
			pfd[i].fd = v[i].closed || v[i].h.eof ? -1 : v[i].h.fd;
			pfd[i].events = POLLIN;
		}
		if (poll(pfd, (nfds_t)nviewers, 30000) <= 0)
			die("stream stalled for 30 s");
		for (i = 0; i < nviewers; i++) {
			if (pfd[i].fd == -1 || pfd[i].revents == 0)
				continue;
			if (sse_step(&v[i]) == -1 || v[i].closed) {
				v[i].closed = 1;
				open--;
			}
		}
	}
	dt = now_s() - t0;
	cpu_report();
	for (i = 0; i < nviewers; i++) {
		printf("viewer=%d bytes=%llu x=%llu seconds=%.3f MB/s=%.1f\n",
		    i, (unsigned long long)v[i].bytes,
		    (unsigned long long)v[i].xs, dt, v[i].bytes / dt / 1e6);
		close(v[i].h.fd);
	}
	for (i = 1; i < nviewers; i++)
		if (v[i].xs != v[0].xs)
			die("viewers disagree: %llu vs %llu payload bytes",
			    (unsigned long long)v[i].xs,
			    (unsigned long long)v[0].xs);
	free(v);
	free(pfd);
	return (0);
}

static int
cmp_double(const void *a, const void *b)
{
	double	x = *(const double *)a, y = *(const double *)b;

	return ((x > y) - (x < y));
}

static void
report(const char *what, double *lat, int n)
{
	qsort(lat, (size_t)n, sizeof(*lat), cmp_double);
	printf("%s n=%d p50_us=%.0f p99_us=%.0f\n", what, n,
	    lat[n / 2] * 1e6, lat[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1]
	    * 1e6);
}

static int
cmd_echo(int n)
{
	struct sse	 s;
	struct pollfd	 pfd[2];
	char		 sid[64], body[512], want;
	double		*lat, *plat, t0;
	int		 i;

	if ((lat = calloc((size_t)n, sizeof(*lat))) == NULL ||
	    (plat = calloc((size_t)n, sizeof(*plat))) == NULL)
		die("calloc");
	snprintf(sid, sizeof(sid), "echo-%d-%ld", (int)getpid(),
	    (long)time(NULL));
	snprintf(body, sizeof(body), "{\"session_id\": \"%s\"}", sid);
	post("start", body);
	sse_open(&s, sid);
	snprintf(body, sizeof(body), "{\"session_id\": \"%s\", \"data\": "
	    "\"stty raw -echo; exec cat\\r\"}", sid);
	post("input", body);
	sse_drain(&s, 500);
	for (i = 0; i < n; i++) {
		want = (char)('a' + i % 26);
		snprintf(body, sizeof(body), "{\"session_id\": \"%s\", "
		    "\"data\": \"%c\"}", sid, want);
		s.last_text[0] = '\0';
		lat[i] = plat[i] = 0;
		t0 = now_s();
		if (!keepalive) {
			/* The client before 2026-12-05: the answer first. */
			post("input", body);
			plat[i] = now_s() - t0;
		} else
			http_send(&posts, "POST", "/api/terminal/input", body,
			    0);
		while (lat[i] == 0 || plat[i] == 0) {
			pfd[0].fd = lat[i] == 0 ? s.h.fd : -1;
			pfd[1].fd = plat[i] == 0 ? posts.fd : -1;
			pfd[0].events = pfd[1].events = POLLIN;
			if (poll(pfd, 2, 10000) <= 0)
				die("no echo or answer within 10 s");
			if (pfd[0].revents != 0) {
				if (sse_step(&s) == -1)
					die("the stream ended");
				if (strchr(s.last_text, want) != NULL)
					lat[i] = now_s() - t0;
			}
			if (pfd[1].revents != 0) {
				http_head(&posts, "POST",
				    "/api/terminal/input");
				post_check("input");
				plat[i] = now_s() - t0;
			}
		}
	}
	report("echo", lat, n);
	report("post", plat, n);
	snprintf(body, sizeof(body), "{\"session_id\": \"%s\"}", sid);
	post("close", body);
	close(s.h.fd);
	free(lat);
	free(plat);
	return (0);
}

/*
 * The same keystroke echo through ShellInABox (shellinaboxd, its service
 * running `stty raw -echo; exec cat`), as its page does it: a long-polling
 * POST always outstanding for output (sent again the moment it answers),
 * each keystroke a POST of keys=HEX on a kept connection.  `echo` is the
 * time until the character comes back in a poll's answer, `post` until
 * the keys POST is answered.
 */
static int
cmd_siab(int n)
{
	static struct http pl;
	struct pollfd	 pfd[2];
	char		 sess[128], esc[384], pbody[512], body[576], *out, *q;
	double		*lat, *plat, t0;
	size_t		 i, k;
	int		 j;
	char		 want;

	if ((lat = calloc((size_t)n, sizeof(*lat))) == NULL ||
	    (plat = calloc((size_t)n, sizeof(*plat))) == NULL)
		die("calloc");
	ctype = "application/x-www-form-urlencoded; charset=utf-8";
	http_request(&posts, "POST", "/?",
	    "width=80&height=24&rooturl=http%3A%2F%2F127.0.0.1%2F");
	out = http_slurp(&posts);
	if (posts.status != 200 || (q = strstr(out, "\"session\":\"")) == NULL)
		die("ShellInABox: no session (%d %.80s)", posts.status, out);
	q += 11;
	for (i = 0; q[i] != '"' && q[i] != '\0' && i < sizeof(sess) - 1; i++)
		sess[i] = q[i];
	sess[i] = '\0';
	for (i = k = 0; sess[i] != '\0' && k + 4 < sizeof(esc); i++) {
		if (isalnum((unsigned char)sess[i]) || sess[i] == '-' ||
		    sess[i] == '_')
			esc[k++] = sess[i];
		else
			k += (size_t)snprintf(esc + k, 4, "%%%02X",
			    (unsigned char)sess[i]);
	}
	esc[k] = '\0';
	snprintf(pbody, sizeof(pbody), "width=80&height=24&session=%s", esc);
	/* The first polls carry whatever the service printed; let it settle. */
	http_send(&pl, "POST", "/?", pbody, 0);
	pfd[0].fd = pl.fd;
	pfd[0].events = POLLIN;
	while (poll(pfd, 1, 500) > 0) {
		http_head(&pl, "POST", "/?");
		http_slurp(&pl);
		http_send(&pl, "POST", "/?", pbody, 0);
		pfd[0].fd = pl.fd;
	}
	for (j = 0; j < n; j++) {
		want = (char)('a' + j % 26);
		snprintf(body, sizeof(body), "%s&keys=%02x", pbody,
		    (unsigned char)want);
		lat[j] = plat[j] = 0;
		t0 = now_s();
		http_send(&posts, "POST", "/?", body, 0);
		while (lat[j] == 0 || plat[j] == 0) {
			pfd[0].fd = lat[j] == 0 ? pl.fd : -1;
			pfd[1].fd = plat[j] == 0 ? posts.fd : -1;
			pfd[0].events = pfd[1].events = POLLIN;
			if (poll(pfd, 2, 10000) <= 0)
				die("ShellInABox: no echo or answer within 10 s");
			if (pfd[0].revents != 0) {
				http_head(&pl, "POST", "/?");
				out = http_slurp(&pl);
				if (pl.status != 200)
					die("ShellInABox poll: %d", pl.status);
				if ((q = strstr(out, "\"data\":\"")) != NULL &&
				    strchr(q + 8, want) != NULL)
					lat[j] = now_s() - t0;
				http_send(&pl, "POST", "/?", pbody, 0);
			}
			if (pfd[1].revents != 0) {
				http_head(&posts, "POST", "/?");
				http_slurp(&posts);
				if (posts.status != 200)
					die("ShellInABox keys: %d", posts.status);
				plat[j] = now_s() - t0;
			}
		}
	}
	report("echo", lat, n);
	report("post", plat, n);
	close(pl.fd);
	free(lat);
	free(plat);
	return (0);
}

static int
cmd_rtt(const char *path, int n, int want)
{
	double *lat, t0;
	int	i;

	if ((lat = calloc((size_t)n, sizeof(*lat))) == NULL)
		die("calloc");
	for (i = 0; i < n; i++) {
		t0 = now_s();
		http_request(&posts, "GET", path, NULL);
		http_slurp(&posts);
		if (posts.status != want)
			die("GET %s: %d", path, posts.status);
		lat[i] = now_s() - t0;
	}
	report("rtt", lat, n);
	free(lat);
	return (0);
}

int
main(int argc, char **argv)
{
	keepalive = getenv("TERMBENCH_CLOSE") == NULL;
	if (argc >= 3 && strcmp(argv[1], "raw") == 0)
		return (cmd_raw(argv[2]));
	if (argc >= 4 && strcmp(argv[1], "stream") == 0) {
		port = atoi(argv[2]);
		return (cmd_stream(argv[3], argc > 4 ? atoi(argv[4]) : 1));
	}
	if (argc >= 4 && strcmp(argv[1], "echo") == 0) {
		port = atoi(argv[2]);
		return (cmd_echo(atoi(argv[3])));
	}
	if (argc >= 4 && strcmp(argv[1], "siab") == 0) {
		port = atoi(argv[2]);
		return (cmd_siab(atoi(argv[3])));
	}
	if (argc >= 5 && strcmp(argv[1], "rtt") == 0) {
		port = atoi(argv[2]);
		return (cmd_rtt(argv[3], atoi(argv[4]),
		    argc >= 6 ? atoi(argv[5]) : 200));
	}
	fprintf(stderr,
	    "usage: termbench raw CMD | stream PORT CMD [VIEWERS] |"
	    " echo PORT N | siab PORT N | rtt PORT PATH N [STATUS]\n");
	return (2);
}
