/*
 * test_gate.c -- the security gate of DESIGN section 6 as a truth table,
 * plus CSRF and the Host allowlist.  Each row is one request; a row that
 * allows what it should deny is a hole, so every branch of gate_check has
 * rows on both sides.
 */
#include <criterion/criterion.h>

#include <string.h>

#include "contract.h"
#include "gate.h"

struct row {
	const char		*name;
	/* configuration */
	const char		*allow_remote;
	const char		*trust;
	const char		*cidrs;
	/* request */
	const char		*user;
	const char		*addr;
	const char		*xff;
	const char		*real_ip;
	/* expected */
	enum gate_verdict	 want;
	const char		*client;	/* NULL: not checked */
};

#define A	GATE_ALLOW_LOCAL
#define D	GATE_DENY_PUBLIC

static const struct row rows[] = {
	/* identity and configuration */
	{ "user allows any peer", NULL, NULL, NULL, "alice", "8.8.8.8", NULL,
	    NULL, GATE_ALLOW_USER, "8.8.8.8" },
	{ "user allows with hostile xff", NULL, NULL, NULL, "alice",
	    "8.8.8.8", "garbage", "x", GATE_ALLOW_USER, NULL },
	{ "user allows without peer", NULL, NULL, NULL, "alice", NULL, NULL,
	    NULL, GATE_ALLOW_USER, "" },
	{ "empty user is no user", NULL, NULL, NULL, "", "8.8.8.8", NULL,
	    NULL, D, NULL },
	{ "allow_remote allows public", "1", NULL, NULL, NULL, "8.8.8.8",
	    NULL, NULL, GATE_ALLOW_REMOTE, NULL },
	{ "allow_remote needs exactly 1", "yes", NULL, NULL, NULL, "8.8.8.8",
	    NULL, NULL, D, NULL },
	{ "allow_remote=0", "0", NULL, NULL, NULL, "8.8.8.8", NULL, NULL, D,
	    NULL },

	/* the raw peer alone */
	{ "no peer denied", NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	    GATE_DENY_NO_PEER, "" },
	{ "unix peer denied", NULL, NULL, NULL, NULL, "unix:", NULL, NULL,
	    GATE_DENY_NO_PEER, NULL },
	{ "garbage peer denied", NULL, NULL, NULL, NULL, "1.2.3", NULL, NULL,
	    GATE_DENY_NO_PEER, NULL },
	{ "loopback v4", NULL, NULL, NULL, NULL, "127.0.0.1", NULL, NULL, A,
	    "127.0.0.1" },
	{ "loopback 127/8", NULL, NULL, NULL, NULL, "127.8.9.10", NULL, NULL,
	    A, NULL },
	{ "loopback v6", NULL, NULL, NULL, NULL, "::1", NULL, NULL, A,
	    "::1" },
	{ "mapped loopback", NULL, NULL, NULL, NULL, "::ffff:127.0.0.1",
	    NULL, NULL, A, "127.0.0.1" },
	{ "10/8", NULL, NULL, NULL, NULL, "10.1.2.3", NULL, NULL, A, NULL },
	{ "172.16/12 low", NULL, NULL, NULL, NULL, "172.16.0.1", NULL, NULL,
	    A, NULL },
	{ "172.16/12 high", NULL, NULL, NULL, NULL, "172.31.255.255", NULL,
	    NULL, A, NULL },
	{ "172.32 is public", NULL, NULL, NULL, NULL, "172.32.0.1", NULL,
	    NULL, D, NULL },
	{ "172.15 is public", NULL, NULL, NULL, NULL, "172.15.255.255", NULL,
	    NULL, D, NULL },
	{ "192.168/16", NULL, NULL, NULL, NULL, "192.168.7.7", NULL, NULL, A,
	    NULL },
	{ "192.169 is public", NULL, NULL, NULL, NULL, "192.169.0.1", NULL,
	    NULL, D, NULL },
	{ "169.254/16", NULL, NULL, NULL, NULL, "169.254.1.1", NULL, NULL, A,
	    NULL },
	{ "100.64/10 is not private", NULL, NULL, NULL, NULL, "100.64.0.1",
	    NULL, NULL, D, NULL },
	{ "100.127 is not private", NULL, NULL, NULL, NULL, "100.127.1.1",
	    NULL, NULL, D, NULL },
	{ "fc00::/7 (fd)", NULL, NULL, NULL, NULL, "fd12::1", NULL, NULL, A,
	    NULL },
	{ "fc00::/7 (fc)", NULL, NULL, NULL, NULL, "fc00::5", NULL, NULL, A,
	    NULL },
	{ "fe80::/10", NULL, NULL, NULL, NULL, "fe80::1", NULL, NULL, A,
	    NULL },
	{ "febf is fe80::/10", NULL, NULL, NULL, NULL, "febf::1", NULL, NULL,
	    A, NULL },
	{ "fec0 is public", NULL, NULL, NULL, NULL, "fec0::1", NULL, NULL, D,
	    NULL },
	{ "global v6 public", NULL, NULL, NULL, NULL, "2001:db8::1", NULL,
	    NULL, D, NULL },
	{ "mapped private", NULL, NULL, NULL, NULL, "::ffff:10.0.0.1", NULL,
	    NULL, A, "10.0.0.1" },
	{ "mapped public", NULL, NULL, NULL, NULL, "::ffff:8.8.8.8", NULL,
	    NULL, D, "8.8.8.8" },
	{ "public v4", NULL, NULL, NULL, NULL, "8.8.8.8", NULL, NULL, D,
	    NULL },
	{ "0.0.0.0 public", NULL, NULL, NULL, NULL, "0.0.0.0", NULL, NULL, D,
	    NULL },

	/* forwarded headers without trust */
	{ "loopback peer with xff still local", NULL, NULL, NULL, NULL,
	    "127.0.0.1", "8.8.8.8", NULL, A, "127.0.0.1" },
	{ "private peer with xff denied", NULL, NULL, NULL, NULL, "10.0.0.2",
	    "10.0.0.3", NULL, GATE_DENY_FORWARDED, NULL },
	{ "private peer with x-real-ip denied", NULL, NULL, NULL, NULL,
	    "10.0.0.2", NULL, "10.0.0.3", GATE_DENY_FORWARDED, NULL },
	{ "private peer with empty xff denied", NULL, NULL, NULL, NULL,
	    "192.168.1.1", "", NULL, GATE_DENY_FORWARDED, NULL },
	{ "trust without trusted peer: xff denied", NULL, "1", NULL, NULL,
	    "10.0.0.2", "10.0.0.3", NULL, GATE_DENY_FORWARDED, NULL },
	{ "trust needs exactly 1", NULL, "true", NULL, NULL, "127.0.0.1",
	    "8.8.8.8", NULL, A, "127.0.0.1" },

	/* trusted proxy: walk X-Forwarded-For */
	{ "trusted loopback, public client", NULL, "1", NULL, NULL,
	    "127.0.0.1", "8.8.8.8", NULL, D, "8.8.8.8" },
	{ "trusted loopback, private client", NULL, "1", NULL, NULL,
	    "127.0.0.1", "192.168.1.5", NULL, A, "192.168.1.5" },
	{ "trusted, no header: peer", NULL, "1", NULL, NULL, "127.0.0.1",
	    NULL, NULL, A, "127.0.0.1" },
	{ "rightmost untrusted wins", NULL, "1", NULL, NULL, "127.0.0.1",
	    "10.0.0.9, 8.8.8.8", NULL, D, "8.8.8.8" },
	{ "spoofed left hop ignored", NULL, "1", NULL, NULL, "127.0.0.1",
	    "8.8.8.8, 10.0.0.9", NULL, A, "10.0.0.9" },
	{ "trusted hops skipped", NULL, "1", "203.0.113.0/24", NULL,
	    "127.0.0.1", "8.8.8.8, 203.0.113.7, 127.0.0.1", NULL, D,
	    "8.8.8.8" },
	{ "trusted hops skipped to private", NULL, "1", "203.0.113.0/24",
	    NULL, "203.0.113.1", "192.168.0.4,203.0.113.7", NULL, A,
	    "192.168.0.4" },
	{ "all hops trusted: leftmost", NULL, "1", NULL, NULL, "127.0.0.1",
	    "127.0.0.2, ::1", NULL, A, "127.0.0.2" },
	{ "cidr peer trusted", NULL, "1", "198.51.100.0/24", NULL,
	    "198.51.100.20", "10.1.1.1", NULL, A, "10.1.1.1" },
	{ "cidr peer, public client", NULL, "1", "198.51.100.0/24", NULL,
	    "198.51.100.20", "8.8.4.4", NULL, D, NULL },
	{ "peer outside cidr not trusted", NULL, "1", "198.51.100.0/24",
	    NULL, "198.51.101.20", "10.1.1.1", NULL, GATE_DENY_FORWARDED,
	    NULL },
	{ "v6 cidr", NULL, "1", "2001:db8::/32", NULL, "2001:db8::5",
	    "fd00::7", NULL, A, "fd00::7" },
	{ "mapped peer matches v4 cidr", NULL, "1", "198.51.100.0/24", NULL,
	    "::ffff:198.51.100.3", "10.0.0.1", NULL, A, NULL },
	{ "mapped hop normalised", NULL, "1", NULL, NULL, "127.0.0.1",
	    "::ffff:8.8.8.8", NULL, D, "8.8.8.8" },
	{ "bracketed v6 hop", NULL, "1", NULL, NULL, "::1", "[fd00::1]",
	    NULL, A, "fd00::1" },
	{ "blank hop denies", NULL, "1", NULL, NULL, "127.0.0.1",
	    "10.0.0.1, , 10.0.0.2", NULL, GATE_DENY_BAD_HOP, NULL },
	{ "empty header denies", NULL, "1", NULL, NULL, "127.0.0.1", "",
	    NULL, GATE_DENY_BAD_HOP, NULL },
	{ "trailing comma denies", NULL, "1", NULL, NULL, "127.0.0.1",
	    "10.0.0.1,", NULL, GATE_DENY_BAD_HOP, NULL },
	{ "hostname hop denies", NULL, "1", NULL, NULL, "127.0.0.1",
	    "localhost", NULL, GATE_DENY_BAD_HOP, NULL },
	{ "bad hop left of the client denies too", NULL, "1", NULL, NULL,
	    "127.0.0.1", "unknown, 10.0.0.1", NULL, GATE_DENY_BAD_HOP, NULL },
	{ "bad hop right of client denies", NULL, "1", NULL, NULL,
	    "127.0.0.1", "10.0.0.1, unknown", NULL, GATE_DENY_BAD_HOP, NULL },
	{ "hop with port denies", NULL, "1", NULL, NULL, "127.0.0.1",
	    "10.0.0.1:5555", NULL, GATE_DENY_BAD_HOP, NULL },
	{ "hop with zone denies", NULL, "1", NULL, NULL, "127.0.0.1",
	    "fe80::1%eth0", NULL, GATE_DENY_BAD_HOP, NULL },
	{ "garbage hop denies", NULL, "1", NULL, NULL, "127.0.0.1",
	    "10.0.0.1 10.0.0.2", NULL, GATE_DENY_BAD_HOP, NULL },
	{ "tabs trimmed", NULL, "1", NULL, NULL, "127.0.0.1",
	    "\t10.0.0.1\t", NULL, A, "10.0.0.1" },
	{ "x-real-ip used when trusted", NULL, "1", NULL, NULL, "127.0.0.1",
	    NULL, "10.2.3.4", A, "10.2.3.4" },
	{ "x-real-ip public denied", NULL, "1", NULL, NULL, "127.0.0.1",
	    NULL, "8.8.8.8", D, "8.8.8.8" },
	{ "x-real-ip malformed denied", NULL, "1", NULL, NULL, "127.0.0.1",
	    NULL, "nope", GATE_DENY_BAD_HOP, NULL },
	{ "xff preferred over x-real-ip", NULL, "1", NULL, NULL, "127.0.0.1",
	    "8.8.8.8", "10.0.0.1", D, "8.8.8.8" },
	{ "100.64 client via proxy denied", NULL, "1", NULL, NULL,
	    "127.0.0.1", "100.100.100.100", NULL, D, NULL },
};

/* One decision under front authentication and the address rule (the
 * seed's table), against want, and client unless that is NULL. */
static void
expect_verdict(const char *name, const char *allow_remote, const char *trust,
    const char *cidrs, const struct gate_req *r, enum gate_verdict want,
    const char *want_client)
{
	struct gate_conf  conf;
	const char	 *cause;
	char		  client[64];
	enum gate_verdict v;

	cr_assert_eq(gate_conf_load(&conf, allow_remote, trust, cidrs, NULL,
			 &cause),
	    0, "%s: conf", name);
	cr_assert_eq(gate_conf_mode(&conf, "front", "address", &cause), 0);
	v = gate_check(&conf, r, client, sizeof(client));
	cr_expect_eq(v, want, "%s: got %d, want %d", name, v, want);
	cr_expect_eq(gate_allowed(v), gate_allowed(want), "%s", name);
	if (want_client != NULL)
		cr_expect_str_eq(client, want_client, "%s: client %s", name,
		    client);
	gate_conf_free(&conf);
}

Test(gate, truth_table)
{
	struct gate_req r;
	size_t		i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *w = &rows[i];

		r.remote_user = w->user;
		r.remote_addr = w->addr;
		r.forwarded_for = w->xff;
		r.real_ip = w->real_ip;
		r.forwarded = NULL;
		r.via = NULL;
		expect_verdict(w->name, w->allow_remote, w->trust, w->cidrs, &r,
		    w->want, w->client);
	}
}

/*
 * Forwarded (RFC 7239) and Via are signs of a proxy: a proxy we do not
 * trust that sends one may be hiding a remote client, and one we trust
 * that names its client only there (or not at all) names someone we cannot
 * read (before, the client was taken to be the proxy: local).  Beside
 * X-Forwarded-For or X-Real-IP, Forwarded must name the same client: a
 * proxy that writes only Forwarded passes on the client's own
 * X-Forwarded-For (before, "xff 192.168.1.5" with "for=203.0.113.9" was
 * let in with local = address).
 */
struct fwd_row {
	const char	 *name;
	const char	 *trust, *cidrs;
	const char	 *addr, *xff, *real_ip, *forwarded, *via;
	enum gate_verdict want;
	const char	 *client; /* NULL: not checked */
};

#define BH GATE_DENY_BAD_HOP

static const struct fwd_row fwd_rows[] = {
	{ "private peer with forwarded denied", NULL, NULL, "10.0.0.2", NULL,
	    NULL, "for=10.0.0.3", NULL, GATE_DENY_FORWARDED, NULL },
	{ "private peer with a repeated forwarded denied", NULL, NULL,
	    "10.0.0.2", NULL, NULL, "", NULL, GATE_DENY_FORWARDED, NULL },
	{ "loopback peer with forwarded still local", NULL, NULL, "127.0.0.1",
	    NULL, NULL, "for=8.8.8.8", NULL, A, "127.0.0.1" },
	{ "trusted proxy naming its client only in forwarded", "1", NULL,
	    "127.0.0.1", NULL, NULL, "for=192.168.1.5", NULL, BH, NULL },
	{ "trusted cidr proxy, forwarded only", "1", "10.0.0.0/8", "10.0.0.5",
	    NULL, NULL, "for=203.0.113.9", NULL, BH, NULL },
	{ "trusted proxy, no header: the proxy", "1", "10.0.0.0/8", "10.0.0.5",
	    NULL, NULL, NULL, NULL, A, "10.0.0.5" },
	{ "private peer with via denied", NULL, NULL, "10.0.0.2", NULL, NULL,
	    NULL, "1.1 squid", GATE_DENY_FORWARDED, NULL },
	{ "trusted proxy naming no client, via only", "1", NULL, "127.0.0.1",
	    NULL, NULL, NULL, "1.1 varnish", BH, NULL },
	{ "xff read, via beside it ignored", "1", NULL, "127.0.0.1",
	    "192.168.1.5", NULL, NULL, "1.1 varnish", A, "192.168.1.5" },

	/* the client's own X-Forwarded-For, the proxy's Forwarded */
	{ "forwarded names another client than xff", "1", NULL, "127.0.0.1",
	    "192.168.1.5", NULL, "for=203.0.113.9", NULL, BH, NULL },
	{ "forwarded names another client than x-real-ip", "1", NULL,
	    "127.0.0.1", NULL, "192.168.1.5", "for=203.0.113.9", NULL, BH,
	    NULL },
	{ "forwarded agrees with xff", "1", NULL, "127.0.0.1", "192.168.1.5",
	    NULL, "for=192.168.1.5", NULL, A, "192.168.1.5" },
	{ "forwarded agrees with x-real-ip", "1", NULL, "127.0.0.1", NULL,
	    "192.168.1.5", "For=192.168.1.5", NULL, A, "192.168.1.5" },
	{ "both appended to: the client's own lines lose", "1", NULL,
	    "127.0.0.1", "192.168.1.5, 203.0.113.9", NULL,
	    "for=192.168.1.5, for=203.0.113.9;proto=https", NULL,
	    GATE_DENY_PUBLIC, "203.0.113.9" },
	{ "trusted hops skipped in both", "1", "10.0.0.0/8", "10.0.0.1",
	    "192.168.1.5, 10.0.0.7", NULL,
	    "for=192.168.1.5;by=10.0.0.7, for=10.0.0.7", NULL, A,
	    "192.168.1.5" },
	{ "an inner proxy that adds only xff", "1", "10.0.0.0/8", "10.0.0.1",
	    "192.168.1.5, 10.0.0.7", NULL, "for=10.0.0.7", NULL, A,
	    "192.168.1.5" },
	{ "quoted v6 with port agrees", "1", NULL, "::1", "fd00::7", NULL,
	    "for=\"[fd00::7]:4711\"", NULL, A, "fd00::7" },
	{ "quoted v4 with port agrees", "1", NULL, "127.0.0.1", "192.168.1.5",
	    NULL, "for=\"192.168.1.5:80\"", NULL, A, "192.168.1.5" },
	{ "escapes in a quoted value undone", "1", NULL, "127.0.0.1",
	    "192.168.1.5", NULL, "for=\"192.168.1.\\5\"", NULL, A,
	    "192.168.1.5" },
	{ "mapped and plain v4 are one address", "1", NULL, "127.0.0.1",
	    "192.168.1.5", NULL, "for=\"[::ffff:192.168.1.5]\"", NULL, A,
	    "192.168.1.5" },
	{ "no for=: nothing to check", "1", NULL, "127.0.0.1", "192.168.1.5",
	    NULL, "proto=https;host=example.com", NULL, A, "192.168.1.5" },
	{ "empty elements and pairs passed over", "1", NULL, "127.0.0.1",
	    "192.168.1.5", NULL, " , for=192.168.1.5;;proto=http ,", NULL, A,
	    "192.168.1.5" },
	{ "client unknown: cannot check", "1", NULL, "127.0.0.1", "192.168.1.5",
	    NULL, "for=unknown", NULL, BH, NULL },
	{ "client obfuscated: cannot check", "1", NULL, "127.0.0.1",
	    "192.168.1.5", NULL, "for=_hidden", NULL, BH, NULL },
	{ "unknown left of the client is no matter", "1", NULL, "127.0.0.1",
	    "192.168.1.5", NULL, "for=unknown, for=192.168.1.5", NULL, A,
	    "192.168.1.5" },
	{ "obfuscated port is a port", "1", NULL, "127.0.0.1", "192.168.1.5",
	    NULL, "for=\"192.168.1.5:_p1\"", NULL, A, "192.168.1.5" },
	{ "repeated forwarded denies", "1", NULL, "127.0.0.1", "192.168.1.5",
	    NULL, "", NULL, BH, NULL },
	{ "blank forwarded denies", "1", NULL, "127.0.0.1", "192.168.1.5", NULL,
	    " ", NULL, BH, NULL },
	{ "two for= in one element deny", "1", NULL, "127.0.0.1", "192.168.1.5",
	    NULL, "for=192.168.1.5;for=192.168.1.5", NULL, BH, NULL },
	{ "bare v6 denies", "1", NULL, "::1", "fd00::7", NULL, "for=fd00::7",
	    NULL, BH, NULL },
	/* Written without the quotes RFC 7239 asks for, as proxies do. */
	{ "bare port agrees", "1", NULL, "127.0.0.1", "192.168.1.5", NULL,
	    "for=192.168.1.5:4711", NULL, A, "192.168.1.5" },
	{ "bare bracketed v6 agrees", "1", NULL, "::1", "fd00::7", NULL,
	    "for=[fd00::7]", NULL, A, "fd00::7" },
	{ "bare host with port passes", "1", NULL, "127.0.0.1", "192.168.1.5",
	    NULL, "for=192.168.1.5;host=example.com:8080", NULL, A,
	    "192.168.1.5" },
	{ "bare port, another client", "1", NULL, "127.0.0.1", "192.168.1.5",
	    NULL, "for=203.0.113.9:4711", NULL, BH, NULL },
	/* The client's line opens a quote that the proxy's element would
	 * close: never a value, always malformed. */
	{ "a quote opened by the client's line", "1", NULL, "127.0.0.1",
	    "192.168.1.5", NULL,
	    "for=192.168.1.5;x=\", for=\"203.0.113.9:1\";proto=http", NULL, BH,
	    NULL },
	{ "a port past 65535 denies", "1", NULL, "127.0.0.1", "192.168.1.5",
	    NULL, "for=\"192.168.1.5:65536\"", NULL, BH, NULL },
	{ "unterminated quote denies", "1", NULL, "127.0.0.1", "192.168.1.5",
	    NULL, "for=\"192.168.1.5", NULL, BH, NULL },
	{ "hostname denies", "1", NULL, "127.0.0.1", "192.168.1.5", NULL,
	    "for=localhost", NULL, BH, NULL },
	{ "garbage after a value denies", "1", NULL, "127.0.0.1", "192.168.1.5",
	    NULL, "for=192.168.1.5 x", NULL, BH, NULL },
	{ "a pair without a value denies", "1", NULL, "127.0.0.1",
	    "192.168.1.5", NULL, "for=192.168.1.5;proto", NULL, BH, NULL },
	{ "a bad port denies", "1", NULL, "127.0.0.1", "192.168.1.5", NULL,
	    "for=\"192.168.1.5:123456\"", NULL, BH, NULL },
	{ "a control byte in quotes denies", "1", NULL, "127.0.0.1",
	    "192.168.1.5", NULL, "for=\"192.168.1.5\x01\"", NULL, BH, NULL },
};

Test(gate, forwarded_and_via_are_signs_of_a_proxy)
{
	struct gate_req r;
	size_t		i;

	for (i = 0; i < sizeof(fwd_rows) / sizeof(fwd_rows[0]); i++) {
		const struct fwd_row *w = &fwd_rows[i];

		r.remote_user = NULL;
		r.remote_addr = w->addr;
		r.forwarded_for = w->xff;
		r.real_ip = w->real_ip;
		r.forwarded = w->forwarded;
		r.via = w->via;
		expect_verdict(w->name, NULL, w->trust, w->cidrs, &r, w->want,
		    w->client);
	}
}

/*
 * The defaults: PTYD_AUTH=none, PTYD_LOCAL=account.  Regression: a client
 * that sent "Authorization: Basic bWFsbG9yeTp4" to a location without
 * auth_basic got a shell as "mallory", because nginx's $remote_user parses
 * that header whether or not anything checked it; and every local Unix
 * account counted as local.
 */
struct mode_row {
	const char		*name;
	const char		*auth, *local, *allow_remote, *trust;
	const char		*user, *addr, *xff, *real_ip;
	enum gate_verdict	 want;
};

#define U	GATE_LOCAL_UNVERIFIED
#define UV	GATE_DENY_UNVERIFIABLE

static const struct mode_row mode_rows[] = {
	{ "forged user from public peer", NULL, NULL, NULL, NULL, "mallory",
	    "8.8.8.8", NULL, NULL, D },
	{ "forged user from loopback is still only local", NULL, NULL, NULL,
	    NULL, "mallory", "127.0.0.1", NULL, NULL, U },
	{ "forged user behind trusted proxy, public client", NULL, NULL, NULL,
	    "1", "mallory", "127.0.0.1", "203.0.113.5", NULL, D },
	{ "auth=none spelled out", "none", NULL, NULL, NULL, "mallory",
	    "8.8.8.8", NULL, NULL, D },
	{ "front auth believes the user", "front", NULL, NULL, NULL, "alice",
	    "8.8.8.8", NULL, NULL, GATE_ALLOW_USER },
	{ "front auth, empty user falls to the local rule", "front", NULL,
	    NULL, NULL, "", "127.0.0.1", NULL, NULL, U },
	{ "front auth, empty user, public", "front", NULL, NULL, NULL, "",
	    "8.8.8.8", NULL, NULL, D },
	{ "loopback must be verified", NULL, NULL, NULL, NULL, NULL,
	    "127.0.0.1", NULL, NULL, U },
	{ "v6 loopback must be verified", NULL, "account", NULL, NULL, NULL,
	    "::1", NULL, NULL, U },
	{ "private peer must be verified", NULL, NULL, NULL, NULL, NULL,
	    "10.1.2.3", NULL, NULL, U },
	{ "public peer denied", NULL, NULL, NULL, NULL, NULL, "8.8.8.8",
	    NULL, NULL, D },
	{ "untrusted xff on loopback ignored, peer verified", NULL, NULL,
	    NULL, NULL, NULL, "127.0.0.1", "10.0.0.5", NULL, U },
	{ "untrusted x-real-ip on loopback ignored, peer verified", NULL,
	    NULL, NULL, NULL, NULL, "127.0.0.1", NULL, "8.8.8.8", U },
	{ "trusted proxy, private client: unverifiable", NULL, NULL, NULL,
	    "1", NULL, "127.0.0.1", "10.0.0.5", NULL, UV },
	{ "trusted proxy, loopback client: unverifiable", NULL, NULL, NULL,
	    "1", NULL, "127.0.0.1", "127.0.0.1", NULL, UV },
	{ "trusted proxy, public client", NULL, NULL, NULL, "1", NULL,
	    "127.0.0.1", "203.0.113.5", NULL, D },
	{ "trusted proxy without header: its own socket", NULL, NULL, NULL,
	    "1", NULL, "127.0.0.1", NULL, NULL, U },
	{ "untrusted private proxy with xff", NULL, NULL, NULL, NULL, NULL,
	    "10.0.0.2", "10.0.0.3", NULL, GATE_DENY_FORWARDED },
	{ "allow_remote still allows", NULL, NULL, "1", NULL, NULL,
	    "8.8.8.8", NULL, NULL, GATE_ALLOW_REMOTE },
	{ "address mode: loopback local", NULL, "address", NULL, NULL, NULL,
	    "127.0.0.1", NULL, NULL, A },
	{ "address mode: forged user still ignored", NULL, "address", NULL,
	    NULL, "mallory", "8.8.8.8", NULL, NULL, D },
};

Test(gate, modes_truth_table)
{
	struct gate_conf	 conf;
	struct gate_req		 r;
	const char		*cause;
	char			 client[64];
	enum gate_verdict	 v;
	size_t			 i;

	for (i = 0; i < sizeof(mode_rows) / sizeof(mode_rows[0]); i++) {
		const struct mode_row *w = &mode_rows[i];

		cr_assert_eq(gate_conf_load(&conf, w->allow_remote, w->trust,
		    NULL, NULL, &cause), 0, "%s: conf", w->name);
		cr_assert_eq(gate_conf_mode(&conf, w->auth, w->local, &cause),
		    0, "%s: mode", w->name);
		r.remote_user = w->user;
		r.remote_addr = w->addr;
		r.forwarded_for = w->xff;
		r.real_ip = w->real_ip;
		r.forwarded = NULL;
		r.via = NULL;
		v = gate_check(&conf, &r, client, sizeof(client));
		cr_expect_eq(v, w->want, "%s: got %d, want %d", w->name, v,
		    w->want);
		gate_conf_free(&conf);
	}
	/* A caller that forgets the uid check fails closed. */
	cr_expect_not(gate_allowed(GATE_LOCAL_UNVERIFIED));
	cr_expect_not(gate_allowed(GATE_DENY_UNVERIFIABLE));
	cr_expect_not(gate_allowed(GATE_DENY_OTHER_ACCOUNT));
}

Test(gate, unknown_modes_are_refused_at_start)
{
	struct gate_conf	 conf;
	const char		*cause = NULL;

	memset(&conf, 0, sizeof(conf));
	cr_expect_eq(gate_conf_mode(&conf, "frontend", NULL, &cause), -1);
	cr_expect_not_null(cause);
	cr_expect_eq(gate_conf_mode(&conf, NULL, "any", &cause), -1);
	cr_expect_eq(gate_conf_mode(&conf, "FRONT", NULL, &cause), -1);
	cr_assert_eq(gate_conf_mode(&conf, "", "", &cause), 0);
	cr_expect_eq(conf.auth_front, 0);
	cr_expect_eq(conf.local_account, 1);
}

Test(gate, bad_cidr_list_is_refused_at_start)
{
	struct gate_conf	 conf;
	const char		*cause = NULL;

	cr_expect_eq(gate_conf_load(&conf, NULL, "1", "10.0.0.0/33", NULL,
	    &cause), -1);
	cr_expect_not_null(cause);
	cr_expect_eq(gate_conf_load(&conf, NULL, "1", "bogus", NULL, &cause),
	    -1);
	cr_expect_eq(gate_conf_load(&conf, NULL, "1", "::/129", NULL, &cause),
	    -1);
	cr_expect_eq(gate_conf_load(&conf, NULL, NULL, NULL, "a:b:c", &cause),
	    -1);
	cr_assert_eq(gate_conf_load(&conf, NULL, "1",
	    " 10.0.0.0/8 , fd00::/8,192.0.2.1", NULL, &cause), 0);
	cr_expect_eq(conf.nproxies, 3);
	gate_conf_free(&conf);
}

Test(gate, cidr_host_bits_and_prefix_zero)
{
	struct gate_cidr	c;
	struct gate_ip		ip;

	cr_assert_eq(gate_cidr_parse("10.1.2.3/8", &c), 0);
	cr_assert_eq(gate_ip_parse("10.200.0.1", &ip), 0);
	cr_expect(gate_ip_in(&ip, &c));
	cr_assert_eq(gate_cidr_parse("0.0.0.0/0", &c), 0);
	cr_assert_eq(gate_ip_parse("8.8.8.8", &ip), 0);
	cr_expect(gate_ip_in(&ip, &c));
	/* An IPv4 /0 does not swallow IPv6. */
	cr_assert_eq(gate_ip_parse("2001:db8::1", &ip), 0);
	cr_expect(!gate_ip_in(&ip, &c));
	cr_assert_eq(gate_cidr_parse("192.0.2.9", &c), 0);
	cr_assert_eq(gate_ip_parse("192.0.2.9", &ip), 0);
	cr_expect(gate_ip_in(&ip, &c));
	cr_assert_eq(gate_ip_parse("192.0.2.10", &ip), 0);
	cr_expect(!gate_ip_in(&ip, &c));
}

static struct gate_http
http(const char *host, const char *origin, const char *site)
{
	struct gate_http	h;

	memset(&h, 0, sizeof(h));
	h.host = host;
	h.origin = origin;
	h.fetch_site = site;
	return (h);
}

Test(csrf, origin_must_be_own_origin)
{
	struct gate_http	h;

	h = http("127.0.0.1:8080", NULL, NULL);
	cr_expect(gate_csrf_ok(&h), "no Origin is fine");
	h = http("127.0.0.1:8080", "http://127.0.0.1:8080", NULL);
	cr_expect(gate_csrf_ok(&h));
	h = http("LOCALHOST:8080", "http://localhost:8080", NULL);
	cr_expect(gate_csrf_ok(&h), "host case-insensitive");
	h = http("127.0.0.1:8080", "http://127.0.0.1:8081", NULL);
	cr_expect(!gate_csrf_ok(&h), "other port");
	h = http("127.0.0.1:8080", "http://evil.example:8080", NULL);
	cr_expect(!gate_csrf_ok(&h), "other host");
	h = http("127.0.0.1:8080", "https://127.0.0.1:8080", NULL);
	cr_expect(!gate_csrf_ok(&h), "other scheme");
	h = http("127.0.0.1:8080", "null", NULL);
	cr_expect(!gate_csrf_ok(&h), "null origin");
	h = http("127.0.0.1:8080", "", NULL);
	cr_expect(!gate_csrf_ok(&h), "empty origin");
	h = http("127.0.0.1:8080", "http://127.0.0.1:8080/path", NULL);
	cr_expect(!gate_csrf_ok(&h), "origin with a path");
	h = http("127.0.0.1:8080", "http://user@127.0.0.1:8080", NULL);
	cr_expect(!gate_csrf_ok(&h), "origin with userinfo");
	h = http("127.0.0.1:8080", "ftp://127.0.0.1:8080", NULL);
	cr_expect(!gate_csrf_ok(&h));
}

Test(csrf, default_ports_are_normalised)
{
	struct gate_http	h;

	h = http("example.com", "http://example.com:80", NULL);
	cr_expect(gate_csrf_ok(&h));
	h = http("example.com:80", "http://example.com", NULL);
	cr_expect(gate_csrf_ok(&h));
	h = http("example.com", "http://example.com:8080", NULL);
	cr_expect(!gate_csrf_ok(&h));
	h = http("example.com", "https://example.com", NULL);
	h.scheme = "https";
	cr_expect(gate_csrf_ok(&h));
	h = http("example.com:443", "https://example.com", NULL);
	h.https = "on";
	cr_expect(gate_csrf_ok(&h), "HTTPS=on gives https");
	h = http("example.com", "https://example.com:443", NULL);
	cr_expect(!gate_csrf_ok(&h), "plain http request, https origin");
	h = http("[::1]:8080", "http://[::1]:8080", NULL);
	cr_expect(gate_csrf_ok(&h));
	h = http(NULL, "http://srv:81", NULL);
	h.server_name = "srv";
	h.server_port = "81";
	cr_expect(gate_csrf_ok(&h), "no Host: SERVER_NAME and SERVER_PORT");
}

Test(csrf, sec_fetch_site)
{
	struct gate_http	h;

	h = http("127.0.0.1", NULL, "cross-site");
	cr_expect(!gate_csrf_ok(&h));
	h = http("127.0.0.1", NULL, "same-site");
	cr_expect(!gate_csrf_ok(&h));
	h = http("127.0.0.1", NULL, "Cross-Site");
	cr_expect(!gate_csrf_ok(&h));
	h = http("127.0.0.1", NULL, "same-origin");
	cr_expect(gate_csrf_ok(&h));
	h = http("127.0.0.1", NULL, "none");
	cr_expect(gate_csrf_ok(&h));
	h = http("127.0.0.1", "http://127.0.0.1", "cross-site");
	cr_expect(!gate_csrf_ok(&h), "same Origin does not excuse it");
}

static int
host_ok(const char *list, const char *host)
{
	struct gate_conf	 conf;
	struct gate_http	 h = http(host, NULL, NULL);
	const char		*cause;
	int			 ok;

	cr_assert_eq(gate_conf_load(&conf, NULL, NULL, NULL, list, &cause),
	    0);
	ok = gate_host_ok(&conf, &h);
	gate_conf_free(&conf);
	return (ok);
}

Test(host, default_allowlist)
{
	cr_expect(host_ok(NULL, "localhost"));
	cr_expect(host_ok(NULL, "localhost:8080"));
	cr_expect(host_ok(NULL, "LocalHost:8080"));
	cr_expect(host_ok(NULL, "127.0.0.1:18100"));
	cr_expect(host_ok(NULL, "[::1]:8080"));
	cr_expect(host_ok(NULL, "localhost."));
	cr_expect(!host_ok(NULL, "evil.example"));
	cr_expect(!host_ok(NULL, "localhost.evil.example"));
	cr_expect(!host_ok(NULL, "127.0.0.2"));
	cr_expect(!host_ok(NULL, NULL), "no Host");
	cr_expect(!host_ok(NULL, ""));
	cr_expect(!host_ok(NULL, "localhost:"));
	cr_expect(!host_ok(NULL, "localhost:99999"));
	cr_expect(!host_ok(NULL, "localhost:80x"));
	cr_expect(!host_ok(NULL, "::1"), "bare IPv6 is malformed");
	cr_expect(!host_ok(NULL, "user@localhost"));
}

Test(host, entries_with_ports_pin_the_port)
{
	cr_expect(host_ok("term.example:8443, localhost", "term.example:8443"));
	cr_expect(!host_ok("term.example:8443", "term.example:8444"));
	cr_expect(!host_ok("term.example:8443", "term.example"));
	cr_expect(host_ok("term.example:80", "term.example"),
	    "no port is the scheme's default");
	cr_expect(host_ok("term.example", "term.example:1234"));
	cr_expect(!host_ok("term.example", "localhost"),
	    "a list replaces the default");
	cr_expect(host_ok("[::1]:8080", "[::1]:8080"));
	cr_expect(!host_ok("[::1]:8080", "[::1]:8081"));
}

Test(gate, deny_message_explains_configuration)
{
	const char *m = contract_answer(CONTRACT_A_GATE)->message;

	cr_expect(strstr(m, "REMOTE_USER") != NULL);
	cr_expect(strstr(m, "PTYD_ALLOW_REMOTE") != NULL);
}

/* The metrics are the operator's (issue 29): by default this host's own
 * clients with no web user; a web user only if named; "none" nobody. */
static int
metrics_ok(const char *allow, const char *users, const char *client,
    const char *user)
{
	struct gate_conf conf;
	const char	*cause = NULL;
	int		 ok;

	cr_assert_eq(gate_conf_load(&conf, NULL, NULL, NULL, NULL, &cause), 0);
	cr_assert_eq(gate_conf_metrics(&conf, allow, users, &cause), 0, "%s",
	    cause);
	ok = gate_metrics_ok(&conf, client, user);
	gate_conf_free(&conf);
	return (ok);
}

Test(gate, metrics_are_the_operators)
{
	struct gate_conf conf;
	const char	*cause = NULL;

	cr_expect(metrics_ok(NULL, NULL, "127.0.0.1", ""));
	cr_expect(metrics_ok(NULL, NULL, "::1", ""));
	cr_expect(!metrics_ok(NULL, NULL, "192.168.1.9", ""));
	cr_expect(!metrics_ok(NULL, NULL, "127.0.0.1", "alice"),
	    "an authenticated web user is not the operator");
	cr_expect(metrics_ok(NULL, "prom, alice", "127.0.0.1", "alice"));
	cr_expect(!metrics_ok(NULL, "prom, alice", "127.0.0.1", "ali"));
	cr_expect(!metrics_ok(NULL, "prom, alice", "127.0.0.1", "alice,"));
	cr_expect(!metrics_ok(NULL, "prom", "203.0.113.5", "prom"),
	    "the address counts for users too");
	cr_expect(metrics_ok("10.0.0.0/8", NULL, "10.1.2.3", ""));
	cr_expect(!metrics_ok("10.0.0.0/8", NULL, "127.0.0.1", ""));
	cr_expect(!metrics_ok("none", NULL, "127.0.0.1", ""));
	cr_expect(!metrics_ok(NULL, NULL, "not an address", ""));
	cr_assert_eq(gate_conf_load(&conf, NULL, NULL, NULL, NULL, &cause), 0);
	cr_expect_eq(gate_conf_metrics(&conf, "10.0.0.0/40", NULL, &cause), -1);
	cr_expect(strstr(cause, "PTYD_METRICS_ALLOW") != NULL);
	gate_conf_free(&conf);
}
