"""test_front_errors.py -- errors keep the API's shape through nginx (DESIGN
2, issue 12): what nginx answers itself is JSON like what ptyd.fcgi
answers, the 413 comes in the contract's status order, the stream's
X-Accel-Buffering reaches the client, and every 503 says Retry-After.

Regression: nginx answered a body over its limit with its own HTML 413,
before the gate (a public client got 413, not 403); it kept
X-Accel-Buffering to itself; a stopped ptyd.fcgi gave nginx's HTML 502;
and list's 503 carried no Retry-After.
"""

import json
import os
import signal
import pytest

from ptyd_stack import wait_for

JSON = {"Content-Type": "application/json"}
PUBLIC = {"X-Forwarded-For": "203.0.113.9"}


def assert_api_error(r, status, message=None):
    assert r.status == status, r
    assert r.header("content-type", "").startswith("application/json"), r
    assert r.header("cache-control") == "no-store", r
    body = r.json()
    assert set(body) == {"error"}, body
    if message is not None:
        assert body["error"] == message, body
    if status in (429, 503):
        assert r.header("retry-after", "").isdigit(), r


@pytest.fixture(scope="module")
def st(make_stack):
    return make_stack("front-errors", env=["PTYD_TRUST_FORWARDED_FOR=1"])


@pytest.mark.parametrize("size", [70 * 1024, 127 * 1024, 900 * 1024,
                                  3 * 1024 * 1024])
def test_body_too_large_is_the_apis_json_413(st, size):
    body = json.dumps({"session_id": "x", "data": "a" * size})
    r = st.client().request("POST", "input", body, headers=JSON)
    assert_api_error(r, 413, "request body too large")


def test_gate_comes_before_413_through_nginx(st):
    # A public client's large body is refused by the gate first.
    body = json.dumps({"session_id": "x", "data": "a" * (100 * 1024)})
    r = st.client().request("POST", "input", body,
                            headers=dict(JSON, **PUBLIC))
    assert_api_error(r, 403)
    # And a wrong method before the body's size.
    r = st.client().request("GET", "input?x=" + "a" * 10, None)
    assert r.status == 405, r


def test_stream_passes_x_accel_buffering_to_the_client(st, new_sid):
    c = st.client()
    sid = new_sid()
    assert c.start(sid).status == 200
    try:
        with c.stream(sid) as s:
            assert s.status == 200
            assert s.headers.get("x-accel-buffering") == "no", s.headers
    finally:
        c.close_term(sid)


def test_every_503_carries_retry_after(make_stack):
    st = make_stack("front-503", fcgi_args=["--no-autostart"])
    c = st.client()
    pid = st.ptyd_pid()
    # ptyd gone (and not autostarted again): ptyd.fcgi answers 503.
    os.kill(pid, signal.SIGTERM)
    wait_for(lambda: c.get("health").status == 503, 10,
             what="health 503 once ptyd is gone")
    for r in (c.get("list"), c.get("health"),
              c.post("input", {"session_id": "x", "data": "y"}),
              c.post("start", {"session_id": "x"})):
        assert_api_error(r, 503)
    # ptyd.fcgi gone: nginx answers, in the API's shape.
    fpid = int(open(os.path.join(st.state, "run", "fcgi.pid")).read())
    os.kill(fpid, signal.SIGTERM)
    wait_for(lambda: c.get("health").status != 503 or
             c.get("health").json()["error"] == "ptyd.fcgi is not running",
             10, what="nginx's own 503")
    for r in (c.get("list"), c.get("health"),
              c.post("input", {"session_id": "x", "data": "y"})):
        assert_api_error(r, 503, "ptyd.fcgi is not running")


def test_slow_bodies_hold_no_ptyd_fcgi_thread(make_stack):
    """Regression: nginx passed bodies on as they came, so a client that
    sent one byte every few seconds held a ptyd.fcgi thread for as long
    as it liked, refused by the gate or not: a few thousand such
    connections took every thread, and health stopped answering."""
    import socket
    import time
    st = make_stack("slow-bodies", env=["PTYD_TRUST_FORWARDED_FOR=1"],
                    fcgi_args=["--processes", "1", "--max-threads", "4"])
    slow = []
    try:
        for _ in range(12):
            s = socket.create_connection(("127.0.0.1", st.port))
            s.sendall(b"POST /api/terminal/input HTTP/1.1\r\nHost: "
                      b"127.0.0.1:%d\r\nX-Forwarded-For: 203.0.113.9\r\n"
                      b"Content-Type: application/json\r\n"
                      b"Content-Length: 60000\r\n\r\n{" % st.port)
            slow.append(s)
        time.sleep(1)
        for s in slow:
            s.sendall(b" ")
        t0 = time.monotonic()
        r = st.client().get("health", timeout=10)
        took = time.monotonic() - t0
        assert r.status == 200, r
        assert took < 2.0, "health took %.1f s with 12 slow bodies" % took
    finally:
        for s in slow:
            s.close()
