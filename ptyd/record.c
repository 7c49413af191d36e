/*
 * record.c -- recordings (record.h, DESIGN 4).
 *
 * Owns: the policy, the recorder process and its end of the pair, the
 * table of recordings (sorted by id, which grows with time, so oldest
 * first), the recordings folder's descriptor and retention.  Does not
 * own the files' contents (ptyd-recorder writes them and tells each one's
 * end: bytes, SHA-256, finished or cut) nor any terminal (term.c; a
 * terminal keeps only `record` and the id of its recording now).
 *
 * Never blocking: the pair's send buffer is large and every send is
 * MSG_DONTWAIT.  A send that would block means the recorder is behind
 * (a slow disk): that recording is cut (`behind`) and its close is sent
 * once the pair drains.  The recorder gone (killed, crashed): every open
 * recording is cut (`recorder`), the recorder restarted after a backoff,
 * and each terminal still recorded starts its next part.  A cut for
 * `behind` or `disk` ends the terminal's recording: a disk that is full
 * or slow now would cut the next part too.
 */
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ev.h"
#include "log.h"
#include "mirror.h"
#include "record.h"
#include "recwire.h"
#include "store.h"
#include "term.h"
#include "util.h"
#include "xmalloc.h"

#define REC_SNDBUF	   (4 * 1024 * 1024) /* asked; the kernel caps it */
#define REC_BACKOFF_MIN	   (1 * 1000000LL)
#define REC_BACKOFF_MAX	   (60 * 1000000LL)
#define REC_PRUNE_INTERVAL (3600 * 1000000LL)
#define REC_PRUNE_FIRST	   (2 * 1000000LL) /* after start */

struct rec {
	TAILQ_ENTRY(rec) open_entry; /* while recording */
	struct store_rec row;
	int64_t		 t0;	    /* monotonic start: the file's times */
	int		 closing;   /* the close is sent or due */
	int		 close_due; /* to send once the pair drains */
	char		 close_why[REC_REASON_MAX + 1];
};
TAILQ_HEAD(rec_list, rec);

static struct rec_conf rec_conf;
static struct store   *rec_store;
static struct rec    **rec_all; /* by id */
static size_t	       rec_n, rec_cap;
static struct rec_list rec_opened = TAILQ_HEAD_INITIALIZER(rec_opened);
static int64_t	       rec_next_id = 1;
static int	       rec_dir = -1;

static int	       rec_sock = -1;
static pid_t	       rec_pid = -1;
static struct ev_io    rec_io;
static struct ev_timer rec_restart_timer;
static struct ev_timer rec_prune_timer;
static int64_t	       rec_backoff = REC_BACKOFF_MIN;
static int64_t	       rec_started_at;
static int	       rec_inited;

static void rec_lost(int64_t now);

/* ---- the table --------------------------------------------------------- */

static struct rec *
rec_find(int64_t id)
{
	size_t lo = 0, hi = rec_n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (rec_all[mid]->row.id == id)
			return (rec_all[mid]);
		if (rec_all[mid]->row.id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (NULL);
}

/* Ids only grow: a new row goes at the end. */
static void
rec_append(struct rec *r)
{
	if (rec_n == rec_cap) {
		rec_cap = rec_cap != 0 ? rec_cap * 2 : 64;
		rec_all = xreallocarray(rec_all, rec_cap, sizeof(*rec_all));
	}
	rec_all[rec_n++] = r;
	if (r->row.id >= rec_next_id)
		rec_next_id = r->row.id + 1;
}

static double
rec_wall(int64_t now)
{
	return ((double)ev_wall_us(now) / 1e6);
}

static int
rec_is(const struct rec *r, const char *state)
{
	return (strcmp(r->row.state, state) == 0);
}

static void
rec_put(struct rec *r)
{
	if (rec_store != NULL)
		store_put_rec(rec_store, &r->row);
}

static void
rec_audit(const struct rec *r, int64_t now, enum term_event kind,
    const char *detail)
{
	if (rec_store != NULL)
		store_event_owned(rec_store, rec_wall(now), r->row.sid,
		    r->row.terminal_id, r->row.owner, kind, NULL, detail);
}

/* The terminal whose recording r is now, if any. */
static struct term *
rec_term(const struct rec *r)
{
	struct term *t = term_find_id(r->row.terminal_id);

	return (t != NULL && t->rec_id == r->row.id ? t : NULL);
}

/* r ended: its row says how, its audit event too. */
static void
rec_ended(struct rec *r, int cut, uint64_t bytes, const char *sha,
    const char *why, int64_t now)
{
	struct term *t;
	char	     detail[160];

	if (!rec_is(r, "recording"))
		return;
	snprintf(r->row.state, sizeof(r->row.state), "%s",
	    cut ? "cut" : "finished");
	snprintf(r->row.cut_reason, sizeof(r->row.cut_reason), "%s",
	    cut ? why : "");
	snprintf(r->row.sha256, sizeof(r->row.sha256), "%s", sha);
	r->row.bytes = bytes;
	r->row.ended_at = rec_wall(now);
	TAILQ_REMOVE(&rec_opened, r, open_entry);
	if ((t = rec_term(r)) != NULL)
		t->rec_id = 0;
	rec_put(r);
	if (cut) {
		snprintf(detail, sizeof(detail),
		    "recording=%" PRId64 " state=cut reason=%s bytes=%" PRIu64,
		    r->row.id, why, bytes);
		log_info("recording %" PRId64 " of %s cut: %s", r->row.id,
		    r->row.sid, why);
	} else
		snprintf(detail, sizeof(detail),
		    "recording=%" PRId64 " state=finished bytes=%" PRIu64,
		    r->row.id, bytes);
	rec_audit(r, now, TERM_EV_RECORD_END, detail);
}

/* A file's size as it stands (a cut the recorder could not tell). */
static uint64_t
rec_file_size(const struct rec *r)
{
	struct stat st;

	if (rec_dir == -1 ||
	    fstatat(rec_dir, r->row.file, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return (r->row.bytes);
	return ((uint64_t)st.st_size);
}

/* ---- the recorder ------------------------------------------------------ */

static int
rec_sendv(struct iovec *iov, int n)
{
	struct msghdr mh;

	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = iov;
	mh.msg_iovlen = (size_t)n;
	for (;;) {
		if (sendmsg(rec_sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) != -1)
			return (0);
		if (errno != EINTR)
			return (-1);
	}
}

/* The pair is full: r is cut, its close sent when the pair drains. */
static void
rec_behind(struct rec *r, const char *why)
{
	struct term *t;

	if (r->closing)
		return;
	r->closing = 1;
	r->close_due = 1;
	snprintf(r->close_why, sizeof(r->close_why), "%s", why);
	if ((t = rec_term(r)) != NULL)
		t->rec_id = 0;
	if (why[0] != '\0')
		log_warnx("recording %" PRId64 " of %s: the recorder is behind:"
			  " cut",
		    r->row.id, r->row.sid);
	if (rec_sock != -1 && ev_io_set(&rec_io, EPOLLIN | EPOLLOUT) == -1)
		log_warn("recorder: epoll mod");
}

/*
 * One message of r: the header, then a (with the time first, for all
 * but REC_OPEN) and b.  A full pair cuts r (or, for its close, makes
 * the close due); a gone recorder is lost.  0 if it went.
 */
static int
rec_send(struct rec *r, enum rec_type type, int64_t now, const void *a,
    size_t alen, const void *b, size_t blen)
{
	uint8_t	     h[REC_HDR_LEN], tb[8];
	struct iovec iov[4];
	int	     n = 0, timed = type != REC_OPEN;

	if (rec_sock == -1)
		return (-1);
	recwire_hdr(h, type, (uint32_t)((timed ? 8 : 0) + alen + blen),
	    r->row.id);
	iov[n].iov_base = h;
	iov[n++].iov_len = sizeof(h);
	if (timed) {
		recwire_put(tb, (uint64_t)(now > r->t0 ? now - r->t0 : 0), 8);
		iov[n].iov_base = tb;
		iov[n++].iov_len = sizeof(tb);
	}
	iov[n].iov_base = (void *)(uintptr_t)a;
	iov[n++].iov_len = alen;
	iov[n].iov_base = (void *)(uintptr_t)b;
	iov[n++].iov_len = blen;
	if (rec_sendv(iov, n) == 0)
		return (0);
	if (errno == EAGAIN || errno == ENOBUFS)
		rec_behind(r, type == REC_CLOSE ? (const char *)a : "behind");
	else
		rec_lost(now);
	return (-1);
}

/* Closes made due by a full pair, now that it drained. */
static void
rec_flush_due(int64_t now)
{
	struct rec *r;
	int	    left = 0;

	TAILQ_FOREACH (r, &rec_opened, open_entry) {
		if (!r->close_due)
			continue;
		r->close_due = 0;
		if (rec_send(r, REC_CLOSE, now, r->close_why,
			strlen(r->close_why), NULL, 0) == -1) {
			if (rec_sock == -1)
				return;
			r->close_due = 1;
			left = 1;
			break;
		}
	}
	if (!left && rec_sock != -1 && ev_io_set(&rec_io, EPOLLIN) == -1)
		log_warn("recorder: epoll mod");
}

/* REC_END from the recorder. */
static void
rec_told(const uint8_t *m, size_t n, int64_t now)
{
	static const char hex[] = "0123456789abcdef";
	struct rec	 *r;
	char		  sha[65], why[REC_REASON_MAX + 1];
	size_t		  i, len, rlen;
	int		  zero = 1;

	if (n < REC_HDR_LEN + 41 || m[0] != REC_END)
		return;
	len = (size_t)recwire_get(m + 4, 4);
	if (len != n - REC_HDR_LEN)
		return;
	if ((r = rec_find((int64_t)recwire_get(m + 8, 8))) == NULL)
		return;
	m += REC_HDR_LEN;
	for (i = 0; i < 32; i++) {
		sha[2 * i] = hex[m[9 + i] >> 4];
		sha[2 * i + 1] = hex[m[9 + i] & 0xf];
		zero = zero && m[9 + i] == 0;
	}
	sha[64] = '\0';
	rlen = len - 41 > REC_REASON_MAX ? REC_REASON_MAX : len - 41;
	memcpy(why, m + 41, rlen);
	why[rlen] = '\0';
	rec_ended(r, m[0] != REC_END_FINISHED, recwire_get(m + 1, 8),
	    zero ? "" : sha, why[0] != '\0' ? why : "disk", now);
}

static void
rec_io_cb(int fd, uint32_t events, void *arg)
{
	static uint8_t m[REC_HDR_LEN + 64 + REC_REASON_MAX];
	int64_t	       now = ev_now();
	ssize_t	       n;

	(void)arg;
	if (events & EPOLLOUT)
		rec_flush_due(now);
	while (rec_sock == fd) {
		n = recv(fd, m, sizeof(m), MSG_DONTWAIT);
		if (n > 0) {
			rec_told(m, (size_t)n, now);
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			break;
		rec_lost(now);
		break;
	}
}

/* Each terminal still recorded and not recording starts its next part. */
static void
rec_resume_all(int64_t now)
{
	struct term *t;

	for (t = term_first(); t != NULL; t = term_next(t))
		rec_begin(t, now);
}

static int
rec_spawn(int sock)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t	   at;
	sigset_t		   none, all;
	char			  *argv[] = { (char *)"ptyd-recorder", NULL };
	char			  *envp[] = { NULL };
	int			   rv;

	sigemptyset(&none);
	sigfillset(&all);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	posix_spawn_file_actions_adddup2(&fa, sock, REC_SOCK_FD);
	posix_spawn_file_actions_adddup2(&fa, rec_dir, REC_DIR_FD);
	/* Our signals are blocked for the signalfd: not the recorder's. */
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setflags(&at,
	    POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	rv = posix_spawn(&rec_pid, rec_conf.recorder, &fa, &at, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (rv != 0) {
		rec_pid = -1;
		errno = rv;
		return (-1);
	}
	return (0);
}

static int
rec_recorder_start(int64_t now)
{
	int sv[2] = { -1, -1 }, sz = REC_SNDBUF, i;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1)
		goto fail;
	/* Above the numbers the child's dup2s target, so none lands on
	 * another before it is moved. */
	for (i = 0; i < 2; i++)
		if (sv[i] <= REC_DIR_FD) {
			int fd = fcntl(sv[i], F_DUPFD_CLOEXEC, REC_DIR_FD + 1);

			close(sv[i]);
			if ((sv[i] = fd) == -1)
				goto fail;
		}
	(void)setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	if (fcntl(sv[0], F_SETFL, O_NONBLOCK) == -1 || rec_spawn(sv[1]) == -1)
		goto fail;
	close(sv[1]);
	rec_sock = sv[0];
	if (ev_io_add(&rec_io, rec_sock, EPOLLIN, rec_io_cb, NULL) == -1) {
		log_warn("recorder: epoll add");
		rec_lost(now);
		return (-1);
	}
	rec_started_at = now;
	log_info("recorder started, pid %ld", (long)rec_pid);
	return (0);
fail:
	log_warn("starting %s", rec_conf.recorder);
	for (i = 0; i < 2; i++)
		if (sv[i] != -1)
			close(sv[i]);
	return (-1);
}

static void
rec_restart_cb(void *arg)
{
	int64_t now = ev_now();

	(void)arg;
	if (rec_recorder_start(now) == -1) {
		rec_backoff = rec_backoff * 2 > REC_BACKOFF_MAX ?
		    REC_BACKOFF_MAX :
		    rec_backoff * 2;
		ev_timer_at(&rec_restart_timer, now + rec_backoff);
		return;
	}
	rec_resume_all(now);
}

/* The recorder is gone: what it had open is cut, it starts again. */
static void
rec_lost(int64_t now)
{
	struct rec *r;

	if (rec_sock == -1)
		return;
	ev_io_del(&rec_io);
	close(rec_sock);
	rec_sock = -1;
	if (rec_pid > 0)
		(void)waitpid(rec_pid, NULL, WNOHANG); /* or SIGCHLD's loop */
	log_warnx("recorder (pid %ld) is gone: restarting it", (long)rec_pid);
	rec_pid = -1;
	while ((r = TAILQ_FIRST(&rec_opened)) != NULL)
		rec_ended(r, 1, rec_file_size(r), "", "recorder", now);
	rec_backoff = now - rec_started_at > REC_BACKOFF_MAX ?
	    REC_BACKOFF_MIN :
	    (rec_backoff * 2 > REC_BACKOFF_MAX ? REC_BACKOFF_MAX :
						 rec_backoff * 2);
	ev_timer_at(&rec_restart_timer, now + rec_backoff);
}

/* ---- terminals --------------------------------------------------------- */

void
rec_policy_apply(struct term *t, int asked)
{
	t->record = rec_conf.policy == REC_POLICY_ON ||
	    (rec_conf.policy == REC_POLICY_OWNER && asked);
}

/* The part after the last one of t's, whose file does not exist. */
static unsigned int
rec_part_next(const struct term *t, char *file, size_t size)
{
	unsigned int part = 0;
	size_t	     i;

	for (i = 0; i < rec_n; i++)
		if (rec_all[i]->row.terminal_id == t->id &&
		    rec_all[i]->row.part > part)
			part = rec_all[i]->row.part;
	/* A row the last ptyd had no time to write may have a file. */
	do
		snprintf(file, size, "%" PRId64 "-%u.cast", t->id, ++part);
	while (faccessat(rec_dir, file, F_OK, AT_SYMLINK_NOFOLLOW) == 0);
	return (part);
}

void
rec_begin(struct term *t, int64_t now)
{
	struct rec *r;
	uint8_t	    open[12];
	char	    detail[80];

	if (!t->record || t->rec_id != 0 || t->state != TERM_RUNNING ||
	    rec_sock == -1)
		return;
	r = xcalloc(1, sizeof(*r));
	r->row.id = rec_next_id;
	r->row.terminal_id = t->id;
	snprintf(r->row.sid, sizeof(r->row.sid), "%s", t->sid);
	snprintf(r->row.owner, sizeof(r->row.owner), "%s", t->owner);
	r->row.part = rec_part_next(t, r->row.file, sizeof(r->row.file));
	r->row.started_at = rec_wall(now);
	r->row.ended_at = -1;
	snprintf(r->row.state, sizeof(r->row.state), "recording");
	r->row.cols = t->cols;
	r->row.rows = t->rows;
	r->t0 = now;
	recwire_put(open, t->cols, 2);
	recwire_put(open + 2, t->rows, 2);
	recwire_put(open + 4, (uint64_t)(int64_t)r->row.started_at, 8);
	if (rec_send(r, REC_OPEN, now, open, sizeof(open), r->row.file,
		strlen(r->row.file)) == -1) {
		log_warnx("term %s: recording not started", t->sid);
		free(r);
		return;
	}
	rec_append(r);
	TAILQ_INSERT_TAIL(&rec_opened, r, open_entry);
	t->rec_id = r->row.id;
	rec_put(r);
	snprintf(detail, sizeof(detail), "recording=%" PRId64 " part=%u",
	    r->row.id, r->row.part);
	mirror_event(t, now, TERM_EV_RECORD, NULL, detail);
}

/* t's recording if it is taking more. */
static struct rec *
rec_of(const struct term *t)
{
	struct rec *r;

	if (t->rec_id == 0 || (r = rec_find(t->rec_id)) == NULL || r->closing)
		return (NULL);
	return (r);
}

static void
rec_bytes(struct term *t, enum rec_type type, const uint8_t *p, size_t n,
    int64_t now)
{
	struct rec *r;
	size_t	    k;

	while (n > 0 && (r = rec_of(t)) != NULL) {
		k = n > REC_CHUNK ? REC_CHUNK : n;
		if (rec_send(r, type, now, p, k, NULL, 0) == -1)
			return;
		p += k;
		n -= k;
	}
}

void
rec_output(struct term *t, const uint8_t *p, size_t n, int64_t now)
{
	rec_bytes(t, REC_OUT, p, n, now);
}

void
rec_input(struct term *t, const uint8_t *p, size_t n, int64_t now)
{
	if (rec_conf.input && t != NULL)
		rec_bytes(t, REC_INPUT, p, n, now);
}

void
rec_resize(struct term *t, int64_t now)
{
	struct rec *r;
	uint8_t	    size[4];

	if ((r = rec_of(t)) == NULL)
		return;
	recwire_put(size, t->cols, 2);
	recwire_put(size + 2, t->rows, 2);
	(void)rec_send(r, REC_RESIZE, now, size, sizeof(size), NULL, 0);
}

void
rec_end(struct term *t, int64_t now)
{
	struct rec *r;

	/* A full pair makes the close due (rec_behind): the file still
	 * ends finished, with every byte, once the pair drains. */
	if ((r = rec_of(t)) != NULL &&
	    rec_send(r, REC_CLOSE, now, "", 0, NULL, 0) == 0)
		r->closing = 1;
	t->rec_id = 0;
}

/* ---- reading ----------------------------------------------------------- */

static int
rec_visible(const struct rec *r, int all_owners, const char *owner)
{
	return (all_owners || strcmp(r->row.owner, owner) == 0);
}

void
rec_list(int all_owners, const char *owner, const char *sid, size_t max,
    void (*cb)(const struct store_rec *, void *), void *arg)
{
	struct rec *r;
	size_t	    i, n = 0;

	for (i = rec_n; i > 0 && n < max; i--) {
		r = rec_all[i - 1];
		if (!rec_visible(r, all_owners, owner) ||
		    (sid[0] != '\0' && strcmp(r->row.sid, sid) != 0))
			continue;
		if (rec_is(r, "recording"))
			r->row.bytes = rec_file_size(r);
		cb(&r->row, arg);
		n++;
	}
}

int
rec_open(int all_owners, const char *owner, int64_t id, int *fd, uint64_t *size)
{
	struct rec *r;
	struct stat st;

	*fd = -1;
	if ((r = rec_find(id)) == NULL || !rec_visible(r, all_owners, owner) ||
	    rec_is(r, "removed") || rec_dir == -1)
		return (-1);
	*fd = openat(rec_dir, r->row.file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (*fd == -1)
		return (-1);
	if (fstat(*fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		close(*fd);
		*fd = -1;
		return (-1);
	}
	*size = (uint64_t)st.st_size;
	return (0);
}

/* ---- retention --------------------------------------------------------- */

size_t
rec_retention(const struct rec_item *it, size_t n, double now,
    int64_t max_age_s, uint64_t max_bytes, int *why)
{
	uint64_t total = 0;
	size_t	 i, gone = 0;

	for (i = 0; i < n; i++) {
		why[i] = REC_KEEP;
		if (it[i].removable && it[i].at < now - (double)max_age_s) {
			why[i] = REC_AGE;
			gone++;
		} else
			total += it[i].bytes;
	}
	/* Oldest first until the rest fits. */
	for (i = 0; i < n && total > max_bytes; i++) {
		if (why[i] != REC_KEEP || !it[i].removable)
			continue;
		why[i] = REC_SIZE;
		total -= it[i].bytes;
		gone++;
	}
	return (gone);
}

/* Delete r's file, then mark its row. */
static void
rec_remove(struct rec *r, int why, int64_t now)
{
	char detail[128];

	if (unlinkat(rec_dir, r->row.file, 0) == -1 && errno != ENOENT) {
		log_warn("recording %" PRId64 ": removing its file", r->row.id);
		return;
	}
	snprintf(detail, sizeof(detail),
	    "recording=%" PRId64 " bytes=%" PRIu64 " reason=%s", r->row.id,
	    r->row.bytes, why == REC_AGE ? "age" : "size");
	snprintf(r->row.state, sizeof(r->row.state), "removed");
	rec_put(r);
	rec_audit(r, now, TERM_EV_RECORDING_REMOVED, detail);
}

void
rec_prune(int64_t now, unsigned int *removed, uint64_t *bytes)
{
	struct rec_item *it;
	struct rec	*r;
	size_t		 i, n = 0;
	int		*why;

	*removed = 0;
	*bytes = 0;
	if (rec_dir == -1 || rec_n == 0)
		return;
	it = xcalloc(rec_n, sizeof(*it));
	why = xcalloc(rec_n, sizeof(*why));
	/* The rows still holding a file, oldest first. */
	for (i = 0; i < rec_n; i++) {
		r = rec_all[i];
		if (rec_is(r, "removed"))
			continue;
		it[n].removable = !rec_is(r, "recording");
		it[n].at = r->row.ended_at >= 0 ? r->row.ended_at :
						  r->row.started_at;
		it[n].bytes = rec_is(r, "recording") ? rec_file_size(r) :
						       r->row.bytes;
		n++;
	}
	(void)rec_retention(it, n, rec_wall(now), rec_conf.max_age_s,
	    rec_conf.max_bytes, why);
	for (i = 0, n = 0; i < rec_n; i++) {
		r = rec_all[i];
		if (rec_is(r, "removed"))
			continue;
		if (why[n++] == REC_KEEP)
			continue;
		rec_remove(r, why[n - 1], now);
		if (rec_is(r, "removed")) {
			(*removed)++;
			*bytes += r->row.bytes;
		}
	}
	if (*removed > 0)
		log_info("retention: %u recording(s) removed, %" PRIu64
			 " bytes",
		    *removed, *bytes);
	free(it);
	free(why);
}

static void
rec_prune_cb(void *arg)
{
	unsigned int n;
	uint64_t     b;

	(void)arg;
	rec_prune(ev_now(), &n, &b);
	ev_timer_at(&rec_prune_timer, ev_now() + REC_PRUNE_INTERVAL);
}

/* ---- start and stop ---------------------------------------------------- */

/* A row from the database; one an earlier ptyd left recording ended
 * with it (its recorder cut the file at that ptyd's end). */
static void
rec_load_cb(const struct store_rec *row, void *arg)
{
	int64_t	    now = *(const int64_t *)arg;
	struct rec *r;

	if (rec_n > 0 && row->id <= rec_all[rec_n - 1]->row.id)
		return;
	r = xcalloc(1, sizeof(*r));
	r->row = *row;
	rec_append(r);
	if (rec_is(r, "recording")) {
		TAILQ_INSERT_TAIL(&rec_opened, r, open_entry);
		rec_ended(r, 1, rec_file_size(r), "", "takeover", now);
	}
}

static int
rec_open_dir(const char *dir)
{
	struct stat st;
	int	    fd;

	if (util_mkparents(dir, 0700, NULL, 0) == -1 ||
	    (mkdir(dir, 0700) == -1 && errno != EEXIST) ||
	    (fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) ==
		-1) {
		log_warn("recordings folder %s", dir);
		return (-1);
	}
	if (fstat(fd, &st) == -1 || st.st_uid != geteuid()) {
		log_warnx("recordings folder %s is not ours: no recordings",
		    dir);
		close(fd);
		return (-1);
	}
	if ((st.st_mode & 077) != 0 && fchmod(fd, 0700) == -1)
		log_warn("recordings folder %s: chmod", dir);
	return (fd);
}

void
rec_init(const struct rec_conf *conf, struct store *st, int64_t now)
{
	rec_conf = *conf;
	rec_store = st;
	rec_inited = 1;
	ev_timer_init(&rec_restart_timer, rec_restart_cb, NULL);
	ev_timer_init(&rec_prune_timer, rec_prune_cb, NULL);
	if (st == NULL || store_recs_load(st, rec_load_cb, &now) == -1) {
		/* Ids no row of an unreadable database can have. */
		rec_next_id = ev_wall_us(now);
		log_warnx("recordings: the database's rows could not be read;"
			  " numbering from %" PRId64,
		    rec_next_id);
	}
	rec_dir = rec_open_dir(conf->dir);
	if (rec_dir == -1)
		return;
	if (conf->policy != REC_POLICY_OFF)
		(void)rec_recorder_start(now);
	ev_timer_at(&rec_prune_timer, now + REC_PRUNE_FIRST);
}

/*
 * At our end: the recorder is told (EOF after what it was sent), ends
 * every file (what is still open as `takeover`: under a keeper the
 * terminals go on with the next ptyd) and exits; its ends are read for
 * at most REC_DONE_WAIT_MS, so that the last flush writes the rows.
 */
#define REC_DONE_WAIT_MS 1000
static void
rec_drain(void)
{
	static uint8_t m[REC_HDR_LEN + 64 + REC_REASON_MAX];
	struct pollfd  pfd;
	int64_t	       deadline = ev_clock() + REC_DONE_WAIT_MS * 1000LL, left;
	ssize_t	       n;

	ev_io_del(&rec_io);
	(void)shutdown(rec_sock, SHUT_WR);
	pfd.fd = rec_sock;
	pfd.events = POLLIN;
	while (
	    !TAILQ_EMPTY(&rec_opened) && (left = deadline - ev_clock()) > 0) {
		if (poll(&pfd, 1, (int)(left / 1000) + 1) <= 0)
			continue;
		n = recv(rec_sock, m, sizeof(m), MSG_DONTWAIT);
		if (n > 0)
			rec_told(m, (size_t)n, ev_clock());
		else if (n == 0 || (errno != EINTR && errno != EAGAIN))
			break;
	}
	close(rec_sock);
	rec_sock = -1;
}

void
rec_done(void)
{
	size_t i;

	if (!rec_inited)
		return;
	ev_timer_stop(&rec_restart_timer);
	ev_timer_stop(&rec_prune_timer);
	if (rec_sock != -1)
		rec_drain();
	for (i = 0; i < rec_n; i++)
		free(rec_all[i]);
	free(rec_all);
	rec_all = NULL;
	rec_n = rec_cap = 0;
	TAILQ_INIT(&rec_opened);
	if (rec_dir != -1)
		close(rec_dir);
	rec_dir = -1;
	rec_inited = 0;
}
