/*
 * termmem.c -- a terminal's memfd (termmem.h).
 *
 * The pages are touched lazily, as a heap ring's were, so an idle
 * terminal costs its header's first page and the ring pages its output
 * filled.  ptyd closes its descriptor once mapped: the keeper holds the
 * memfd, the mapping holds the pages here.
 */
#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ptyd.h"
#include "term.h"
#include "termmem.h"

int
termmem_create(size_t ring_size, int *fd, struct termhdr **out)
{
	struct termhdr *h;
	void	       *p;
	int		f;

	f = memfd_create("ptyd-term", MFD_CLOEXEC);
	if (f == -1)
		return (-1);
	if (ftruncate(f, (off_t)(TERMHDR_SIZE + ring_size)) == -1) {
		close(f);
		return (-1);
	}
	p = mmap(NULL, TERMHDR_SIZE + ring_size, PROT_READ | PROT_WRITE,
	    MAP_SHARED, f, 0);
	if (p == MAP_FAILED) {
		close(f);
		return (-1);
	}
	h = p;
	memcpy(h->magic, TERMHDR_MAGIC, sizeof(h->magic));
	h->layout = TERMHDR_LAYOUT;
	h->min_reader = TERMHDR_MIN_READER;
	h->ring_size = ring_size;
	*fd = f;
	*out = h;
	return (0);
}

int
termmem_map(int fd, struct termhdr **out, const char **why)
{
	struct termhdr *h;
	struct stat	st;
	void	       *p;
	uint64_t	size;

	if (fstat(fd, &st) == -1 || st.st_size < TERMHDR_SIZE) {
		*why = "too small for a header";
		return (-1);
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
	    fd, 0);
	if (p == MAP_FAILED) {
		*why = "cannot be mapped";
		return (-1);
	}
	h = p;
	size = h->ring_size;
	if (memcmp(h->magic, TERMHDR_MAGIC, sizeof(h->magic)) != 0)
		*why = "not a terminal's header";
	else if (h->min_reader > TERMHDR_LAYOUT)
		*why = "written by a newer layout this binary cannot read";
	else if (size == 0 || size != (uint64_t)st.st_size - TERMHDR_SIZE)
		*why = "its ring's size does not match the file";
	else if (atomic_load(&h->end) < h->base)
		*why = "its positions are inconsistent";
	else {
		*out = h;
		return (0);
	}
	munmap(p, (size_t)st.st_size);
	return (-1);
}

void
termmem_unmap(struct termhdr *h)
{
	if (h != NULL)
		munmap(h, TERMHDR_SIZE + h->ring_size);
}

/*
 * The read protocol (termio.c): inflight_len and inflight_pos are set
 * before the read, ctrl is 0xff until the kernel writes the packet byte
 * in the same readv as the data, and end moves past the data only after.
 * A SIGKILL takes effect on the way back to user space, and nothing else
 * reads the master meanwhile, so: a record whose pos is still end, with
 * ctrl 0 (TIOCPKT_DATA), is a read that took place, of exactly
 * inflight_len bytes (FIONREAD promised that many, and only we read);
 * 0xff, it never did; anything else was a control packet, no data.
 */
uint64_t
termmem_recover(struct termhdr *h)
{
	uint64_t end = atomic_load(&h->end), len, pos;

	len = atomic_load(&h->inflight_len);
	pos = atomic_load(&h->inflight_pos);
	atomic_store(&h->inflight_len, 0);
	if (len == 0 || pos != end || h->ctrl != 0 || len > h->ring_size)
		return (0);
	atomic_store_explicit(&h->end, end + len, memory_order_release);
	return (len);
}

/* The oldest position a viewer (or a hold from a take-over) needs. */
static uint64_t
termmem_hold(const struct term *t)
{
	const struct viewer *v;
	uint64_t	     min = t->hold != 0 ? t->hold : UINT64_MAX;

	TAILQ_FOREACH (v, &t->viewers, entry)
		if (v->pos < min)
			min = v->pos;
	return (min == UINT64_MAX ? 0 : min);
}

void
termmem_sync(struct term *t)
{
	struct termhdr *h = t->hdr;

	if (h == NULL)
		return;
	h->rows = t->rows;
	h->cols = t->cols;
	h->state = (uint32_t)t->state;
	h->reason = (uint32_t)t->reason;
	h->flags = (t->spoke ? TERMHDR_F_SPOKE : 0) |
	    (t->killed ? TERMHDR_F_KILLED : 0) | (t->hup ? TERMHDR_F_HUP : 0) |
	    (t->registered ? TERMHDR_F_REG : 0) |
	    (t->reaped ? TERMHDR_F_REAPED : 0) |
	    (t->record ? TERMHDR_F_RECORD : 0);
	h->exit_code = t->exit_code;
	h->last_activity = t->last_activity;
	h->unwatched_since = t->unwatched_since;
	h->bytes_in = t->bytes_in;
	h->bytes_out = t->bytes_out;
	h->hold = termmem_hold(t);
	/* Who that is: the viewers here and those a hold still waits for. */
	h->hold_views = t->nviewers + (t->hold != 0 ? t->hold_views : 0);
	h->hold_of = h->hold;
}

void
termmem_init(struct term *t)
{
	struct termhdr *h = t->hdr;

	h->id = t->id;
	h->base = t->base;
	atomic_store(&h->end, t->base);
	h->started_at = t->started_at;
	snprintf(h->owner, sizeof(h->owner), "%s", t->owner);
	snprintf(h->sid, sizeof(h->sid), "%s", t->sid);
	snprintf(h->workspace, sizeof(h->workspace), "%s", t->workspace);
	termmem_sync(t);
}
