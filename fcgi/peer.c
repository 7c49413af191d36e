/*
 * peer.c -- the uid owning the HTTP client's socket (peer.h).
 *
 * Owns: one netlink exact lookup per request (no dump: the kernel finds the
 * socket by its four-tuple, so the cost does not grow with the number of
 * connections on the host), the few netlink sockets a process keeps for
 * them, and the /proc/net/tcp{,6} scan used where netlink socket
 * diagnostics are unavailable.  Fails closed: anything it cannot find or
 * read is "not found".
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/inet_diag.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "peer.h"

#define PEER_LINE_MAX 512
/*
 * Netlink sockets kept per process between lookups.  Opening and closing
 * one costs twice the lookup itself (9 us against 3 on the test machine,
 * on every request that checks its client); the leader thread serves
 * nearly every request (pool.c), so one is in use most of the time.
 * Kept only at PEER_FD_BASE or above, where libfcgi never looks and the
 * thread cap's count of descriptors below 1024 does not change.
 */
#define PEER_KEPT_MAX 2
#define PEER_FD_BASE  1024

/* TCP states as the kernel numbers them (include/net/tcp_states.h). */
#define PEER_TCP_TIME_WAIT    6
#define PEER_TCP_LISTEN	      10
#define PEER_TCP_NEW_SYN_RECV 12

static const uint8_t peer_v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff,
	0xff };

/* A state in which the socket still has an owner. */
static int
peer_state_live(unsigned int state)
{
	return (state != PEER_TCP_TIME_WAIT && state != PEER_TCP_LISTEN &&
	    state != PEER_TCP_NEW_SYN_RECV);
}

static int
peer_is_v4(const struct gate_ip *ip)
{
	return (memcmp(ip->a, peer_v4mapped, sizeof(peer_v4mapped)) == 0);
}

static int
peer_port_parse(const char *s, uint16_t *port)
{
	unsigned long v = 0;
	size_t	      i;

	if (s == NULL || s[0] == '\0' || strlen(s) > 5)
		return (-1);
	for (i = 0; s[i] != '\0'; i++) {
		if (s[i] < '0' || s[i] > '9')
			return (-1);
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v == 0 || v > 65535)
		return (-1);
	*port = (uint16_t)v;
	return (0);
}

int
peer_key_parse(struct peer_key *k, const char *raddr, const char *rport,
    const char *saddr, const char *sport)
{
	memset(k, 0, sizeof(*k));
	if (raddr == NULL || saddr == NULL ||
	    gate_ip_parse(raddr, &k->local) == -1 ||
	    gate_ip_parse(saddr, &k->remote) == -1 ||
	    peer_port_parse(rport, &k->lport) == -1 ||
	    peer_port_parse(sport, &k->rport) == -1)
		return (-1);
	/* A v4 client and a v6 server (or the reverse) share no socket. */
	if (peer_is_v4(&k->local) != peer_is_v4(&k->remote))
		return (-1);
	return (0);
}

/* The request of an exact lookup of k's client socket in one family. */
struct peer_req {
	struct nlmsghdr		nlh;
	struct inet_diag_req_v2 req;
};

static void
peer_req_init(struct peer_req *msg, int family, const struct peer_key *k)
{
	memset(msg, 0, sizeof(*msg));
	msg->nlh.nlmsg_len = sizeof(*msg);
	msg->nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	msg->nlh.nlmsg_flags = NLM_F_REQUEST;
	msg->nlh.nlmsg_seq = 1;
	msg->req.sdiag_family = (uint8_t)family;
	msg->req.sdiag_protocol = IPPROTO_TCP;
	/*
	 * Live sockets only.  A TIME_WAIT or NEW_SYN_RECV mini-socket has no
	 * owner and reports uid 0 (root's), and any client can turn its own
	 * socket into one by closing it right after sending its request,
	 * which nginx may still pass on (pipelined behind another).
	 */
	msg->req.idiag_states = ~0U &
	    ~((1U << PEER_TCP_TIME_WAIT) | (1U << PEER_TCP_NEW_SYN_RECV) |
		(1U << PEER_TCP_LISTEN));
	/* The client's socket: its local end is (src, sport). */
	msg->req.id.idiag_sport = htons(k->lport);
	msg->req.id.idiag_dport = htons(k->rport);
	if (family == AF_INET) {
		memcpy(msg->req.id.idiag_src, k->local.a + 12, 4);
		memcpy(msg->req.id.idiag_dst, k->remote.a + 12, 4);
	} else {
		memcpy(msg->req.id.idiag_src, k->local.a, 16);
		memcpy(msg->req.id.idiag_dst, k->remote.a, 16);
	}
	msg->req.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
	msg->req.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
}

/* The uid in a reply of n bytes.  0, or -1 with *err (ENOENT: none). */
static int
peer_reply(const struct peer_key *k, struct nlmsghdr *h, ssize_t n, uid_t *uid,
    int *err)
{
	const struct inet_diag_msg *d;
	const struct nlmsgerr	   *e;

	*err = ENOENT;
	for (; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
		if (h->nlmsg_type == NLMSG_ERROR) {
			e = NLMSG_DATA(h);
			if (h->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) &&
			    e->error < 0)
				*err = -e->error;
			return (-1);
		}
		if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
		    h->nlmsg_len < NLMSG_LENGTH(sizeof(*d)))
			continue;
		d = NLMSG_DATA(h);
		/* The kernel matched the tuple; check it anyway. */
		if (d->id.idiag_sport != htons(k->lport) ||
		    d->id.idiag_dport != htons(k->rport))
			continue;
		/* No file behind it (closed, orphaned, a mini-socket): its
		 * uid says nothing about who sent the request. */
		if (d->idiag_inode == 0 || !peer_state_live(d->idiag_state))
			return (-1);
		*uid = (uid_t)d->idiag_uid;
		return (0);
	}
	return (-1);
}

static pthread_mutex_t peer_kept_mtx = PTHREAD_MUTEX_INITIALIZER;
static int	       peer_kept[PEER_KEPT_MAX];
static int	       peer_nkept;
static uint32_t	       peer_seq;

/*
 * A netlink socket for one lookup: a kept one, else a new one, connected
 * to the kernel.  A socket that lives on has a port id anyone can read in
 * /proc/net/netlink.  Only a sender with CAP_NET_ADMIN may send to a
 * NETLINK_SOCK_DIAG socket, but one queueing answers there could name
 * this account as the owner of any TCP socket; connected, the socket
 * refuses every sender but the kernel (netlink_getsockbyportid), and each
 * answer's sender and sequence number are checked as well (peer_diag).
 * -1.
 */
static int
peer_sock_take(void)
{
	struct sockaddr_nl sa;
	int		   fd = -1;

	pthread_mutex_lock(&peer_kept_mtx);
	if (peer_nkept > 0)
		fd = peer_kept[--peer_nkept];
	pthread_mutex_unlock(&peer_kept_mtx);
	if (fd != -1)
		return (fd);
	if ((fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC,
		 NETLINK_SOCK_DIAG)) == -1)
		return (-1);
	memset(&sa, 0, sizeof(sa));
	sa.nl_family = AF_NETLINK; /* nl_pid 0: the kernel */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1) {
		close(fd);
		return (-1);
	}
	return (fd);
}

/*
 * Done with fd.  Only a socket whose exchange completed is kept (nothing
 * of an earlier lookup can be waiting in it), moved above PEER_FD_BASE
 * first; any other is closed.
 */
static void
peer_sock_put(int fd, int clean)
{
	int nfd, room;

	pthread_mutex_lock(&peer_kept_mtx);
	room = peer_nkept < PEER_KEPT_MAX;
	pthread_mutex_unlock(&peer_kept_mtx);
	if (!clean || !room)
		goto drop;
	if (fd < PEER_FD_BASE) {
		nfd = fcntl(fd, F_DUPFD_CLOEXEC, PEER_FD_BASE);
		close(fd);
		if ((fd = nfd) == -1)
			return;
	}
	pthread_mutex_lock(&peer_kept_mtx);
	if (peer_nkept < PEER_KEPT_MAX) {
		peer_kept[peer_nkept++] = fd;
		fd = -1;
	}
	pthread_mutex_unlock(&peer_kept_mtx);
drop:
	if (fd != -1)
		close(fd);
}

/* One exact lookup in one address family.  0, or -1 with errno. */
static int
peer_diag(int family, const struct peer_key *k, uid_t *uid)
{
	struct peer_req	   msg;
	struct sockaddr_nl sa;
	union {
		struct nlmsghdr h;
		char		buf[4096];
	} u;
	socklen_t salen;
	ssize_t	  n;
	int	  fd, rv = -1, err = ENOENT, clean = 0;

	peer_req_init(&msg, family, k);
	msg.nlh.nlmsg_seq = __atomic_add_fetch(&peer_seq, 1, __ATOMIC_RELAXED);
	if ((fd = peer_sock_take()) == -1)
		return (-1);
	if (send(fd, &msg, sizeof(msg), 0) != (ssize_t)sizeof(msg)) {
		err = errno;
		goto out;
	}
	/* The kernel answers an exact lookup with one message, at once. */
	memset(&sa, 0, sizeof(sa));
	do {
		salen = sizeof(sa);
		n = recvfrom(fd, u.buf, sizeof(u.buf), 0,
		    (struct sockaddr *)&sa, &salen);
	} while (n == -1 && errno == EINTR);
	if (n == -1) {
		err = errno;
		goto out;
	}
	/* Anything but the kernel's answer to this lookup: not found, and
	 * the socket is not used again. */
	if (salen != sizeof(sa) || sa.nl_family != AF_NETLINK ||
	    sa.nl_pid != 0 || n < (ssize_t)sizeof(u.h) ||
	    u.h.nlmsg_seq != msg.nlh.nlmsg_seq)
		goto out;
	clean = 1;
	rv = peer_reply(k, &u.h, n, uid, &err);
out:
	peer_sock_put(fd, clean);
	if (rv == -1)
		errno = err;
	return (rv);
}

int
peer_uid(const struct peer_key *k, uid_t *uid)
{
	int err;

	/*
	 * A v4 client's socket is AF_INET, unless the client used a
	 * dual-stack AF_INET6 socket (addresses then v4-mapped): try both.
	 */
	if (peer_is_v4(&k->local)) {
		if (peer_diag(AF_INET, k, uid) == 0)
			return (0);
		err = errno;
		if (err == ENOENT && peer_diag(AF_INET6, k, uid) == 0)
			return (0);
		if (errno != ENOENT)
			err = errno;
	} else {
		if (peer_diag(AF_INET6, k, uid) == 0)
			return (0);
		err = errno;
	}
	if (err == ENOENT)
		return (-1);
	/* No socket diagnostics here (kernel without inet_diag, a seccomp
	 * filter): the same table, read as text. */
	return (peer_uid_proc(k, uid));
}

/* "0100007F:1F90" (v4) or 32 hex digits and a port (v6).  0 or -1. */
static int
peer_proc_addr(const char *s, size_t len, struct gate_ip *ip, uint16_t *port)
{
	char	      word[9], *end;
	const char   *colon;
	uint32_t      w;
	unsigned long p;
	size_t	      alen, i;

	if ((colon = memchr(s, ':', len)) == NULL)
		return (-1);
	alen = (size_t)(colon - s);
	if (alen != 8 && alen != 32)
		return (-1);
	memset(ip, 0, sizeof(*ip));
	if (alen == 8)
		memcpy(ip->a, peer_v4mapped, sizeof(peer_v4mapped));
	/* Each 32-bit word is printed in host order: copy it back as is. */
	for (i = 0; i < alen / 8; i++) {
		memcpy(word, s + i * 8, 8);
		word[8] = '\0';
		errno = 0;
		w = (uint32_t)strtoul(word, &end, 16);
		if (errno != 0 || *end != '\0')
			return (-1);
		memcpy(ip->a + (alen == 8 ? 12 : i * 4), &w, 4);
	}
	if (len - alen - 1 != 4)
		return (-1);
	memcpy(word, colon + 1, 4);
	word[4] = '\0';
	p = strtoul(word, &end, 16);
	if (*end != '\0')
		return (-1);
	*port = (uint16_t)p;
	return (0);
}

/* An unsigned number of len characters at s, in base.  0 or -1. */
static int
peer_proc_num(const char *s, size_t len, int base, unsigned long *out)
{
	char num[24], *end;

	if (len == 0 || len >= sizeof(num) || s[0] == '-')
		return (-1);
	memcpy(num, s, len);
	num[len] = '\0';
	errno = 0;
	*out = strtoul(num, &end, base);
	return (errno != 0 || *end != '\0' ? -1 : 0);
}

int
peer_proc_line(const char *line, struct peer_key *k, uid_t *uid)
{
	const char   *p = line, *f[10];
	size_t	      flen[10];
	unsigned long v, st, inode;
	int	      i;

	/* sl local rem st tx:rx tr:when retrnsmt uid timeout inode ... */
	for (i = 0; i < 10; i++) {
		while (*p == ' ')
			p++;
		if (*p == '\0' || *p == '\n')
			return (-1);
		f[i] = p;
		while (*p != ' ' && *p != '\0' && *p != '\n')
			p++;
		flen[i] = (size_t)(p - f[i]);
	}
	if (flen[0] < 2 || f[0][flen[0] - 1] != ':')
		return (-1);
	if (peer_proc_addr(f[1], flen[1], &k->local, &k->lport) == -1 ||
	    peer_proc_addr(f[2], flen[2], &k->remote, &k->rport) == -1)
		return (-1);
	if (peer_proc_num(f[3], flen[3], 16, &st) == -1 ||
	    peer_proc_num(f[7], flen[7], 10, &v) == -1 ||
	    peer_proc_num(f[9], flen[9], 10, &inode) == -1)
		return (-1);
	/* As with netlink: no file behind it, no owner (peer_reply). */
	if (inode == 0 || !peer_state_live((unsigned int)st))
		return (-1);
	*uid = (uid_t)v;
	return (0);
}

static int
peer_proc_scan(const char *path, const struct peer_key *want, uid_t *uid)
{
	char		line[PEER_LINE_MAX];
	struct peer_key k;
	uid_t		u;
	FILE	       *f;
	int		rv = -1;

	if ((f = fopen(path, "re")) == NULL)
		return (-1);
	while (fgets(line, sizeof(line), f) != NULL) {
		if (peer_proc_line(line, &k, &u) == -1)
			continue;
		if (k.lport == want->lport && k.rport == want->rport &&
		    memcmp(&k.local, &want->local, sizeof(k.local)) == 0 &&
		    memcmp(&k.remote, &want->remote, sizeof(k.remote)) == 0) {
			*uid = u;
			rv = 0;
			break;
		}
	}
	fclose(f);
	return (rv);
}

int
peer_uid_proc(const struct peer_key *k, uid_t *uid)
{
	if (peer_is_v4(&k->local) &&
	    peer_proc_scan("/proc/net/tcp", k, uid) == 0)
		return (0);
	if (peer_proc_scan("/proc/net/tcp6", k, uid) == 0)
		return (0);
	errno = ENOENT;
	return (-1);
}
