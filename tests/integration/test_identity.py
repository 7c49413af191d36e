"""test_identity.py -- a client can never choose its own identity (DESIGN 6,
issue 12), tried through real nginx with every shipped location block.

Regression: the seed's location block passed nginx's $remote_user as
REMOTE_USER, and nginx fills $remote_user from any client's
"Authorization: Basic" header whether or not anything checked a password;
ptyd.fcgi believed it, so `Authorization: Basic bWFsbG9yeTp4` (mallory:x)
from the public internet got a shell.  Each stack here trusts a proxy on
loopback (PTYD_TRUST_FORWARDED_FOR=1), so a request carrying
"X-Forwarded-For: 203.0.113.9" is a public client as ptyd.fcgi sees it.
"""

import os
import stat

import pytest

from fcgi_raw import fcgi_request
from ptyd_stack import children_of, wait_for

PUBLIC = {"X-Forwarded-For": "203.0.113.9"}
FORGED = [
    {"Authorization": "Basic bWFsbG9yeTp4"},            # mallory:x
    {"Remote-User": "mallory"},
    {"X-Remote-User": "mallory"},
    {"X-Forwarded-User": "mallory"},
    {"Authorization": "Basic bWFsbG9yeTp4", "Remote-User": "mallory",
     "X-Remote-User": "mallory", "X-Forwarded-User": "mallory"},
]
USERS = ["alice:pw-alice", "bob:pw-bob"]
TRUST = ["PTYD_TRUST_FORWARDED_FOR=1"]


@pytest.fixture(scope="module")
def noauth(make_stack):
    return make_stack("id-none", env=TRUST)


@pytest.fixture(scope="module")
def basic(make_stack):
    return make_stack("id-basic", auth="basic", users=USERS, env=TRUST)


@pytest.fixture(scope="module")
def authreq(make_stack):
    return make_stack("id-request", auth="request", users=USERS, env=TRUST)


def owners(st, sid):
    return sorted(r["owner"] for r in st.db(
        "SELECT owner FROM terminals WHERE session_id = ?", (sid,)))


def test_forged_identity_from_a_public_client_gets_nothing_without_auth(
        noauth, new_sid):
    c = noauth.client()
    sid = new_sid()
    for forged in FORGED:
        h = dict(PUBLIC, **forged)
        for r in (c.get("list", headers=h),
                  c.post("start", {"session_id": sid}, headers=h),
                  c.get("output", query={"session_id": sid}, headers=h),
                  c.get("health", headers=h)):
            assert r.status == 403, (forged, r)
            assert r.json()["error"].startswith("forbidden: ")
    # Nothing was started for anyone.
    assert sid not in c.terminals()
    assert owners(noauth, sid) == []


def test_forged_identity_from_this_account_stays_the_local_owner(
        noauth, new_sid):
    c = noauth.client()
    sid = new_sid()
    r = c.post("start", {"session_id": sid}, headers=FORGED[-1])
    assert r.status == 200, r
    try:
        # The terminal belongs to the local owner (""), not to "mallory":
        # a plain local client sees it and the mirror says so.
        assert sid in c.terminals()
        wait_for(lambda: owners(noauth, sid) == [""], 3,
                 what=lambda: "owner %r" % owners(noauth, sid))
    finally:
        c.close_term(sid)


@pytest.mark.parametrize("mode", ["basic", "authreq"])
def test_front_auth_refuses_forged_headers_and_wrong_passwords(
        mode, request, new_sid):
    st = request.getfixturevalue(mode)
    c = st.client()
    sid = new_sid()
    for forged in FORGED:
        for h in (forged, dict(PUBLIC, **forged)):
            r = c.post("start", {"session_id": sid}, headers=h)
            assert r.status == 401, (mode, h, r)
            assert c.get("list", headers=h).status == 401
    wrong = st.client("alice")
    wrong.password = "pw-bob"
    assert wrong.get("list", headers=PUBLIC).status == 401
    assert owners(st, sid) == []


@pytest.mark.parametrize("mode", ["basic", "authreq"])
def test_front_auth_user_is_who_authenticated_not_who_a_header_says(
        mode, request, new_sid):
    st = request.getfixturevalue(mode)
    alice, bob = st.client("alice"), st.client("bob")
    sid = new_sid()
    h = dict(PUBLIC, **{"X-Remote-User": "bob", "Remote-User": "bob",
                        "X-Forwarded-User": "bob"})
    r = alice.post("start", {"session_id": sid}, headers=h)
    assert r.status == 200, r
    try:
        # A public client authenticated as alice owns it; bob never sees
        # it.
        assert sid in alice.terminals()
        assert sid not in bob.terminals()
        wait_for(lambda: owners(st, sid) == ["alice"], 3,
                 what=lambda: "owners %r" % owners(st, sid))
    finally:
        alice.close_term(sid)


# ---- raw FastCGI: the socket and the parameter ---------------------------

def test_raw_fastcgi_remote_user_is_not_believed_without_front_auth(noauth):
    """Whoever reaches ptyd.fcgi's socket sets every parameter; with the
    default PTYD_AUTH=none a REMOTE_USER parameter still grants nothing."""
    sock = os.path.join(noauth.state, "run", "fcgi.sock")
    base = {"REQUEST_METHOD": "GET", "DOCUMENT_URI": "/api/terminal/list",
            "HTTP_HOST": "127.0.0.1", "REQUEST_SCHEME": "http"}
    assert fcgi_request(sock, dict(base, REMOTE_ADDR="203.0.113.5",
                                   REMOTE_USER="mallory")) == 403
    # A loopback address whose socket does not exist is no one's.
    assert fcgi_request(sock, dict(base, REMOTE_ADDR="127.0.0.1",
                                   REMOTE_PORT="1", SERVER_ADDR="127.0.0.1",
                                   SERVER_PORT="2",
                                   REMOTE_USER="mallory")) == 403


def test_sockets_are_the_accounts_alone(noauth):
    """Regression: ptyd.fcgi's socket was 0660 in the account's primary
    group, which on a shared host is often everybody's."""
    for name in ("fcgi.sock", "ptyd.sock"):
        st = os.stat(os.path.join(noauth.state, "run", name))
        assert stat.S_ISSOCK(st.st_mode)
        assert stat.S_IMODE(st.st_mode) == 0o600, (name, oct(st.st_mode))
    assert stat.S_IMODE(os.stat(os.path.join(
        noauth.state, "run")).st_mode) == 0o700


def test_socket_group_and_mode_are_settable(make_stack):
    st = make_stack("id-group", fcgi_args=["--socket-group=nogroup"])
    s = os.stat(os.path.join(st.state, "run", "fcgi.sock"))
    assert stat.S_IMODE(s.st_mode) == 0o660
    import grp
    assert grp.getgrgid(s.st_gid).gr_name == "nogroup"
    assert st.client().health().status == 200


def test_no_daemon_listens_on_tcp_unless_told(noauth):
    """Only nginx has a TCP port: ptyd.fcgi and ptyd listen on their Unix
    sockets alone (a TCP listener is only made by --listen HOST:PORT)."""
    import subprocess
    out = subprocess.run(["ss", "-H", "-l", "-t", "-n", "-p"],
                         capture_output=True, timeout=10).stdout.decode()
    fcgi = int(open(os.path.join(noauth.state, "run", "fcgi.pid")).read())
    pids = {fcgi, noauth.ptyd_pid()} | set(children_of(fcgi))
    listening = [line for line in out.splitlines()
                 if any("pid=%d," % p in line for p in pids)]
    assert listening == [], listening
