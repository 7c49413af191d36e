/*
 * gate.h -- who may use ptyd.fcgi at all (DESIGN section 6): the gate on
 * the peer's address and identity, the CSRF check, and the Host allowlist
 * that defeats DNS rebinding.
 *
 * Owns: address parsing and classification (loopback, private, trusted
 * proxy), the X-Forwarded-For walk and its cross-check against Forwarded
 * (RFC 7239), Origin and Host comparison.  Does not
 * own: where the inputs come from (http.c reads FastCGI params or the CGI
 * environment) or the responses (handlers.c).  Every function is pure, so
 * the whole truth table is unit-tested.
 */
#ifndef FRONT_GATE_H
#define FRONT_GATE_H

#include <stddef.h>
#include <stdint.h>

/* An address, IPv4 held as IPv4-mapped IPv6 (::ffff:a.b.c.d). */
struct gate_ip {
	uint8_t a[16];
};

struct gate_cidr {
	struct gate_ip net;
	unsigned int   bits; /* over the 128-bit form */
};

struct gate_host {
	char name[256]; /* lower case; IPv6 kept in brackets */
	int  port;	/* -1: any port */
};

/* Configuration, read once from the process environment. */
struct gate_conf {
	int		  auth_front;	 /* PTYD_AUTH=front */
	int		  local_account; /* PTYD_LOCAL=account */
	int		  allow_remote;	 /* PTYD_ALLOW_REMOTE=1 */
	int		  trust_xff;	 /* PTYD_TRUST_FORWARDED_FOR=1 */
	struct gate_cidr *proxies;	 /* PTYD_TRUSTED_PROXY_CIDRS */
	size_t		  nproxies;
	struct gate_host *hosts; /* PTYD_ALLOWED_HOSTS */
	size_t		  nhosts;
	struct gate_cidr *metrics_nets; /* PTYD_METRICS_ALLOW */
	size_t		  nmetrics_nets;
	char		 *metrics_users; /* PTYD_METRICS_USERS, or NULL */
};

/* Who may read the metrics by default: this host's own clients. */
#define GATE_DEFAULT_METRICS "127.0.0.0/8,::1"

#define GATE_DEFAULT_HOSTS "localhost,127.0.0.1,[::1]"

/* A denied request gets lib/contract.c's CONTRACT_A_GATE answer. */

/*
 * Fill conf from the four environment values (each may be NULL: unset).
 * Returns 0, or -1 with *cause set (static text) on a malformed list.
 */
int  gate_conf_load(struct gate_conf *, const char *allow_remote,
     const char *trust_xff, const char *proxy_cidrs, const char *allowed_hosts,
     const char **cause);
void gate_conf_free(struct gate_conf *);

/*
 * Set who vouches for identity and what "local" means from PTYD_AUTH
 * ("none", the default, or "front") and PTYD_LOCAL ("account", the
 * default, or "address"); NULL or "" is the default.  0, or -1 with *cause
 * on any other value: a typo must not silently fall back to a mode.
 */
int gate_conf_mode(struct gate_conf *, const char *auth, const char *local,
    const char **cause);

/*
 * The metrics are the operator's (DESIGN 6): counters of every user's
 * terminals and typing.  allow: addresses or prefixes, comma-separated, a
 * reader must be at (NULL or "": GATE_DEFAULT_METRICS; "none": nobody);
 * users: the web users (REMOTE_USER, where auth = front) who may read
 * them (NULL or "": none).  0, or -1 with *cause.
 */
int gate_conf_metrics(struct gate_conf *, const char *allow, const char *users,
    const char **cause);
/* A request that passed the gate, from client (its address as the gate
 * decided it) with user ("" if none): may it read the metrics? */
/* Whether the comma-separated list names s (blanks around items do not
 * count; "" is never named). */
int gate_list_has(const char *list, const char *s);
int gate_metrics_ok(const struct gate_conf *, const char *client,
    const char *user);

/* Parse an IPv4 or IPv6 literal (IPv6 optionally in brackets). 0 or -1. */
int gate_ip_parse(const char *, struct gate_ip *);
/* "a.b.c.d/n", "v6/n", or a bare address (a host route).  0 or -1. */
int gate_cidr_parse(const char *, struct gate_cidr *);
int gate_ip_in(const struct gate_ip *, const struct gate_cidr *);
int gate_ip_loopback(const struct gate_ip *);
int gate_ip_private(const struct gate_ip *); /* loopback included */
/* Text form, IPv4-mapped addresses written as IPv4. */
void gate_ip_format(const struct gate_ip *, char *, size_t);

/* Per-request inputs of the gate; NULL means the header was absent. */
struct gate_req {
	const char *remote_user;
	const char *remote_addr;
	const char *forwarded_for; /* X-Forwarded-For */
	const char *real_ip;	   /* X-Real-IP */
	/*
	 * Signs of a proxy.  Forwarded (RFC 7239) is read only to check the
	 * client X-Forwarded-For or X-Real-IP names; Via never.
	 */
	const char *forwarded;
	const char *via;
};

enum gate_verdict {
	GATE_ALLOW_USER = 1,	/* REMOTE_USER set, PTYD_AUTH=front */
	GATE_ALLOW_REMOTE,	/* PTYD_ALLOW_REMOTE=1 */
	GATE_ALLOW_LOCAL,	/* local by address (PTYD_LOCAL=address), or
				 * the peer's socket is this account's */
	GATE_LOCAL_UNVERIFIED,	/* local by address, the client is the raw
				 * peer: the caller must find the uid owning
				 * its socket (peer.c) before it may allow */
	GATE_DENY_NO_PEER,	/* REMOTE_ADDR missing or not an address */
	GATE_DENY_FORWARDED,	/* forwarded headers from an untrusted peer */
	GATE_DENY_BAD_HOP,	/* blank, malformed or non-IP forwarded hop,
				 * a proxy that names its client only in
				 * Forwarded or Via, or a Forwarded whose
				 * client is not X-Forwarded-For's */
	GATE_DENY_PUBLIC,	/* the client is neither loopback nor private */
	GATE_DENY_UNVERIFIABLE, /* local by address, but only a forwarded
				 * header says so: no socket to check */
	GATE_DENY_OTHER_ACCOUNT, /* the peer's socket belongs to another uid,
				 * or was not found */
};

/*
 * Decide.  client (size bytes) receives the address the decision was made
 * on, for the audit log ("" if none).  GATE_ALLOW_* values allow;
 * GATE_LOCAL_UNVERIFIED allows only once the caller has checked the peer's
 * uid (gate_allowed says no to it, so a caller that forgets fails closed).
 */
enum gate_verdict gate_check(const struct gate_conf *, const struct gate_req *,
    char *client, size_t size);
int		  gate_allowed(enum gate_verdict);

/* Inputs of the CSRF and Host checks; NULL means absent. */
struct gate_http {
	const char *scheme;	 /* REQUEST_SCHEME */
	const char *https;	 /* HTTPS ("on" under TLS) */
	const char *host;	 /* HTTP_HOST */
	const char *server_name; /* SERVER_NAME, when Host is absent */
	const char *server_port; /* SERVER_PORT, when Host is absent */
	const char *origin;	 /* HTTP_ORIGIN */
	const char *fetch_site;	 /* HTTP_SEC_FETCH_SITE */
};

/* 1 if the request may proceed: Origin absent or equal to the request's
 * own origin, Sec-Fetch-Site neither cross-site nor same-site. */
int gate_csrf_ok(const struct gate_http *);

/* 1 if the Host header's host (and port, where the entry pins one) is in
 * the allowlist.  Only applied when REMOTE_USER is empty. */
int gate_host_ok(const struct gate_conf *, const struct gate_http *);

/* Split "host[:port]" / "[v6][:port]": host lower-cased into name, port or
 * -1.  0, or -1 if malformed. */
int gate_hostport_parse(const char *, char *name, size_t size, int *port);

#endif /* FRONT_GATE_H */
