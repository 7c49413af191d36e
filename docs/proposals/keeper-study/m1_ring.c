/* m1_ring.c -- (i) a pty read into a heap ring vs a memfd-mapped ring
 * (header committed with a release store) vs a memfd written with pwrite
 * from a bounce buffer (a keeper that maps no ring).  Reader loop as in
 * ptyd/termio.c: epoll, nonblocking master, read into the ring's
 * contiguous space, short read ends the turn.
 * usage: m1_ring MB ROUNDS */
#include "common.h"
#define RING (1u << 20)
#define HDR 4096
struct hdr { _Atomic uint64_t end; uint64_t start; _Atomic uint64_t inpos, inlen; volatile uint8_t ctrl; };
enum { V_HEAP, V_MEMFD, V_PWRITE, V_PKT, NV };
static const char *vname[] = { "heap ring", "memfd mmap ring", "memfd pwrite", "memfd pkt+fionread" };

static double g_reads;
static void run(int v, uint64_t total, double *mbs, double *cpu_mb, double *wcpu_mb)
{
	uint64_t nreads = 0, nwakes = 0;
	int m, s, ep, mfd = -1;
	uint8_t *ring = NULL, *bounce = NULL; struct hdr *h = NULL, hh = {0};
	uint64_t end = 0; pid_t pid; double t0, c0; struct rusage ru; int st;
	mkpty(&m, &s);
	fcntl(m, F_SETFL, O_NONBLOCK);
	if (v == V_HEAP) { ring = malloc(RING); h = &hh; }
	else {
		mfd = memfd_create("ring", MFD_CLOEXEC);
		if (ftruncate(mfd, HDR + RING)) die("ftruncate");
		if (v == V_MEMFD || v == V_PKT) {
			uint8_t *p = mmap(NULL, HDR + RING, PROT_READ|PROT_WRITE, MAP_SHARED, mfd, 0);
			if (p == MAP_FAILED) die("mmap");
			h = (struct hdr *)p; ring = p + HDR;
		} else { bounce = malloc(65536); h = &hh; }
	}
	if (v == V_PKT) { int one = 1; if (ioctl(m, TIOCPKT, &one)) die("TIOCPKT"); }
	ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN };
	epoll_ctl(ep, EPOLL_CTL_ADD, m, &ev);
	t0 = now_s(); c0 = self_cpu();
	if ((pid = fork()) == 0) { close(m); writer(s, total); }
	close(s);
	for (;;) {
		struct epoll_event out;
		if (epoll_wait(ep, &out, 1, -1) < 0) { if (errno == EINTR) continue; die("epoll"); }
		size_t got = 0; int eof = 0; nwakes++;
		while (got < 256 * 1024) {
			size_t off = end % RING, n = RING - off; ssize_t r;
			if (v == V_PWRITE) {
				if (n > 65536) n = 65536;
				r = read(m, bounce, n);
				if (r > 0) {
					if (pwrite(mfd, bounce, r, HDR + off) != r) die("pwrite");
					end += r;
					if (pwrite(mfd, &end, 8, 0) != 8) die("pwrite hdr");
				}
			} else if (v == V_PKT) {
				int q = 0;
				if (ioctl(m, FIONREAD, &q)) die("FIONREAD");
				if ((size_t)q < n) n = q;
				struct iovec iov[2] = { { (void *)&h->ctrl, 1 }, { ring + off, n } };
				h->ctrl = 0xff;
				atomic_store_explicit(&h->inlen, n, memory_order_relaxed);
				atomic_store_explicit(&h->inpos, end, memory_order_release);
				r = readv(m, iov, 2);
				if (r > 0) {
					if (h->ctrl == 0 && (size_t)r != n + 1) { fprintf(stderr, "inexact %zd %zu\n", r, n); }
					r = h->ctrl == 0 ? r - 1 : 0;
					end += r;
					atomic_store_explicit(&h->end, end, memory_order_release);
					atomic_store_explicit(&h->inlen, 0, memory_order_release);
					if (r == 0) break; /* control packet or empty: back to epoll */
					got += r; if ((size_t)r < n || n < 4095) break; continue;
				}
			} else {
				r = read(m, ring + off, n);
				if (r > 0) {
					end += r;
					atomic_store_explicit(&h->end, end, memory_order_release);
				}
			}
			if (r > 0) { nreads++; got += r; if ((size_t)r < n) break; continue; }
			if (r < 0 && errno == EAGAIN) break;
			eof = 1; break;
		}
		if (eof) break;
	}
	double wall = now_s() - t0, cpu = self_cpu() - c0;
	wait4(pid, &st, 0, &ru);
	if (end != total) fprintf(stderr, "short: %llu\n", (unsigned long long)end);
	g_reads = (double)nwakes / (total / 1e6);
	*mbs = total / 1e6 / wall; *cpu_mb = cpu * 1e6 / (total / 1e6);
	*wcpu_mb = ru_cpu(&ru) * 1e6 / (total / 1e6);
	close(m); close(ep);
	if (v == V_MEMFD || v == V_PKT) munmap(h, HDR + RING);
	if (mfd >= 0) close(mfd);
	free(v == V_HEAP ? ring : NULL); free(bounce);
}

int main(int argc, char **argv)
{
	uint64_t total = (argc > 1 ? atoll(argv[1]) : 200) * 1000000ull;
	int rounds = argc > 2 ? atoi(argv[2]) : 5;
	double mbs[NV][64], cpu[NV][64], wcpu[NV][64], wk[NV][64];
	for (int r = 0; r < rounds; r++)
		for (int k = 0; k < NV; k++) {
			int v = (k + r) % NV; /* rotate the order */
			run(v, total, &mbs[v][r], &cpu[v][r], &wcpu[v][r]);
			wk[v][r] = g_reads;
			if (getenv("VERBOSE")) fprintf(stderr, "round %d %-18s %7.1f MB/s %7.1f us/MB %6.0f wakeups/MB\n", r, vname[v], mbs[v][r], cpu[v][r], wk[v][r]);
		}
	printf("%-18s %10s %16s %16s %12s  (%d rounds x %llu MB, medians)\n", "variant", "MB/s", "reader us/MB", "writer us/MB", "wakeups/MB", rounds, (unsigned long long)(total/1000000));
	for (int v = 0; v < NV; v++)
		printf("%-18s %10.1f %16.1f %16.1f %12.0f\n", vname[v], median(mbs[v], rounds), median(cpu[v], rounds), median(wcpu[v], rounds), median(wk[v], rounds));
	return 0;
}
