"""test_front_crash.py -- every front fails closed and comes back (issue
33): behind each front the README documents, ptyd.fcgi is killed (every
process of it, SIGKILL), and ptyd too; the time until a request is served
again is measured, printed and bounded, and every answer meanwhile is
the contract's JSON error (DESIGN 2: 503 with Retry-After while ptyd.fcgi
or ptyd is away), never the server's own HTML page.

Regressions: under lighttpd (mod_fastcgi with bin-path) the workers of a
killed ptyd.fcgi outlived their master for a moment and kept the socket;
lighttpd, starting ptyd.fcgi again, found the socket answering, took it
for a FastCGI server of someone else's and never started ptyd.fcgi again
once they were gone ("all handlers are down", "re-enabled", "Connection
refused" in a loop), answering its own HTML 503 meanwhile (the shipped
file now runs ptyd.fcgi as one process and maps lighttpd's own errors to
JSON, lighttpd/ptyd-errors.conf).  A ptyd.fcgi master killed alone left
its workers serving on as orphans, holding the socket against its
supervisor.  mod_fcgid and mod_cgid answered a ptyd.fcgi killed under a
request with their HTML 500, fcgiwrap with its plain-text 502.

The CGI fronts (Apache mod_cgid, lighttpd mod_cgi, nginx with fcgiwrap)
start a ptyd.fcgi per request: nothing to start again; killing the one
under an open stream ends that stream, and the next request is served at
once.  The stack script runs ptyd.fcgi unsupervised: it fails closed and
comes back only with `ptyd-stack start`.
"""

import os
import pwd
import secrets
import shutil
import signal
import time

import pytest

import front_servers as fs
from ptyd_http import Client
from ptyd_stack import REPO, proc_ppid, proc_state, wait_for

# Seconds from the kill until a request is served again (issue 33), and
# what two busy cores may add to it.  lighttpd's own worst case is 2 s:
# a connection refused in the moment between ptyd.fcgi's death and
# lighttpd reaping it disables the process until lighttpd's clock, which
# ticks once a second and is read one tick late, has moved past that
# second.
BOUND = 2.0
SLACK = 0.5
# lighttpd and runsv each wait a second before starting again a process
# that died within a second of its start (their guard against a crash
# loop): each kill comes that long after the last return.
ROUND_GAP = 1.1
ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
SUEXEC = "/usr/lib/apache2/suexec"


def assert_json_error(r, allowed):
    """The contract's error answer: JSON {"error": ...}, no-store, and
    Retry-After on a 503."""
    assert r.status in allowed, r
    assert r.header("content-type", "").startswith("application/json"), r
    body = r.json()
    assert set(body) == {"error"}, body
    assert r.header("cache-control") == "no-store", r
    if r.status == 503:
        assert r.header("retry-after", "").isdigit(), r


class NotServed(AssertionError):
    pass


def until_served(port, t0, allowed, timeout=BOUND + 8):
    """Ask list on a fresh connection every 20 ms until it is 200; every
    other answer must be a JSON error of an allowed status.  Returns
    (seconds since t0, the (status, error) of each answer before)."""
    seen = []
    while True:
        r = Client(port).list()
        now = time.monotonic()
        if r.status == 200:
            return now - t0, seen
        assert_json_error(r, allowed)
        seen.append((r.status, r.json()["error"]))
        if now - t0 > timeout:
            raise NotServed("not served again in %.1f s: %r" % (timeout, seen))
        time.sleep(0.02)


def dead(pid):
    """Gone, or a zombie nobody has reaped yet (mod_fcgid reaps every few
    seconds; an orphan's reaper may be slow): it holds nothing open."""
    return proc_state(pid) in (None, "Z")


def kill_all(pids):
    """SIGKILL each process; wait until every one is dead."""
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for p in pids:
        wait_for(lambda p=p: dead(p), timeout=5,
                 what="killed process %d dead" % p)


def crash_fcgi(port, acct, name, allowed=(503,), rounds=2):
    """Kill every ptyd.fcgi of the account, rounds times: a request sent
    at once, and every one until list is served again, is a JSON error of
    an allowed status (or served: the front may already have a new one);
    each round, list is served again within BOUND by a ptyd.fcgi that was
    not killed, and a terminal opened before lives on (it is ptyd's).
    Returns the times."""
    c = Client(port)
    sid = "crash-%s-%s" % (name, secrets.token_hex(3))
    assert c.start(sid).status == 200
    times = []
    for _ in range(rounds):
        time.sleep(ROUND_GAP)
        old = acct.fcgi_pids()
        assert old, "no ptyd.fcgi of the account"
        for p in old:
            os.kill(p, signal.SIGKILL)
        t0 = time.monotonic()
        r = Client(port).list()
        if r.status != 200:
            assert_json_error(r, allowed)
        kill_all(old)
        took, seen = until_served(port, t0, allowed)
        times.append(took)
        assert not set(acct.fcgi_pids()) & set(old)
        t = c.terminals()[sid]
        assert t["running"] is True, t
    print("\nfront %s: ptyd.fcgi killed, served again after %s s"
          % (name, ", ".join("%.3f" % t for t in times)))
    assert max(times) < BOUND + SLACK, times
    assert c.close_term(sid).json()["closed"] is True
    return times


def crash_master(port, acct, name):
    """Kill ptyd.fcgi's master alone: its workers end with it (they stop
    as on SIGTERM), none is left holding the old socket, and the
    supervisor's new ptyd.fcgi serves within BOUND."""
    time.sleep(ROUND_GAP)
    old = acct.fcgi_pids()
    masters = [p for p in old if proc_ppid(p) not in old]
    assert len(masters) == 1 and len(old) > 1, old
    os.kill(masters[0], signal.SIGKILL)
    t0 = time.monotonic()
    # An old worker may still answer while it stops: served again means
    # served by the supervisor's new ptyd.fcgi, once the old are gone.
    wait_for(lambda: all(dead(p) for p in old), timeout=5,
             what="the killed master's workers to end")
    took, seen = until_served(port, t0, (503,))
    assert acct.fcgi_pids() and not set(acct.fcgi_pids()) & set(old)
    print("\nfront %s: ptyd.fcgi's master killed, served again after %.3f s"
          % (name, took))
    assert took < BOUND + SLACK, took


def crash_ptyd(port, name):
    """Kill the serving ptyd: its keeper starts it again, the shell of a
    terminal lives on, and meanwhile ptyd.fcgi answers JSON 503."""
    c = Client(port)
    sid = "crashd-%s-%s" % (name, secrets.token_hex(3))
    assert c.start(sid).status == 200
    pid = c.health().json()["ptyd"]["pid"]
    os.kill(pid, signal.SIGKILL)
    t0 = time.monotonic()
    took, seen = until_served(port, t0, (503,))
    print("\nfront %s: ptyd killed, served again after %.3f s (%d answers "
          "503 before)" % (name, took, len(seen)))
    assert took < BOUND + SLACK, took
    # Each 503 was ptyd.fcgi's own, passed through: the front's answer
    # for a missing ptyd.fcgi replaced none of them.
    assert all(e != "ptyd.fcgi is not running" for _, e in seen), seen
    assert c.health().json()["ptyd"]["pid"] != pid
    t = c.terminals()[sid]
    assert t["running"] is True, t
    assert c.close_term(sid).json()["closed"] is True


def crash_cgi(port, acct, name):
    """A CGI front: killing the ptyd.fcgi under an open stream ends the
    stream; the next request, and a new stream, are served at once."""
    c = Client(port)
    sid = "crashc-%s-%s" % (name, secrets.token_hex(3))
    assert c.start(sid).status == 200
    s = c.stream(sid)
    try:
        assert s.status == 200, (s.status, s.body)
        s.next_event(timeout=10)
        old = acct.fcgi_pids()
        assert old, "no ptyd.fcgi under the stream"
        kill_all(old)
        t0 = time.monotonic()
        took, seen = until_served(port, t0, (503,))
    finally:
        s.close()
    with c.stream(sid) as s2:
        assert s2.status == 200, (s2.status, s2.body)
    print("\nfront %s: the stream's ptyd.fcgi killed, served after %.3f s"
          % (name, took))
    assert took < BOUND + SLACK, took
    assert c.close_term(sid).json()["closed"] is True


class Unrunnable:
    """The account's ptyd.fcgi moved away for a while: the front cannot
    start one, which is the longest "down" a front sees."""

    def __init__(self, acct):
        self.path = acct.fcgi

    def __enter__(self):
        os.rename(self.path, self.path + ".away")
        return self

    def __exit__(self, *a):
        os.rename(self.path + ".away", self.path)


class Dying:
    """The account's ptyd.fcgi replaced for a while by a program that
    kills itself before it answers: a CGI front's crash under a
    request."""

    def __init__(self, acct):
        self.path = acct.fcgi

    def __enter__(self):
        os.rename(self.path, self.path + ".away")
        with open(self.path, "w") as f:
            f.write("#!/bin/sh\nkill -9 $$\n")
        os.chmod(self.path, 0o755)
        return self

    def __exit__(self, *a):
        os.rename(self.path + ".away", self.path)


def down_answers_json(port, allowed, seconds=1.5):
    """For seconds, every answer is a JSON error of an allowed status."""
    seen = []
    t_end = time.monotonic() + seconds
    while time.monotonic() < t_end:
        r = Client(port).list()
        assert_json_error(r, allowed)
        seen.append(r.status)
        time.sleep(0.05)
    return seen


# -- lighttpd -----------------------------------------------------------------

@pytest.fixture
def acct():
    """An account per test: its keeper's backoff counts the deaths of its
    ptyd within 30 s (0, 0, 0.25, 0.5, 1 s ...), and each test's ptyd
    dies once."""
    if os.geteuid() != 0:
        pytest.skip("front server tests start servers as root")
    a = fs.Account()
    yield a
    a.cleanup()


@pytest.fixture
def lighttpd_fastcgi(acct):
    fs.need("lighttpd", "lighttpd")
    d = acct.mkdir("lfcgi-%s" % secrets.token_hex(3))
    srv = fs.lighttpd_server(acct, d,
                             fs.lighttpd_fastcgi_body(acct, d)).start()
    try:
        assert Client(srv.port).list().status == 200
        yield srv
    finally:
        srv.stop()


def test_lighttpd_fastcgi_kill_comes_back(acct, lighttpd_fastcgi):
    """The issue's check: kill -9 every ptyd.fcgi process, a request
    within 2 s is served by a fresh one, again and again; a request the
    kill cut short is lighttpd's 500 (it sent the request, no answer came)
    in JSON; ptyd killed comes back too."""
    port = lighttpd_fastcgi.port
    crash_fcgi(port, acct, "lighttpd-fastcgi", (500, 503), rounds=4)
    crash_ptyd(port, "lighttpd-fastcgi")


def test_lighttpd_fastcgi_down_answers_json(acct, lighttpd_fastcgi):
    """While lighttpd cannot start ptyd.fcgi at all, every answer is the
    contract's JSON 503 (it was lighttpd's HTML page), or 500 for one that
    reached the socket while a start was failing; once it can, a request
    is served within 2 s (lighttpd tries a failed start again every
    other tick of its clock)."""
    port = lighttpd_fastcgi.port
    with Unrunnable(acct):
        kill_all(acct.fcgi_pids())
        seen = down_answers_json(port, (500, 503))
        assert 503 in seen, seen
    took, _ = until_served(port, time.monotonic(), (500, 503))
    print("\nfront lighttpd-fastcgi: ptyd.fcgi back %.3f s after it could "
          "run again" % took)
    assert took < BOUND + SLACK, took


def test_lighttpd_fastcgi_workers_keep_the_socket(acct):
    """The cause, shown: ptyd.fcgi with its pre-forked workers (the file
    without --processes 1) is not started again once every process of it
    is killed, in some of a few tries."""
    fs.need("lighttpd", "lighttpd")
    d = acct.mkdir("lfcgiw")
    with open(os.path.join(REPO, "lighttpd", "ptyd-fastcgi.conf")) as f:
        text = f.read()
    assert '+ " --processes 1"' in text
    conf = os.path.join(d, "ptyd-fastcgi-workers.conf")
    with open(conf, "w") as f:
        f.write(text.replace('+ " --processes 1"', ""))
    body = fs.lighttpd_fastcgi_body(acct, d).replace(
        '"%s/lighttpd/ptyd-fastcgi.conf"' % REPO, '"%s"' % conf)
    srv = fs.lighttpd_server(acct, d, body).start()
    try:
        stuck = 0
        for _ in range(3):
            wait_for(lambda: len(acct.fcgi_pids()) > 1, timeout=10,
                     what="ptyd.fcgi and its workers")
            kill_all(acct.fcgi_pids())
            try:
                until_served(srv.port, time.monotonic(), (500, 503),
                             timeout=4)
            except NotServed:
                stuck += 1
                break
            time.sleep(ROUND_GAP)
        assert stuck, "lighttpd started the workers' ptyd.fcgi again"
    finally:
        srv.stop()


def test_lighttpd_cgi(acct):
    fs.need("lighttpd", "lighttpd")
    d = acct.mkdir("lcgi")
    srv = fs.lighttpd_server(acct, d, fs.lighttpd_cgi_body(acct)).start()
    try:
        crash_cgi(srv.port, acct, "lighttpd-cgi")
        crash_ptyd(srv.port, "lighttpd-cgi")
        # ptyd.fcgi dying under the request: lighttpd's 500, in JSON.
        with Dying(acct):
            down_answers_json(srv.port, (500,), seconds=0.5)
    finally:
        srv.stop()


# -- spawn-fcgi under runit, nginx or Apache in front -------------------------

@pytest.fixture
def runit(acct):
    """ptyd.fcgi by spawn-fcgi under runsv (the shipped run script)."""
    srv, sv, sock = fs.runit_spawn_fcgi(
        acct, "sv-%s" % secrets.token_hex(3), ENV)
    try:
        yield sock
    finally:
        fs.runit_stop(srv, sv, ENV)


def test_nginx_spawn_fcgi_runit(acct, runit):
    """nginx (ptyd-location.conf) in front: runsv starts ptyd.fcgi again;
    meanwhile nginx answers ptyd-errors.conf's JSON 503."""
    fs.need("nginx", "nginx-light")
    ngx = fs.nginx_server(
        acct.mkdir("ngx-%s" % secrets.token_hex(3), owner=False),
        "        include ptyd/ptyd-location.conf;",
        "    upstream ptyd_fcgi { server unix:%s; }\n"
        "    upstream ptyd_fcgi_kept { server unix:%s; keepalive 16; }"
        % (runit, runit)).start()
    try:
        crash_fcgi(ngx.port, acct, "nginx-spawn-fcgi")
        crash_master(ngx.port, acct, "nginx-spawn-fcgi")
        crash_ptyd(ngx.port, "nginx-spawn-fcgi")
    finally:
        ngx.stop()


def test_apache_proxy_fcgi_runit(acct, runit):
    """Apache mod_proxy_fcgi (ptyd-proxy-fcgi.conf) in front of the same:
    its JSON 503 while ptyd.fcgi is away."""
    d = acct.mkdir("proxy-%s" % secrets.token_hex(3), owner=False)
    body = ("Define PTYD_SOCKET %s\nInclude %s/apache/ptyd-proxy-fcgi.conf\n"
            % (runit, REPO))
    srv = fs.apache_server(acct, d, body,
                           ["proxy", "proxy_fcgi", "env", "headers"]).start()
    try:
        crash_fcgi(srv.port, acct, "apache-proxy-fcgi")
        crash_ptyd(srv.port, "apache-proxy-fcgi")
    finally:
        srv.stop()


# -- nginx with the stack script ----------------------------------------------

def test_nginx_stack_fails_closed(make_stack):
    """scripts/ptyd-stack runs ptyd.fcgi unsupervised: killed, it stays
    down, and nginx answers JSON 503 with Retry-After until `ptyd-stack
    start` brings the stack back; ptyd killed, its keeper starts it
    again."""
    fs.need("nginx", "nginx-light")
    st = make_stack("front-crash")
    crash_ptyd(st.port, "nginx-stack")
    with open(os.path.join(st.state, "run", "fcgi.pid")) as f:
        master = int(f.read())
    kids = [int(p) for p in open("/proc/%d/task/%d/children"
                                 % (master, master)).read().split()]
    kill_all([master] + kids)
    seen = down_answers_json(st.port, (503,), seconds=1.0)
    assert seen, seen
    t0 = time.monotonic()
    st.start()
    took, _ = until_served(st.port, t0, (503,))
    print("\nfront nginx-stack: ptyd.fcgi killed: JSON 503 (%d answers), "
          "back %.3f s after ptyd-stack start" % (len(seen), took))


# -- Apache mod_fcgid, with and without suexec --------------------------------

def fcgid_crash(acct, name, body, **kw):
    """mod_fcgid starts ptyd.fcgi again on the next request (a second
    later while it still counts the killed one as busy); the request the
    kill cut short is its 500, in JSON."""
    d = acct.mkdir(name, owner=False)
    srv = fs.apache_server(acct, d, body, ["alias", "fcgid", "headers"],
                           **kw).start()
    try:
        assert Client(srv.port).list().status == 200
        crash_fcgi(srv.port, acct, name, (500, 503))
        crash_ptyd(srv.port, name)
    finally:
        srv.stop()


def test_apache_fcgid(acct):
    req, stream = fs.fcgid_wrappers(
        acct, acct.mkdir("fcgid-bin", owner=False), (0, 0))
    fcgid_crash(acct, "apache-fcgid", fs.fcgid_body(req, stream))


def test_apache_fcgid_suexec(acct):
    """The same through suexec: Apache as www-data, ptyd.fcgi as the
    account (the wrappers under suexec's /var/www)."""
    fs.need_file(SUEXEC, "apache2-suexec-pristine")
    fs.need_file(fs.APACHE_MODULES + "/mod_suexec.so", "apache2")
    pwd.getpwnam("www-data")
    os.makedirs("/var/www", 0o755, exist_ok=True)
    root = "/var/www/ptyd-itest-" + secrets.token_hex(4)
    os.makedirs(root)
    os.chmod(root, 0o755)
    try:
        cgi = os.path.join(root, "cgi")
        os.makedirs(cgi)
        os.chown(cgi, acct.uid, acct.gid)
        req, stream = fs.fcgid_wrappers(acct, cgi, (acct.uid, acct.gid))
        body = fs.fcgid_body(req, stream,
                             "LoadModule suexec_module %s/mod_suexec.so\n"
                             "SuexecUserGroup %s %s"
                             % (fs.APACHE_MODULES, acct.name, acct.name))
        fcgid_crash(acct, "apache-fcgid-suexec", body, user="www-data",
                    docroot=root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


# -- CGI: Apache mod_cgid, nginx with fcgiwrap --------------------------------

def test_apache_cgid(acct):
    d = acct.mkdir("cgid", owner=False)
    srv = fs.apache_server(acct, d, fs.cgid_body(acct),
                           ["alias", "cgid", "headers"]).start()
    try:
        crash_cgi(srv.port, acct, "apache-cgid")
        crash_ptyd(srv.port, "apache-cgid")
        # ptyd.fcgi dying under the request: Apache's 500, in JSON.
        with Dying(acct):
            down_answers_json(srv.port, (500,), seconds=0.5)
    finally:
        srv.stop()


def test_nginx_fcgiwrap(acct):
    fs.need("nginx", "nginx-light")
    fs.need("fcgiwrap", "fcgiwrap")
    ngx, wrap = fs.nginx_fcgiwrap(acct, "fcgiwrap", 4)
    try:
        crash_cgi(ngx.port, acct, "nginx-fcgiwrap")
        crash_ptyd(ngx.port, "nginx-fcgiwrap")
        # ptyd.fcgi dying under the request: fcgiwrap's 502 (plain
        # text), the API's JSON 503 through ptyd-location-fcgiwrap.conf.
        with Dying(acct):
            down_answers_json(ngx.port, (503,), seconds=0.5)
    finally:
        ngx.stop()
        wrap.stop()
