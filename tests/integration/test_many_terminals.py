"""test_many_terminals.py -- many terminals in one ptyd, and the pty limit (issue 17).

bench/terms/termsbench, reduced (1,000 terminals, 200 with CI's
PTYD_TEST_SCALE=0.1), asserting correctness only, never speed: every terminal
started over ptyd's socket answers its input on a viewer, the mirror holds
one running row for each after the chunked flushes, the reaper ticks and
reaps none of them, and ptyd shuts them all down cleanly.  The figures it
prints are the benchmark's (bench/README.md).

The pty limit, reached cheaply and without touching the machine's own:
ptyd runs in a mount namespace of its own where /dev/pts is a private
devpts instance with max=6.  The start past the sixth is refused with
error 11 (PROTO_ERR_EXHAUSTED: HTTP 503 with Retry-After, test_contract)
and words that name the limit, ptyd stays up, the six keep answering, and
once one is closed a start succeeds again.  Skipped (with the reason) where
unshare or mounting devpts is not allowed.
"""

import os
import shutil
import subprocess
import tempfile
import time

import pytest

from ptyd_stack import BUILDDIR, scale

N_TERMS = scale(1000, 200)


def built(rel, target):
    """The path of a program of the build, made if missing or older than
    its sources (the benches are not in `make all`, and one built against
    an older wire would speak a protocol ptyd refuses)."""
    path = os.path.join(BUILDDIR, rel)
    r = subprocess.run(["make", "-C", BUILDDIR, target],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0 or not os.access(path, os.X_OK):
        pytest.fail("cannot build %s: %s" % (rel, r.stderr[-300:]))
    return path


def test_termsbench_reduced_every_terminal_answers():
    bench = built("bench/terms/termsbench", "bench/terms/termsbench")
    r = subprocess.run([bench, "-n", str(N_TERMS), "--no-raise",
                        "--ptyd", os.path.join(BUILDDIR, "ptyd/ptyd")],
                       capture_output=True, text=True, timeout=240)
    out = r.stdout
    assert r.returncode == 0, out[-2000:] + r.stderr[-2000:]
    assert "check\t%d of %d terminals answered" % (N_TERMS, N_TERMS) in out
    assert "mirror: %d running rows for %d terminals" % (
        N_TERMS, N_TERMS) in out
    assert "result\tok" in out
    # Every band of 500 started (none refused below the limits).
    assert "stopped at" not in out


def ctl(sock, *args, timeout=10):
    return subprocess.run([os.path.join(BUILDDIR, "ptydctl/ptydctl"),
                           "--socket", sock] + list(args),
                          capture_output=True, text=True, timeout=timeout)


def answers(sock, sid, word):
    """Type a line into sid and find its answer in the backlog."""
    r = ctl(sock, "input", sid, "echo %s''%s\n" % (word[:2], word[2:]))
    assert r.returncode == 0, r.stderr
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            r = ctl(sock, "attach", sid, timeout=1)
            out = r.stdout
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b"").decode(errors="replace")
        if word in out.replace(word[:2] + "''", ""):
            return True
        time.sleep(0.2)
    return False


@pytest.fixture
def private_pts():
    """A directory for a ptyd started with a devpts instance of max=6."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare(1) for a private devpts")
    probe = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "--", "sh", "-c",
         "mount -t devpts -o newinstance,max=6 devpts /dev/pts"],
        capture_output=True, text=True, timeout=20)
    if probe.returncode != 0:
        pytest.skip("cannot mount a private devpts here: " +
                    probe.stderr.strip())
    d = tempfile.mkdtemp(prefix="ptyd-pts-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_pty_limit_is_a_clear_refusal_and_the_rest_keep_working(private_pts):
    d = private_pts
    sock = os.path.join(d, "ptyd.sock")
    ptyd = os.path.join(BUILDDIR, "ptyd/ptyd")
    script = ("mount -t devpts -o newinstance,ptmxmode=0666,mode=620,max=6"
              " devpts /dev/pts && mount --bind /dev/pts/ptmx /dev/ptmx &&"
              " exec \"$0\" -f --socket \"$1\" --db \"$2\" --log \"$3\""
              " --shell /bin/sh --max-terminals 50")
    env = dict(os.environ, HOME=d)
    env.pop("ENV", None)
    p = subprocess.Popen(
        ["unshare", "-m", "--propagation", "private", "--", "sh", "-c",
         script, ptyd, sock, os.path.join(d, "ptyd.db"),
         os.path.join(d, "ptyd.log")], env=env)
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(sock) and time.monotonic() < deadline:
            time.sleep(0.05)
        for i in range(6):
            r = ctl(sock, "start", "t%d" % i)
            assert r.returncode == 0, r.stderr
        r = ctl(sock, "start", "t6")
        assert r.returncode == 1
        assert "error 11:" in r.stderr, r.stderr
        assert "no pty available" in r.stderr and "retry later" in r.stderr
        assert "/" not in r.stderr.split("error 11:")[1], "no path"
        assert p.poll() is None, "ptyd must not crash"
        for i in range(6):
            assert answers(sock, "t%d" % i, "ok%d." % i), "t%d" % i
        r = ctl(sock, "health")
        assert r.returncode == 0 and "terminals    6" in r.stdout, r.stdout
        with open(os.path.join(d, "ptyd.log")) as f:
            assert "a limit of the system (kernel.pty.max" in f.read()
        # The limit clears as ptys are given back.
        assert ctl(sock, "close", "t0").returncode == 0
        deadline = time.monotonic() + 10
        while True:
            r = ctl(sock, "start", "t6")
            if r.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert r.returncode == 0, r.stderr
        assert answers(sock, "t6", "ok6.")
    finally:
        p.terminate()
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    assert p.returncode == 0, "ptyd ended badly: %s" % p.returncode
