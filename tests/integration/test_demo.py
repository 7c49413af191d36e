"""test_demo.py -- the quick start's first command, scripts/demo, serves
the page as it is installed (issue 32): index.html never cached without
asking, assets with hashed names, gzipped and immutable, no node_modules
and no source page; `--page source` serves web/ as it is, for a developer.

Regression: the demo served the source page (app.js and node_modules,
uncompressed and uncached) while `make install` ships the built one, so a
newcomer's first look was at the slower page.
"""

import http.client
import os
import re
import subprocess

import pytest

from ptyd_stack import REPO, free_port

pytestmark = pytest.mark.deadline(240)


def get(port, path, gzip=False):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        h = {"Host": "127.0.0.1:%d" % port}
        if gzip:
            h["Accept-Encoding"] = "gzip"
        c.request("GET", path, headers=h)
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def demo(tmp_path, *args):
    port = free_port()
    state = str(tmp_path / "state")
    env = dict(os.environ, PTYD_NO_BUILD="1")
    r = subprocess.run([os.path.join(REPO, "scripts", "demo"), "--port",
                        str(port), "--state", state] + list(args),
                       env=env, stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=180)
    assert r.returncode == 0, r.stderr.decode(errors="replace")[-2000:]
    return port, state


def stop(state):
    subprocess.run([os.path.join(REPO, "scripts", "ptyd-stack"), "stop",
                    "--state", state], stdin=subprocess.DEVNULL,
                   capture_output=True, timeout=60)


def test_the_demo_serves_the_page_as_installed(tmp_path):
    port, state = demo(tmp_path)
    try:
        status, h, body = get(port, "/")
        assert status == 200 and h["cache-control"] == "no-cache", h
        assets = re.findall(rb'assets/[^"]+\.[0-9a-f]{12}\.(?:js|css)', body)
        assert assets, body[:400]
        for a in assets:
            status, h, _ = get(port, "/" + a.decode(), gzip=True)
            assert status == 200, a
            assert h.get("content-encoding") == "gzip", (a, h)
            assert "immutable" in h.get("cache-control", ""), (a, h)
        for p in ("/app.js", "/node_modules/@xterm/xterm/lib/xterm.mjs"):
            assert get(port, p)[0] == 404, p
        # And it is a working stack: the API answers behind it.
        assert get(port, "/api/terminal/list")[0] == 200
    finally:
        stop(state)


def test_the_demo_serves_the_source_page_when_asked(tmp_path):
    port, state = demo(tmp_path, "--page", "source")
    try:
        status, _, body = get(port, "/")
        assert status == 200 and b'src="app.js"' in body, body[:400]
        assert get(port, "/app.js")[0] == 200
    finally:
        stop(state)
