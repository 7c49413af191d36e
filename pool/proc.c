/*
 * proc.c -- the process table: each account's ptyd and ptyd.fcgi, their
 * starts, their ends and why, the backoff, and what they print.
 *
 * Owns: the fork (the child's side is child.c), the pipe each child
 * writes its output to (made as the account, read here, logged under the
 * pool's name by plog.c), the wait status put in words, when a process
 * that ended is started again (at once after a long run or a stop on
 * purpose; 1, 2, 4 ... 60 s while it keeps ending within 30 s), the stop
 * (SIGTERM, SIGKILL after POOL_STOP_GRACE) and the timers of all of it.
 * A process adopted (adopt.c) is watched through its pidfd and
 * signalled through it.  Does not own which accounts there are
 * (reload.c).
 */
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pool.h"

#define SEC 1000000LL
/* A process that ran this long had a good run: its next start is at once. */
#define POOL_GOOD_RUN	 (30 * SEC)
#define POOL_FIRST	 (SEC / 10) /* the first start again */
#define POOL_BACKOFF	 SEC	    /* then doubling ... */
#define POOL_BACKOFF_MAX (60 * SEC) /* ... up to this */
/*
 * What an account's process may put in the master's log: lines past
 * POOL_LOG_RATE a second (after a burst of POOL_LOG_BURST) are counted,
 * not logged, and the master reads at most POOL_READ_TURN bytes of one
 * pipe a turn of its loop: a child that floods its pipe neither fills
 * the journal nor keeps the master from its signals and other pools.
 */
#define POOL_LOG_RATE  50
#define POOL_LOG_BURST 200
#define POOL_READ_TURN (64 * 1024)
/* ptyd's keeper ends its shells with a grace of its own (DESIGN 10). */
#define POOL_STOP_GRACE (25 * SEC)

int64_t
pool_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * SEC + ts.tv_nsec / 1000);
}

/* argv of kind for a: the file is the account's whole configuration;
 * ptyd.fcgi takes its socket on fd 0 and leaves ptyd to us. */
static void
proc_argv(const struct pool_acct *a, enum pool_kind kind, const char **argv)
{
	int n = 0;

	if (kind == POOL_PTYD) {
		argv[n++] = pool_opts.ptyd;
		argv[n++] = "-f";
	} else
		argv[n++] = pool_opts.fcgi;
	argv[n++] = "--config";
	argv[n++] = a->path;
	if (kind == POOL_FCGI) {
		argv[n++] = "--listen";
		argv[n++] = "";
		argv[n++] = "--autostart";
		argv[n++] = "no";
		argv[n++] = "--pool";
		argv[n++] = a->name;
	}
	argv[n] = NULL;
}

/* Again after delay, counted as a failure unless it ran long. */
static void
proc_backoff(struct pool_proc *p, int64_t ran, int64_t now, int64_t *delay)
{
	if (ran >= POOL_GOOD_RUN)
		p->fails = 0;
	if (p->fails == 0)
		*delay = POOL_FIRST;
	else if (p->fails >= 7)
		*delay = POOL_BACKOFF_MAX;
	else
		*delay = POOL_BACKOFF << (p->fails - 1);
	if (*delay > POOL_BACKOFF_MAX)
		*delay = POOL_BACKOFF_MAX;
	p->fails++;
	p->due = now + *delay;
}

void
proc_start(struct pool_acct *a, enum pool_kind kind, int64_t now)
{
	struct pool_proc *p = &a->proc[kind];
	const char	 *argv[16];
	char		**env;
	int		  fds[2], rv;
	int64_t		  delay;
	pid_t		  pid;

	p->due = 0;
	if (a->gone || p->pid != 0)
		return;
	if (kind == POOL_FCGI && sock_open(a) == -1) {
		proc_backoff(p, 0, now, &delay);
		plog_warnx("%s: ptyd.fcgi not started; again in %.1f s",
		    a->name, (double)delay / SEC);
		return;
	}
	/* The pipe is the account's (its inodes), as is all it is given. */
	(void)setfsuid(a->uid);
	rv = pipe2(fds, O_CLOEXEC);
	(void)setfsuid(0);
	if (rv == -1) {
		plog_warn("%s: pipe", a->name);
		proc_backoff(p, 0, now, &delay);
		return;
	}
	proc_argv(a, kind, argv);
	env = child_env(a);
	if ((pid = fork()) == -1) {
		plog_warn("%s: fork", a->name);
		close(fds[0]);
		close(fds[1]);
		child_env_free(env);
		proc_backoff(p, 0, now, &delay);
		return;
	}
	if (pid == 0)
		child_run(a, kind, fds[1], (char **)argv, env);
	child_env_free(env);
	close(fds[1]);
	(void)fcntl(fds[0], F_SETFL, O_NONBLOCK);
	p->pid = pid;
	p->out = fds[0];
	p->len = 0;
	p->cut = 0;
	p->lines_at = 0;
	p->dropped = 0;
	p->pidfd = -1;
	p->adopted = 0;
	p->started = now;
	p->kill_at = 0;
	p->again = 0;
	plog_info("%s: %s started as %s, pid %ld", a->name, kind_name(kind),
	    a->user, (long)pid);
}

/* A signal to the process: through its pidfd when it is not our child
 * (its pid could be another's by now). */
static void
proc_kill(const struct pool_proc *p, int sig)
{
	if (p->pid == 0)
		return;
	if (p->pidfd != -1)
		(void)syscall(SYS_pidfd_send_signal, p->pidfd, sig, NULL, 0);
	else
		(void)kill(p->pid, sig);
}

void
proc_signal(struct pool_acct *a, enum pool_kind kind, int sig)
{
	proc_kill(&a->proc[kind], sig);
}

/* A process this image did not start (adopt.c): out is its pipe (or
 * -1), pidfd its end when it is not our child (adopted). */
void
proc_adopt(struct pool_proc *p, pid_t pid, int out, int pidfd, int64_t started,
    int adopted)
{
	p->pid = pid;
	p->out = out;
	p->pidfd = pidfd;
	p->adopted = adopted || out == -1;
	p->len = 0;
	p->cut = 0;
	p->lines_at = 0;
	p->dropped = 0;
	p->started = started;
	p->kill_at = 0;
	p->again = 0;
	p->due = 0;
	if (p->adopted && p->pidfd == -1)
		p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (out != -1)
		(void)fcntl(out, F_SETFL, O_NONBLOCK);
}

void
proc_stop(struct pool_acct *a, enum pool_kind kind, int again, int64_t now)
{
	struct pool_proc *p = &a->proc[kind];

	if (p->pid == 0) {
		p->due = again && !a->gone ? now : 0;
		return;
	}
	p->again = again;
	if (p->kill_at == 0) {
		proc_kill(p, SIGTERM);
		p->kill_at = now + POOL_STOP_GRACE;
	}
}

/* Lines counted but not logged, told once the rate allows again (or at
 * the end). */
static void
proc_log_dropped(struct pool_proc *p, const struct pool_acct *a,
    enum pool_kind kind)
{
	if (p->dropped == 0)
		return;
	plog_warnx("%s %s[%ld]: %lu lines not logged (more than %d a "
		   "second)",
	    a->name, kind_name(kind), (long)p->pid, p->dropped, POOL_LOG_RATE);
	p->dropped = 0;
}

/* One whole line: logged if the rate allows, else counted. */
static void
proc_line(struct pool_proc *p, const struct pool_acct *a, enum pool_kind kind,
    int64_t now)
{
	int64_t add;

	if (p->lines_at == 0 || now - p->lines_at >= SEC) {
		add = p->lines_at == 0 ?
		    POOL_LOG_BURST :
		    (now - p->lines_at) / SEC * POOL_LOG_RATE;
		p->lines = add + p->lines > POOL_LOG_BURST ?
		    POOL_LOG_BURST :
		    (int)(add + p->lines);
		p->lines_at = now;
		proc_log_dropped(p, a, kind);
	}
	if (p->lines > 0) {
		p->lines--;
		plog_child(a->name, kind_name(kind), (long)p->pid, p->line,
		    p->len, p->cut);
	} else
		p->dropped++;
	p->len = 0;
	p->cut = 0;
}

/* What the process printed: whole lines to the log, the rest kept; at
 * most POOL_READ_TURN bytes now (poll says when there is more). */
void
proc_read(struct pool_proc *p, const struct pool_acct *a, enum pool_kind kind,
    int eof)
{
	char	buf[4096];
	ssize_t n = -1;
	size_t	i, total = 0;
	int64_t now = pool_now();

	if (p->out == -1)
		return;
	while (total < POOL_READ_TURN &&
	    (n = read(p->out, buf, sizeof(buf))) > 0) {
		total += (size_t)n;
		for (i = 0; i < (size_t)n; i++) {
			if (buf[i] == '\n') {
				proc_line(p, a, kind, now);
				continue;
			}
			if (p->len == sizeof(p->line)) {
				p->cut = 1;
				continue;
			}
			p->line[p->len++] = buf[i];
		}
	}
	if (n == 0 || eof || (n == -1 && errno != EAGAIN && errno != EINTR)) {
		if (p->len > 0)
			proc_line(p, a, kind, now);
		proc_log_dropped(p, a, kind);
		p->len = 0;
		close(p->out);
		p->out = -1;
	}
}

/* "exited with status 1", "killed by signal 9 (Killed)". */
static void
proc_why(int status, char *buf, size_t size)
{
	if (WIFEXITED(status))
		snprintf(buf, size, "exited with status %d",
		    WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, size, "killed by signal %d (%s)%s",
		    WTERMSIG(status), strsignal(WTERMSIG(status)),
		    WCOREDUMP(status) ? ", core dumped" : "");
	else
		snprintf(buf, size, "ended (status 0x%x)", status);
}

/* A process of a's kind ended, why in words: log it, and start it again
 * when and if it should be. */
static void
proc_ended(struct pool_acct *a, int k, const char *why, int64_t now)
{
	struct pool_proc *p = &a->proc[k];
	int64_t		  ran, delay;
	pid_t		  pid = p->pid;

	proc_read(p, a, (enum pool_kind)k, 1);
	ran = now - p->started;
	p->pid = 0;
	p->kill_at = 0;
	if (p->pidfd != -1)
		close(p->pidfd);
	p->pidfd = -1;
	p->adopted = 0;
	if (a->gone || p->again) {
		plog_info("%s: %s pid %ld %s after %.1f s, as asked%s", a->name,
		    kind_name((enum pool_kind)k), (long)pid, why,
		    (double)ran / SEC, a->gone ? "" : "; starting it again");
		if (p->again) {
			p->again = 0;
			p->fails = 0;
			p->due = now;
		}
		return;
	}
	proc_backoff(p, ran, now, &delay);
	plog_warnx("%s: %s pid %ld %s after %.1f s; again in %.1f s", a->name,
	    kind_name((enum pool_kind)k), (long)pid, why, (double)ran / SEC,
	    (double)delay / SEC);
}

/* A child reaped.  0, or -1 if pid is none of ours (or one we watch
 * through its pidfd, which says its end). */
int
proc_reaped(pid_t pid, int status, int64_t now)
{
	struct pool_acct *a;
	char		  why[128];
	int		  k = 0;

	for (a = pool_accts; a != NULL; a = a->next) {
		for (k = 0; k < POOL_NKINDS; k++)
			if (a->proc[k].pid == pid && !a->proc[k].adopted)
				break;
		if (k < POOL_NKINDS)
			break;
	}
	if (a == NULL)
		return (-1);
	proc_why(status, why, sizeof(why));
	proc_ended(a, k, why, now);
	return (0);
}

/* An adopted process's pidfd is readable: it has ended.  Not our child,
 * so its status is its parent's to know. */
void
proc_pidfd_ended(struct pool_acct *a, enum pool_kind k, int64_t now)
{
	proc_ended(a, k, "ended (adopted: its status is not ours to read)",
	    now);
}

void
proc_tick(int64_t now)
{
	struct pool_acct *a;
	struct pool_proc *p;
	int		  k;

	for (a = pool_accts; a != NULL; a = a->next)
		for (k = 0; k < POOL_NKINDS; k++) {
			p = &a->proc[k];
			if (p->pid != 0 && p->kill_at != 0 &&
			    p->kill_at <= now) {
				plog_warnx("%s: %s pid %ld did not stop in "
					   "time: SIGKILL",
				    a->name, kind_name((enum pool_kind)k),
				    (long)p->pid);
				proc_kill(p, SIGKILL);
				p->kill_at = 0;
			}
			if (p->pid == 0 && p->due != 0 && p->due <= now &&
			    !a->gone)
				proc_start(a, (enum pool_kind)k, now);
		}
}

/* Microseconds until the next timer, or -1: none. */
int64_t
proc_next(int64_t now)
{
	struct pool_acct *a;
	int64_t		  next = -1, t;
	int		  k;

	for (a = pool_accts; a != NULL; a = a->next)
		for (k = 0; k < POOL_NKINDS; k++) {
			t = a->proc[k].pid != 0 ? a->proc[k].kill_at :
			    a->gone		? 0 :
						  a->proc[k].due;
			if (t == 0)
				continue;
			t = t > now ? t - now : 0;
			if (next == -1 || t < next)
				next = t;
		}
	return (next);
}
