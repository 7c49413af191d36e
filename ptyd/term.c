/*
 * term.c -- the terminal registry and every terminal's lifecycle.
 *
 * Owns: struct term objects from term_new to their free at the end of a
 * loop turn; the registry (a hash on (owner, session_id) plus a list in
 * start order) and the cap; the pid hash of live shells; pty I/O
 * (reading output into the ring, writing queued input); backpressure; the
 * SIGCHLD reaping loop.  Does not own: viewer connections (conn.c, through
 * struct viewer), forking (spawn.c), strays (proc.c), the reaper's
 * schedule (reap.c, main.c), the SQLite mirror (mirror.c: told of every
 * change through mirror_mark and mirror_event).
 *
 * Single-threaded: a lookup and what follows it (attach, claim, evict) are
 * one step; no other code runs in between, so "attach is atomic" needs no
 * lock.  Objects reachable from a callback in flight are freed only at the
 * end of the turn (ev_defer).
 */
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "mirror.h"
#include "proc.h"
#include "proto.h"
#include "ptyd.h"
#include "spawn.h"
#include "term.h"
#include "xmalloc.h"

#include <sys/epoll.h>

#define TERM_READ_BUDGET	(256 * 1024)	/* per wakeup, for fairness */

struct ptyd_config ptyd_conf = {
	.idle_grace = 900 * PTYD_SEC,
	.reap_interval = 60 * PTYD_SEC,
	.linger = 60 * PTYD_SEC,
	.stall_timeout = 10 * PTYD_SEC,
	.max_terminals = 32,
	.max_per_owner = 32,
	.max_viewers = 32,
	.ring_size = 1024 * 1024,
	.input_limit = 1024 * 1024,
	.shell = "/bin/sh",
};

struct term_chunk {
	STAILQ_ENTRY(term_chunk)	 entry;
	size_t				 len;
	size_t				 off;
	uint8_t				 data[];
};

TAILQ_HEAD(term_list, term);

static struct term_list	  term_all = TAILQ_HEAD_INITIALIZER(term_all);
static struct term_list	  term_reg = TAILQ_HEAD_INITIALIZER(term_reg);
static struct term	**term_hash;
static struct term	**term_phash;
static size_t		  term_nbuckets;
static unsigned int	  term_nreg;

static void	term_io_cb(int, uint32_t, void *);
static void	term_timer_cb(void *);
static void	term_defer_cb(void *);
static void	term_finish(struct term *, int64_t);
static void	term_maybe_free(struct term *);
static void	term_update_events(struct term *);
static void	term_wake_viewers(struct term *);
static void	term_size_reassert(struct term *);

/* Registry hashing. */

static size_t
term_hash_key(const char *owner, const char *sid)
{
	uint64_t	h = 1469598103934665603ULL;
	const char	*p;

	for (p = owner; *p != '\0'; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ULL;
	h = (h ^ 0xff) * 1099511628211ULL;	/* separator no text holds */
	for (p = sid; *p != '\0'; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ULL;
	return ((size_t)h);
}

static size_t
term_hash_pid(pid_t pid)
{
	return ((size_t)((uint64_t)pid * 11400714819323198485ULL >> 20));
}

static void
term_rehash(size_t n)
{
	struct term	**h, **ph, *t;
	size_t		  i;

	h = xcalloc(n, sizeof(*h));
	ph = xcalloc(n, sizeof(*ph));
	TAILQ_FOREACH(t, &term_all, all_entry) {
		if (t->registered) {
			i = term_hash_key(t->owner, t->sid) & (n - 1);
			t->hnext = h[i];
			h[i] = t;
		}
		if (t->in_pid_hash) {
			i = term_hash_pid(t->pid) & (n - 1);
			t->pnext = ph[i];
			ph[i] = t;
		}
	}
	free(term_hash);
	free(term_phash);
	term_hash = h;
	term_phash = ph;
	term_nbuckets = n;
}

void
term_init(struct store *st)
{
	mirror_init(st);
	if (term_hash == NULL)
		term_rehash(256);
}

void
term_done(void)
{
	mirror_done();
	free(term_hash);
	free(term_phash);
	term_hash = term_phash = NULL;
	term_nbuckets = 0;
}

struct term *
term_find(const char *owner, const char *sid)
{
	struct term	*t;

	if (term_hash == NULL)
		return (NULL);
	t = term_hash[term_hash_key(owner, sid) & (term_nbuckets - 1)];
	for (; t != NULL; t = t->hnext)
		if (strcmp(t->sid, sid) == 0 && strcmp(t->owner, owner) == 0)
			return (t);
	return (NULL);
}

struct term *
term_find_pid(pid_t pid)
{
	struct term	*t;

	if (term_phash == NULL)
		return (NULL);
	t = term_phash[term_hash_pid(pid) & (term_nbuckets - 1)];
	for (; t != NULL; t = t->pnext)
		if (t->pid == pid)
			return (t);
	return (NULL);
}

static int
term_is_live_shell(pid_t pid)
{
	return (term_find_pid(pid) != NULL);
}

static void
term_pid_add(struct term *t)
{
	size_t	i;

	if (term_phash == NULL)
		term_rehash(256);
	i = term_hash_pid(t->pid) & (term_nbuckets - 1);
	t->pnext = term_phash[i];
	term_phash[i] = t;
	t->in_pid_hash = 1;
}

static void
term_pid_remove(struct term *t)
{
	struct term	**pp;

	if (!t->in_pid_hash)
		return;
	pp = &term_phash[term_hash_pid(t->pid) & (term_nbuckets - 1)];
	for (; *pp != NULL; pp = &(*pp)->pnext) {
		if (*pp == t) {
			*pp = t->pnext;
			break;
		}
	}
	t->pnext = NULL;
	t->in_pid_hash = 0;
}

void
term_register(struct term *t)
{
	size_t	i;

	if (t->registered)
		fatalx("term_register: %s already registered", t->sid);
	if (term_hash == NULL)
		term_rehash(256);
	if (term_nreg + 1 > term_nbuckets)
		term_rehash(term_nbuckets * 2);
	i = term_hash_key(t->owner, t->sid) & (term_nbuckets - 1);
	t->hnext = term_hash[i];
	term_hash[i] = t;
	t->registered = 1;
	TAILQ_INSERT_TAIL(&term_reg, t, reg_entry);
	term_nreg++;
}

void
term_unregister(struct term *t)
{
	struct term	**pp;

	if (!t->registered)
		return;
	pp = &term_hash[term_hash_key(t->owner, t->sid) & (term_nbuckets - 1)];
	for (; *pp != NULL; pp = &(*pp)->hnext) {
		if (*pp == t) {
			*pp = t->hnext;
			break;
		}
	}
	t->hnext = NULL;
	t->registered = 0;
	TAILQ_REMOVE(&term_reg, t, reg_entry);
	term_nreg--;
	term_maybe_free(t);
}

unsigned int
term_count(void)
{
	return (term_nreg);
}

unsigned int
term_count_owner(const char *owner)
{
	struct term	*t;
	unsigned int	 n = 0;

	TAILQ_FOREACH(t, &term_reg, reg_entry)
		if (strcmp(t->owner, owner) == 0)
			n++;
	return (n);
}

struct term *
term_first(void)
{
	return (TAILQ_FIRST(&term_reg));
}

struct term *
term_next(struct term *t)
{
	return (TAILQ_NEXT(t, reg_entry));
}

void
term_stats(unsigned int *terms, unsigned int *exited, unsigned int *viewers)
{
	struct term	*t;

	*terms = term_nreg;
	*exited = *viewers = 0;
	TAILQ_FOREACH(t, &term_reg, reg_entry)
		if (t->state == TERM_EXITED)
			(*exited)++;
	TAILQ_FOREACH(t, &term_all, all_entry)
		*viewers += t->nviewers;
}

struct term *
term_new(const char *owner, const char *sid, const char *workspace,
    unsigned int rows, unsigned int cols, uint64_t base, int64_t now)
{
	struct term	*t;

	t = xcalloc(1, sizeof(*t));
	t->id = mirror_next_id();
	t->owner = xstrdup(owner);
	t->sid = xstrdup(sid);
	t->workspace = xstrdup(workspace);
	t->state = TERM_RUNNING;
	t->reason = TERM_R_NONE;
	t->pid = -1;
	t->master = -1;
	t->io.fd = -1;
	t->rows = (uint16_t)rows;
	t->cols = (uint16_t)cols;
	t->base = base;
	ring_init(&t->ring, base, ptyd_conf.ring_size);
	t->started_at = t->last_activity = now;
	t->unwatched_since = now;	/* born unwatched: reapable if unused */
	t->ended_at = -1;
	TAILQ_INIT(&t->viewers);
	STAILQ_INIT(&t->input);
	ev_timer_init(&t->timer, term_timer_cb, t);
	ev_defer_init(&t->defer, term_defer_cb, t);
	TAILQ_INSERT_TAIL(&term_all, t, all_entry);
	return (t);
}

static void
term_input_drop(struct term *t)
{
	struct term_chunk	*c;

	while ((c = STAILQ_FIRST(&t->input)) != NULL) {
		STAILQ_REMOVE_HEAD(&t->input, entry);
		free(c);
	}
	t->in_pending = 0;
}

static void
term_free(struct term *t)
{
	mirror_forget(t, ev_now());
	ev_timer_stop(&t->timer);
	ev_defer_cancel(&t->defer);
	ev_io_del(&t->io);
	if (t->master != -1)
		close(t->master);
	term_pid_remove(t);
	term_input_drop(t);
	once_free(&t->once);
	TAILQ_REMOVE(&term_all, t, all_entry);
	ring_free(&t->ring);
	free(t->owner);
	free(t->sid);
	free(t->workspace);
	free(t);
}

static void
term_defer_cb(void *arg)
{
	struct term	*t = arg;
	struct viewer	*v, *next;

	if (t->free_queued) {
		if (t->state == TERM_EXITED && !t->registered &&
		    t->nviewers == 0)
			term_free(t);
		else
			t->free_queued = 0;
		return;
	}
	if (t->wake_queued) {
		t->wake_queued = 0;
		for (v = TAILQ_FIRST(&t->viewers); v != NULL; v = next) {
			next = TAILQ_NEXT(v, entry);
			v->wake(v);
		}
	}
}

/* Free at the end of the turn once nothing can refer to t any more. */
static void
term_maybe_free(struct term *t)
{
	if (t->state != TERM_EXITED || t->registered || t->nviewers != 0)
		return;
	t->free_queued = 1;
	ev_defer(&t->defer);
}

static void
term_wake_viewers(struct term *t)
{
	if (t->nviewers == 0 || t->free_queued)
		return;
	t->wake_queued = 1;
	ev_defer(&t->defer);
}

/* Request policy. */

int
term_sid_valid(const char *sid)
{
	size_t		 n = 0;
	const char	*p;

	for (p = sid; *p != '\0'; p++, n++) {
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		    (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' ||
		    *p == ':' || *p == '-')
			continue;
		return (0);
	}
	return (n >= 1 && n <= 128);
}

void
term_clamp(unsigned int *rows, unsigned int *cols, int start)
{
	if (*rows == 0 && start)
		*rows = PTYD_ROWS_DEFAULT;
	if (*cols == 0 && start)
		*cols = PTYD_COLS_DEFAULT;
	if (*rows != 0 && *rows < PTYD_ROWS_MIN)
		*rows = PTYD_ROWS_MIN;
	if (*rows > PTYD_ROWS_MAX)
		*rows = PTYD_ROWS_MAX;
	if (*cols != 0 && *cols < PTYD_COLS_MIN)
		*cols = PTYD_COLS_MIN;
	if (*cols > PTYD_COLS_MAX)
		*cols = PTYD_COLS_MAX;
}

/* out gets the resolved directory; -1 if it is not allowed. */
int
term_workspace_resolve(const char *in, char *out, size_t size)
{
	char		 buf[PATH_MAX];
	struct stat	 st;
	size_t		 i, len;

	if (in == NULL || *in == '\0') {
		if (ptyd_conf.default_workspace == NULL ||
		    strlen(ptyd_conf.default_workspace) >= size)
			return (-1);
		strcpy(out, ptyd_conf.default_workspace);
		return (0);
	}
	if (realpath(in, buf) == NULL)
		return (-1);
	if (stat(buf, &st) == -1 || !S_ISDIR(st.st_mode))
		return (-1);
	for (i = 0; i < ptyd_conf.nroots; i++) {
		len = strlen(ptyd_conf.roots[i]);
		if (strcmp(ptyd_conf.roots[i], "/") == 0 ||
		    (strncmp(buf, ptyd_conf.roots[i], len) == 0 &&
		    (buf[len] == '\0' || buf[len] == '/'))) {
			if (strlen(buf) >= size)
				return (-1);
			strcpy(out, buf);
			return (0);
		}
	}
	return (-1);
}

/*
 * The first position of a new incarnation: the wall clock in ns, so ids of
 * a daemon restarted later are above any earlier ones, and above the old
 * incarnation's MSG_EXIT pos (end + 1) should the clock be behind it.
 */
uint64_t
term_base(const struct term *old, uint64_t now_ns)
{
	uint64_t	base = now_ns;

	if (old != NULL && base < ring_end(&old->ring) + 2)
		base = ring_end(&old->ring) + 2;
	return (base);
}

static uint64_t
term_now_ns(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ((uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec);
}

/* Lifecycle. */

struct term *
term_evict_pick(const char *owner)
{
	struct term	*t, *best = NULL;

	/* An exited terminal first (the earliest to end), else the least
	 * recently active.  Callers unregister the id being started first,
	 * so it can never be picked. */
	TAILQ_FOREACH(t, &term_reg, reg_entry) {
		if (owner != NULL && strcmp(t->owner, owner) != 0)
			continue;
		if (best == NULL) {
			best = t;
			continue;
		}
		if (t->state == TERM_EXITED && best->state != TERM_EXITED)
			best = t;
		else if (t->state == TERM_EXITED && best->state == TERM_EXITED) {
			if (t->ended_at < best->ended_at)
				best = t;
		} else if (t->state != TERM_EXITED &&
		    best->state != TERM_EXITED &&
		    t->last_activity < best->last_activity)
			best = t;
	}
	return (best);
}

/* Evict t to make room for req (the audit says which cap, for whom). */
void
term_evict(struct term *t, const char *cap, unsigned int max,
    const struct term_start_req *req, int64_t now)
{
	char	detail[PROTO_SID_MAX + PROTO_OWNER_MAX + 128];

	snprintf(detail, sizeof(detail), "%s %u reached starting %s%s%s; %s,"
	    " idle %llds", cap, max, req->owner, *req->owner ? "/" : "",
	    req->sid, t->state == TERM_EXITED ? "exited" : "running",
	    (long long)((now - t->last_activity) / PTYD_SEC));
	term_teardown(t, TERM_R_EVICTED, req->actor, detail, now);
}

void
term_set_state(struct term *t, enum term_state to, enum term_reason why,
    int64_t now)
{
	const struct term_transition	*tr;

	if ((tr = term_transition_find(t->state, to)) == NULL)
		fatalx("term %s: no transition %s -> %s", t->sid,
		    term_state_name(t->state), term_state_name(to));
	t->state = to;
	if (why != TERM_R_NONE)
		t->reason = why;
	switch (tr->timer) {
	case TERM_TIMER_STOP:
		ev_timer_stop(&t->timer);
		break;
	case TERM_TIMER_KILL:
		ev_timer_at(&t->timer, now + PTYD_KILL_DELAY);
		break;
	case TERM_TIMER_DRAIN:
		ev_timer_at(&t->timer, now + PTYD_DRAIN_DEADLINE);
		break;
	case TERM_TIMER_LINGER:
		if (t->registered)
			ev_timer_at(&t->timer, now + ptyd_conf.linger);
		else
			ev_timer_stop(&t->timer);
		break;
	}
	mirror_mark(t);
	if (tr->wake)
		term_wake_viewers(t);
}

const char *
term_db_state(const struct term *t)
{
	return (term_reason_db(t->reason));
}

/*
 * Teardown: unregister first (nothing can attach or type from here on),
 * SIGHUP and SIGCONT to the process group, SIGKILL after PTYD_KILL_DELAY
 * if the shell is still there (the ENDING state's timer).  Output keeps
 * draining to viewers; MSG_EXIT goes out once the shell is reaped and the
 * pty drained.  The audit event is the reason's (restart logs close).
 */
void
term_teardown(struct term *t, enum term_reason why, const char *actor,
    const char *detail, int64_t now)
{
	mirror_event(t, now, term_reason_audit(why), actor,
	    detail != NULL ? detail : term_reason_wire(why));

	if (t->registered)
		term_unregister(t);
	/*
	 * Ending already, or the shell already ended by itself and the pty
	 * is draining (its row stays exited with its own code, which is what
	 * happened): this teardown only ends the linger that would have
	 * followed.  Its event above says who asked.
	 */
	if (t->state != TERM_RUNNING)
		return;
	term_set_state(t, TERM_ENDING, why, now);
	if (t->pid > 0) {
		(void)kill(-t->pid, SIGHUP);
		(void)kill(-t->pid, SIGCONT);
	}
}

static void
term_timer_cb(void *arg)
{
	struct term	*t = arg;
	int64_t		 now = ev_now();

	switch (t->state) {
	case TERM_EXITED:
		term_linger_expired(t, now);
		break;
	case TERM_ENDING:
		/* Teardown's grace is over: the shell ignored SIGHUP. */
		if (t->pid > 0) {
			(void)kill(-t->pid, SIGKILL);
			(void)kill(t->pid, SIGKILL);
		}
		t->killed = 1;
		break;
	case TERM_DRAINING:
		/* Reaped but the pty never reached EIO: something outside
		 * the terminal holds the slave.  Unless a viewer is still
		 * owed bytes it is reading, stop waiting. */
		if (t->paused) {
			ev_timer_at(&t->timer, now + PTYD_SEC);
			break;
		}
		term_finish(t, now);
		break;
	case TERM_RUNNING:
		break;		/* no timer runs while running */
	}
}

void
term_linger_expired(struct term *t, int64_t now)
{
	(void)now;
	if (t->state != TERM_EXITED)
		return;
	term_unregister(t);
}

/* The shell is gone (SIGCHLD).  Drain, then finish. */
void
term_child_exited(struct term *t, int status, int64_t now)
{
	char	detail[64];

	if (t->reaped)
		return;
	t->reaped = 1;
	term_pid_remove(t);
	t->has_exit_code = 1;
	if (WIFEXITED(status))
		t->exit_code = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		t->exit_code = -WTERMSIG(status);
	else
		t->exit_code = 0;
	/* Every shell's end is audited with its code; after a teardown, the
	 * detail says which (the close, reap... event came first). */
	if (t->state == TERM_ENDING)
		snprintf(detail, sizeof(detail), "exit code %d, %s%s",
		    t->exit_code, term_reason_wire(t->reason),
		    t->killed ? ", after SIGKILL" : "");
	else
		snprintf(detail, sizeof(detail), "exit code %d", t->exit_code);
	mirror_event(t, now, "exit", NULL, detail);
	/* What the shell leaves behind: its background jobs, a double-forked
	 * child still on the tty.  They keep the slave open, so the pty
	 * reaches EIO once they are gone.  The tty is matched only while our
	 * master is open: once it is closed, the kernel may already have
	 * given the same /dev/pts number to a new terminal, whose processes
	 * a match by tty would hit (the session match still applies). */
	(void)proc_sweep(t->pid, t->master != -1 ? t->tty : 0, t->killed,
	    term_is_live_shell);
	if (t->state == TERM_EXITED)
		return;		/* shutdown's deadline finished it already */
	if (t->master == -1) {
		term_finish(t, now);
		return;
	}
	term_set_state(t, TERM_DRAINING, TERM_R_NONE, now);
	/* Pick up what is readable now; EIO finishes. */
	term_io_cb(t->master, EPOLLIN, t);
}

void
term_reap_children(int64_t now)
{
	struct term	*t;
	pid_t		 pid;
	int		 status;

	for (;;) {
		pid = waitpid(-1, &status, WNOHANG);
		if (pid == -1 && errno == EINTR)
			continue;
		if (pid <= 0)
			break;
		if ((t = term_find_pid(pid)) != NULL)
			term_child_exited(t, status, now);
		else
			log_debug("reaped descendant %ld", (long)pid);
	}
}

/* The shell is reaped and the pty drained (or given up on): release the
 * fds, keep the ring, tell viewers, linger if still registered. */
static void
term_finish(struct term *t, int64_t now)
{
	if (t->state == TERM_EXITED)
		return;
	ev_io_del(&t->io);
	if (t->master != -1)
		close(t->master);
	t->master = -1;
	term_input_drop(t);
	t->ended_at = now;
	/* Ended by itself unless a teardown gave it a reason. */
	term_set_state(t, TERM_EXITED, t->reason == TERM_R_NONE ?
	    TERM_R_EXIT : TERM_R_NONE, now);
	term_maybe_free(t);
}

void
term_shutdown_all(int64_t now)
{
	struct term	*t;

	while ((t = TAILQ_FIRST(&term_reg)) != NULL)
		term_teardown(t, TERM_R_SHUTDOWN, NULL, "ptyd shutting down",
		    now);
}

int
term_none_left(void)
{
	return (TAILQ_EMPTY(&term_all));
}

/* Shutdown's deadline: whatever has not been reaped is finished as is
 * (exit_code null) so viewers still get MSG_EXIT. */
void
term_force_finish(int64_t now)
{
	struct term	*t, *next;

	for (t = TAILQ_FIRST(&term_all); t != NULL; t = next) {
		next = TAILQ_NEXT(t, all_entry);
		if (t->pid > 0 && !t->reaped)
			(void)kill(-t->pid, SIGKILL);
		term_finish(t, now);
	}
}

/* pty I/O. */

size_t
term_read_limit(const struct term *t)
{
	const struct viewer	*v;
	uint64_t		 min = UINT64_MAX, lag;

	TAILQ_FOREACH(v, &t->viewers, entry)
		if (v->pos < min)
			min = v->pos;
	if (min == UINT64_MAX)
		return (SIZE_MAX);
	lag = ring_end(&t->ring) - min;
	if (lag >= t->ring.max)
		return (0);
	return ((size_t)(t->ring.max - lag));
}

static void
term_read(struct term *t, int64_t now)
{
	uint8_t	*p;
	size_t	 limit, n, total = 0;
	ssize_t	 r;

	while (t->master != -1 && total < TERM_READ_BUDGET) {
		limit = term_read_limit(t);
		if (limit == 0) {
			t->paused = 1;
			break;
		}
		n = ring_space(&t->ring, limit, &p);
		r = read(t->master, p, n);
		if (r > 0) {
			ring_commit(&t->ring, (size_t)r);
			total += (size_t)r;
			continue;
		}
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1 && errno == EAGAIN)
			break;
		/* EIO (or EOF): every slave fd is closed; the pty is drained. */
		ev_io_del(&t->io);
		close(t->master);
		t->master = -1;
		term_input_drop(t);
		if (t->state == TERM_DRAINING)
			term_finish(t, now);
		break;
	}
	if (total > 0) {
		if (!t->spoke) {
			t->spoke = 1;
			term_size_reassert(t);
		}
		t->bytes_out += total;
		t->last_activity = now;
		mirror_mark(t);
		term_wake_viewers(t);
	}
}

static void
term_write_input(struct term *t)
{
	struct term_chunk	*c;
	ssize_t			 r;

	while (t->master != -1 && (c = STAILQ_FIRST(&t->input)) != NULL) {
		r = write(t->master, c->data + c->off, c->len - c->off);
		if (r > 0) {
			c->off += (size_t)r;
			t->in_pending -= (size_t)r;
			if (c->off == c->len) {
				STAILQ_REMOVE_HEAD(&t->input, entry);
				free(c);
			}
			continue;
		}
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1 && errno == EAGAIN)
			break;
		/* The slave is gone; nobody will read this. */
		term_input_drop(t);
		break;
	}
}

static void
term_update_events(struct term *t)
{
	uint32_t	want = 0;

	if (t->master == -1)
		return;
	if (!t->paused)
		want |= EPOLLIN;
	if (t->in_pending > 0 && !t->hup)
		want |= EPOLLOUT;
	/*
	 * Paused with nothing to write: out of epoll altogether, since a
	 * hung-up pty reports EPOLLHUP whatever we ask for, and would spin.
	 */
	if (want == 0) {
		ev_io_del(&t->io);
		return;
	}
	if (t->io.fd == -1) {
		if (ev_io_add(&t->io, t->master, want, term_io_cb, t) == -1)
			log_warn("term %s: epoll add", t->sid);
		return;
	}
	if (ev_io_set(&t->io, want) == -1)
		log_warn("term %s: epoll mod", t->sid);
}

static void
term_io_cb(int fd, uint32_t events, void *arg)
{
	struct term	*t = arg;
	int64_t		 now = ev_now();

	(void)fd;
	if (events & EPOLLOUT)
		term_write_input(t);
	if ((events & EPOLLHUP) && t->paused) {
		t->hup = 1;
		term_input_drop(t);
	}
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		term_read(t, now);
	term_update_events(t);
}

void
term_viewer_progress(struct term *t)
{
	if (!t->paused || term_read_limit(t) == 0)
		return;
	t->paused = 0;
	term_update_events(t);
}

uint64_t
term_viewer_limit(const struct term *t, uint64_t pos)
{
	uint64_t	end = ring_end(&t->ring);

	/* While the shell may still complete a character, hold back its
	 * first bytes: a frame (and an event id) never splits one. */
	if (t->state == TERM_EXITED || pos >= end)
		return (end);
	return (ring_char_end(&t->ring, pos, end));
}

int
term_finished(const struct term *t)
{
	return (t->state == TERM_EXITED);
}

/* The requests. */

static int
term_spawn(struct term *t)
{
	struct spawn_req	req;
	struct spawn_result	res;

	memset(&req, 0, sizeof(req));
	req.path = ptyd_conf.shell;
	req.argv = ptyd_conf.shell_argv;
	req.env = ptyd_conf.env;
	req.cwd = t->workspace;
	req.rows = t->rows;
	req.cols = t->cols;
	if (spawn_shell(&req, &res) == -1)
		return (-1);
	t->pid = res.pid;
	t->master = res.master;
	t->tty = res.tty;
	term_pid_add(t);
	if (ev_io_add(&t->io, t->master, EPOLLIN, term_io_cb, t) == -1) {
		log_warn("term %s: epoll add", t->sid);
		return (-1);
	}
	return (0);
}

static void
term_set_size(struct term *t, unsigned int rows, unsigned int cols)
{
	struct winsize	ws;

	if (rows != 0)
		t->rows = (uint16_t)rows;
	if (cols != 0)
		t->cols = (uint16_t)cols;
	if (t->master == -1)
		return;
	memset(&ws, 0, sizeof(ws));
	ws.ws_row = t->rows;
	ws.ws_col = t->cols;
	if (ioctl(t->master, TIOCSWINSZ, &ws) == -1)
		log_warn("term %s: TIOCSWINSZ", t->sid);
	/* The kernel signals the foreground group; the shell's own group
	 * gets it too, as the contract says. */
	if (t->pid > 0 && !t->reaped)
		(void)kill(-t->pid, SIGWINCH);
}

/*
 * bash, starting, reads the window size and writes it back (job control
 * set-up) before its first prompt, so a resize that lands in between (the
 * page fits the terminal right after start) is undone.  At the shell's
 * first output, put ours back if the pty's differs.
 */
static void
term_size_reassert(struct term *t)
{
	struct winsize	ws;

	if (t->master == -1 || ioctl(t->master, TIOCGWINSZ, &ws) == -1)
		return;
	if (ws.ws_row != t->rows || ws.ws_col != t->cols)
		term_set_size(t, 0, 0);
}

/*
 * Can a new terminal of owner be registered, evicting only the owner's own
 * terminals (DESIGN 6, fairness)?  One user's starts never end another
 * user's shells: when the total cap is full of other owners' terminals the
 * start is refused instead.  Decided before the shell is spawned, so a
 * refused start leaves no process behind.
 */
static int
term_room(const char *owner)
{
	unsigned int	n = term_count(), own = term_count_owner(owner);
	unsigned int	need = 0;

	if (ptyd_conf.max_terminals > 0 && n >= ptyd_conf.max_terminals)
		need = n - ptyd_conf.max_terminals + 1;
	if (ptyd_conf.max_per_owner > 0 && own >= ptyd_conf.max_per_owner &&
	    own - ptyd_conf.max_per_owner + 1 > need)
		need = own - ptyd_conf.max_per_owner + 1;
	return (need <= own);
}

enum term_err
term_start(const struct term_start_req *req, int64_t now, struct term **out,
    int *reused)
{
	struct term	*old, *t, *victim;
	char		 ws[PATH_MAX], detail[PATH_MAX + 64];
	unsigned int	 rows = req->rows, cols = req->cols;
	uint64_t	 base;

	*out = NULL;
	*reused = 0;
	if (!term_sid_valid(req->sid))
		return (TERM_EBADREQ);
	if (term_workspace_resolve(req->workspace, ws, sizeof(ws)) == -1)
		return (TERM_EBADREQ);
	term_clamp(&rows, &cols, 1);

	old = term_find(req->owner, req->sid);
	if (old != NULL && old->state == TERM_RUNNING && !req->restart &&
	    strcmp(old->workspace, ws) == 0) {
		if (rows != old->rows || cols != old->cols) {
			term_set_size(old, rows, cols);
			mirror_mark(old);
		}
		*out = old;
		*reused = 1;
		return (TERM_OK);
	}

	/* A restart replaces old in place: it needs no room. */
	if (old == NULL && !term_room(req->owner))
		return (TERM_ELIMIT);
	base = term_base(old, term_now_ns());
	t = term_new(req->owner, req->sid, ws, rows, cols, base, now);
	if (term_spawn(t) == -1) {
		if (t->pid > 0)
			(void)kill(t->pid, SIGKILL);
		term_pid_remove(t);
		term_finish(t, now);
		return (TERM_EINTERNAL);
	}
	/* A restart replaces the old one in place, so it evicts nothing. */
	if (old != NULL)
		term_teardown(old, TERM_R_RESTARTED, req->actor, "restarted",
		    now);
	while (ptyd_conf.max_per_owner > 0 &&
	    term_count_owner(req->owner) >= ptyd_conf.max_per_owner &&
	    (victim = term_evict_pick(req->owner)) != NULL)
		term_evict(victim, "per-owner cap", ptyd_conf.max_per_owner,
		    req, now);
	while (ptyd_conf.max_terminals > 0 &&
	    term_count() >= ptyd_conf.max_terminals &&
	    (victim = term_evict_pick(req->owner)) != NULL)
		term_evict(victim, "cap", ptyd_conf.max_terminals, req, now);
	term_register(t);
	snprintf(detail, sizeof(detail), "pid %ld, %ux%u, %s", (long)t->pid,
	    t->rows, t->cols, t->workspace);
	mirror_event(t, now, "start", req->actor, detail);
	mirror_mark(t);
	*out = t;
	return (TERM_OK);
}

enum term_err
term_input(const char *owner, const char *sid, const uint8_t *data,
    size_t len, int64_t now)
{
	struct term		*t;
	struct term_chunk	*c;
	size_t			 done = 0;
	ssize_t			 r;

	t = term_find(owner, sid);
	if (t == NULL || t->state != TERM_RUNNING || t->master == -1)
		return (TERM_ENOTRUNNING);
	if (len == 0)
		return (TERM_OK);
	if (t->in_pending + len > ptyd_conf.input_limit)
		return (TERM_EINPUTFULL);
	t->bytes_in += len;
	t->in_unflushed += len;
	t->last_activity = now;
	mirror_mark(t);
	/* Nothing queued: write now, queue only what the pty refuses. */
	while (STAILQ_EMPTY(&t->input) && done < len) {
		r = write(t->master, data + done, len - done);
		if (r > 0)
			done += (size_t)r;
		else if (r == -1 && errno == EINTR)
			continue;
		else
			break;
	}
	if (done < len) {
		c = xmalloc(sizeof(*c) + len - done);
		c->len = len - done;
		c->off = 0;
		memcpy(c->data, data + done, len - done);
		STAILQ_INSERT_TAIL(&t->input, c, entry);
		t->in_pending += len - done;
		term_update_events(t);
	}
	return (TERM_OK);
}

enum term_err
term_input_once(const char *owner, const char *sid, const char *input_id,
    const uint8_t *data, size_t len, int64_t now, int *duplicate)
{
	struct term	*t;
	enum term_err	 e;

	*duplicate = 0;
	if (input_id == NULL || input_id[0] == '\0')
		return (term_input(owner, sid, data, len, now));
	/*
	 * A retry whose first attempt ptyd did run: ptyd.fcgi gave up on
	 * the first (ptyd stood still past its deadline, or the client's
	 * connection was cut after sending) and the client sent the same
	 * id again.  Requests are served in the order their connections
	 * were accepted, so the first has run by the time its retry is read.
	 */
	t = term_find(owner, sid);
	if (t != NULL && t->state == TERM_RUNNING && t->master != -1 &&
	    once_seen(&t->once, input_id)) {
		*duplicate = 1;
		return (TERM_OK);
	}
	e = term_input(owner, sid, data, len, now);
	if (e == TERM_OK && t != NULL)
		once_add(&t->once, input_id);
	return (e);
}

enum term_err
term_resize(const char *owner, const char *sid, unsigned int rows,
    unsigned int cols, int64_t now)
{
	struct term	*t;
	char		 detail[32];

	t = term_find(owner, sid);
	if (t == NULL || t->state != TERM_RUNNING)
		return (TERM_ENOTRUNNING);
	term_clamp(&rows, &cols, 0);
	term_set_size(t, rows, cols);
	snprintf(detail, sizeof(detail), "%ux%u", t->rows, t->cols);
	mirror_event(t, now, "resize", NULL, detail);
	mirror_mark(t);
	return (TERM_OK);
}

int
term_close(const char *owner, const char *sid, const char *actor, int64_t now)
{
	struct term	*t;

	if ((t = term_find(owner, sid)) == NULL)
		return (0);
	term_teardown(t, TERM_R_CLOSED, actor, NULL, now);
	return (1);
}

/* Viewers. */

enum term_err
term_attach(const char *owner, const char *sid, struct viewer *v,
    int has_pos, uint64_t pos, const char *actor, int64_t now,
    uint64_t *resume, uint64_t *lost)
{
	struct term	*t;
	uint64_t	 first;
	char		 detail[64];

	*lost = 0;
	if ((t = term_find(owner, sid)) == NULL)
		return (TERM_ENOTRUNNING);
	if (t->nviewers >= ptyd_conf.max_viewers)
		return (TERM_EVIEWERS);

	first = ring_boundary(&t->ring, ring_start(&t->ring));
	/* The id of terminal_closed is one past the last byte (MSG_EXIT.pos):
	 * a client resuming from it has seen everything, so it must get no
	 * byte again, only the close. */
	if (has_pos && t->state == TERM_EXITED &&
	    pos == ring_end(&t->ring) + 1)
		pos = ring_end(&t->ring);
	/* A position outside this incarnation (a stale id from an earlier
	 * one, or garbage) counts as its base. */
	if (has_pos && (pos < t->base || pos > ring_end(&t->ring)))
		pos = t->base;
	if (!has_pos)
		*resume = first;
	else if (pos >= ring_start(&t->ring))
		*resume = pos;
	else {
		*resume = first;
		*lost = first - pos;
	}

	v->term = t;
	v->pos = *resume;
	/* Kept for the detach event: the audit log pairs the two by actor
	 * (sql/audit.sql, connected now). */
	free(v->actor);
	v->actor = actor != NULL && *actor != '\0' ? xstrdup(actor) : NULL;
	TAILQ_INSERT_TAIL(&t->viewers, v, entry);
	t->nviewers++;
	t->unwatched_since = -1;
	mirror_mark(t);
	snprintf(detail, sizeof(detail), "viewers %u", t->nviewers);
	mirror_event(t, now, "attach", actor, detail);
	if (*lost > 0) {
		snprintf(detail, sizeof(detail), "lost %llu bytes",
		    (unsigned long long)*lost);
		mirror_event(t, now, "gap", actor, detail);
	}
	term_wake_viewers(t);
	return (TERM_OK);
}

void
term_detach(struct viewer *v, int64_t now)
{
	struct term	*t = v->term;
	char		 detail[64];

	if (t == NULL)
		return;
	TAILQ_REMOVE(&t->viewers, v, entry);
	v->term = NULL;
	t->nviewers--;
	if (t->nviewers == 0)
		t->unwatched_since = now;
	mirror_mark(t);
	snprintf(detail, sizeof(detail), "viewers %u", t->nviewers);
	mirror_event(t, now, "detach", v->actor, detail);
	free(v->actor);
	v->actor = NULL;
	/* The one who held the pty back may be the one leaving. */
	term_viewer_progress(t);
	term_maybe_free(t);
}

/* The reaper's predicate; see reap.c for why it is checked twice. */
int
term_reapable(const struct term *t, int64_t now, const char **why,
    int64_t *idle)
{
	*idle = 0;
	if (t->state == TERM_EXITED) {
		if (t->ended_at >= 0 && now - t->ended_at >= ptyd_conf.linger) {
			*why = "exited, linger over";
			*idle = now - t->ended_at;
			return (1);
		}
		return (0);
	}
	/* A shell that died is noticed by the SIGCHLD loop, which the reaper
	 * runs first, and then drains and finishes on its own. */
	if (t->state != TERM_RUNNING)
		return (0);
	if (t->nviewers == 0 && t->unwatched_since >= 0 &&
	    now - t->unwatched_since >= ptyd_conf.idle_grace) {
		*why = "idle";
		*idle = now - t->unwatched_since;
		return (1);
	}
	return (0);
}
