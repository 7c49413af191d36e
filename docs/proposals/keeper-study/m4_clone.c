/* m4_clone.c -- (iv) spawning a shell (a static program that exits at once,
 * on a new pty, as ptyd/spawn.c does it: CLONE_VM|CLONE_VFORK|CLONE_FILES,
 * close_range(UNSHARE), setsid, slave as ctty, execve):
 *   plain        : the spawner is the parent and reaps (ptyd today)
 *   CLONE_PARENT : the same flags + CLONE_PARENT: the keeper (the spawner's
 *                  parent) is the parent and reaps
 *   keeper-spawn : the spawner asks the keeper over a SOCK_SEQPACKET pair
 *                  (request with a ring memfd attached), the keeper spawns
 *                  (plain) and answers with the pid and the master (SCM_RIGHTS)
 *   fork 256MB   : fork+exec from a process with 256 MB touched (why spawn.c
 *                  does not fork)
 * Times are the spawner's, per spawn (pty + clone until the child has exec'd,
 * and for keeper-spawn the whole request/answer).  usage: m4_clone N ROUNDS */
#include "common.h"
#include <linux/close_range.h>
static const char *prog = "/tmp/keeper-study/idle_static"; /* blocks on its tty like an idle shell */
struct ch { const char *slave; volatile int err; };
static char stack[65536] __attribute__((aligned(16)));
static int child(void *a_) {
	struct ch *a = a_;
	if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_UNSHARE) == -1) goto f;
	if (setsid() == -1) goto f;
	int fd = open(a->slave, O_RDWR); if (fd < 0) goto f;
	dup2(fd, 0); dup2(fd, 1); dup2(fd, 2);
	char *argv[] = { "true", NULL }, *envp[] = { NULL };
	execve(prog, argv, envp);
f:	a->err = errno; _exit(127);
}
static pid_t spawn(int flags, int *mfd) {
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC); char name[64];
	grantpt(m); unlockpt(m); ptsname_r(m, name, sizeof(name));
	struct winsize ws = { 24, 80, 0, 0 }; ioctl(m, TIOCSWINSZ, &ws);
	struct ch a = { name, 0 }; sigset_t all, old; sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	pid_t p = clone(child, stack + sizeof(stack), CLONE_VM | CLONE_VFORK | CLONE_FILES | flags | SIGCHLD, &a);
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (p < 0) die("clone");
	*mfd = m; return p;
}
static void send_fd(int sk, int fd, const void *d, size_t n) {
	char cb[CMSG_SPACE(sizeof(int))]; struct iovec iov = { (void *)d, n };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cb, .msg_controllen = sizeof(cb) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c->cmsg_level = SOL_SOCKET; c->cmsg_type = SCM_RIGHTS; c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int)); if (sendmsg(sk, &mh, 0) < 0) die("sendmsg");
}
static int recv_fd(int sk, void *d, size_t n) {
	char cb[CMSG_SPACE(sizeof(int))]; struct iovec iov = { d, n };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cb, .msg_controllen = sizeof(cb) };
	if (recvmsg(sk, &mh, MSG_CMSG_CLOEXEC) <= 0) return -1;
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh); int fd = -1; if (c) memcpy(&fd, CMSG_DATA(c), sizeof(int)); return fd;
}
static double g_us;
#include <poll.h>
/* Untimed: wait until pid has exited (pidfd works for a child of anyone). */
static void wait_gone(pid_t p) {
	int fd = syscall(SYS_pidfd_open, p, 0);
	if (fd < 0) return; /* already reaped */
	struct pollfd pf = { fd, POLLIN, 0 }; poll(&pf, 1, 5000); close(fd);
}
/* mode 0 plain, 1 CLONE_PARENT, 2 keeper-spawn, 3 fork with 256 MB */
static void run(int mode, int n) {
	int sp[2]; socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp);
	int pp[2]; pipe(pp);
	pid_t sp_pid = fork();
	if (sp_pid == 0) { /* the spawner: "ptyd" */
		close(sp[1]);
		char *big = NULL; if (mode == 3) { big = malloc(256 << 20); memset(big, 1, 256 << 20); }
		double t = 0;
		for (int i = 0; i < n; i++) {
			int m; double t0 = now_s();
			if (mode == 0 || mode == 1) {
				pid_t p = spawn(mode == 1 ? CLONE_PARENT : 0, &m);
				t += now_s() - t0;
				close(m);
				if (mode == 0) waitpid(p, NULL, 0); else wait_gone(p);
			} else if (mode == 2) {
				int mf = memfd_create("ring", MFD_CLOEXEC); ftruncate(mf, 4096 + (1 << 20));
				char req[512] = "SPAWN"; send_fd(sp[0], mf, req, sizeof(req));
				pid_t p; m = recv_fd(sp[0], &p, sizeof(p));
				t += now_s() - t0;
				close(m); close(mf); wait_gone(p);
			} else {
				m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC); grantpt(m); unlockpt(m);
				char name[64]; ptsname_r(m, name, sizeof(name));
				pid_t p = fork();
				if (p == 0) { setsid(); int fd = open(name, O_RDWR); dup2(fd, 0); dup2(fd, 1); dup2(fd, 2);
					char *argv[] = { "true", NULL }, *envp[] = { NULL }; execve(prog, argv, envp); _exit(127); }
				t += now_s() - t0; close(m); waitpid(p, NULL, 0); /* closing the master hangs it up */
			}
		}
		t = t * 1e6 / n; write(pp[1], &t, 8); _exit(0);
	}
	close(sp[0]);
	/* the keeper: reaps (mode 1: the shells are its children), serves mode 2 */
	int alive = 1;
	while (alive) {
		if (mode == 2) {
			struct pollfd_ { int fd; short e, r; };
			char req[512]; int mf = recv_fd(sp[1], req, sizeof(req));
			if (mf < 0) { alive = 0; break; }
			int m; pid_t p = spawn(0, &m);
			send_fd(sp[1], m, &p, sizeof(p)); close(m); close(mf);
			while (waitpid(-1, NULL, WNOHANG) > 0) ;
		} else {
			pid_t w = waitpid(-1, NULL, 0);
			if (w == sp_pid) alive = 0;
		}
	}
	while (waitpid(-1, NULL, 0) > 0) ;
	read(pp[0], &g_us, 8); close(pp[0]); close(pp[1]); close(sp[1]);
}
int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 2000, rounds = argc > 2 ? atoi(argv[2]) : 5;
	prctl_subreaper: syscall(SYS_prctl, 36 /* PR_SET_CHILD_SUBREAPER */, 1, 0, 0, 0);
	const char *names[] = { "plain (ptyd today)", "CLONE_PARENT", "keeper-spawn (SEQPACKET+SCM_RIGHTS)", "fork from 256 MB RSS" };
	double t[4][64];
	for (int r = 0; r < rounds; r++) for (int k = 0; k < 4; k++) { int m = (k + r) % 4; run(m, m == 3 ? n / 4 : n); t[m][r] = g_us; }
	printf("spawn of a static no-op on a new pty, %d spawns a round (fork: %d), %d rounds, median us per spawn\n", n, n / 4, rounds);
	for (int m = 0; m < 4; m++) printf("  %-40s %8.1f us\n", names[m], median(t[m], rounds));
	return 0;
}
