"""test_storm.py -- a backlog storm must not starve keystrokes (issue 12).

The failure it prevents: 1,000 viewers that read nothing attach through
nginx to a terminal whose 1 MiB ring is full.  Each attach replays the
ring, and every layer (ptyd, ptyd.fcgi, nginx) copies as much of it as the
next one's buffers take, which on loopback is all of it.  Before the fix a
keystroke POST on another terminal waited past 1 s while they attached
(ptyd wrote the replay inside its accept path and EPOLLOUT callbacks for
hundreds of viewers per loop turn; ptyd.fcgi's 1,000 stream threads shared
the CPU evenly with the threads serving keystrokes), and health past 1.5 s.

Asserted while they attach and while they sit: keystroke POSTs (several in
flight at once, as a few users typing) and health answer, none failing,
within 0.5 s and 0.6 s at p99.  The issue's targets (keystroke < 50 ms,
health < 100 ms) are a benchmark's to measure (bench/storm/storm): with
nothing else running they hold, but this machine is shared, and with
other test stacks and builds running here the same p99 reached 0.29 s
and 0.31 s.  The code before the fix fails health's bound by far (p99
0.78-1.9 s; keystrokes 0.34-1.7 s).  After they go: ptyd counts no viewer, and
ptyd and ptyd.fcgi hold no more descriptors than before.

Size: scale(1000, 300) stalled viewers (PTYD_TEST_SCALE; CI's 0.1 keeps
300).  Under a sanitizer build (ASan makes every copy several times
slower) latency is not asserted: there the test is about memory and
release, not time.  bench/storm/storm is the benchmark with the same
storm.
"""

import resource
import socket
import threading
import time

import pytest

from ptyd_http import SSE, marker, read_output_until
from ptyd_stack import (fd_count, pids_matching, proc_state, sanitized,
                        scale, wait_for)

N_VIEWERS = scale(1000, 300)
# Idle connections to ptyd one ptyd.fcgi process keeps (PTYD_KEPT_MAX,
# fcgi/ptyd_client.c), and the netlink sockets of its account check
# (PEER_KEPT_MAX, fcgi/peer.c).
KEPT = 2
PEER_KEPT = 2
KEY_P99 = 0.500        # the target is 0.050: bench/storm/storm
HEALTH_P99 = 0.600     # the target is 0.100


def fcgi_pids(st):
    return [p for p in pids_matching(
        lambda cl: cl[0].endswith("ptyd.fcgi") and
        any(st.state in a for a in cl)) if proc_state(p) != "Z"]


def p99(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(0.99 * len(xs)))] if xs else 0.0


@pytest.fixture(scope="module")
def storm(make_stack):
    return make_stack("storm", ptyd_args=["--max-viewers",
                                          str(N_VIEWERS + 16)])


class Probe(threading.Thread):
    """Keystroke POSTs (or health GETs) one after another on a keep-alive
    connection, each timed and filed under the phase it started in."""

    phase = None

    def __init__(self, st, sid, kind, samples, failures, tag):
        super().__init__(daemon=True)
        self.c = st.client(keepalive=True)
        self.sid, self.kind, self.tag = sid, kind, tag
        self.samples, self.failures = samples, failures
        self.stop = threading.Event()

    def run(self):
        i = 0
        while not self.stop.is_set():
            ph = Probe.phase
            t0 = time.monotonic()
            try:
                if self.kind == "key":
                    r = self.c.input(self.sid, "k")
                else:
                    r = self.c.health()
                status = r.status
            except Exception as e:
                status = repr(e)
            dt = time.monotonic() - t0
            if status != 200:
                self.failures.append((ph, self.kind, i, status))
            if ph is not None:
                self.samples.setdefault((ph, self.kind), []).append(dt)
            i += 1
            time.sleep(0.005 if self.kind == "key" else 0.015)
        self.c.close()


@pytest.mark.slow
@pytest.mark.deadline(120)
def test_stalled_viewers_on_a_full_backlog_do_not_starve_keystrokes(
        storm, new_sid):
    st = storm
    c = st.client()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < N_VIEWERS + 512:
        resource.setrlimit(resource.RLIMIT_NOFILE,
                           (min(hard, N_VIEWERS + 512), hard))
    backlog, keys = new_sid("bl"), new_sid("k")
    assert c.start(backlog).status == 200
    r = c.start(keys)
    assert r.status == 200
    pid = r.json()["pid"]
    assert c.input(keys, "stty raw -echo; exec cat >/dev/null\r").status \
        == 200
    wait_for(lambda: open("/proc/%d/comm" % pid).read().strip() == "cat",
             5, what="cat running in the keystroke terminal")

    # A full ring: 1.5 MB of base64, read by one viewer to its marker.
    cmd, want = marker()
    with SSE(st.port, backlog, timeout=30) as s:
        assert c.input(backlog, "head -c 1100000 /dev/urandom | base64; "
                       + cmd).status == 200
        read_output_until(s, want, timeout=60)
    wait_for(lambda: c.health().json()["ptyd"]["viewers"] == 0, 10,
             what="the filler's viewer detached")
    ptyd_pid = st.ptyd_pid()
    timed = not sanitized(ptyd_pid)
    fds_ptyd = fd_count(ptyd_pid)
    fds_fcgi = sum(fd_count(p) for p in fcgi_pids(st))

    samples, failures = {}, []
    probes = [Probe(st, keys, "key", samples, failures, i)
              for i in range(4)] + [Probe(st, keys, "health", samples,
                                          failures, "h")]
    Probe.phase = "idle"
    for p in probes:
        p.start()
    socks = []
    try:
        time.sleep(1.0)
        # The storm: N connections that each ask for the whole backlog and
        # never read a byte.  A small receive buffer, as a stalled client
        # advertises.
        req = ("GET /api/terminal/output?session_id=%s HTTP/1.1\r\n"
               "Host: 127.0.0.1:%d\r\nAccept: text/event-stream\r\n\r\n"
               % (backlog, st.port)).encode()
        Probe.phase = "attaching"
        for _ in range(N_VIEWERS):
            so = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            so.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            so.settimeout(10)
            so.connect(("127.0.0.1", st.port))
            so.sendall(req)
            socks.append(so)
        wait_for(lambda: c.health().json()["ptyd"]["viewers"] >= N_VIEWERS,
                 30, what="%d viewers attached" % N_VIEWERS)
        time.sleep(1.0)
        Probe.phase = "sitting"
        time.sleep(2.0)
        Probe.phase = None
    finally:
        for so in socks:
            so.close()
        for p in probes:
            p.stop.set()
        for p in probes:
            p.join(30)

    report = ", ".join("%s %s n=%d p99=%.1fms max=%.1fms" % (
        ph, kind, len(xs), p99(xs) * 1e3, max(xs) * 1e3)
        for (ph, kind), xs in sorted(samples.items()))
    assert failures == [], "%d failed probes, first %r; %s" % (
        len(failures), failures[:5], report)
    for ph in ("attaching", "sitting"):
        assert len(samples.get((ph, "key"), [])) >= 20 or not timed, report
        if timed:
            assert p99(samples[(ph, "key")]) < KEY_P99, report
            assert p99(samples[(ph, "health")]) < HEALTH_P99, report

    # Everything is released once they have gone, but for the idle
    # connections each ptyd.fcgi process keeps to ptyd (at most KEPT),
    # and, in ptyd.fcgi, the netlink sockets it keeps (PEER_KEPT).
    kept = KEPT * len(fcgi_pids(st))
    pool = (KEPT + PEER_KEPT) * len(fcgi_pids(st))
    wait_for(lambda: c.health().json()["ptyd"]["viewers"] == 0, 30,
             what="every stalled viewer detached")
    wait_for(lambda: fd_count(ptyd_pid) <= fds_ptyd + kept, 10,
             what="ptyd's descriptors back to %d + %d (now %d)"
             % (fds_ptyd, kept, fd_count(ptyd_pid)))
    wait_for(lambda: sum(fd_count(p) for p in fcgi_pids(st)) <=
             fds_fcgi + pool, 15,
             what=lambda: "ptyd.fcgi's descriptors back to %d + %d (now %d)"
             % (fds_fcgi, pool, sum(fd_count(p) for p in fcgi_pids(st))))
    for sid in (backlog, keys):
        c.close_term(sid)
