"""test_mirror.py -- the SQLite mirror and audit log as an operator sees
them with sqlite3 (issue 5): the schema, rows and events following memory,
subscriber counts matching the live view, start-up reconciliation after a
SIGKILL (rows left running become lost), and SIGTERM shutdown.
"""

import os
import signal
import subprocess
import time

import pytest

from ptyd_http import Transcript, marker, read_output_until
from ptyd_stack import proc_cmdline, proc_gone, wait_for

TERMINAL_COLUMNS = {"id", "session_id", "owner", "pid", "workspace", "rows",
                    "cols", "started_at", "last_activity", "subscribers",
                    "unwatched_since", "state", "ended_at", "exit_code",
                    "end_reason", "bytes_in", "bytes_out"}
EVENT_COLUMNS = {"id", "at", "session_id", "terminal_id", "kind", "actor",
                 "detail"}


def columns(st, table):
    return {r["name"] for r in st.db("PRAGMA table_info(%s)" % table)}


def row_where(st, sid, pred, what, timeout=3):
    return wait_for(lambda: (lambda r: r if r and pred(r) else None)(
        st.db_terminal(sid)), timeout, what=what)


def events_of(st, sid):
    return st.db("SELECT * FROM terminal_events WHERE session_id = ? "
                 "ORDER BY id", (sid,))


def test_schema_has_tables_views_version_and_wal(stack):
    objs = {(r["type"], r["name"]) for r in stack.db(
        "SELECT type, name FROM sqlite_master")}
    assert ("table", "terminals") in objs
    assert ("table", "terminal_events") in objs
    assert ("view", "live_terminals") in objs
    assert ("view", "idle_terminals") in objs
    assert TERMINAL_COLUMNS <= columns(stack, "terminals")
    assert EVENT_COLUMNS <= columns(stack, "terminal_events")
    assert stack.db("PRAGMA user_version")[0]["user_version"] >= 1
    assert stack.db("PRAGMA journal_mode")[0]["journal_mode"] == "wal"
    # The sqlite3 shell reads it while ptyd runs.
    out = subprocess.run(["sqlite3", stack.db_path,
                          "SELECT count(*) FROM terminals;"],
                         capture_output=True, timeout=10)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.strip()) >= 0


def test_rows_and_events_follow_a_terminal_through_its_life(stack, term):
    t0 = time.time()
    sid, j = term(rows=25, cols=81)
    c = stack.client()
    r = row_where(stack, sid, lambda r: r["pid"] == j["pid"], "row")
    assert r["state"] == "running" and r["owner"] == ""
    assert r["workspace"] == stack.home
    assert (r["rows"], r["cols"]) == (25, 81)
    assert t0 - 2 <= r["started_at"] <= time.time() + 2
    assert r["ended_at"] is None and r["exit_code"] is None
    assert r["unwatched_since"] is not None and r["subscribers"] == 0
    live = stack.db("SELECT * FROM live_terminals WHERE session_id = ?",
                    (sid,))
    assert len(live) == 1
    idle = stack.db("SELECT * FROM idle_terminals WHERE session_id = ?",
                    (sid,))
    assert len(idle) == 1
    assert c.resize(sid, 30, 100).status == 200
    row_where(stack, sid, lambda r: (r["rows"], r["cols"]) == (30, 100),
              "resize mirrored")
    cmd, want = marker()
    with c.stream(sid) as v:
        assert c.input(sid, cmd).status == 200
        read_output_until(v, want)
        r = row_where(stack, sid, lambda r: r["subscribers"] == 1 and
                      r["bytes_in"] >= len(cmd.encode()) and
                      r["bytes_out"] > 0, "bytes and subscriber mirrored")
        assert stack.db("SELECT * FROM idle_terminals WHERE session_id = ?",
                        (sid,)) == []
        assert c.input(sid, "exit 5\r").status == 200
        v.read_to_end()
    r = row_where(stack, sid, lambda r: r["state"] == "exited",
                  "exit mirrored")
    assert r["exit_code"] == 5 and r["ended_at"] is not None
    assert r["ended_at"] >= r["started_at"]
    assert r["last_activity"] >= r["started_at"]
    kinds = [e["kind"] for e in events_of(stack, sid)]
    for k in ("start", "resize", "attach", "detach", "exit"):
        assert k in kinds, (k, kinds)
    assert kinds[0] == "start"
    ev = events_of(stack, sid)
    assert all(e["terminal_id"] == r["id"] for e in ev), ev
    assert all(t0 - 2 <= e["at"] <= time.time() + 2 for e in ev), ev


def test_close_is_mirrored_with_state_closed_and_a_close_event(stack, term):
    sid, j = term()
    c = stack.client()
    row_where(stack, sid, lambda r: r["state"] == "running", "running row")
    assert c.close_term(sid).json()["closed"] is True
    r = row_where(stack, sid, lambda r: r["state"] == "closed",
                  "closed mirrored")
    assert r["ended_at"] is not None
    kinds = [e["kind"] for e in events_of(stack, sid)]
    assert "close" in kinds, kinds
    assert stack.db("SELECT * FROM live_terminals WHERE session_id = ?",
                    (sid,)) == []


def test_every_input_request_is_its_own_event_never_merged(stack, term):
    """DESIGN 7: one input event per accepted request (it used to be one
    per flush, batched); the row's bytes_in still counts every byte."""
    sid, _ = term()
    c = stack.client(keepalive=True)
    try:
        for _ in range(100):
            assert c.input(sid, "x").status == 200
    finally:
        c.close()
    r = row_where(stack, sid, lambda r: r["bytes_in"] >= 100,
                  "100 input bytes counted")
    assert r["bytes_in"] == 100, r
    ev = wait_for(lambda: (lambda e: e if len(e) == 100 else None)(
        [e for e in events_of(stack, sid) if e["kind"] == "input"]), 5,
        what="100 input events")
    assert all(e["detail"] == "1 bytes" for e in ev), ev[:3]
    assert all(e["actor"] and e["actor"].startswith("@") for e in ev), ev[:3]


def test_restart_makes_a_new_row_per_incarnation(stack, term):
    sid, j1 = term()
    c = stack.client()
    r = c.start(sid, restart=True)
    assert r.status == 200
    pid2 = r.json()["pid"]
    rows = wait_for(lambda: (lambda rs: rs if len(rs) == 2 and
                             rs[1]["pid"] == pid2 and
                             rs[0]["state"] != "running" else None)(
        stack.db("SELECT * FROM terminals WHERE session_id = ? ORDER BY id",
                 (sid,))), 3, what="two rows, the first ended")
    assert rows[0]["pid"] == j1["pid"] and rows[1]["state"] == "running"


def test_mirror_subscribers_match_the_live_view_through_attach_cycles(
        stack, term):
    sids = [term()[0] for _ in range(3)]
    c = stack.client()
    open_streams = {s: [] for s in sids}

    def compare():
        live = c.terminals()
        mirror = {r["session_id"]: r for r in stack.db(
            "SELECT * FROM terminals WHERE state = 'running' AND "
            "session_id IN (?, ?, ?)", sids)}
        for s in sids:
            want = len(open_streams[s])
            if live[s]["subscribers"] != want:
                return None
            m = mirror.get(s)
            if not m or m["subscribers"] != want:
                return None
            if (m["unwatched_since"] is None) != (want > 0):
                return None
        return True
    try:
        pattern = [(0, 1), (1, 2), (2, 1), (0, 2), (1, -1), (0, -1),
                   (2, 1), (0, -1), (2, -1), (2, -1), (1, -1), (1, 1)]
        for s_idx, delta in pattern:
            s = sids[s_idx]
            if delta > 0:
                for _ in range(delta):
                    v = c.stream(s)
                    assert v.status == 200
                    v.next_event()
                    open_streams[s].append(v)
            else:
                open_streams[s].pop().close(abort=True)
            wait_for(compare, 4, what="mirror == live view after %r"
                     % ((s_idx, delta),))
    finally:
        for lst in open_streams.values():
            for v in lst:
                v.close()


# -- daemon crash and shutdown -----------------------------------------------

@pytest.fixture(scope="module")
def crashable(make_stack):
    # A kill -9 of the one process that holds the shells: --no-keeper
    # (under a keeper they survive it: test_keeper.py).
    return make_stack("crash", fcgi_args=["--no-autostart"],
                      ptyd_args=["--no-keeper"])


def relaunch_ptyd(st, argv, env, cwd):
    """Start ptyd again exactly as the stack had started it (argv and
    environment read from /proc before it was killed)."""
    log = open(os.path.join(st.state, "log", "ptyd.log"), "ab")
    p = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                         stdout=log, stderr=log, start_new_session=True)
    log.close()
    st.extra_pids.append(p.pid)
    with open(os.path.join(st.state, "run", "ptyd.pid"), "w") as f:
        f.write("%d\n" % p.pid)
    wait_for(lambda: st.client().health().status == 200, 10,
             what="relaunched ptyd answers health")
    return p


def proc_environ(pid):
    with open("/proc/%d/environ" % pid, "rb") as f:
        raw = f.read()
    env = {}
    for item in raw.split(b"\0"):
        if item:
            k, _, v = item.partition(b"=")
            env[k.decode()] = v.decode()
    return env


@pytest.mark.deadline(60)
def test_sigkilled_daemon_rows_become_lost_on_restart_and_ids_grow(
        crashable, new_sid):
    st = crashable
    c = st.client()
    sids = [new_sid() for _ in range(2)]
    pids = {}
    for s in sids:
        r = c.start(s)
        assert r.status == 200, r
        pids[s] = r.json()["pid"]
    with c.stream(sids[0]) as v:
        cmd, want = marker()
        assert c.input(sids[0], cmd).status == 200
        old_last = read_output_until(v, want).end
        for s in sids:
            row_where(st, s, lambda r: r["state"] == "running" and
                      r["pid"] == pids[s], "running rows flushed")
        dpid = st.ptyd_pid()
        argv = proc_cmdline(dpid)
        env = proc_environ(dpid)
        cwd = os.readlink("/proc/%d/cwd" % dpid)
        os.kill(dpid, signal.SIGKILL)
        wait_for(lambda: proc_gone(dpid), 5, what="ptyd killed")
    # Rows still say running: nobody could update them.
    for s in sids:
        assert st.db_terminal(s)["state"] == "running"
    relaunch_ptyd(st, argv, env, cwd)
    for s in sids:
        r = row_where(st, s, lambda r: r["state"] == "lost",
                      "row left running closed as lost")
        assert r["ended_at"] is not None
        kinds = [e["kind"] for e in events_of(st, s)]
        assert "lost" in kinds, kinds
        assert s not in c.terminals()
        assert c.input(s, "x").status == 404
    # A new incarnation after a daemon restart has ids above the old ones.
    r = c.start(sids[0])
    assert r.status == 200
    with c.stream(sids[0]) as v:
        ev = v.next_event()
        while ev.id is None:        # watchers, resize: no position
            ev = v.next_event()
        assert ev.id > old_last, (ev.id, old_last)
    with c.stream(sids[0], last_event_id=old_last) as v:
        ev = v.next_event()
        assert ev.name == "output" and ev.id > old_last
    c.close_term(sids[0])


@pytest.fixture(scope="module")
def shutdownable(make_stack):
    return make_stack("shutdown", fcgi_args=["--no-autostart"])


@pytest.mark.deadline(40)
def test_sigterm_tears_everything_down_with_reason_shutdown(shutdownable,
                                                            new_sid):
    st = shutdownable
    c = st.client()
    sid, other = new_sid(), new_sid()
    r = c.start(sid)
    pid = r.json()["pid"]
    r2 = c.start(other)
    pid2 = r2.json()["pid"]
    with c.stream(sid) as v:
        assert v.status == 200
        v.next_event()
        dpid = st.ptyd_pid()
        t0 = time.monotonic()
        os.kill(dpid, signal.SIGTERM)
        evs = v.read_to_end(timeout=10)
    assert evs[-1].name == "terminal_closed", evs[-3:]
    assert evs[-1].data["reason"] == "shutdown"
    wait_for(lambda: proc_gone(dpid), 8, what="ptyd exited")
    assert time.monotonic() - t0 < 8
    assert proc_gone(pid) and proc_gone(pid2)
    for s in (sid, other):
        r = st.db_terminal(s)
        assert r["state"] == "shutdown" and r["ended_at"] is not None, r
        assert "shutdown" in [e["kind"] for e in events_of(st, s)]


# -- an auditor holding the write lock ---------------------------------------

@pytest.fixture(scope="module")
def lockable(make_stack):
    return make_stack("lock")


@pytest.mark.deadline(60)
def test_auditor_holding_write_lock_never_stalls_terminals(lockable,
                                                           new_sid):
    st = lockable
    c = st.client()
    sid, late = new_sid(), new_sid("late")
    assert c.start(sid).status == 200
    row_where(st, sid, lambda r: r["state"] == "running", "row flushed")

    def echo_latency(v, tr):
        cmd, want = marker()
        t0 = time.monotonic()
        assert c.input(sid, cmd).status == 200
        read_output_until(v, want, tr, timeout=5)
        return time.monotonic() - t0

    aud = subprocess.Popen(["sqlite3", "-batch", st.db_path],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
    try:
        with c.stream(sid) as v:
            tr = Transcript()
            before = sorted(echo_latency(v, tr) for _ in range(5))
            aud.stdin.write(b"BEGIN EXCLUSIVE;\nSELECT 'lock-held';\n")
            aud.stdin.flush()
            line = aud.stdout.readline()
            assert line.strip() == b"lock-held", line
            t_lock = time.monotonic()
            errors0 = c.health().json()["ptyd"]["db_errors"]
            # Terminals are born, attached and typed into while the
            # database refuses every write.
            r = c.start(late)
            assert r.status == 200, r
            late_pid = r.json()["pid"]
            during = []
            # As the issue puts it: the lock kept open for 10 s.
            while time.monotonic() - t_lock < 10:
                during.append(echo_latency(v, tr))
            assert max(during) < max(0.5, 5 * before[-1]), (before, during)
            # The refused flushes are counted, not hidden: health says
            # degraded (issue 13), for a monitor that sees only the status.
            h = c.health()
            assert h.status == 503, h
            assert h.header("Retry-After") is not None, h
            assert h.json()["status"] == "degraded", h.json()
            assert h.json()["db_failing"] is True, h.json()
            assert h.json()["ptyd"]["db_errors"] > errors0, h.json()
            aud.stdin.write(b"COMMIT;\n.quit\n")
            aud.stdin.flush()
            aud.wait(10)
            wait_for(lambda: c.health().status == 200, 5,
                     what="health ok once the lock is gone")
        # The rows catch up once the lock is gone.
        row_where(st, late, lambda r: r["state"] == "running" and
                  r["pid"] == late_pid, "row of the terminal started "
                  "during the lock", timeout=5)
        row_where(st, sid, lambda r: r["subscribers"] == 0 and
                  r["bytes_in"] > 0, "counters caught up", timeout=5)
    finally:
        if aud.poll() is None:
            aud.kill()
            aud.wait()
        c.close_term(sid)
        c.close_term(late)

