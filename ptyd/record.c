/*
 * record.c -- recordings (record.h, DESIGN 4): the table and the
 * terminals' side.
 *
 * Owns: the policy, the table of recordings (sorted by id, which grows
 * with time, so oldest first) and each row's end, the recordings folder's
 * descriptor, what a terminal's output, input and size send while it
 * records, the reading of the table (rec_list, rec_open), start and stop.
 * Does not own: the recorder process and the pair to it (recproc.c),
 * retention (recretain.c), the files' contents (ptyd-recorder writes them
 * and tells each one's end: bytes, SHA-256, finished or cut) nor any
 * terminal (term.c; a terminal keeps only `record` and the id of its
 * recording now).
 *
 * A cut for `behind` or `disk` ends the terminal's recording: a disk that
 * is full or slow now would cut the next part too.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ev.h"
#include "log.h"
#include "mirror.h"
#include "record.h"
#include "record_int.h"
#include "recwire.h"
#include "store.h"
#include "term.h"
#include "util.h"
#include "xmalloc.h"

struct rec_conf	       rec_conf;
struct rec	     **rec_all; /* by id */
size_t		       rec_n;
struct rec_list	       rec_opened = TAILQ_HEAD_INITIALIZER(rec_opened);
int		       rec_dir = -1;
int		       rec_inited;
static struct store   *rec_store;
static size_t	       rec_cap;
static int64_t	       rec_next_id = 1;

/* ---- the table --------------------------------------------------------- */

struct rec *
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

double
rec_wall(int64_t now)
{
	return ((double)ev_wall_us(now) / 1e6);
}

int
rec_is(const struct rec *r, const char *state)
{
	return (strcmp(r->row.state, state) == 0);
}

void
rec_put(struct rec *r)
{
	if (rec_store != NULL)
		store_put_rec(rec_store, &r->row);
}

void
rec_audit(const struct rec *r, int64_t now, enum term_event kind,
    const char *detail)
{
	if (rec_store != NULL)
		store_event_owned(rec_store, rec_wall(now), r->row.sid,
		    r->row.terminal_id, r->row.owner, kind, NULL, detail);
}

/* The terminal whose recording r is now, if any. */
struct term *
rec_term(const struct rec *r)
{
	struct term *t = term_find_id(r->row.terminal_id);

	return (t != NULL && t->rec_id == r->row.id ? t : NULL);
}

/* r ended: its row says how, its audit event too. */
void
rec_ended(struct rec *r, int cut, uint64_t bytes, const char *sha,
    const char *why, int64_t now)
{
	struct term *t;
	char	     detail[160];

	if (!rec_is(r, "recording"))
		return;
	/* A full disk now would cut the next part too: no more of them
	 * (nor after a take-over: the header's flag goes with it). */
	if (cut && strcmp(why, "disk") == 0 && (t = rec_term(r)) != NULL)
		t->record = 0;
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
uint64_t
rec_file_size(const struct rec *r)
{
	struct stat st;

	if (rec_dir == -1 ||
	    fstatat(rec_dir, r->row.file, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return (r->row.bytes);
	return ((uint64_t)st.st_size);
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
	    !rec_recorder_up())
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
	if (st == NULL || store_recs_load(st, rec_load_cb, &now) == -1) {
		/* Ids no row of an unreadable database can have. */
		rec_next_id = ev_wall_us(now);
		log_warnx("recordings: the database's rows could not be read;"
			  " numbering from %" PRId64,
		    rec_next_id);
	}
	rec_dir = rec_open_dir(conf->dir);
	rec_recorder_init(now);
	rec_retain_init(now);
}

void
rec_done(void)
{
	size_t i;

	if (!rec_inited)
		return;
	rec_recorder_done();
	rec_retain_done();
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
