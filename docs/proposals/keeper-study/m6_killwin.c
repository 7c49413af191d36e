/* m6_killwin.c -- does a SIGKILL of the pty reader lose bytes?
 * The writer writes a counter stream (u64 j at stream offset 8j) into a raw
 * pty as fast as it can.  The reader ("ptyd") reads the master into a memfd
 * ring it shares with this harness ("keeper") and checks every byte it
 * commits against the stream; it is SIGKILLed at a random moment (0-20 ms
 * after it starts), the harness recovers the committed end from the header,
 * and a new reader goes on from there: the first bytes it reads tell how
 * many were lost (or read twice).
 *   naive : read(); end += r (release)
 *   pkt   : TIOCPKT; FIONREAD -> k; inflight {pos,k}, ctrl=0xff; readv(ctrl
 *           byte, ring[k]); commit.  Recovery: inflight set and ctrl == 0 ->
 *           the read happened: commit pos+k; ctrl == 0xff -> it did not.
 * usage: m6_killwin naive|pkt KILLS */
#include "common.h"
#define RING (1u << 20)
#define HDR 4096
struct hdr {
	_Atomic uint64_t end, inpos, inlen; volatile uint8_t ctrl;
	_Atomic uint64_t lost, dup, inexact, reads, killed_inflight, resyncs;
};
static struct hdr *h; static uint8_t *ring; static int pkt;

static uint8_t expect(uint64_t s) { uint64_t w = s / 8; return (uint8_t)(w >> (8 * (s % 8))); }

/* Stream offset of data p[0..n) (n >= 24), or -1. */
static int64_t locate(const uint8_t *p, size_t n)
{
	for (int a = 0; a < 8 && a + 16 <= (int)n; a++) {
		uint64_t w1, w2; memcpy(&w1, p + a, 8); memcpy(&w2, p + a + 8, 8);
		if (w2 == w1 + 1) return (int64_t)(w1 * 8) - a;
	}
	return -1;
}

static void reader(int m, uint64_t end, int64_t delta)
{
	int ep = epoll_create1(0); struct epoll_event ev = { .events = EPOLLIN };
	epoll_ctl(ep, EPOLL_CTL_ADD, m, &ev);
	int first = 1;
	for (;;) {
		struct epoll_event o; epoll_wait(ep, &o, 1, -1);
		for (;;) {
			size_t off = end % RING, n = RING - off; ssize_t r;
			if (n > 65536) n = 65536;
			if (pkt) {
				int q = 0; ioctl(m, FIONREAD, &q);
				if ((size_t)q < n) n = q;
				struct iovec iov[2] = { { (void *)&h->ctrl, 1 }, { ring + off, n } };
				h->ctrl = 0xff;
				atomic_store_explicit(&h->inlen, n, memory_order_relaxed);
				atomic_store_explicit(&h->inpos, end, memory_order_release);
				r = readv(m, iov, 2);
				if (r > 0) {
					if (h->ctrl == 0 && (size_t)r != n + 1) atomic_fetch_add(&h->inexact, 1);
					r = h->ctrl == 0 ? r - 1 : 0;
				}
			} else r = read(m, ring + off, n);
			if (r <= 0) {
				if (pkt && r == 0) { atomic_store(&h->inlen, 0); break; }
				if (r < 0 && errno == EAGAIN) break;
				_exit(2);
			}
			/* check what we read, then commit */
			uint8_t *p = ring + off;
			if (first && r >= 24) {
				int64_t at = locate(p, r);
				int64_t want = (int64_t)end + delta;
				if (at >= 0 && at != want) {
					if (at > want) atomic_fetch_add(&h->lost, at - want);
					else atomic_fetch_add(&h->dup, want - at);
					atomic_fetch_add(&h->resyncs, 1);
					delta += at - want;
				}
				first = 0;
				atomic_store(&h->resyncs, atomic_load(&h->resyncs)); /* keep delta in header */
			}
			for (ssize_t i = 0; i < r; i++)
				if (p[i] != expect(end + delta + i)) { _exit(9); }
			end += r;
			atomic_store_explicit(&h->end, end, memory_order_release);
			if (pkt) atomic_store_explicit(&h->inlen, 0, memory_order_release);
			atomic_fetch_add(&h->reads, 1);
			/* publish delta for the next incarnation */
			*(volatile int64_t *)((uint8_t *)h + 512) = delta;
		}
	}
}

int main(int argc, char **argv)
{
	pkt = argc > 1 && strcmp(argv[1], "pkt") == 0;
	int kills = argc > 2 ? atoi(argv[2]) : 100, m, s, st;
	mkpty(&m, &s);
	fcntl(m, F_SETFL, O_NONBLOCK);
	if (pkt) { int one = 1; ioctl(m, TIOCPKT, &one); }
	int mfd = memfd_create("ring", 0); if (ftruncate(mfd, HDR + RING)) die("ft");
	uint8_t *base = mmap(NULL, HDR + RING, PROT_READ|PROT_WRITE, MAP_SHARED, mfd, 0);
	h = (struct hdr *)base; ring = base + HDR;
	pid_t w = fork();
	if (w == 0) {
		close(m); static uint64_t buf[1024]; uint64_t j = 0;
		for (;;) { for (int i = 0; i < 1024; i++) buf[i] = j++; const char *p = (const char *)buf; size_t left = sizeof(buf);
			while (left) { ssize_t r = write(s, p, left); if (r < 0) _exit(1); p += r; left -= r; } }
	}
	close(s);
	srand(getpid());
	uint64_t end = 0; int inflight_kills = 0, bad = 0;
	for (int k = 0; k < kills; k++) {
		int64_t delta = *(volatile int64_t *)(base + 512);
		pid_t r = fork();
		if (r == 0) reader(m, end, delta);
		usleep(rand() % 20000);
		kill(r, SIGKILL); waitpid(r, &st, 0);
		if (WIFEXITED(st)) { bad++; fprintf(stderr, "reader exited %d\n", WEXITSTATUS(st)); }
		end = atomic_load(&h->end);
		if (pkt && atomic_load(&h->inlen) != 0 && atomic_load(&h->inpos) == end) {
			inflight_kills++;
			if (h->ctrl == 0) { end += atomic_load(&h->inlen); atomic_store(&h->end, end); }
			atomic_store(&h->inlen, 0);
		}
	}
	/* one last reader to see whether the last kill lost anything */
	int64_t delta = *(volatile int64_t *)(base + 512);
	pid_t r = fork(); if (r == 0) reader(m, end, delta);
	usleep(50000); kill(r, SIGKILL); waitpid(r, &st, 0);
	kill(w, SIGKILL); waitpid(w, &st, 0);
	printf("%-6s kills=%d reads=%llu MB=%.0f lost_bytes=%llu lost_events=%llu dup_bytes=%llu inexact_reads=%llu kills_mid_read=%d reader_failures=%d\n",
	    pkt ? "pkt" : "naive", kills, (unsigned long long)h->reads, end / 1e6,
	    (unsigned long long)h->lost, (unsigned long long)h->resyncs, (unsigned long long)h->dup,
	    (unsigned long long)h->inexact, inflight_kills, bad);
	return 0;
}
