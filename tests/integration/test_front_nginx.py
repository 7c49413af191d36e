"""test_front_nginx.py -- ptyd behind nginx (issue 14): ptyd.fcgi as its
own FastCGI server (scripts/ptyd-stack, nginx/ptyd-location.conf), and as
plain CGI through fcgiwrap (nginx/ptyd-location-fcgiwrap.conf), each
passing the same walk through the API (front_servers.exercise).

fcgiwrap holds a stream back (libfcgi's 8 KiB buffer, flushed only when
full or at the end); the shipped location makes ptyd.fcgi pad each write
past it (PTYD_STREAM_PADDING), and the walk passes.
"""

import pytest

import front_servers as fs


def test_fastcgi(make_stack):
    """nginx with ptyd.fcgi as a FastCGI server, as the demo runs it."""
    fs.need("nginx", "nginx-light")
    st = make_stack("front-nginx")
    fig = fs.exercise(st.port, "nginx-fastcgi")
    assert fs.forged_server_port(st.port) == 403
    assert fig["echo_p50_ms"] < 250, fig


@pytest.fixture(scope="module")
def acct():
    fs.need("nginx", "nginx-light")
    fs.need("fcgiwrap", "fcgiwrap")
    a = fs.Account()
    yield a
    a.cleanup()


def test_fcgiwrap(acct):
    """The whole walk through fcgiwrap: its 8 KiB stream buffer would hold
    the events back (libfcgi's, flushed only when full or at the end);
    the shipped location sets PTYD_STREAM_PADDING, so ptyd.fcgi pads each
    write of the stream past it."""
    ngx, wrap = fs.nginx_fcgiwrap(acct, "fcgiwrap", 4)
    try:
        fig = fs.exercise(ngx.port, "nginx-fcgiwrap", rounds=5)
        assert fs.forged_server_port(ngx.port) == 403
        print("\nfront nginx-fcgiwrap: %r" % (fig,))
    finally:
        ngx.stop()
        wrap.stop()
