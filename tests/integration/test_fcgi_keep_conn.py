"""test_fcgi_keep_conn.py -- FastCGI connections the web server keeps
(FCGI_KEEP_CONN: nginx's fastcgi_keep_conn with an upstream keepalive
pool) carry one request after another (fcgi/poolpark.c parks them between
requests); a connection without the flag still ends with its request.

Regressions these catch: a kept connection closed after its first request
(nginx would find it closed at the next keystroke: a 502 for a POST); one
that no thread serves any more (the request waits until nginx times out);
two requests sent at once on one connection answered from bytes the guard
never checked; a kept connection the web server lets go of logged as a
broken request; parked connections keeping a stopping process alive; the
connection that just served a request closed for room when the parked
ones reach their bound (nginx hands it the next keystroke: 502s under
load); a stream on a kept connection (Apache's enablereuse=on) refused, or
closed at its end while the web server keeps it (its next request a 502).
"""

import http.client
import os
import subprocess
import signal
import socket
import struct
import threading
import time

import pytest

from fcgi_raw import fcgi_pairs, fcgi_record, fcgi_status
from ptyd_http import fcgi_connections
from ptyd_stack import (children_of, fd_count, preload_shim, proc_gone,
                        wait_for)

BEGIN, END_REQUEST, PARAMS, STDIN, STDOUT = 1, 3, 4, 5, 6
KEEP_CONN = 1

# The gate turns this down (no client socket to check the owner of): any
# answer will do, the connection is what is tested.
HEALTH = fcgi_pairs({"REQUEST_METHOD": "GET", "SCRIPT_NAME": "/api/terminal",
                     "PATH_INFO": "/health", "REMOTE_ADDR": "127.0.0.1"})
ANSWER = 403


def request(flags, params=HEALTH):
    return (fcgi_record(BEGIN, struct.pack(">HB5x", 1, flags)) +
            fcgi_record(PARAMS, params) + fcgi_record(PARAMS, b"") +
            fcgi_record(STDIN, b""))


def read_response(s):
    """Records up to END_REQUEST: (status, stdout bytes).  Raises
    EOFError if the connection ends first."""
    data, out = b"", b""
    while True:
        while len(data) >= 8:
            _, t, _, clen, plen, _ = struct.unpack(">BBHHBB", data[:8])
            if len(data) < 8 + clen + plen:
                break
            if t == STDOUT:
                out += data[8:8 + clen]
            data = data[8 + clen + plen:]
            if t == END_REQUEST:
                return fcgi_status(out)[0], out
        b = s.recv(65536)
        if not b:
            raise EOFError("connection ended before END_REQUEST")
        data += b


def connect(st, timeout=5.0):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(os.path.join(st.state, "run", "fcgi.sock"))
    return s


def at_eof(s, timeout=2.0):
    """True if the peer closed the connection within timeout."""
    s.settimeout(timeout)
    try:
        return s.recv(1) == b""
    except socket.timeout:
        return False
    except ConnectionResetError:
        return True


@pytest.fixture(scope="module")
def kstack(make_stack):
    return make_stack("keepconn")


def test_a_kept_connection_serves_one_request_after_another(kstack):
    s = connect(kstack)
    try:
        for i in range(20):
            s.sendall(request(KEEP_CONN))
            status, out = read_response(s)
            assert status == ANSWER, (i, out)
        # Idle between requests, as nginx leaves it in its pool.
        time.sleep(0.5)
        s.sendall(request(KEEP_CONN))
        assert read_response(s)[0] == ANSWER
    finally:
        s.close()


def test_without_the_flag_the_connection_ends_with_its_request(kstack):
    s = connect(kstack)
    try:
        s.sendall(request(0))
        assert read_response(s)[0] == ANSWER
        assert at_eof(s)
    finally:
        s.close()


def test_a_request_sent_with_another_behind_it_is_refused_whole(kstack):
    """Two requests at once on one connection: the guard checks the first
    with nothing after its end (libfcgi would read the second's bytes into
    the first's buffer), so the connection ends; nothing of the second is
    answered, and the process serves on."""
    before = fcgi_workers(kstack)
    s = connect(kstack)
    try:
        s.sendall(request(KEEP_CONN) + request(KEEP_CONN))
        answered = 0
        try:
            while True:
                read_response(s)
                answered += 1
        except (EOFError, ConnectionResetError):
            pass
        assert answered == 0
    finally:
        s.close()
    assert fcgi_workers(kstack) == before
    s = connect(kstack)
    try:
        s.sendall(request(KEEP_CONN))
        assert read_response(s)[0] == ANSWER
    finally:
        s.close()


def test_a_kept_connection_let_go_of_is_not_news(kstack):
    lines = len(kstack.log("fcgi").splitlines())
    for _ in range(10):
        s = connect(kstack)
        s.sendall(request(KEEP_CONN))
        assert read_response(s)[0] == ANSWER
        s.close()
    # A request that came whole is served; a close between requests is
    # logged by nobody.
    s = connect(kstack)
    s.sendall(request(KEEP_CONN))
    assert read_response(s)[0] == ANSWER
    time.sleep(0.3)
    new = kstack.log("fcgi").splitlines()[lines:]
    assert not [ln for ln in new if "warn" in ln or "closed" in ln], new
    s.close()


def test_a_stopping_worker_closes_its_parked_connections(make_stack):
    st = make_stack("keepconn-stop")
    socks = []
    try:
        for _ in range(8):
            s = connect(st)
            s.sendall(request(KEEP_CONN))
            assert read_response(s)[0] == ANSWER
            socks.append(s)
        workers = fcgi_workers(st)
        t0 = time.monotonic()
        for pid in workers:
            os.kill(pid, signal.SIGTERM)
        for s in socks:
            assert at_eof(s, timeout=3.0), "a parked connection outlived " \
                "its worker's stop"
        # Well inside the worker's 2 s grace: closed at the stop, not at
        # its exit after the grace.
        assert time.monotonic() - t0 < 1.5
        wait_for(lambda: all(proc_gone(p) for p in workers), timeout=10,
                 what="the stopped workers to exit")
    finally:
        for s in socks:
            s.close()


@pytest.mark.deadline(60)
def test_a_connection_parked_for_two_minutes_is_closed(make_stack, tmp_root):
    """ptyd.fcgi closes a connection parked past SERVER_KEPT_IDLE_MS (120 s;
    nginx's keepalive_timeout, 60 s by default, lets go of it first), when
    it next parks one.  The process's monotonic clock is moved on instead
    of waiting (tests/integration/clock_skip.c); one process, so every
    connection lands in the pool that sweeps."""
    skip = os.path.join(tmp_root, "keepconn-idle.skip")
    st = make_stack("keepconn-idle", fcgi_args=["--processes=1"],
                    env=preload_shim(tmp_root, "clock_skip.c") +
                    ["CLOCK_SKIP_FILE=" + skip])
    def skip_to(seconds):
        with open(skip, "w") as f:
            f.write("%d\n" % seconds)
        time.sleep(0.1)     # past the shim's 20 ms between reads

    def served(s):
        s.sendall(request(KEEP_CONN))
        return read_response(s)[0] == ANSWER

    idle, fresh, busy = connect(st), connect(st), None
    try:
        assert served(idle) and served(fresh)
        # Parking another does not sweep what has not idled long enough.
        assert not at_eof(idle, timeout=0.5)
        skip_to(119)
        assert served(fresh)
        assert not at_eof(idle, timeout=0.5), "closed before 120 s"
        # Parking the next closes the one idle since the start, and not
        # the one given a request 12 s ago.
        skip_to(131)
        busy = connect(st)
        assert served(busy)
        assert at_eof(idle, timeout=3.0), "a connection parked past 120 s " \
            "was not closed"
        assert served(fresh) and served(busy)
    finally:
        for s in (idle, fresh, busy):
            if s is not None:
                s.close()


def test_keystrokes_through_nginx_reuse_connections(kstack, new_sid):
    """The shipped config keeps the short requests' connections: a burst of
    them costs ptyd.fcgi a few connections, not one each."""
    c = kstack.client()
    sid = new_sid()
    assert c.start(sid).status == 200
    try:
        base = accepted(kstack)
        for _ in range(100):
            assert c.input(sid, "x").status == 200
        assert accepted(kstack) - base < 20
    finally:
        c.close_term(sid)


def fcgi_workers(st):
    with open(os.path.join(st.state, "run", "fcgi.pid")) as f:
        return sorted(children_of(int(f.read().strip())))


def counter(st, how, client=None):
    return fcgi_connections(client or st.client(), how)


def accepted(st):
    return counter(st, "accepted")


@pytest.mark.deadline(120)
def test_a_full_park_does_not_cost_keystrokes(make_stack, new_sid):
    """Another peer holds the process's parked slots (one process, so they
    all land in it): nginx's own kept connections go on carrying
    concurrent keystrokes, none refused."""
    st = make_stack("keepconn-full", fcgi_args=["--processes=1"])
    sid = new_sid()
    c = st.client()
    assert c.start(sid).status == 200
    socks = []
    try:
        for _ in range(140):        # past SERVER_KEPT_MAX, 128
            s = connect(st)
            s.sendall(request(KEEP_CONN))
            assert read_response(s)[0] == ANSWER
            socks.append(s)
        bad = []

        def typist():
            cl = st.client(keepalive=True)
            for _ in range(300):
                try:
                    r = cl.input(sid, "y")
                    if r.status != 200:
                        bad.append(r.status)
                except Exception as e:  # noqa: BLE001 -- any failure counts
                    bad.append(repr(e))
            cl.close()

        ts = [threading.Thread(target=typist) for _ in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(90)
        assert bad == [], "%d of 2400 keystrokes failed: %r\n%s" % (
            len(bad), bad[:5], st.log_tail("nginx-error", 10))
    finally:
        for s in socks:
            s.close()
        c.close_term(sid)


def stream_params(sid, user="alice"):
    return fcgi_pairs({
        "REQUEST_METHOD": "GET", "SCRIPT_NAME": "/api/terminal",
        "PATH_INFO": "/output", "REMOTE_USER": user,
        "QUERY_STRING": "session_id=" + sid, "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": "127.0.0.1"})


@pytest.fixture(scope="module")
def fstack(make_stack):
    """A stack where the web server vouches for the user (PTYD_AUTH=front),
    so a raw peer gets past the gate and can ask for a stream.  alice reads
    the metrics too (metrics_users: they are the operator's)."""
    return make_stack("keepconn-front", auth="basic", users=["alice:pw"],
                      env=["PTYD_METRICS_USERS=alice"])


def test_a_stream_on_a_kept_connection_gives_it_back_at_its_end(
        fstack, new_sid):
    """A web server that keeps every connection (Apache's mod_proxy_fcgi
    with enablereuse=on; an nginx location with fastcgi_keep_conn on that
    a stream's path reaches): the stream is served, ends with END_REQUEST
    when its terminal does, and the connection then carries the web
    server's next request, as nginx or Apache will send it one there."""
    st = fstack
    sid = new_sid()
    c = st.client("alice")
    assert c.start(sid).status == 200
    s = connect(st, timeout=10)
    try:
        s.sendall(request(KEEP_CONN, stream_params(sid)))
        head = s.recv(4096)
        assert b"text/event-stream" in head, head
        kept = counter(st, "kept", c)
        assert c.close_term(sid).status == 200
        status, out = read_response(s)
        assert status == 200 and b"event: terminal_closed" in head + out, \
            out[-300:]
        for i in range(3):
            s.sendall(request(KEEP_CONN))
            assert read_response(s)[0] == ANSWER, i
        assert counter(st, "kept", c) >= kept + 3
    finally:
        s.close()


def test_a_kept_streams_viewer_leaving_leaves_nothing_behind(fstack, new_sid):
    """Kept streams whose web server lets go mid-stream (the browser went,
    and nginx closes an upstream connection whose response did not end):
    each is closed and detached, nothing parked or left open."""
    st = fstack
    sid = new_sid()
    c = st.client("alice")
    assert c.start(sid).status == 200
    workers = fcgi_workers(st)
    try:
        before = sum(fd_count(p) for p in workers)
        socks = []
        for _ in range(20):
            s = connect(st, timeout=10)
            s.sendall(request(KEEP_CONN, stream_params(sid)))
            assert b"text/event-stream" in s.recv(4096)
            socks.append(s)
        wait_for(lambda: subscribers(c, sid) == 20, timeout=10,
                 what="20 viewers attached")
        for s in socks:
            s.close()
        wait_for(lambda: subscribers(c, sid) == 0, timeout=10,
                 what="the viewers detached")
        wait_for(lambda: sum(fd_count(p) for p in workers) <= before,
                 timeout=10, what="ptyd.fcgi back to %d descriptors" % before)
    finally:
        c.close_term(sid)


def subscribers(c, sid):
    r = c.get("list")
    assert r.status == 200, r
    for t in r.json()["terminals"]:
        if t["session_id"] == sid:
            return t["subscribers"]
    raise AssertionError("%s not listed" % sid)


@pytest.mark.parametrize("path", ["output%3F", "output%23", "output/"])
def test_a_path_that_misses_the_stream_location_is_no_stream(kstack,
                                                              new_sid, path):
    """A path that misses nginx's stream location reaches the location that
    keeps connections and buffers: ptyd.fcgi routes on the exact last
    segment, so it answers there with JSON, never a stream."""
    c = kstack.client()
    sid = new_sid()
    assert c.start(sid).status == 200
    try:
        conn = http.client.HTTPConnection("127.0.0.1", kstack.port,
                                          timeout=10)
        conn.request("GET", "/api/terminal/%s?session_id=%s" % (path, sid),
                     headers={"Host": "127.0.0.1:%d" % kstack.port})
        r = conn.getresponse()
        body = r.read()
        conn.close()
        assert r.status == 404, (r.status, body[:200])
        assert r.getheader("Content-Type", "").startswith(
            "application/json"), r.getheaders()
    finally:
        c.close_term(sid)


def test_a_request_refused_before_its_body_leaves_the_connection_clean(
        kstack, new_sid):
    """Answers given before the body is read (405 for a POST to health,
    413 from Content-Length) alternate with keystrokes on nginx's kept
    connections: the unread body is drained before the connection is
    parked, so the next request on it starts on a record boundary (else
    the guard refuses it, and nginx answers 502)."""
    c = kstack.client(keepalive=True)
    sid = new_sid()
    assert c.start(sid).status == 200
    try:
        base = counter(kstack, "kept", c)
        for i in range(20):
            r = c.post("health", {"pad": "x" * 50000})
            assert r.status == 405, (i, r.status, r.body[:200])
            r = c.post("input", {"session_id": sid, "data": "x" * 70000})
            assert r.status == 413, (i, r.status, r.body[:200])
            assert c.input(sid, "y").status == 200, i
        assert counter(kstack, "kept", c) - base >= 50
    finally:
        c.close_term(sid)
        c.close()


@pytest.mark.deadline(90)
def test_a_kept_stream_on_its_thread_is_kept_only_when_it_ended_whole(
        make_stack, new_sid):
    """Where the stream loop cannot take a stream (descriptors cannot move
    above 1024: the hard limit is 1024), the stream runs on its request's
    thread.  There, as in the loop, only a stream that ended whole gives
    its connection back.  One that ended because the web server sent
    its next request during it is closed, as the loop closes it; it was
    parked, and that request answered after the stream's end."""
    st = make_stack("keepconn-thread", auth="basic", users=["alice:pw"])
    for pid in fcgi_workers(st):
        subprocess.run(["prlimit", "--pid", str(pid), "--nofile=1024:1024"],
                       check=True, capture_output=True, timeout=10)
    sid = new_sid()
    c = st.client("alice")
    assert c.start(sid).status == 200
    try:
        # Ended whole (the terminal closed): kept, and serves the next.
        s = connect(st, timeout=10)
        try:
            s.sendall(request(KEEP_CONN, stream_params(sid)))
            assert b"text/event-stream" in s.recv(4096)
            sid2 = new_sid()
            assert c.start(sid2).status == 200
            s2 = connect(st, timeout=10)
            s2.sendall(request(KEEP_CONN, stream_params(sid2)))
            assert b"text/event-stream" in s2.recv(4096)
            assert c.close_term(sid2).status == 200
            status, _ = read_response(s2)
            assert status == 200
            s2.sendall(request(KEEP_CONN))
            assert read_response(s2)[0] == ANSWER
            s2.close()
            # A request sent during the stream: the stream ends
            # (END_REQUEST), and the connection with it.
            s.sendall(request(KEEP_CONN))
            s.settimeout(10)
            status, _ = read_response(s)
            assert status == 200
            # Closed, and closed cleanly: a reset (the request left
            # unread) could cut END_REQUEST short over TCP.
            s.settimeout(3.0)
            assert s.recv(1) == b"", "the connection of a stream that " \
                "did not end whole was kept"
        finally:
            s.close()
    finally:
        c.close_term(sid)
