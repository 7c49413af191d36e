"""test_front_apache.py -- ptyd behind Apache 2.4 (issue 14): mod_fcgid
with and without suexec, mod_cgid as plain CGI, and mod_proxy_fcgi to
ptyd.fcgi --listen, each through the shipped apache/*.conf, each passing
the same walk through the API (front_servers.exercise).

Regression: under mod_fcgid the first POST while a stream was open took a
second (mod_fcgid sleeps 1 s when every process of a class is busy, and
the stream held the only one); the shipped config puts the stream in a
class of its own.  Under suexec no PTYD_* reaches ptyd.fcgi: its settings
must come from the account's ~/.config/ptyd/ptyd.conf.  mod_proxy_fcgi
with enablereuse=on sends the stream on a kept connection, which
ptyd.fcgi refused with 400.
"""

import os
import pwd
import secrets
import shutil
import statistics
import time

import pytest

import front_servers as fs
from ptyd_http import Client, fcgi_connections

SUEXEC = "/usr/lib/apache2/suexec"


@pytest.fixture(scope="module")
def acct():
    fs.need("apache2", "apache2")
    a = fs.Account()
    yield a
    a.cleanup()


def running(server):
    server.start()
    return server


def first_post_during_stream(port, n=10):
    """Open a stream, then time n POSTs, each the first one since its
    stream opened (a new terminal and stream each time)."""
    c = Client(port)
    out = []
    for _ in range(n):
        sid = "fp-%s" % secrets.token_hex(3)
        assert c.start(sid).status == 200
        s = c.stream(sid)
        try:
            assert s.status == 200, s.body
            t0 = time.monotonic()
            r = c.input(sid, "true\r")
            out.append((time.monotonic() - t0) * 1000)
            assert r.status == 200, r
        finally:
            s.close()
            c.close_term(sid)
    return out


def test_fcgid(acct):
    """mod_fcgid, Apache's User the account: the walk, and the first POST
    while a stream is open answered at once (it took 1 s)."""
    d = acct.mkdir("fcgid", owner=False)
    req, stream = fs.fcgid_wrappers(
        acct, acct.mkdir("fcgid", "bin", owner=False), (0, 0))
    srv = running(fs.apache_server(acct, d, fs.fcgid_body(req, stream),
                                   ["alias", "fcgid"]))
    try:
        fig = fs.exercise(srv.port, "apache-fcgid")
        assert fs.forged_server_port(srv.port) == 403
        times = first_post_during_stream(srv.port)
        p50 = statistics.median(times)
        print("apache-fcgid: first POST during a stream, p50 %.1f ms, "
              "max %.1f ms" % (p50, max(times)))
        assert fig["first_post_ms"] < 500, fig
        assert p50 < 100 and max(times) < 500, times
        assert fig["echo_p50_ms"] < 250, fig
    finally:
        srv.stop()


def test_fcgid_one_class_waits(acct):
    """The cause, shown: the stream in the same class as the POSTs (one
    wrapper for both) makes the first POST wait mod_fcgid's second (once:
    from then on the class has a second process)."""
    d = acct.mkdir("fcgid1", owner=False)
    req, _ = fs.fcgid_wrappers(
        acct, acct.mkdir("fcgid1", "bin", owner=False), (0, 0))
    srv = running(fs.apache_server(acct, d, fs.fcgid_body(req, req),
                                   ["alias", "fcgid"]))
    try:
        times = first_post_during_stream(srv.port, n=1)
        assert times[0] > 900, times
    finally:
        srv.stop()


def test_fcgid_buffered_stream_is_held(acct):
    """Without FcgidOutputBufferSize 0 mod_fcgid holds the stream back
    (docs/deploy.md, Buffering); the shipped file sets it."""
    d = acct.mkdir("fcgidbuf", owner=False)
    req, stream = fs.fcgid_wrappers(
        acct, acct.mkdir("fcgidbuf", "bin", owner=False), (0, 0))
    body = fs.fcgid_body(req, stream) + "FcgidOutputBufferSize 65536\n"
    srv = running(fs.apache_server(acct, d, body, ["alias", "fcgid"]))
    try:
        assert fs.stream_is_buffered(srv.port, "apache-fcgid-buffered")
    finally:
        srv.stop()


@pytest.fixture
def suexec_tree(acct):
    """suexec's compiled-in document root is /var/www: the wrappers go to
    /var/www/ptyd-itest-<random>/, the account's, removed afterwards."""
    fs.need_file(SUEXEC, "apache2-suexec-pristine")
    fs.need_file(fs.APACHE_MODULES + "/mod_suexec.so", "apache2")
    try:
        pwd.getpwnam("www-data")
    except KeyError:
        pytest.skip("no www-data account (suexec only obeys it)")
    if not os.path.isdir("/var/www"):
        os.makedirs("/var/www", 0o755)
    root = "/var/www/ptyd-itest-" + secrets.token_hex(4)
    os.makedirs(root)
    os.chmod(root, 0o755)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_fcgid_suexec(acct, suexec_tree):
    """mod_fcgid through suexec: Apache runs as www-data, ptyd.fcgi and
    its ptyd as the account, with the settings of the account's own
    ptyd.conf (suexec passed no PTYD_*)."""
    cgi = os.path.join(suexec_tree, "cgi")
    os.makedirs(cgi)
    os.chown(cgi, acct.uid, acct.gid)
    req, stream = fs.fcgid_wrappers(acct, cgi, (acct.uid, acct.gid))
    d = acct.mkdir("suexec", owner=False)
    body = fs.fcgid_body(req, stream,
                      "LoadModule suexec_module %s/mod_suexec.so\n"
                      "SuexecUserGroup %s %s"
                      % (fs.APACHE_MODULES, acct.name, acct.name))
    srv = running(fs.apache_server(acct, d, body, ["alias", "fcgid"],
                                   user="www-data", docroot=suexec_tree))
    try:
        fs.exercise(srv.port, "apache-fcgid-suexec")
        assert fs.forged_server_port(srv.port) == 403
        # ptyd came up as the account, in the state_dir of its ptyd.conf.
        with open(os.path.join(acct.state, "ptyd.pid")) as f:
            pid = int(f.read())
        assert os.stat("/proc/%d" % pid).st_uid == acct.uid
        fcgi = [p for p in acct.pids()
                if open("/proc/%d/comm" % p).read().strip() == "ptyd.fcgi"]
        assert fcgi, "no ptyd.fcgi of the account"
    finally:
        srv.stop()


def test_cgid(acct):
    """mod_cgid, ptyd.fcgi as plain CGI: the walk, the stream unbuffered."""
    d = acct.mkdir("cgid", owner=False)
    srv = running(fs.apache_server(acct, d, fs.cgid_body(acct),
                                   ["alias", "cgid"]))
    try:
        fig = fs.exercise(srv.port, "apache-cgid")
        assert fs.forged_server_port(srv.port) == 403
        assert fig["echo_p50_ms"] < 250, fig
    finally:
        srv.stop()


@pytest.fixture
def fcgi_listen(acct):
    """ptyd.fcgi as the account, a FastCGI server of its own on a socket
    of mode 0600 (Apache runs as the account; spawn-fcgi/run's group
    www-data is test_front_spawn_fcgi's).  Yields the socket's path."""
    run = acct.mkdir("proxy-run")
    sock = os.path.join(run, "fcgi.sock")
    srv = fs.Server("ptyd.fcgi", [
        fs.need("setpriv", "util-linux"), "--reuid=%d" % acct.uid,
        "--regid=%d" % acct.gid, "--init-groups", acct.fcgi,
        "--listen", sock],
        os.path.join(acct.dir, "proxy-fcgi.log"),
        env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}).start()
    try:
        fs.wait_for(lambda: os.path.exists(sock), timeout=10,
                    what=lambda: "ptyd.fcgi's socket; log:\n" + srv.tail())
        yield sock
    finally:
        srv.stop()


def test_proxy_fcgi(acct, fcgi_listen):
    """mod_proxy_fcgi with the shipped file (enablereuse=on: every
    request, the stream's too, on a kept connection): the walk, the
    stream unbuffered, and a stream's connection
    good for keystrokes after its terminal ended it (each stream was
    refused with 400 before ptyd.fcgi gave such a connection back)."""
    d = acct.mkdir("proxy", owner=False)
    body = ("Define PTYD_SOCKET %s\nInclude %s/apache/ptyd-proxy-fcgi.conf\n"
            % (fcgi_listen, fs.REPO))
    srv = running(fs.apache_server(acct, d, body,
                                   ["proxy", "proxy_fcgi", "env"]))
    try:
        fig = fs.exercise(srv.port, "apache-proxy-fcgi")
        assert fs.forged_server_port(srv.port) == 403
        assert fig["echo_p50_ms"] < 250, fig
        assert not fs.stream_is_buffered(srv.port, "apache-proxy-fcgi")
        c = Client(srv.port)
        kept = fcgi_connections(c, "kept")
        for i in range(10):
            sid = "pf-%d-%s" % (i, secrets.token_hex(3))
            assert c.start(sid).status == 200
            s = c.stream(sid)
            try:
                assert s.status == 200, (s.status, s.body)
                assert c.close_term(sid).status == 200
                s.read_until(lambda e: e.name == "terminal_closed",
                             timeout=10)
            finally:
                s.close()
            for j in range(5):
                r = c.list()
                assert r.status == 200, (i, j, r)
        assert fcgi_connections(c, "kept") >= kept + 50, srv.tail()
    finally:
        srv.stop()


def test_proxy_fcgi_without_flushpackets_holds_the_stream(acct, fcgi_listen):
    """The shipped file's flushpackets=on, shown needed: without it
    mod_proxy_fcgi holds the stream's events (docs/deploy.md,
    Buffering)."""
    d = acct.mkdir("proxybuf", owner=False)
    body = ('<Location "/api/terminal/">\n'
            '    ProxyPass "unix:%s|fcgi://localhost/api/terminal/" '
            'enablereuse=on\n'
            '    Require all granted\n'
            '</Location>\n' % fcgi_listen)
    srv = running(fs.apache_server(acct, d, body, ["proxy", "proxy_fcgi"]))
    try:
        assert fs.stream_is_buffered(srv.port, "apache-proxy-fcgi-buffered")
    finally:
        srv.stop()


def test_proxy_fcgi_down_answers_json(acct):
    """ptyd.fcgi not running (nothing on PTYD_SOCKET): the shipped file
    answers the contract's 503 in JSON, as ptyd-errors.conf does under
    nginx, not Apache's HTML page."""
    d = acct.mkdir("proxydown", owner=False)
    body = ("Define PTYD_SOCKET %s\nInclude %s/apache/ptyd-proxy-fcgi.conf\n"
            % (os.path.join(d, "no-such.sock"), fs.REPO))
    srv = running(fs.apache_server(acct, d, body,
                                   ["proxy", "proxy_fcgi", "env", "headers"]))
    try:
        r = Client(srv.port).list()
        assert r.status == 503, r
        assert r.headers["content-type"].startswith("application/json"), \
            r.headers
        assert r.json() == {"error": "ptyd.fcgi is not running"}, r.body
        assert r.headers.get("retry-after") == "1", r.headers
        assert r.headers.get("cache-control") == "no-store", r.headers
    finally:
        srv.stop()


@pytest.mark.parametrize("conf,names", [
    ("ptyd-proxy-fcgi.conf", ["PTYD_SOCKET"]),
    ("ptyd-fcgid.conf", ["PTYD_FCGI", "PTYD_FCGI_STREAM"]),
    ("ptyd-cgid.conf", ["PTYD_CGI"]),
])
def test_include_without_define_is_refused(acct, conf, names):
    """A shipped file included without the Define it needs: Apache
    refuses the configuration and names the Define (it used to start,
    with a warning, and pass requests to a path made of nothing)."""
    mods = {"ptyd-proxy-fcgi.conf": ["proxy", "proxy_fcgi"],
            "ptyd-fcgid.conf": ["fcgid"],
            "ptyd-cgid.conf": ["cgid", "alias"]}[conf]
    for missing in names:
        d = acct.mkdir("nodef-%s-%s" % (conf.split(".")[0], missing),
                       owner=False)
        body = "".join("Define %s %s\n" % (n, os.path.join(d, n.lower()))
                       for n in names if n != missing)
        body += "Include %s/apache/%s\n" % (fs.REPO, conf)
        with pytest.raises(AssertionError,
                           match="needs Define %s " % missing):
            fs.apache_server(acct, d, body, mods)
