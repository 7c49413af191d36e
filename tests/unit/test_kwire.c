/*
 * test_kwire.c -- the keeper link's messages (lib/kwire.c): a message and
 * its descriptors arrive whole, and anything else is refused whole with
 * its descriptors closed, so neither side acts on half a message.
 */
#include <criterion/criterion.h>

#include <sys/socket.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "kwire.h"

static int sv[2];

static void
pair(void)
{
	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
	    sv), 0);
}

static int
is_open(int fd)
{
	return (fcntl(fd, F_GETFD) != -1);
}

Test(kwire, a_message_with_text_data_and_two_descriptors_arrives_whole,
    .init = pair)
{
	static struct kw_msg m, r;
	int		     fds[2], got[KW_FDS_MAX], n = KW_FDS_MAX;
	char		     text[64];
	const uint8_t	    *d;
	size_t		     len;
	struct stat	     a, b;

	cr_assert_eq(pipe(fds), 0);
	kw_init(&m, KW_INPUT, 42);
	m.a = 1 << 20;
	kw_text(&m, "id-7");
	cr_assert_eq(kw_data(&m, "echo hi\n", 8), 0);
	cr_assert_eq(kw_send(sv[0], &m, fds, 2), 0);
	cr_assert_eq(kw_recv(sv[1], &r, got, &n), 1);
	cr_assert_eq(r.type, KW_INPUT);
	cr_assert_eq(r.id, 42);
	cr_assert_eq(r.a, 1 << 20);
	kw_get_text(&r, text, sizeof(text));
	cr_assert_str_eq(text, "id-7");
	d = kw_get_data(&r, &len);
	cr_assert_eq(len, 8);
	cr_assert_eq(memcmp(d, "echo hi\n", 8), 0);
	cr_assert_eq(n, 2);
	/* The same pipe, as new descriptors, close-on-exec. */
	cr_assert_eq(fstat(got[0], &a), 0);
	cr_assert_eq(fstat(fds[0], &b), 0);
	cr_assert_eq(a.st_ino, b.st_ino);
	cr_assert(fcntl(got[1], F_GETFD) & FD_CLOEXEC);
}

Test(kwire, data_over_the_limit_is_refused_before_sending, .init = pair)
{
	static struct kw_msg m;
	static uint8_t	     big[KW_DATA_MAX + 1];

	kw_init(&m, KW_INPUT, 1);
	cr_assert_eq(kw_data(&m, big, sizeof(big)), -1);
	cr_assert_eq(errno, EMSGSIZE);
}

/* A datagram that is not a message: its descriptors must not leak. */
static void
refused(const void *buf, size_t len)
{
	static struct kw_msg r;
	struct msghdr	     mh;
	struct iovec	     iov = { (void *)buf, len };
	union {
		struct cmsghdr h;
		char	       b[CMSG_SPACE(sizeof(int))];
	} cm;
	int fds[2], got[KW_FDS_MAX], n = KW_FDS_MAX, probe;

	cr_assert_eq(pipe(fds), 0);
	memset(&mh, 0, sizeof(mh));
	memset(&cm, 0, sizeof(cm));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cm.b;
	mh.msg_controllen = sizeof(cm.b);
	cm.h.cmsg_level = SOL_SOCKET;
	cm.h.cmsg_type = SCM_RIGHTS;
	cm.h.cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(&cm.h), &fds[0], sizeof(int));
	cr_assert_eq(sendmsg(sv[0], &mh, 0), (ssize_t)len);
	close(fds[0]);
	cr_assert_eq(kw_recv(sv[1], &r, got, &n), -1);
	cr_assert_eq(errno, EPROTO);
	cr_assert_eq(n, 0);
	/* The only reader left was the one that came with it: closed, so
	 * the write end now sees no reader. */
	probe = dup(fds[1]);
	cr_assert_eq(write(fds[1], "x", 1), -1);
	cr_assert_eq(errno, EPIPE);
	close(probe);
	close(fds[1]);
}

Test(kwire, a_short_datagram_is_refused_and_its_descriptor_closed,
    .init = pair)
{
	signal(SIGPIPE, SIG_IGN);
	refused("\1\0\0\0", 4);
}

Test(kwire, lengths_that_disagree_with_the_datagram_are_refused,
    .init = pair)
{
	static struct kw_msg m;

	signal(SIGPIPE, SIG_IGN);
	kw_init(&m, KW_INPUT, 1);
	kw_text(&m, "abc");
	/* Says 3 bytes of text, sends 2. */
	refused(&m, offsetof(struct kw_msg, buf) + 2);
}

Test(kwire, an_unknown_type_is_refused, .init = pair)
{
	static struct kw_msg m;

	signal(SIGPIPE, SIG_IGN);
	kw_init(&m, KW_INPUT, 1);
	m.type = KW_TYPE_MAX;
	refused(&m, offsetof(struct kw_msg, buf));
}

Test(kwire, eof_is_zero_and_a_deadline_times_out, .init = pair)
{
	static struct kw_msg r;

	cr_assert_eq(kw_recv_wait(sv[1], &r, NULL, NULL, 20), -1);
	cr_assert_eq(errno, ETIMEDOUT);
	close(sv[0]);
	cr_assert_eq(kw_recv(sv[1], &r, NULL, NULL), 0);
	cr_assert(is_open(sv[1]));
}
