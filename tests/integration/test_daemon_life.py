"""test_daemon_life.py -- one daemon per database, what a crash leaves,
the log, the account a daemon runs as, and a shell that cannot start.

Regressions, each pinned below:
- a second ptyd pointed at the same database with another --socket or
  XDG_RUNTIME_DIR started, and its start-up marked the first one's live
  terminals `lost` in the database;
- a daemonized ptyd without --log logged to syslog, which in a container
  is nowhere (an autostarted one: always);
- ptyd.fcgi under `spawn-fcgi -u ACCOUNT` started by root kept HOME=/root,
  so the account's ptyd looked for its state in /root and its shells got
  root's home;
- a shell that could not start answered "internal error".

Every ptyd here runs on its own: a temporary HOME (its default state
folder, database and log live under it), its own socket, no nginx.
"""

import json
import os
import pwd
import re
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time

import pytest

from fcgi_raw import fcgi_exchange
from ptyd_stack import BUILDDIR, proc_gone, wait_for

PTYD = os.path.join(BUILDDIR, "ptyd", "ptyd")
PTYDCTL = os.path.join(BUILDDIR, "ptydctl", "ptydctl")
FCGI = os.path.join(BUILDDIR, "fcgi", "ptyd.fcgi")
ACCOUNT = "ptyd-itest-life"
LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z "
                  r"ptyd\[\d+\]: (debug|info|warn|error|fatal): \S")


class Daemon:
    """A ptyd with its HOME in a temporary folder and its state folder
    (PTYD_STATE_DIR) in HOME/.local/state/ptyd; database, lock and log
    where they are by default, in the state folder."""

    def __init__(self, root):
        self.root = root
        self.home = os.path.join(root, "home")
        self.state = os.path.join(self.home, ".local", "state", "ptyd")
        self.db = os.path.join(self.state, "ptyd.db")
        self.lock = self.db + ".lock"
        self.log = os.path.join(self.state, "ptyd.log")
        os.makedirs(self.home, exist_ok=True)
        self.pids = []          # every daemon to stop at the end
        self.shells = []        # and every shell (sh -i ignores SIGTERM)

    def env(self, **more):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("PTYD_", "XDG_"))}
        # The state folder comes from the password database's home, not
        # $HOME (lib/config): point it at ours, the rest derives from it.
        env.update(HOME=self.home, SHELL="/bin/sh", LANG="C.UTF-8",
                   PTYD_STATE_DIR=self.state)
        env.update(more)
        return env

    def sock(self, name="run"):
        d = os.path.join(self.root, name)
        os.makedirs(d, mode=0o700, exist_ok=True)
        return os.path.join(d, "ptyd.sock")

    def run(self, *args, env=None, shell="/bin/sh"):
        """ptyd daemonized (no -f): returns once it serves or failed."""
        # The single daemon's life (its pid file, lock, log, and rows a
        # kill -9 leaves): the keeper's is test_keeper.py's and
        # test_ptydctl_keeper.py's.
        r = subprocess.run([PTYD, "--no-keeper", "--shell", shell]
                           + list(args),
                           env=env or self.env(), capture_output=True,
                           stdin=subprocess.DEVNULL, timeout=20)
        return r

    def up(self, sock, shell="/bin/sh"):
        """ptyd daemonized on sock with a pid file; its pid."""
        pidfile = os.path.join(self.root, "ptyd.pid")
        r = self.run("--socket", sock, "--pidfile", pidfile, shell=shell)
        assert r.returncode == 0, r.stderr.decode()
        return self.daemon_pid(pidfile)

    def daemon_pid(self, pidfile):
        pid = int(open(pidfile).read())
        self.pids.append(pid)
        return pid

    def ctl(self, sock, *args, check=True):
        r = subprocess.run([PTYDCTL, "--socket", sock] + list(args),
                           capture_output=True, timeout=10)
        if check:
            assert r.returncode == 0, r.stderr.decode()
        return r.stdout.decode()

    def start_term(self, sock, sid):
        out = self.ctl(sock, "start", sid)
        pid = int(re.search(r"^pid\s+(\d+)$", out, re.M).group(1))
        self.shells.append(pid)
        return pid

    def rows(self):
        db = sqlite3.connect("file:%s?mode=ro" % self.db, uri=True,
                             timeout=5)
        try:
            return dict(db.execute("SELECT session_id, state "
                                   "FROM terminals").fetchall())
        finally:
            db.close()

    def log_text(self, path=None):
        try:
            with open(path or self.log, errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def echoes(self, sock, sid):
        """The terminal's shell runs what it is sent."""
        mark = os.path.join(self.root, "echo-%s" % sid)
        self.ctl(sock, "input", sid, "echo alive-$((20+22)) > %s\n" % mark)
        wait_for(lambda: os.path.exists(mark) and
                 open(mark).read() == "alive-42\n", 10,
                 what="the shell of %s answers" % sid)

    def stop(self):
        for pid in self.shells:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in reversed(self.pids):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for pid in self.pids:
            try:
                wait_for(lambda: proc_gone(pid) or _zombie_reaped(pid), 10)
            except AssertionError:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def _zombie_reaped(pid):
    try:
        return os.waitpid(pid, os.WNOHANG)[0] == pid
    except ChildProcessError:
        return False


@pytest.fixture
def daemon():
    root = tempfile.mkdtemp(prefix="ptyd-life-", dir="/tmp")
    d = Daemon(root)
    try:
        yield d
    finally:
        d.stop()
        if not os.environ.get("PTYD_TEST_KEEP"):
            shutil.rmtree(root, ignore_errors=True)


# -- one daemon, one database ------------------------------------------------

@pytest.mark.deadline(60)
@pytest.mark.parametrize("same_socket", [False, True])
def test_a_second_ptyd_on_the_same_database_refuses_and_leaves_the_first_alone(
        daemon, same_socket):
    d = daemon
    sock_a = d.sock("a")
    pidfile = os.path.join(d.root, "ptyd.pid")
    r = d.run("--socket", sock_a, "--pidfile", pidfile,
              env=d.env(XDG_RUNTIME_DIR=os.path.join(d.root, "xa")))
    assert r.returncode == 0, r.stderr.decode()
    first = d.daemon_pid(pidfile)
    d.start_term(sock_a, "one")
    wait_for(lambda: d.rows().get("one") == "running", 5,
             what="the first's row flushed")

    if same_socket:
        args = ["--socket", sock_a, "--pidfile", pidfile]
    else:
        args = ["--socket", d.sock("b"),
                "--pidfile", os.path.join(d.root, "b.pid")]
    r = d.run(*args, env=d.env(XDG_RUNTIME_DIR=os.path.join(d.root, "xb")))
    if r.returncode == 0 and not same_socket:
        d.daemon_pid(args[-1])      # it should not have started: stop it
    err = r.stderr.decode()
    assert r.returncode == 1, err
    want = "%s: held by pid %d (another ptyd uses this database)" % (
        d.lock, first)
    assert want in err, err
    assert want in d.log_text()

    # The first one's socket, pid file, lock and rows are untouched.
    assert os.path.exists(sock_a)
    assert open(pidfile).read().strip() == str(first)
    assert open(d.lock).read().strip() == str(first)
    assert not os.path.exists(os.path.join(d.root, "b.pid"))
    time.sleep(1.2)     # a flush of the mirror, had anything changed
    assert d.rows() == {"one": "running"}
    d.echoes(sock_a, "one")
    assert os.stat(d.lock).st_mode & 0o777 == 0o600


@pytest.mark.deadline(60)
def test_after_kill_9_the_next_ptyd_marks_the_dead_ones_rows_lost_and_says_so(
        daemon):
    d = daemon
    sock = d.sock()
    dead = d.up(sock)
    d.start_term(sock, "a")
    d.start_term(sock, "b")
    wait_for(lambda: d.rows() == {"a": "running", "b": "running"}, 5,
             what="rows flushed")
    os.kill(dead, signal.SIGKILL)
    wait_for(lambda: proc_gone(dead), 5, what="ptyd killed")

    now = d.up(sock)
    assert now != dead
    wait_for(lambda: d.rows() == {"a": "lost", "b": "lost"}, 5,
             what=lambda: "rows lost: %r" % d.rows())
    assert ("marked 2 terminal(s) of a previous ptyd (pid %d) lost" % dead
            in d.log_text()), d.log_text()
    # The lock names the daemon itself, not the parent that forked it.
    assert open(d.lock).read().strip() == str(now)
    d.start_term(sock, "c")
    d.echoes(sock, "c")


# -- the log -----------------------------------------------------------------

@pytest.mark.deadline(60)
def test_the_log_is_a_file_in_the_state_folder_and_sighup_reopens_it(daemon):
    d = daemon
    sock = d.sock()
    pid = d.up(sock)
    wait_for(lambda: "listening on" in d.log_text(), 5,
             what="ptyd's first lines in %s" % d.log)
    lines = d.log_text().splitlines()
    assert lines and all(LINE.match(ln) for ln in lines), lines
    assert "ptyd[%d]: info: listening on %s" % (pid, sock) in d.log_text()
    assert os.stat(d.log).st_mode & 0o777 == 0o600

    # logrotate: rename, then SIGHUP.
    os.rename(d.log, d.log + ".1")
    os.kill(pid, signal.SIGHUP)
    wait_for(lambda: "log reopened" in d.log_text(), 5,
             what="a new %s" % d.log)
    d.ctl(sock, "stats")
    old = d.log_text(d.log + ".1")
    assert "listening on" in old and "log reopened" not in old
    assert "listening on" not in d.log_text()
    assert all(LINE.match(ln) for ln in d.log_text().splitlines())


# -- a shell that cannot start -----------------------------------------------

def fcgi_call(path, method, endpoint, body=None, timeout=10):
    """One request straight to ptyd.fcgi's FastCGI socket: (status, JSON)."""
    data = json.dumps(body).encode() if body is not None else b""
    params = {"REQUEST_METHOD": method, "REQUEST_SCHEME": "http",
              "DOCUMENT_URI": "/api/terminal/" + endpoint,
              "REQUEST_URI": "/api/terminal/" + endpoint,
              "HTTP_HOST": "127.0.0.1", "REMOTE_ADDR": "127.0.0.1",
              "CONTENT_LENGTH": str(len(data))}
    if body is not None:
        params["CONTENT_TYPE"] = "application/json"
    status, text = fcgi_exchange(path, params, data, timeout)
    return status, json.loads(text) if text else None


def start_fcgi(d, ptyd_sock, env, autostart=False, umask=0o022):
    sock = os.path.join(d.root, "fcgi.sock")
    more = ["--ptyd", PTYD] if autostart else ["--no-autostart"]
    p = subprocess.Popen([FCGI, "--listen", sock, "--processes", "1",
                          "--ptyd-socket", ptyd_sock] + more,
                         env=env, stdin=subprocess.DEVNULL,
                         preexec_fn=lambda: os.umask(umask),
                         stdout=subprocess.DEVNULL,
                         stderr=open(os.path.join(d.root, "fcgi.log"), "ab"))
    d.pids.append(p.pid)
    wait_for(lambda: os.path.exists(sock), 10, what="ptyd.fcgi listening")
    return sock


@pytest.mark.deadline(60)
def test_a_shell_that_cannot_start_is_a_500_saying_why_and_the_log_has_the_path(
        daemon):
    d = daemon
    sock = d.sock()
    shell = os.path.join(d.root, "gone-sh")
    shutil.copy(os.path.realpath("/bin/sh"), shell)
    pid = d.up(sock, shell=shell)
    os.unlink(shell)    # an upgrade took it away, say
    fsock = start_fcgi(d, sock, d.env(PTYD_LOCAL="address"))

    status, j = fcgi_call(fsock, "POST", "start", {"session_id": "s"})
    assert status == 500, j
    assert j["error"] == ("could not start the shell: "
                          "no such file or directory"), j
    assert "/" not in json.dumps(j)
    wait_for(lambda: "warn: spawn: %s: No such file or directory" % shell
             in d.log_text(), 5, what=lambda: d.log_text())
    # ptyd is still up, and serves.
    status, j = fcgi_call(fsock, "GET", "health")
    assert status == 200 and j["ptyd"]["pid"] == pid, j
    assert d.ctl(sock, "list").splitlines()[1:] == []


@pytest.mark.deadline(60)
def test_an_autostart_refused_by_the_lock_fails_the_request_at_once(daemon):
    """ptyd.fcgi pointed at another socket than the running ptyd's starts
    a second one on the same database: that one refuses (its reason in
    ptyd.fcgi's log), and the request answers 503 at once instead of
    waiting out the autostart deadline."""
    d = daemon
    first = d.up(d.sock("a"))
    fsock = start_fcgi(d, d.sock("b"), d.env(PTYD_LOCAL="address"),
                       autostart=True)
    t0 = time.monotonic()
    status, j = fcgi_call(fsock, "GET", "list", timeout=30)
    if os.path.exists(d.sock("b")):     # it should not have started
        d.pids.append(int(re.search(r"^pid\s+(\d+)$", d.ctl(
            d.sock("b"), "stats"), re.M).group(1)))
    assert status == 503, j
    assert time.monotonic() - t0 < 5
    log = open(os.path.join(d.root, "fcgi.log")).read()
    assert "%s: held by pid %d" % (d.lock, first) in log, log
    assert not os.path.exists(d.sock("b"))


@pytest.mark.deadline(60)
@pytest.mark.parametrize("umask,setting,want", [
    (0o022, None, "0022"), (0o002, None, "0002"), (0o022, "0027", "0027")])
def test_an_autostarted_ptyd_gives_the_shells_the_umask_ptyd_fcgi_had(
        daemon, umask, setting, want):
    """ptyd.fcgi sets its own umask to 077, and the ptyd it started took
    that for its shells: files made in the page's shell were private
    (0077 whatever the account's umask).  Now the shells get the one
    ptyd.fcgi was started with, and shell_umask still wins."""
    d = daemon
    sock = d.sock()
    env = d.env(PTYD_LOCAL="address")
    if setting is not None:
        env["PTYD_SHELL_UMASK"] = setting
    fsock = start_fcgi(d, sock, env, autostart=True, umask=umask)
    status, j = fcgi_call(fsock, "POST", "start", {"session_id": "um"},
                          timeout=30)
    d.pids.append(int(re.search(r"^pid\s+(\d+)$", d.ctl(sock, "stats"),
                                re.M).group(1)))
    assert status == 200, j
    d.shells.append(j["pid"])
    out = os.path.join(d.root, "umask.txt")
    status, j = fcgi_call(fsock, "POST", "input", {
        "session_id": "um", "data": "umask > %s\n" % out})
    assert status == 200, j
    wait_for(lambda: os.path.exists(out) and open(out).read().endswith(
        "\n"), 10, what="the shell's umask in %s" % out)
    assert open(out).read() == want + "\n"


# -- the account -------------------------------------------------------------

@pytest.fixture
def account():
    """A real second account with a home of its own, removed afterwards."""
    root = tempfile.mkdtemp(prefix="ptyd-acct-", dir="/tmp")
    os.chmod(root, 0o755)
    home = os.path.join(root, "home")
    subprocess.run(["userdel", "-f", ACCOUNT], capture_output=True,
                   timeout=30)
    subprocess.run(["useradd", "--system", "--create-home", "--home-dir",
                    home, "--shell", "/bin/sh", ACCOUNT], check=True,
                   capture_output=True, timeout=30)
    pw = pwd.getpwnam(ACCOUNT)
    try:
        yield root, pw
    finally:
        # Whatever still runs as the account: its ptyd.fcgi, its ptyd (and
        # through it, its shells), found by uid, not by name.
        for p in os.listdir("/proc"):
            if p.isdigit():
                try:
                    if os.stat("/proc/" + p).st_uid == pw.pw_uid:
                        os.kill(int(p), signal.SIGKILL)
                except (FileNotFoundError, ProcessLookupError):
                    pass
        time.sleep(0.2)
        subprocess.run(["userdel", "-f", ACCOUNT], capture_output=True,
                       timeout=30)
        if not os.environ.get("PTYD_TEST_KEEP"):
            shutil.rmtree(root, ignore_errors=True)


@pytest.mark.deadline(90)
def test_spawn_fcgi_u_from_root_gives_the_shell_the_accounts_home_and_name(
        account):
    root, pw = account
    bindir = os.path.join(root, "bin")
    os.makedirs(bindir)
    for b in (PTYD, FCGI):
        shutil.copy2(b, bindir)
    fsock = os.path.join(root, "fcgi.sock")
    ptyd_sock = os.path.join(pw.pw_dir, "run", "ptyd.sock")
    # What root's environment holds when it runs spawn-fcgi -u.
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root",
           "USER": "root", "LOGNAME": "root", "SHELL": "/bin/sh",
           "LANG": "C.UTF-8", "PTYD_LOCAL": "address"}
    r = subprocess.run(["spawn-fcgi", "-u", ACCOUNT, "-g",
                        str(pw.pw_gid), "-s", fsock, "-U", ACCOUNT, "--",
                        os.path.join(bindir, "ptyd.fcgi"), "--processes",
                        "1", "--ptyd", os.path.join(bindir, "ptyd"),
                        "--ptyd-socket", ptyd_sock],
                       env=env, capture_output=True, timeout=20,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr.decode()

    status, j = fcgi_call(fsock, "POST", "start", {"session_id": "acct"},
                          timeout=30)
    assert status == 200, j
    shell = j["pid"]
    assert os.stat("/proc/%d" % shell).st_uid == pw.pw_uid
    out = os.path.join(pw.pw_dir, "out.txt")
    status, j = fcgi_call(fsock, "POST", "input", {
        "session_id": "acct",
        "data": "echo \"$HOME $(id -un) $USER\" > %s\n" % out})
    assert status == 200, j
    wait_for(lambda: os.path.exists(out) and open(out).read().endswith(
        "\n"), 10, what="the shell's answer in %s" % out)
    assert open(out).read() == "%s %s %s\n" % (pw.pw_dir, ACCOUNT, ACCOUNT)
    # The account's ptyd keeps its state in the account's home.
    state = os.path.join(pw.pw_dir, ".local", "state", "ptyd")
    assert os.path.exists(os.path.join(state, "ptyd.db.lock"))
    assert "listening on %s" % ptyd_sock in open(
        os.path.join(state, "ptyd.log")).read()


def fd_target(pid, fd):
    try:
        return os.readlink("/proc/%d/fd/%d" % (pid, fd))
    except FileNotFoundError:
        return None


@pytest.mark.deadline(60)
def test_started_with_stdio_closed_the_daemons_put_dev_null_there(daemon):
    """Started with descriptors 1 and 2 closed (a careless init script, a
    supervisor's `2>&-`), ptyd.fcgi gave the numbers to what it opened
    first, and could give 2, where it writes its log, to a connection.
    Both daemons now hold /dev/null there, and serve."""
    d = daemon
    sock = d.sock()
    # ptyd in the foreground, 1 and 2 closed by the shell that runs it.
    p = subprocess.Popen(["sh", "-c", 'exec "$0" -f --shell /bin/sh '
                          '--socket "$1" >&- 2>&-', PTYD, sock],
                         env=d.env(), stdin=subprocess.DEVNULL)
    d.pids.append(p.pid)
    wait_for(lambda: os.path.exists(sock), 10, what="ptyd listening")
    fsock = os.path.join(d.root, "fcgi.sock")
    f = subprocess.Popen(["sh", "-c", 'exec "$0" --listen "$1" --processes '
                          '1 --no-autostart --ptyd-socket "$2" >&- 2>&-',
                          FCGI, fsock, sock],
                         env=d.env(PTYD_LOCAL="address"),
                         stdin=subprocess.DEVNULL)
    d.pids.append(f.pid)
    wait_for(lambda: os.path.exists(fsock), 10, what="ptyd.fcgi listening")
    status, j = fcgi_call(fsock, "GET", "health")
    assert status == 200, j
    procs = [p.pid, f.pid] + [int(c) for c in open(
        "/proc/%d/task/%d/children" % (f.pid, f.pid)).read().split()]
    for pid in procs:
        for fd in (1, 2):
            assert fd_target(pid, fd) == "/dev/null", (pid, fd)


@pytest.mark.deadline(60)
@pytest.mark.parametrize("processes", ["1", "2"])
def test_ptyd_fcgi_says_when_it_stops(daemon, processes):
    """Its log said when it began serving and nothing when it stopped: an
    operator could not tell a stop from a hang or a crash."""
    d = daemon
    fsock = os.path.join(d.root, "fcgi.sock")
    log = os.path.join(d.root, "fcgi-%s.log" % processes)
    f = subprocess.Popen([FCGI, "--listen", fsock, "--processes", processes,
                          "--no-autostart", "--ptyd-socket", d.sock()],
                         env=d.env(), stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=open(log, "ab"))
    d.pids.append(f.pid)
    wait_for(lambda: os.path.exists(fsock), 10, what="ptyd.fcgi listening")
    # Serving (its signals taken) once it answers; any answer will do.
    fcgi_call(fsock, "GET", "health")
    f.send_signal(signal.SIGTERM)
    assert f.wait(timeout=20) == 0
    text = d.log_text(log)
    assert re.search(r"info: stopping\n(.*\n)*.*info: stopped\n$", text), \
        text
