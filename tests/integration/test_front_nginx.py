"""test_front_nginx.py -- ptyd behind nginx (issue 14): ptyd.fcgi as its
own FastCGI server (scripts/ptyd-stack, nginx/ptyd-location.conf), and as
plain CGI through fcgiwrap (nginx/ptyd-location-fcgiwrap.conf), each
passing the same walk through the API (front_servers.exercise).

fcgiwrap holds a stream back (libfcgi's 8 KiB buffer, flushed only when
full or at the end): through it every short request works and the stream
is buffered, which the test pins so the README's word stays true.
"""

import os
import time

import pytest

import front_servers as fs
from ptyd_http import Client


def test_fastcgi(make_stack):
    """nginx with ptyd.fcgi as a FastCGI server, as the demo runs it."""
    fs.need("nginx", "nginx-light")
    st = make_stack("front-nginx")
    fig = fs.exercise(st.port, "nginx-fastcgi")
    assert fig["echo_p50_ms"] < 250, fig


@pytest.fixture(scope="module")
def acct():
    fs.need("nginx", "nginx-light")
    fs.need("fcgiwrap", "fcgiwrap")
    a = fs.Account()
    yield a
    a.cleanup()


def fcgiwrap_stack(acct, name, children):
    """fcgiwrap as the account with `children` processes, and nginx in
    front of it with the shipped location.  Returns (nginx, fcgiwrap)."""
    d = acct.mkdir(name)
    sock = os.path.join(d, "fcgiwrap.sock")
    wrap = fs.Server("fcgiwrap", [
        "setpriv", "--reuid", str(acct.uid), "--regid", str(acct.gid),
        "--init-groups", fs.need("fcgiwrap", "fcgiwrap"),
        "-c", str(children), "-s", "unix:" + sock],
        os.path.join(d, "fcgiwrap.log")).start()
    fs.wait_for(lambda: os.path.exists(sock), timeout=10,
                what="fcgiwrap's socket")
    ngx = fs.nginx_server(
        acct.mkdir(name, "nginx", owner=False),
        "        set $ptyd_cgi %s;\n"
        "        include ptyd/ptyd-location-fcgiwrap.conf;" % acct.fcgi,
        "    upstream ptyd_fcgiwrap { server unix:%s; }" % sock)
    try:
        ngx.start()
    except Exception:
        wrap.stop()
        raise
    return ngx, wrap


def test_fcgiwrap(acct):
    """Every short request works through fcgiwrap; the stream does not:
    fcgiwrap copies the program's output into libfcgi's 8 KiB stream
    buffer and writes it only when that is full or the program ends, so
    the page's events never come (README, Buffering).  Should fcgiwrap
    ever pass output on as it comes, this fails: then run the whole walk
    (front_servers.exercise) here."""
    ngx, wrap = fcgiwrap_stack(acct, "fcgiwrap", 4)
    try:
        c = Client(ngx.port)
        r = c.start("fw", rows=24, cols=80)
        assert r.status == 200 and r.json()["running"] is True, r
        t0 = time.monotonic()
        r = c.input("fw", "true\r")
        post_ms = (time.monotonic() - t0) * 1000
        assert r.status == 200, r
        assert c.resize("fw", rows=30, cols=90).status == 200
        t = c.terminals()["fw"]
        assert (t["rows"], t["cols"]) == (30, 90), t
        assert c.close_term("fw").json()["closed"] is True
        print("\nfront nginx-fcgiwrap: POST %.1f ms; stream buffered" % post_ms)
        assert fs.stream_is_buffered(ngx.port, "nginx-fcgiwrap")
    finally:
        ngx.stop()
        wrap.stop()
