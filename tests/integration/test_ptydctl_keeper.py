"""test_ptydctl_keeper.py -- ptydctl upgrade, shutdown and service against
a real keeper, ptyd and shells (docs/proposals/keeper.md, section 4,
"Supervisor commands"; ptydctl(1)).

What each pins:
- upgrade replaces ptyd and keeps the shell (same pid, still typing),
  and says so in one line with both pids; a missing binary fails with
  exit 1 and the old ptyd serving; no outcome in time is exit 3;
- shutdown ends the shells and returns only once the keeper is gone (its
  database lock free);
- service, the main process of the thin ptyd.service, turns SIGUSR1
  (RestartKillSignal) into an upgrade and SIGTERM into a stop, and exits
  1 when the keeper dies on its own, so that systemd shows it;
- without a keeper (--no-keeper), upgrade refuses with exit 2 and says
  why, and leaves the shells alone.

Every daemon runs on its own here: a temporary HOME and state folder, its
own socket, no nginx.  The tests that need a keeper fail while ptyd has
none (before the keeper's merge).

Owns: its temp dirs and the processes it starts, stopped by pid.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from ptyd_stack import BUILDDIR, proc_gone, proc_state, wait_for

PTYD = os.path.join(BUILDDIR, "ptyd", "ptyd")
PTYDCTL = os.path.join(BUILDDIR, "ptydctl", "ptydctl")
UPGRADED = re.compile(r"^upgraded: ptyd pid (\d+) -> (\d+) in (\d+) ms, "
                      r"(\d+) terminals kept$", re.M)
FAILED = re.compile(r"^upgrade failed: (.+); ptyd pid (\d+) still serving$",
                    re.M)


def _keeper_binary():
    """ptyd-keeper as built (its folder is the keeper's to choose)."""
    for rel in ("keeper/ptyd-keeper", "ptyd/ptyd-keeper", "ptyd-keeper"):
        p = os.path.join(BUILDDIR, rel)
        if os.access(p, os.X_OK):
            return p
    return None


class Keeper:
    """ptyd -f (the keeper, with ptyd under it) in a temporary HOME."""

    def __init__(self, root, ptyd=PTYD, no_keeper=False):
        self.root = root
        self.home = os.path.join(root, "home")
        self.state = os.path.join(self.home, ".local", "state", "ptyd")
        os.makedirs(self.state, mode=0o700)
        self.sock = os.path.join(self.state, "ptyd.sock")
        self.log = os.path.join(self.state, "ptyd.log")
        self.shells = []
        args = [ptyd, "-f", "--socket", self.sock, "--shell", "/bin/sh",
                "--log", self.log]
        self.proc = self._start(args + (["--no-keeper"] if no_keeper
                                        else []))
        if no_keeper and self.proc.poll() is not None:
            # A ptyd from before the keeper knows no --no-keeper, and is
            # one process anyway.
            self.proc = self._start(args)
        wait_for(lambda: self.proc.poll() is not None or
                 self.ctl("stats", check=False).returncode == 0, 10,
                 what="ptyd serving")
        assert self.proc.poll() is None, self.log_text()

    def _start(self, args):
        p = subprocess.Popen(args, env=self.env(), stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL,
                             start_new_session=True)
        time.sleep(0.2)
        return p

    def env(self):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("PTYD_", "XDG_"))}
        env.update(HOME=self.home, SHELL="/bin/sh", LANG="C.UTF-8",
                   PTYD_STATE_DIR=self.state)
        return env

    def ctl(self, *args, check=True, timeout=30):
        r = subprocess.run([PTYDCTL, "--socket", self.sock] + list(args),
                           env=self.env(), capture_output=True, text=True,
                           timeout=timeout)
        if check:
            assert r.returncode == 0, (args, r.stdout, r.stderr)
        return r

    def stats_maybe(self):
        """stats, or {} while an upgrade is under way and the socket
        cannot answer (a connection the old ptyd took is reset)."""
        r = self.ctl("stats", check=False)
        if r.returncode != 0:
            return {}
        return dict(re.findall(r"^(\w+)\s+(.*?)\s*$", r.stdout, re.M))

    def stats(self):
        out = self.ctl("stats").stdout
        return dict(re.findall(r"^(\w+)\s+(.*?)\s*$", out, re.M))

    def start_term(self, sid):
        out = self.ctl("start", sid).stdout
        pid = int(re.search(r"^pid\s+(\d+)$", out, re.M).group(1))
        self.shells.append(pid)
        return pid

    def types(self, sid):
        """The terminal's shell runs what it is sent."""
        mark = os.path.join(self.root, "mark-%s-%d" % (sid, time.time_ns()))
        self.ctl("input", sid, "echo up-$((40+2)) > %s\\n" % mark)
        wait_for(lambda: os.path.exists(mark) and
                 open(mark).read() == "up-42\n", 10,
                 what="the shell of %s answers" % sid)

    def log_text(self):
        try:
            with open(self.log, errors="replace") as f:
                return f.read()[-3000:]
        except FileNotFoundError:
            return ""

    def stop(self):
        for pid in self.shells:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)


@pytest.fixture
def root():
    d = tempfile.mkdtemp(prefix="ptyd-ctlk-", dir="/tmp")
    os.chmod(d, 0o700)
    keepers = []
    yield d, keepers
    for k in keepers:
        k.stop()
    if not os.environ.get("PTYD_TEST_KEEP"):
        shutil.rmtree(d, ignore_errors=True)


def keeper(root, **kw):
    d, keepers = root
    k = Keeper(os.path.join(d, "k%d" % len(keepers)), **kw)
    keepers.append(k)
    if "no_keeper" not in kw:
        assert int(k.stats().get("keeper_pid", 0)) != 0, \
            "ptyd runs without a keeper"
    return k


def service(k):
    """ptydctl service against k, once it has found the keeper."""
    p = subprocess.Popen([PTYDCTL, "--socket", k.sock, "service"],
                         env=k.env(), stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    line = p.stdout.readline()
    assert line.startswith("service: "), line
    return p, line


# -- upgrade ------------------------------------------------------------------

@pytest.mark.deadline(60)
def test_upgrade_replaces_ptyd_and_keeps_the_shell(root):
    k = keeper(root)
    shell = k.start_term("up1")
    before = k.stats()
    r = k.ctl("upgrade")
    m = UPGRADED.search(r.stdout)
    assert m, r.stdout
    after = k.stats()
    assert int(m.group(1)) == int(before["pid"]), (r.stdout, before)
    assert int(m.group(2)) == int(after["pid"]) != int(before["pid"]), \
        (r.stdout, after)
    assert int(m.group(4)) == 1, r.stdout
    assert after["keeper_pid"] == before["keeper_pid"] == str(k.proc.pid)
    assert int(after["generation"]) == int(before["generation"]) + 1
    assert int(after["upgrades"]) == int(before["upgrades"]) + 1
    assert after["upgrade_failed"] == "false", after
    assert not proc_gone(shell)
    assert re.search(r"^up1\s+\S+\s+%d\s+running" % shell,
                     k.ctl("list").stdout, re.M)
    k.types("up1")


@pytest.mark.deadline(60)
def test_upgrade_json_names_both_pids(root):
    k = keeper(root)
    before = k.stats()
    j = json.loads(k.ctl("upgrade", "--json").stdout)
    assert j["upgraded"] is True and j["reason"] == "", j
    assert j["old_pid"] == int(before["pid"]) != j["pid"], j
    assert j["generation"] == int(before["generation"]) + 1, j


@pytest.mark.deadline(90)
def test_upgrade_to_a_missing_binary_fails_and_the_old_ptyd_serves(root):
    """The keeper runs the binary now at ptyd's path: gone, the upgrade
    fails with its reason, exit 1, and the old ptyd goes on serving."""
    keeper_bin = _keeper_binary()
    assert keeper_bin is not None, "no ptyd-keeper built"

    d, _ = root
    bindir = os.path.join(d, "bin")
    os.makedirs(bindir)
    for src in (PTYD, keeper_bin):
        shutil.copy2(src, bindir)
    ptyd = os.path.join(bindir, "ptyd")
    k = keeper(root, ptyd=ptyd)
    shell = k.start_term("up2")
    before = k.stats()
    os.rename(ptyd, ptyd + ".away")
    r = k.ctl("upgrade", check=False)
    m = FAILED.search(r.stdout)
    assert r.returncode == 1 and m, (r.returncode, r.stdout, r.stderr)
    assert int(m.group(2)) == int(before["pid"]), r.stdout
    after = k.stats()
    assert after["pid"] == before["pid"], after
    assert after["upgrade_failed"] == "true", after
    assert after["upgrade_reason"] != "-", after
    assert not proc_gone(shell)
    k.types("up2")
    # Put back, the next upgrade goes through.
    os.rename(ptyd + ".away", ptyd)
    r = k.ctl("upgrade")
    assert UPGRADED.search(r.stdout), r.stdout
    assert k.stats()["upgrade_failed"] == "false"
    k.types("up2")


@pytest.mark.deadline(60)
def test_upgrade_without_an_outcome_in_time_exits_3(root):
    """A keeper that cannot act (stopped) gives no outcome: exit 3 after
    --timeout, saying the upgrade may still finish, which it does."""
    k = keeper(root)
    before = k.stats()
    os.kill(k.proc.pid, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        r = k.ctl("upgrade", "--timeout", "1", check=False)
        assert r.returncode == 3, (r.stdout, r.stderr)
        assert time.monotonic() - t0 < 5
        assert "no outcome after 1 s" in r.stderr, r.stderr
    finally:
        os.kill(k.proc.pid, signal.SIGCONT)
    wait_for(lambda: int(k.stats_maybe().get("upgrades", -1)) ==
             int(before["upgrades"]) + 1, 20, what="the late upgrade")


# -- shutdown -----------------------------------------------------------------

@pytest.mark.deadline(60)
def test_shutdown_ends_the_shells_and_returns_once_the_keeper_is_gone(root):
    k = keeper(root)
    shell = k.start_term("down1")
    keeper_pid = k.proc.pid
    r = k.ctl("shutdown")
    assert r.stdout.startswith("stopped: keeper pid %d" % keeper_pid), \
        r.stdout
    # Gone already (a zombie of ours until waited for), not some time
    # later: the database lock is free for the next ptyd.
    assert proc_state(keeper_pid) in (None, "Z")
    assert k.proc.wait(5) == 0
    wait_for(lambda: proc_gone(shell), 10, what="the shell ended")
    assert k.ctl("stats", check=False).returncode == 2


# -- service ------------------------------------------------------------------

@pytest.mark.deadline(90)
def test_service_upgrades_on_sigusr1_and_stops_on_sigterm(root):
    k = keeper(root)
    shell = k.start_term("svc1")
    p, line = service(k)
    assert "keeper pid %d" % k.proc.pid in line, line
    before = k.stats()
    p.send_signal(signal.SIGUSR1)
    out, _ = p.communicate(timeout=30)
    assert p.returncode == 0, out
    assert UPGRADED.search(out), out
    assert k.stats()["pid"] != before["pid"]
    assert not proc_gone(shell)
    k.types("svc1")
    # The next service (systemd starts it after the restart) stops.
    p, line = service(k)
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=40)
    assert p.returncode == 0, out
    assert "ended in" in out, out
    assert k.proc.wait(5) == 0
    wait_for(lambda: proc_gone(shell), 10, what="the shell ended")


@pytest.mark.deadline(60)
def test_service_exits_1_when_the_keeper_dies_on_its_own(root):
    k = keeper(root)
    p, _ = service(k)
    os.kill(k.proc.pid, signal.SIGKILL)
    out, _ = p.communicate(timeout=10)
    assert p.returncode == 1, out
    assert "ended on its own" in out, out


@pytest.mark.deadline(60)
def test_service_waits_for_a_keeper_that_comes_up_late(root):
    """systemd starts the keeper first, but its socket is bound a moment
    later: service looks for up to 10 s."""
    d, keepers = root
    later = os.path.join(d, "late")
    state = os.path.join(later, "home", ".local", "state", "ptyd")
    p = subprocess.Popen([PTYDCTL, "--socket",
                          os.path.join(state, "ptyd.sock"), "service"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    try:
        time.sleep(1.5)
        assert p.poll() is None
        k = Keeper(later)
        keepers.append(k)
        line = p.stdout.readline()
        assert line.startswith("service: "), line
        p.send_signal(signal.SIGTERM)
        out, _ = p.communicate(timeout=40)
        assert p.returncode == 0, line + out
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


# -- without a keeper ---------------------------------------------------------

@pytest.mark.deadline(60)
def test_without_a_keeper_upgrade_refuses_and_leaves_the_shells(root):
    k = keeper(root, no_keeper=True)
    assert int(k.stats()["keeper_pid"]) == 0
    shell = k.start_term("nk1")
    r = k.ctl("upgrade", check=False)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "ptyd runs without a keeper (--no-keeper): an upgrade needs a " \
        "restart, which ends the shells" in r.stderr, r.stderr
    assert not proc_gone(shell)
    k.types("nk1")


@pytest.mark.deadline(60)
def test_without_a_keeper_shutdown_stops_ptyd(root):
    k = keeper(root, no_keeper=True)
    shell = k.start_term("nk2")
    r = k.ctl("shutdown")
    assert r.stdout.startswith("stopped: ptyd pid %d" % k.proc.pid), r.stdout
    assert k.proc.wait(5) == 0
    wait_for(lambda: proc_gone(shell), 10, what="the shell ended")
