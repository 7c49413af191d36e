"""test_front_forwarded.py -- behind every front server ptyd ships a
config for, a client cannot name its own address through X-Forwarded-For
or X-Real-IP.

The account's ptyd.conf trusts forwarded headers (trust_forwarded_for,
local = address): the loopback peer here plays a trusted proxy that adds
its own X-Forwarded-For line after the client's, as HAProxy's `option
forwardfor` does, and a private client counts as local.  The client writes
a private address first, or under another spelling of the name
(X_Forwarded_For, X.Forwarded.For, which some servers pass as the same
HTTP_X_FORWARDED_FOR), and must be denied; a single line naming a private
client must get in, which shows the headers are read at all.

The attack worked before (attacker's review of the join of repeated
lines): through fcgiwrap and lighttpd's CGI the environment holds the name
twice and getenv finds the client's line; lighttpd's FastCGI puts the
lines of one name together where the first was and passes the other
spellings after them, so even joining the params in order gave the
client's address the last word.  ptyd.fcgi now takes a forwarded header
that arrives as more than one param for a blank hop, and nginx passes
X-Forwarded-For as one (nginx/ptyd-fastcgi.conf).  A Forwarded header
(RFC 7239) or a Via alone was taken for the proxy's own request (local);
it now says a client the gate cannot read is behind it: denied.  Beside
X-Forwarded-For, a Forwarded that names another client is denied too: a
proxy that writes only Forwarded passes on the client's own
X-Forwarded-For.
"""

import pytest

import front_servers as fs
from ptyd_http import raw_status

PRIVATE, PUBLIC = "192.168.1.5", "203.0.113.9"
XFF, RIP = "X-Forwarded-For", "X-Real-IP"

# (the header lines as the server receives them, the status).
CASES = [
    ([(XFF, PRIVATE)], 200),
    ([(XFF, PUBLIC)], 403),
    ([(XFF, PRIVATE), (XFF, PUBLIC)], 403),
    ([("X_Forwarded_For", PRIVATE), (XFF, PUBLIC)], 403),
    ([(XFF, "198.51.100.7"), ("X_Forwarded_For", PRIVATE), (XFF, PUBLIC)],
     403),
    ([(XFF, "198.51.100.7"), ("X.Forwarded.For", PRIVATE), (XFF, PUBLIC)],
     403),
    ([(RIP, PRIVATE)], 200),
    ([(RIP, PRIVATE), (RIP, PUBLIC)], 403),
    ([("X_Real_IP", PRIVATE), (RIP, PUBLIC)], 403),
    # A proxy that names its client only in Forwarded (RFC 7239), which
    # the gate does not read for an address: not the proxy's own request.
    ([("Forwarded", "for=" + PUBLIC)], 403),
    ([("Via", "1.1 squid")], 403),
    # A proxy that writes only Forwarded passes on the client's own
    # X-Forwarded-For: the two must name the same client.  Forwarded's
    # lines, like the others, must come as one.
    ([(XFF, PRIVATE), ("Forwarded", "for=" + PUBLIC)], 403),
    ([(XFF, PRIVATE), ("Forwarded", "for=" + PRIVATE),
      ("Forwarded", "for=" + PUBLIC)], 403),
    ([(XFF, PRIVATE), ("Forwarded", "for=" + PRIVATE + ";proto=http")],
     200),
]


@pytest.fixture(scope="module")
def acct():
    a = fs.Account()
    a.write_conf("trust_forwarded_for = yes\nlocal = address\n"
                 "trusted_proxy_cidrs = 10.0.0.0/8\n")
    yield a
    a.cleanup()


def lighttpd_fastcgi(acct):
    d = acct.mkdir("fwd-lfcgi")
    return [fs.lighttpd_server(acct, d,
                               fs.lighttpd_fastcgi_body(acct, d)).start()]


def lighttpd_cgi(acct):
    return [fs.lighttpd_server(acct, acct.mkdir("fwd-lcgi"),
                               fs.lighttpd_cgi_body(acct)).start()]


def nginx_fcgiwrap(acct):
    return list(fs.nginx_fcgiwrap(acct, "fwd-fcgiwrap", 2))


def apache_cgid(acct):
    return [fs.apache_server(acct, acct.mkdir("fwd-cgid", owner=False),
                             fs.cgid_body(acct), ["alias", "cgid"]).start()]


def apache_fcgid(acct):
    req, stream = fs.fcgid_wrappers(
        acct, acct.mkdir("fwd-fcgid", "bin", owner=False), (0, 0))
    return [fs.apache_server(acct, acct.mkdir("fwd-fcgid", owner=False),
                             fs.fcgid_body(req, stream),
                             ["alias", "fcgid"]).start()]


@pytest.mark.parametrize("front", [lighttpd_fastcgi, lighttpd_cgi,
                                   nginx_fcgiwrap, apache_cgid,
                                   apache_fcgid],
                         ids=lambda f: f.__name__)
def test_a_client_cannot_name_its_own_address(acct, front):
    servers = front(acct)
    try:
        port = servers[0].port
        got = [(lines, raw_status(port, "GET", "/api/terminal/list", lines))
               for lines, _ in CASES]
        want = [(lines, status) for lines, status in CASES]
        assert got == want
    finally:
        for s in servers:
            s.stop()
