"""ptyd_stack.py -- the real stack (nginx + ptyd.fcgi + ptyd) for the
integration tests, and the probes the tests use on it.

Owns: picking loopback ports, starting and stopping the stack through
scripts/ptyd-stack in a temporary state directory with a controlled HOME,
reading the SQLite mirror, and /proc probes (is a pid gone, a zombie; fd
and child counts).  Does not own: HTTP (ptyd_http.py) or any assertion
about the contract (the tests).
"""

import os
import re
import shlex
import shutil
import signal
import socket
import sqlite3
import subprocess
import time

from ptyd_http import Client

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "scripts", "ptyd-stack")
BUILDDIR = os.environ.get("PTYD_BUILDDIR") or REPO

# Shells run with no rc file: a machine's own ~/.bashrc can be slow or noisy.
SHELL_ARGS = ["--shell", "/bin/bash", "--shell-arg", "--norc",
              "--shell-arg", "--noprofile", "--shell-arg", "-i"]

# What ASan, LSan and UBSan print when they find something (a sanitizer
# build writes these to the daemons' stderr, which is their log).
SANITIZER_REPORT = re.compile(r"ERROR: (Address|Leak)Sanitizer|"
                              r":\d+:\d+: runtime error: ")

PORT_FIRST = int(os.environ.get("PTYD_TEST_PORT_BASE", "18300"))
PORT_LAST = int(os.environ.get("PTYD_TEST_PORT_LAST", str(PORT_FIRST + 199)))
_ports_used = set()
running_stacks = []     # started and not yet stopped, for failure reports


def scale(n, minimum=1):
    """n scaled by PTYD_TEST_SCALE (default 1: full size), at least
    minimum.  CI may run the long tests reduced; they still assert."""
    s = float(os.environ.get("PTYD_TEST_SCALE", "1"))
    return max(minimum, int(n * s))


def free_port():
    """A loopback port in our range that nobody listens on (probed with
    bind, as nginx binds: with SO_REUSEADDR)."""
    for p in range(PORT_FIRST, PORT_LAST + 1):
        if p in _ports_used:
            continue
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", p))
        except OSError:
            continue
        finally:
            s.close()
        _ports_used.add(p)
        return p
    raise RuntimeError("no free port in %d-%d" % (PORT_FIRST, PORT_LAST))


def wait_for(fn, timeout=5.0, interval=0.05, what=None):
    """Poll fn() until it returns a truthy value (returned) or the deadline
    passes (AssertionError naming what was awaited, a string or a function
    called then, and the last value)."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = fn()
        if last:
            return last
        if time.monotonic() >= deadline:
            if callable(what):
                what = what()
            raise AssertionError("timed out after %.1fs waiting for %s; "
                                 "last value: %r"
                                 % (timeout, what or fn, last))
        time.sleep(interval)


# -- /proc probes ------------------------------------------------------------

def preload_shim(tmp_root, source):
    """Build tests/integration/SOURCE (a .c file) with the machine's cc
    into tmp_root and return the environment that preloads it: LD_PRELOAD,
    and ASAN_OPTIONS so that a sanitizer build accepts a library before its
    runtime."""
    so = os.path.join(tmp_root, os.path.splitext(source)[0] + ".so")
    cc = shlex.split(os.environ.get("CC") or "cc")
    subprocess.run(cc + ["-shared", "-fPIC", "-o", so,
                         os.path.join(REPO, "tests", "integration", source),
                         "-ldl"], check=True, timeout=60)
    asan = os.environ.get("ASAN_OPTIONS")
    asan = (asan + ":" if asan else "") + "verify_asan_link_order=0"
    return ["LD_PRELOAD=" + so, "ASAN_OPTIONS=" + asan]


def proc_state(pid):
    """The State letter of /proc/PID/status, or None if the pid is gone."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for ln in f:
                if ln.startswith("State:"):
                    return ln.split()[1]
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None


def proc_gone(pid):
    """True when pid no longer exists at all (not even as a zombie)."""
    return proc_state(pid) is None


def proc_cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return [a.decode("utf-8", "replace")
                    for a in f.read().split(b"\0") if a]
    except (FileNotFoundError, ProcessLookupError):
        return None


def proc_ppid(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for ln in f:
                if ln.startswith("PPid:"):
                    return int(ln.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None


def all_pids():
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def children_of(pid):
    return [p for p in all_pids() if proc_ppid(p) == pid]


def zombies():
    return [p for p in all_pids() if proc_state(p) == "Z"]


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def fd_numbers(pid):
    try:
        return [int(x) for x in os.listdir("/proc/%d/fd" % pid)]
    except (FileNotFoundError, ProcessLookupError):
        return []


def sanitized(pid):
    """Is the process built with AddressSanitizer?"""
    with open("/proc/%d/maps" % pid) as f:
        return "libasan" in f.read()


def pids_matching(pred):
    out = []
    for p in all_pids():
        cl = proc_cmdline(p)
        if cl and pred(cl):
            out.append(p)
    return out


# -- the stack ---------------------------------------------------------------

class Stack:
    """One running stack on its own port and state directory.

    HOME is a fresh directory under the stack's temp root, so the shells'
    home, the default workspace and the workspace root are ours; the
    environment is the caller's minus any PTYD_* setting (the machine's
    own must not leak in) minus XDG_* (so no default path points outside
    the temp dir).
    """

    def __init__(self, root, name="stack", ptyd_args=(), users=(), env=(),
                 fcgi_args=(), shell_args=True, auth=None,
                 frame_ancestors=None):
        self.root = os.path.join(root, name)
        self.state = os.path.join(self.root, "state")
        self.home = os.path.join(self.root, "home")
        self.name = name
        self.users = dict(u.split(":", 1) for u in users)
        self.ptyd_args = (SHELL_ARGS if shell_args else []) + list(ptyd_args)
        self.user_args = list(users)
        self.env_pairs = list(env)
        self.fcgi_args = list(fcgi_args)
        self.auth = auth        # --auth of ptyd-stack; None: its default
        # --frame-ancestors of ptyd-stack; None: its default, 'self'
        self.frame_ancestors = frame_ancestors
        self.port = None
        self.started = False
        self.extra_pids = []    # processes a test started for this stack
        os.makedirs(self.state, exist_ok=True)
        os.makedirs(self.home, exist_ok=True)
        self.home = os.path.realpath(self.home)
        self.state = os.path.realpath(self.state)

    @property
    def db_path(self):
        return os.path.join(self.state, "ptyd.db")

    def environ(self):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("PTYD_") and not k.startswith("XDG_")}
        env["PTYD_BUILDDIR"] = BUILDDIR
        env["HOME"] = self.home
        env["SHELL"] = "/bin/bash"
        env["LANG"] = "C.UTF-8"
        env.pop("LC_ALL", None)
        env["TMPDIR"] = self.root
        return env

    def _cmd(self, *args):
        return [SCRIPT] + list(args)

    def start(self):
        for attempt in range(3):
            self.port = free_port()
            cmd = self._cmd("start", "--port", str(self.port),
                            "--state", self.state)
            if self.auth is not None:
                cmd += ["--auth", self.auth]
            if self.frame_ancestors is not None:
                cmd += ["--frame-ancestors", self.frame_ancestors]
            for u in self.user_args:
                cmd += ["--user", u]
            for a in self.fcgi_args:
                cmd += ["--fcgi-arg", a]
            for e in self.env_pairs:
                cmd += ["--env", e]
            cmd += ["--"] + self.ptyd_args
            r = subprocess.run(cmd, env=self.environ(), cwd=self.root,
                               stdin=subprocess.DEVNULL, capture_output=True,
                               timeout=60)
            self.started = True
            if self not in running_stacks:
                running_stacks.append(self)
            # Another run on this machine took the port between our probe
            # and nginx's bind: that is no failure of the stack, try the
            # next port.
            if r.returncode != 0 and b"in use" in r.stderr and attempt < 2:
                continue
            break
        if r.returncode != 0:
            raise RuntimeError("ptyd-stack start failed (%d): %s\n%s\n%s"
                               % (r.returncode, " ".join(cmd),
                                  r.stdout.decode(errors="replace"),
                                  r.stderr.decode(errors="replace")))
        return self

    def stop(self):
        """scripts/ptyd-stack stop; whatever it leaves behind (or if it
        hangs) is killed by pid, and the failure is raised after that."""
        if not self.started:
            return
        self.started = False
        if self in running_stacks:
            running_stacks.remove(self)
        t0 = time.monotonic()
        try:
            r = subprocess.run(self._cmd("stop", "--state", self.state),
                               env=self.environ(), cwd=self.root,
                               stdin=subprocess.DEVNULL, capture_output=True,
                               timeout=60)
            self.stop_seconds = time.monotonic() - t0
            if r.returncode != 0:
                raise RuntimeError("ptyd-stack stop exited %d: %s"
                                   % (r.returncode,
                                      r.stderr.decode(errors="replace")))
        finally:
            left = self._kill_leftovers()
        if left:
            raise RuntimeError("ptyd-stack stop left processes running: %r"
                               % left)

    def _kill_leftovers(self):
        """After stop, nothing of this stack may run on: kill by pid what
        we started (relaunched daemons) and anything still naming our
        state directory, so one broken run cannot pollute the next."""
        victims = [p for p in self.extra_pids
                   if proc_state(p) not in (None, "Z")]
        victims += [p for p in pids_matching(
            lambda cl: any(self.state in a for a in cl))
            if proc_state(p) != "Z"]
        left = []
        for p in sorted(set(victims)):
            if p == os.getpid():
                continue
            left.append((p, proc_cmdline(p)))
            try:
                if (proc_cmdline(p) or [""])[0].startswith("nginx: master"):
                    os.kill(p, signal.SIGTERM)   # takes its workers along
                else:
                    os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return left

    def cleanup(self):
        """Stop the stack and remove its directory.  Raises if a sanitizer
        reported in a daemon's log: a worker that ASan ended would
        otherwise be replaced quietly and every test still pass."""
        self.stop()
        reports = self.sanitizer_reports()
        if not os.environ.get("PTYD_TEST_KEEP"):
            shutil.rmtree(self.root, ignore_errors=True)
        if reports:
            raise AssertionError("sanitizer reports in stack %s:\n%s"
                                 % (self.name, "\n".join(reports[:20])))

    def sanitizer_reports(self):
        """The log lines (ptyd, ptyd.fcgi) where a sanitizer reported."""
        return ["%s.log: %s" % (name, line)
                for name in ("ptyd", "fcgi")
                for line in self.log(name).splitlines()
                if SANITIZER_REPORT.search(line)]

    def client(self, user=None, **kw):
        pw = self.users.get(user) if user is not None else None
        return Client(self.port, user=user, password=pw, **kw)

    def log(self, name):
        p = os.path.join(self.state, "log", name + ".log")
        try:
            with open(p, errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def log_tail(self, name, lines=15):
        return "\n".join(self.log(name).splitlines()[-lines:])

    # -- the mirror ----------------------------------------------------------
    def db(self, sql, params=()):
        """Run one read-only query on the mirror; rows as dicts."""
        con = sqlite3.connect(self.db_path, timeout=5)
        try:
            con.row_factory = sqlite3.Row
            con.execute("PRAGMA query_only = 1")
            return [dict(r) for r in con.execute(sql, params).fetchall()]
        finally:
            con.close()

    def db_terminal(self, sid, owner=None):
        """The newest terminals row for session_id (and owner if given)."""
        q = "SELECT * FROM terminals WHERE session_id = ?"
        args = [sid]
        if owner is not None:
            q += " AND owner = ?"
            args.append(owner)
        rows = self.db(q + " ORDER BY id DESC LIMIT 1", args)
        return rows[0] if rows else None

    # -- the daemon ----------------------------------------------------------
    def ptyd_pid(self):
        r = self.client(next(iter(self.users), None)).health()
        if r.status != 200:
            raise AssertionError("health answered %r" % (r,))
        return int(r.json()["ptyd"]["pid"])
