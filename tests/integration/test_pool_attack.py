"""test_pool_attack.py -- ptyd-pool against an account that attacks it
(DESIGN 11, issue 33): each test pins one way an account could reach
the master (root), root's terminal or root's keys, and fails on the code
before its fix.

The master is the build's pool/ptyd-pool, run as root in the foreground
on a temp pool folder of one test account (ptyd-pool-x, made and removed
here), with --ptyd and --fcgi naming small scripts that play what an
account can make its processes do: they run as the account, exactly as
the real programs would after the master's drop.  No nginx: nothing here
needs the web side.

Owns: its temp dir, the account, each test's master (and through it the
account's processes).
"""

import ctypes
import grp
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time

import pytest

from ptyd_stack import BUILDDIR, wait_for
from test_pool import create_user, kill_uid

USER = "ptyd-pool-x"
# ptydctl/ once split28 is in, ptyd/ before.
PTYDCTL = next((p for p in (os.path.join(BUILDDIR, "ptydctl", "ptydctl"),
                            os.path.join(BUILDDIR, "ptyd", "ptydctl"))
                if os.access(p, os.X_OK)), None)

libc = ctypes.CDLL(None, use_errno=True)
SYS_ADD_KEY, SYS_KEYCTL = 248, 250
KEYCTL_JOIN_SESSION_KEYRING = 1
KEY_SPEC_SESSION_KEYRING = -3


@pytest.fixture(scope="module")
def box():
    if os.geteuid() != 0:
        pytest.skip("needs root: ptyd-pool starts as root, the test makes "
                    "an account (useradd)")
    if os.uname().machine != "x86_64":
        pytest.skip("the keyring calls below use x86_64's syscall numbers")
    base = tempfile.mkdtemp(prefix="ptyd-pool-attack-", dir="/tmp")
    os.chmod(base, 0o755)
    b = {"base": base, "pool": os.path.join(base, "pool.d"),
         "run": os.path.join(base, "run"), "pw": None}
    try:
        for d in (b["pool"], b["run"], os.path.join(base, "home")):
            os.makedirs(d)
            os.chmod(d, 0o755)
        b["pw"] = create_user(USER, os.path.join(base, "home", USER))
        yield b
    finally:
        if b["pw"] is not None:
            kill_uid(b["pw"].pw_uid)
            subprocess.run(["userdel", USER], capture_output=True,
                           timeout=30)
        if not os.environ.get("PTYD_TEST_KEEP"):
            shutil.rmtree(base, ignore_errors=True)


def script(box, name, body):
    """An executable python script the account can run."""
    path = os.path.join(box["base"], name)
    with open(path, "w") as f:
        f.write("#!/usr/bin/python3\nimport ctypes, os, sys, time\n" + body)
    os.chmod(path, 0o755)
    return path


SLEEP = "time.sleep(600)\n"


def pool_file(box, listen=None, extra=""):
    path = os.path.join(box["pool"], "x.conf")
    with open(path, "w") as f:
        f.write("user = %s\nlisten = %s\n%s"
                % (USER, listen or os.path.join(box["run"], "x.sock"),
                   extra))
    os.chmod(path, 0o644)
    return path


class Master:
    """The build's ptyd-pool on box's folder; stop() ends it and
    whatever the account left."""

    def __init__(self, box, ptyd, fcgi, preexec_fn=None):
        self.box = box
        self.log = os.path.join(box["base"], "pool-%d.log" % time.time_ns())
        with open(self.log, "ab") as logf:
            self.proc = subprocess.Popen(
                [os.path.join(BUILDDIR, "pool", "ptyd-pool"), "-d",
                 box["pool"], "--ptyd", ptyd, "--fcgi", fcgi],
                stdin=subprocess.DEVNULL, stdout=logf,
                stderr=subprocess.STDOUT, start_new_session=True,
                env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
                preexec_fn=preexec_fn)

    def text(self):
        with open(self.log, "rb") as f:
            return f.read()

    def wait_log(self, what, timeout=10):
        return wait_for(lambda: what in self.text(), timeout=timeout,
                        what=lambda: "%r in the log:\n%s"
                        % (what, self.text()[-2000:].decode(
                            errors="replace")))

    def stop(self):
        try:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                    self.proc.wait(timeout=5)
        finally:
            kill_uid(self.box["pw"].pw_uid)


@pytest.mark.deadline(60)
def test_a_flooding_account_neither_starves_the_master_nor_steers_its_log(
        box):
    """An account's processes that write to their pipe as fast as they
    can had every line logged: the journal (or the log's disk) filled at
    their rate, and the master's read loop, with no bound, ran for as
    long as the pipe had bytes.  And its bytes went to the log as they were, but for C0
    controls: 0x9b (CSI to some terminals), U+009B in UTF-8 and
    directional overrides could steer whoever reads the log."""
    pool_file(box)
    ptyd = script(box, "flood-ptyd", (
        "sys.stdout.buffer.write(b'steer raw:\\x9b31m utf8:\\xc2\\x9b31m "
        "bidi:\\xe2\\x80\\xae esc:\\x1b[31m kept:\\xc3\\xa9\\n')\n"
        "sys.stdout.flush()\n"
        "chunk = b'flood-line\\n' * 6000\n"
        "for i in range(3):\n"
        "    if os.fork() == 0:\n"
        "        break\n"
        "while True:\n"
        "    os.write(1, chunk)\n"))
    m = Master(box, ptyd, script(box, "idle-fcgi", SLEEP))
    try:
        m.wait_log(b"steer raw:")
        time.sleep(1)
        os.kill(m.proc.pid, signal.SIGHUP)
        m.wait_log(b"SIGHUP: reloading", timeout=5)
        t0 = time.monotonic()
        m.wait_log(b"lines not logged (more than 50 a second)", timeout=5)
        time.sleep(1)
        text = m.text()
        line = [l for l in text.split(b"\n") if b"steer raw:" in l][0]
        for bad in (b"\x9b", b"\x1b", b"\xe2\x80\xae"):
            assert bad not in line, line
        assert b"kept:\xc3\xa9" in line, line
        # A burst, then the rate: nowhere near what was written.
        assert text.count(b"flood-line") < 200 + 50 * (
            time.monotonic() - t0 + 5), text.count(b"flood-line")
    finally:
        m.stop()


def keyring():
    """In the master's child, before its exec: a session keyring of our
    own holding a key of root's."""
    if libc.syscall(ctypes.c_long(SYS_KEYCTL),
                    ctypes.c_long(KEYCTL_JOIN_SESSION_KEYRING),
                    ctypes.c_char_p(b"ptyd-pool-test")) < 0:
        os._exit(120)
    secret = b"root-secret-42"
    if libc.syscall(ctypes.c_long(SYS_ADD_KEY), ctypes.c_char_p(b"user"),
                    ctypes.c_char_p(b"ptyd-pool-secret"),
                    ctypes.c_char_p(secret), ctypes.c_long(len(secret)),
                    ctypes.c_long(KEY_SPEC_SESSION_KEYRING)) < 0:
        os._exit(121)


def oom_shield():
    """In the master's child, before its exec: the unit's OOM score."""
    with open("/proc/self/oom_score_adj", "w") as f:
        f.write("-500\n")


def can_shield():
    try:
        subprocess.run(["true"], preexec_fn=oom_shield, check=True)
    except subprocess.SubprocessError:
        return False
    return True


READ_KEY = (
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "kid = libc.syscall(ctypes.c_long(250), ctypes.c_long(10),\n"
    "    ctypes.c_long(-3), ctypes.c_char_p(b'user'),\n"
    "    ctypes.c_char_p(b'ptyd-pool-secret'), ctypes.c_long(0))\n"
    "buf = ctypes.create_string_buffer(64)\n"
    "n = -1 if kid < 0 else libc.syscall(ctypes.c_long(250),\n"
    "    ctypes.c_long(11), ctypes.c_long(kid), buf, ctypes.c_long(64))\n"
    "print('%s key: %s' % (sys.argv[0].rsplit('/', 1)[1],\n"
    "    buf.raw[:n].decode() if n > 0 else 'none'), flush=True)\n"
    "with open('/proc/self/oom_score_adj') as f:\n"
    "    print('%s oom: %s' % (sys.argv[0].rsplit('/', 1)[1],\n"
    "        f.read().strip()), flush=True)\n")


@pytest.mark.deadline(60)
def test_no_key_of_roots_reaches_an_account(box):
    """The session keyring is kept across fork and setuid, and whoever
    possesses it may use its keys, whatever its uid: a master started
    from root's login handed root's keys (a Kerberos KEYRING cache,
    ecryptfs or NFS keys) to every account."""
    pool_file(box)
    m = Master(box, script(box, "key-ptyd", READ_KEY + SLEEP),
               script(box, "key-fcgi", READ_KEY + SLEEP),
               preexec_fn=keyring)
    try:
        m.wait_log(b"key-ptyd oom:")
        m.wait_log(b"key-fcgi oom:")
        text = m.text()
        assert b"root-secret-42" not in text, text[-2000:]
        assert b"key-ptyd key: none" in text, text[-2000:]
        assert b"key-fcgi key: none" in text, text[-2000:]
    finally:
        m.stop()


@pytest.mark.deadline(60)
def test_ptyd_fcgi_does_not_keep_the_units_oom_shield(box):
    """ptyd.fcgi kept the unit's OOMScoreAdjust (-900), which nothing put
    back: memory an account's process could grow that the OOM killer
    spares.  The keeper keeps it, as under ptyd@.service."""
    if not can_shield():
        pytest.skip("no CAP_SYS_RESOURCE here: cannot lower an OOM score")
    pool_file(box)
    m = Master(box, script(box, "key-ptyd", READ_KEY + SLEEP),
               script(box, "key-fcgi", READ_KEY + SLEEP),
               preexec_fn=oom_shield)
    try:
        m.wait_log(b"key-ptyd oom:")
        m.wait_log(b"key-fcgi oom:")
        text = m.text()
        assert b"key-ptyd oom: -500" in text, text[-2000:]
        assert b"key-fcgi oom: 0" in text, text[-2000:]
    finally:
        m.stop()


@pytest.mark.deadline(60)
def test_a_socket_is_never_made_in_a_sticky_folder(box):
    """In a sticky folder (/tmp) the socket, once chowned to the account,
    can be unlinked by it and replaced by a socket or a link of its own
    under the name nginx trusts: such a folder is refused."""
    sticky = os.path.join(box["base"], "sticky")
    os.makedirs(sticky, exist_ok=True)
    os.chmod(sticky, 0o1777)
    sock = os.path.join(sticky, "x.sock")
    pool_file(box, listen=sock)
    m = Master(box, script(box, "idle-ptyd", SLEEP),
               script(box, "idle-fcgi", SLEEP))
    try:
        m.wait_log(("listen: %s must be a folder of root's" % sticky)
                   .encode())
        assert not os.path.exists(sock)
    finally:
        m.stop()
        os.unlink(os.path.join(box["pool"], "x.conf"))


def children_of(pid):
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(d))
            except (FileNotFoundError, ProcessLookupError):
                pass
    return out


@pytest.mark.deadline(60)
def test_ptydctl_pools_cannot_be_hung_or_steered_by_an_account(box):
    """ptydctl --pools read each account's output until the pipe's end,
    with getline (no bound), and copied it raw to root's terminal: an
    account holding its ptydctl's stdout open (/proc/PID/fd/1) hung root's
    command for ever, and its escapes and carriage returns reached root's
    terminal (a line could read as another pool's)."""
    fake = os.path.join(box["base"], "fake-ptyd.sock")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(fake)
    os.chmod(fake, 0o777)
    srv.listen(4)
    conns = []

    def accept():
        try:
            conns.append(srv.accept()[0])
        except OSError:
            pass

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    pool_file(box, extra="socket = %s\ngroup = daemon\n" % fake)
    held = None
    ctl = subprocess.Popen([PTYDCTL,
                            "--pools", "--pool-dir", box["pool"], "health"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: conns, timeout=10, what="the account's ptydctl")
        # As ptyd-pool runs the account: the file's group, not the
        # password database's.
        pid, uid, gid = struct.unpack("3i", conns[0].getsockopt(
            socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
        assert (uid, gid) == (box["pw"].pw_uid,
                              grp.getgrnam("daemon").gr_gid)
        kids = children_of(ctl.pid)
        assert len(kids) == 1, kids
        # What the account can do to its own process: keep its stdout.
        held = os.open("/proc/%d/fd/1" % kids[0], os.O_WRONLY)
        os.write(held, b"\x1b]0;owned\x07\x9b2J\rother: forged\n")
        conns[0].close()
        out, _ = ctl.communicate(timeout=15)
        assert b"\x1b" not in out and b"\r" not in out and \
            b"\x9b" not in out, out
        for line in out.splitlines():
            assert line.startswith(b"x: "), out
        assert b"x: ?]0;owned??2J?other: forged" in out, out
    finally:
        if held is not None:
            os.close(held)
        if ctl.poll() is None:
            ctl.kill()
            ctl.wait()
        srv.close()
        os.unlink(fake)
        os.unlink(os.path.join(box["pool"], "x.conf"))


@pytest.mark.deadline(30)
def test_ptydctl_pools_never_runs_an_account_with_roots_gid(box):
    """ptydctl --pools ran the account with its password database's gid
    whatever the file said, so root's gid 0 when that was the account's
    primary group: a process the account can ptrace.  Like ptyd-pool, it
    takes the file's group and refuses gid 0."""
    pool_file(box, extra="group = root\n")
    try:
        r = subprocess.run([PTYDCTL,
                            "--pools", "--pool-dir", box["pool"], "health"],
                           capture_output=True, timeout=20)
        assert b"x: ptydctl: a pool runs as root's gid never" in r.stdout, r
        assert r.returncode != 0
    finally:
        os.unlink(os.path.join(box["pool"], "x.conf"))
