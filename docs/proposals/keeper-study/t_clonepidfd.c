/* t_clonepidfd.c -- facts the design relies on: clone(CLONE_PARENT|CLONE_PIDFD|
 * CLONE_VM|CLONE_VFORK|CLONE_FILES) from a child ("ptyd") makes the shell a
 * child of the keeper; the keeper can waitid(P_PIDFD, WNOWAIT) with the pidfd
 * it was sent, keep the zombie (pid not reusable), then reap it; flock on an
 * inherited dup of the lock's open file description succeeds (same OFD). */
#include "common.h"
#include <sys/file.h>
#include <linux/close_range.h>
#ifndef P_PIDFD
#define P_PIDFD 3
#endif
static char stk[65536] __attribute__((aligned(16)));
static int ch(void *a) { (void)a; char *argv[] = { "idle", NULL }, *env[] = { NULL }; syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_UNSHARE); execve("/tmp/keeper-study/true_static", argv, env); _exit(127); }
int main(void) {
	int lk = open("/tmp/keeper-study/t.lock", O_RDWR | O_CREAT, 0600);
	if (flock(lk, LOCK_EX | LOCK_NB)) die("flock keeper");
	int sp[2]; socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sp);
	pid_t ptyd = fork();
	if (ptyd == 0) {
		int r = flock(lk, LOCK_EX | LOCK_NB); /* inherited dup: same OFD */
		int lk2 = open("/tmp/keeper-study/t.lock", O_RDWR); int r2 = flock(lk2, LOCK_EX | LOCK_NB);
		printf("ptyd: flock on inherited lock fd: %s; on a fresh open: %s\n", r == 0 ? "ok (same OFD)" : strerror(errno), r2 == 0 ? "ok?!" : "refused (EWOULDBLOCK)");
		int pidfd = -1;
		pid_t sh = clone(ch, stk + sizeof(stk), CLONE_PARENT | CLONE_PIDFD | CLONE_VM | CLONE_VFORK | CLONE_FILES, NULL, &pidfd);
		if (sh < 0) die("clone");
		printf("ptyd: spawned %d with CLONE_PARENT, pidfd %d, my parent %d\n", sh, pidfd, getppid());
		char cb[CMSG_SPACE(sizeof(int))]; struct iovec iov = { &sh, sizeof(sh) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cb, .msg_controllen = sizeof(cb) };
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c->cmsg_level = SOL_SOCKET; c->cmsg_type = SCM_RIGHTS; c->cmsg_len = CMSG_LEN(sizeof(int)); memcpy(CMSG_DATA(c), &pidfd, sizeof(int));
		sendmsg(sp[1], &mh, 0); fflush(stdout); _exit(0);
	}
	pid_t sh; int pidfd; char cb[CMSG_SPACE(sizeof(int))]; struct iovec iov = { &sh, sizeof(sh) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cb, .msg_controllen = sizeof(cb) };
	recvmsg(sp[0], &mh, 0); memcpy(&pidfd, CMSG_DATA(CMSG_FIRSTHDR(&mh)), sizeof(int));
	waitpid(ptyd, NULL, 0);
	char path[64]; snprintf(path, sizeof(path), "/proc/%d/stat", sh); FILE *f = fopen(path, "r"); int ppid = 0; char st;
	if (f) { fscanf(f, "%*d %*s %c %d", &st, &ppid); fclose(f); }
	printf("keeper %d: shell %d parent %d (state %c)\n", getpid(), sh, ppid, st);
	siginfo_t si; memset(&si, 0, sizeof(si));
	if (waitid(P_PIDFD, pidfd, &si, WEXITED | WNOWAIT)) die("waitid WNOWAIT");
	printf("keeper: waitid(P_PIDFD, WNOWAIT): pid %d code %d status %d; still a zombie: %s\n", si.si_pid, si.si_code, si.si_status, access(path, F_OK) == 0 ? "yes" : "no");
	if (waitid(P_PIDFD, pidfd, &si, WEXITED)) die("waitid");
	printf("keeper: reaped; /proc entry gone: %s\n", access(path, F_OK) ? "yes" : "no");
	return 0;
}
