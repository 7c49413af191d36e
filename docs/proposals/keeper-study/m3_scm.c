/* m3_scm.c -- (iii) passing terminals' descriptors with SCM_RIGHTS, and what
 * a re-adoption of N terminals costs the receiving ptyd.
 *   batch-1fd   : N pty masters, 250 fds a message
 *   batch-2fd   : N masters + N ring memfds (2N fds), 250 fds a message
 *   per-term    : one message per terminal (master + memfd + a 64-byte record)
 *   adopt       : batch-2fd, then per terminal mmap the memfd (1 MiB + 4 KiB),
 *                 read its header, close the memfd, epoll_ctl ADD the master
 *   adopt-inh   : no passing (descriptors inherited, as across exec): mmap,
 *                 header, epoll only
 * usage: m3_scm N ROUNDS */
#include "common.h"
#define RING (1u << 20)
#define HDR 4096
#define BATCH 250
struct rec { uint64_t id, pos; char sid[48]; };

static int N;
static int *mast, *mfds;

static void send_fds(int sk, const int *fds, int n, const void *data, size_t dlen)
{
	char cbuf[CMSG_SPACE(sizeof(int) * 253)];
	struct iovec iov = { (void *)data, dlen };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = CMSG_SPACE(sizeof(int) * n) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET; c->cmsg_type = SCM_RIGHTS; c->cmsg_len = CMSG_LEN(sizeof(int) * n);
	memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
	if (sendmsg(sk, &mh, 0) < 0) die("sendmsg");
}
static int recv_fds(int sk, int *fds, void *data, size_t dlen)
{
	char cbuf[CMSG_SPACE(sizeof(int) * 253)];
	struct iovec iov = { data, dlen };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	if (recvmsg(sk, &mh, MSG_CMSG_CLOEXEC) < 0) die("recvmsg");
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	if (!c) return 0;
	int n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
	memcpy(fds, CMSG_DATA(c), n * sizeof(int));
	return n;
}
static void adopt_one(int ep, int master, int memfd)
{
	uint8_t *p = mmap(NULL, HDR + RING, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (p == MAP_FAILED) die("mmap");
	volatile uint64_t id = *(uint64_t *)p; (void)id;
	close(memfd);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = master };
	if (epoll_ctl(ep, EPOLL_CTL_ADD, master, &ev)) die("epoll_ctl");
	munmap(p, HDR + RING); /* a real ptyd keeps it; unmapped here so rounds do not pile up */
}

/* mode 0 batch-1fd, 1 batch-2fd, 2 per-term, 3 adopt, 4 adopt-inh: seconds */
static double run(int mode)
{
	int sp[2], pp[2]; socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sp); pipe(pp);
	int sz = 1 << 22; setsockopt(sp[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	double t0 = now_s();
	pid_t c = fork();
	if (c == 0) {
		close(sp[0]);
		int *got = malloc(sizeof(int) * 2 * N), have = 0, ep = epoll_create1(0);
		char buf[BATCH * sizeof(struct rec) + 64];
		if (mode == 4) { for (int i = 0; i < N; i++) adopt_one(ep, mast[i], dup(mfds[i])); }
		else {
			int want = mode == 0 ? N : 2 * N;
			while (have < want) have += recv_fds(sp[1], got + have, buf, sizeof(buf));
			if (mode == 3) for (int i = 0; i < N; i++) adopt_one(ep, got[2 * i], got[2 * i + 1]);
		}
		double t1 = now_s(); if (write(pp[1], &t1, 8) != 8) _exit(1); _exit(0);
	}
	close(sp[1]);
	if (mode != 4) {
		int fds[BATCH]; struct rec recs[BATCH]; memset(recs, 0, sizeof(recs));
		if (mode == 0) for (int i = 0; i < N; i += BATCH) { int n = N - i < BATCH ? N - i : BATCH; send_fds(sp[0], mast + i, n, recs, n * sizeof(struct rec)); }
		else if (mode == 2) for (int i = 0; i < N; i++) { int f[2] = { mast[i], mfds[i] }; send_fds(sp[0], f, 2, recs, 64); }
		else for (int i = 0; i < N; i += BATCH / 2) { int n = N - i < BATCH / 2 ? N - i : BATCH / 2;
			for (int j = 0; j < n; j++) { fds[2*j] = mast[i+j]; fds[2*j+1] = mfds[i+j]; }
			send_fds(sp[0], fds, 2 * n, recs, n * sizeof(struct rec)); }
	}
	double t1; if (read(pp[0], &t1, 8) != 8) die("pipe");
	int st; waitpid(c, &st, 0); close(sp[0]); close(pp[0]); close(pp[1]);
	return t1 - t0;
}

static long slab_kb(void) { FILE *f = fopen("/proc/meminfo", "r"); char l[256]; long v = 0, x;
	while (fgets(l, sizeof(l), f)) if (sscanf(l, "Slab: %ld", &x) == 1) v = x; fclose(f); return v; }

int main(int argc, char **argv)
{
	N = argc > 1 ? atoi(argv[1]) : 1000; int rounds = argc > 2 ? atoi(argv[2]) : 5;
	raise_nofile();
	mast = malloc(sizeof(int) * N); mfds = malloc(sizeof(int) * N);
	long s0 = slab_kb();
	for (int i = 0; i < N; i++) {
		int s; mkpty(&mast[i], &s); close(s);
	}
	long s1 = slab_kb();
	for (int i = 0; i < N; i++) {
		mfds[i] = memfd_create("t", MFD_CLOEXEC); if (ftruncate(mfds[i], HDR + RING)) die("ft");
		uint64_t id = i; pwrite(mfds[i], &id, 8, 0);
	}
	/* mkpty made the masters CLOEXEC; the forked receiver keeps them (no exec) */
	const char *names[] = { "batch-1fd (N fds)", "batch-2fd (2N fds)", "per-term msg (2 fds)", "adopt (recv+mmap+epoll)", "adopt-inherited (no passing)" };
	double t[5][64];
	for (int r = 0; r < rounds; r++) for (int m = 0; m < 5; m++) t[m][r] = run(m);
	printf("N=%d terminals, %d rounds, medians (ms total / us per terminal)\n", N, rounds);
	for (int m = 0; m < 5; m++) { double x = median(t[m], rounds); printf("  %-30s %8.2f ms %8.2f us\n", names[m], x * 1e3, x * 1e6 / N); }
	printf("  kernel slab for %d open ptys (slave closed): %ld kB (%.1f kB per pty; noisy: shared machine)\n", N, s1 - s0, (double)(s1 - s0) / N);
	return 0;
}
