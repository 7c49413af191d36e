"""test_stream_reattach.py -- an output stream whose ptyd connection ends
without terminal_closed attaches again in place (fcgi/stream.c, "re-attach
in place"; DESIGN section 5) instead of ending the viewer's response.

- ptyd standing still (SIGSTOP, SIGCONT) costs a stream nothing: it keeps
  its connection, beats meanwhile, and every byte comes once;
- ptyd cutting a stalled viewer off (its stall timeout) no longer ends the
  viewer's stream: once the viewer reads again, ptyd.fcgi attaches again
  from the last event, and the output is byte-exact, with no gap and no
  second header;
- ptyd killed (kill -9): the stream does not end at once, it beats; once a
  new ptyd answers that the terminal is gone (none survives without the
  keeper) it ends as a stream ended before when ptyd hung up (the response
  simply ends, no terminal_closed); with no ptyd at all it ends so when the
  window (STREAM_REATTACH_MS, 5 s) runs out.

Regression: the viewer's stream ended the moment ptyd's connection did, so
a ptyd restart cost every viewer a reconnect round ("reconnecting").

test_keeper_kill9_three_viewers_byte_exact: with ptyd's keeper, which keeps
the terminals across a kill -9, the streams ride through it byte-exact.
"""

import os
import re
import signal
import subprocess
import time

import pytest

from ptyd_http import StreamEnded, Transcript, marker, read_output_until
from ptyd_stack import BUILDDIR, proc_gone, wait_for

REATTACH_S = 5.0          # STREAM_REATTACH_MS (fcgi/stream_int.h)
SLACK_S = 2.0
HEARTBEAT = ["--heartbeat", "1"]


def ptyd_has(option):
    """Does the built ptyd know option (say, --no-keeper)?"""
    out = subprocess.run([os.path.join(BUILDDIR, "ptyd", "ptyd"), "--help"],
                         capture_output=True, text=True, timeout=10)
    return option in out.stdout + out.stderr


def no_keeper():
    """ptyd's arguments for a ptyd that a kill -9 really ends, with its
    terminals: --no-keeper once ptyd has a keeper, nothing before."""
    return ["--no-keeper"] if ptyd_has("--no-keeper") else []


def reattaches(c, result):
    """ptyd.fcgi's count of re-attaches that ended so (resumed, gone,
    expired)."""
    r = c.get("metrics")
    assert r.status == 200, r
    want = 'ptyd_fcgi_stream_reattaches_total{result="%s"} ' % result
    for line in r.body.decode().splitlines():
        if line.startswith(want):
            return float(line.split()[1])
    raise AssertionError("no %s in the metrics" % want.strip())


def between(tr, begin, end):
    """The output between the marker lines begin and end (each printed by
    the shell after its expansion, so never the echo of the command)."""
    data = bytes(tr.data)
    i = data.rindex(begin) + len(begin)
    j = data.rindex(end)
    return data[i:j].strip(b"\r\n")


def counted(cmd_tag, body):
    """A shell line printing B<tag>-2, body, E<tag>-2; and the two
    markers as bytes."""
    line = "echo B%s-$((1+1)); %s; echo E%s-$((1+1))\r" % (cmd_tag, body,
                                                          cmd_tag)
    return line, ("B%s-2" % cmd_tag).encode(), ("E%s-2" % cmd_tag).encode()


def settled(c, sid, s, tr=None):
    """The shell has run a line, and the stream s has shown it."""
    cmd, want = marker()
    assert c.input(sid, cmd).status == 200
    return read_output_until(s, want, tr, timeout=10)


def alive_for(s, seconds):
    """Read the stream for seconds: it must not end.  The heartbeat
    comments and events that came meanwhile."""
    t0 = time.monotonic()
    n0, e0 = len(s.comments), len(s.events)
    while time.monotonic() - t0 < seconds:
        try:
            s.poll(seconds - (time.monotonic() - t0))
        except StreamEnded:
            raise AssertionError("the stream ended %.2f s in; events %r"
                                 % (time.monotonic() - t0, s.events[-5:]))
    return s.comments[n0:], s.events[e0:]


def ended_at(s, timeout):
    """Read until the response ends; the time it did, and the events that
    came before."""
    t0 = time.monotonic()
    n = len(s.events)
    try:
        while True:
            left = timeout - (time.monotonic() - t0)
            if left <= 0:
                raise AssertionError("the stream did not end within %.1f s"
                                     % timeout)
            s.poll(left)
    except StreamEnded:
        pass
    return time.monotonic(), s.events[n:]


@pytest.mark.deadline(60)
def test_ptyd_standing_still_costs_a_stream_no_byte(make_stack, new_sid):
    st = make_stack("reattach-stop", fcgi_args=HEARTBEAT)
    c = st.client()
    sid = new_sid()
    assert c.start(sid).status == 200
    pid = st.ptyd_pid()
    resumed = reattaches(c, "resumed")
    line, begin, end = counted(
        "st", "for i in $(seq 1 1500); do echo line-$i; sleep 0.001; done")
    tr = Transcript()
    with c.stream(sid) as s:
        assert s.status == 200
        assert c.input(sid, line).status == 200
        read_output_until(s, b"line-50\r\n", tr, timeout=10)
        os.kill(pid, signal.SIGSTOP)
        try:
            beats, _ = alive_for(s, 2.5)
        finally:
            os.kill(pid, signal.SIGCONT)
        assert beats, "no heartbeat while ptyd stood still"
        read_output_until(s, end, tr, timeout=30)
    assert not tr.gaps
    assert between(tr, begin, end) == b"\r\n".join(
        b"line-%d" % i for i in range(1, 1501))
    # The connection never ended: nothing to attach again.
    assert reattaches(c, "resumed") == resumed
    c.close_term(sid)


@pytest.mark.deadline(90)
def test_a_viewer_ptyd_cut_off_goes_on_byte_exact(make_stack, new_sid):
    # ptyd's stall timeout cuts off a viewer that takes nothing, ending
    # its connection without terminal_closed: the re-attach that a ptyd
    # restart needs, served by a ptyd that is still there.  The ring holds
    # everything, so what the viewer gets is exact.
    stall = 2
    st = make_stack("reattach-cut", fcgi_args=HEARTBEAT,
                    ptyd_args=["--stall-timeout", str(stall),
                               "--ring-size", "64M"])
    c = st.client()
    sid = new_sid()
    assert c.start(sid).status == 200
    resumed = reattaches(c, "resumed")
    n = 400000
    # Multi-byte characters, so that a cut may fall inside one.
    line, begin, end = counted("cut", "seq 1 %d | sed 's/$/ \u00e9\u20ac/'"
                               % n)
    tr = Transcript()
    with c.stream(sid, rcvbuf=4096) as s:
        assert s.status == 200
        settled(c, sid, s, tr)
        assert c.input(sid, line).status == 200
        # Read nothing until ptyd has cut this viewer off.
        wait_for(lambda: "stalled" in st.log("ptyd"), stall + 20,
                 what="ptyd to cut the stalled viewer off")
        read_output_until(s, end, tr, timeout=60)
        assert not tr.gaps
        assert not tr.inexact
        assert [e for e in tr.other
                if e.name not in ("heartbeat", "watchers", "resize")] == []
        got = between(tr, begin, end)
        assert got == b"\r\n".join(b"%d \xc3\xa9\xe2\x82\xac" % i
                                   for i in range(1, n + 1))
        assert reattaches(c, "resumed") >= resumed + 1
        # Still the same response: one header, and it goes on.
        line2, begin2, end2 = counted("again", "echo more")
        assert c.input(sid, line2).status == 200
        read_output_until(s, end2, tr, timeout=10)
    assert "took nothing" not in st.log("fcgi")
    c.close_term(sid)


@pytest.mark.deadline(60)
def test_ptyd_killed_stream_waits_then_ends_when_the_terminal_is_gone(
        make_stack, new_sid):
    st = make_stack("reattach-kill", fcgi_args=HEARTBEAT,
                    ptyd_args=no_keeper())
    c = st.client()
    sid = new_sid()
    assert c.start(sid).status == 200
    gone = reattaches(c, "gone")
    with c.stream(sid) as s:
        assert s.status == 200
        settled(c, sid, s)
        pid = st.ptyd_pid()
        os.kill(pid, signal.SIGKILL)
        t0 = time.monotonic()
        wait_for(lambda: proc_gone(pid), 5, what="ptyd gone")
        # Not at once: the viewer keeps its stream, and its heartbeats.
        beats, events = alive_for(s, 1.5)
        assert beats, "no heartbeat while no ptyd ran"
        assert events == []
        # A request starts a new ptyd (autostart); it has no such
        # terminal, so the next attempt ends the stream.
        t1 = time.monotonic()
        assert c.health().status == 200
        end, events = ended_at(s, REATTACH_S + SLACK_S)
        assert end - t0 < REATTACH_S + SLACK_S
        assert end - t1 < 0.5 + SLACK_S
        # As a stream ended when ptyd hung up: the response simply ends,
        # whole (the last chunk), with no event of its own.
        assert s.body_done
        assert events == [], events
    assert reattaches(c, "gone") == gone + 1
    assert re.search(r"stream of %s: .*terminal is gone" % re.escape(sid),
                     st.log("fcgi"))


@pytest.mark.deadline(60)
def test_ptyd_killed_for_good_stream_ends_when_the_window_runs_out(
        make_stack, new_sid):
    st = make_stack("reattach-none", ptyd_args=no_keeper(),
                    fcgi_args=HEARTBEAT + ["--no-autostart"])
    c = st.client()
    sid = new_sid()
    assert c.start(sid).status == 200
    expired = reattaches(c, "expired")
    with c.stream(sid) as s:
        assert s.status == 200
        settled(c, sid, s)
        pid = st.ptyd_pid()
        os.kill(pid, signal.SIGKILL)
        t0 = time.monotonic()
        end, events = ended_at(s, REATTACH_S + SLACK_S + 5)
        assert REATTACH_S - 0.5 <= end - t0 < REATTACH_S + SLACK_S, \
            end - t0
        assert s.body_done
        assert [e for e in events
                if e.name not in ("heartbeat", "watchers", "resize")] == []
        # Beats all along: about one a second.
        assert len([t for t, _ in s.comments if t >= t0]) >= 3
    assert reattaches(c, "expired") == expired + 1


def test_keeper_kill9_three_viewers_byte_exact(make_stack, new_sid):
    """With ptyd's keeper: kill -9 of ptyd while a counter flows to three
    viewers through nginx.  The keeper's new ptyd has the same terminal at
    the same positions; each viewer's stream goes on without ending, and
    its output is the counter, every line once, in order.  Not collected
    until the keeper lands (rename to test_...)."""
    st = make_stack("reattach-keeper", fcgi_args=HEARTBEAT,
                    ptyd_args=["--ring-size", "64M"])
    c = st.client()
    sid = new_sid()
    assert c.start(sid).status == 200
    n = 200000
    line, begin, end = counted("kp", "seq 1 %d" % n)
    viewers = [c.stream(sid) for _ in range(3)]
    trs = [Transcript() for _ in viewers]
    try:
        for s, tr in zip(viewers, trs):
            assert s.status == 200
            settled(c, sid, s, tr)
        resumed = reattaches(c, "resumed")
        assert c.input(sid, line).status == 200
        read_output_until(viewers[0], b"\r\n1000\r\n", trs[0], timeout=10)
        old = st.ptyd_pid()
        os.kill(old, signal.SIGKILL)
        wait_for(lambda: proc_gone(old), 5, what="ptyd gone")
        for s, tr in zip(viewers, trs):
            read_output_until(s, end, tr, timeout=60)
        want = b"\r\n".join(b"%d" % i for i in range(1, n + 1))
        for tr in trs:
            assert not tr.gaps
            assert tr.closed is None
            assert between(tr, begin, end) == want
        assert st.ptyd_pid() != old
        assert reattaches(c, "resumed") >= resumed + 3
        # The streams go on: a keystroke's echo reaches each.
        line2, _, end2 = counted("kq", "echo after")
        assert c.input(sid, line2).status == 200
        for s, tr in zip(viewers, trs):
            read_output_until(s, end2, tr, timeout=10)
    finally:
        for s in viewers:
            s.close()
        c.close_term(sid)
