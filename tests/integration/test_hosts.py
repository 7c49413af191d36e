"""test_hosts.py -- more than one machine (DESIGN 8): several complete
ptyd hosts behind one front nginx that routes every request of a user to
the same host (`hash $remote_user consistent`).

Each "host" is a whole stack on this machine (its own nginx with
auth_basic, ptyd.fcgi, ptyd and state directory), as scripts/ptyd-stack
starts it; the front is nginx with nginx/ptyd-hosts.conf.example, its
addresses and names replaced by the test's (each replacement must find
its line, so the example cannot drift from what is tested), proxying to
the hosts' nginx.  The front names the host that answered in X-Ptyd-Host.

Checked: users spread over both hosts, each user's requests (start, list,
input, the stream) all on one host and their terminals only there; a host
stopped: its users get the API's JSON 503 with Retry-After naming it (not
nginx's HTML 502) and are not moved to the other host, whose users keep
typing into the same shells on the same streams; the host started again
serves its users; a third host added moves users only onto it.
"""

import os
import re
import shutil
import signal
import subprocess
import tempfile

import pytest

import ptyd_stack
from ptyd_http import Client, Response, Shell
from ptyd_stack import REPO, free_port, wait_for

EXAMPLE = os.path.join(REPO, "nginx", "ptyd-hosts.conf.example")
PASSWORD = "hosts-pw"
USERS = ["user%02d" % i for i in range(24)]
NAMES = ["host-a", "host-b", "host-c"]
FCGI_ARGS = ["--processes", "2"]


def host_conf(backends, htpasswd, port):
    """The example with the test's addresses: backends is a list of
    (name, port) pairs.  The server lines keep the example's parameters
    (max_fails=0 matters: see test_a_host_down...)."""
    with open(EXAMPLE) as f:
        text = f.read()
    m = re.search(r"^    server 10\.0\.0\.11:443( [^;]*)?;\n"
                  r"    server 10\.0\.0\.12:443( [^;]*)?;\n", text, re.M)
    assert m, "the example's upstream servers are not as expected"
    params = m.group(1) or ""
    servers = "".join("    server 127.0.0.1:%d%s;\n" % (p, params)
                      for _, p in backends)
    text = text[:m.start()] + servers + text[m.end():]
    names = "".join("    127.0.0.1:%d %s;\n" % (p, n) for n, p in backends)
    edits = [
        ("    10.0.0.11:443 term1;\n    10.0.0.12:443 term2;\n", names),
        ("proxy_pass https://ptyd_hosts;", "proxy_pass http://ptyd_hosts;"),
        ("listen 443 ssl;", "listen 127.0.0.1:%d;" % port),
        ("    ssl_certificate /etc/ssl/certs/terminals.example.org.pem;\n",
         ""),
        ("    ssl_certificate_key "
         "/etc/ssl/private/terminals.example.org.key;\n", ""),
        ("/etc/nginx/ptyd.htpasswd", htpasswd),
    ]
    for old, new in edits:
        assert old in text, "the example no longer has %r" % old
        text = text.replace(old, new)
    return text


class Front:
    """The front nginx, in a directory of its own."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="ptyd-front-", dir="/tmp")
        self.port = free_port()
        self.htpasswd = os.path.join(self.dir, "htpasswd")
        with open(self.htpasswd, "w") as f:
            for u in USERS:
                h = subprocess.run(["openssl", "passwd", "-apr1", "-stdin"],
                                   input=PASSWORD.encode(), check=True,
                                   capture_output=True).stdout.decode()
                f.write("%s:%s\n" % (u, h.strip()))
        self.pid = None

    def start(self, backends):
        os.makedirs(os.path.join(self.dir, "tmp"), exist_ok=True)
        with open(os.path.join(self.dir, "hosts.conf"), "w") as f:
            f.write(host_conf(backends, self.htpasswd, self.port))
        d = self.dir
        with open(os.path.join(d, "nginx.conf"), "w") as f:
            f.write("%s\nworker_processes 1;\npid %s/nginx.pid;\n"
                    "error_log %s/error.log warn;\n"
                    "events { worker_connections 1024; }\n"
                    "http {\n    access_log off;\n"
                    "    client_body_temp_path %s/tmp/cb;\n"
                    "    proxy_temp_path %s/tmp/proxy;\n"
                    "    fastcgi_temp_path %s/tmp/fcgi;\n"
                    "    uwsgi_temp_path %s/tmp/uwsgi;\n"
                    "    scgi_temp_path %s/tmp/scgi;\n"
                    "    include %s/hosts.conf;\n}\n"
                    % ("user root;" if os.geteuid() == 0 else "",
                       d, d, d, d, d, d, d, d))
        r = subprocess.run(["nginx", "-p", d + "/", "-c", d + "/nginx.conf",
                            "-e", d + "/error.log"], capture_output=True,
                           timeout=30)
        assert r.returncode == 0, r.stderr.decode(errors="replace")
        with open(os.path.join(d, "nginx.pid")) as f:
            self.pid = int(f.read())
        wait_for(lambda: self.client(USERS[0]).list().status in (200, 503),
                 what="the front to answer")

    def stop(self):
        if self.pid is None:
            return
        try:
            os.kill(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        wait_for(lambda: ptyd_stack.proc_gone(self.pid) or
                 ptyd_stack.proc_state(self.pid) == "Z",
                 what="the front nginx to exit")
        self.pid = None

    def client(self, user):
        return Client(self.port, user=user, password=PASSWORD)


@pytest.fixture(scope="module")
def hosts(make_stack):
    if shutil.which("nginx") is None and not os.path.exists(
            "/usr/sbin/nginx"):
        pytest.skip("nginx is not installed")
    users = ["%s:%s" % (u, PASSWORD) for u in USERS]
    a = make_stack("host-a", users=users, fcgi_args=FCGI_ARGS)
    b = make_stack("host-b", users=users, fcgi_args=FCGI_ARGS)
    front = Front()
    try:
        front.start([("host-a", a.port), ("host-b", b.port)])
        yield {"host-a": a, "host-b": b, "front": front,
               "make_stack": make_stack}
    finally:
        try:
            front.stop()
        finally:
            shutil.rmtree(front.dir, ignore_errors=True)


def sid_of(user):
    return "hosts-" + user


def place(front):
    """Every user starts (or reuses) one terminal through the front:
    {user: the host that answered}."""
    where = {}
    for u in USERS:
        r = front.client(u).start(sid_of(u))
        assert r.status == 200, (u, r)
        where[u] = r.header("x-ptyd-host")
    return where


@pytest.mark.deadline(60)
def test_every_request_of_a_user_goes_to_one_host(hosts):
    front = hosts["front"]
    where = place(front)
    assert set(where.values()) == {"host-a", "host-b"}, where
    for u in USERS:
        c = front.client(u)
        r = c.list()
        assert r.status == 200 and r.header("x-ptyd-host") == where[u]
        assert [t["session_id"] for t in r.json()["terminals"]] == \
            [sid_of(u)], r
        r = c.resize(sid_of(u), rows=30)
        assert r.status == 200 and r.header("x-ptyd-host") == where[u]
        # The terminal is on that host and only there (asked of each
        # host's own nginx, as that user).
        for name in ("host-a", "host-b"):
            own = hosts[name].client(u).terminals()
            assert (sid_of(u) in own) == (name == where[u]), (u, name, own)
    # Input and the stream through the front (unbuffered) for one user on
    # each host.
    for name in ("host-a", "host-b"):
        u = next(x for x in USERS if where[x] == name)
        with Shell(front.client(u), sid_of(u)) as sh:
            assert sh.s.headers.get("x-ptyd-host") == name
            assert sh.run("echo on-$((40+2))") == b"on-42"


def stream_head(client, user):
    """The output stream's answer as a Response (a 200 is not read on)."""
    s = client.stream(sid_of(user))
    s.close()
    return Response(s.status, "", s.headers, s.body)


@pytest.mark.deadline(60)
def test_a_host_down_answers_json_503_and_spares_the_other(hosts,
                                                           monkeypatch):
    front, b = hosts["front"], hosts["host-b"]
    where = place(front)
    ua = next(u for u in USERS if where[u] == "host-a")
    ub = next(u for u in USERS if where[u] == "host-b")
    pid_a = front.client(ua).terminals()[sid_of(ua)]["pid"]
    shell_a = Shell(front.client(ua), sid_of(ua))
    try:
        assert shell_a.run("echo before") == b"before"
        b.stop()
        cb = front.client(ub)
        # Every endpoint, several times: a host that fails is never
        # skipped for the next one (its user would land on host-a with an
        # empty list and new shells there).
        for _ in range(3):
            for r in (cb.list(), cb.start(sid_of(ub)),
                      cb.input(sid_of(ub), "x"), stream_head(cb, ub)):
                assert r.status == 503, r
                assert r.header("content-type", "").startswith(
                    "application/json"), r
                assert r.header("retry-after") is not None, r
                assert r.header("x-ptyd-host") == "host-b", r
                assert "host-b" in r.json()["error"], r
        # host-a's user types on into the same shell on the same stream.
        assert shell_a.run("echo during") == b"during"
        ca = front.client(ua)
        r = ca.list()
        assert r.status == 200 and r.header("x-ptyd-host") == "host-a"
        assert r.json()["terminals"][0]["pid"] == pid_a
        # host-b comes back on its address.
        monkeypatch.setattr(ptyd_stack, "free_port", lambda: b.port)
        b.start()
        monkeypatch.undo()
        r = cb.list()
        assert r.status == 200 and r.header("x-ptyd-host") == "host-b", r
        # Its ptyd was stopped with the host: the shells ended with it.
        assert r.json()["terminals"] == [], r
        r = cb.start(sid_of(ub))
        assert r.status == 200 and r.header("x-ptyd-host") == "host-b", r
        assert shell_a.run("echo after") == b"after"
        assert ca.terminals()[sid_of(ua)]["pid"] == pid_a
        assert not any(ev.name == "gap" for ev in shell_a.s.events)
    finally:
        shell_a.close()


@pytest.mark.deadline(60)
def test_adding_a_host_moves_users_only_onto_it(hosts):
    front, a, b = hosts["front"], hosts["host-a"], hosts["host-b"]
    users = ["%s:%s" % (u, PASSWORD) for u in USERS]
    c = hosts["make_stack"]("host-c", users=users, fcgi_args=FCGI_ARGS)
    before = place(front)
    front.stop()
    front.start([("host-a", a.port), ("host-b", b.port),
                 ("host-c", c.port)])
    after = {}
    for u in USERS:
        r = front.client(u).list()
        assert r.status == 200, r
        after[u] = r.header("x-ptyd-host")
        sids = [t["session_id"] for t in r.json()["terminals"]]
        # A user who stays keeps every terminal; one who moves starts
        # afresh on the new host (the old shells stay where they were
        # until the reaper's grace ends).
        assert sids == ([sid_of(u)] if after[u] == before[u] else []), \
            (u, before[u], after[u], sids)
    moved = [u for u in USERS if after[u] != before[u]]
    assert moved, "no user moved to the new host: %r" % after
    assert len(moved) < len(USERS), after
    assert {after[u] for u in moved} == {"host-c"}, (before, after)
