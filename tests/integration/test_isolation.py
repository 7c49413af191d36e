"""test_isolation.py -- nothing of the daemons' environment or memory is
readable from a shell they spawned, and their files are theirs alone
(DESIGN 6, isolation).

Regression: `cat /proc/<ptyd pid>/environ` in a terminal printed the
daemon's environment, secrets included (same uid; and root reads any
process's); ptyd.fcgi's likewise; and an autostarted ptyd inherited, in
CGI mode, the request's headers.  Files followed the caller's umask.
"""

import os
import pwd
import secrets
import stat
import subprocess
import time

import pytest

from owned_stack import OwnedStack, ensure_user
from ptyd_http import Client, Shell
from ptyd_stack import BUILDDIR, children_of, wait_for

SECRET = "iso-" + secrets.token_hex(8)
OWNER = "ptyd-itest-iso"

# In a shell: every ancestor's environ and cmdline, then the daemons'
# environ, each as a count of lines holding the secret, and whether the
# daemons' environ could be read at all.
WALK = ("p=$$; n=0; while [ \"$p\" -gt 1 ]; do "
        "n=$((n + $(cat /proc/$p/environ /proc/$p/cmdline 2>/dev/null | "
        "tr '\\0' '\\n' | grep -c %s))); "
        "p=$(cut -d' ' -f4 /proc/$p/stat); done; echo ancestors=$n; "
        "for d in %s; do "
        "if cat /proc/$d/environ >/dev/null 2>&1; then r=readable; "
        "else r=refused; fi; "
        "echo daemon-$d=$r-$(cat /proc/$d/environ 2>/dev/null | "
        "tr '\\0' '\\n' | grep -c %s); done")


def parse(out):
    return dict(line.split("=", 1) for line in out.decode().split()
                if "=" in line)


@pytest.fixture(scope="module")
def secretive(make_stack):
    return make_stack("iso", env=["PTYD_TEST_SECRET=" + SECRET,
                                  "AWS_SECRET_ACCESS_KEY=" + SECRET,
                                  "DATABASE_URL=postgres://u:%s@h/d" % SECRET])


def daemon_pids(st):
    fcgi = int(open(os.path.join(st.state, "run", "fcgi.pid")).read())
    return [st.ptyd_pid(), fcgi] + children_of(fcgi)


def test_a_root_shell_reads_no_secret_of_its_daemons(secretive, new_sid):
    """Root's shell passes non-dumpable (CAP_SYS_PTRACE); the wipe is
    what holds: the environment block it reads is zeros."""
    c = secretive.client()
    sid = new_sid()
    assert c.start(sid).status == 200
    pids = daemon_pids(secretive)
    try:
        with Shell(c, sid) as sh:
            got = parse(sh.run(WALK % (SECRET, " ".join(map(str, pids)),
                                       SECRET), timeout=20))
    finally:
        c.close_term(sid)
    assert got["ancestors"] == "0", got
    for p in pids:
        assert got["daemon-%d" % p].endswith("-0"), got


def test_the_daemons_are_not_dumpable(secretive):
    for p in daemon_pids(secretive):
        # /proc/PID/* of a non-dumpable process belongs to root.
        st = os.stat("/proc/%d/environ" % p)
        assert st.st_uid == 0
        with open("/proc/%d/status" % p) as f:
            assert "ptyd" in f.read()
        assert open("/proc/%d/environ" % p, "rb").read().strip(b"\0") \
            == b"", "the environment block is wiped"


@pytest.fixture(scope="module")
def owner():
    if os.geteuid() != 0:
        pytest.skip("needs root to create a Unix account (useradd)")
    made = ensure_user(OWNER)
    try:
        yield OWNER
    finally:
        if made:
            subprocess.run(["userdel", OWNER], capture_output=True,
                           timeout=30)


def test_a_same_uid_shell_cannot_read_its_daemons(owner):
    st = OwnedStack(owner, ["PTYD_TEST_SECRET=" + SECRET,
                            "AWS_SECRET_ACCESS_KEY=" + SECRET]).start()
    try:
        fcgi = int(open(os.path.join(st.state, "run", "fcgi.pid")).read())
        ptyd = int(open(os.path.join(st.state, "run", "ptyd.pid")).read())
        pids = [ptyd, fcgi] + children_of(fcgi)
        # A shell of that stack runs as the owner: what it reads, it
        # reads with the daemons' own uid.  (Root's client may drive it.)
        c = Client(st.port)
        sid = "iso-own"
        r = c.start(sid)
        assert r.status == 200, r
        assert os.stat("/proc/%d" % r.json()["pid"]).st_uid == \
            pwd.getpwnam(owner).pw_uid
        with Shell(c, sid) as sh:
            got = parse(sh.run(WALK % (SECRET, " ".join(map(str, pids)),
                                       SECRET), timeout=20))
        assert got["ancestors"] == "0", got
        for p in pids:
            assert got["daemon-%d" % p] == "refused-0", got
    finally:
        st.stop()


def start_ptyd(run, db, log, *more, umask=None):
    """A ptyd of its own, outside any stack (files and modes are what the
    tests below look at)."""
    return subprocess.Popen(
        [os.path.join(BUILDDIR, "ptyd", "ptyd"), "-f", "--socket",
         str(run / "ptyd.sock"), "--db", str(db), "--log", str(log),
         "--shell", "/bin/sh"] + list(more),
        preexec_fn=None if umask is None else lambda: os.umask(umask),
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)


def test_files_are_private_whatever_the_umask(tmp_path):
    """ptyd started with umask 000 and a state directory left 0755."""
    state = tmp_path / "state"
    state.mkdir()
    os.chmod(state, 0o755)
    run = tmp_path / "run"
    log = state / "ptyd.log"
    p = start_ptyd(run, state / "ptyd.db", log, "--pidfile",
                   str(state / "ptyd.pid"), umask=0)
    try:
        wait_for(lambda: (run / "ptyd.sock").exists() and
                 (state / "ptyd.pid").exists() and
                 (state / "ptyd.db-wal").exists(), 10,
                 what="ptyd up with its database")
        modes = {}
        for f in ("ptyd.db", "ptyd.db-wal", "ptyd.db-shm", "ptyd.log",
                  "ptyd.pid"):
            modes[f] = stat.S_IMODE(os.stat(state / f).st_mode)
        modes["ptyd.sock"] = stat.S_IMODE(os.stat(run / "ptyd.sock").st_mode)
        modes["state/"] = stat.S_IMODE(os.stat(state).st_mode)
        modes["run/"] = stat.S_IMODE(os.stat(run).st_mode)
        want = {f: 0o600 for f in modes}
        want["state/"] = want["run/"] = 0o700
        assert modes == want, {k: oct(v) for k, v in modes.items()}
    finally:
        p.terminate()
        p.wait(timeout=15)


def test_fcgi_socket_is_private_whatever_the_umask(tmp_path):
    sock = tmp_path / "fcgi.sock"
    p = subprocess.Popen(
        [os.path.join(BUILDDIR, "fcgi", "ptyd.fcgi"), "--listen", str(sock),
         "--no-autostart", "--processes", "1", "--ptyd-socket",
         str(tmp_path / "none.sock")],
        preexec_fn=lambda: os.umask(0), stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(sock.exists, 10, what="ptyd.fcgi listening")
        time.sleep(0.1)
        assert stat.S_IMODE(os.stat(sock).st_mode) == 0o600
    finally:
        p.terminate()
        p.wait(timeout=15)


def test_shells_get_the_umask_ptyd_was_started_with(secretive, new_sid):
    """ptyd runs under umask 077 for its own files; a shell's files are
    made as the user would make them anywhere else (regression: the
    shells inherited 077)."""
    c = secretive.client()
    sid = new_sid()
    assert c.start(sid).status == 200
    try:
        with Shell(c, sid) as sh:
            got = sh.run("umask").decode().strip()
    finally:
        c.close_term(sid)
    mine = os.umask(0)
    os.umask(mine)
    assert got == "%04o" % mine, (got, mine)


def test_a_shared_folder_of_the_database_is_left_alone(tmp_path):
    """Making the database's folder private must never touch a shared one
    (a sticky, world-writable folder such as /tmp, as root would own it):
    ptyd says so in its log instead."""
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    run = tmp_path / "run"
    log = tmp_path / "ptyd.log"
    p = start_ptyd(run, shared / "ptyd.db", log)
    try:
        wait_for(lambda: (shared / "ptyd.db-wal").exists(), 10,
                 what="ptyd up with its database")
        time.sleep(0.2)
        assert stat.S_IMODE(os.stat(shared).st_mode) == 0o1777
        assert stat.S_IMODE(os.stat(shared / "ptyd.db").st_mode) == 0o600
        assert "open to others" in log.read_text()
    finally:
        p.terminate()
        p.wait(timeout=15)
