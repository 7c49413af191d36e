"""test_stream_loop.py -- ptyd.fcgi's stream event loop (fcgi/streamloop.c):
one worker process, a thread pool of 8, and every output stream moved by
the process's one loop thread (issue 17).

- more streams than the thread pool has threads all move at once;
- a viewer that stops reading stalls no other stream of its process, and
  is cut off (ptyd's stall timeout, then the stuck rule);
- a viewer that vanishes is detached in ptyd within a second or two;
- Last-Event-ID resume is still byte-exact;
- SIGTERM ends every stream;
- a thousand idle viewers (scaled by PTYD_TEST_SCALE) all attach, all get
  heartbeats, and a keystroke's echo still arrives on another terminal;
- what a burst of attaches borrowed goes back to the system once the
  viewers sit idle.
"""

import json
import os
import selectors
import signal
import socket
import subprocess
import time

import pytest

from ptyd_http import Transcript, marker, read_output_until
from ptyd_stack import BUILDDIR, children_of, sanitized, scale, wait_for

STALL = 2
FCGI = ["--processes", "1", "--max-threads", "8", "--heartbeat", "1"]
PTYD = ["--max-terminals", "64", "--max-viewers", "512",
        "--stall-timeout", str(STALL)]


@pytest.fixture(scope="module")
def loop(make_stack):
    return make_stack("loop", ptyd_args=PTYD, fcgi_args=FCGI)


@pytest.fixture(scope="module")
def quiet(make_stack):
    """Heartbeats a minute apart: a send failing at the next heartbeat
    cannot stand in for noticing a viewer gone.  Its last test stops its
    ptyd.fcgi."""
    return make_stack("loopquiet", ptyd_args=PTYD,
                      fcgi_args=FCGI[:-1] + ["60"])


def viewers(c):
    return c.health().json()["ptyd"]["viewers"]


def started(c, new_sid, n=1):
    sids = [new_sid() for _ in range(n)]
    for sid in sids:
        assert c.start(sid).status == 200
    return sids


@pytest.mark.deadline(60)
def test_more_streams_than_threads_all_move_at_once(loop, new_sid):
    # Prevents: a stream holding a thread for its life, so that with 8
    # threads the 8th viewer's request waited (and nginx timed out).
    c = loop.client()
    sids = started(c, new_sid, 4)
    streams = []
    try:
        for i in range(40):
            s = c.stream(sids[i % 4], timeout=5)
            assert s.status == 200, s.body
            streams.append(s)
        wants = {}
        for sid in sids:
            cmd, wants[sid] = marker()
            assert c.input(sid, cmd).status == 200
        for i, s in enumerate(streams):
            read_output_until(s, wants[sids[i % 4]], timeout=10)
        assert c.health().status == 200
    finally:
        for s in streams:
            s.close()
        for sid in sids:
            c.close_term(sid)


@pytest.mark.deadline(60)
def test_a_viewer_that_stops_reading_stalls_no_other_and_is_cut_off(
        loop, new_sid):
    c = loop.client()
    busy, quiet = started(c, new_sid, 2)
    stuck = c.stream(busy, rcvbuf=4096)
    other = c.stream(quiet)
    try:
        assert stuck.status == 200 and other.status == 200
        assert c.input(busy, "yes\r").status == 200
        time.sleep(0.5)
        # The other stream of the same process (there is one) still
        # carries every keystroke's echo while the stuck one is full.
        for _ in range(5):
            cmd, want = marker()
            assert c.input(quiet, cmd).status == 200
            read_output_until(other, want, timeout=5)
        # ptyd cuts the stuck viewer off after STALL s; ptyd.fcgi drops
        # its connection once it has taken nothing for 10 s more.
        wait_for(lambda: "took nothing" in loop.log("fcgi"), STALL + 20,
                 what="ptyd.fcgi to drop the stuck viewer")
        wait_for(lambda: viewers(c) == 1, 5,
                 what="only the other viewer to stay attached")
        cmd, want = marker()
        assert c.input(quiet, cmd).status == 200
        read_output_until(other, want, timeout=5)
    finally:
        c.input(busy, "\x03")
        stuck.close()
        other.close()
        c.close_term(busy)
        c.close_term(quiet)


@pytest.mark.deadline(30)
def test_a_vanished_viewer_is_detached_in_ptyd_within_two_seconds(
        quiet, new_sid):
    c = quiet.client()
    (sid,) = started(c, new_sid)
    wait_for(lambda: viewers(c) == 0, 10, what="earlier viewers to go")
    s = c.stream(sid)
    assert s.status == 200
    wait_for(lambda: viewers(c) == 1, 5, what="the viewer to attach")
    s.close(abort=True)
    t0 = time.monotonic()
    wait_for(lambda: viewers(c) == 0, 2,
             what="ptyd to see the viewer gone")
    assert time.monotonic() - t0 < 2
    c.close_term(sid)


@pytest.mark.deadline(30)
def test_resume_by_last_event_id_is_exact(loop, new_sid):
    c = loop.client()
    (sid,) = started(c, new_sid)
    cmd, want = marker()
    first = Transcript()
    with c.stream(sid) as s:
        assert c.input(sid, "seq 1 3000\r").status == 200
        assert c.input(sid, cmd).status == 200
        read_output_until(s, want, first, timeout=10)
    cut = first.start + (first.end - first.start) // 2
    # Resume from the middle: the bytes that follow are the same bytes.
    with c.stream(sid, last_event_id=cut) as s:
        again = read_output_until(s, want, timeout=10)
    assert again.start == cut
    assert bytes(again.data[:first.end - cut]) == first.slice(cut, first.end)
    c.close_term(sid)


def viewers_ptydctl(st):
    """ptyd's own count of viewers, asked on its socket."""
    out = subprocess.run(
        [os.path.join(BUILDDIR, "ptydctl", "ptydctl"), "--socket",
         os.path.join(st.state, "run", "ptyd.sock"), "stats", "--json"],
        capture_output=True, text=True, timeout=10).stdout
    return json.loads(out)["viewers"]


class Idle:
    """Many raw SSE connections read with one selector: each one's first
    bytes (the status line), and the heartbeats it got."""

    def __init__(self, port, sids, n, query=""):
        self.sel = selectors.DefaultSelector()
        self.socks = []
        self.first = {}
        self.tail = {}
        self.beats = {}
        self.got = {}
        self.errors = []
        for i in range(n):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(("GET /api/terminal/output?session_id=%s%s HTTP/1.1"
                       "\r\nHost: 127.0.0.1:%d\r\n\r\n"
                       % (sids[i % len(sids)], query, port)).encode())
            s.setblocking(False)
            self.sel.register(s, selectors.EVENT_READ, i)
            self.socks.append(s)
            self.first[i] = b""
            self.tail[i] = b""
            self.beats[i] = 0
            self.got[i] = 0

    def pump(self, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            for key, _ in self.sel.select(0.2):
                i = key.data
                try:
                    data = key.fileobj.recv(65536)
                except BlockingIOError:
                    continue
                if not data:
                    self.errors.append("viewer %d: closed" % i)
                    self.sel.unregister(key.fileobj)
                    continue
                self.got[i] += len(data)
                if len(self.first[i]) < 16:
                    self.first[i] += data[:16]
                both = self.tail[i] + data
                self.beats[i] += (both.count(b"heartbeat") -
                                  self.tail[i].count(b"heartbeat"))
                self.tail[i] = both[-16:]

    def ok(self):
        return [i for i in self.first
                if self.first[i].startswith(b"HTTP/1.1 200")]

    def close(self):
        for s in self.socks:
            s.close()
        self.sel.close()


@pytest.mark.deadline(120)
def test_a_thousand_idle_viewers_all_beat_and_echo_still_works(
        loop, new_sid):
    c = loop.client()
    n = scale(1000, 100)
    sids = started(c, new_sid, 10)
    (echo_sid,) = started(c, new_sid)
    idle = Idle(loop.port, sids, n)
    try:
        idle.pump(1)
        wait_for(lambda: (idle.pump(0.3), viewers(c))[1] >= n, 60,
                 what="%d viewers attached" % n)
        assert len(idle.ok()) == n, idle.errors[:5]
        before = dict(idle.beats)
        idle.pump(3)
        assert not idle.errors, idle.errors[:5]
        silent = [i for i in idle.beats if idle.beats[i] <= before[i]]
        assert not silent, "%d viewers got no heartbeat" % len(silent)
        cmd, want = marker()
        with c.stream(echo_sid) as s:
            assert c.input(echo_sid, cmd).status == 200
            read_output_until(s, want, timeout=10)
    finally:
        idle.close()
        for sid in sids + [echo_sid]:
            c.close_term(sid)


def fcgi_master(stack):
    with open(os.path.join(stack.state, "run", "fcgi.pid")) as f:
        return int(f.read().split()[0])


def fcgi_pss_kb(stack):
    """Pss of ptyd.fcgi, master and workers."""
    master = fcgi_master(stack)
    total = 0
    for pid in [master] + children_of(master):
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
    return total


@pytest.mark.deadline(120)
def test_what_a_burst_of_attaches_borrowed_goes_back(loop, new_sid):
    # Prevents: ptyd.fcgi keeping, for good, the buffers a burst of screen
    # attaches borrowed (freed to malloc, never to the system): 300
    # viewers of terminals with a full scrollback left 6-9 kB each.
    if sanitized(fcgi_master(loop)):
        pytest.skip("AddressSanitizer's allocator keeps freed memory in "
                    "its quarantine; malloc_trim does not apply")
    c = loop.client()
    n = scale(300, 100)
    sids = started(c, new_sid, 4)
    for sid in sids:
        cmd, want = marker()
        fill = ("i=0; while [ $i -lt 1000 ]; do i=$((i+1)); echo \"line $i:"
                " the quick brown fox jumps over the lazy dog\"; done; ")
        with c.stream(sid) as s:
            assert c.input(sid, fill + cmd).status == 200
            read_output_until(s, want, timeout=30)
    before = fcgi_pss_kb(loop)
    idle = Idle(loop.port, sids, n, "&attach=screen")
    try:
        # Every viewer has its screen: 1,000 lines, more than 40 kB.
        wait_for(lambda: (idle.pump(0.3),
                          min(idle.got.values()))[1] > 40000, 60,
                 what="%d screens sent" % n)
        assert not idle.errors, idle.errors[:5]
        # Idle for a heartbeat period frees a stream's buffers; the trim
        # follows within a second (a loaded machine: allow ten).  What an
        # idle stream keeps is about 2 kB (its state, libfcgi's,
        # fragments); the loop keeps one spare buffer set.
        bound = 512 + 2.5 * n
        grown = None
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            idle.pump(1)
            grown = fcgi_pss_kb(loop) - before
            if grown < bound:
                break
        assert not idle.errors, idle.errors[:5]
        assert grown < bound, (
            "ptyd.fcgi kept %d kB for %d idle viewers" % (grown, n))
    finally:
        idle.close()
        for sid in sids:
            c.close_term(sid)


@pytest.mark.deadline(60)
def test_sigterm_ends_every_stream(quiet, new_sid):
    st = quiet
    c = st.client()
    sids = started(c, new_sid, 2)
    streams = [c.stream(sids[i % 2]) for i in range(20)]
    assert all(s.status == 200 for s in streams)
    wait_for(lambda: viewers(c) == 20, 5, what="20 viewers")
    with open(os.path.join(st.state, "run", "fcgi.pid")) as f:
        pid = int(f.read().split()[0])
    os.kill(pid, signal.SIGTERM)
    for s in streams:
        s.read_to_end(timeout=5)
        s.close()
    # ptyd saw every stream's connection close.
    wait_for(lambda: viewers_ptydctl(st) == 0, 5,
             what="ptyd to count no viewer")
