/* m5_holder.c -- (v) memory of a per-terminal holder process: a minimal C
 * holder owning one pty master and one socket to the daemon, with a 1 MiB
 * ring allocated lazily (64 KiB touched, as after a little output), asleep
 * in epoll_wait.  Started N times; RSS/PSS/private read from
 * /proc/PID/smaps_rollup; kernel side from /proc/meminfo deltas
 * (KernelStack, PageTables, Slab; noisy on a shared machine).
 * usage: m5_holder N   (run it once dynamic, once static: see run_m5.sh) */
#include "common.h"
static void holder(void) {
	int m, s, sp[2]; mkpty(&m, &s);
	socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sp);
	uint8_t *ring = malloc(1 << 20); memset(ring, 'x', 65536);
	int ep = epoll_create1(0); struct epoll_event ev = { .events = EPOLLIN };
	epoll_ctl(ep, EPOLL_CTL_ADD, m, &ev); epoll_ctl(ep, EPOLL_CTL_ADD, sp[0], &ev);
	for (;;) { struct epoll_event o; epoll_wait(ep, &o, 1, -1); uint8_t b[4096]; read(m, b, sizeof(b)); }
}
static long rollup(pid_t p, const char *key) {
	char path[64], l[256]; snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", p);
	FILE *f = fopen(path, "r"); long v = -1, x; char k[64];
	while (f && fgets(l, sizeof(l), f)) if (sscanf(l, "%63[^:]: %ld", k, &x) == 2 && strcmp(k, key) == 0) v = x;
	if (f) { fclose(f); } return v;
}
static long mi(const char *key) {
	FILE *f = fopen("/proc/meminfo", "r"); char l[256], k[64]; long v = 0, x;
	while (fgets(l, sizeof(l), f)) if (sscanf(l, "%63[^:]: %ld", k, &x) == 2 && strcmp(k, key) == 0) v = x;
	fclose(f); return v;
}
int main(int argc, char **argv) {
	if (argc > 1 && strcmp(argv[1], "child") == 0) holder();
	int n = argc > 1 ? atoi(argv[1]) : 100; pid_t *p = malloc(sizeof(pid_t) * n);
	long ks0 = mi("KernelStack"), pt0 = mi("PageTables"), sl0 = mi("Slab");
	for (int i = 0; i < n; i++) if ((p[i] = fork()) == 0) { execl("/proc/self/exe", "holder", "child", (char *)NULL); _exit(127); }
	usleep(300000);
	long ks1 = mi("KernelStack"), pt1 = mi("PageTables"), sl1 = mi("Slab");
	long rss = 0, pss = 0, priv = 0;
	for (int i = 0; i < n; i++) { rss += rollup(p[i], "Rss"); pss += rollup(p[i], "Pss"); priv += rollup(p[i], "Private_Dirty") + rollup(p[i], "Private_Clean"); }
	printf("%d holders: per holder RSS %.0f kB, PSS %.0f kB, private %.0f kB; kernel: stack %.1f kB, page tables %.1f kB, slab %.1f kB (meminfo deltas / N)\n",
	    n, (double)rss / n, (double)pss / n, (double)priv / n, (double)(ks1 - ks0) / n, (double)(pt1 - pt0) / n, (double)(sl1 - sl0) / n);
	for (int i = 0; i < n; i++) kill(p[i], SIGKILL);
	while (wait(NULL) > 0) ;
	return 0;
}
