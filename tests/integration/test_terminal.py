"""test_terminal.py -- what a terminal is, end to end on the shared default
stack: size rules (clamping seen by the shell), workspaces, reuse versus
restart, list and health fields, the shell's environment, pending-input
backpressure (429), and teardown of background and double-forked jobs.
"""

import os
import re
import time

import pytest

from ptyd_http import Shell, Transcript, marker, read_output_until
from ptyd_stack import (children_of, pids_matching, proc_gone, proc_state,
                        wait_for)

ALLOWED_ENV = {"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG",
               "LANGUAGE", "TZ", "TMPDIR", "TERM", "COLORTERM", "COLUMNS",
               "LINES", "PWD", "PTYD"}


def environ_of(pid):
    # Right after start the shell may still be inside execve(): its
    # environ reads empty until the kernel has set up the new stack.
    raw = wait_for(lambda: open("/proc/%d/environ" % pid, "rb").read(), 3,
                   what="environ of %d" % pid)
    out = {}
    for item in raw.split(b"\0"):
        if item:
            k, _, v = item.partition(b"=")
            out[k.decode()] = v.decode("utf-8", "replace")
    return out


def stty_size(sh):
    out = sh.run("echo S$(stty size)E").decode()
    m = re.search(r"S(\d+) (\d+)E", out)
    assert m, out
    return int(m.group(1)), int(m.group(2))


# -- rows and cols -----------------------------------------------------------

@pytest.mark.parametrize("req,want", [
    ({}, (24, 80)),
    ({"rows": None, "cols": None}, (24, 80)),
    ({"rows": 0, "cols": 0}, (24, 80)),
    ({"rows": 1, "cols": 5}, (2, 10)),
    ({"rows": 9999, "cols": 99999}, (500, 1000)),
    ({"rows": 33, "cols": 121}, (33, 121)),
])
def test_start_size_is_clamped_and_seen_by_the_shell(stack, term, req, want):
    sid, j = term(**req)
    c = stack.client()
    t = c.terminals()[sid]
    assert (t["rows"], t["cols"]) == want
    with Shell(c, sid) as sh:
        assert stty_size(sh) == want
    env = environ_of(j["pid"])
    assert (env.get("LINES"), env.get("COLUMNS")) == \
        (str(want[0]), str(want[1])), env


def test_resize_sets_pty_size_and_zero_or_missing_leaves_it(stack, term):
    sid, _ = term(rows=30, cols=90)
    c = stack.client()
    with Shell(c, sid) as sh:
        assert c.resize(sid, 40, 100).status == 200
        assert stty_size(sh) == (40, 100)
        assert c.post("resize", {"session_id": sid, "rows": 0,
                                 "cols": 120}).status == 200
        assert stty_size(sh) == (40, 120)
        assert c.post("resize", {"session_id": sid, "rows": 45}).status \
            == 200
        assert stty_size(sh) == (45, 120)
        assert c.resize(sid, 1, 100000).status == 200
        assert stty_size(sh) == (2, 1000)
    t = c.terminals()[sid]
    assert (t["rows"], t["cols"]) == (2, 1000)


RMW_SHELL = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                         "rmw_winsize_shell.py")


@pytest.fixture(scope="module")
def rmw_stack(make_stack):
    return make_stack("rmw", ptyd_args=["--shell", RMW_SHELL])


def test_resize_while_the_shell_starts_is_not_undone_by_it(rmw_stack,
                                                           new_sid):
    # Prevents: a resize sent right after start (the page fits the
    # terminal at once) lost because bash, starting, reads the size and
    # writes it back after ours: the shell then runs at the start size.
    c = rmw_stack.client()
    sid = new_sid("rmw")
    r = c.start(sid, rows=30, cols=90)
    assert r.status == 200
    read_flag = os.path.join(rmw_stack.home, "rmw-%d" % r.json()["pid"])
    try:
        with Shell(c, sid) as sh:
            wait_for(lambda: os.path.exists(read_flag), 10,
                     what="the shell to read its size")
            assert c.resize(sid, 40, 100).status == 200
            read_output_until(sh.s, b"ready", sh.tr, timeout=10)
            assert stty_size(sh) == (40, 100)
    finally:
        c.close_term(sid)


def test_resize_sends_sigwinch_to_the_shell_foreground(stack, term):
    sid, _ = term()
    c = stack.client()
    with Shell(c, sid) as sh:
        # A foreground job that reports SIGWINCH (the quotes keep the
        # echo of the command line from matching the output).
        sh.send("bash -c 'trap \"echo W\"I\"NCH-23; exit 0\" WINCH; "
                "echo RE\"\"ADY; while :; do sleep 0.05; done'\r")
        read_output_until(sh.s, "READY", sh.tr)
        assert c.resize(sid, 50, 150).status == 200
        read_output_until(sh.s, "WINCH-23", sh.tr, timeout=5)


# -- workspaces --------------------------------------------------------------

def test_workspace_inside_root_is_resolved_and_becomes_cwd(stack, term):
    proj = os.path.join(stack.home, "proj-ws")
    os.makedirs(proj, exist_ok=True)
    link = os.path.join(stack.home, "link-to-proj")
    if not os.path.islink(link):
        os.symlink(proj, link)
    for ws in (proj, link, stack.home + "/./proj-ws/"):
        sid, j = term(workspace=ws)
        assert j["workspace"] == proj, (ws, j)
        assert os.readlink("/proc/%d/cwd" % j["pid"]) == proj
        assert environ_of(j["pid"]).get("PWD") == proj
        assert stack.client().terminals()[sid]["workspace"] == proj


@pytest.mark.parametrize("ws", ["/", "/etc", "{home}/..", "{home}/nope",
                                "{home}/a-file", "{home}/link-out",
                                5, True])
def test_workspace_outside_root_or_not_a_directory_is_400(stack, new_sid,
                                                          ws):
    home = stack.home
    open(os.path.join(home, "a-file"), "w").close()
    out = os.path.join(home, "link-out")
    if not os.path.islink(out):
        os.symlink("/tmp", out)
    if isinstance(ws, str):
        ws = ws.format(home=home)
    c = stack.client()
    sid = new_sid()
    r = c.post("start", {"session_id": sid, "workspace": ws})
    assert r.status == 400, r
    assert "error" in r.json()
    assert sid not in c.terminals()


# -- reuse and restart -------------------------------------------------------

def test_start_again_reuses_the_running_shell_without_new_backlog(stack,
                                                                   term):
    sid, j1 = term()
    c = stack.client()
    cmd1, want1 = marker()
    with c.stream(sid) as v:
        assert c.input(sid, cmd1).status == 200
        t = read_output_until(v, want1)
        r = c.start(sid, rows=41, cols=101)
        assert r.status == 200, r
        j2 = r.json()
        assert j2["pid"] == j1["pid"] and j2["running"] is True
        assert j2["workspace"] == j1["workspace"]
        # Only resized: the viewer stays attached and sees more output.
        cmd2, want2 = marker()
        assert c.input(sid, cmd2).status == 200
        read_output_until(v, want2, t)
        assert t.closed is None
    tl = c.terminals()[sid]
    assert (tl["rows"], tl["cols"]) == (41, 101)
    # The backlog is the same one: a fresh viewer replays marker 1.
    with c.stream(sid) as v2:
        t2 = read_output_until(v2, want1)
        assert t2.start == t.start


def test_restart_spawns_new_shell_closes_old_viewers_and_ids_grow(stack,
                                                                   term):
    sid, j1 = term()
    c = stack.client()
    cmd1, want1 = marker()
    with c.stream(sid) as old:
        assert c.input(sid, cmd1).status == 200
        told = read_output_until(old, want1)
        r = c.start(sid, restart=True)
        assert r.status == 200, r
        j2 = r.json()
        assert j2["pid"] != j1["pid"] and j2["running"] is True
        events = old.read_to_end(timeout=10)
    assert events[-1].name == "terminal_closed", events[-3:]
    assert events[-1].data["reason"] == "restarted"
    old_max = max(e.id for e in events if e.id is not None)
    wait_for(lambda: proc_gone(j1["pid"]), 4, what="old shell gone")
    assert proc_state(j2["pid"]) not in (None, "Z")
    cmd2, want2 = marker()
    with c.stream(sid) as new:
        assert c.input(sid, cmd2).status == 200
        tnew = read_output_until(new, want2)
        assert all(e.id > old_max for e in new.events
                   if e.id is not None), \
            (old_max, new.events[:3])
    assert want1.encode() not in tnew.data
    # A stale Last-Event-ID from the old incarnation never hides new
    # output: it is older than everything, so the whole backlog comes.
    with c.stream(sid, last_event_id=told.end) as stale:
        first = stale.next_event()
        while first.id is None:     # watchers, resize: no position
            first = stale.next_event()
        assert first.id > old_max
        t3 = Transcript()
        t3.feed(first)
        read_output_until(stale, want2, t3)


def test_start_with_other_workspace_replaces_the_shell(stack, term):
    sid, j1 = term()
    other = os.path.join(stack.home, "other-ws")
    os.makedirs(other, exist_ok=True)
    r = stack.client().start(sid, workspace=other)
    assert r.status == 200, r
    assert r.json()["pid"] != j1["pid"]
    assert r.json()["workspace"] == other
    wait_for(lambda: proc_gone(j1["pid"]), 4, what="old shell gone")


# -- list and health ---------------------------------------------------------

def test_list_reports_fields_of_the_callers_terminals(stack, term):
    t0 = time.time()
    sid, j = term(rows=26, cols=82)
    c = stack.client()
    r = c.list()
    assert r.status == 200, r
    assert r.header("content-type", "").startswith("application/json")
    assert r.header("cache-control") == "no-store"
    entries = [t for t in r.json()["terminals"] if t["session_id"] == sid]
    assert len(entries) == 1
    t = entries[0]
    assert set(t) >= {"session_id", "pid", "workspace", "rows", "cols",
                      "running", "exit_code", "subscribers",
                      "unwatched_since", "last_activity", "started_at"}, t
    assert t["pid"] == j["pid"]
    assert t["workspace"] == stack.home
    assert (t["rows"], t["cols"]) == (26, 82)
    assert t["running"] is True and t["exit_code"] is None
    assert t["subscribers"] == 0
    assert isinstance(t["started_at"], (int, float))
    assert t0 - 2 <= t["started_at"] <= time.time() + 2
    # Born unwatched, so reapable even if nobody ever attaches.
    assert t["unwatched_since"] is not None
    assert abs(t["unwatched_since"] - t["started_at"]) < 2
    la0 = t["last_activity"]
    with c.stream(sid) as s:
        s.next_event()
        t = wait_for(lambda: (lambda e: e if e["subscribers"] == 1 else
                              None)(c.terminals()[sid]), 3,
                     what="subscribers 1")
        assert t["unwatched_since"] is None
        time.sleep(0.05)
        cmd, want = marker()
        assert c.input(sid, cmd).status == 200
        read_output_until(s, want)
        t = c.terminals()[sid]
        assert t["last_activity"] > la0
        assert t["last_activity"] <= time.time() + 1


def test_health_reports_daemon_counters(stack, term):
    c = stack.client()
    r = c.health()
    assert r.status == 200, r
    h = r.json()
    assert h["ok"] is True
    p = h["ptyd"]
    assert set(p) >= {"pid", "uptime", "terminals", "exited", "viewers",
                      "db_errors"}, p
    assert proc_state(p["pid"]) not in (None, "Z")
    with open("/proc/%d/comm" % p["pid"]) as f:
        assert f.read().strip() == "ptyd"
    assert p["uptime"] >= 0
    n0, v0 = p["terminals"], p["viewers"]
    sid, _ = term()
    with c.stream(sid) as s:
        s.next_event()
        p2 = wait_for(lambda: (lambda x: x if x["viewers"] == v0 + 1 else
                               None)(c.health().json()["ptyd"]), 3,
                      what="viewers + 1")
    assert p2["terminals"] == n0 + 1
    assert p2["uptime"] >= p["uptime"]
    assert p2["db_errors"] == 0


def test_limits_are_the_ones_the_server_enforces(stack, new_sid):
    """GET limits gives the page the API's rules (it keeps no copy): the
    id pattern says no exactly where start says 400, and the sizes are
    the clamp's."""
    c = stack.client()
    r = c.get("limits")
    assert r.status == 200, r
    lim = r.json()
    pat = re.compile(lim["session_id"]["pattern"])
    longest = "s" * lim["session_id"]["max"]
    for sid, ok in ((longest, True), (longest + "s", False),
                    ("a/b", False), ("a b", False), (new_sid(), True)):
        assert bool(pat.match(sid)) == ok, sid
        r = c.start(sid)
        assert (r.status == 200) == ok, (sid, r)
        if ok:
            c.close_term(sid)
    assert lim["input_chars"] > 0 and lim["body_bytes"] > 0
    assert lim["heartbeat_ms"] == 5000, lim
    rows, cols = lim["rows"], lim["cols"]
    assert rows["min"] <= rows["default"] <= rows["max"]
    sid = new_sid()
    r = c.start(sid, rows=rows["max"] + 100, cols=cols["min"] - 1)
    assert r.status == 200, r
    t = [x for x in c.list().json()["terminals"] if x["session_id"] == sid]
    c.close_term(sid)
    assert (t[0]["rows"], t[0]["cols"]) == (rows["max"], cols["min"])


# -- environment -------------------------------------------------------------

def test_no_server_environment_variable_reaches_the_shell(stack, term):
    # Precondition: the daemons were started with the secret (they wipe
    # their own copy: test_isolation.py).
    assert "PTYD_TEST_SECRET=s3cr3t" in stack.env_pairs
    sid, j = term()
    env = environ_of(j["pid"])
    assert "s3cr3t" not in "".join(env.values())
    extra = {k for k in env if k not in ALLOWED_ENV and
             not k.startswith("LC_") and not k.startswith("XDG_")}
    assert not extra, "variables outside the allowlist: %r" % extra
    assert env["PTYD"] == "1"
    assert env["TERM"] == "xterm-256color"
    assert env["COLORTERM"] == "truecolor"
    assert env["HOME"] == stack.home
    with Shell(stack.client(), sid) as sh:
        out = sh.run("env").decode()
    assert "s3cr3t" not in out
    lines = set(out.replace("\r", "").split("\n"))
    assert "PTYD=1" in lines and "TERM=xterm-256color" in lines, out


# -- pending input -----------------------------------------------------------

def test_input_to_a_shell_that_does_not_read_gets_429_with_retry_after(
        stack, term):
    sid, j = term()
    c = stack.client(keepalive=True)
    try:
        assert c.input(sid, "stty raw -echo; sleep 1000\r").status == 200
        wait_for(lambda: any(
            "sleep" in open("/proc/%d/comm" % p).read()
            for p in children_of(j["pid"]) if not proc_gone(p)), 5,
            what="sleep running in the shell")
        chunk = "x" * 8192
        statuses = []
        for _ in range(800):
            r = c.input(sid, chunk)
            statuses.append(r.status)
            if r.status != 200:
                break
        assert statuses[-1] == 429, (len(statuses), statuses[-5:])
        assert set(statuses[:-1]) == {200}
        assert r.header("retry-after") is not None, r
        assert int(r.header("retry-after")) >= 1
        # More than the 1 MiB bound was accepted before refusing: the
        # pty's own buffers plus ptyd's pending queue.
        assert (len(statuses) - 1) * 8192 >= 1024 * 1024
        # Still refused while nothing drains.
        assert c.input(sid, chunk).status == 429
    finally:
        c.close()


# -- teardown of jobs --------------------------------------------------------

def test_close_kills_background_and_double_forked_jobs(stack, term):
    sid, j = term()
    c = stack.client()
    n1 = 1000 + int.from_bytes(os.urandom(2), "big") % 8000
    n2 = n1 + 1
    with Shell(c, sid) as sh:
        sh.run("sleep %d & :" % n1)
        sh.run("(setsid sleep %d &)" % n2)

    def sleepers():
        return pids_matching(lambda cl: cl[0].endswith("sleep") and
                             len(cl) == 2 and cl[1] in (str(n1), str(n2)))
    found = wait_for(lambda: len(sleepers()) == 2 and sleepers(), 5,
                     what="both sleeps running")
    try:
        assert c.close_term(sid).json()["closed"] is True
        wait_for(lambda: proc_gone(j["pid"]), 4, what="shell gone")
        wait_for(lambda: all(proc_gone(p) for p in found), 5,
                 what=lambda: "background and double-forked sleeps gone "
                 "(states %r)" % [proc_state(p) for p in found])
    finally:
        # The test started them: never leave them behind on failure.
        for p in found:
            if not proc_gone(p):
                os.kill(p, 9)


def test_start_again_without_a_size_leaves_the_size_alone(stack, new_sid):
    """Regression: a second tab attaching with a plain start (no rows or
    cols) shrank the terminal to 24x80 under the first tab's feet."""
    c = stack.client()
    sid = new_sid()
    assert c.start(sid, rows=40, cols=100).status == 200
    r = c.start(sid)
    assert r.status == 200 and r.json()["reused"] is True, r
    t = c.terminals()[sid]
    assert (t["rows"], t["cols"]) == (40, 100), t
    r = c.start(sid, cols=120)
    t = c.terminals()[sid]
    assert (t["rows"], t["cols"]) == (40, 120), t
    c.close_term(sid)
