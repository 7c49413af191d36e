"""test_keeper.py -- shells outlive ptyd (issue 30, docs/proposals/keeper.md):
ptyd-keeper runs ptyd, holds every terminal, starts a new ptyd when one
dies and replaces it on SIGUSR2; the shells, their output positions and
their input ids survive both.

Every stack here is the test's own (the keeper's backoff counts quick
deaths over 30 s, so stacks are not shared between tests).  Processes:
the keeper is ptyd's parent and its cmdline starts with "ptyd-keeper";
ptyd is found by health's "ptyd": {"pid"}; shells by the start reply's
"pid" (they are the keeper's children).

Streams: ptyd.fcgi currently ends an SSE response whose ptyd connection
ends, so Follow reconnects with Last-Event-ID whenever a stream ends
without terminal_closed and feeds one Transcript across connections,
which proves byte-exactness over the concatenation (it stays right once
streams re-attach in place).

Events of the last second before a kill may be missing from the mirror
(it flushes once a second): nothing here asserts on those; the takeover
rows written after a kill are waited for before the next kill.
"""

import json
import os
import random
import re
import secrets
import shutil
import signal
import subprocess
import threading
import time

import pytest

from ptyd_http import StreamEnded, Transcript, marker
from ptyd_stack import (BUILDDIR, REPO, Stack, fd_count, pids_matching,
                        proc_cmdline, proc_gone, proc_ppid, proc_state,
                        scale, wait_for, zombies)

PTYDCTL = os.path.join(BUILDDIR, "ptydctl", "ptydctl")

# The keeper's restart delays after 1, 2, 3... deaths of ptyds that
# lived less than 30 s (keeper.c: 0, 0, 0.25, 0.5, 1, 2, 5 s).
BACKOFF = [0, 0, 0, 0.25, 0.5, 1, 2, 5]
TAKEOVER_BOUND = 1.0    # "a new ptyd within 1 s" (proposal, section 4)
SLACK = 1.0             # two busy cores

# The counter's terminals keep a big ring: a viewer cut off by a kill
# reconnects and must find every byte it has not seen still there; with
# the default 1 MiB a burst written while nobody was attached could wrap
# it, which would be a `gap` (an honest loss, but not what is tested).
RING = "32M"


# -- processes -----------------------------------------------------------------

def keeper_of(st):
    """(keeper pid, ptyd pid) of a stack: the keeper is ptyd's parent."""
    pid = st.ptyd_pid()
    kp = proc_ppid(pid)
    cl = proc_cmdline(kp) or []
    assert cl and cl[0] == "ptyd-keeper", (kp, cl)
    return kp, pid


def is_ptyd(pid):
    cl = proc_cmdline(pid) or []
    return bool(cl) and os.path.basename(cl[0]) == "ptyd"


def kids(pid):
    """pid's children, from /proc/PID/task/*/children (fast enough to
    look between the steps of an upgrade; children_of reads all of
    /proc)."""
    out = []
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
                out += [int(x) for x in f.read().split()]
    except (FileNotFoundError, ProcessLookupError):
        pass
    return out


def ptyds_under(kp):
    """The keeper's children that are ptyd (the serving one, and during an
    upgrade the new one)."""
    return [p for p in kids(kp) if is_ptyd(p)]


def keeper_zombies(kp):
    return [p for p in zombies() if proc_ppid(p) == kp]


def serving_pid(c):
    """The pid health names, or None while nothing answers 200."""
    try:
        r = c.health()
    except (OSError, TimeoutError):
        return None
    if r.status != 200:
        return None
    return int(r.json()["ptyd"]["pid"])


def wait_serving(c, not_pids, timeout):
    """Wait until health answers 200 from a ptyd not in not_pids; return
    (pid, seconds waited)."""
    t0 = time.monotonic()
    pid = wait_for(lambda: (lambda p: p if p and p not in not_pids
                            else None)(serving_pid(c)),
                   timeout, interval=0.005,
                   what="health 200 from a ptyd other than %r" % (not_pids,))
    return pid, time.monotonic() - t0


def upgrade(st, c, kp, timeout=10):
    """SIGUSR2 to the keeper; wait for a new ptyd serving and the old one
    gone.  Returns the new pid."""
    # One ptyd only: an upgrade still under way would make the keeper
    # ignore this one (it says so), and nothing would change.
    wait_for(lambda: len(ptyds_under(kp)) == 1, 5,
             what="no upgrade under way")
    old = serving_pid(c)
    assert old, "nothing serves before the upgrade"
    os.kill(kp, signal.SIGUSR2)
    new, _ = wait_serving(c, {old}, timeout)
    wait_for(lambda: proc_gone(old) or proc_ppid(old) != kp, 5,
             what="old ptyd %d gone after the upgrade" % old)
    return new


def audit_problems(st):
    """ptydctl audit verify without anchors: the chain's own problems."""
    r = subprocess.run([PTYDCTL, "--db", st.db_path, "audit", "verify",
                        "--json"], capture_output=True, timeout=30,
                       env=st.environ())
    assert r.stdout, r
    return json.loads(r.stdout.decode())["problems"]


# -- requests that outlast a ptyd's death --------------------------------------

TRANSIENT = (502, 503, 504)


def post_retry(c, endpoint, obj, timeout=15):
    """POST until an answer that is not 'ptyd unreachable' (502/503/504 or
    a cut connection), as a page retrying with the same body (the same
    input_id) does.  Returns the last Response."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            r = c.post(endpoint, obj, timeout=10)
            if r.status not in TRANSIENT:
                return r
        except (OSError, TimeoutError):
            r = None
        if time.monotonic() >= deadline:
            raise AssertionError("%s still unanswered after %ds: %r"
                                 % (endpoint, timeout, r))
        time.sleep(0.02)


def type_marker(c, sid, tag=None):
    """Type a marker with a fresh input_id; (expected bytes, input_id)."""
    cmd, want = marker(tag)
    iid = "k:" + secrets.token_hex(6)
    r = post_retry(c, "input", {"session_id": sid, "data": cmd,
                                "input_id": iid})
    assert r.status == 200 and r.json().get("ok") is True, r
    return want.encode(), iid


class Follow:
    """One viewer of a terminal across any number of ptyds: a stream
    (base64, exact bytes) that, when it ends without terminal_closed or
    breaks, reconnects with Last-Event-ID = the position after the last
    byte it holds.  Every byte goes into one Transcript, whose feed()
    raises if an event does not start where the previous one ended."""

    def __init__(self, client, sid, connect_timeout=15, rcvbuf=None):
        self.c = client
        self.sid = sid
        self.rcvbuf = rcvbuf
        self.tr = Transcript()
        self.s = None
        self.connects = 0
        self.refused = []       # non-200 answers to a (re)connect
        self.connect_timeout = connect_timeout
        self.on_gap = None      # None: a gap fails at once

    def _connect(self):
        deadline = time.monotonic() + self.connect_timeout
        while True:
            try:
                s = self.c.stream(self.sid, encoding="base64",
                                  last_event_id=self.tr.end, timeout=10,
                                  rcvbuf=self.rcvbuf)
            except (OSError, TimeoutError, AssertionError) as e:
                s, err = None, repr(e)
            if s is not None:
                if s.status == 200:
                    self.s = s
                    self.connects += 1
                    return
                err = (s.status, s.body[:200])
                s.close()
                if s.status not in TRANSIENT:
                    raise AssertionError("stream of %s answered %r"
                                         % (self.sid, err))
            self.refused.append(err)
            if time.monotonic() >= deadline:
                raise AssertionError("stream of %s: no reconnect within "
                                     "%ds: %r" % (self.sid,
                                                  self.connect_timeout,
                                                  self.refused[-3:]))
            time.sleep(0.02)

    def _drop(self):
        if self.s is not None:
            self.s.close()
            self.s = None

    def pump(self, timeout):
        """Wait up to timeout for events (reconnecting as needed) and take
        those that came.  False once terminal_closed was seen."""
        deadline = time.monotonic() + timeout
        while self.tr.closed is None:
            if self.s is None:
                self._connect()
            left = deadline - time.monotonic()
            if left <= 0:
                return True
            try:
                evs = self.s.poll(left)
            except StreamEnded:
                self._drop()
                continue
            except (OSError, TimeoutError):
                self._drop()
                continue
            for ev in evs:
                if ev.name == "gap":
                    if self.on_gap is None:
                        raise AssertionError("viewer of %s got %r: bytes "
                                             "lost" % (self.sid, ev))
                    self.on_gap(ev)
                self.tr.feed(ev)
            return True         # new events, or the time is up
        self._drop()
        return False

    def read_until(self, needle, timeout=15):
        """Pump until needle is in the output (searched from the start);
        the offset after it."""
        deadline = time.monotonic() + timeout
        searched = 0
        while True:
            i = self.tr.data.find(needle, searched)
            if i >= 0:
                return i + len(needle)
            searched = max(0, len(self.tr.data) - len(needle) + 1)
            left = deadline - time.monotonic()
            if left <= 0 or not self.pump(min(left, 0.5)) and \
                    self.tr.data.find(needle, searched) < 0:
                raise AssertionError(
                    "%r not seen in %s within %ds (closed: %r); tail %r"
                    % (needle, self.sid, timeout, self.tr.closed,
                       bytes(self.tr.data[-300:])))

    def count(self, needle):
        return bytes(self.tr.data).count(needle)

    def close(self):
        self._drop()


class Viewer(threading.Thread):
    """A Follow in a thread of its own, until stop is set or the terminal
    closes; an exception ends it and is kept in .error."""

    def __init__(self, client, sid, stop):
        super().__init__(daemon=True)
        self.f = Follow(client, sid)
        self.stop = stop
        self.error = None

    def run(self):
        try:
            while not self.stop.is_set() and self.f.pump(0.3):
                pass
        except BaseException as e:      # noqa: B036 -- kept for the test
            self.error = e
        finally:
            self.f.close()


def in_thread(fn):
    """Run fn in a thread of its own (a request racing a kill): the
    thread, and a dict that gets fn's result as "r" or what it raised as
    "e"."""
    out = {}

    def go():
        try:
            out["r"] = fn()
        except BaseException as e:      # noqa: B036
            out["e"] = e
    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t, out


def counter_numbers(data, letter=b"L"):
    """The numbers of the counter's lines, in order: LETTER, digits, CR LF,
    each line starting after a CR or LF (or the start)."""
    return [int(m.group(1)) for m in re.finditer(
        rb"(?:(?<=[\r\n])|^)" + letter + rb"(\d+)\r\n", bytes(data))]


# -- the stack the kill test runs on -------------------------------------------

@pytest.fixture
def own_stack(make_stack):
    """make_stack, stopped at the end of the test instead of the module."""
    made = []

    def make(name, **kw):
        st = make_stack(name, **kw)
        made.append(st)
        return st
    yield make
    for st in made:
        st.stop()


def start_term(c, sid, timeout=15):
    r = post_retry(c, "start", {"session_id": sid}, timeout=timeout)
    assert r.status == 200, r
    return r.json()


# -- 1. fifty kills ------------------------------------------------------------

class KillRun:
    """State of test_fifty_kills_lose_no_shell_and_no_byte: the stack, the
    terminals and what each must show after every kill."""

    def __init__(self, st, new_sid, rng):
        self.st = st
        self.c = st.client()
        self.new_sid = new_sid
        self.rng = rng
        self.live = {}          # sid -> shell pid, every running terminal
        self.follow = {}        # sid -> Follow (the counter and T1-T3)
        self.markers = {}       # sid -> [expected bytes] typed so far
        self.transient = []     # sids started by spawn rounds
        self.counter = None     # sid of the counter's terminal
        self.lines = 0          # counter lines written so far
        self.quick = 0          # the keeper's count of quick deaths
        self.worst = 0.0
        self.takeovers = []     # seconds, one per kill
        self.kinds = {}
        self.upgrades_failed = 0
        self.problems = []      # findings asserted at the end of the run
        self.no_takeover = set()    # spawned after this round's kill

    # setup
    def start(self, n_marker_terms=3):
        self.kp, self.pid = keeper_of(self.st)
        self.counter = self.new_sid("cnt")
        for sid in [self.counter] + [self.new_sid("t%d" % i)
                                     for i in range(n_marker_terms)]:
            self.live[sid] = start_term(self.c, sid)["pid"]
            self.follow[sid] = Follow(self.c, sid)
            self.markers[sid] = []

    def marker_sids(self):
        return [s for s in self.follow if s != self.counter]

    # the counter
    def burst_cmd(self, n):
        a, self.lines = self.lines, self.lines + n
        return "seq -f 'L%%.0f' %d %d\r" % (a, self.lines - 1)

    def start_burst(self, n):
        r = post_retry(self.c, "input", {
            "session_id": self.counter, "data": self.burst_cmd(n),
            "input_id": "b:" + secrets.token_hex(6)})
        assert r.status == 200, r

    def burst_done(self, timeout=30):
        if self.lines:
            self.follow[self.counter].read_until(
                b"L%d\r\n" % (self.lines - 1), timeout)

    # invariants after a kill
    def check_shells(self):
        terms = self.c.terminals()
        for sid, pid in self.live.items():
            t = terms.get(sid)
            assert t is not None, "terminal %s gone after the kill" % sid
            assert t["running"] is True and t["pid"] == pid, (sid, pid, t)
            assert proc_ppid(pid) == self.kp, \
                "shell %d of %s is no child of the keeper" % (pid, sid)
        return terms

    def check_markers_and_flow(self):
        """Every marker typed before the kill shows up exactly once, and a
        new one typed now shows up (output flows)."""
        self.burst_done()
        for sid, f in self.follow.items():
            flow, _ = type_marker(self.c, sid)
            f.read_until(flow)
            for m in self.markers[sid]:
                assert f.count(m) == 1, \
                    "%r appears %d times in %s" % (m, f.count(m), sid)
            self.markers[sid].append(flow)

    def check_processes(self, terms):
        # No zombie of the keeper, no shell it holds that no terminal
        # names (an interrupted spawn's shell is hung up and reaped).
        wait_for(lambda: not keeper_zombies(self.kp), 3,
                 what=lambda: "no zombie child of the keeper: %r"
                 % keeper_zombies(self.kp))
        listed = {t["pid"] for t in terms.values() if t["running"]}

        def strays():
            kids_ = set(kids(self.kp))
            return sorted(p for p in kids_ - listed if not is_ptyd(p)
                          and proc_state(p) not in (None, "Z"))
        wait_for(lambda: not strays(), 3,
                 what=lambda: "keeper's children all listed: %r %r"
                 % (strays(), [proc_cmdline(p) for p in strays()]))

    def fd_links(self):
        d = "/proc/%d/fd" % self.kp
        out = {}
        for x in os.listdir(d):
            try:
                out[int(x)] = os.readlink(os.path.join(d, x))
            except FileNotFoundError:
                pass
        return out

    def check_fds(self, what):
        """The keeper's descriptors: the baseline plus 2 a terminal more
        than then, plus 2 (the binary before an upgrade is held 10 s).
        A growth past that is recorded (with which descriptors are of the
        ptyd binary) and the baseline moved up by it, so each leak is
        reported once and a later one is still seen."""
        def excess():
            want = self.base_fds + 2 * (len(self.c.terminals())
                                        - self.base_terms) + 2
            return fd_count(self.kp) - want
        try:
            wait_for(lambda: excess() <= 0, 3)
        except AssertionError:
            n = excess()
            if n > 0:
                # PRODUCT BUG (7e0f701): each upgrade whose new ptyd dies
                # before it takes over leaves one more O_PATH descriptor
                # of the binary in the keeper: keeper_new_died() sets
                # keeper_new.pid = -1 before keeper_upgrade_fail(), whose
                # else branch then never closes keeper_new.bin.
                links = self.fd_links()
                self.problems.append(
                    "keeper fds grew by %d after %s; descriptors of the "
                    "ptyd binary: %r" % (n, what, sorted(
                        k for k, v in links.items()
                        if os.path.basename(v) == "ptyd")))
                self.base_fds += n

    def check_db(self, new_pid, kinds=("takeover", "upgrade")):
        """terminals rows: every live shell `running` with its pid, no
        running shell `lost`; each live terminal has an event saying the
        new ptyd took it over."""
        st = self.st
        live_pids = set(self.live.values())

        def bad():
            out = []
            for sid, pid in self.live.items():
                row = st.db_terminal(sid)
                if row is None or row["state"] != "running" or \
                        row["pid"] != pid:
                    out.append((sid, pid, row and (row["state"],
                                                   row["pid"])))
            lost = [r for r in st.db("SELECT session_id, pid FROM terminals"
                                     " WHERE state = 'lost'")
                    if r["pid"] in live_pids]
            if lost:
                out.append(("running but lost", lost))
            if new_pid is not None:
                for sid in set(self.live) - self.no_takeover:
                    rows = st.db(
                        "SELECT 1 FROM terminal_events WHERE session_id = ?"
                        " AND kind IN (%s) AND detail LIKE ?"
                        % ",".join("'%s'" % k for k in kinds),
                        (sid, "taken over by ptyd pid %d %%" % new_pid))
                    if not rows:
                        out.append((sid, "no %s row for pid %d"
                                    % ("/".join(kinds), new_pid)))
            return out
        wait_for(lambda: not bad(), 4,
                 what=lambda: "mirror agrees with the live shells: %r"
                 % (bad(),))

    def check_all(self, new_pid, kinds=("takeover", "upgrade")):
        # PRODUCT BUG (7e0f701) this can catch in an upgrade round: a new
        # ptyd killed after its READY, while the old one (told KW_EXIT)
        # is still exiting, makes the keeper take the old one's exit 0
        # for a stop: "keeper: ptyd exited with status 0; stopping",
        # every shell hung up, the keeper exits (keeper_new_died() drops
        # the KC_WAITGO one; keeper_cur_died() then sees no upgrade).
        # test_killing_the_new_ptyd_at_any_step_of_an_upgrade_keeps_all
        # hits it on purpose.
        assert proc_state(self.kp) not in (None, "Z"), \
            "keeper died; ptyd.log:\n" + self.st.log_tail("ptyd", 8)
        terms = self.check_shells()
        self.check_markers_and_flow()
        self.check_processes(terms)
        self.check_fds(self.round)
        self.check_db(new_pid, kinds)

    # before a kill
    def pre_kill_markers(self, counter_busy):
        for sid in self.follow:
            if sid == self.counter and counter_busy:
                continue        # its lines must stay whole
            m, _ = type_marker(self.c, sid)
            self.markers[sid].append(m)

    def racing_input(self):
        """A marker POSTed at the moment of the kill, retried with the same
        input_id until answered: it must run exactly once."""
        sid = self.marker_sids()[0]
        cmd, want = marker()
        iid = "race:" + secrets.token_hex(6)
        t, out = in_thread(lambda: post_retry(self.c, "input", {
            "session_id": sid, "data": cmd, "input_id": iid}, 20))

        def done():
            t.join(25)
            assert not t.is_alive(), "racing input never answered"
            if "e" in out:
                raise out["e"]
            assert out["r"].status == 200, out["r"]
            self.markers[sid].append(want.encode())
        return done

    def reset_backoff(self):
        """A ptyd that lived less than 30 s counts as a quick death, and
        the third in a row waits 0.25 s, then 0.5, 1, 2, 5: fifty kills in
        four minutes would wait 5 s each.  A successful upgrade resets
        the count (keeper.c, keeper_upgrade_done), so after two crashes
        in a row the run upgrades once; the take-over bound asserted is
        always that of the count the keeper is at."""
        if self.quick >= 2:
            self.pid = upgrade(self.st, self.c, self.kp)
            self.quick = 0

    def kill(self, victim):
        """SIGKILL victim; wait for a ptyd other than the dead one.  The
        allowed time is 1 s plus the backoff the keeper owes plus slack."""
        self.quick += 1
        allowed = BACKOFF[min(self.quick, len(BACKOFF) - 1)] + \
            TAKEOVER_BOUND + SLACK
        os.kill(victim, signal.SIGKILL)
        new, dt = wait_serving(self.c, {victim}, allowed + 10)
        assert dt <= allowed, \
            "take-over took %.3fs (allowed %.2fs, quick deaths %d)" \
            % (dt, allowed, self.quick)
        self.takeovers.append(dt)
        self.worst = max(self.worst, dt)
        return new

    # the rounds: each ends with the serving pid
    def round_spawn(self):
        sid = self.new_sid("sp")
        t, out = in_thread(lambda: self.c.start(sid))
        time.sleep(self.rng.uniform(0, 0.02))
        new = self.kill(self.pid)
        t.join(20)
        first = out.get("r")
        # Whatever the first start answered, starting again (the same
        # session id) gives a running terminal: the same shell if the
        # first one answered with it.
        j = start_term(self.c, sid)
        if first is not None and first.status == 200:
            assert j["pid"] == first.json()["pid"], (first, j)
            assert j["reused"] is True, j
            # Answered by the old ptyd (taken over) or, having waited in
            # the socket's backlog, by the new one (spawned there, no
            # takeover row): which, the answer does not say.
            self.no_takeover.add(sid)
        elif not j["reused"]:
            # Spawned afresh by the new ptyd: nothing was taken over.
            self.no_takeover.add(sid)
        self.live[sid] = j["pid"]
        self.transient.append(sid)
        return new

    def round_output(self):
        self.start_burst(self.rng.choice([20000, 40000, 60000]))
        time.sleep(self.rng.uniform(0.01, 0.25))
        return self.kill(self.pid)

    def round_attach(self):
        sid = self.rng.choice(self.marker_sids())

        def attach():
            f = Follow(self.c, sid)
            f.pump(0.3)
            return f
        t, att = in_thread(attach)
        time.sleep(self.rng.uniform(0, 0.02))
        new = self.kill(self.pid)
        t.join(20)
        if "e" in att:
            raise att["e"]
        self.attached = (sid, att["r"])
        return new

    def after_attach(self):
        """The viewer attached across the kill holds exactly the bytes the
        long-running viewer of that terminal holds at the same positions."""
        sid, f = self.attached
        main = self.follow[sid]
        f.read_until(self.markers[sid][-1])
        f.close()
        deadline = time.monotonic() + 10
        while main.tr.end < f.tr.end and time.monotonic() < deadline:
            main.pump(0.5)
        assert f.tr.start == main.tr.start, (f.tr.start, main.tr.start)
        assert f.tr.end <= main.tr.end, (f.tr.end, main.tr.end)
        assert bytes(f.tr.data) == main.tr.slice(f.tr.start, f.tr.end), \
            "viewer attached during a kill differs from the other viewer"

    def round_close(self):
        sid = self.transient.pop(0)
        pid = self.live.pop(sid)
        t, out = in_thread(lambda: self.c.close_term(sid))
        time.sleep(self.rng.uniform(0, 0.01))
        new = self.kill(self.pid)
        t.join(20)
        r = out.get("r")
        if r is None or r.status != 200:
            # Lost with the ptyd that took it: ask again.
            r = post_retry(self.c, "close", {"session_id": sid})
            assert r.status in (200, 404), r
        wait_for(lambda: proc_gone(pid), 10,
                 what="closed terminal's shell %d gone" % pid)
        wait_for(lambda: (lambda t: t is None or not t["running"])(
            self.c.terminals().get(sid)), 5, what="%s no longer runs" % sid)
        row = wait_for(lambda: (lambda r: r if r and r["state"] != "running"
                                else None)(self.st.db_terminal(sid)), 4,
                       what="terminals row of the closed %s ends" % sid)
        # PRODUCT BUG (found by this test, 7e0f701): a close answered
        # {"ok": true, "closed": true} and a SIGKILL of ptyd within a few
        # ms leave the row `lost`, detail "still running (pid N) when an
        # earlier ptyd stopped": ptyd had let the keeper forget the
        # terminal (FORGET) before the mirror flushed the close, so the
        # next ptyd finds a `running` row nobody holds.  ptyd.log: "keeper:
        # ptyd P killed by signal 9; 0 terminal(s) kept" then "marked 1
        # terminal(s) of a previous ptyd lost".  Kept as a finding so the
        # run goes on and reports everything; asserted at the end.
        if row["state"] != "closed" or row["ended_at"] is None:
            self.problems.append("closed %s during a kill: row %r" % (
                sid, {k: row[k] for k in ("state", "end_reason",
                                          "exit_code", "pid")}))
        return new

    def failed_rows(self):
        return [r["detail"] for r in self.st.db(
            "SELECT detail FROM terminal_events WHERE kind = "
            "'upgrade_failed' ORDER BY id")]

    def round_upgrade(self):
        """SIGUSR2, then a few ms later SIGKILL to the old or the new ptyd
        (whichever exists then).  Returns the serving pid."""
        old = self.pid
        self.failed_before = len(self.failed_rows())
        os.kill(self.kp, signal.SIGUSR2)
        time.sleep(self.rng.uniform(0, 0.008))
        cands = ptyds_under(self.kp)
        newer = [p for p in cands if p != old]
        if newer and self.rng.random() < 0.5:
            victim = newer[0]
        elif old in cands:
            victim = old
        else:
            victim = cands[0]
        self.kinds.setdefault("upgrade-victim", []).append(
            "new" if victim != old else "old")
        new = self.kill(victim)
        return new


@pytest.mark.deadline(400)
def test_fifty_kills_lose_no_shell_and_no_byte(own_stack, new_sid):
    kills = scale(50, minimum=50)     # the issue asks for at least 50
    seed = int(os.environ.get("PTYD_TEST_SEED") or time.time())
    print("seed %d (PTYD_TEST_SEED), %d kills" % (seed, kills))
    st = own_stack("kills", ptyd_args=["--ring-size", RING])
    run = KillRun(st, new_sid, random.Random(seed))
    run.start()
    stop = threading.Event()
    viewers = [Viewer(run.c, run.counter, stop) for _ in range(8)]
    try:
        for v in viewers:
            v.start()
        # Warm-up: a first burst to every viewer, markers everywhere, then
        # the keeper's descriptors as the baseline.
        run.start_burst(5000)
        run.check_markers_and_flow()
        run.base_terms = len(run.c.terminals())
        run.base_fds = fd_count(run.kp)
        kinds = ["spawn", "output", "attach", "close", "upgrade"]
        t_begin = time.monotonic()
        for i in range(kills):
            kind = kinds[i % len(kinds)]
            run.round = "kill %d (%s)" % (i, kind)
            run.no_takeover = set()
            run.reset_backoff()
            run.pre_kill_markers(counter_busy=(kind == "output"))
            race = run.racing_input()
            new = getattr(run, "round_" + kind)()
            race()
            kinds_ok = ("takeover", "upgrade") if kind == "upgrade" else \
                ("takeover",)
            if kind == "upgrade" and new == run.pid:
                # The new one was killed before it took over: the old one
                # serves on and says so.
                run.upgrades_failed += 1
                wait_for(lambda: len(run.failed_rows()) > run.failed_before
                         and run.failed_rows()[-1].endswith(
                             "; pid %d serves on" % new), 4,
                         what=lambda: "a new upgrade_failed row naming pid "
                         "%d: %r" % (new, run.failed_rows()[-2:]))
                run.quick -= 1      # no ptyd died that served
                run.check_all(None)
            else:
                run.check_all(new, kinds_ok)
            if kind == "attach":
                run.after_attach()
            run.pid = new
            if kind == "upgrade":
                run.quick = max(run.quick, 2)   # unknown: upgrade next
            for v in viewers:
                assert v.error is None, "viewer failed: %r" % (v.error,)
        t_kills = time.monotonic() - t_begin
        # The end: every viewer has the whole counter, once, in order.
        run.burst_done()
        last = run.markers[run.counter][-1]
        for v in viewers:
            wait_for(lambda: v.f.tr.data.find(last) >= 0 or v.error, 60,
                     what="viewer reached the last marker")
        stop.set()
        for v in viewers:
            v.join(10)
            assert v.error is None, "viewer failed: %r" % (v.error,)
            nums = counter_numbers(v.f.tr.data)
            assert nums == list(range(run.lines)), \
                "viewer's counter: %d lines, first wrong at %r" % (
                    len(nums), next((i for i, n in enumerate(nums)
                                     if n != i), len(nums)))
        assert counter_numbers(run.follow[run.counter].tr.data) == \
            list(range(run.lines))
        # Descriptors did not grow over the run; the chain is sound.
        for sid in list(run.transient):
            assert post_retry(run.c, "close", {"session_id": sid}
                              ).status == 200
            run.live.pop(sid)
        run.transient = []
        run.check_fds("the end")
        assert audit_problems(st) == []
        times = sorted(run.takeovers)
        print("%d kills in %.1fs; take-over worst %.3fs, median %.3fs; "
              "%d upgrades killed that failed, victims %r; "
              "viewer (re)connects %r"
              % (kills, t_kills, run.worst, times[len(times) // 2],
                 run.upgrades_failed,
                 run.kinds.get("upgrade-victim"),
                 [v.f.connects for v in viewers]))
        assert not run.problems, "\n".join(run.problems)
    finally:
        stop.set()
        for f in run.follow.values():
            f.close()


# -- 2. upgrades under a flood -------------------------------------------------

class Counted:
    """Transcript's continuity check (each output event starts where the
    previous one ended) without keeping the bytes: they go to sink, and
    only their count is kept.  For streams far bigger than memory."""

    def __init__(self, sink):
        self.sink = sink
        self.start = self.end = None
        self.closed = None
        self.nbytes = 0
        self.data = b""         # Follow.read_until is not used on these

    def feed(self, ev):
        if ev.name == "output":
            b = ev.payload
            begin = ev.id - len(b)
            if self.end is None:
                self.start = begin
            elif begin != self.end:
                raise AssertionError("output event %r starts at %d, "
                                     "expected %d" % (ev, begin, self.end))
            self.end = ev.id
            self.nbytes += len(b)
            self.sink(b)
        elif ev.name == "gap":
            self.end = ev.id
        elif ev.name == "terminal_closed":
            self.closed = ev


class CounterCheck:
    """Checks a stream of counter lines ('Y0', 'Y1'... each CR LF) as its
    bytes arrive: every line after the first counter line is the next
    number.  A duplicate or lost byte anywhere breaks a line or the
    sequence; with `yes` a lost or doubled 'y' line would be invisible,
    which is why the flood is a counter."""

    LINE = re.compile(rb"Y(\d+)")

    def __init__(self):
        self.next = 0
        self.carry = b""
        self.started = False
        self.error = None

    def resync(self):
        """After a gap: the next whole counter line starts a new run."""
        self.carry = b""
        self.started = False
        self.resynced = True

    def __call__(self, b):
        if self.error:
            return
        buf = self.carry + b
        cut = buf.rfind(b"\n") + 1
        self.carry = buf[cut:]
        for line in buf[:cut].split(b"\n")[:-1]:
            # What the line ends with after its last CR: the first one
            # carries the prompt's bracketed-paste reset before it.
            seg = line.rstrip(b"\r").rsplit(b"\r", 1)[-1]
            m = self.LINE.fullmatch(seg)
            if not self.started:
                if m and (m.group(1) == b"0" or getattr(self, "resynced",
                                                        False)):
                    self.started = True
                    self.resynced = False
                    self.next = int(m.group(1))
                else:
                    continue
            if not m or int(m.group(1)) != self.next:
                self.error = "line %r where Y%d was due" % (line[:80],
                                                            self.next)
                return
            self.next += 1


class CounterViewer(threading.Thread):
    def __init__(self, client, sid, stop):
        super().__init__(daemon=True)
        self.check = CounterCheck()
        self.f = Follow(client, sid)
        self.f.tr = Counted(self.check)
        self.f.on_gap = self.gap
        self.stop = stop
        self.error = None
        self.gaps = []          # (upgrades done then, bytes lost)
        self.upgrades = 0       # set by the test as it goes

    def gap(self, ev):
        self.gaps.append((self.upgrades, ev.data.get("lost")))
        self.check.resync()

    def run(self):
        try:
            while not self.stop.is_set() and self.f.pump(0.3):
                if self.check.error:
                    break
        except BaseException as e:      # noqa: B036
            self.error = e
        finally:
            self.f.close()


class LockWatch(threading.Thread):
    """`flock -n <db>.lock true` every ~20 ms: it must fail (the keeper
    holds the lock for life, each ptyd a copy of it) at every sample."""

    def __init__(self, path, stop):
        super().__init__(daemon=True)
        self.path = path
        self.stop = stop
        self.samples = 0
        self.free = []          # times the lock could be taken

    def run(self):
        while not self.stop.is_set():
            r = subprocess.run(["flock", "-n", self.path, "true"],
                               stdin=subprocess.DEVNULL,
                               capture_output=True, timeout=10)
            self.samples += 1
            if r.returncode == 0:
                self.free.append(time.monotonic())
            time.sleep(0.02)


class Keystrokes(threading.Thread):
    """A keystroke due every 10 ms: `echo ksN-$((6*7))xyz` with an
    input_id, each POSTed by one of a few workers (a POST held up by a
    hand-over does not hold up the next one) and retried with the same id
    while ptyd is being replaced.  sent[N] is when its first POST went."""

    WORKERS = 8

    def __init__(self, client, sid, stop):
        super().__init__(daemon=True)
        self.c = client
        self.sid = sid
        self.stop = stop
        self.sent = {}
        self.answered = set()
        self.errors = []
        self.error = None

    def one(self, n):
        try:
            self.sent[n] = time.monotonic()
            r = post_retry(self.c, "input", {
                "session_id": self.sid,
                "data": "echo ks%d-$((6*7))xyz\r" % n,
                "input_id": "ks:%d" % n}, 30)
            assert r.status == 200 and r.json().get("ok"), r
            self.answered.add(n)
        except BaseException as e:      # noqa: B036
            self.errors.append((n, e))

    def run(self):
        sem = threading.Semaphore(self.WORKERS)
        workers = []

        def work(n):
            try:
                self.one(n)
            finally:
                sem.release()
        n = 0
        t_next = time.monotonic()
        try:
            while not self.stop.is_set():
                sem.acquire()
                w = threading.Thread(target=work, args=(n,), daemon=True)
                w.start()
                workers.append(w)
                n += 1
                t_next += 0.01
                time.sleep(max(0.0, t_next - time.monotonic()))
            for w in workers:
                w.join(35)
            if self.errors:
                raise AssertionError("keystrokes failed: %r"
                                     % self.errors[:5])
        except BaseException as e:      # noqa: B036
            self.error = e


class EchoTimes(threading.Thread):
    """Reads the keystroke terminal; seen[N] = when ksN-42xyz arrived,
    count[N] = how many times."""

    ECHO = re.compile(rb"ks(\d+)-42xyz")

    def __init__(self, client, sid, stop):
        super().__init__(daemon=True)
        self.f = Follow(client, sid)
        self.stop = stop
        self.seen = {}
        self.count = {}
        self.error = None

    def run(self):
        done = 0
        try:
            while not self.stop.is_set() and self.f.pump(0.3):
                data = self.f.tr.data
                cut = data.rfind(b"\n", done) + 1
                now = time.monotonic()
                for m in self.ECHO.finditer(bytes(data[done:cut])):
                    n = int(m.group(1))
                    self.seen.setdefault(n, now)
                    self.count[n] = self.count.get(n, 0) + 1
                done = max(done, cut)
        except BaseException as e:      # noqa: B036
            self.error = e
        finally:
            self.f.close()


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100.0 * len(xs)))]


# The flood: a counter (a lost or doubled line of `yes` would go unseen),
# 2,000 lines (about 17 kB) at a time with a 5 ms rest: ~1.5 MB/s, 12
# MB/s to the eight viewers.  Not at the pty's full speed, for two
# reasons.  This one Python process is then the bottleneck: its eight
# readers share one interpreter lock, keystrokes go out every ~130 ms
# instead of 10 and the pauses measured are the harness's.  And every
# viewer then sits a ring behind (where backpressure holds the slowest),
# where a hand-over loses bytes today (gaps of 0.5-19 MB with a 16 MiB
# ring, every few upgrades, on every viewer): that loss is pinned, alone
# and deterministically, by
# test_a_viewer_a_ring_behind_keeps_its_bytes_across_an_upgrade.
FLOOD = ("i=0; while :; do seq -f 'Y%.0f' $i $((i+1999)); i=$((i+2000)); "
         "sleep 0.005; done\r")


@pytest.mark.deadline(240)
def test_upgrades_under_a_flood_to_eight_viewers(own_stack, new_sid):
    n_upgrades = scale(100, minimum=20)
    # 16 MiB: all viewers are cut at each hand-over and the new ptyd
    # reads the flood before they are back; a smaller ring could wrap
    # in that moment (a `gap`, which Follow counts as a failure).
    st = own_stack("upgrades", ptyd_args=["--ring-size", "16M"])
    c = st.client()
    kp, pid = keeper_of(st)
    flood, keys = new_sid("flood"), new_sid("keys")
    shell = {sid: start_term(c, sid)["pid"] for sid in (flood, keys)}
    stop = threading.Event()
    viewers = [CounterViewer(c, flood, stop) for _ in range(8)]
    lock = LockWatch(st.db_path + ".lock", stop)
    echo = EchoTimes(c, keys, stop)
    typist = Keystrokes(c, keys, stop)
    threads = viewers + [lock, echo]
    try:
        for t in threads:
            t.start()
        r = post_retry(c, "input", {"session_id": flood, "data": FLOOD,
                                    "input_id": "flood"})
        assert r.status == 200, r
        wait_for(lambda: all(v.check.next > 1000 for v in viewers), 30,
                 what=lambda: "every viewer in the flood: %r"
                 % [v.check.next for v in viewers])
        typist.start()
        threads.append(typist)
        wait_for(lambda: len(echo.seen) > 5, 15, what="keystrokes echo")
        t0 = time.monotonic()
        pids = [pid]
        for i in range(n_upgrades):
            pids.append(upgrade(st, c, kp, timeout=15))
            for v in viewers:
                v.upgrades = i + 1
            for t in threads:
                assert getattr(t, "error", None) is None, \
                    "%s failed in upgrade %d: %r" % (t, i, t.error)
            for v in viewers:
                assert v.check.error is None, v.check.error
        t_up = time.monotonic() - t0
        assert len(set(pids)) == len(pids), pids
        # Every viewer goes on past where the fastest one was at the end.
        mark = max(v.check.next for v in viewers) + 1000
        wait_for(lambda: all(v.check.next > mark or v.check.error
                             or v.error for v in viewers), 60,
                 what=lambda: "viewers past Y%d: %r"
                 % (mark, [v.check.next for v in viewers]))
        stop.set()
        for t in threads:
            t.join(30)
            assert not t.is_alive(), "%s did not stop" % t
        for v in viewers:
            assert v.error is None, v.error
            assert v.check.error is None, v.check.error
        gaps = [v.gaps for v in viewers]
        assert typist.error is None, typist.error
        assert echo.error is None, echo.error
        # Every keystroke answered ok ran exactly once: a last marker,
        # typed after every one of them was answered, comes after all
        # their echoes; a fresh viewer reads the whole terminal to it.
        end, _ = type_marker(c, keys)
        f = Follow(c, keys)
        f.read_until(end, 20)
        counts = {int(m.group(1)): 0 for m in
                  EchoTimes.ECHO.finditer(bytes(f.tr.data))}
        for m in EchoTimes.ECHO.finditer(bytes(f.tr.data)):
            counts[int(m.group(1))] += 1
        f.close()
        assert typist.answered == set(typist.sent), \
            sorted(set(typist.sent) - typist.answered)[:20]
        missing = [n for n in typist.sent if n not in counts]
        twice = {n: k for n, k in counts.items() if k != 1}
        assert not missing and not twice, (missing[:20], twice)
        assert lock.samples > 20 and not lock.free, \
            "the lock was free at %d of %d samples" % (len(lock.free),
                                                       lock.samples)
        # The shells are the ones from the start.
        terms = c.terminals()
        for sid, p in shell.items():
            assert terms[sid]["pid"] == p and terms[sid]["running"], terms
        pauses = [echo.seen[n] - typist.sent[n] for n in typist.sent
                  if n in echo.seen]
        print("%d upgrades in %.1fs; %d keystrokes, pause p50 %.1f ms, "
              "p99 %.1f ms, max %.1f ms; lock sampled %d times; viewer "
              "bytes %r; reconnects %r"
              % (n_upgrades, t_up, len(typist.sent),
                 pct(pauses, 50) * 1e3, pct(pauses, 99) * 1e3,
                 max(pauses) * 1e3, lock.samples,
                 [v.f.tr.nbytes for v in viewers],
                 [v.f.connects for v in viewers]))
        # No viewer lost a byte: no `gap`, and received == the span of
        # positions it went through.
        assert not any(gaps), "gaps (upgrade, bytes lost) per viewer: %r" \
            % gaps
        for v in viewers:
            tr = v.f.tr
            assert tr.nbytes == tr.end - tr.start, (tr.nbytes, tr.start,
                                                    tr.end)
    finally:
        stop.set()
        try:
            c.input(flood, "\x03")
        except OSError:
            pass


# How long a viewer takes to come back after its stream ends: not a
# synchronisation but the client under test -- a browser's EventSource
# waits its retry interval (seconds) before it reconnects.
CLIENT_BACK = 0.5
# Lines (8-10 bytes) to read after that: past the ring (1 MiB) and every
# buffer on the way (sockets of ptyd.fcgi, nginx, TCP: a few MB at most),
# so the viewer certainly reads output written after the hand-over.
PAST_BUFFERS = 1500000


@pytest.mark.deadline(90)
def test_a_viewer_a_ring_behind_keeps_its_bytes_across_an_upgrade(
        own_stack, new_sid):
    """A flood at full speed and one viewer that stops reading for a
    while: backpressure stops ptyd reading the pty once the viewer is a
    ring behind, so nothing is lost (checked first, without an upgrade).
    The same with an upgrade while the viewer is a ring behind: the bytes
    read but not yet delivered must still be there when it resumes
    (proposal, section 5: "Last-Event-ID resumes byte-exact including
    bytes read but not yet delivered")."""
    # A stall timeout longer than read_on's: the take-over's hold on the
    # pty (where the viewer stood) must end when the viewer is back, not
    # when the timeout does.  It ended with the timeout: with the default
    # 10 s, a third of read_on's time went by without a byte (a loaded CI
    # run missed its goal); with this one the test fails.
    st = own_stack("ringedge", ptyd_args=["--ring-size", "1M",
                                          "--stall-timeout", "60"])
    c = st.client()
    kp, _ = keeper_of(st)
    sid = new_sid("edge")
    shell = start_term(c, sid)["pid"]
    check = CounterCheck()
    f = Follow(c, sid, rcvbuf=32768)
    f.tr = Counted(check)
    gaps = []
    f.on_gap = lambda ev: (gaps.append(ev.data), check.resync())
    r = post_retry(c, "input", {"session_id": sid, "data":
                                "seq -f 'Y%.0f' 0 999999999\r",
                                "input_id": "flood"})
    assert r.status == 200, r

    def read_on(lines, timeout=30):
        goal = check.next + lines
        deadline = time.monotonic() + timeout
        while check.next < goal and not check.error:
            assert time.monotonic() < deadline, \
                "viewer stuck at Y%d (goal Y%d)" % (check.next, goal)
            f.pump(0.5)
        assert check.error is None, check.error

    def cpu(pid):
        try:
            with open("/proc/%d/stat" % pid) as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            return int(fields[11]) + int(fields[12])
        except (FileNotFoundError, ProcessLookupError):
            return None

    def held_back():
        """The viewer does not read: the flood's seq stops (blocked on
        the full pty, ptyd no longer reading it), its CPU time flat over
        0.3 s."""
        seqs = [p for p in kids(shell)
                if (proc_cmdline(p) or [""])[0] == "seq"]
        if not seqs:
            return False
        a = cpu(seqs[0])
        time.sleep(0.3)
        return a is not None and cpu(seqs[0]) == a

    try:
        read_on(50000)
        # Without an upgrade: not reading until ptyd holds the flood back,
        # and half a second more, costs nothing.
        wait_for(held_back, 8, interval=0, what="the flood held back")
        time.sleep(CLIENT_BACK)
        read_on(PAST_BUFFERS)
        assert gaps == [], gaps
        # With one while the viewer is a ring behind, and the viewer back
        # half a second after the hand-over.
        wait_for(held_back, 8, interval=0, what="the flood held back")
        new = upgrade(st, c, kp)
        time.sleep(CLIENT_BACK)
        read_on(PAST_BUFFERS)
        # PRODUCT BUG (7e0f701, with ptyd.fcgi ending streams at a
        # hand-over): fails with `gap {"lost": 4188442}` (and the like:
        # several rings): the hand-over ends the viewer's stream, and the
        # new ptyd, with no viewer attached, reads the flood over the
        # bytes the viewer had not got yet before the viewer is back with
        # its Last-Event-ID.  Without CLIENT_BACK it is a race the viewer
        # loses under load (seen with two busy cores, not on an idle
        # machine).  Either ptyd.fcgi re-attaches in place before the new
        # ptyd reads, or the new ptyd holds a terminal whose viewers were
        # a ring behind until they are back (or their stall timeout).
        assert gaps == [], "upgrade to pid %d lost bytes: %r" % (new, gaps)
        assert f.tr.nbytes == f.tr.end - f.tr.start
    finally:
        f.close()
        try:
            c.input(sid, "\x03")
        except OSError:
            pass


# -- 3. a bad new binary -------------------------------------------------------

class CopiedStack(Stack):
    """A stack whose ptyd and ptyd-keeper are copies in a directory of
    their own (ptyd-stack takes its binaries from PTYD_BUILDDIR), so the
    test can replace the binary the keeper upgrades to."""

    def __init__(self, root, name, bindir, **kw):
        super().__init__(root, name, **kw)
        self.bindir = bindir

    def environ(self):
        env = super().environ()
        env["PTYD_BUILDDIR"] = self.bindir
        return env


@pytest.fixture
def copied_stack(tmp_root):
    made = []

    def make(name, **kw):
        bindir = os.path.join(tmp_root, name + "-bin-" + secrets.token_hex(3))
        os.makedirs(os.path.join(bindir, "ptyd"))
        os.makedirs(os.path.join(bindir, "fcgi"))
        for b in ("ptyd", "ptyd-keeper"):
            shutil.copy2(os.path.join(BUILDDIR, "ptyd", b),
                         os.path.join(bindir, "ptyd", b))
        os.symlink(os.path.join(BUILDDIR, "fcgi", "ptyd.fcgi"),
                   os.path.join(bindir, "fcgi", "ptyd.fcgi"))
        st = CopiedStack(tmp_root, name + "-" + secrets.token_hex(3),
                         bindir, **kw)
        made.append(st)
        return st.start()
    yield make
    for st in made:
        st.cleanup()


def sleeper(tmp_root):
    """A binary that never says hello (a script would not do: the keeper
    runs the binary through an O_PATH descriptor, which a #! interpreter
    cannot open)."""
    src = os.path.join(tmp_root, "sleeper.c")
    exe = os.path.join(tmp_root, "sleeper")
    with open(src, "w") as f:
        f.write("#include <unistd.h>\nint main(void) { for (;;) pause(); }\n")
    subprocess.run([os.environ.get("CC") or "cc", "-o", exe, src],
                   check=True, timeout=60)
    return exe


def put_binary(path, src):
    """Replace path as a package manager does: copy beside, rename over."""
    tmp = path + ".new"
    shutil.copy2(src, tmp)
    os.rename(tmp, path)


@pytest.mark.deadline(90)
def test_upgrade_to_a_missing_or_failing_binary_keeps_the_old_one(
        copied_stack, tmp_root, new_sid):
    st = copied_stack("badbin")
    c = st.client()
    kp, pid = keeper_of(st)
    path = os.path.join(st.bindir, "ptyd", "ptyd")
    assert (proc_cmdline(kp) or [])[1:3] == ["--ptyd", path], \
        proc_cmdline(kp)
    sid = new_sid()
    shell = start_term(c, sid)["pid"]
    f = Follow(c, sid)
    # An input goes through the keeper after the terminal's KW_ADOPT on
    # the same socket: once it echoes, the keeper holds the terminal.
    m0, _ = type_marker(c, sid)
    f.read_until(m0)
    base_fds = fd_count(kp)
    fds = {}
    failed_before = 0

    def fails_and_serves_on(step, why, timeout):
        """SIGUSR2: an upgrade_failed row with why, the old ptyd still
        serving, the same shell, a keystroke runs."""
        nonlocal failed_before
        os.kill(kp, signal.SIGUSR2)
        rows = wait_for(lambda: (lambda r: r if len(r) > failed_before
                                 else None)(st.db(
                                     "SELECT detail FROM terminal_events "
                                     "WHERE kind = 'upgrade_failed' "
                                     "ORDER BY id")),
                        timeout, interval=0.1,
                        what="an upgrade_failed row (%s)" % step)
        failed_before = len(rows)
        assert rows[-1]["detail"] == "%s; pid %d serves on" % (why, pid), \
            rows[-1]
        assert "upgrade failed: %s; serving on" % why in st.log("ptyd")
        assert serving_pid(c) == pid
        assert c.terminals()[sid]["pid"] == shell
        m, _ = type_marker(c, sid)
        f.read_until(m)
        assert [p for p in ptyds_under(kp) if p != pid] == [], \
            "the failed new ptyd is still there"
        fds[step] = fd_count(kp)

    # (a) the binary is gone
    os.rename(path, path + ".away")
    fails_and_serves_on("missing", "cannot open the new binary: No such "
                        "file or directory", 5)
    # (b) it exits at once
    put_binary(path, "/bin/false")
    fails_and_serves_on("false", "the new ptyd exited with status 1 while "
                        "taking over", 5)
    # (c) it never says hello: the keeper waits KEEPER_HELLO_MS, 10 s, for
    # it (a real ptyd under load may need seconds to start), so this step
    # takes 10 s; meanwhile the old one serves as if nothing happened.
    put_binary(path, sleeper(tmp_root))
    t0 = time.monotonic()
    os.kill(kp, signal.SIGUSR2)
    hung = wait_for(lambda: [p for p in kids(kp) if p != pid and
                             (proc_cmdline(p) or [""])[0] == path], 3,
                    what="the new binary started")
    time.sleep(1)
    assert serving_pid(c) == pid
    m, _ = type_marker(c, sid)
    f.read_until(m)
    os.kill(kp, signal.SIGUSR2)     # one under way: ignored
    fails_and_serves_on("no hello", "the new ptyd did not say hello in "
                        "time", 15)
    assert 9 <= time.monotonic() - t0 <= 15, time.monotonic() - t0
    wait_for(lambda: all(proc_gone(p) for p in hung), 3,
             what="the binary that never said hello is gone")
    assert "upgrade asked for while one is under way; ignored" in \
        st.log("ptyd")
    # (d) the real one back: the upgrade goes through.
    os.rename(path + ".away", path)
    new = upgrade(st, c, kp)
    assert new != pid
    assert c.terminals()[sid]["pid"] == shell
    m, _ = type_marker(c, sid)
    f.read_until(m)
    wait_for(lambda: st.db("SELECT 1 FROM terminal_events WHERE kind = "
                           "'upgrade' AND session_id = ? AND detail LIKE ?",
                           (sid, "taken over by ptyd pid %d %%" % new)), 4,
             what="the upgrade row")
    f.close()
    # A failed upgrade leaves the keeper no descriptor more.
    # PRODUCT BUG (7e0f701): after (b) the keeper holds one more O_PATH
    # descriptor of the binary, for good: keeper_new_died() clears
    # keeper_new.pid before keeper_upgrade_fail(), which then skips
    # closing keeper_new.bin.  (a) opens none, (c) is killed by the
    # keeper itself and closes it.
    assert fds == {k: base_fds for k in fds}, \
        "keeper fds after each failed upgrade (baseline %d): %r" % (
            base_fds, fds)


# -- 4. an exit while no ptyd runs ---------------------------------------------

@pytest.mark.deadline(60)
def test_shell_that_exits_while_ptyd_is_down_reports_its_code(own_stack,
                                                               new_sid):
    st = own_stack("exit7")
    c = st.client()
    kp, pid = keeper_of(st)
    sid = new_sid()
    shell = start_term(c, sid)["pid"]
    f = Follow(c, sid)
    m, _ = type_marker(c, sid)
    f.read_until(m)
    r = c.post("input", {"session_id": sid, "data": "sleep 0.3; exit 7\r",
                         "input_id": "x7"})
    assert r.status == 200, r
    # ptyd cannot see the exit: stopped, then killed once the keeper has
    # reaped the shell.
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(0.6)
        wait_for(lambda: proc_gone(shell), 3,
                 what="the shell exited and the keeper reaped it")
    finally:
        os.kill(pid, signal.SIGKILL)
    new, _ = wait_serving(c, {pid}, 5)
    t = wait_for(lambda: (lambda t: t if t and not t["running"] else None)(
        c.terminals().get(sid)), 5, what="list says the terminal ended")
    assert t["exit_code"] == 7, t
    row = wait_for(lambda: (lambda r: r if r and r["state"] != "running"
                            else None)(st.db_terminal(sid)), 4,
                   what="the terminals row ends")
    assert (row["state"], row["exit_code"]) == ("exited", 7), row
    # The viewer that was attached resumes to the end: the tail, then
    # terminal_closed with the code.
    while f.pump(1.0):
        pass
    assert f.tr.closed is not None
    assert f.tr.closed.data == {"exit_code": 7, "reason": "exit"}, \
        f.tr.closed
    # And so does a new one.
    g = Follow(c, sid)
    while g.pump(1.0):
        pass
    assert g.tr.closed.data == {"exit_code": 7, "reason": "exit"}
    assert g.tr.closed.id == f.tr.closed.id
    assert bytes(g.tr.data) == bytes(f.tr.data)


# -- 5. an input id across a crash ---------------------------------------------

@pytest.mark.deadline(60)
def test_input_id_is_exactly_once_across_a_crash(own_stack, new_sid):
    st = own_stack("once")
    c = st.client()
    kp, pid = keeper_of(st)
    sid = new_sid()
    shell = start_term(c, sid)["pid"]
    f = Follow(c, sid)
    m, _ = type_marker(c, sid)
    f.read_until(m)
    cmd, want = marker()
    body = {"session_id": sid, "data": cmd, "input_id": "once:" +
            secrets.token_hex(4)}
    first = c.post("input", body)
    assert first.status == 200 and first.json() == {"ok": True}, first
    os.kill(pid, signal.SIGKILL)
    # One request, at once, through nginx: ptyd.fcgi waits for the new
    # ptyd (the keeper holds the socket, the request waits in its
    # backlog) and it answers from the keeper's record of the id.
    again = c.post("input", body, timeout=15)
    assert again.status == 200, again
    assert again.json() == {"ok": True, "duplicate": True}, again
    assert serving_pid(c) not in (None, pid)
    assert c.terminals()[sid]["pid"] == shell
    end, _ = type_marker(c, sid)
    f.read_until(end)
    assert f.count(want.encode()) == 1, bytes(f.tr.data[-500:])
    f.close()


def test_input_while_the_keeper_stands_still_is_503_then_runs_once(
        own_stack, new_sid):
    """A keeper that does not take an input in time (stopped, swapped
    out): that input is answered 503 with Retry-After, nothing else
    stops, and once the keeper goes on the input runs; its retry with the
    same input_id runs nothing twice.  Regression: the first answer was
    500, which a client does not retry."""
    st = own_stack("kstop")
    c = st.client()
    kp, pid = keeper_of(st)
    sid = new_sid()
    start_term(c, sid)
    f = Follow(c, sid)
    m, _ = type_marker(c, sid)
    f.read_until(m)
    cmd, want = marker()
    body = {"session_id": sid, "data": cmd, "input_id": "kstop:" +
            secrets.token_hex(4)}
    os.kill(kp, signal.SIGSTOP)
    try:
        first = c.post("input", body, timeout=20)
    finally:
        os.kill(kp, signal.SIGCONT)
    assert first.status == 503, first
    assert first.headers.get("retry-after"), first.headers
    again = post_retry(c, "input", body)
    assert again.status == 200 and again.json().get("ok") is True, again
    end, _ = type_marker(c, sid)
    f.read_until(end)
    assert f.count(want.encode()) == 1, bytes(f.tr.data[-500:])
    assert serving_pid(c) == pid, "ptyd went on serving throughout"
    f.close()


# -- 6. stop, and the keeper's own death --------------------------------------

def gone_or_zombie(pid):
    """Ended: reaped, or a zombie whose parent is no part of the stack
    (the keeper's parent here is whatever adopted ptyd-stack's child)."""
    return proc_state(pid) in (None, "Z")


@pytest.mark.deadline(90)
def test_stop_ends_the_shells_and_kill_of_the_keeper_too(own_stack,
                                                         new_sid):
    # SIGTERM to the keeper: a stop.
    st = own_stack("stop")
    c = st.client()
    kp, pid = keeper_of(st)
    sids = [new_sid() for _ in range(3)]
    shells = {sid: start_term(c, sid)["pid"] for sid in sids}
    os.kill(kp, signal.SIGTERM)
    wait_for(lambda: all(proc_gone(p) for p in shells.values()), 5,
             what="the shells ended")
    wait_for(lambda: gone_or_zombie(kp) and gone_or_zombie(pid), 5,
             what="keeper and ptyd exited")
    for sid in sids:
        row = st.db_terminal(sid)
        assert (row["state"], row["end_reason"], row["exit_code"]) == \
            ("shutdown", "shutdown", -1), row
    # Nothing of the account's side runs on (nginx and ptyd.fcgi are the
    # web server's, and stay).
    left = [p for p in pids_matching(
        lambda cl: any(st.state in a for a in cl) and
        os.path.basename(cl[0]) in ("ptyd", "ptyd-keeper"))
        if not gone_or_zombie(p)]
    assert not left, [(p, proc_cmdline(p)) for p in left]
    assert "keeper: exited" in st.log("ptyd")

    # kill -9 of the keeper: ptyd ends every shell and exits.
    st = own_stack("keeperkill")
    c = st.client()
    kp, pid = keeper_of(st)
    sids = [new_sid() for _ in range(3)]
    shells = {sid: start_term(c, sid)["pid"] for sid in sids}
    t0 = time.monotonic()
    os.kill(kp, signal.SIGKILL)
    # Nobody reaps them now but whoever adopts orphans: a zombie is ended.
    wait_for(lambda: all(gone_or_zombie(p) for p in shells.values()), 15,
             what="the shells ended")
    wait_for(lambda: gone_or_zombie(pid), 15, what="ptyd exited")
    took = time.monotonic() - t0
    assert "keeper: gone; ending every shell" in st.log("ptyd")
    for sid in sids:
        row = st.db_terminal(sid)
        assert (row["state"], row["end_reason"]) == ("shutdown",
                                                     "shutdown"), row
        # PRODUCT BUG (7e0f701): the rows say exit_code 0 while ptyd.log
        # says "term S: shell gone, its status unknown": with the keeper
        # gone ptyd is not the shells' parent, its waitpid fails with
        # ECHILD and term_pid_cb() records term_child_exited(t, 0) -- a
        # clean exit 0 for a shell that was hung up.  Unknown is null
        # (DESIGN 3: "null only if a shutdown could not reap it").
        assert row["exit_code"] in (None, -1), row
    print("kill -9 of the keeper: shells and ptyd ended in %.2fs" % took)


# -- found on the way ----------------------------------------------------------

@pytest.mark.deadline(90)
def test_killing_the_new_ptyd_at_any_step_of_an_upgrade_keeps_all(
        own_stack, new_sid):
    """SIGUSR2, then SIGKILL to the new ptyd 0-5 ms later, many times:
    wherever it lands (before its hello, adopting, ready, serving), one
    ptyd serves afterwards and the keeper and every shell live on.

    PRODUCT BUG (7e0f701) this hits within a few dozen tries: when the
    new ptyd dies after its READY, while the old one (told KW_EXIT) is
    still on its way out, keeper_new_died() drops the KC_WAITGO child and
    keeper_cur_died() then takes the old one's exit status 0 for a stop.
    ptyd.log: "upgrade: handed over; exiting", "keeper: ptyd exited with
    status 0; stopping", "keeper: exited": every shell hung up, and
    ptyd.fcgi's autostart then starts a fresh ptyd that marks the
    terminals lost."""
    st = own_stack("newkill")
    c = st.client()
    kp, pid = keeper_of(st)
    shells = {sid: start_term(c, sid)["pid"]
              for sid in (new_sid(), new_sid())}
    rng = random.Random(int(os.environ.get("PTYD_TEST_SEED") or 0) or None)
    tries = scale(200, minimum=100)
    landed = {"failed": 0, "crash": 0}
    log = os.path.join(st.state, "log", "ptyd.log")
    for i in range(tries):
        wait_for(lambda: len(ptyds_under(kp)) == 1, 5,
                 what="no upgrade under way")
        old = wait_serving(c, set(), 5)[0]
        at = os.path.getsize(log)
        os.kill(kp, signal.SIGUSR2)
        if i % 2:
            time.sleep(rng.uniform(0, 0.005))
        else:
            # Aim at the switch: the old ptyd logs "handed over" when
            # told to exit, the new one is then ready and waiting for GO.
            deadline = time.monotonic() + 0.1
            with open(log, "rb") as fh:
                fh.seek(at)
                seen = b""
                while b"handed over" not in seen and \
                        time.monotonic() < deadline:
                    seen += fh.read()
        newer = [p for p in ptyds_under(kp) if p != old]
        if not newer:
            wait_serving(c, {old}, 5)      # it went through already
            continue
        victim = newer[0]
        os.kill(victim, signal.SIGKILL)
        wait_for(lambda: proc_state(victim) in (None, "Z"), 5,
                 what="ptyd %d killed" % victim)
        # Whichever it was (the new one, or the old one if the upgrade
        # had already gone through), a live ptyd of this keeper serves.
        now = wait_for(
            lambda: (lambda p: p if p and p != victim and
                     proc_ppid(p) == kp else None)(serving_pid(c)),
            5, interval=0.005,
            what=lambda: "a live ptyd of keeper %d serving after %d was "
            "killed (health says %r, children %r); ptyd.log:\n%s" % (
                kp, victim, serving_pid(c), ptyds_under(kp),
                st.log_tail("ptyd", 8)))
        landed["failed" if now == old else "crash"] += 1
        assert proc_state(kp) not in (None, "Z"), \
            "try %d: the keeper is gone; ptyd.log:\n%s" % (
                i, st.log_tail("ptyd", 10))
        for sid, p in shells.items():
            assert proc_state(p) not in (None, "Z"), \
                "try %d: shell %d ended; ptyd.log:\n%s" % (
                    i, p, st.log_tail("ptyd", 10))
        if now != old:
            # A ptyd that served died: keep the quick-death count (and
            # its backoff) down with an upgrade that goes through.
            upgrade(st, c, kp)
    terms = c.terminals()
    assert {sid: terms[sid]["pid"] for sid in shells} == shells
    print("new ptyd killed %d times: %r" % (sum(landed.values()), landed))


@pytest.mark.deadline(90)
def test_stack_stop_while_ptyd_restarts_stops_the_keeper_and_shells(
        own_stack, new_sid):
    """scripts/ptyd-stack finds the keeper by the pid file.

    PRODUCT BUG (scripts/ptyd-stack at 7e0f701): it checks that pid with
    `alive PID ptyd`, i.e. /proc/PID/comm == "ptyd", but the keeper's comm
    is "ptyd-keeper".  So `status` says "ptyd stopped" while it runs, and
    `stop` only ever reaches the keeper through the ptyd child it finds on
    the socket (SIGTERM to ptyd, exit 0, which the keeper takes for a
    stop): in the moment between a crash and the next ptyd (the keeper's
    backoff: 0.25-5 s after the third quick death) `stop` finds no ptyd,
    returns, and the keeper and the shells run on ("ptyd-stack stop left
    processes running: [(PID, ['ptyd-keeper', ...])]")."""
    st = own_stack("stackstop")
    c = st.client()
    kp, pid = keeper_of(st)
    shell = start_term(c, new_sid())["pid"]
    env = st.environ()
    r = subprocess.run([os.path.join(REPO, "scripts", "ptyd-stack"),
                        "status", "--state", st.state], env=env,
                       capture_output=True, timeout=30)
    status = r.stdout.decode()
    # Crash ptyd until the keeper waits a second before the next one.
    for _ in range(8):
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: proc_gone(pid) or proc_state(pid) == "Z", 3)
        if re.search(r"ptyd %d killed by signal 9; .* a new one in "
                     r"(\d{4,}) ms" % pid, st.log("ptyd")):
            break
        pid, _ = wait_serving(c, {pid}, 10)
    else:
        raise AssertionError("no backoff of a second or more")
    try:
        st.stop()
        stop_error = None
    except RuntimeError as e:
        stop_error = str(e)
    try:
        assert "ptyd      running (pid %d)" % kp in status, status
        assert stop_error is None, stop_error
        wait_for(lambda: gone_or_zombie(kp) and proc_gone(shell), 15,
                 what="keeper and shell ended by ptyd-stack stop")
    finally:
        # What the stop left (the harness killed the keeper): the shell.
        if proc_state(shell) not in (None, "Z"):
            os.kill(shell, signal.SIGKILL)
