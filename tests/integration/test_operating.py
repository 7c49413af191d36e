"""test_operating.py -- what an operator meets running the programs
(issue 33): an autostart that fails says why, in ptyd.fcgi's log and never
in the HTTP answer; ptyd.fcgi's own log file (fcgi_log) reopened on SIGHUP;
every log rotated by the shipped logrotate recipe, run for real, with each
daemon writing to the new file afterwards; ptydctl finding ptyd's socket,
and prune its database, from the settings alone.

No nginx: ptyd.fcgi runs as plain CGI or as a FastCGI server nobody
connects to.  Everything lives in pytest's tmp_path; every process started
is stopped by its pid.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

from ptyd_stack import BUILDDIR, children_of, wait_for

PTYD = os.path.join(BUILDDIR, "ptyd", "ptyd")
FCGI = os.path.join(BUILDDIR, "fcgi", "ptyd.fcgi")
CTL = os.path.join(BUILDDIR, "ptydctl", "ptydctl")
RECIPE = os.path.join(BUILDDIR, "etc", "logrotate.d", "ptyd")


def base_env(home, **more):
    """A web server's environment: no PTYD_* of the caller's, its own HOME."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PTYD_", "XDG_"))}
    env["HOME"] = str(home)
    env.update(more)
    return env


def cgi(env, path="health", args=()):
    """One CGI GET through ptyd.fcgi: (status, headers and body text,
    stderr text)."""
    env = dict(env, REQUEST_METHOD="GET", GATEWAY_INTERFACE="CGI/1.1",
               DOCUMENT_URI="/api/terminal/" + path, REMOTE_ADDR="127.0.0.1",
               HTTP_HOST="127.0.0.1:8080", SERVER_PORT="8080",
               REQUEST_SCHEME="http", PTYD_LOCAL="address")
    r = subprocess.run([FCGI] + list(args), env=env, capture_output=True,
                       stdin=subprocess.DEVNULL, timeout=30)
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    m = re.match(r"Status: (\d+)", out)
    return (int(m.group(1)) if m else 200), out, r.stderr.decode()


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def stop(pids):
    """SIGTERM each pid (keepers first: they would start another ptyd),
    SIGKILL what is left after 10 s."""
    for p in pids:
        try:
            os.kill(p, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 10
    for p in pids:
        while time.monotonic() < deadline:
            try:
                os.kill(p, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        else:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass


# ---- an autostart that fails ---------------------------------------------

@pytest.mark.deadline(60)
def test_a_failed_autostart_logs_ptyds_reason_and_the_paths_not_the_answer(
        tmp_path):
    """ptyd refuses to start (its state directory is a file: as root too,
    where a mode would not stop it).  ptyd.fcgi's log used to say only
    "Connection refused", ptyd's own words on a line apart if stderr was
    kept at all; now one line names the program, the socket, the exit
    status and ptyd's message.  The answer is the contract's 503, with no
    path in it."""
    (tmp_path / "state").write_text("a file, not a folder\n")
    sock = tmp_path / "run" / "ptyd.sock"
    env = base_env(tmp_path, PTYD_STATE_DIR=str(tmp_path / "state"),
                   PTYD_SOCKET=str(sock), PTYD_PTYD=PTYD)
    status, out, log = cgi(env)
    assert status == 503, out
    head, _, body = out.partition("\r\n\r\n")
    assert json.loads(body) == {"error": "ptyd is not running"}, body
    assert str(tmp_path) not in out and "/" not in body, out
    lines = [ln for ln in log.splitlines() if "autostart" in ln]
    assert len(lines) == 1, log
    line = lines[0]
    assert "warn: autostart: %s --socket %s: exited with status 1: " % (
        PTYD, sock) in line, line
    # ptyd's own reason, with the path it could not use.
    assert "%s/ptyd.db.lock" % (tmp_path / "state") in line, line
    assert "Not a directory" in line, line
    assert "Connection refused" not in log, log


@pytest.mark.deadline(60)
def test_a_ptyd_that_cannot_be_run_is_named_in_the_log(tmp_path):
    log = tmp_path / "fcgi.log"
    gone = str(tmp_path / "no-such-ptyd")
    env = base_env(tmp_path, PTYD_STATE_DIR=str(tmp_path / "st"),
                   PTYD_PTYD=gone)
    status, out, err = cgi(env, args=["--fcgi-log", str(log)])
    assert status == 503 and str(tmp_path) not in out, out
    assert err == "", err   # all of it in the file
    assert re.search(r"warn: autostart: %s --socket %s: cannot run it: "
                     r"No such file or directory$" % (
                         re.escape(gone),
                         re.escape(str(tmp_path / "st" / "ptyd.sock"))),
                     read(log), re.M), read(log)


# ---- the shipped logrotate recipe, run for real ---------------------------

class Stack:
    """ptyd (daemonized, under its keeper) and a ptyd.fcgi FastCGI server
    of two processes, logging to files and keeping pid files where the
    recipe looks for them."""

    def __init__(self, state, log_dir, run_dir, sock):
        self.state, self.log_dir, self.run_dir = state, log_dir, run_dir
        self.sock = sock
        self.env = base_env(state)
        self.fcgi = None

    def path(self, name):
        return os.path.join(self.log_dir, name)

    def start(self):
        os.makedirs(self.run_dir, mode=0o700, exist_ok=True)
        r = subprocess.run(
            [PTYD, "--state-dir", self.state, "--shell", "/bin/sh",
             "--log", self.path("ptyd.log"), "--socket", self.sock,
             "--pidfile", os.path.join(self.run_dir, "ptyd.pid")],
            env=self.env, capture_output=True, stdin=subprocess.DEVNULL,
            timeout=30)
        assert r.returncode == 0, r.stderr
        self.fcgi = subprocess.Popen(
            [FCGI, "--listen", os.path.join(self.run_dir, "fcgi.sock"),
             "--processes", "2", "--no-autostart", "--socket", self.sock,
             "--fcgi-log", self.path("fcgi.log"),
             "--fcgi-pidfile", os.path.join(self.run_dir, "fcgi.pid")],
            env=self.env, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: "serving with 2" in read(self.path("fcgi.log")) and
                 len(children_of(self.fcgi.pid)) == 2, 10,
                 what="ptyd.fcgi and its workers")
        wait_for(lambda: "listening on" in read(self.path("ptyd.log")), 10,
                 what="ptyd's first lines")

    def pids(self):
        keeper = int(read(os.path.join(self.run_dir, "ptyd.pid")) or 0)
        return [p for p in (keeper, self.fcgi and self.fcgi.pid) if p]

    def workers(self):
        return children_of(self.fcgi.pid)


def recipe(tmp_path, var, home):
    """The installed recipe with its paths moved into the temp dir (and
    its account ptyd made ours); every one of them must be there."""
    text = read(RECIPE)
    assert text, "no %s: build first" % RECIPE
    me = "%s %s" % (subprocess.check_output(["id", "-un"]).decode().strip(),
                    subprocess.check_output(["id", "-gn"]).decode().strip())
    for old, new in (("/var/log/ptyd/", var + "/log/ptyd/"),
                     ("/run/ptyd/", var + "/run/ptyd/"),
                     ("/home/*/", home + "/*/"),
                     ("su ptyd ptyd", "su " + me),
                     ("create 0600 ptyd ptyd", "create 0600 " + me)):
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / "logrotate.conf"
    path.write_text(text)
    os.chmod(path, 0o644)
    return str(path)


@pytest.mark.deadline(90)
def test_the_shipped_logrotate_recipe_rotates_every_log_and_nothing_is_lost(
        tmp_path):
    """Two stacks as the recipe knows them: the system's (/var/log/ptyd,
    /run/ptyd) and an account's (~/.local/state/ptyd).  logrotate -f with
    the recipe renames each log and signals its writer; each then writes
    to the new file (ptyd, its keeper, ptyd.fcgi's master and each worker:
    no copytruncate, so the old file keeps every line it had)."""
    if shutil.which("logrotate") is None:
        pytest.fail("logrotate is not installed (scripts/setup installs it)")
    if os.geteuid() != 0:
        pytest.skip("the recipe's per-account block signals with runuser, "
                    "which needs root (CI runs as root)")
    var = str(tmp_path / "var")
    home = str(tmp_path / "home")
    account = os.path.join(home, "acct", ".local", "state", "ptyd")
    system = Stack(os.path.join(var, "lib", "ptyd"),
                   os.path.join(var, "log", "ptyd"),
                   os.path.join(var, "run", "ptyd"),
                   os.path.join(var, "run", "ptyd", "ptyd.sock"))
    acct = Stack(account, account, account,
                 os.path.join(account, "ptyd.sock"))
    conf = recipe(tmp_path, var, home)
    stacks = [system, acct]
    try:
        for s in stacks:
            s.start()
        before = {s.path(n): read(s.path(n)) for s in stacks
                  for n in ("ptyd.log", "fcgi.log")}
        r = subprocess.run(["logrotate", "-f", "-s",
                            str(tmp_path / "logrotate.state"), conf],
                           capture_output=True, timeout=60)
        assert r.returncode == 0, r.stderr.decode()
        for path, old in before.items():
            # Renamed whole (delaycompress: .1 stays plain this time).
            assert read(path + ".1").startswith(old), path
        for s in stacks:
            wait_for(lambda: "log reopened" in read(s.path("ptyd.log")),
                     10, what=lambda: "ptyd's reopen in " +
                     s.path("ptyd.log"))
            want = ["ptyd.fcgi[%d]: info: log reopened" % p
                    for p in [s.fcgi.pid] + s.workers()]
            wait_for(lambda: all(w in read(s.path("fcgi.log"))
                                 for w in want),
                     10, what=lambda: "%r in %r" % (
                         want, read(s.path("fcgi.log"))))
            # And every process of ptyd.fcgi holds the new file only.
            for p in [s.fcgi.pid] + s.workers():
                assert os.readlink("/proc/%d/fd/2" % p) == \
                    s.path("fcgi.log")
            assert "log reopened" not in read(s.path("ptyd.log.1"))
            assert "log reopened" not in read(s.path("fcgi.log.1"))
    finally:
        stop([p for s in stacks for p in s.pids()])


# ---- ptydctl, told nothing -------------------------------------------------

@pytest.mark.deadline(60)
@pytest.mark.parametrize("how", ["conf", "env"])
def test_ptydctl_finds_the_socket_and_prune_the_database_as_the_front_does(
        tmp_path, how):
    """A ptyd autostarted by ptyd.fcgi from the settings alone (a
    ptyd.conf named by PTYD_CONFIG, or PTYD_STATE_DIR); ptydctl with the
    same settings and no --socket reaches it, and prune, with no --db,
    prunes its database."""
    st = tmp_path / "st"
    env = base_env(tmp_path, PTYD_PTYD=PTYD)
    if how == "conf":
        conf = tmp_path / "ptyd.conf"
        conf.write_text("state_dir = %s\nshell = /bin/sh\n"
                        "audit_anchor = none\n" % st)
        env["PTYD_CONFIG"] = str(conf)
    else:
        env.update(PTYD_STATE_DIR=str(st), PTYD_SHELL="/bin/sh",
                   PTYD_AUDIT_ANCHOR="none")
    pids = []
    try:
        status, out, _ = cgi(env)
        assert status == 200, out
        pid = int(re.search(r'"pid": (\d+)', out).group(1))
        pids = [int(read(st / "ptyd.pid")), pid]

        def ctl(*args):
            return subprocess.run([CTL] + list(args), env=env,
                                  capture_output=True, timeout=20)

        r = ctl("stats")
        assert r.returncode == 0, r.stderr
        assert re.search(rb"^pid\s+%d$" % pid, r.stdout, re.M), r.stdout
        r = ctl("start", "one")
        assert r.returncode == 0, r.stderr
        assert json.loads(ctl("list", "--json").stdout)["terminals"][0][
            "session_id"] == "one"
        # The mirror and its chain are written behind, once a second;
        # then prune finds the database ptyd writes.
        got = []
        wait_for(lambda: got.append(ctl("prune", "--before", "0")) or
                 got[-1].returncode == 0, 10, interval=0.2,
                 what=lambda: got[-1].stderr if got else "prune")
        assert got[-1].stdout.startswith(b"removed "), got[-1].stdout
    finally:
        stop(pids)
