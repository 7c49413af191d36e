"""test_frame.py -- who may frame the page and the API (DESIGN 6, issue 29).

A page of another origin framed the terminal at opacity 0.01, and the
visitor's click and typed command ran in their shell: nothing said who
may frame it.  Every page configuration the project ships (the demo's
nginx, nginx/ptyd-page.conf, apache/ptyd-page.conf) and every answer of
ptyd.fcgi, errors and the stream included, now says it: CSP
frame-ancestors 'self' with X-Frame-Options SAMEORIGIN, unless the one
setting names other origins, and then no X-Frame-Options.  (The browser
suite checks that a browser obeys: tests/browser/security.mjs.)
"""

import http.client
import os
import shutil
import subprocess
import tempfile

import pytest

import front_servers as fs
from ptyd_http import API, Client
from ptyd_stack import REPO

PAGE_CSP = ("default-src 'none'; script-src 'self'; style-src 'self' "
            "'unsafe-inline'; img-src 'self'; connect-src 'self'; "
            "base-uri 'none'; form-action 'self'; frame-ancestors %s")
API_CSP = "frame-ancestors %s; default-src 'none'"
OTHER = "'self' https://portal.example.com:8443"


def raw(port, method, path, body=None, headers=None):
    """(status, every header value by lower-cased name, as a list): a
    header sent twice must show twice."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        h = {"Host": "127.0.0.1:%d" % port, "Connection": "close"}
        h.update(headers or {})
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        out = {}
        for k, v in r.getheaders():
            out.setdefault(k.lower(), []).append(v)
        # A stream does not end: its headers are all we want.
        if not r.getheader("content-type", "").startswith(
                "text/event-stream"):
            r.read()
        return r.status, out
    finally:
        c.close()


def frame_rule(headers, csp, xfo):
    """One CSP, exactly csp; X-Frame-Options exactly xfo, or none."""
    assert headers.get("content-security-policy") == [csp], headers
    if xfo is None:
        assert "x-frame-options" not in headers, headers
    else:
        assert headers.get("x-frame-options") == [xfo], headers


def api_answers(port, sid):
    """Each kind of API answer: JSON, the contract's errors, nginx's own
    error page, the output stream."""
    out = {}
    out["health"] = raw(port, "GET", API + "health")
    out["405"] = raw(port, "GET", API + "start")
    out["404"] = raw(port, "GET", API + "no-such-endpoint")
    out["413 (nginx)"] = raw(port, "POST", API + "input", body=b"x" * 300000,
                             headers={"Content-Type": "application/json"})
    assert Client(port).start(sid).status == 200
    out["stream"] = raw(port, "GET", API + "output?session_id=" + sid)
    return out


def test_demo_page_and_api_say_only_this_origin_frames_them(make_stack):
    """The default: the page (and what it loads, under / and /sub/) with
    the page's CSP and SAMEORIGIN; every kind of API answer with
    ptyd.fcgi's own rule, once, not the page's on top."""
    st = make_stack("frame-default")
    for path in ("/", "/sub/", "/app.js",
                 "/node_modules/@xterm/xterm/lib/xterm.mjs"):
        status, h = raw(st.port, "GET", path)
        assert status == 200, (path, status)
        frame_rule(h, PAGE_CSP % "'self'", "SAMEORIGIN")
    for what, (status, h) in api_answers(st.port, "frame-dflt").items():
        assert status in (200, 404, 405, 413), (what, status)
        frame_rule(h, API_CSP % "'self'", "SAMEORIGIN")


def test_demo_one_setting_lets_another_origin_frame(make_stack):
    """--frame-ancestors names another origin: the page and the API say
    it, and neither sends an X-Frame-Options that would contradict it.
    nginx's own JSON errors keep 'self': nothing there to frame."""
    st = make_stack("frame-other", frame_ancestors=OTHER)
    status, h = raw(st.port, "GET", "/")
    assert status == 200
    frame_rule(h, PAGE_CSP % OTHER, None)
    for what, (status, h) in api_answers(st.port, "frame-other").items():
        if what == "413 (nginx)":
            frame_rule(h, API_CSP % "'self'", "SAMEORIGIN")
        else:
            frame_rule(h, API_CSP % OTHER, None)


def test_fcgi_refuses_a_frame_ancestors_that_would_add_a_directive():
    """A value with ';' would let the setting write any CSP (or, with a
    newline, any header): ptyd.fcgi refuses to start."""
    prog = os.path.join(os.environ.get("PTYD_BUILDDIR", REPO), "fcgi",
                        "ptyd.fcgi")
    r = subprocess.run([prog, "--frame-ancestors", "'self'; script-src *",
                        "--print-config"], capture_output=True, timeout=10)
    assert r.returncode != 0, r
    assert b"frame_ancestors" in r.stderr, r.stderr
    r = subprocess.run([prog, "--frame-ancestors", "'none'",
                        "--print-config"], capture_output=True, timeout=10)
    assert r.returncode == 0 and b"frame_ancestors = 'none'" in r.stdout, r


@pytest.fixture
def open_dir():
    """A temp dir every user may enter: Apache reads the page as
    www-data."""
    d = tempfile.mkdtemp(prefix="ptyd-frame-")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def installed_page(d):
    """A page folder as installed (index.html, assets/) and the shipped
    nginx and Apache page configurations made for it, as make does."""
    web = os.path.join(d, "share", "web")
    os.makedirs(os.path.join(web, "assets"))
    with open(os.path.join(web, "index.html"), "w") as f:
        f.write("<!doctype html><title>ptyd</title>\n")
    with open(os.path.join(web, "assets", "app.0123456789ab.js"), "w") as f:
        f.write("export {};\n")
    return os.path.join(d, "share")


@pytest.mark.parametrize("setting, csp, xfo", [
    ("'self'", PAGE_CSP % "'self'", "SAMEORIGIN"),
    ("'none'", PAGE_CSP % "'none'", "DENY"),
    (OTHER, PAGE_CSP % OTHER, None),
])
def test_shipped_nginx_page_conf(tmp_path, setting, csp, xfo):
    """nginx/ptyd-page.conf as installed, with $ptyd_frame_ancestors set
    in the server: index.html and the assets say the rule."""
    fs.need("nginx", "nginx-light")
    d = str(tmp_path)
    share = installed_page(d)
    srv = fs.nginx_server(d, '        set $ptyd_frame_ancestors "%s";\n'
                          "        include ptyd/ptyd-page.conf;\n" % setting)
    fs.subst(os.path.join(REPO, "nginx", "ptyd-page.conf.in"),
             os.path.join(d, "ptyd", "ptyd-page.conf"), mode=0o644,
             pkgdatadir=share)
    srv.start()
    try:
        for path in ("/", "/assets/app.0123456789ab.js"):
            status, h = raw(srv.port, "GET", path)
            assert status == 200, (path, status, srv.tail())
            frame_rule(h, csp, xfo)
    finally:
        srv.stop()


def test_shipped_nginx_page_conf_without_the_setting_is_refused(tmp_path):
    """Forgetting the setting never serves the page unprotected: nginx
    refuses the configuration."""
    nginx = fs.need("nginx", "nginx-light")
    d = str(tmp_path)
    share = installed_page(d)
    fs.nginx_server(d, "        include ptyd/ptyd-page.conf;\n")
    fs.subst(os.path.join(REPO, "nginx", "ptyd-page.conf.in"),
             os.path.join(d, "ptyd", "ptyd-page.conf"), mode=0o644,
             pkgdatadir=share)
    r = subprocess.run([nginx, "-t", "-p", d + "/", "-c",
                        os.path.join(d, "nginx.conf"), "-e",
                        os.path.join(d, "error.log")],
                       capture_output=True, timeout=30)
    assert r.returncode != 0, r
    assert b"ptyd_frame_ancestors" in r.stderr, r.stderr


@pytest.mark.parametrize("define, csp, xfo", [
    ("", PAGE_CSP % "'self'", "SAMEORIGIN"),
    ('Define PTYD_FRAME_ANCESTORS "%s"\n' % OTHER, PAGE_CSP % OTHER, None),
])
def test_shipped_apache_page_conf(open_dir, define, csp, xfo):
    """apache/ptyd-page.conf as installed: 'self' and SAMEORIGIN unless
    PTYD_FRAME_ANCESTORS names other origins, then no X-Frame-Options."""
    d = open_dir
    share = installed_page(d)
    conf = fs.subst(os.path.join(REPO, "apache", "ptyd-page.conf.in"),
                    os.path.join(d, "ptyd-page.conf"), mode=0o644,
                    pkgdatadir=share)
    srv = fs.apache_server(None, os.path.join(d, "apache"),
                           "TypesConfig /etc/mime.types\n%sInclude %s\n"
                           % (define, conf),
                           ["headers", "mime", "dir"], user="www-data",
                           docroot=os.path.join(share, "web"))
    srv.start()
    try:
        for path in ("/", "/assets/app.0123456789ab.js"):
            status, h = raw(srv.port, "GET", path)
            assert status == 200, (path, status, srv.tail())
            frame_rule(h, csp, xfo)
    finally:
        srv.stop()
