/*
 * kwire.c -- sending and receiving the keeper link's messages (kwire.h).
 *
 * Owns: one message as one datagram: the fixed fields, then text and data,
 * with its descriptors as SCM_RIGHTS.  A datagram that is cut (MSG_TRUNC),
 * shorter than its fields or longer than they say is refused whole
 * (EPROTO), and any descriptors it brought are closed: neither side ever
 * acts on half a message.
 */
#include <sys/socket.h>
#include <sys/uio.h>

#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "kwire.h"

#define KW_HDR offsetof(struct kw_msg, buf)

void
kw_init(struct kw_msg *m, enum kw_type type, int64_t id)
{
	memset(m, 0, KW_HDR);
	m->type = (uint32_t)type;
	m->id = id;
}

void
kw_text(struct kw_msg *m, const char *s)
{
	size_t n = strlen(s);

	if (n > 255)
		n = 255;
	/* Text comes first: data set earlier would be overwritten. */
	memcpy(m->buf, s, n);
	m->textlen = (uint32_t)n;
	m->datalen = 0;
}

int
kw_data(struct kw_msg *m, const void *p, size_t len)
{
	if (len > KW_DATA_MAX) {
		errno = EMSGSIZE;
		return (-1);
	}
	if (len > 0)
		memcpy(m->buf + m->textlen, p, len);
	m->datalen = (uint32_t)len;
	return (0);
}

void
kw_get_text(const struct kw_msg *m, char *out, size_t size)
{
	size_t n = m->textlen < size - 1 ? m->textlen : size - 1;

	memcpy(out, m->buf, n);
	out[n] = '\0';
}

const uint8_t *
kw_get_data(const struct kw_msg *m, size_t *len)
{
	*len = m->datalen;
	return (m->buf + m->textlen);
}

int
kw_send(int sock, const struct kw_msg *m, const int *fds, int nfds)
{
	return (kw_send_flags(sock, m, fds, nfds, 0));
}

int
kw_send_flags(int sock, const struct kw_msg *m, const int *fds, int nfds,
    int flags)
{
	union {
		struct cmsghdr hdr;
		char	       buf[CMSG_SPACE(sizeof(int) * KW_FDS_MAX)];
	} cm;
	struct msghdr mh;
	struct iovec  iov;
	ssize_t	      r;

	if (nfds < 0 || nfds > KW_FDS_MAX) {
		errno = EINVAL;
		return (-1);
	}
	memset(&mh, 0, sizeof(mh));
	iov.iov_base = (void *)m;
	iov.iov_len = KW_HDR + m->textlen + m->datalen;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	if (nfds > 0) {
		memset(&cm, 0, sizeof(cm));
		mh.msg_control = cm.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		cm.hdr.cmsg_level = SOL_SOCKET;
		cm.hdr.cmsg_type = SCM_RIGHTS;
		cm.hdr.cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(&cm.hdr), fds, sizeof(int) * (size_t)nfds);
	}
	do
		r = sendmsg(sock, &mh, MSG_NOSIGNAL | flags);
	while (r == -1 && errno == EINTR);
	return (r == (ssize_t)iov.iov_len ? 0 : -1);
}

/* The descriptors of mh into fds (up to *nfds), closing the rest. */
static void
kw_take_fds(struct msghdr *mh, int *fds, int *nfds)
{
	struct cmsghdr *c;
	int	       *p, max = *nfds, i, n;

	*nfds = 0;
	for (c = CMSG_FIRSTHDR(mh); c != NULL; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		n = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		p = (int *)(void *)CMSG_DATA(c);
		for (i = 0; i < n; i++) {
			if (*nfds < max)
				fds[(*nfds)++] = p[i];
			else
				close(p[i]);
		}
	}
}

static void
kw_close_fds(int *fds, int *nfds)
{
	while (*nfds > 0)
		close(fds[--(*nfds)]);
}

int
kw_recv(int sock, struct kw_msg *m, int *fds, int *nfds)
{
	union {
		struct cmsghdr hdr;
		char	       buf[CMSG_SPACE(sizeof(int) * 8)];
	} cm;
	struct msghdr mh;
	struct iovec  iov;
	ssize_t	      r;
	int	      dummy = 0, *n = nfds != NULL ? nfds : &dummy;

	memset(&mh, 0, sizeof(mh));
	iov.iov_base = m;
	iov.iov_len = sizeof(*m);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cm.buf;
	mh.msg_controllen = sizeof(cm.buf);
	do
		r = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (r == -1 && errno == EINTR);
	if (r <= 0) {
		*n = 0;
		return ((int)r);
	}
	kw_take_fds(&mh, fds, n);
	if ((mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0 ||
	    (size_t)r < KW_HDR || m->type == 0 || m->type >= KW_TYPE_MAX ||
	    m->textlen > 255 || m->datalen > KW_DATA_MAX ||
	    (size_t)r != KW_HDR + m->textlen + m->datalen) {
		kw_close_fds(fds, n);
		errno = EPROTO;
		return (-1);
	}
	return (1);
}

int
kw_recv_wait(int sock, struct kw_msg *m, int *fds, int *nfds, int ms)
{
	struct pollfd pfd = { .fd = sock, .events = POLLIN };
	int	      r;

	do
		r = poll(&pfd, 1, ms);
	while (r == -1 && errno == EINTR);
	if (r == 0) {
		errno = ETIMEDOUT;
		return (-1);
	}
	if (r == -1)
		return (-1);
	return (kw_recv(sock, m, fds, nfds));
}

const char *
kw_type_name(uint32_t type)
{
	static const char *const names[KW_TYPE_MAX] = { "?", "hello", "adopt",
		"input", "signal", "forget", "ready", "frozen", "input_ok",
		"welcome", "term", "terms_end", "exited", "freeze", "thaw",
		"go", "exit" };

	return (type < KW_TYPE_MAX ? names[type] : "?");
}
