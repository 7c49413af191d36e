#!/usr/bin/env python3
"""attack.py -- the adversarial run (DESIGN 9, issue 12): try, in one run,
what an attacker would against a real stack, and print what held.

    tests/attack/attack.py [--viewers N] [--keep] [--only NAME]...

Tries: forged identity headers from a public client (through a trusted
proxy's X-Forwarded-For), with no authentication and behind auth_basic;
a client naming its own, private, address where a private address counts
as local (a line before the proxy's, X-Real-IP twice, a Forwarded or Via
header alone);
another local Unix account (created with useradd, when run as root); an
account of ptyd-pool flooding and steering its master's log and reaching
for root's keyring (as root); a
shell reading the daemons' environment through /proc; a keystroke retried
after ptyd stood still and after a connection cut mid-request; malformed
FastCGI records straight at ptyd.fcgi's socket; and a storm of viewers
that read nothing attached to a full backlog while someone types.

Each line says HELD or BROKEN with what was seen; the exit status is 0
only if everything held.  Real nginx, ptyd.fcgi, ptyd and shells, started
with scripts/ptyd-stack in a temporary directory that is removed at the
end (--keep leaves it), on loopback only; every wait is bounded.
"""

import argparse
import os
import pwd
import resource
import secrets
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))

from fcgi_raw import fcgi_record  # noqa: E402
from ptyd_http import SSE, Shell, marker, raw_status  # noqa: E402
from ptyd_stack import Stack, children_of  # noqa: E402

SECRET = "atk-" + secrets.token_hex(8)
PUBLIC = {"X-Forwarded-For": "203.0.113.9"}
FORGED = [{"Authorization": "Basic bWFsbG9yeTp4"},
          {"Remote-User": "mallory"}, {"X-Remote-User": "mallory"},
          {"X-Forwarded-User": "mallory"}]
OTHER = "ptyd-attack-oth"
POOLACCT = "ptyd-attack-pool"

results = []
only = []          # --only: the attacks to try (all if empty)


def report(name, held, detail):
    results.append((name, held))
    print("%-8s %-22s %s" % ("HELD" if held else "BROKEN", name, detail),
          flush=True)


def attempt(name, fn, *args):
    if only and name not in only:
        return
    try:
        held, detail = fn(*args)
    except Exception as e:          # an attack that crashes the run broke it
        held, detail = False, "error: %r" % (e,)
    report(name, held, detail)


# ---- identity -----------------------------------------------------------------

def forged_identity(st, st_basic):
    seen = []
    for forged in FORGED:
        h = dict(PUBLIC, **forged)
        seen.append(st.client().get("list", headers=h).status)
        seen.append(st.client().post("start", {"session_id": "atk"},
                                     headers=h).status)
        seen.append(st_basic.client().get("list", headers=h).status)
    ok = all(s in (401, 403) for s in seen)
    return ok, "statuses %s" % sorted(set(seen))


def forged_address(st):
    """st trusts forwarded headers and counts a private client as local;
    the loopback peer plays the trusted proxy, whose line comes last."""
    own, proxy = "192.168.1.5", ("X-Forwarded-For", "203.0.113.9")

    def get(*lines):
        return raw_status(st.port, "GET", "/api/terminal/list", list(lines))

    control = get(("X-Forwarded-For", own))
    # (Other spellings of the name: nginx drops them by default;
    # test_front_forwarded sends them through lighttpd, Apache, fcgiwrap.)
    seen = [get(("X-Forwarded-For", own), proxy),
            get(("X-Real-IP", own), ("X-Real-IP", "203.0.113.9")),
            get(("Forwarded", "for=203.0.113.9")),
            get(("Via", "1.1 squid")),
            # A proxy that writes only Forwarded passes the client's own
            # X-Forwarded-For on.
            get(("X-Forwarded-For", own), ("Forwarded", "for=203.0.113.9"))]
    ok = control == 200 and all(s == 403 for s in seen)
    return ok, "a private client alone %d (200 wanted); forged %s" % (
        control, seen)


def other_account(st):
    if os.geteuid() != 0:
        return True, "not tried: needs root to create an account"
    made = False
    try:
        pwd.getpwnam(OTHER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home",
                        "--home-dir", "/nonexistent", OTHER], check=True,
                       capture_output=True, timeout=30)
        made = True
    try:
        code = ("import http.client,json,sys\n"
                "out=[]\n"
                "for m,e,b in (('GET','health',None),('GET','list',None),"
                "('POST','start','{\"session_id\": \"atk-oth\"}')):\n"
                "  c=http.client.HTTPConnection('127.0.0.1',%d,timeout=10)\n"
                "  c.request(m,'/api/terminal/'+e,b,{'Host':'127.0.0.1:%d',"
                "'Content-Type':'application/json'})\n"
                "  out.append(c.getresponse().status)\n"
                "print(json.dumps(out))\n" % (st.port, st.port))
        r = subprocess.run(["runuser", "-u", OTHER, "--", "/usr/bin/python3",
                            "-c", code], capture_output=True, timeout=60)
        seen = r.stdout.decode().strip()
        return seen == "[403, 403, 403]", "as %s: %s%s" % (
            OTHER, seen, r.stderr.decode(errors="replace")[-300:])
    finally:
        if made:
            subprocess.run(["userdel", OTHER], capture_output=True,
                           timeout=30)


# ---- a pool's account against its master (DESIGN 11) -------------------------

POOL_ATTACKER = r"""#!/usr/bin/python3
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
kid = libc.syscall(ctypes.c_long(250), ctypes.c_long(10), ctypes.c_long(-3),
                   ctypes.c_char_p(b"user"), ctypes.c_char_p(b"atk-root-key"),
                   ctypes.c_long(0))
out = sys.stdout.buffer
out.write(b"atk key=%s steer:\x9b2J\xc2\x9b2J\x1b]0;x\x07\xe2\x80\xae\n"
          % (b"found" if kid >= 0 else b"none"))
out.flush()
for i in range(3):
    if os.fork() == 0:
        break
chunk = b"atk-flood\n" * 6000
while True:
    os.write(1, chunk)
"""


def pool_root_key():
    """Before the master's exec: a session keyring holding a key of
    root's, as a master started from root's login would have."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall(ctypes.c_long(250), ctypes.c_long(1),
                 ctypes.c_char_p(b"atk"))
    libc.syscall(ctypes.c_long(248), ctypes.c_char_p(b"user"),
                 ctypes.c_char_p(b"atk-root-key"), ctypes.c_char_p(b"s"),
                 ctypes.c_long(1), ctypes.c_long(-3))


def pool_account(st, root):
    """An account of ptyd-pool whose processes read root's keyring,
    write escapes and flood their pipe: the master must log '?' for the
    escapes, at most its rate, go on answering signals, and have handed
    on no key of root's."""
    if os.geteuid() != 0 or os.uname().machine != "x86_64":
        return True, "not tried: needs root (and x86_64's syscalls)"
    base = tempfile.mkdtemp(prefix="pool-", dir=root)
    made = master = None
    try:
        try:
            pwd.getpwnam(POOLACCT)
        except KeyError:
            subprocess.run(["useradd", "--system", "--no-create-home",
                            "--home-dir", "/nonexistent", POOLACCT],
                           check=True, capture_output=True, timeout=30)
            made = True
        for d in ("", "pool.d", "run"):
            os.makedirs(os.path.join(base, d), exist_ok=True)
            os.chmod(os.path.join(base, d), 0o755)
        os.chmod(root, 0o711)   # the account runs base/attacker
        prog = os.path.join(base, "attacker")
        with open(prog, "w") as f:
            f.write(POOL_ATTACKER)
        os.chmod(prog, 0o755)
        with open(os.path.join(base, "pool.d", "atk.conf"), "w") as f:
            f.write("user = %s\nlisten = %s/run/atk.sock\n"
                    "state_dir = %s/state\n" % (POOLACCT, base, base))
        os.chmod(os.path.join(base, "pool.d", "atk.conf"), 0o644)
        log = os.path.join(base, "pool.log")
        with open(log, "wb") as lf:
            master = subprocess.Popen(
                [os.path.join(st.environ()["PTYD_BUILDDIR"], "pool",
                              "ptyd-pool"), "-d",
                 os.path.join(base, "pool.d"), "--ptyd", prog, "--fcgi",
                 prog], stdout=lf, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
                env={"PATH": "/usr/bin:/bin"}, preexec_fn=pool_root_key)
        time.sleep(3)
        os.kill(master.pid, signal.SIGHUP)
        time.sleep(2)
        with open(log, "rb") as f:
            text = f.read()
        keys = text.count(b"atk key=found")
        steer = [l for l in text.split(b"\n") if b"steer:" in l]
        raw = sum(1 for l in steer for b in (b"\x9b", b"\x1b", b"\xe2\x80\xae")
                  if b in l)
        flood = text.count(b"atk-flood")
        heard = b"SIGHUP: reloading" in text
        ok = keys == 0 and steer and raw == 0 and flood < 2000 and heard
        return ok, ("root's key reached %d process(es); %d escape(s) "
                    "logged raw; %d flood lines logged in 5 s; SIGHUP %s"
                    % (keys, raw, flood, "heard" if heard else "lost"))
    finally:
        if master is not None:
            master.terminate()
            try:
                master.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(master.pid, signal.SIGKILL)
        uid = pwd.getpwnam(POOLACCT).pw_uid if made else None
        for _ in range(50 if uid is not None else 0):
            left = []
            for d in os.listdir("/proc"):
                try:
                    if d.isdigit() and os.stat("/proc/" + d).st_uid == uid:
                        left.append(int(d))
                except FileNotFoundError:
                    pass
            if not left:
                break
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)
        if made:
            subprocess.run(["userdel", POOLACCT], capture_output=True,
                           timeout=30)


# ---- isolation ----------------------------------------------------------------

def proc_read(st):
    c = st.client()
    sid = "atk-proc-" + secrets.token_hex(3)
    assert c.start(sid).status == 200
    fcgi = int(open(os.path.join(st.state, "run", "fcgi.pid")).read())
    targets = [fcgi] + children_of(fcgi) + [st.ptyd_pid()]
    try:
        with Shell(c, sid) as sh:
            # Every ancestor of the shell, and both daemons.
            out = sh.run("p=$$; while [ \"$p\" -gt 1 ]; do "
                         "cat /proc/$p/environ /proc/$p/cmdline; "
                         "p=$(cut -d' ' -f4 /proc/$p/stat); done "
                         "2>/dev/null | tr '\\0' '\\n' | grep -c %s; "
                         "for p in %s; do cat /proc/$p/environ; done "
                         "2>/dev/null | tr '\\0' '\\n' | grep -c %s"
                         % (SECRET, " ".join(map(str, targets)), SECRET),
                         timeout=20)
    finally:
        c.close_term(sid)
    counts = [int(x) for x in out.split() if x.strip().isdigit()]
    return counts == [0, 0], "lines with the secret (ancestors, " \
        "daemons): %s" % counts


# ---- exactly once -------------------------------------------------------------


def retry_after_stop(st):
    c = st.client()
    sid = "atk-once-" + secrets.token_hex(3)
    assert c.start(sid).status == 200
    pid = st.ptyd_pid()
    try:
        with Shell(c, sid) as sh:
            sh.run("true")
            cmd, want = marker()
            iid = "atk:" + secrets.token_hex(4)
            os.kill(pid, signal.SIGSTOP)
            try:
                r1 = c.post("input", {"session_id": sid, "data": cmd,
                                      "input_id": iid}, timeout=30)
            finally:
                os.kill(pid, signal.SIGCONT)
            r2 = c.post("input", {"session_id": sid, "data": cmd,
                                  "input_id": iid})
            n = sh.settled_count(want)
    finally:
        c.close_term(sid)
    return n == 1 and r2.status == 200, \
        "first answer %d, retry %d %s, ran %d time(s)" % (
            r1.status, r2.status, r2.body[:60], n)


def retry_after_cut(st):
    c = st.client()
    sid = "atk-cut-" + secrets.token_hex(3)
    assert c.start(sid).status == 200
    try:
        with Shell(c, sid) as sh:
            sh.run("true")
            cmd, want = marker()
            iid = "atk:" + secrets.token_hex(4)
            c.post_and_cut("input", {"session_id": sid, "data": cmd,
                                     "input_id": iid})
            time.sleep(0.2)
            r = c.post("input", {"session_id": sid, "data": cmd,
                                 "input_id": iid})
            n = sh.settled_count(want)
    finally:
        c.close_term(sid)
    return n == 1 and r.status == 200, "retry %d %s, ran %d time(s)" % (
        r.status, r.body[:60], n)


# ---- malformed FastCGI ------------------------------------------------------

def malformed_records(st, n=50):
    sock = os.path.join(st.state, "run", "fcgi.sock")
    fcgi = int(open(os.path.join(st.state, "run", "fcgi.pid")).read())
    before = sorted(children_of(fcgi))
    c = st.client()
    sid = "atk-fcgi-" + secrets.token_hex(3)
    assert c.start(sid).status == 200
    begin = fcgi_record(1, struct.pack(">HB5x", 1, 0))
    shapes = [
        # PARAMS content claims more than the record holds
        begin + struct.pack(">BBHHBB", 1, 4, 1, 200, 0, 0) + b"\x05\x05ab",
        # name and value lengths whose sum passes 2^31
        begin + fcgi_record(4, struct.pack(">II", 0xC0000000, 0xC0000000)
                            + b"x" * 16) + fcgi_record(4, b""),
        # a 4-byte length far beyond the stream
        begin + fcgi_record(4, struct.pack(">BI", 3, 0xFFFFFFFF) + b"abc")
        + fcgi_record(4, b""),
        # garbage
        os.urandom(64),
        # a truncated header
        b"\x01\x04\x00",
    ]
    sent = 0
    for i in range(n):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        try:
            s.connect(sock)
            s.sendall(shapes[i % len(shapes)])
            s.shutdown(socket.SHUT_WR)
            try:
                s.recv(4096)
            except OSError:
                pass
            sent += 1
        except OSError:
            pass
        finally:
            s.close()
    try:
        with Shell(c, sid) as sh:
            out = sh.run("echo still-$((40+2))", timeout=20)
        alive = out.endswith(b"still-42")
    except Exception:
        alive = False
    finally:
        c.close_term(sid)
    after = sorted(children_of(fcgi))
    ok = alive and after == before
    return ok, "%d bad connections; workers %s; stream alive %s" % (
        sent, "unchanged" if after == before else
        "%s -> %s" % (before, after), alive)


# ---- the audit log, from the account's own shells (issue 29, item 4) ----------

def audit_anchors_until(rx, lines, seq, timeout=15):
    """Read the anchor datagrams into lines until one covers seq (ptyd
    sends its head at most every 5 s while rows are written)."""
    import re
    pattern = re.compile(r"audit (head|start|stop) db=\S+ seq=(\d+)")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            lines.append(rx.recv(4096).decode(errors="replace"))
        except socket.timeout:
            pass
        if any(int(m.group(2)) >= seq for m in
               (pattern.search(x) for x in lines) if m):
            return True
    return False


def audit_erase(root):
    """Under PTYD_AUTH=front every web user's shell runs as the account
    that owns ptyd.db.  The shell finds the file through ptyd's command
    line, deletes one of its own input events under a prune permit, drops
    the UPDATE trigger and edits another.  HELD: ptydctl audit verify,
    given the anchors ptyd sent out (a datagram socket stands in for the
    system log), fails and names both seqs."""
    import json
    sockp = os.path.join(root, "audit-anchors.sock")
    rx = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    rx.bind(sockp)
    rx.settimeout(0.2)
    lines = []
    st = Stack(root, "attack-audit", users=["mallory:pw-m"],
               env=["PTYD_AUDIT_ANCHOR=unix:" + sockp]).start()
    sid = "atk-audit-" + secrets.token_hex(3)
    try:
        c = st.client("mallory")
        assert c.start(sid).status == 200
        with Shell(c, sid) as sh:
            for i in range(4):
                sh.run("true %d" % i)
            time.sleep(1.5)     # the mirror writes once a second
            ids = [r["id"] for r in st.db(
                "SELECT id FROM terminal_events WHERE session_id = ? AND"
                " kind = 'input' ORDER BY id", (sid,))]
            audit_anchors_until(rx, lines, ids[-1])
            gone, edited = ids[0], ids[1]
            sh.run("conf=$(tr '\\0' '\\n' </proc/$PPID/cmdline | "
                   "grep -A1 -x -- --config | tail -n 1); "
                   "db=$(sed -n 's/^db *= *//p' \"$conf\" | tr -d '\"'); "
                   "db=${db:-$(dirname \"$conf\")/ptyd.db}; "
                   "sqlite3 \"$db\" \"INSERT INTO prune_permit VALUES (1e12);"
                   " DELETE FROM terminal_events WHERE id = %d;"
                   " DELETE FROM prune_permit;"
                   " DROP TRIGGER terminal_events_append_only;"
                   " UPDATE terminal_events SET detail = '1 bytes'"
                   " WHERE id = %d;\"" % (gone, edited), timeout=20)
            sh.run("true after")
            time.sleep(1.5)
        last = st.db("SELECT max(id) AS m FROM terminal_events")[0]["m"]
        audit_anchors_until(rx, lines, last)
        anchors = os.path.join(root, "audit-anchors.log")
        with open(anchors, "w") as f:
            f.write("\n".join(lines) + "\n")
        r = subprocess.run([os.path.join(st.environ()["PTYD_BUILDDIR"],
                                         "ptydctl", "ptydctl"),
                            "audit", "verify", "--db", st.db_path,
                            "--anchors", anchors, "--json"],
                           capture_output=True, timeout=30)
        try:
            v = json.loads(r.stdout)
        except ValueError:
            return False, "verify said %r %r" % (r.stdout[-200:],
                                                 r.stderr[-200:])
        named = {(p["kind"], p["seq"]) for p in v["problems"]}
        held = (r.returncode == 1 and ("missing", gone) in named and
                ("edited", edited) in named)
        return held, "deleted seq %d, edited seq %d; verify exit %d, " \
            "first bad seq %s, problems %s" % (
                gone, edited, r.returncode, v.get("first_bad_seq"),
                sorted(named))
    finally:
        try:
            st.client("mallory").close_term(sid)
        except Exception:
            pass
        st.stop()
        rx.close()


# ---- the backlog storm ----------------------------------------------------------

def pctl(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def measure(c, sid, n):
    keys, health = [], []
    for i in range(n):
        t = time.monotonic()
        r = c.input(sid, "x")
        keys.append(time.monotonic() - t)
        assert r.status == 200, r
        if i % 4 == 0:
            t = time.monotonic()
            assert c.health().status == 200
            health.append(time.monotonic() - t)
    return keys, health


def storm(st, viewers):
    c = st.client(keepalive=False)
    big, typ = "atk-big-" + secrets.token_hex(3), "atk-typ-" + \
        secrets.token_hex(3)
    assert c.start(big).status == 200 and c.start(typ).status == 200
    held = []
    try:
        # A full 1 MiB backlog.
        with Shell(c, big) as sh:
            sh.run("head -c 1200000 /dev/zero | tr '\\0' y | fold -w 100",
                   timeout=60)
        c.input(typ, "stty -echo; cat >/dev/null\r")
        k0, h0 = measure(c, typ, 200)
        for _ in range(viewers):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect(("127.0.0.1", st.port))
            s.sendall(b"GET /api/terminal/output?session_id=%s HTTP/1.1\r\n"
                      b"Host: 127.0.0.1:%d\r\n\r\n"
                      % (big.encode(), st.port))
            held.append(s)
        time.sleep(1)
        k1, h1 = measure(c, typ, 200)
    finally:
        for s in held:
            s.close()
        c.close_term(big)
        c.close_term(typ)
    kp99, hp99 = pctl(k1, 0.99) * 1e3, pctl(h1, 0.99) * 1e3
    ok = kp99 < 50 and hp99 < 100
    return ok, ("keystroke p50/p99 %.1f/%.1f ms (0 viewers %.1f/%.1f), "
                "health p50/p99 %.1f/%.1f ms (0 viewers %.1f/%.1f), "
                "%d stalled viewers" % (
                    statistics.median(k1) * 1e3, kp99,
                    statistics.median(k0) * 1e3, pctl(k0, 0.99) * 1e3,
                    statistics.median(h1) * 1e3, hp99,
                    statistics.median(h0) * 1e3, pctl(h0, 0.99) * 1e3,
                    viewers))


# ---- the operator's metrics -----------------------------------------------------

def metrics_to_users(st_basic):
    """A web user of a shared account reads every user's counters."""
    r = st_basic.client("alice").get("metrics")
    return r.status == 403, "GET metrics as web user alice: %d" % r.status


# ---- hostile output ----------------------------------------------------------

# Output whose cost to the screen emulator is out of all proportion to its
# bytes (issue 29): each sequence is what one terminal prints, repeated to
# 600 kB; ESC # 8 once cost ptyd seconds per attach=screen and per resize.
HOSTILE = [
    ("DECALN", b"\033#8"),
    ("margins", b"\033[?69h\033[2;79s\033[1;24r\033[24H\n"),
    ("REP", b"x\033[65535b\r"),
    ("IL/DL", b"\033[1;24r\033[2H\033[99L\033[99M"),
    # A run of combining marks: libvterm scans it whole for each new one.
    ("U+0301", "\u0301".encode()),
    ("U+0301 SGR", "\u0301\033[m".encode()),
]


def hostile_churn(st, sid, stop, counts):
    """attach=screen to sid and resize it (past 65,536 cells and back, which
    forced a rebuild), in a loop until stop is set."""
    c = st.client(keepalive=False)
    sizes = [(24, 80), (300, 300), (40, 120), (24, 80)]
    i = 0
    while not stop.is_set():
        try:
            with SSE(st.port, sid, query={"attach": "screen"},
                     timeout=30) as s:
                s.next_event(timeout=30)
            counts["attach"] += 1
            rows, cols = sizes[i % len(sizes)]
            c.resize(sid, rows=rows, cols=cols)
            counts["resize"] += 1
        except Exception as e:     # counted, the verdict is the echo's
            counts["errors"].append(repr(e))
        i += 1


def hostile_output(st, root):
    """Another terminal's keystrokes stay fast while the worst output is
    attached with attach=screen and resized in a loop."""
    c = st.client(keepalive=False)
    typ = "atk-echo-" + secrets.token_hex(3)
    assert c.start(typ).status == 200
    c.input(typ, "stty -echo; cat >/dev/null\r")
    k0, _ = measure(c, typ, 100)
    worst, seen = 0.0, []
    try:
        for name, seq in HOSTILE:
            bad = "atk-bad-" + secrets.token_hex(3)
            assert c.start(bad).status == 200
            path = os.path.join(root, "hostile-" + secrets.token_hex(3))
            with open(path, "wb") as f:
                f.write(seq * ((600 * 1024) // len(seq)))
            os.chmod(path, 0o644)
            with Shell(c, bad) as sh:
                sh.run("cat %s; printf '\\033[r\\033[?69l'" % path,
                       timeout=120)
            stop = threading.Event()
            counts = {"attach": 0, "resize": 0, "errors": []}
            th = threading.Thread(target=hostile_churn,
                                  args=(st, bad, stop, counts))
            th.start()
            try:
                time.sleep(0.5)
                k1, _ = measure(c, typ, 200)
            finally:
                stop.set()
                th.join(60)
            c.close_term(bad)
            p99 = pctl(k1, 0.99) * 1e3
            worst = max(worst, p99)
            seen.append("%s p99 %.1f ms (%d attaches, %d resizes%s)" % (
                name, p99, counts["attach"], counts["resize"],
                ", %d errors: %s" % (len(counts["errors"]),
                                     counts["errors"][0])
                if counts["errors"] else ""))
            if counts["attach"] == 0 or counts["errors"]:
                worst = max(worst, 1e9)
    finally:
        c.close_term(typ)
    return worst < 50, ("another terminal's keystroke p99: %s; quiet p99 "
                        "%.1f ms" % ("; ".join(seen),
                                     pctl(k0, 0.99) * 1e3))
# ---- the page: framing and pastes (issue 29) ------------------------------------

REPO = os.path.dirname(os.path.dirname(HERE))
# What xterm.js makes of a paste when the program asked for bracketing.
BRACKET = "\x1b[200~%s\x1b[201~"


def frame_rule(headers):
    """(ok, what it says): only this origin may frame the answer."""
    csp = headers.get("content-security-policy", "")
    xfo = headers.get("x-frame-options", "")
    return ("frame-ancestors 'self'" in csp and xfo == "SAMEORIGIN",
            "%r/%r" % (csp[-40:], xfo))


def framing(st):
    """A page of another origin framed the terminal at opacity 0.01 and
    the visitor's click ran in their shell.  The page and every kind of
    API answer must say only this origin may frame them (a browser obeys:
    tests/browser/security.mjs), and the page may run only its own
    scripts."""
    c = st.client()
    sid = "atk-frame-" + secrets.token_hex(3)
    seen = {"page": c.request("GET", "/").headers,
            "list": c.get("list").headers,
            "405": c.get("start").headers}
    if c.start(sid).status == 200:
        s = c.stream(sid)
        seen["stream"] = s.headers
        s.close()
        c.close_term(sid)
    bad = ["%s %s" % (k, frame_rule(h)[1]) for k, h in seen.items()
           if not frame_rule(h)[0]]
    script = [d for d in seen["page"].get("content-security-policy",
                                          "").split(";")
              if d.strip().startswith("script-src")]
    if script != [" script-src 'self'"]:
        bad.append("page script-src %r" % (script,))
    return not bad and "stream" in seen, (
        "not framed: %s" % ", ".join(seen) if not bad else "; ".join(bad))


def sanitize_paste(node, text):
    """web/paste.mjs's sanitizePaste(text), run by node."""
    import json     # (here: this section stays whole for a merge by hand)
    code = ("import { sanitizePaste } from %s;\n"
            "let t = ''; process.stdin.setEncoding('utf8');\n"
            "process.stdin.on('data', (d) => { t += d; });\n"
            "process.stdin.on('end', () => process.stdout.write("
            "JSON.stringify(sanitizePaste(t))));\n"
            % json.dumps("file://" + os.path.join(REPO, "web", "paste.mjs")))
    r = subprocess.run([node, "--input-type=module", "-e", code],
                       input=text.encode(), capture_output=True, timeout=30)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.decode(errors="replace")[-300:])
    return json.loads(r.stdout.decode())


def paste_escape(st):
    """Clipboard text with an ESC[201~ inside ended xterm.js's bracket,
    and "echo harmless ESC[201~ ^U touch X CR" ran touch X.  What the
    page's sanitiser leaves, bracketed as xterm.js does, must run nothing
    in a real bash; the raw text, bracketed, shows the attack is real."""
    node = shutil.which("node")
    if node is None:
        return True, "not tried: needs node"
    tag = secrets.token_hex(4)
    x, control = ("/tmp/ptyd-attack-paste-%s-%s" % (tag, n)
                  for n in ("X", "control"))
    clean = sanitize_paste(node, "echo harmless \x1b[201~\x15touch %s\r"
                           % x)
    left = sorted({"U+%04X" % ord(ch) for ch in clean
                   if (ord(ch) < 0x20 and ch not in "\t\n\r")
                   or 0x7f <= ord(ch) <= 0x9f})
    c = st.client()
    sid = "atk-paste-" + tag
    try:
        if c.start(sid).status != 200:
            return False, "no terminal"
        with Shell(c, sid) as sh:
            sh.run("true")
            sh.send(BRACKET % clean)
            sh.send("\r")
            sh.run("true")
            ran = os.path.exists(x)
            sh.send(BRACKET % ("echo harmless \x1b[201~\x15touch %s\r"
                               % control))
            sh.send("\r")
            sh.run("true")
            real = os.path.exists(control)
        c.close_term(sid)
    finally:
        for f in (x, control):
            if os.path.exists(f):
                os.unlink(f)
    return not ran and not left, (
        "sanitised %r: %s; unsanitised: %s" % (
            clean.replace(x, "X"),
            "ran touch" if ran else "ran nothing",
            "ran touch (the attack is real here)" if real else
            "ran nothing"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--viewers", type=int, default=1000)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--only", action="append", default=[], metavar="NAME",
                    help="try only this attack (as its line names it)")
    a = ap.parse_args()
    only.extend(a.only)

    # Every stalled viewer is a socket of ours.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, max(soft, a.viewers + 512))
    if want > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))

    root = tempfile.mkdtemp(prefix="ptyd-attack-", dir="/tmp")
    stacks = []

    def stop(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, stop)
    try:
        st = Stack(root, "attack", env=[
            "PTYD_TRUST_FORWARDED_FOR=1", "PTYD_TEST_SECRET=" + SECRET,
            "AWS_SECRET_ACCESS_KEY=" + SECRET]).start()
        stacks.append(st)
        stb = Stack(root, "attack-basic", users=["alice:pw-alice"],
                    env=["PTYD_TRUST_FORWARDED_FOR=1"]).start()
        stacks.append(stb)
        sta = Stack(root, "attack-address", env=[
            "PTYD_TRUST_FORWARDED_FOR=1", "PTYD_LOCAL=address"]).start()
        stacks.append(sta)
        attempt("forged identity", forged_identity, st, stb)
        attempt("forged address", forged_address, sta)
        attempt("another account", other_account, st)
        attempt("/proc of the daemons", proc_read, st)
        attempt("retry after a stop", retry_after_stop, st)
        attempt("retry after a cut", retry_after_cut, st)
        attempt("malformed FastCGI", malformed_records, st)
        attempt("framing", framing, st)
        attempt("paste escape", paste_escape, st)
        attempt("backlog storm", storm, st, a.viewers)
        attempt("hostile output", hostile_output, st, root)
        attempt("metrics to a web user", metrics_to_users, stb)
        attempt("audit log erased", audit_erase, root)
        attempt("a pool's account", pool_account, st, root)
    finally:
        for s in reversed(stacks):
            try:
                s.stop()
            except Exception as e:
                print("stopping %s: %r" % (s.name, e), file=sys.stderr)
        if a.keep:
            print("kept %s" % root)
        else:
            shutil.rmtree(root, ignore_errors=True)
    broken = [n for n, ok in results if not ok]
    print("%d held, %d broken" % (len(results) - len(broken), len(broken)))
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
