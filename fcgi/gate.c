/*
 * gate.c -- the security gate, CSRF and Host checks (gate.h).
 *
 * Owns: every decision of DESIGN section 6 that depends on addresses and
 * headers.  Does not own: ownership of terminals (ptyd keys them by owner).
 * Fails closed: anything that does not parse denies.
 */
#include <arpa/inet.h>

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gate.h"

static const uint8_t gate_v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff,
	0xff };

static int
gate_is_v4(const struct gate_ip *ip)
{
	return (memcmp(ip->a, gate_v4mapped, sizeof(gate_v4mapped)) == 0);
}

int
gate_ip_parse(const char *s, struct gate_ip *ip)
{
	char   tmp[INET6_ADDRSTRLEN + 2];
	size_t len;

	len = strlen(s);
	if (len == 0 || len >= sizeof(tmp))
		return (-1);
	if (s[0] == '[') {
		if (len < 3 || s[len - 1] != ']')
			return (-1);
		memcpy(tmp, s + 1, len - 2);
		tmp[len - 2] = '\0';
		if (inet_pton(AF_INET6, tmp, ip->a) != 1)
			return (-1);
		return (0);
	}
	if (inet_pton(AF_INET, s, ip->a + 12) == 1) {
		memcpy(ip->a, gate_v4mapped, sizeof(gate_v4mapped));
		return (0);
	}
	/* IPv4-mapped IPv6 (::ffff:a.b.c.d) lands in the same form. */
	if (inet_pton(AF_INET6, s, ip->a) == 1)
		return (0);
	return (-1);
}

int
gate_cidr_parse(const char *s, struct gate_cidr *c)
{
	char	      tmp[INET6_ADDRSTRLEN + 8], *slash, *end;
	unsigned long bits;
	unsigned int  max, i;

	if (strlen(s) >= sizeof(tmp))
		return (-1);
	strcpy(tmp, s);
	if ((slash = strchr(tmp, '/')) != NULL)
		*slash++ = '\0';
	if (gate_ip_parse(tmp, &c->net) == -1)
		return (-1);
	max = gate_is_v4(&c->net) && strchr(tmp, ':') == NULL ? 32 : 128;
	if (slash == NULL)
		bits = max;
	else {
		if (!isdigit((unsigned char)slash[0]))
			return (-1);
		errno = 0;
		bits = strtoul(slash, &end, 10);
		if (errno != 0 || *end != '\0' || bits > max)
			return (-1);
	}
	c->bits = (unsigned int)bits + (max == 32 ? 96 : 0);
	/* Clear host bits so that gate_ip_in compares prefixes only. */
	for (i = c->bits; i < 128; i++)
		c->net.a[i / 8] &= (uint8_t) ~(0x80u >> (i % 8));
	return (0);
}

int
gate_ip_in(const struct gate_ip *ip, const struct gate_cidr *c)
{
	unsigned int full = c->bits / 8, rest = c->bits % 8;
	uint8_t	     mask;

	if (memcmp(ip->a, c->net.a, full) != 0)
		return (0);
	if (rest == 0)
		return (1);
	mask = (uint8_t)(0xff00u >> rest);
	return ((ip->a[full] & mask) == c->net.a[full]);
}

static int
gate_in_list(const struct gate_ip *ip, const char *const *list, size_t n)
{
	struct gate_cidr c;
	size_t		 i;

	for (i = 0; i < n; i++)
		if (gate_cidr_parse(list[i], &c) == 0 && gate_ip_in(ip, &c))
			return (1);
	return (0);
}

int
gate_ip_loopback(const struct gate_ip *ip)
{
	static const char *const lo[] = { "127.0.0.0/8", "::1/128" };

	return (gate_in_list(ip, lo, sizeof(lo) / sizeof(lo[0])));
}

int
gate_ip_private(const struct gate_ip *ip)
{
	/* 100.64.0.0/10 (carrier-grade NAT) is shared space, not private. */
	static const char *const priv[] = {
		"127.0.0.0/8",
		"::1/128",
		"10.0.0.0/8",
		"172.16.0.0/12",
		"192.168.0.0/16",
		"169.254.0.0/16",
		"fc00::/7",
		"fe80::/10",
	};

	return (gate_in_list(ip, priv, sizeof(priv) / sizeof(priv[0])));
}

void
gate_ip_format(const struct gate_ip *ip, char *buf, size_t size)
{
	char tmp[INET6_ADDRSTRLEN];

	if (gate_is_v4(ip))
		inet_ntop(AF_INET, ip->a + 12, tmp, sizeof(tmp));
	else
		inet_ntop(AF_INET6, ip->a, tmp, sizeof(tmp));
	snprintf(buf, size, "%s", tmp);
}

static int
gate_trusted_proxy(const struct gate_conf *conf, const struct gate_ip *ip)
{
	size_t i;

	if (gate_ip_loopback(ip))
		return (1);
	for (i = 0; i < conf->nproxies; i++)
		if (gate_ip_in(ip, &conf->proxies[i]))
			return (1);
	return (0);
}

/* Copy s[0..len) without surrounding blanks into buf.  -1 if too long. */
static int
gate_trim(const char *s, size_t len, char *buf, size_t size)
{
	while (len > 0 && (*s == ' ' || *s == '\t')) {
		s++;
		len--;
	}
	while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	if (len >= size)
		return (-1);
	memcpy(buf, s, len);
	buf[len] = '\0';
	return (0);
}

/*
 * Walk X-Forwarded-For right to left.  Hops added by trusted proxies are
 * skipped; the first untrusted hop is the client.  If every hop is trusted,
 * the leftmost one is.  Every hop must be an address, even those left of
 * the client: a header that does not parse as a whole is not believed.
 * 0 with *client, or -1 on a blank or bad hop.
 */
static int
gate_walk_xff(const struct gate_conf *conf, const char *xff,
    struct gate_ip *client)
{
	char	       hop[INET6_ADDRSTRLEN + 4];
	const char    *end, *start;
	struct gate_ip ip;
	int	       found = 0;

	end = xff + strlen(xff);
	for (;;) {
		start = end;
		while (start > xff && start[-1] != ',')
			start--;
		if (gate_trim(start, (size_t)(end - start), hop, sizeof(hop)) ==
			-1 ||
		    hop[0] == '\0')
			return (-1);
		if (gate_ip_parse(hop, &ip) == -1)
			return (-1);
		if (!found) {
			*client = ip;
			found = !gate_trusted_proxy(conf, &ip);
		}
		if (start == xff)
			break;
		end = start - 1;
	}
	return (0);
}

/* RFC 9110 tchar: what a token (a Forwarded parameter's name or bare
 * value) is made of. */
static int
gate_tchar(int c)
{
	return (isalnum(c) || (c != '\0' && strchr("!#$%&'*+-.^_`|~", c)));
}

/*
 * A byte of a Forwarded value written without quotes.  RFC 7239 asks for a
 * token, but proxies write "host=example.com:8080", "for=[2001:db8::1]"
 * and "for=192.0.2.1:80" bare; any visible byte but the three that end a
 * value or open a quoted one is taken, so elements still end where the
 * strict grammar ends them (at a comma outside quotes).
 */
static int
gate_fwd_bare(int c)
{
	return (c > 0x20 && c < 0x7f && c != '"' && c != ',' && c != ';');
}

/*
 * One Forwarded value at *pp, bare or a quoted-string (escapes undone),
 * into buf when buf is not NULL.  *pp is moved past it.  0, or -1 when it
 * is malformed or does not fit.
 */
static int
gate_fwd_value(const char **pp, char *buf, size_t size)
{
	const unsigned char *p = (const unsigned char *)*pp;
	size_t		     n = 0;
	int		     c;

	if (*p != '"') {
		while (gate_fwd_bare(*p)) {
			if (buf != NULL && n + 1 >= size)
				return (-1);
			if (buf != NULL)
				buf[n] = (char)*p;
			n++;
			p++;
		}
		if (n == 0)
			return (-1);
	} else {
		for (p++; *p != '"'; p++) {
			c = *p;
			if (c == '\\')
				c = *++p;
			/* Only HTAB, SP, visible ASCII and obs-text. */
			if (c == '\0' || (c < 0x20 && c != '\t') || c == 0x7f)
				return (-1);
			if (buf != NULL && n + 1 >= size)
				return (-1);
			if (buf != NULL)
				buf[n] = (char)c;
			n++;
		}
		p++;
	}
	if (buf != NULL)
		buf[n] = '\0';
	*pp = (const char *)p;
	return (0);
}

/* An obfuscated node or port (RFC 7239 6.3): "_" and ALPHA, DIGIT, ".",
 * "_" or "-". */
static int
gate_fwd_obf(const char *s)
{
	if (s[0] != '_' || s[1] == '\0')
		return (0);
	for (s++; *s != '\0'; s++)
		if (!isalnum((unsigned char)*s) && strchr("._-", *s) == NULL)
			return (0);
	return (1);
}

/*
 * A for= node: an address (IPv6 in brackets), with an optional port.
 * 0 with *ip; 1 for "unknown" or an obfuscated name (the node is named,
 * not by an address); -1 when malformed.
 */
static int
gate_fwd_node(char *s, struct gate_ip *ip)
{
	char *port, *end, *d;
	long  v;

	if (s[0] == '[') {
		if ((end = strchr(s, ']')) == NULL)
			return (-1);
		port = end[1] == ':' ? end + 2 : NULL;
		if (port == NULL && end[1] != '\0')
			return (-1);
		end[1] = '\0';
	} else if ((port = strchr(s, ':')) != NULL)
		*port++ = '\0';
	if (port != NULL && !gate_fwd_obf(port)) {
		for (v = 0, d = port; *d != '\0'; d++) {
			if (!isdigit((unsigned char)*d))
				return (-1);
			if ((v = v * 10 + (*d - '0')) > 65535)
				return (-1);
		}
		if (d == port)
			return (-1);
	}
	if (strcasecmp(s, "unknown") == 0 || gate_fwd_obf(s))
		return (1);
	/* No bare IPv6: a colon was taken for the port. */
	if (s[0] != '[' && strchr(s, ':') != NULL)
		return (-1);
	return (gate_ip_parse(s, ip));
}

/* What a walk of Forwarded has seen so far (gate_walk_forwarded). */
struct gate_fwd_walk {
	const struct gate_conf *conf;
	struct gate_ip		client;	 /* the last untrusted node, if named */
	int			pairs;	 /* parameters seen */
	int			named;	 /* client holds it */
	int			unnamed; /* it is "unknown" or obfuscated */
};

/*
 * The parameter at *pp ("name=value", blanks around it skipped; none is an
 * empty one), *pp moved past it.  A for= node counts in w; *have_for says
 * whether the element had one already.  0, or -1 when malformed.
 */
static int
gate_fwd_pair(struct gate_fwd_walk *w, const char **pp, int *have_for)
{
	char	       node[INET6_ADDRSTRLEN + 16];
	const char    *p = *pp;
	struct gate_ip ip;
	size_t	       n;
	int	       rv;

	while (*p == ' ' || *p == '\t')
		p++;
	for (n = 0; gate_tchar((unsigned char)p[n]); n++)
		;
	if (n == 0) {
		*pp = p;
		return (0);
	}
	if (p[n] != '=')
		return (-1);
	w->pairs++;
	if (n != 3 || strncasecmp(p, "for", 3) != 0) {
		p += n + 1;
		if (gate_fwd_value(&p, NULL, 0) == -1)
			return (-1);
	} else {
		/* Once per element (RFC 7239 4). */
		if ((*have_for)++)
			return (-1);
		p += n + 1;
		if (gate_fwd_value(&p, node, sizeof(node)) == -1 ||
		    (rv = gate_fwd_node(node, &ip)) == -1)
			return (-1);
		if (rv == 1) {
			w->unnamed = 1;
		} else if (!gate_trusted_proxy(w->conf, &ip)) {
			w->client = ip;
			w->named = 1;
			w->unnamed = 0;
		}
	}
	while (*p == ' ' || *p == '\t')
		p++;
	*pp = p;
	return (0);
}

/*
 * Walk Forwarded (RFC 7239) as gate_walk_xff walks X-Forwarded-For: the
 * first node from the right that is not a trusted proxy is the client.
 * Elements without for= name no hop and are passed over.  The header must
 * parse as a whole.  0 with *client; 1 when it names no such node (no
 * for=, or only trusted proxies); -1 when it is malformed or its client
 * has no address ("unknown", obfuscated): nothing to check against.  A
 * header with no parameter at all is malformed: "" is also what
 * req_param_once gives for one that came twice.
 */
static int
gate_walk_forwarded(const struct gate_conf *conf, const char *fwd,
    struct gate_ip *client)
{
	struct gate_fwd_walk w;
	const char	    *p = fwd;
	int		     have_for;

	memset(&w, 0, sizeof(w));
	w.conf = conf;
	for (;;) {
		/* One element: parameters separated by ';'. */
		have_for = 0;
		for (;;) {
			if (gate_fwd_pair(&w, &p, &have_for) == -1)
				return (-1);
			if (*p != ';')
				break;
			p++;
		}
		if (*p == '\0')
			break;
		if (*p++ != ',')
			return (-1);
	}
	if (w.pairs == 0 || w.unnamed)
		return (-1);
	if (!w.named)
		return (1);
	*client = w.client;
	return (0);
}

/*
 * A trusted proxy that names its client in Forwarded as well names the
 * same one there: one that writes only Forwarded passes on the client's
 * own X-Forwarded-For, which then names whatever the client wished.
 */
static int
gate_forwarded_agrees(const struct gate_conf *conf, const char *fwd,
    const struct gate_ip *client)
{
	struct gate_ip ip;

	switch (gate_walk_forwarded(conf, fwd, &ip)) {
	case 0:
		return (memcmp(ip.a, client->a, sizeof(ip.a)) == 0);
	case 1:
		return (1);
	default:
		return (0);
	}
}

/* The peer is a proxy we trust: the client is the one it names (or the
 * proxy itself, when it names none). */
static enum gate_verdict
gate_via_proxy(const struct gate_conf *conf, const struct gate_req *r,
    const struct gate_ip *peer, char *client, size_t size)
{
	struct gate_ip ip;
	char	       tmp[INET6_ADDRSTRLEN + 4];

	if (r->forwarded_for != NULL) {
		if (gate_walk_xff(conf, r->forwarded_for, &ip) == -1)
			return (GATE_DENY_BAD_HOP);
	} else if (r->real_ip != NULL) {
		if (gate_trim(r->real_ip, strlen(r->real_ip), tmp,
			sizeof(tmp)) == -1 ||
		    gate_ip_parse(tmp, &ip) == -1)
			return (GATE_DENY_BAD_HOP);
	} else if (r->forwarded != NULL || r->via != NULL) {
		/* A proxy that names its client only in Forwarded or Via:
		 * the client is someone we cannot read, not the proxy. */
		return (GATE_DENY_BAD_HOP);
	} else
		ip = *peer;
	if (r->forwarded != NULL &&
	    !gate_forwarded_agrees(conf, r->forwarded, &ip))
		return (GATE_DENY_BAD_HOP);
	gate_ip_format(&ip, client, size);
	if (!gate_ip_private(&ip))
		return (GATE_DENY_PUBLIC);
	if (!conf->local_account)
		return (GATE_ALLOW_LOCAL);
	/* Whose socket a forwarded client used, no one here can tell; the
	 * proxy's own socket (no header) can be checked. */
	if (r->forwarded_for != NULL || r->real_ip != NULL)
		return (GATE_DENY_UNVERIFIABLE);
	return (GATE_LOCAL_UNVERIFIED);
}

enum gate_verdict
gate_check(const struct gate_conf *conf, const struct gate_req *r, char *client,
    size_t size)
{
	struct gate_ip peer;
	char	       tmp[INET6_ADDRSTRLEN + 4];
	int	       have_peer = 0;

	if (size > 0)
		client[0] = '\0';
	if (r->remote_addr != NULL &&
	    gate_trim(r->remote_addr, strlen(r->remote_addr), tmp,
		sizeof(tmp)) == 0 &&
	    gate_ip_parse(tmp, &peer) == 0) {
		gate_ip_format(&peer, client, size);
		have_peer = 1;
	}

	/*
	 * REMOTE_USER counts only where the operator declared that the front
	 * server authenticates: nginx fills $remote_user from any client's
	 * Authorization header, checked or not.
	 */
	if (conf->auth_front && r->remote_user != NULL &&
	    r->remote_user[0] != '\0')
		return (GATE_ALLOW_USER);
	if (conf->allow_remote)
		return (GATE_ALLOW_REMOTE);
	if (!have_peer)
		return (GATE_DENY_NO_PEER);

	if (conf->trust_xff && gate_trusted_proxy(conf, &peer))
		return (gate_via_proxy(conf, r, &peer, client, size));
	if (!gate_ip_loopback(&peer)) {
		/* A proxy we do not trust may be hiding a remote client. */
		if (r->forwarded_for != NULL || r->real_ip != NULL ||
		    r->forwarded != NULL || r->via != NULL)
			return (GATE_DENY_FORWARDED);
		if (!gate_ip_private(&peer))
			return (GATE_DENY_PUBLIC);
	}
	/* Local by address; untrusted forwarded headers on a loopback peer
	 * are ignored (DESIGN 6), and the socket checked is the peer's. */
	return (conf->local_account ? GATE_LOCAL_UNVERIFIED : GATE_ALLOW_LOCAL);
}

int
gate_allowed(enum gate_verdict v)
{
	return (v == GATE_ALLOW_USER || v == GATE_ALLOW_REMOTE ||
	    v == GATE_ALLOW_LOCAL);
}

int
gate_hostport_parse(const char *s, char *name, size_t size, int *port)
{
	const char *p, *colon = NULL;
	size_t	    len, i;
	long	    v;

	*port = -1;
	if (s == NULL || s[0] == '\0')
		return (-1);
	if (s[0] == '[') {
		if ((p = strchr(s, ']')) == NULL)
			return (-1);
		len = (size_t)(p - s) + 1;
		if (p[1] == ':')
			colon = p + 1;
		else if (p[1] != '\0')
			return (-1);
	} else {
		colon = strchr(s, ':');
		if (colon != NULL && strchr(colon + 1, ':') != NULL)
			return (-1); /* bare IPv6 is not a Host */
		len = colon != NULL ? (size_t)(colon - s) : strlen(s);
	}
	if (len == 0 || len >= size)
		return (-1);
	for (i = 0; i < len; i++) {
		if ((unsigned char)s[i] <= ' ' || s[i] == '/' || s[i] == '@' ||
		    s[i] == '\\' || (unsigned char)s[i] >= 0x7f)
			return (-1);
		name[i] = (char)tolower((unsigned char)s[i]);
	}
	name[len] = '\0';
	/* "example.com." and "example.com" are the same host. */
	if (len > 1 && name[len - 1] == '.' && name[0] != '[')
		name[len - 1] = '\0';
	if (colon != NULL) {
		v = 0;
		if (colon[1] == '\0' || strlen(colon + 1) > 5)
			return (-1);
		for (p = colon + 1; *p != '\0'; p++) {
			if (*p < '0' || *p > '9')
				return (-1);
			v = v * 10 + (*p - '0');
		}
		if (v < 1 || v > 65535)
			return (-1);
		*port = (int)v;
	}
	return (0);
}

/* The request's scheme: REQUEST_SCHEME, else HTTPS=on, else http. */
static const char *
gate_scheme(const struct gate_http *h)
{
	if (h->scheme != NULL && strcasecmp(h->scheme, "https") == 0)
		return ("https");
	if (h->scheme != NULL && strcasecmp(h->scheme, "http") == 0)
		return ("http");
	if (h->https != NULL && strcasecmp(h->https, "on") == 0)
		return ("https");
	return ("http");
}

static int
gate_default_port(const char *scheme)
{
	return (strcmp(scheme, "https") == 0 ? 443 : 80);
}

/* The host and port the request was addressed to. 0 or -1. */
static int
gate_own_host(const struct gate_http *h, char *name, size_t size, int *port)
{
	long  v;
	char *end;

	if (h->host != NULL) {
		if (gate_hostport_parse(h->host, name, size, port) == -1)
			return (-1);
	} else {
		if (h->server_name == NULL ||
		    gate_hostport_parse(h->server_name, name, size, port) == -1)
			return (-1);
		if (h->server_port != NULL) {
			errno = 0;
			v = strtol(h->server_port, &end, 10);
			if (errno == 0 && *end == '\0' && v > 0 && v < 65536)
				*port = (int)v;
		}
	}
	if (*port == -1)
		*port = gate_default_port(gate_scheme(h));
	return (0);
}

int
gate_csrf_ok(const struct gate_http *h)
{
	char	    oname[256], name[256];
	const char *scheme, *rest;
	size_t	    slen;
	int	    oport, port;

	if (h->fetch_site != NULL &&
	    (strcasecmp(h->fetch_site, "cross-site") == 0 ||
		strcasecmp(h->fetch_site, "same-site") == 0))
		return (0);
	if (h->origin == NULL)
		return (1);
	/* "null" (sandboxed frames, file: pages) is never our origin. */
	if ((rest = strstr(h->origin, "://")) == NULL)
		return (0);
	slen = (size_t)(rest - h->origin);
	if (slen == 5 && strncasecmp(h->origin, "https", 5) == 0)
		scheme = "https";
	else if (slen == 4 && strncasecmp(h->origin, "http", 4) == 0)
		scheme = "http";
	else
		return (0);
	if (strcmp(scheme, gate_scheme(h)) != 0)
		return (0);
	if (gate_hostport_parse(rest + 3, oname, sizeof(oname), &oport) == -1)
		return (0);
	if (oport == -1)
		oport = gate_default_port(scheme);
	if (gate_own_host(h, name, sizeof(name), &port) == -1)
		return (0);
	return (strcmp(oname, name) == 0 && oport == port);
}

int
gate_host_ok(const struct gate_conf *conf, const struct gate_http *h)
{
	char   name[256];
	int    port;
	size_t i;

	if (h->host == NULL ||
	    gate_hostport_parse(h->host, name, sizeof(name), &port) == -1)
		return (0);
	if (port == -1)
		port = gate_default_port(gate_scheme(h));
	for (i = 0; i < conf->nhosts; i++) {
		if (strcmp(conf->hosts[i].name, name) != 0)
			continue;
		if (conf->hosts[i].port == -1 || conf->hosts[i].port == port)
			return (1);
	}
	return (0);
}

/* Split a comma-separated list; call fn on each non-blank trimmed item. */
static int
gate_split(const char *list, int (*fn)(void *, const char *), void *arg)
{
	const char *p = list, *q;
	char	    item[300];

	while (*p != '\0') {
		q = strchr(p, ',');
		if (q == NULL)
			q = p + strlen(p);
		if (gate_trim(p, (size_t)(q - p), item, sizeof(item)) == -1)
			return (-1);
		if (item[0] != '\0' && fn(arg, item) == -1)
			return (-1);
		p = *q == ',' ? q + 1 : q;
	}
	return (0);
}

static int
gate_add_cidr(void *arg, const char *item)
{
	struct gate_conf *conf = arg;
	struct gate_cidr  c, *n;

	if (gate_cidr_parse(item, &c) == -1)
		return (-1);
	n = reallocarray(conf->proxies, conf->nproxies + 1, sizeof(*n));
	if (n == NULL)
		return (-1);
	conf->proxies = n;
	conf->proxies[conf->nproxies++] = c;
	return (0);
}

static int
gate_add_metrics_net(void *arg, const char *item)
{
	struct gate_conf *conf = arg;
	struct gate_cidr  c, *n;

	if (gate_cidr_parse(item, &c) == -1)
		return (-1);
	n = reallocarray(conf->metrics_nets, conf->nmetrics_nets + 1,
	    sizeof(*n));
	if (n == NULL)
		return (-1);
	conf->metrics_nets = n;
	conf->metrics_nets[conf->nmetrics_nets++] = c;
	return (0);
}

static int
gate_add_host(void *arg, const char *item)
{
	struct gate_conf *conf = arg;
	struct gate_host  h, *n;

	if (gate_hostport_parse(item, h.name, sizeof(h.name), &h.port) == -1)
		return (-1);
	n = reallocarray(conf->hosts, conf->nhosts + 1, sizeof(*n));
	if (n == NULL)
		return (-1);
	conf->hosts = n;
	conf->hosts[conf->nhosts++] = h;
	return (0);
}

int
gate_conf_load(struct gate_conf *conf, const char *allow_remote,
    const char *trust_xff, const char *proxy_cidrs, const char *allowed_hosts,
    const char **cause)
{
	memset(conf, 0, sizeof(*conf));
	conf->allow_remote = allow_remote != NULL &&
	    strcmp(allow_remote, "1") == 0;
	conf->trust_xff = trust_xff != NULL && strcmp(trust_xff, "1") == 0;
	if (proxy_cidrs != NULL &&
	    gate_split(proxy_cidrs, gate_add_cidr, conf) == -1) {
		*cause = "PTYD_TRUSTED_PROXY_CIDRS: bad address or prefix";
		goto fail;
	}
	if (allowed_hosts == NULL || allowed_hosts[0] == '\0')
		allowed_hosts = GATE_DEFAULT_HOSTS;
	if (gate_split(allowed_hosts, gate_add_host, conf) == -1) {
		*cause = "PTYD_ALLOWED_HOSTS: bad host or port";
		goto fail;
	}
	return (0);
fail:
	gate_conf_free(conf);
	return (-1);
}

int
gate_conf_mode(struct gate_conf *conf, const char *auth, const char *local,
    const char **cause)
{
	if (auth == NULL || auth[0] == '\0' || strcmp(auth, "none") == 0)
		conf->auth_front = 0;
	else if (strcmp(auth, "front") == 0)
		conf->auth_front = 1;
	else {
		*cause = "PTYD_AUTH: \"none\" or \"front\"";
		return (-1);
	}
	if (local == NULL || local[0] == '\0' || strcmp(local, "account") == 0)
		conf->local_account = 1;
	else if (strcmp(local, "address") == 0)
		conf->local_account = 0;
	else {
		*cause = "PTYD_LOCAL: \"account\" or \"address\"";
		return (-1);
	}
	return (0);
}

int
gate_conf_metrics(struct gate_conf *conf, const char *allow, const char *users,
    const char **cause)
{
	if (allow == NULL || allow[0] == '\0')
		allow = GATE_DEFAULT_METRICS;
	if (strcmp(allow, "none") != 0 &&
	    gate_split(allow, gate_add_metrics_net, conf) == -1) {
		*cause = "PTYD_METRICS_ALLOW: bad address or prefix";
		return (-1);
	}
	if (users != NULL && users[0] != '\0' &&
	    (conf->metrics_users = strdup(users)) == NULL) {
		*cause = "out of memory";
		return (-1);
	}
	return (0);
}

/* Whether the comma-separated list names s (items trimmed of blanks). */
int
gate_list_has(const char *list, const char *s)
{
	const char *p = list, *q, *e;
	size_t	    n = strlen(s);

	while (*p != '\0') {
		q = strchr(p, ',');
		if (q == NULL)
			q = p + strlen(p);
		for (e = q; e > p && isspace((unsigned char)e[-1]); e--)
			;
		while (p < e && isspace((unsigned char)*p))
			p++;
		if ((size_t)(e - p) == n && n != 0 && memcmp(p, s, n) == 0)
			return (1);
		p = *q == ',' ? q + 1 : q;
	}
	return (0);
}

int
gate_metrics_ok(const struct gate_conf *conf, const char *client,
    const char *user)
{
	struct gate_ip ip;
	size_t	       i;

	/* A web user, only if named; the address counts for everyone. */
	if (user[0] != '\0' &&
	    (conf->metrics_users == NULL ||
		!gate_list_has(conf->metrics_users, user)))
		return (0);
	if (gate_ip_parse(client, &ip) == -1)
		return (0);
	for (i = 0; i < conf->nmetrics_nets; i++)
		if (gate_ip_in(&ip, &conf->metrics_nets[i]))
			return (1);
	return (0);
}

void
gate_conf_free(struct gate_conf *conf)
{
	free(conf->proxies);
	free(conf->hosts);
	free(conf->metrics_nets);
	free(conf->metrics_users);
	conf->metrics_nets = NULL;
	conf->metrics_users = NULL;
	conf->nmetrics_nets = 0;
	conf->proxies = NULL;
	conf->hosts = NULL;
	conf->nproxies = 0;
	conf->nhosts = 0;
}
