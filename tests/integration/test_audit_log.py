"""test_audit_log.py -- every audit event as one line for the fleet's log
pipeline (issue 34; DESIGN 7, the audit_log setting).

A real stack with `audit_log = unix:PATH` (the syslog line, to a datagram
socket of the test's own standing in for /dev/log) and the chain's anchors
to the same socket, as both would share the system log.  A user whose
name and workspace are hostile (quotes, spaces, a whole anchor line)
starts a terminal, types, closes it.  Every row of terminal_events must
arrive exactly once, with its seq, kind, terminal, owner and actor, as a
line of exactly the eight fields; and `ptydctl audit verify --anchors`
over that whole log must still say the chain is consistent: no line of
the audit log reads as an anchor.
"""

import os
import re
import subprocess

import pytest

from ptyd_stack import BUILDDIR, wait_for
from test_audit_chain import Anchors

PTYDCTL = os.path.join(BUILDDIR, "ptydctl", "ptydctl")
HASH0 = "0" * 64
# The user: quotes and a forged field (ptyd-stack allows no space).
USER = 'ev"il"owner="root'
LINE = re.compile(r'^<(\d+)>\w{3} [ \d]\d \d\d:\d\d:\d\d '
                  r'ptyd-audit-log\[(\d+)\]: (.*)$', re.S)
FIELD = re.compile(r'(\w+)=(-|"(?:[^"\\]|\\.)*"|[^ "]+)(?: |$)')
ORDER = ["seq", "event", "terminal", "session", "owner", "actor", "at",
         "detail"]


class SysLog(Anchors):
    """Every datagram sent to the socket, as text (test_audit_chain's
    system log of the test)."""

    def audit_lines(self):
        return [ln for ln in self.lines if "ptyd-audit-log[" in ln]


def unquote(v):
    if v == "-":
        return None
    if not v.startswith('"'):
        return v
    out, i, s = bytearray(), 1, v[:-1]
    while i < len(s):
        if s[i] == "\\" and s[i + 1] == "x":
            out.append(int(s[i + 2:i + 4], 16))
            i += 4
        elif s[i] == "\\":
            out += s[i + 1].encode()
            i += 2
        else:
            out += s[i].encode()
            i += 1
    return out.decode()


def parse(line):
    """A line's fields, in order; asserts the whole line is fields."""
    m = LINE.match(line)
    assert m, line
    assert int(m.group(1)) == (10 << 3) | 6, line   # authpriv.info
    text, pos, fields = m.group(3), 0, []
    while pos < len(text):
        f = FIELD.match(text, pos)
        assert f and f.start() == pos, (text, pos)
        fields.append((f.group(1), unquote(f.group(2))))
        pos = f.end()
    assert [k for k, _ in fields] == ORDER, text
    assert "\n" not in text
    return dict(fields)


@pytest.fixture(scope="module")
def logged(make_stack, tmp_root):
    path = os.path.join(tmp_root, "audit-log.sock")
    log = SysLog(path)
    st = make_stack("auditlog", users=[USER + ":pw-e"],
                    env=["PTYD_AUDIT_LOG=unix:" + path,
                         "PTYD_AUDIT_ANCHOR=unix:" + path])
    st.syslog = log
    try:
        yield st
    finally:
        log.close()


def test_every_row_is_one_line_and_no_line_is_an_anchor(logged, new_sid):
    st = logged
    c = st.client(USER)
    sid = new_sid()
    # A workspace whose path says, after a quote, a whole anchor of this
    # very database (seq 1, a wrong hash): were it read as one, verify
    # would report a mismatch.
    forged = os.path.join(
        st.home, 'x" audit head db=' + st.db_path.lstrip("/"))
    ws = forged.replace("ptyd.db", "ptyd.db seq=1 hash=%s found=x" % HASH0)
    ws = ws.replace('db=', 'db=/', 1)
    os.makedirs(ws)
    r = c.start(sid, workspace=ws)
    assert r.status == 200, r.body
    for i in range(2):
        assert c.input(sid, "true %d\r" % i).status == 200
    assert c.close_term(sid).status == 200
    wait_for(lambda: st.db("SELECT count(*) AS n FROM terminal_events"
                           " WHERE session_id = ? AND kind = 'close'",
                           (sid,))[0]["n"] == 1, 15, what="the close row")
    rows = st.db("SELECT e.id, e.kind, e.terminal_id, e.session_id,"
                 " e.actor, e.detail, e.at, t.owner FROM terminal_events e"
                 " LEFT JOIN terminals t ON t.id = e.terminal_id"
                 " ORDER BY e.id")
    top = rows[-1]["id"]
    wait_for(lambda: any(parse(ln)["seq"] == str(top)
                         for ln in st.syslog.audit_lines()),
             10, what="the line of seq %d" % top)
    lines = [parse(ln) for ln in st.syslog.audit_lines()]
    seqs = [int(f["seq"]) for f in lines]
    assert len(seqs) == len(set(seqs)), "a row sent twice: %r" % seqs
    by_seq = {int(f["seq"]): f for f in lines}
    assert sorted(by_seq) == [r["id"] for r in rows]
    kinds = set()
    for r in rows:
        f = by_seq[r["id"]]
        kinds.add(r["kind"])
        assert f["event"] == r["kind"]
        assert f["terminal"] == (str(r["terminal_id"])
                                 if r["terminal_id"] else None)
        assert f["session"] == r["session_id"]
        assert f["actor"] == r["actor"]
        assert f["detail"] == r["detail"]
        assert abs(float(f["at"]) - r["at"]) < 1e-5
        if r["session_id"] == sid:
            assert f["owner"] == r["owner"]
    assert {"start", "input", "close"} <= kinds, kinds
    start = by_seq[[r["id"] for r in rows if r["kind"] == "start"
                    and r["session_id"] == sid][0]]
    assert start["actor"].startswith(USER + "@"), start
    assert ws in start["detail"]
    # The whole system log, anchors and audit lines mixed, verifies.
    anchors = os.path.join(st.root, "syslog.log")
    wait_for(lambda: any(re.search(r"audit (head|start) db=\S+ seq=%d "
                                   % top, ln) for ln in st.syslog.lines),
             15, what="an anchor covering seq %d" % top)
    with open(anchors, "w") as f:
        f.write("\n".join(st.syslog.lines) + "\n")
    v = subprocess.run([PTYDCTL, "audit", "verify", "--db", st.db_path,
                        "--anchors", anchors], capture_output=True,
                       timeout=30, env=dict(os.environ,
                                            PTYD_AUDIT_ANCHOR="none"))
    assert v.returncode == 0, v.stdout.decode() + v.stderr.decode()


def stats(st):
    r = subprocess.run([PTYDCTL, "--socket",
                        os.path.join(st.state, "run", "ptyd.sock"), "stats"],
                       capture_output=True, timeout=30)
    assert r.returncode == 0, r
    return dict(ln.split(None, 1) for ln in r.stdout.decode().splitlines()
                if " " in ln)


def test_lines_sent_are_counted(logged, new_sid):
    st = logged
    c = st.client(USER)
    sid = new_sid()
    assert c.start(sid).status == 200
    assert c.close_term(sid).status == 200
    wait_for(lambda: int(stats(st)["audit_lines_sent"]) > 0
             and int(stats(st)["audit_lines_sent"])
             == len(st.syslog.audit_lines()), 15,
             what="the lines counted as they arrive")
    assert stats(st)["audit_lines_lost"] == "0"


def test_lines_nobody_reads_are_counted_lost(make_stack, tmp_root, new_sid):
    """No reader on the socket: every line is lost, none waited for, and
    the count says so where an operator looks (stats, metrics)."""
    path = os.path.join(tmp_root, "nobody-reads.sock")
    st = make_stack("auditlost", users=[USER + ":pw-e"],
                    env=["PTYD_AUDIT_LOG=unix:" + path])
    c = st.client(USER)
    sid = new_sid()
    assert c.start(sid).status == 200
    assert c.close_term(sid).status == 200
    wait_for(lambda: int(stats(st)["audit_lines_lost"]) >= 2, 15,
             what="the start and close lines counted lost")
    assert stats(st)["audit_lines_sent"] == "0"


def test_a_prune_by_ptydctl_is_a_line_too(logged, new_sid):
    """ptydctl prune writes its event itself, not through ptyd: it sends
    that event's line as ptyd sends the others'."""
    st = logged
    c = st.client(USER)
    sid = new_sid()
    assert c.start(sid).status == 200
    assert c.close_term(sid).status == 200
    wait_for(lambda: st.db("SELECT count(*) AS n FROM terminal_events"
                           " WHERE session_id = ? AND kind = 'close'",
                           (sid,))[0]["n"] == 1, 15, what="the close row")
    r = subprocess.run([PTYDCTL, "prune", "--db", st.db_path,
                        "--before", "0"], capture_output=True, timeout=30,
                       env=dict(os.environ, PTYD_AUDIT_LOG="unix:"
                                + st.syslog.path,
                                PTYD_AUDIT_ANCHOR="none"))
    assert r.returncode == 0, r
    row = st.db("SELECT id, actor, detail, at FROM terminal_events"
                " WHERE kind = 'prune' ORDER BY id DESC LIMIT 1")[0]
    wait_for(lambda: any(parse(ln)["event"] == "prune"
                         for ln in st.syslog.audit_lines()), 10,
             what="the prune's line")
    f = [parse(ln) for ln in st.syslog.audit_lines()
         if parse(ln)["event"] == "prune"][-1]
    assert f["seq"] == str(row["id"])
    assert f["detail"] == row["detail"] and f["actor"] == row["actor"]
    assert f["terminal"] is None and f["session"] is None
    assert abs(float(f["at"]) - row["at"]) < 1e-5
