"""test_recording.py -- recordings (DESIGN 4, issue 34) through nginx.

What is pinned: a recording read back by a small asciicast reader is the
live stream's output text byte for byte, with its resizes; record = owner
honours start's flag only, record_input adds the keystrokes; a full disk
(a file size limit on the recorder, and a small tmpfs when the tests run
as root) cuts the recording while the terminal and its viewer lose
nothing; a killed recorder cuts, restarts and the next part records; a
take-over cuts the old part and starts the next; retention removes the
oldest first, by size (ptydctl prune) and by age (at ptyd's start);
ptydctl recordings and play (play's output is the recorded text, and a
changed file is refused); another user can neither list nor fetch a
recording (404), a recordings_readers user can.
"""

import hashlib
import json
import os
import resource
import signal
import sqlite3
import stat
import subprocess
import time

import pytest

from ptyd_http import SSE
from ptyd_stack import (BUILDDIR, Stack, children_of, proc_cmdline,
                        proc_ppid, wait_for)

USERS = ["alice:pw-a", "bob:pw-b", "carol:pw-c"]
PTYDCTL = os.path.join(BUILDDIR, "ptydctl", "ptydctl")


# -- an asciicast v2 reader, the test's own ----------------------------------

def cast_parse(data):
    """(header, [(t, code, text)]) of an asciicast v2 file's bytes; every
    line must be JSON."""
    lines = data.decode("utf-8").split("\n")
    assert lines[-1] == "", "the file does not end with a whole line"
    header = json.loads(lines[0])
    events = []
    for ln in lines[1:-1]:
        ev = json.loads(ln)
        assert isinstance(ev, list) and len(ev) == 3, ln
        assert isinstance(ev[0], (int, float)) and ev[0] >= 0, ln
        events.append((ev[0], ev[1], ev[2]))
    times = [e[0] for e in events]
    assert times == sorted(times), "times go backwards"
    return header, events


def cast_output(events):
    return "".join(text for _, code, text in events if code == "o")


# -- helpers ------------------------------------------------------------------

def ctl(st, *args, timeout=30):
    return subprocess.run([PTYDCTL, "--socket",
                           os.path.join(st.state, "run", "ptyd.sock")] +
                          list(args), capture_output=True, timeout=timeout)


def recordings(st, user=None, **query):
    r = st.client(user).get("recordings", query=query or None)
    assert r.status == 200, r
    return r.json()["recordings"]


def rec_of(st, sid, user=None, part=None):
    rows = [r for r in recordings(st, user) if r["session_id"] == sid and
            (part is None or r["part"] == part)]
    return rows[0] if rows else None


def wait_rec(st, sid, pred, user=None, timeout=10, part=None):
    return wait_for(lambda: (lambda r: r if r and pred(r) else None)(
        rec_of(st, sid, user, part)), timeout,
        what=lambda: repr(rec_of(st, sid, user, part)))


def fetch(st, rid, user=None):
    return st.client(user).get("recording", query={"id": rid})


def recorder_pid(st):
    pid = st.ptyd_pid()
    kids = [p for p in children_of(pid)
            if (proc_cmdline(p) or [""])[0] == "ptyd-recorder"]
    return kids[0] if kids else None


def stream(st, sid, user=None):
    return SSE(st.port, sid, user=user,
               password=st.users.get(user) if user else None)


def live_text(sse):
    return "".join(e.data["text"] for e in sse.events
                   if e.name == "output")


def seen(word):
    """A read_until predicate: word in the output so far (kept as a
    short tail, so a flood costs no quadratic joins)."""
    tail = [""]

    def pred(e):
        if e.name != "output":
            return False
        tail[0] = (tail[0] + e.data["text"])[-(len(word) + 64):]
        return word in tail[0]
    return pred


def marker(c, sid, word):
    """Type a command that prints word once it runs (the echo of the
    command line does not hold it whole)."""
    c.input(sid, "printf '%%s\\n' %s%s\n" % (word[:3], "'" + word[3:] + "'"))


@pytest.fixture(scope="module")
def rec(make_stack):
    return make_stack("rec", users=USERS, ptyd_args=["--record", "on"],
                      fcgi_args=["--recordings-readers", "carol"])


@pytest.fixture(scope="module")
def owner_stack(make_stack):
    return make_stack("rec-owner", users=USERS,
                      ptyd_args=["--record", "owner", "--record-input",
                                 "yes"])


# -- the recording is the live stream ---------------------------------------

def test_recording_is_the_live_streams_text_byte_for_byte(rec, new_sid):
    c, sid = rec.client("alice"), new_sid()
    r = c.start(sid)
    assert r.status == 200 and r.json()["recording"] is True, r
    sse = stream(rec, sid, "alice")
    # Ill-formed bytes (U+FFFD each), a character split between two
    # writes (never split in the text), a flood, and two resizes.
    c.input(sid, "printf 'a\\xff\\xfeb\\xe2\\x82'; sleep 0.2; "
                 "printf '\\xac\\n\\xf0\\x9f\\x98\\x80\\n'\n")
    sse.read_until(lambda e: e.name == "output" and
                   "\U0001f600" in live_text(sse))
    assert c.resize(sid, rows=30, cols=100).status == 200
    c.input(sid, "seq 1 20000\n")
    marker(c, sid, "flooddone")
    sse.read_until(lambda e: e.name == "output" and
                   "flooddone" in live_text(sse), timeout=30)
    assert c.resize(sid, rows=25, cols=90).status == 200
    c.input(sid, "exit\n")
    sse.read_to_end(15)
    live = live_text(sse)
    assert "\ufffd" in live and "\u20ac" in live and "\U0001f600" in live, \
        live[:700]

    row = wait_rec(rec, sid, lambda r: r["state"] == "finished", "alice")
    r = fetch(rec, row["id"], "alice")
    assert r.status == 200, r
    assert r.header("content-type") == "application/x-asciicast"
    header, events = cast_parse(r.body)
    assert header["version"] == 2 and header["env"] == {
        "TERM": "xterm-256color"}
    assert (header["width"], header["height"]) == (80, 24)
    assert cast_output(events).encode() == live.encode()
    assert [t for _, code, t in events if code == "r"] == ["100x30",
                                                           "90x25"]
    assert not [e for e in events if e[1] in ("i", "m")]
    # The row says what the file is.
    assert row["bytes"] == len(r.body)
    assert row["sha256"] == hashlib.sha256(r.body).hexdigest()
    assert row["part"] == 1 and row["cut_reason"] is None
    assert row["owner"] == "alice" and row["ended_at"] >= row["started_at"]
    # Private to the account, and under the state directory.
    d = os.path.join(rec.state, "recordings")
    f = os.path.join(d, "%d-1.cast" % wait_for(lambda: rec.db(
        "SELECT terminal_id FROM recordings WHERE id = ?",
        (row["id"],)), 5)[0]["terminal_id"])
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o600
    with open(f, "rb") as fh:
        assert fh.read() == r.body
    assert rec.state.encode() not in r.body
    kinds = wait_for(lambda: (lambda k: k if len(k) == 2 else None)(
        [e["kind"] + ":" + (e["detail"] or "") for e in rec.db(
            "SELECT kind, detail FROM terminal_events WHERE session_id = ?"
            " AND kind LIKE 'record%'", (sid,))]), 5)
    assert kinds[0] == "record:recording=%d part=1" % row["id"], kinds
    assert "state=finished" in kinds[1], kinds


def test_ptydctl_recordings_and_play_are_the_recording(rec, new_sid):
    c, sid = rec.client("alice"), new_sid()
    c.start(sid)
    marker(c, sid, "playdone")
    time.sleep(0.3)
    c.input(sid, "exit\n")
    row = wait_rec(rec, sid, lambda r: r["state"] == "finished", "alice")
    r = ctl(rec, "recordings", "--all", "--json")
    assert r.returncode == 0, r.stderr
    listed = [x for x in json.loads(r.stdout)["recordings"]
              if x["id"] == row["id"]]
    assert listed and listed[0]["sha256"] == row["sha256"], listed
    r = ctl(rec, "recordings", "--all")
    assert r.returncode == 0 and sid.encode() in r.stdout, r
    body = fetch(rec, row["id"], "alice").body
    _, events = cast_parse(body)
    r = ctl(rec, "play", str(row["id"]), "--speed", "20", "--idle-limit",
            "0.05")
    assert r.returncode == 0, r.stderr
    assert r.stdout == cast_output(events).encode()
    # A file changed after it was written is not played.
    f = os.path.join(rec.state, "recordings", wait_for(lambda: rec.db(
        "SELECT file FROM recordings WHERE id = ?", (row["id"],)),
        5)[0]["file"])
    with open(f, "ab") as fh:
        fh.write(b'[99.0, "o", "forged"]\n')
    r = ctl(rec, "play", str(row["id"]))
    assert r.returncode == 1 and b"SHA-256" in r.stderr, r
    assert b"forged" not in r.stdout


def test_another_user_cannot_list_or_fetch_a_recording(rec, new_sid):
    c, sid = rec.client("alice"), new_sid()
    c.start(sid)
    c.input(sid, "exit\n")
    row = wait_rec(rec, sid, lambda r: r["state"] == "finished", "alice")
    assert row["id"] not in [r["id"] for r in recordings(rec, "bob")]
    assert row["id"] not in [r["id"] for r in recordings(
        rec, "bob", session_id=sid)]
    r = fetch(rec, row["id"], "bob")
    assert r.status == 404 and r.json() == {
        "error": "recording not found"}, r
    # Unknown looks the same as another's.
    assert fetch(rec, 10 ** 15, "bob").json() == r.json()
    assert fetch(rec, "x1", "bob").status == 400
    # A recordings_readers user sees and reads everyone's.
    assert row["id"] in [r["id"] for r in recordings(rec, "carol")]
    r = fetch(rec, row["id"], "carol")
    assert r.status == 200 and r.body == fetch(rec, row["id"],
                                                "alice").body


# -- policy -------------------------------------------------------------------

def test_record_owner_honours_starts_flag_only(owner_stack, new_sid):
    c = owner_stack.client("alice")
    plain, asked = new_sid(), new_sid()
    r = c.start(plain)
    assert r.status == 200 and r.json()["recording"] is False, r
    r = c.start(asked, record=True)
    assert r.status == 200 and r.json()["recording"] is True, r
    assert c.start(new_sid(), record="yes").status == 400
    # Asking again of a running terminal changes nothing.
    assert c.start(plain, record=True).json()["recording"] is False
    c.input(asked, "echo typed-here\n")
    time.sleep(0.5)
    for sid in (plain, asked):
        c.input(sid, "exit\n")
    row = wait_rec(owner_stack, asked, lambda r: r["state"] == "finished",
                   "alice")
    assert rec_of(owner_stack, plain, "alice") is None
    _, events = cast_parse(fetch(owner_stack, row["id"], "alice").body)
    # record_input = yes: the keystrokes are there, as typed.
    assert "echo typed-here\n" in [t for _, code, t in events
                                    if code == "i"]


def test_record_off_records_nothing(make_stack, new_sid):
    st = make_stack("rec-off")
    c, sid = st.client(), new_sid()
    assert c.start(sid).json()["recording"] is False
    c.input(sid, "exit\n")
    time.sleep(1.5)
    assert recordings(st) == []
    assert not os.listdir(os.path.join(st.state, "recordings"))


# -- cuts ---------------------------------------------------------------------

def cut_and_go_on(st, sid, c, sse, reason, user=None):
    """After a cut: the shell still answers and the viewer gets it."""
    row = wait_rec(st, sid, lambda r: r["state"] == "cut", user,
                   timeout=15, part=1)
    assert row["cut_reason"] == reason, row
    marker(c, sid, "stillhere")
    sse.read_until(lambda e: e.name == "output" and
                   "stillhere" in live_text(sse), timeout=15)
    return row


def test_a_full_disk_cuts_the_recording_and_nothing_else(rec, new_sid):
    """The recorder's file size limit (RLIMIT_FSIZE: EFBIG) set to the
    header and one short line: the first output line fails, is undone,
    and the cut line still fits."""
    c, sid = rec.client("alice"), new_sid()
    pid = recorder_pid(rec)
    header = ('{"version": 2, "width": 80, "height": 24, "timestamp": %d, '
              '"env": {"TERM": "xterm-256color"}}\n' % int(time.time()))
    room = len(header) + len('[0.000000, "m", "cut: disk"]\n')
    was = resource.prlimit(pid, resource.RLIMIT_FSIZE)
    resource.prlimit(pid, resource.RLIMIT_FSIZE, (room, was[1]))
    try:
        assert c.start(sid).json()["recording"] is True
        sse = stream(rec, sid, "alice")
        row = cut_and_go_on(rec, sid, c, sse, "disk", "alice")
    finally:
        resource.prlimit(pid, resource.RLIMIT_FSIZE, was)
    body = fetch(rec, row["id"], "alice").body
    _, events = cast_parse(body)
    assert events[-1][1:] == ("m", "cut: disk"), events
    assert row["bytes"] == len(body)
    assert row["sha256"] == hashlib.sha256(body).hexdigest()
    # The viewer lost nothing: its text is every byte the shell wrote.
    c.input(sid, "exit\n")
    sse.read_to_end(15)
    assert "stillhere" in live_text(sse)
    assert sse.events[-1].name == "terminal_closed"


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_full_tmpfs_cuts_the_recording_and_nothing_else(tmp_root,
                                                         new_sid):
    st = Stack(tmp_root, "rec-tmpfs", ptyd_args=["--record", "on"])
    d = os.path.join(st.state, "recordings")
    os.makedirs(d, mode=0o700)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8k,mode=0700",
                    "tmpfs", d], check=True)
    try:
        st.start()
        c, sid = st.client(), new_sid()
        assert c.start(sid).json()["recording"] is True
        sse = stream(st, sid)
        c.input(sid, "seq 1 50000\n")
        row = cut_and_go_on(st, sid, c, sse, "disk")
        body = fetch(st, row["id"]).body
        cast_parse(body)    # whole lines only, the cut line where it fit
        assert row["bytes"] == len(body) > 0
        c.input(sid, "exit\n")
        sse.read_to_end(15)
        assert "50000" in live_text(sse)
    finally:
        try:
            st.stop()
        finally:
            subprocess.run(["umount", "-l", d])
            st.cleanup()


def test_a_stalled_recorder_cuts_behind_and_nothing_waits(rec, new_sid):
    """A recorder that takes nothing (stopped: a disk that hangs) fills
    the pair; ptyd cuts the recording rather than wait, and the shell's
    flood reaches the viewer whole meanwhile."""
    c, sid = rec.client("alice"), new_sid()
    assert c.start(sid).json()["recording"] is True
    sse = stream(rec, sid, "alice")
    wait_rec(rec, sid, lambda r: r["state"] == "recording", "alice")
    pid = recorder_pid(rec)
    os.kill(pid, signal.SIGSTOP)
    try:
        # 17 MB: past the pair's send buffer, which ptyd asks to be
        # 4 MiB (the kernel doubles it, up to net.core.wmem_max).
        c.input(sid, "seq 1 2000000; echo flood'done'\n")
        sse.read_until(seen("flooddone"), timeout=60)
    finally:
        os.kill(pid, signal.SIGCONT)
    assert "\r\n1999999\r\n2000000\r\n" in live_text(sse)
    row = wait_rec(rec, sid, lambda r: r["state"] == "cut", "alice",
                   timeout=20)
    assert row["cut_reason"] == "behind", row
    body = fetch(rec, row["id"], "alice").body
    _, events = cast_parse(body)
    assert events[-1][1:] == ("m", "cut: behind"), events[-1]
    assert row["sha256"] == hashlib.sha256(body).hexdigest()
    # What was recorded is a prefix of what the viewer got.
    assert live_text(sse).startswith(cast_output(events))
    assert len(cast_output(events)) < len(live_text(sse))
    marker(c, sid, "stillhere")
    sse.read_until(lambda e: e.name == "output" and
                   "stillhere" in live_text(sse))
    c.input(sid, "exit\n")


def test_a_killed_recorder_cuts_and_the_next_part_records(rec, new_sid):
    c, sid = rec.client("alice"), new_sid()
    assert c.start(sid).json()["recording"] is True
    sse = stream(rec, sid, "alice")
    wait_rec(rec, sid, lambda r: r["state"] == "recording", "alice")
    old = recorder_pid(rec)
    os.kill(old, signal.SIGKILL)
    cut_and_go_on(rec, sid, c, sse, "recorder", "alice")
    # Restarted (after its backoff), the terminal's next part records.
    wait_for(lambda: (recorder_pid(rec) or old) != old, 10)
    wait_rec(rec, sid, lambda r: r["state"] == "recording", "alice",
             part=2)
    marker(c, sid, "inparttwo")
    time.sleep(0.3)
    c.input(sid, "exit\n")
    row = wait_rec(rec, sid, lambda r: r["state"] == "finished", "alice",
                   part=2)
    _, events = cast_parse(fetch(rec, row["id"], "alice").body)
    assert "inparttwo" in cast_output(events)


@pytest.mark.deadline(60)
def test_a_takeover_ends_the_part_and_starts_the_next(make_stack, new_sid):
    st = make_stack("rec-takeover", ptyd_args=["--record", "on"])
    c, sid = st.client(), new_sid()
    assert c.start(sid).json()["recording"] is True
    # Its row in the database (written behind): what the next ptyd reads.
    wait_for(lambda: st.db("SELECT 1 FROM recordings WHERE session_id = ?",
                           (sid,)), 5)
    pid = st.ptyd_pid()
    keeper = proc_ppid(pid)
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: st.client().health().status == 200 and
             st.ptyd_pid() != pid, 15)
    assert proc_ppid(st.ptyd_pid()) == keeper
    row = wait_rec(st, sid, lambda r: r["state"] == "cut", part=1)
    assert row["cut_reason"] == "takeover"
    wait_rec(st, sid, lambda r: r["state"] == "recording", part=2)
    marker(c, sid, "aftertakeover")
    # An upgrade: the old ptyd hears its recorder end the part (so its
    # row has the file's hash), the new one starts part 3.
    wait_for(lambda: "aftertakeover" in cast_output(cast_parse(fetch(
        st, rec_of(st, sid, part=2)["id"]).body)[1]), 5)
    r = ctl(st, "upgrade", timeout=60)
    assert r.returncode == 0, r
    row = wait_rec(st, sid, lambda r: r["state"] == "cut", part=2)
    body = fetch(st, row["id"]).body
    assert row["cut_reason"] == "takeover"
    assert row["sha256"] == hashlib.sha256(body).hexdigest()
    assert cast_parse(body)[1][-1][1:] == ("m", "cut: takeover")
    assert "aftertakeover" in cast_output(cast_parse(body)[1])
    wait_rec(st, sid, lambda r: r["state"] == "recording", part=3)
    marker(c, sid, "afterupgrade")
    time.sleep(0.3)
    c.input(sid, "exit\n")
    row = wait_rec(st, sid, lambda r: r["state"] == "finished", part=3)
    _, events = cast_parse(fetch(st, row["id"]).body)
    assert "afterupgrade" in cast_output(events)


# -- retention ----------------------------------------------------------------

def test_retention_removes_the_oldest_first_by_size_then_by_age(
        make_stack, new_sid):
    st = make_stack("rec-retain", ptyd_args=["--record", "on",
                                             "--record-max-bytes", "2500"])
    c, sids = st.client(), [new_sid() for _ in range(3)]
    # Past the retention ptyd runs just after its start (2 s), so that
    # ptydctl prune is the one that finds the total over.
    time.sleep(2.5)
    for sid in sids:
        c.start(sid)
        sse = stream(st, sid)
        sse.read_until(lambda e: e.name == "output" and
                       "bash" in live_text(sse))
        c.input(sid, "printf '%s\\n' {1..120}; exit\n")
        sse.read_to_end(10)
        sse.close()
        wait_rec(st, sid, lambda r: r["state"] == "finished")
    rows = {sid: rec_of(st, sid) for sid in sids}
    sizes = [rows[s]["bytes"] for s in sids]
    # Over the bound together, each well under it (a loaded machine cuts
    # the output into more reads, so more lines: the sizes vary).
    assert sum(sizes) > 2500 and max(sizes) < 2500, rows
    # What goes: the oldest, one after the other, until the rest fits.
    gone = 0
    while sum(sizes[gone:]) > 2500:
        gone += 1
    r = ctl(st, "prune")
    assert r.returncode == 0 and r.stdout.startswith(
        b"removed %d " % gone), r
    assert [rec_of(st, s)["state"] for s in sids] == \
        ["removed"] * gone + ["finished"] * (3 - gone)
    assert fetch(st, rows[sids[0]]["id"]).status == 404
    left = sorted(os.listdir(os.path.join(st.state, "recordings")))
    assert len(left) == 3 - gone
    ev = wait_for(lambda: (lambda e: e if len(e) == gone else None)(st.db(
        "SELECT detail FROM terminal_events WHERE kind ="
        " 'recording_removed' ORDER BY id")), 5)
    assert [e["detail"] for e in ev] == [
        "recording=%d bytes=%d reason=size" % (rows[s]["id"],
                                               rows[s]["bytes"])
        for s in sids[:gone]]

    # By age: the newest one made 40 days old while ptyd is down; its
    # next start removes it (and only it).
    wait_for(lambda: st.db("SELECT 1 FROM recordings WHERE state ="
                           " 'removed'"), 5)
    st.stop()
    db = sqlite3.connect(st.db_path)
    old = time.time() - 40 * 86400
    db.execute("UPDATE recordings SET started_at = ?, ended_at = ? WHERE"
               " session_id = ?", (old, old + 1, sids[2]))
    db.commit()
    db.close()
    st.start()
    wait_rec(st, sids[2], lambda r: r["state"] == "removed", timeout=10)
    assert [rec_of(st, s)["state"] for s in sids[:2]] == \
        ["removed"] * gone + ["finished"] * (2 - gone)
    assert len(os.listdir(os.path.join(st.state, "recordings"))) == 2 - gone
    ev = wait_for(lambda: st.db(
        "SELECT detail FROM terminal_events WHERE kind ="
        " 'recording_removed' AND detail LIKE '%reason=age'"), 5)
    assert len(ev) == 1
