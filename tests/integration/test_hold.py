"""test_hold.py -- a take-over's hold on the pty (DESIGN 10): where the
viewers stood at the hand-over, kept in the terminal's memfd header, the
new ptyd reads no further than a ring past until they are back.  The
hold must neither outlast the viewers' return (the shell would sit for
the stall timeout with its viewers waiting) nor end before every viewer
that stood there is back (one of them would lose bytes: a gap).

Each test runs ptyd with a stall timeout far longer than it waits, so a
hold kept to its timer fails it."""

import os
import signal
import threading
import time

import pytest

from ptyd_http import read_output_until
from test_keeper import (Counted, CounterCheck, Follow, keeper_of,
                         own_stack, post_retry, start_term, upgrade,
                         wait_serving)

assert own_stack        # a fixture, used by name

RING = "1M"
STALL = "60"
# Lines (8-10 bytes) past the ring and every buffer on the way.
PAST_BUFFERS = 1500000


def flood(c, sid):
    r = post_retry(c, "input", {"session_id": sid, "data":
                                "seq -f 'Y%.0f' 0 999999999\r",
                                "input_id": "flood"})
    assert r.status == 200, r


class Reader:
    """A Follow of a counter flood, every line checked; gaps kept."""

    def __init__(self, c, sid, rcvbuf=None):
        self.check = CounterCheck()
        self.f = Follow(c, sid, rcvbuf=rcvbuf)
        self.f.tr = Counted(self.check)
        self.gaps = []
        self.f.on_gap = self.gap

    def gap(self, ev):
        self.gaps.append(ev.data)
        self.check.resync()

    def read_on(self, lines, timeout):
        goal = self.check.next + lines
        deadline = time.monotonic() + timeout
        while self.check.next < goal and not self.check.error:
            assert time.monotonic() < deadline, \
                "viewer stuck at Y%d (goal Y%d)" % (self.check.next, goal)
            self.f.pump(0.2)
        assert self.check.error is None, self.check.error


@pytest.mark.deadline(60)
def test_a_viewer_keeping_up_is_not_held_after_an_upgrade(own_stack,
                                                          new_sid):
    """A flood and a viewer that keeps up with it, an upgrade under way:
    ptyd.fcgi attaches the stream again in place, where it stood, which is
    past where it stood when the pty was last read.  The new ptyd must
    read on as the viewer reads, not stop a ring on for the stall
    timeout."""
    st = own_stack("holdkeep", ptyd_args=["--ring-size", RING,
                                          "--stall-timeout", STALL])
    c = st.client()
    kp, _ = keeper_of(st)
    sid = new_sid("keep")
    start_term(c, sid)
    r = Reader(c, sid)
    flood(c, sid)
    try:
        r.read_on(20000, 15)
        stop = threading.Event()
        err = []

        def go():
            try:
                while not stop.is_set():
                    r.f.pump(0.05)
            except BaseException as e:      # noqa: B036
                err.append(e)
        th = threading.Thread(target=go, daemon=True)
        th.start()
        try:
            upgrade(st, c, kp)
        finally:
            stop.set()
            th.join(10)
        assert not err, err
        r.read_on(PAST_BUFFERS, 25)
        assert r.gaps == [], r.gaps
    finally:
        r.f.close()
        try:
            c.input(sid, "\x03")
        except OSError:
            pass


def lines_cmd(c, sid, first, last):
    """The shell's loop prints Y<first>..Y<last> (echo is off)."""
    r = post_retry(c, "input", {"session_id": sid,
                                "data": "%d %d\r" % (first, last),
                                "input_id": "l%d" % first})
    assert r.status == 200, r


@pytest.mark.deadline(90)
def test_every_viewer_behind_at_a_crash_is_waited_for(own_stack, new_sid):
    """Two viewers at a crash of ptyd: A stopped reading, B read all.
    Both streams end with the ptyd (closed while it is stopped, so it
    never saw them go), and come back by Last-Event-ID, A first, reading
    a flood at full speed, B a while later.  The hold is where A stood;
    B stood past it.  Ending the hold at A's return let the pty run a
    ring past B's position before B was back: B got a gap.  It must wait
    for B too (both were attached), and end once B is back."""
    st = own_stack("holdtwo", ptyd_args=["--ring-size", RING,
                                         "--stall-timeout", STALL])
    c = st.client()
    sid = new_sid("two")
    start_term(c, sid)
    # The lines are typed only once the loop runs: typed while the shell
    # still read its command line, they were lost now and then (under
    # ASan, a viewer stuck at Y0).
    with c.stream(sid) as ready:
        r = post_retry(c, "input", {"session_id": sid, "data":
                                    "stty -echo; echo RE''ADY; "
                                    "while read a b; do "
                                    "seq -f 'Y%.0f' $a $b; done\r",
                                    "input_id": "loop"})
        assert r.status == 200, r
        read_output_until(ready, "READY", timeout=30)
    a = Reader(c, sid, rcvbuf=32768)
    b = Reader(c, sid)
    try:
        a.f.pump(0.2)
        b.f.pump(0.2)
        lines_cmd(c, sid, 0, 29999)
        a.read_on(30000, 15)
        b.read_on(30000, 15)
        # A stops reading; B reads half a ring more.
        lines_cmd(c, sid, 30000, 89999)
        b.read_on(60000, 15)
        pid = st.ptyd_pid()
        os.kill(pid, signal.SIGSTOP)
        try:
            a.f.close()
            b.f.close()
            time.sleep(0.5)     # ptyd.fcgi drops both ptyd connections
        finally:
            os.kill(pid, signal.SIGKILL)
        wait_serving(c, {pid}, 10)
        # A is back and reads a flood as fast as it comes, for a while.
        a.f.pump(0.2)
        lines_cmd(c, sid, 90000, 999999999)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 3 and a.check.next < 500000:
            a.f.pump(0.2)
        assert a.check.error is None, a.check.error
        # B is back: nothing lost, and neither is held any longer (both
        # read, since either paces the shell).
        goal = b.check.next + PAST_BUFFERS
        deadline = time.monotonic() + 20
        while b.check.next < goal or a.check.next < goal:
            assert time.monotonic() < deadline, \
                "stuck: A at Y%d, B at Y%d (goal Y%d)" % (
                    a.check.next, b.check.next, goal)
            assert a.check.error is None and b.check.error is None, \
                (a.check.error, b.check.error)
            a.f.pump(0.05)
            b.f.pump(0.05)
        assert b.gaps == [] and a.gaps == [], (b.gaps, a.gaps)
    finally:
        a.f.close()
        b.f.close()
        try:
            c.input(sid, "\x03")
        except OSError:
            pass
