/* m2_relay.c -- (ii) the cost of a hop between the pty and the daemon.
 *   direct : daemon reads the pty master into its ring (ptyd today)
 *   holder : a holder process reads the master and writes a socketpair,
 *            the daemon reads the socket into its ring (dtach-like, (b))
 *   keeper : a keeper reads the master into a memfd ring shared with the
 *            daemon, commits end, notifies on a SOCK_SEQPACKET socketpair;
 *            the daemon consumes from the shared ring, publishes ack
 *            (backpressure), input goes daemon -> keeper -> master.
 * The daemon "consumes" every byte (a 64-bit sum, standing for the writev
 * to viewers; the same in all three).  Throughput: MB through a raw pty
 * from a `yes`-like writer; CPU per MB of daemon + relay.  Latency: a
 * one-byte echo child on the slave, RTT from the daemon's write of input
 * to the daemon having the echoed byte.
 * usage: m2_relay MB ROUNDS RTTS */
#include "common.h"
#define RING (1u << 20)
#define HDR 4096
struct hdr { _Atomic uint64_t end; char pad1[56]; _Atomic uint64_t ack; char pad2[56]; _Atomic int paused; char pad3[60]; _Atomic int notified; };
enum { V_DIRECT, V_HOLDER, V_KEEPER, NV };
static const char *vname[] = { "direct", "holder+socket", "keeper+shm" };
static uint64_t sink;
static void keep_only(int fd) { for (int i = 3; i < 1024; i++) if (i != fd) close(i); }

static void consume(const uint8_t *p, size_t n)
{
	uint64_t s = 0, w; size_t i = 0;
	for (; i + 8 <= n; i += 8) { memcpy(&w, p + i, 8); s += w; }
	for (; i < n; i++) s += p[i];
	sink += s;
}
static void consume_ring(const uint8_t *ring, uint64_t from, uint64_t to)
{
	while (from < to) {
		size_t off = from % RING, n = RING - off;
		if (n > to - from) n = to - from;
		consume(ring + off, n); from += n;
	}
}
static int ep_one(int ep, int ms) {
	struct epoll_event e[4]; int n;
	do n = epoll_wait(ep, e, 4, ms); while (n < 0 && errno == EINTR);
	return n;
}
static int mkep(int fd1, int fd2) {
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN };
	ev.data.fd = fd1; epoll_ctl(ep, EPOLL_CTL_ADD, fd1, &ev);
	if (fd2 >= 0) { ev.data.fd = fd2; epoll_ctl(ep, EPOLL_CTL_ADD, fd2, &ev); }
	return ep;
}

/* holder: master <-> socket, both ways, until the master gives EIO. */
static void holder(int m, int sk)
{
	static uint8_t buf[65536];
	struct pollfd { int fd; short events, revents; };
	int ep = mkep(m, sk);
	fcntl(m, F_SETFL, O_NONBLOCK);
	for (;;) {
		struct epoll_event e[2]; int n = epoll_wait(ep, e, 2, -1);
		for (int i = 0; i < n; i++) {
			if (e[i].data.fd == m) {
				for (;;) {
					ssize_t r = read(m, buf, sizeof(buf));
					if (r > 0) { ssize_t o = 0; while (o < r) { ssize_t w = write(sk, buf + o, r - o); if (w < 0) _exit(4); o += w; } if (r < (ssize_t)sizeof(buf)) break; continue; }
					if (r < 0 && errno == EAGAIN) break;
					_exit(0);
				}
			} else {
				ssize_t r = read(sk, buf, sizeof(buf));
				if (r <= 0) _exit(0);
				if (write(m, buf, r) != r) _exit(5);
			}
		}
	}
}

/* keeper: master -> shared ring + notify; messages from daemon: input or resume. */
static void keeper(int m, int sk, uint8_t *base)
{
	struct hdr *h = (struct hdr *)base; uint8_t *ring = base + HDR;
	uint8_t msg[4096]; uint64_t end = 0; int in_ep = 1;
	int ep = mkep(m, sk);
	fcntl(m, F_SETFL, O_NONBLOCK);
	for (;;) {
		struct epoll_event e[2]; int n = epoll_wait(ep, e, 2, -1), progressed = 0, eof = 0;
		for (int i = 0; i < n; i++) {
			if (e[i].data.fd == sk) {
				ssize_t r = recv(sk, msg, sizeof(msg), MSG_DONTWAIT);
				if (r <= 0) _exit(0);
				if (msg[0] == 'I') { if (write(m, msg + 1, r - 1) != r - 1) _exit(5); }
				/* 'R': resume */
				if (!in_ep) { struct epoll_event ev = { .events = EPOLLIN, .data.fd = m }; epoll_ctl(ep, EPOLL_CTL_ADD, m, &ev); in_ep = 1; }
				continue;
			}
			for (size_t got = 0; got < 256 * 1024;) {
				uint64_t ack = atomic_load_explicit(&h->ack, memory_order_acquire);
				size_t room = RING - (end - ack), off = end % RING, k = RING - off;
				if (room == 0) {
					atomic_store(&h->paused, 1);
					if (RING - (end - atomic_load(&h->ack)) == 0) { epoll_ctl(ep, EPOLL_CTL_DEL, m, NULL); in_ep = 0; break; }
					atomic_store(&h->paused, 0); continue;
				}
				if (k > room) k = room;
				ssize_t r = read(m, ring + off, k);
				if (r > 0) { end += r; got += r; progressed = 1; atomic_store_explicit(&h->end, end, memory_order_release); if ((size_t)r < k) break; continue; }
				if (r < 0 && errno == EAGAIN) break;
				eof = 1; break;
			}
		}
		if (progressed && atomic_exchange(&h->notified, 1) == 0) { uint8_t c = 'N'; send(sk, &c, 1, MSG_DONTWAIT); }
		if (eof) { uint8_t c = 'E'; send(sk, &c, 1, 0); _exit(0); }
	}
}

/* The daemon side, one round trip of one byte or a bulk drain. */
struct ctx { int v, m, sk; uint8_t *ring; struct hdr *h; uint64_t pos, ack; int ep; };

/* Bulk: consume until EOF; returns bytes. */
static uint64_t daemon_bulk(struct ctx *c)
{
	uint64_t got = 0; uint8_t n[256];
	for (;;) {
		ep_one(c->ep, -1);
		if (c->v == V_DIRECT || c->v == V_HOLDER) {
			int fd = c->v == V_DIRECT ? c->m : c->sk, eof = 0;
			for (size_t turn = 0; turn < 256 * 1024;) {
				size_t off = c->pos % RING, k = RING - off;
				ssize_t r = read(fd, c->ring + off, k);
				if (r > 0) { consume(c->ring + off, r); c->pos += r; got += r; turn += r; if ((size_t)r < k) break; continue; }
				if (r < 0 && errno == EAGAIN) break;
				eof = 1; break;
			}
			if (eof) return got;
		} else {
			ssize_t r = recv(c->sk, n, sizeof(n), MSG_DONTWAIT); int eof = 0;
			while (r > 0) { if (n[r-1] == 'E' || n[0] == 'E') eof = 1; r = recv(c->sk, n, sizeof(n), MSG_DONTWAIT); }
			atomic_store(&c->h->notified, 0);
			uint64_t end = atomic_load_explicit(&c->h->end, memory_order_acquire);
			consume_ring(c->ring, c->pos, end); got += end - c->pos; c->pos = end;
			atomic_store(&c->h->ack, end);
			if (atomic_load(&c->h->paused)) { atomic_store(&c->h->paused, 0); uint8_t x = 'R'; send(c->sk, &x, 1, 0); }
			if (eof) { end = atomic_load(&c->h->end); consume_ring(c->ring, c->pos, end); got += end - c->pos; c->pos = end; return got; }
		}
	}
}

static double rtt_once(struct ctx *c)
{
	uint64_t t0 = now_ns(); uint8_t b[64];
	if (c->v == V_DIRECT) { if (write(c->m, "x", 1) != 1) die("w"); }
	else if (c->v == V_HOLDER) { if (write(c->sk, "x", 1) != 1) die("w"); }
	else { uint8_t msg[2] = { 'I', 'x' }; if (send(c->sk, msg, 2, 0) != 2) die("s"); }
	for (;;) {
		ep_one(c->ep, -1);
		if (c->v == V_DIRECT) { if (read(c->m, b, sizeof(b)) == 1) break; }
		else if (c->v == V_HOLDER) { if (read(c->sk, b, sizeof(b)) == 1) break; }
		else {
			while (recv(c->sk, b, sizeof(b), MSG_DONTWAIT) > 0) ;
			atomic_store(&c->h->notified, 0);
			uint64_t end = atomic_load_explicit(&c->h->end, memory_order_acquire);
			if (end > c->pos) { consume_ring(c->ring, c->pos, end); c->pos = end; atomic_store(&c->h->ack, end); break; }
		}
	}
	return (now_ns() - t0) / 1000.0;
}

static void setup(struct ctx *c, int v, int *slave, pid_t *relay)
{
	int m, s, sp[2];
	memset(c, 0, sizeof(*c)); c->v = v;
	mkpty(&m, &s); *slave = s; *relay = -1;
	if (v == V_DIRECT) {
		fcntl(m, F_SETFL, O_NONBLOCK); c->m = m; c->ring = malloc(RING); c->ep = mkep(m, -1); return;
	}
	socketpair(AF_UNIX, (v == V_HOLDER ? SOCK_STREAM : SOCK_SEQPACKET) | SOCK_CLOEXEC, 0, sp);
	uint8_t *base = NULL;
	if (v == V_KEEPER) {
		int mfd = memfd_create("ring", MFD_CLOEXEC);
		if (ftruncate(mfd, HDR + RING)) die("ft");
		base = mmap(NULL, HDR + RING, PROT_READ|PROT_WRITE, MAP_SHARED, mfd, 0);
		close(mfd);
		c->h = (struct hdr *)base; c->ring = base + HDR;
	} else c->ring = malloc(RING);
	if ((*relay = fork()) == 0) {
		close(sp[0]); close(s);
		if (v == V_HOLDER) holder(m, sp[1]); else keeper(m, sp[1], base);
		_exit(0);
	}
	close(m); close(sp[1]);
	c->sk = sp[0]; fcntl(c->sk, F_SETFL, O_NONBLOCK); c->ep = mkep(c->sk, -1);
}

static void teardown(struct ctx *c, pid_t relay, struct rusage *ru)
{
	int st;
	if (c->v == V_DIRECT) { close(c->m); free(c->ring); }
	else { close(c->sk); if (c->v == V_HOLDER) free(c->ring); else munmap(c->h, HDR + RING); }
	close(c->ep);
	memset(ru, 0, sizeof(*ru));
	if (relay > 0) wait4(relay, &st, 0, ru);
}

int main(int argc, char **argv)
{
	uint64_t total = (argc > 1 ? atoll(argv[1]) : 200) * 1000000ull;
	int rounds = argc > 2 ? atoi(argv[2]) : 5, rtts = argc > 3 ? atoi(argv[3]) : 20000;
	static double mbs[NV][64], dcpu[NV][64], rcpu[NV][64], p50[NV][64], p99[NV][64];
	static double lat[200000];
	for (int r = 0; r < rounds; r++)
		for (int k = 0; k < NV; k++) {
			int v = (k + r) % NV, s; pid_t relay, w; struct ctx c; struct rusage ru; int st;
			/* throughput */
			setup(&c, v, &s, &relay);
			double t0 = now_s(), c0 = self_cpu();
			if ((w = fork()) == 0) { keep_only(s); writer(s, total); }
			close(s);
			uint64_t got = daemon_bulk(&c);
			double wall = now_s() - t0, cpu = self_cpu() - c0;
			waitpid(w, &st, 0);
			teardown(&c, relay, &ru);
			if (got != total) fprintf(stderr, "%s: got %llu\n", vname[v], (unsigned long long)got);
			mbs[v][r] = total / 1e6 / wall; dcpu[v][r] = cpu * 1e6 / (total / 1e6);
			rcpu[v][r] = ru_cpu(&ru) * 1e6 / (total / 1e6);
			/* latency */
			setup(&c, v, &s, &relay);
			if ((w = fork()) == 0) { keep_only(s); uint8_t b; while (read(s, &b, 1) == 1) if (write(s, &b, 1) != 1) _exit(1); _exit(0); }
			close(s);
			for (int i = 0; i < 1000; i++) rtt_once(&c);
			for (int i = 0; i < rtts; i++) lat[i] = rtt_once(&c);
			qsort(lat, rtts, sizeof(double), cmp_d);
			p50[v][r] = lat[rtts / 2]; p99[v][r] = lat[rtts * 99 / 100];
			kill(w, SIGKILL); waitpid(w, &st, 0);
			teardown(&c, relay, &ru);
		}
	printf("%-14s %9s %14s %14s %14s %10s %10s  (%d rounds, %llu MB, %d RTTs; medians)\n", "variant", "MB/s", "daemon us/MB", "relay us/MB", "total us/MB", "rtt p50us", "rtt p99us", rounds, (unsigned long long)(total / 1000000), rtts);
	for (int v = 0; v < NV; v++) {
		double d = median(dcpu[v], rounds), rr = median(rcpu[v], rounds);
		printf("%-14s %9.1f %14.1f %14.1f %14.1f %10.1f %10.1f\n", vname[v], median(mbs[v], rounds), d, rr, d + rr, median(p50[v], rounds), median(p99[v], rounds));
	}
	return (int)(sink & 0);
}
