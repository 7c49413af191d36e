/*
 * term.c -- terminal objects, the registry, and the requests.
 *
 * Owns: struct term objects from term_new to their free at the end of a
 * loop turn; the registry (a hash on (owner, session_id) plus a list in
 * start order), the cap and the pid hash of live shells; the request
 * policy (session ids, sizes, workspaces) and the requests start, input,
 * resize and close.  Does not own: a terminal's state changes and ending
 * (termlife.c), its pty (termio.c), its viewers (termview.c), viewer
 * connections (conn.c, through struct viewer), forking (spawn.c), strays
 * (proc.c), the reaper's schedule (reap.c, main.c), the SQLite mirror
 * (mirror.c: told of every change through mirror_mark and mirror_event).
 *
 * Single-threaded: a lookup and what follows it (attach, claim, evict) are
 * one step; no other code runs in between, so "attach is atomic" needs no
 * lock.  Objects reachable from a callback in flight are freed only at the
 * end of the turn (ev_defer).
 */
#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "contract.h"
#include "log.h"
#include "mirror.h"
#include "proto.h"
#include "screen.h"
#include "ptyd.h"
#include "record.h"
#include "keeperlink.h"
#include "term.h"
#include "termmem.h"
#include "term_int.h"
#include "xmalloc.h"

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
	.shell_umask = 022,
};

TAILQ_HEAD(term_list, term);

static struct term_list term_all = TAILQ_HEAD_INITIALIZER(term_all);
static struct term_list term_reg = TAILQ_HEAD_INITIALIZER(term_reg);
static struct term    **term_hash;
static struct term    **term_phash;
static size_t		term_nbuckets;
static unsigned int	term_nreg;
/* The registered terminals again, as an array in no order (term_regv):
 * see term_registered. */
static struct term **term_regv;
static size_t	     term_regcap;

/* Registered terminals per owner: the per-owner cap is checked at every
 * start, and walking the registry to count cost O(terminals) there
 * (issue 17).  Owners are few next to terminals: a fixed table. */
struct term_owner {
	struct term_owner *next;
	unsigned int	   n;
	char		   name[];
};
#define TERM_OWNER_BUCKETS 64
static struct term_owner *term_owners[TERM_OWNER_BUCKETS];

static void term_defer_cb(void *);

/* Registry hashing. */

static size_t
term_hash_key(const char *owner, const char *sid)
{
	uint64_t    h = 1469598103934665603ULL;
	const char *p;

	for (p = owner; *p != '\0'; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ULL;
	h = (h ^ 0xff) * 1099511628211ULL; /* separator no text holds */
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
	struct term **h, **ph, *t;
	size_t	      i;

	h = xcalloc(n, sizeof(*h));
	ph = xcalloc(n, sizeof(*ph));
	TAILQ_FOREACH (t, &term_all, all_entry) {
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
	struct term *t;

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
	struct term *t;

	if (term_phash == NULL)
		return (NULL);
	t = term_phash[term_hash_pid(pid) & (term_nbuckets - 1)];
	for (; t != NULL; t = t->pnext)
		if (t->pid == pid)
			return (t);
	return (NULL);
}

int
term_is_live_shell(pid_t pid)
{
	return (term_find_pid(pid) != NULL);
}

void
term_pid_add(struct term *t)
{
	size_t i;

	if (term_phash == NULL)
		term_rehash(256);
	i = term_hash_pid(t->pid) & (term_nbuckets - 1);
	t->pnext = term_phash[i];
	term_phash[i] = t;
	t->in_pid_hash = 1;
	/* Under a keeper the shell is the keeper's child: it tells us of
	 * the end, with the status only a parent can have (KW_EXITED). */
	if (!keeperlink_up())
		term_watch_pid(t);
}

void
term_pid_remove(struct term *t)
{
	struct term **pp;

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
	term_unwatch_pid(t);
}

static struct term_owner **
term_owner_slot(const char *owner)
{
	struct term_owner **pp;

	pp = &term_owners[term_hash_key(owner, "") % TERM_OWNER_BUCKETS];
	while (*pp != NULL && strcmp((*pp)->name, owner) != 0)
		pp = &(*pp)->next;
	return (pp);
}

static void
term_owner_inc(const char *owner)
{
	struct term_owner **pp = term_owner_slot(owner);
	size_t		    len;

	if (*pp == NULL) {
		len = strlen(owner) + 1;
		*pp = xcalloc(1, sizeof(**pp) + len);
		memcpy((*pp)->name, owner, len);
	}
	(*pp)->n++;
}

static void
term_owner_dec(const char *owner)
{
	struct term_owner **pp = term_owner_slot(owner), *o = *pp;

	if (o == NULL)
		fatalx("term_owner_dec: %s has no terminals", owner);
	if (--o->n == 0) {
		*pp = o->next;
		free(o);
	}
}

void
term_register(struct term *t)
{
	size_t i;

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
	if (term_nreg == term_regcap) {
		term_regcap = term_regcap == 0 ? 256 : term_regcap * 2;
		term_regv = xreallocarray(term_regv, term_regcap,
		    sizeof(*term_regv));
	}
	t->reg_idx = term_nreg;
	term_regv[term_nreg] = t;
	term_nreg++;
	term_owner_inc(t->owner);
	termmem_sync(t);
}

void
term_unregister(struct term *t)
{
	struct term **pp;

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
	term_regv[t->reg_idx] = term_regv[term_nreg - 1];
	term_regv[t->reg_idx]->reg_idx = t->reg_idx;
	term_nreg--;
	term_owner_dec(t->owner);
	termmem_sync(t);
	term_maybe_free(t);
}

struct term *
term_find_id(int64_t id)
{
	struct term *t;

	TAILQ_FOREACH (t, &term_all, all_entry)
		if (t->id == id)
			return (t);
	return (NULL);
}

unsigned int
term_count(void)
{
	return (term_nreg);
}

unsigned int
term_count_owner(const char *owner)
{
	struct term_owner *o = *term_owner_slot(owner);

	return (o != NULL ? o->n : 0);
}

struct term *const *
term_registered(size_t *n)
{
	*n = term_nreg;
	return (term_regv);
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

struct term *
term_all_first(void)
{
	return (TAILQ_FIRST(&term_all));
}

struct term *
term_all_next(const struct term *t)
{
	return (TAILQ_NEXT(t, all_entry));
}

void
term_stats(unsigned int *terms, unsigned int *exited, unsigned int *viewers)
{
	struct term *t;

	*terms = term_nreg;
	*exited = *viewers = 0;
	TAILQ_FOREACH (t, &term_reg, reg_entry)
		if (t->state == TERM_EXITED)
			(*exited)++;
	TAILQ_FOREACH (t, &term_all, all_entry)
		*viewers += t->nviewers;
}

struct term *
term_new(const char *owner, const char *sid, const char *workspace,
    unsigned int rows, unsigned int cols, uint64_t base, int64_t now)
{
	struct term *t;

	/* A cache line's alignment: see the top of struct term. */
	if (posix_memalign((void **)&t, 64, sizeof(*t)) != 0)
		fatalx("term_new: out of memory");
	memset(t, 0, sizeof(*t));
	t->id = mirror_next_id();
	t->owner = xstrdup(owner);
	t->sid = xstrdup(sid);
	t->workspace = xstrdup(workspace);
	t->state = TERM_RUNNING;
	t->reason = TERM_R_NONE;
	t->pid = -1;
	t->master = -1;
	t->io.fd = -1;
	t->pidfd = -1;
	t->pio.fd = -1;
	t->rows = (uint16_t)rows;
	t->cols = (uint16_t)cols;
	t->base = base;
	ring_init(&t->ring, base, ptyd_conf.ring_size);
	t->started_at = t->last_activity = now;
	t->unwatched_since = now; /* born unwatched: reapable if unused */
	t->ended_at = -1;
	TAILQ_INIT(&t->viewers);
	STAILQ_INIT(&t->input);
	ev_timer_init(&t->timer, term_timer_cb, t);
	ev_defer_init(&t->defer, term_defer_cb, t);
	TAILQ_INSERT_TAIL(&term_all, t, all_entry);
	return (t);
}

void
term_input_drop(struct term *t)
{
	struct term_chunk *c;

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
	term_screen_cancel(t);
	ring_free(&t->ring);
	/* The keeper lets go of its pty and memfd: the last of it. */
	if (t->hdr != NULL) {
		keeperlink_forget(t);
		termmem_unmap(t->hdr);
	}
	screen_free(t->screen);
	free(t->owner);
	free(t->sid);
	free(t->workspace);
	free(t);
}

static void
term_defer_cb(void *arg)
{
	struct term   *t = arg;
	struct viewer *v, *next;

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
void
term_maybe_free(struct term *t)
{
	if (t->state != TERM_EXITED || t->registered || t->nviewers != 0)
		return;
	t->free_queued = 1;
	ev_defer(&t->defer);
}

void
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
	return (contract_sid_valid(sid));
}

void
term_clamp(unsigned int *rows, unsigned int *cols, int start)
{
	contract_clamp(rows, cols, start);
}

/* out gets the resolved directory; -1 if it is not allowed. */
int
term_workspace_resolve(const char *in, char *out, size_t size)
{
	char	    buf[PATH_MAX];
	struct stat st;
	size_t	    i, len;

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
	uint64_t base = now_ns;

	if (old != NULL && base < ring_end(&old->ring) + 2)
		base = ring_end(&old->ring) + 2;
	return (base);
}

static uint64_t
term_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ((uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec);
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
	struct term *t, *next;

	for (t = TAILQ_FIRST(&term_all); t != NULL; t = next) {
		next = TAILQ_NEXT(t, all_entry);
		if (t->pid > 0 && !t->reaped)
			term_signal(t, SIGKILL, 1);
		term_finish(t, now);
	}
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
	unsigned int n = term_count(), own = term_count_owner(owner);
	unsigned int need = 0;

	if (ptyd_conf.max_terminals > 0 && n >= ptyd_conf.max_terminals)
		need = n - ptyd_conf.max_terminals + 1;
	if (ptyd_conf.max_per_owner > 0 && own >= ptyd_conf.max_per_owner &&
	    own - ptyd_conf.max_per_owner + 1 > need)
		need = own - ptyd_conf.max_per_owner + 1;
	return (need <= own);
}

/* Evict what the per-owner cap and the cap need, before registering a
 * new terminal for req (never one of another owner's: term_evict_pick). */
static void
term_make_room(const struct term_start_req *req, int64_t now)
{
	struct term *victim;

	while (ptyd_conf.max_per_owner > 0 &&
	    term_count_owner(req->owner) >= ptyd_conf.max_per_owner &&
	    (victim = term_evict_pick(req->owner)) != NULL)
		term_evict(victim, "per-owner cap", ptyd_conf.max_per_owner,
		    req, now);
	while (ptyd_conf.max_terminals > 0 &&
	    term_count() >= ptyd_conf.max_terminals &&
	    (victim = term_evict_pick(req->owner)) != NULL)
		term_evict(victim, "cap", ptyd_conf.max_terminals, req, now);
}

enum term_err
term_start(const struct term_start_req *req, int64_t now, struct term **out,
    int *reused)
{
	struct term *old, *t;
	char	     ws[PATH_MAX], detail[PATH_MAX + 64];
	unsigned int rows = req->rows, cols = req->cols;
	uint64_t     base;
	enum term_err err;

	*out = NULL;
	*reused = 0;
	if (!term_sid_valid(req->sid))
		return (TERM_EBADREQ);
	if (term_workspace_resolve(req->workspace, ws, sizeof(ws)) == -1)
		return (TERM_EBADREQ);

	old = term_find(req->owner, req->sid);
	if (old != NULL && old->state == TERM_RUNNING && !req->restart &&
	    strcmp(old->workspace, ws) == 0) {
		/* Attaching to it again: a size not given is left as it is
		 * (a second tab must not shrink the first one's to 24x80). */
		term_clamp(&rows, &cols, 0);
		rows = rows != 0 ? rows : old->rows;
		cols = cols != 0 ? cols : old->cols;
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
	term_clamp(&rows, &cols, 1);
	base = term_base(old, term_now_ns());
	t = term_new(req->owner, req->sid, ws, rows, cols, base, now);
	if (term_spawn(t) == -1) {
		/* No pid: the shell itself could not start (spawn_error). */
		err = t->pid > 0 ? TERM_EINTERNAL : TERM_ESPAWN;
		if (t->pid > 0)
			(void)kill(t->pid, SIGKILL);
		term_pid_remove(t);
		term_finish(t, now);
		return (err);
	}
	/* A restart replaces the old one in place, so it evicts nothing. */
	if (old != NULL)
		term_teardown(old, TERM_R_RESTARTED, req->actor, "restarted",
		    now);
	term_make_room(req, now);
	term_register(t);
	snprintf(detail, sizeof(detail), "pid %ld, %ux%u, %s", (long)t->pid,
	    t->rows, t->cols, t->workspace);
	mirror_event(t, now, TERM_EV_START, req->actor, detail);
	rec_policy_apply(t, req->record);
	rec_begin(t, now);
	mirror_mark(t);
	*out = t;
	return (TERM_OK);
}

enum term_err
term_input(const char *owner, const char *sid, const uint8_t *data, size_t len,
    int64_t now)
{
	struct term	  *t;
	struct term_chunk *c;
	size_t		   done = 0;
	ssize_t		   r;

	t = term_find(owner, sid);
	if (t == NULL || t->state != TERM_RUNNING || t->master == -1)
		return (TERM_ENOTRUNNING);
	if (len == 0)
		return (TERM_OK);
	if (t->in_pending + len > ptyd_conf.input_limit)
		return (TERM_EINPUTFULL);
	t->bytes_in += len;
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

/*
 * Under a keeper the keeper writes the input (DESIGN 10): it checks the
 * id, records it and queues the bytes in one step that no crash of ours
 * can split, so a retry after a take-over is still recognised.
 */
static enum term_err
term_input_keeper(const char *owner, const char *sid, const char *input_id,
    const char *actor, const uint8_t *data, size_t len, int64_t now,
    int *duplicate)
{
	struct term *t = term_find(owner, sid);

	if (t == NULL || t->state != TERM_RUNNING || t->master == -1)
		return (TERM_ENOTRUNNING);
	switch (keeperlink_input(t, input_id != NULL ? input_id : "", data,
	    len)) {
	case KW_IN_ACCEPTED:
		t->bytes_in += len;
		t->last_activity = now;
		mirror_mark(t);
		mirror_input(t, now, actor, len);
		return (TERM_OK);
	case KW_IN_DUPLICATE:
		*duplicate = 1;
		return (TERM_OK);
	case KW_IN_FULL:
		return (TERM_EINPUTFULL);
	case KW_IN_SLOW:
		/* 503 with Retry-After: the keeper may yet take it, and a
		 * retry with the same input_id then runs nothing twice. */
		return (TERM_EBUSY);
	case KW_IN_GONE:
		break;
	}
	return (TERM_ENOTRUNNING);
}

enum term_err
term_input_once(const char *owner, const char *sid, const char *input_id,
    const char *actor, const uint8_t *data, size_t len, int64_t now,
    int *duplicate)
{
	struct term  *t;
	enum term_err e;

	*duplicate = 0;
	if (keeperlink_under()) {
		e = term_input_keeper(owner, sid, input_id, actor, data, len,
		    now, duplicate);
		if (e == TERM_OK && !*duplicate)
			rec_input(term_find(owner, sid), data, len, now);
		return (e);
	}
	if (input_id == NULL || input_id[0] == '\0') {
		if ((e = term_input(owner, sid, data, len, now)) == TERM_OK) {
			mirror_input(term_find(owner, sid), now, actor, len);
			rec_input(term_find(owner, sid), data, len, now);
		}
		return (e);
	}
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
	if (e == TERM_OK && t != NULL) {
		once_add(&t->once, input_id);
		mirror_input(t, now, actor, len);
		rec_input(t, data, len, now);
	}
	return (e);
}

enum term_err
term_resize(const char *owner, const char *sid, unsigned int rows,
    unsigned int cols, int64_t now)
{
	struct term *t;
	char	     detail[32];

	t = term_find(owner, sid);
	if (t == NULL || t->state != TERM_RUNNING)
		return (TERM_ENOTRUNNING);
	term_clamp(&rows, &cols, 0);
	term_set_size(t, rows, cols);
	snprintf(detail, sizeof(detail), "%ux%u", t->rows, t->cols);
	mirror_event(t, now, TERM_EV_RESIZE, NULL, detail);
	mirror_mark(t);
	return (TERM_OK);
}

int
term_close(const char *owner, const char *sid, const char *actor, int64_t now)
{
	struct term *t;

	if ((t = term_find(owner, sid)) == NULL)
		return (0);
	term_teardown(t, TERM_R_CLOSED, actor, NULL, now);
	return (1);
}
