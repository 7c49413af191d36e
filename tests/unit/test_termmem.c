/*
 * test_termmem.c -- a terminal's memfd (ptyd/termmem.c): the header's
 * checks, and the in-flight read's recovery on a real pty in packet mode,
 * the protocol termio.c reads with (DESIGN 10).
 */
#include <criterion/criterion.h>

#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include <fcntl.h>
#include <pty.h>
#include <stdatomic.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "termhdr.h"
#include "termmem.h"

#define RING 65536

static struct termhdr *h;
static int	       fd;

static void
make(void)
{
	cr_assert_eq(termmem_create(RING, &fd, &h), 0);
	h->id = 7;
	h->base = 1000;
	atomic_store(&h->end, 1000);
}

Test(termmem, a_header_made_here_maps_back, .init = make)
{
	struct termhdr *g;
	const char     *why = NULL;

	cr_assert_eq(termmem_map(fd, &g, &why), 0, "%s", why);
	cr_assert_eq(g->id, 7);
	cr_assert_eq(g->ring_size, RING);
	termmem_unmap(g);
}

Test(termmem, a_newer_layout_or_a_wrong_size_is_refused, .init = make)
{
	struct termhdr *g;
	const char     *why = NULL;

	h->min_reader = TERMHDR_LAYOUT + 1;
	cr_assert_eq(termmem_map(fd, &g, &why), -1);
	cr_assert_not_null(strstr(why, "newer layout"));
	h->min_reader = TERMHDR_MIN_READER;
	h->ring_size = RING * 2;
	cr_assert_eq(termmem_map(fd, &g, &why), -1);
	cr_assert_not_null(strstr(why, "size"));
	h->ring_size = RING;
	memcpy(h->magic, "NOTAHDR!", 8);
	cr_assert_eq(termmem_map(fd, &g, &why), -1);
	cr_assert_not_null(strstr(why, "header"));
}

/* A read as term_read_pkt does it, stopped where a SIGKILL might land:
 * 0 before the read, 1 after the read and before the commit. */
static void
read_until(int m, int stop)
{
	struct iovec iov[2];
	uint64_t     end = atomic_load(&h->end);
	int	     q = 0;

	cr_assert_eq(ioctl(m, FIONREAD, &q), 0);
	cr_assert_gt(q, 0);
	h->ctrl = 0xff;
	atomic_store(&h->inflight_len, (uint64_t)q);
	atomic_store(&h->inflight_pos, end);
	if (stop == 0)
		return;
	iov[0].iov_base = (void *)&h->ctrl;
	iov[0].iov_len = 1;
	iov[1].iov_base = termmem_ring(h) + (end % RING);
	iov[1].iov_len = (size_t)q;
	cr_assert_eq(readv(m, iov, 2), q + 1, "FIONREAD's length, exactly");
}

static int
pty_pkt(int *s)
{
	struct termios t;
	int	       m, one = 1;

	cr_assert_eq(openpty(&m, s, NULL, NULL, NULL), 0);
	cr_assert_eq(tcgetattr(*s, &t), 0);
	cfmakeraw(&t);
	cr_assert_eq(tcsetattr(*s, TCSANOW, &t), 0);
	cr_assert_eq(ioctl(m, TIOCPKT, &one), 0);
	return (m);
}

Test(termmem, a_read_killed_after_it_took_place_is_committed, .init = make)
{
	int s, m = pty_pkt(&s);

	cr_assert_eq(write(s, "hello", 5), 5);
	usleep(20000);
	read_until(m, 1);
	cr_assert_eq(termmem_recover(h), 5);
	cr_assert_eq(atomic_load(&h->end), 1005);
	cr_assert_eq(memcmp(termmem_ring(h) + 1000 % RING, "hello", 5), 0);
	cr_assert_eq(atomic_load(&h->inflight_len), 0);
	/* Settled once: a second recovery adds nothing. */
	cr_assert_eq(termmem_recover(h), 0);
	cr_assert_eq(atomic_load(&h->end), 1005);
}

Test(termmem, a_read_killed_before_it_started_leaves_the_bytes_in_the_pty,
    .init = make)
{
	char buf[16];
	int  s, m = pty_pkt(&s);

	cr_assert_eq(write(s, "hello", 5), 5);
	usleep(20000);
	read_until(m, 0);
	cr_assert_eq(termmem_recover(h), 0);
	cr_assert_eq(atomic_load(&h->end), 1000);
	/* The next ptyd reads them: packet byte, then the data. */
	cr_assert_eq(read(m, buf, sizeof(buf)), 6);
	cr_assert_eq(buf[0], TIOCPKT_DATA);
	cr_assert_eq(memcmp(buf + 1, "hello", 5), 0);
}

Test(termmem, a_record_of_a_read_already_committed_is_ignored, .init = make)
{
	int s, m = pty_pkt(&s);

	cr_assert_eq(write(s, "abc", 3), 3);
	usleep(20000);
	read_until(m, 1);
	/* Killed after end moved, before the record was cleared. */
	atomic_store(&h->end, 1003);
	cr_assert_eq(termmem_recover(h), 0);
	cr_assert_eq(atomic_load(&h->end), 1003);
}
