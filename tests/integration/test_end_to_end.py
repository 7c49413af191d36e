"""test_end_to_end.py -- a terminal's whole life end to end through
nginx: start, input, output stream, second viewer, resume with
Last-Event-ID, exit code, the mirror's viewer columns, teardown, SSE
framing, heartbeat.  Every test runs on the shared default stack.
"""

import os
import time

import pytest

from ptyd_http import (StreamEnded, Transcript, marker,
                       read_output_until)
from ptyd_stack import proc_cmdline, proc_gone, proc_state, wait_for


def test_start_spawns_shell_and_reports_pid_and_default_workspace(
        stack, term):
    sid, j = term()
    assert j["ok"] is True
    assert j["session_id"] == sid
    assert j["running"] is True
    assert isinstance(j["pid"], int) and j["pid"] > 1
    # Default workspace: the daemon user's home, which is our temp HOME.
    assert j["workspace"] == stack.home
    assert proc_state(j["pid"]) not in (None, "Z")
    # The shell may still be inside execve() when start answers: its
    # cmdline reads empty until then.
    cl = wait_for(lambda: proc_cmdline(j["pid"]), 3,
                  what="cmdline of shell %d" % j["pid"])
    assert os.path.basename(cl[0]).lstrip("-") == "bash", cl
    assert os.readlink("/proc/%d/cwd" % j["pid"]) == stack.home


def test_input_marker_output_appears_in_stream(stack, term):
    sid, _ = term()
    c = stack.client()
    cmd, want = marker()
    with c.stream(sid) as s:
        assert s.status == 200, s.body
        r = c.input(sid, cmd)
        assert r.status == 200, r
        assert r.json() == {"ok": True}
        tr = read_output_until(s, want)
    # The echo of the command line is there too, but the expanded marker
    # can only come from the shell running it.
    assert want.encode() in tr.data
    assert cmd.rstrip("\r").encode() in tr.data


def test_second_viewer_sees_the_same_bytes_at_the_same_positions(
        stack, term):
    sid, _ = term()
    c = stack.client()
    cmd, want = marker()
    with c.stream(sid) as a, c.stream(sid) as b:
        assert a.status == 200 and b.status == 200
        assert c.input(sid, cmd).status == 200
        ta = read_output_until(a, want)
        tb = read_output_until(b, want)
    # Both replayed the backlog from the same first position and agree on
    # every byte they both hold.
    assert ta.start == tb.start
    end = min(ta.end, tb.end)
    assert ta.slice(ta.start, end) == tb.slice(tb.start, end)
    assert want.encode() in ta.slice(ta.start, end)


def test_reconnect_with_last_event_id_gets_exactly_the_newer_output(
        stack, term):
    sid, _ = term()
    c = stack.client()
    cmd1, want1 = marker()
    cmd2, want2 = marker()
    # A reference viewer stays attached through both commands.
    with c.stream(sid) as ref:
        with c.stream(sid) as v:
            assert c.input(sid, cmd1).status == 200
            t1 = read_output_until(v, want1)
            last = t1.end
        # Output produced while the viewer is away.
        assert c.input(sid, cmd2).status == 200
        tref = read_output_until(ref, want2)
        with c.stream(sid, last_event_id=last) as v2:
            assert v2.status == 200
            first = v2.next_event()
            assert first.name == "output", first
            # No byte twice: the replay starts exactly after `last`.
            assert first.id - len(first.payload) == last
            t2 = Transcript()
            t2.feed(first)
            read_output_until(v2, want2, t2)
    assert want1.encode() not in t2.data
    # None missing: first part + resumed part == what the reference saw.
    end = min(t2.end, tref.end)
    assert t1.slice(t1.start, last) + t2.slice(last, end) == \
        tref.slice(t1.start, end)


def test_last_event_id_query_parameter_resumes_and_header_wins(stack, term):
    sid, _ = term()
    c = stack.client()
    cmd1, want1 = marker()
    cmd2, want2 = marker()
    with c.stream(sid) as v:
        assert c.input(sid, cmd1).status == 200
        t1 = read_output_until(v, want1)
        mid = t1.end
        assert c.input(sid, cmd2).status == 200
        t1 = read_output_until(v, want2, t1)
    # Query parameter alone: replay starts after it.
    with c.stream(sid, query={"last_event_id": str(mid)}) as q:
        ev = q.next_event()
        assert ev.name == "output"
        assert ev.id - len(ev.payload) == mid
    # Header and query both given: the header wins.
    with c.stream(sid, last_event_id=mid,
                  query={"last_event_id": str(t1.start)}) as hq:
        ev = hq.next_event()
        assert ev.id - len(ev.payload) == mid
    # A non-integer or negative value counts as none: the whole backlog.
    for bad_id in ("abc", "-5", "12x"):
        with c.stream(sid, last_event_id=bad_id) as bad:
            ev = bad.next_event()
            assert ev.id - len(ev.payload) == t1.start, bad_id


def test_exit_7_sends_terminal_closed_with_exit_code_7_as_last_event(
        stack, term):
    sid, _ = term()
    c = stack.client()
    cmd, want = marker()
    with c.stream(sid) as s:
        assert c.input(sid, cmd + "exit 7\r").status == 200
        events = s.read_to_end(timeout=10)
    names = [e.name for e in events]
    assert "terminal_closed" in names, events[-5:]
    closed = events[-1]
    assert closed.name == "terminal_closed", events[-5:]
    assert names.count("terminal_closed") == 1
    assert closed.data == {"exit_code": 7, "reason": "exit"}
    # Every byte before the exit came first, and the id is past them.
    tr = Transcript()
    for e in events:
        tr.feed(e)
    assert want.encode() in tr.data
    assert closed.id > tr.end


def test_terminal_closed_comes_after_every_byte_the_shell_wrote(stack,
                                                                term):
    # The shell exits right after a burst of output: ptyd must drain the
    # pty to EOF/EIO before it reports the exit.
    sid, _ = term()
    c = stack.client()
    n = 60000
    with c.stream(sid) as s:
        assert c.input(sid, "echo BEG-$((1+1)); seq 1 %d; exit 2\r"
                       % n).status == 200
        events = s.read_to_end(timeout=30)
    assert events[-1].name == "terminal_closed", events[-3:]
    assert events[-1].data == {"exit_code": 2, "reason": "exit"}
    tr = Transcript()
    for e in events:
        tr.feed(e)
    out = bytes(tr.data)
    body = out[out.rindex(b"BEG-2\r\n") + 7:]
    lines = body.split(b"\r\n")
    assert lines[:n] == [str(i).encode() for i in range(1, n + 1)], \
        (len(lines), lines[-3:])


def test_mirror_shows_one_subscriber_while_watched_and_unwatched_after(
        stack, term):
    sid, j = term()
    c = stack.client()

    def row():
        return stack.db_terminal(sid)

    # Born unwatched.
    r0 = wait_for(lambda: (lambda r: r if r and r["pid"] == j["pid"]
                           else None)(row()), 3, what="row for new terminal")
    assert r0["state"] == "running"
    with c.stream(sid) as s:
        assert s.status == 200
        s.next_event()
        r1 = wait_for(lambda: (lambda r: r if r["subscribers"] == 1 and
                               r["unwatched_since"] is None else None)(row()),
                      3, what="subscribers=1, unwatched_since NULL")
        assert r1["state"] == "running"
        t_leave = time.time()
    r2 = wait_for(lambda: (lambda r: r if r["subscribers"] == 0 and
                           r["unwatched_since"] is not None else None)(row()),
                  3, what="subscribers=0, unwatched_since set")
    # unwatched_since is the moment the viewer left, in Unix seconds.
    assert abs(r2["unwatched_since"] - t_leave) < 3, (r2, t_leave)


def test_close_tears_shell_down_leaving_no_process_or_zombie(stack, term):
    sid, j = term()
    pid = j["pid"]
    c = stack.client()
    assert proc_state(pid) not in (None, "Z")
    r = c.close_term(sid)
    assert r.status == 200, r
    assert r.json() == {"ok": True, "closed": True}
    # SIGHUP, then SIGKILL after 1.5 s, then reaped: gone within ~3 s and
    # never left as a zombie.
    wait_for(lambda: proc_gone(pid), 4,
             what="shell pid %d gone (state %r)" % (pid, proc_state(pid)))
    assert sid not in c.terminals()
    assert c.input(sid, "x").status == 404
    assert c.close_term(sid).json() == {"ok": True, "closed": False}


def test_sse_framing_ids_increase_and_differ_by_bytes_carried(stack, term):
    sid, _ = term()
    c = stack.client()
    cmd, want = marker()
    with c.stream(sid) as s:
        assert s.status == 200
        ct = s.headers.get("content-type", "")
        assert ct.replace(" ", "").lower() == \
            "text/event-stream;charset=utf-8", s.headers
        assert s.headers.get("cache-control") == "no-cache", s.headers
        assert c.input(sid, cmd + "exit 3\r").status == 200
        events = s.read_to_end()
    assert len(events) >= 2
    prev = None
    for e in events:
        if e.name in ("watchers", "resize"):
            # The owner's list and the terminal's size (DESIGN 3): no
            # id, they stand for no position.
            assert [k for k, _ in e.fields] == ["event", "data"], e.lines
            continue
        # id: N / event: NAME / data: JSON, in that order, ": " after keys.
        assert [k for k, _ in e.fields] == ["id", "event", "data"], e.lines
        assert e.lines[0] == "id: %d" % e.id
        assert e.lines[1] == "event: " + e.name
        assert e.lines[2].startswith("data: {\"")
        if prev is not None:
            assert e.id > prev.id, (prev, e)
            if e.name == "output":
                assert e.id - prev.id == len(e.payload), (prev, e)
        prev = e
    out = [e for e in events if e.name == "output"]
    assert all(e.data_raw.startswith('{"text": "') for e in out), out[:3]
    closed = events[-1]
    assert closed.data_raw == '{"exit_code": 3, "reason": "exit"}', \
        closed.data_raw


def settle(s):
    """Read until the stream has been quiet for half a second (the prompt
    after a command has arrived); it must not end meanwhile."""
    try:
        while s.poll(0.5):
            pass
    except StreamEnded:
        raise AssertionError("stream ended")


@pytest.mark.deadline(30)
def test_heartbeat_comment_after_five_seconds_without_events(stack, term):
    sid, _ = term()
    c = stack.client()
    cmd, want = marker()
    with c.stream(sid) as s:
        assert c.input(sid, cmd).status == 200
        read_output_until(s, want)
        # Let the prompt after the marker arrive, then stay silent.
        settle(s)
        quiet_from = s.events[-1].t
        n_comments = len(s.comments)
        deadline = time.monotonic() + 8
        while len(s.comments) == n_comments:
            assert time.monotonic() < deadline, \
                "no heartbeat within 8 s of silence"
            new = s.poll(deadline - time.monotonic())
            assert not new, "unexpected events while idle: %r" % new
        t, line = s.comments[n_comments]
    assert line == ": heartbeat"
    assert 4.0 <= t - quiet_from <= 7.5, t - quiet_from


@pytest.mark.deadline(30)
def test_heartbeat_event_when_asked_after_silence_without_an_id(stack, term):
    """heartbeat=event (DESIGN 3): a visible heartbeat the page can time
    out on, instead of the comment.  It carries no id: resuming from the
    last id still replays exactly what followed the last output."""
    sid, _ = term()
    c = stack.client()
    with c.stream(sid, query={"heartbeat": "event"}) as s:
        cmd, want = marker()
        assert c.input(sid, cmd).status == 200
        last = read_output_until(s, want).end
        settle(s)
        n = len(s.events)
        deadline = time.monotonic() + 8
        while len(s.events) == n:
            assert time.monotonic() < deadline, "no heartbeat event in 8 s"
            s.poll(deadline - time.monotonic())
        hb = s.events[n]
        assert (hb.name, hb.data_raw, hb.id, s.comments) == \
            ("heartbeat", "{}", None, []), hb
    with c.stream(sid, query={"heartbeat": "bogus"}) as s:
        assert s.status == 400
    with c.stream(sid, last_event_id=last,
                  query={"heartbeat": "event"}) as s:
        assert not [e for e in s.poll(1.0) if e.name == "output"
                    and e.id <= last]


@pytest.mark.deadline(30)
def test_heartbeat_event_marks_where_the_replay_ends(stack, term):
    """With heartbeat=event the first heartbeat follows the last byte that
    was there at the attach, so a page knows exactly which output is
    history (its terminal queries must not be answered) and which is
    live.  A resume from the end has nothing to replay: it comes first."""
    sid, _ = term()
    c = stack.client()
    cmd, want = marker()
    with c.stream(sid) as s:
        assert c.input(sid, cmd).status == 200
        read_output_until(s, want)
        settle(s)
        end = s.events[-1].id
    with c.stream(sid, query={"heartbeat": "event"}) as s:
        seen = []
        while True:
            ev = s.next_event()
            seen.append(ev)
            if ev.name == "heartbeat":
                break
        outs = [e for e in seen if e.name == "output"]
        assert outs and outs[-1].id == end, (outs[-1:], end)
        cmd2, want2 = marker()
        assert c.input(sid, cmd2).status == 200
        live = read_output_until(s, want2)
        assert live.end > end
        settle(s)
        end = [e for e in s.events if e.name == "output"][-1].id
    with c.stream(sid, last_event_id=end,
                  query={"heartbeat": "event"}) as s:
        assert s.next_event().name == "heartbeat"
