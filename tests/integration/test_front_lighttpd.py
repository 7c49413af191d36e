"""test_front_lighttpd.py -- ptyd behind lighttpd 1.4 (issue 14): with
mod_fastcgi starting ptyd.fcgi itself, and as plain CGI (mod_cgi), each
through the shipped lighttpd/*.conf and the same walk through the API
(front_servers.exercise).

Regressions: without server.stream-response-body lighttpd keeps the
whole stream until it ends; and a CGI condition on "^/api/terminal/" no
longer held once lighttpd had split off PATH_INFO, so mod_staticfile
sent the ptyd.fcgi binary itself as the answer.
"""

import os

import pytest

import front_servers as fs
from ptyd_http import Client
from ptyd_stack import REPO


@pytest.fixture(scope="module")
def acct():
    fs.need("lighttpd", "lighttpd")
    a = fs.Account()
    yield a
    a.cleanup()


def test_fastcgi(acct):
    d = acct.mkdir("lfcgi")
    srv = fs.lighttpd_server(acct, d,
                             fs.lighttpd_fastcgi_body(acct, d)).start()
    try:
        fig = fs.exercise(srv.port, "lighttpd-fastcgi")
        assert fs.forged_server_port(srv.port) == 403
        assert fig["echo_p50_ms"] < 250, fig
    finally:
        srv.stop()


def test_fastcgi_buffered_stream_is_held(acct):
    """lighttpd's default (stream-response-body 0) holds the stream back
    (docs/deploy.md, Buffering); the shipped file sets 2."""
    d = acct.mkdir("lfcgibuf")
    body = fs.lighttpd_fastcgi_body(acct, d).replace(
        "ptyd-fastcgi.conf", "ptyd-fastcgi-buffered.conf")
    with open(os.path.join(REPO, "lighttpd", "ptyd-fastcgi.conf")) as f:
        text = f.read()
    assert "server.stream-response-body = 2" in text
    buffered = os.path.join(d, "ptyd-fastcgi-buffered.conf")
    with open(buffered, "w") as f:
        f.write(text.replace("server.stream-response-body = 2",
                             "server.stream-response-body = 0"))
    body = body.replace('"%s/lighttpd/ptyd-fastcgi-buffered.conf"' % REPO,
                        '"%s"' % buffered)
    srv = fs.lighttpd_server(acct, d, body).start()
    try:
        assert fs.stream_is_buffered(srv.port, "lighttpd-buffered")
    finally:
        srv.stop()


def test_cgi(acct):
    d = acct.mkdir("lcgi")
    srv = fs.lighttpd_server(acct, d, fs.lighttpd_cgi_body(acct)).start()
    try:
        # Every endpoint is the program's answer, never the program.
        c = Client(srv.port)
        for path in ("/api/terminal", "/api/terminal/", "/api/terminal/list"):
            r = c.request("GET", path)
            assert not r.body.startswith(b"\x7fELF"), (path, r.status)
            assert r.header("content-type", "").startswith(
                "application/json"), (path, r)
        fig = fs.exercise(srv.port, "lighttpd-cgi")
        assert fs.forged_server_port(srv.port) == 403
        assert fig["echo_p50_ms"] < 250, fig
    finally:
        srv.stop()
