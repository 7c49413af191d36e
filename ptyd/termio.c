/*
 * termio.c -- a terminal's pty: reading output into the ring, writing
 * queued input, backpressure, its size, and spawning its shell.
 *
 * Owns: everything done with the pty master fd while it is open, and when
 * to stop reading it (a viewer a full ring behind); the size changes
 * kept for the stream's MSG_RESIZE_EV (where each stands in the output).  Does not own: the
 * terminal object or registry (term.c), what happens when the shell ends
 * (termlife.c: EIO here only hands over), or the viewers (termview.c).
 */
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "keeperlink.h"
#include "log.h"
#include "mirror.h"
#include "ptyd.h"
#include "record.h"
#include "screen.h"
#include "spawn.h"
#include "term.h"
#include "term_int.h"
#include "termmem.h"

#define TERM_READ_BUDGET (256 * 1024) /* per wakeup, for fairness */
/*
 * A read of the master returns at most what the line discipline holds, 4 KiB
 * (N_TTY_BUF_SIZE), however much room there is: a flooding shell's reads are
 * all "short".  Only a read below this ends the loop early (a keystroke's
 * echo, a prompt): one read per turn of a flood made the pump write every
 * viewer a 4 KiB frame per turn, and each frame cost a wake-up of ptyd.fcgi
 * and nginx (issue 31: 8 viewers got half the old rate for twice the CPU).
 */
#define TERM_READ_SMALL 1024

size_t
term_read_limit(const struct term *t)
{
	const struct viewer *v;
	uint64_t	     min = t->hold != 0 ? t->hold : UINT64_MAX, lag;

	TAILQ_FOREACH (v, &t->viewers, entry)
		if (v->pos < min)
			min = v->pos;
	if (min == UINT64_MAX)
		return (SIZE_MAX);
	lag = ring_end(&t->ring) - min;
	if (lag >= t->ring.max)
		return (0);
	return ((size_t)(t->ring.max - lag));
}

/*
 * A read of a master in packet mode straight into the shared ring, in the
 * protocol termmem_recover undoes (DESIGN 10): FIONREAD gives the exact
 * length the read will return (only we read this master), the in-flight
 * record goes into the header first, the packet byte lands in the header
 * in the same readv as the data, and end moves only after.  Returns what
 * read(2) would: the data bytes (0 for a control packet or a data packet
 * the room cut to nothing), -1 with errno.  *more: the pty held more than
 * this read took.
 */
static ssize_t
term_read_pkt(struct term *t, uint8_t *p, size_t n, int *more)
{
	struct termhdr *h = t->hdr;
	struct iovec	iov[2];
	ssize_t		r;
	int		q = 0;

	if (ioctl(t->master, FIONREAD, &q) == -1 || q < 0)
		q = 0;
	*more = (size_t)q > n;
	if ((size_t)q < n)
		n = (size_t)q;
	h->ctrl = 0xff;
	atomic_store_explicit(&h->inflight_len, n, memory_order_release);
	atomic_store_explicit(&h->inflight_pos, ring_end(&t->ring),
	    memory_order_release);
	iov[0].iov_base = (void *)&h->ctrl;
	iov[0].iov_len = 1;
	iov[1].iov_base = p;
	iov[1].iov_len = n;
	r = readv(t->master, iov, 2);
	if (r <= 0) {
		atomic_store_explicit(&h->inflight_len, 0,
		    memory_order_relaxed);
		if (r == 0)
			errno = EIO; /* EOF: every slave closed, as EIO */
		return (-1);
	}
	return (h->ctrl == TIOCPKT_DATA ? r - 1 : 0);
}

/* The bytes a read put at the ring's end are output now. */
static void
term_read_commit(struct term *t, size_t n)
{
	ring_commit(&t->ring, n);
	if (t->hdr != NULL) {
		atomic_store_explicit(&t->hdr->end, ring_end(&t->ring),
		    memory_order_release);
		atomic_store_explicit(&t->hdr->inflight_len, 0,
		    memory_order_release);
	}
}

/* What a read just added, to the emulator's mode scanner. */
static void
term_read_scan(struct term *t, const uint8_t *p, size_t n)
{
	if (t->screen == NULL)
		t->screen = screen_new(t->rows, t->cols);
	screen_scan_output(t->screen, ring_end(&t->ring) - (uint64_t)n, p, n);
	if (t->rec_id != 0)
		rec_output(t, p, n, ev_now());
}

/* EIO (or EOF): every slave fd is closed; the pty is drained. */
static void
term_read_eof(struct term *t, int64_t now)
{
	ev_io_del(&t->io);
	close(t->master);
	t->master = -1;
	term_input_drop(t);
	if (t->state == TERM_DRAINING)
		term_finish(t, now);
}

/* A turn's reads took total bytes: the terminal spoke, its viewers have
 * output. */
static void
term_read_done(struct term *t, size_t total, int64_t now)
{
	if (!t->spoke) {
		t->spoke = 1;
		term_size_reassert(t);
	}
	t->bytes_out += total;
	t->last_activity = now;
	mirror_mark(t);
	term_wake_viewers(t);
}

static void
term_read(struct term *t, int64_t now)
{
	uint8_t *p;
	size_t	 limit, n, total = 0;
	ssize_t	 r;
	int	 more = 0, empty = 0;

	while (t->master != -1 && total < TERM_READ_BUDGET) {
		limit = term_read_limit(t);
		if (limit == 0) {
			t->paused = 1;
			break;
		}
		n = ring_space(&t->ring, limit, &p);
		if (t->hdr != NULL) {
			r = term_read_pkt(t, p, n, &more);
			if (r == 0) {
				/* A control packet, or data that came after
				 * FIONREAD said none: read again, a few times
				 * at most (stopping made a flood's turns read
				 * less, every viewer's frames smaller). */
				if (++empty > 4)
					break;
				continue;
			}
			empty = 0;
			/* FIONREAD already said whether more waits. */
			if (r > 0 && !more && (size_t)r < TERM_READ_SMALL &&
			    t->state != TERM_DRAINING) {
				term_read_commit(t, (size_t)r);
				term_read_scan(t, p, (size_t)r);
				total += (size_t)r;
				break;
			}
		} else
			r = read(t->master, p, n);
		if (r > 0) {
			term_read_commit(t, (size_t)r);
			term_read_scan(t, p, (size_t)r);
			total += (size_t)r;
			/* A small read, less than there was room for: the pty
			 * holds nothing more (a keystroke's echo), and epoll,
			 * level-triggered, says when it has more; no read to learn
			 * EAGAIN.  A read of a flood (TERM_READ_SMALL or more)
			 * reads on.  Not while draining: the shell is gone, and
			 * reading on to EIO ends the terminal in this turn. */
			if ((size_t)r < n && (size_t)r < TERM_READ_SMALL &&
			    t->state != TERM_DRAINING)
				break;
			continue;
		}
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1 && errno == EAGAIN)
			break;
		term_read_eof(t, now);
		break;
	}
	if (total > 0)
		term_read_done(t, total, now);
}

static void
term_write_input(struct term *t)
{
	struct term_chunk *c;
	ssize_t		   r;

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

void
term_update_events(struct term *t)
{
	uint32_t want = 0;

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

void
term_io_cb(int fd, uint32_t events, void *arg)
{
	struct term *t = arg;
	int64_t	     now = ev_now();

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
	uint64_t end = ring_end(&t->ring);

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

/* The memfd t's ring moves into, its header filled: 0 or -1. */
static int
term_spawn_memfd(struct term *t, int *memfd)
{
	struct termhdr *h;

	if (termmem_create(ptyd_conf.ring_size, memfd, &h) == -1) {
		log_warn("term %s: memfd", t->sid);
		*memfd = -1;
		return (-1);
	}
	ring_free(&t->ring);
	ring_init_ext(&t->ring, termmem_ring(h), ptyd_conf.ring_size, t->base,
	    t->base);
	t->hdr = h;
	termmem_init(t);
	return (0);
}

int
term_spawn(struct term *t)
{
	struct spawn_req    req;
	struct spawn_result res;
	int		    memfd = -1;

	memset(&req, 0, sizeof(req));
	req.path = ptyd_conf.shell;
	req.argv = ptyd_conf.shell_argv;
	req.env = ptyd_conf.env;
	req.cwd = t->workspace;
	req.rows = t->rows;
	req.cols = t->cols;
	req.umask = ptyd_conf.shell_umask;
	req.keeper = keeperlink_up();
	if (req.keeper && term_spawn_memfd(t, &memfd) == -1)
		return (-1);
	if (spawn_shell(&req, &res) == -1) {
		if (memfd != -1)
			close(memfd);
		return (-1);
	}
	t->pid = res.pid;
	t->master = res.master;
	t->tty = res.tty;
	term_pid_add(t);
	if (memfd != -1) {
		t->hdr->pid = t->pid;
		t->hdr->tty = (uint64_t)t->tty;
		/* From here the keeper holds the shell's pty: a crash of
		 * ours no longer ends it. */
		if (keeperlink_adopt(t, memfd) == -1) {
			close(memfd);
			return (-1);
		}
		close(memfd);
	}
	if (ev_io_add(&t->io, t->master, EPOLLIN, term_io_cb, t) == -1) {
		log_warn("term %s: epoll add", t->sid);
		return (-1);
	}
	return (0);
}

/*
 * A change of size stands at the ring's end: what the shell wrote before
 * it reaches a viewer before the event, what it writes after, after.
 */
static void
term_size_note(struct term *t)
{
	struct term_size *z;

	t->size_seq++;
	z = &t->sizes[(t->size_seq - 1) % TERM_SIZES];
	z->pos = ring_end(&t->ring);
	z->rows = t->rows;
	z->cols = t->cols;
	term_wake_viewers(t);
}

/* The kept changes after seq: the oldest kept, or seq + 1. */
static uint64_t
term_size_first(const struct term *t, uint64_t seq)
{
	if (t->size_seq > TERM_SIZES && seq < t->size_seq - TERM_SIZES)
		return (t->size_seq - TERM_SIZES + 1);
	return (seq + 1);
}

uint64_t
term_size_next(const struct term *t, uint64_t seq)
{
	uint64_t n = term_size_first(t, seq);

	if (n > t->size_seq)
		return (UINT64_MAX);
	return (t->sizes[(n - 1) % TERM_SIZES].pos);
}

/* A viewer further behind than TERM_SIZES changes misses the oldest: it
 * gets the next kept one where that stands, the size it needs from there
 * on. */
int
term_size_reached(const struct term *t, uint64_t *seq, uint64_t pos,
    uint16_t *rows, uint16_t *cols)
{
	const struct term_size *z;
	uint64_t		n;
	int			found = 0;

	for (n = term_size_first(t, *seq); n <= t->size_seq; n++) {
		z = &t->sizes[(n - 1) % TERM_SIZES];
		if (z->pos > pos)
			break;
		*seq = n;
		*rows = z->rows;
		*cols = z->cols;
		found = 1;
	}
	return (found);
}

void
term_set_size(struct term *t, unsigned int rows, unsigned int cols)
{
	struct winsize ws;
	uint16_t       was_rows = t->rows, was_cols = t->cols;

	if (rows != 0)
		t->rows = (uint16_t)rows;
	if (cols != 0)
		t->cols = (uint16_t)cols;
	if (t->rows != was_rows || t->cols != was_cols)
		term_size_note(t);
	if (t->rec_id != 0 && (t->rows != was_rows || t->cols != was_cols))
		rec_resize(t, ev_now());
	if (t->screen != NULL)
		screen_resize(t->screen, &t->ring, t->rows, t->cols,
		    term_screen_may_step() ? SCREEN_SLICE_WORK : 0);
	if (t->master == -1)
		return;
	memset(&ws, 0, sizeof(ws));
	ws.ws_row = t->rows;
	ws.ws_col = t->cols;
	if (ioctl(t->master, TIOCSWINSZ, &ws) == -1)
		log_warn("term %s: TIOCSWINSZ", t->sid);
	/* The kernel signals the foreground group; the shell's own group
	 * gets it too, as the contract says. */
	if (!t->reaped)
		term_signal(t, SIGWINCH, 1);
}

/*
 * bash, starting, reads the window size and writes it back (job control
 * set-up) before its first prompt, so a resize that lands in between (the
 * page fits the terminal right after start) is undone.  At the shell's
 * first output, put ours back if the pty's differs.
 */
void
term_size_reassert(struct term *t)
{
	struct winsize ws;

	if (t->master == -1 || ioctl(t->master, TIOCGWINSZ, &ws) == -1)
		return;
	if (ws.ws_row != t->rows || ws.ws_col != t->cols)
		term_set_size(t, 0, 0);
}
