"""test_audit_chain.py -- the audit log against the account's own shells
(issue 29, item 4; DESIGN 7).

A web user behind PTYD_AUTH=front runs shells as the account that owns
ptyd.db.  One read the database's path from /proc/$PPID/cmdline, deleted
and edited its own audit rows under a prune permit, and nothing showed.
Here the same shell, through the API's input, runs sqlite3 on the file;
ptyd sends the chain's head to a datagram socket of the test (the
audit_anchor setting's unix:PATH form, standing in for the system log),
and `ptydctl audit verify --anchors` must name each seq touched.  A
legitimate `ptydctl prune` must verify clean.
"""

import json
import os
import re
import socket
import subprocess
import threading
import time

import pytest

from ptyd_http import Shell
from ptyd_stack import BUILDDIR, wait_for

PTYDCTL = os.path.join(BUILDDIR, "ptydctl", "ptydctl")
ANCHOR = re.compile(r"audit (\w+) db=\S+ (?:seq|through)=(\d+)")


class Anchors:
    """The system log of the test: every datagram ptyd and ptydctl send
    to unix:PATH, kept as lines."""

    def __init__(self, path):
        self.path = path
        self.lines = []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.sock.settimeout(0.2)
        self.stopped = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stopped:
            try:
                self.lines.append(self.sock.recv(65536).decode())
            except socket.timeout:
                continue
            except OSError:
                return

    def close(self):
        self.stopped = True
        self.thread.join(2)
        self.sock.close()

    def file(self, root):
        p = os.path.join(root, "anchors.log")
        with open(p, "w") as f:
            f.write("\n".join(self.lines) + "\n")
        return p

    def heads(self):
        """(kind, seq) of every line so far."""
        out = []
        for ln in self.lines:
            m = ANCHOR.search(ln)
            if m:
                out.append((m.group(1), int(m.group(2))))
        return out

    def wait_covering(self, seq, timeout=15):
        """Until a head anchor names seq or a later one (ptyd sends one at
        most every 5 s while rows are written)."""
        return wait_for(lambda: any(k in ("head", "start", "stop") and
                                    s >= seq for k, s in self.heads()),
                        timeout, what="an anchor covering seq %d (have %r)"
                        % (seq, self.heads()))


@pytest.fixture(scope="module")
def anchored(make_stack, tmp_root):
    path = os.path.join(tmp_root, "audit-anchors.sock")
    anchors = Anchors(path)
    st = make_stack("audit", users=["mallory:pw-m"],
                    env=["PTYD_AUDIT_ANCHOR=unix:" + path])
    st.anchors = anchors
    try:
        yield st
    finally:
        anchors.close()


def verify(st, *extra):
    r = subprocess.run([PTYDCTL, "audit", "verify", "--db", st.db_path,
                        "--anchors", st.anchors.file(st.root)] + list(extra),
                       capture_output=True, timeout=30,
                       env=dict(os.environ, PTYD_AUDIT_ANCHOR="unix:" +
                                st.anchors.path))
    return r


def last_seq(st):
    return st.db("SELECT max(id) AS m FROM terminal_events")[0]["m"]


def make_events(st, c, sid, n):
    for i in range(n):
        assert c.input(sid, "true %d\r" % i).status == 200
    want = n
    wait_for(lambda: len(st.db("SELECT id FROM terminal_events WHERE "
                               "session_id = ? AND kind = 'input'",
                               (sid,))) >= want, 10, what="input events")


def test_shell_deleting_and_editing_its_audit_rows_is_named_by_seq(
        anchored, new_sid):
    st = anchored
    c = st.client("mallory")
    sid = new_sid()
    assert c.start(sid).status == 200
    try:
        make_events(st, c, sid, 4)
        rows = st.db("SELECT id FROM terminal_events WHERE session_id = ?"
                     " AND kind = 'input' ORDER BY id", (sid,))
        victim, edited = rows[0]["id"], rows[1]["id"]
        st.anchors.wait_covering(rows[-1]["id"])
        assert verify(st).returncode == 0, verify(st)
        with Shell(c, sid) as sh:
            # As the attacker did: the path from ptyd's command line or
            # environment is not needed when the shell can guess it; the
            # account can read and write the file either way.
            out = sh.run(
                "sqlite3 %s \"INSERT INTO prune_permit VALUES (1e12);"
                " DELETE FROM terminal_events WHERE id = %d;"
                " DELETE FROM prune_permit;"
                " DROP TRIGGER terminal_events_append_only;"
                " UPDATE terminal_events SET detail = '0 bytes'"
                " WHERE id = %d;\" && echo done"
                % (st.db_path, victim, edited), timeout=20)
            assert b"done" in out, out
        assert not st.db("SELECT id FROM terminal_events WHERE id = ?",
                         (victim,))
        # More rows, so that ptyd's next anchor covers the damage too.
        make_events(st, c, sid, 2)
        st.anchors.wait_covering(last_seq(st))
        r = verify(st)
        text = r.stdout.decode()
        assert r.returncode == 1, text
        assert re.search(r"problem: missing: seq %d\b" % victim, text), text
        assert re.search(r"problem: edited: seq %d\b" % edited, text), text
        assert "verdict: NOT CONSISTENT: first bad seq %d" % victim in text
        j = json.loads(verify(st, "--json").stdout)
        assert j["ok"] is False and j["first_bad_seq"] == victim, j
        assert {(p["kind"], p["seq"]) for p in j["problems"]} >= {
            ("missing", victim), ("edited", edited)}, j
    finally:
        c.close_term(sid)


def test_legitimate_prune_verifies_clean(make_stack, tmp_root, new_sid):
    path = os.path.join(tmp_root, "audit-prune.sock")
    anchors = Anchors(path)
    st = make_stack("audit-prune", users=["alice:pw-a"],
                    env=["PTYD_AUDIT_ANCHOR=unix:" + path])
    st.anchors = anchors
    try:
        c = st.client("alice")
        sid = new_sid()
        assert c.start(sid).status == 200
        make_events(st, c, sid, 3)
        time.sleep(1.1)
        cutoff_seq = last_seq(st)
        r = subprocess.run([PTYDCTL, "prune", "--before", "0", "--db",
                            st.db_path], capture_output=True, timeout=30,
                           env=dict(os.environ,
                                    PTYD_AUDIT_ANCHOR="unix:" + path))
        assert r.returncode == 0, r
        assert b"removed" in r.stdout, r
        wait_for(lambda: ("prune", cutoff_seq) in anchors.heads(), 5,
                 what="the prune anchor (have %r)" % (anchors.heads(),))
        # ptyd goes on writing after the prune's event.
        make_events(st, c, sid, 5)
        anchors.wait_covering(last_seq(st))
        r = verify(st)
        text = r.stdout.decode()
        assert r.returncode == 0, text
        assert "pruned through seq %d" % cutoff_seq in text, text
        assert "tamper" not in st.log("ptyd"), st.log_tail("ptyd")
        c.close_term(sid)
    finally:
        anchors.close()
