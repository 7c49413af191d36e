/*
 * test_peer.c -- finding the uid that owns an HTTP client's socket
 * (fcgi/peer.c): the /proc/net line parser on fixed lines, and both lookups
 * (netlink and /proc) on real loopback connections made here.
 */
#include <criterion/criterion.h>

#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "peer.h"

Test(peer, proc_line_v4)
{
	struct peer_key	k, want;
	uid_t		uid = 12345;

	/* 127.0.0.1:40000 -> 127.0.0.1:8080, uid 1001, as a little-endian
	 * kernel prints it (each 32-bit word in host order). */
	uint32_t	lo = htonl(INADDR_LOOPBACK);
	char		line[256];

	snprintf(line, sizeof(line), "   7: %08X:9C40 %08X:1F90 01 "
	    "00000000:00000000 00:00000000 00000000  1001        0 4242 1 "
	    "0000000000000000 20 4 30 10 -1\n", lo, lo);
	cr_assert_eq(peer_proc_line(line, &k, &uid), 0);
	cr_expect_eq(uid, 1001);
	cr_assert_eq(peer_key_parse(&want, "127.0.0.1", "40000", "127.0.0.1",
	    "8080"), 0);
	cr_expect_eq(k.lport, 40000);
	cr_expect_eq(k.rport, 8080);
	cr_expect_eq(memcmp(&k.local, &want.local, sizeof(k.local)), 0);
	cr_expect_eq(memcmp(&k.remote, &want.remote, sizeof(k.remote)), 0);
}

/* Regression: a TIME_WAIT socket reads as uid 0 (root, who is let in);
 * any client's socket is one once it closes after sending. */
Test(peer, proc_line_without_an_owner_is_no_one)
{
	struct peer_key	k;
	uid_t		uid;

	cr_expect_eq(peer_proc_line("   3: 0100007F:9C40 0100007F:1F90 06 "
	    "00000000:00000000 03:00000F8B 00000000     0        0 0 3 "
	    "0000000000000000\n", &k, &uid), -1, "TIME_WAIT");
	cr_expect_eq(peer_proc_line("   3: 0100007F:9C40 0100007F:1F90 01 "
	    "00000000:00000000 00:00000000 00000000     0        0 0 1 "
	    "0000000000000000\n", &k, &uid), -1, "no inode: orphaned");
	cr_expect_eq(peer_proc_line("   3: 0100007F:9C40 0100007F:1F90 01 "
	    "00000000:00000000 00:00000000 00000000     0        0 77 1 "
	    "0000000000000000\n", &k, &uid), 0, "a live root socket");
	cr_expect_eq(uid, 0);
}

Test(peer, proc_line_rejects_headers_and_junk)
{
	struct peer_key	k;
	uid_t		uid;

	cr_expect_eq(peer_proc_line("  sl  local_address rem_address   st "
	    "tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n",
	    &k, &uid), -1);
	cr_expect_eq(peer_proc_line("", &k, &uid), -1);
	cr_expect_eq(peer_proc_line("   0: 0100007F:1F90\n", &k, &uid), -1);
	cr_expect_eq(peer_proc_line("   0: 0100007F:1F90 0100007F:ZZZZ 01 "
	    "0:0 0:0 0 0 0 0\n", &k, &uid), -1);
	cr_expect_eq(peer_proc_line("   0: 0100007:1F90 0100007F:1F90 01 "
	    "0:0 0:0 0 0 0 0\n", &k, &uid), -1);
	cr_expect_eq(peer_proc_line("   0: 0100007F:1F90 0100007F:1F90 01 "
	    "0:0 0:0 0 -5 0 0\n", &k, &uid), -1);
}

Test(peer, key_parse_checks_every_part)
{
	struct peer_key	k;

	cr_expect_eq(peer_key_parse(&k, "127.0.0.1", "1", "127.0.0.1", "80"),
	    0);
	cr_expect_eq(peer_key_parse(&k, "::ffff:127.0.0.1", "1", "127.0.0.1",
	    "80"), 0, "v4-mapped is v4");
	cr_expect_eq(peer_key_parse(&k, "127.0.0.1", NULL, "127.0.0.1", "80"),
	    -1);
	cr_expect_eq(peer_key_parse(&k, "127.0.0.1", "0", "127.0.0.1", "80"),
	    -1);
	cr_expect_eq(peer_key_parse(&k, "127.0.0.1", "65536", "127.0.0.1",
	    "80"), -1);
	cr_expect_eq(peer_key_parse(&k, "127.0.0.1", "1x", "127.0.0.1", "80"),
	    -1);
	cr_expect_eq(peer_key_parse(&k, "127.0.0.1", "1", NULL, "80"), -1);
	cr_expect_eq(peer_key_parse(&k, "127.0.0.1", "1", "::1", "80"), -1,
	    "a v4 client never talks to a v6 server address");
	cr_expect_eq(peer_key_parse(&k, "unix:", "1", "127.0.0.1", "80"), -1);
}

/* A connected pair on loopback; the key is the client's view. */
static void
pair(int family, int *lfd, int *cfd, int *sfd, struct peer_key *k)
{
	struct sockaddr_storage	a, c;
	socklen_t		alen = sizeof(a), clen = sizeof(c);
	char			ra[64], sa[64], rp[8], sp[8];

	memset(&a, 0, sizeof(a));
	if (family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&a;

		in->sin_family = AF_INET;
		in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		alen = sizeof(*in);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&a;

		in6->sin6_family = AF_INET6;
		in6->sin6_addr = in6addr_loopback;
		alen = sizeof(*in6);
	}
	*lfd = socket(family, SOCK_STREAM, 0);
	cr_assert_neq(*lfd, -1);
	cr_assert_eq(bind(*lfd, (struct sockaddr *)&a, alen), 0);
	cr_assert_eq(listen(*lfd, 4), 0);
	alen = sizeof(a);
	cr_assert_eq(getsockname(*lfd, (struct sockaddr *)&a, &alen), 0);
	*cfd = socket(family, SOCK_STREAM, 0);
	cr_assert_eq(connect(*cfd, (struct sockaddr *)&a, alen), 0);
	*sfd = accept(*lfd, NULL, NULL);
	cr_assert_neq(*sfd, -1);
	cr_assert_eq(getsockname(*cfd, (struct sockaddr *)&c, &clen), 0);
	if (family == AF_INET) {
		struct sockaddr_in *ci = (struct sockaddr_in *)&c;
		struct sockaddr_in *ai = (struct sockaddr_in *)&a;

		inet_ntop(AF_INET, &ci->sin_addr, ra, sizeof(ra));
		inet_ntop(AF_INET, &ai->sin_addr, sa, sizeof(sa));
		snprintf(rp, sizeof(rp), "%u", ntohs(ci->sin_port));
		snprintf(sp, sizeof(sp), "%u", ntohs(ai->sin_port));
	} else {
		struct sockaddr_in6 *ci = (struct sockaddr_in6 *)&c;
		struct sockaddr_in6 *ai = (struct sockaddr_in6 *)&a;

		inet_ntop(AF_INET6, &ci->sin6_addr, ra, sizeof(ra));
		inet_ntop(AF_INET6, &ai->sin6_addr, sa, sizeof(sa));
		snprintf(rp, sizeof(rp), "%u", ntohs(ci->sin6_port));
		snprintf(sp, sizeof(sp), "%u", ntohs(ai->sin6_port));
	}
	cr_assert_eq(peer_key_parse(k, ra, rp, sa, sp), 0);
}

static void
lookup_both_ways(int family)
{
	struct peer_key	k;
	uid_t		uid;
	int		lfd, cfd, sfd;

	pair(family, &lfd, &cfd, &sfd, &k);
	uid = (uid_t)-1;
	cr_expect_eq(peer_uid(&k, &uid), 0, "netlink: %s", strerror(errno));
	cr_expect_eq(uid, geteuid());
	uid = (uid_t)-1;
	cr_expect_eq(peer_uid_proc(&k, &uid), 0);
	cr_expect_eq(uid, geteuid());

	/* The server's end is not the client's socket: swapping the
	 * ends finds the accepted socket, never a wrong match. */
	k.lport++;
	cr_expect_eq(peer_uid(&k, &uid), -1, "no such socket");
	cr_expect_eq(errno, ENOENT);
	cr_expect_eq(peer_uid_proc(&k, &uid), -1);
	close(sfd);
	close(cfd);
	close(lfd);
}

Test(peer, finds_our_own_v4_socket)
{
	lookup_both_ways(AF_INET);
}

/* Regression: closing right after sending turned the client's socket into
 * a TIME_WAIT one that both lookups reported as root's. */
Test(peer, a_closed_socket_in_time_wait_belongs_to_no_one)
{
	struct peer_key	k;
	uid_t		uid = 12345;
	int		lfd, cfd, sfd;

	pair(AF_INET, &lfd, &cfd, &sfd, &k);
	close(cfd);		/* the client closes first: its end waits */
	close(sfd);
	usleep(100000);
	cr_expect_eq(peer_uid(&k, &uid), -1, "netlink gave uid %u",
	    (unsigned int)uid);
	cr_expect_eq(peer_uid_proc(&k, &uid), -1, "/proc gave uid %u",
	    (unsigned int)uid);
	close(lfd);
}

Test(peer, finds_our_own_v6_socket)
{
	int	fd = socket(AF_INET6, SOCK_STREAM, 0);

	if (fd == -1)
		cr_skip_test("no IPv6 here");
	close(fd);
	lookup_both_ways(AF_INET6);
}
