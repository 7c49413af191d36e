"""test_share.py -- shares (issue 34, DESIGN 2 and 6), through nginx with
two users and a third under auth = front: a view share reads every byte
and may not type, resize or close; a share used by the wrong user, after
revocation, expiry, the terminal's end or a restart is refused with the
one 403; revocation and expiry end a share's stream with share_ended;
the token is nowhere on disk; every join and leave is an audit row; a
share survives a ptyd crash (the keeper's hand-over); anonymous links are
off unless share_anonymous = yes.

share_min_ttl = 1 (a documented setting) lets a share expire in 2 s.
"""

import os
import re
import secrets
import signal
import subprocess
import time

import pytest

from ptyd_http import StreamEnded, Transcript, marker, read_output_until
from ptyd_stack import REPO, wait_for

USERS = ["alice:pw-a", "bob:pw-b", "carol:pw-c"]
INVALID = {"error": "share not valid"}
READ_ONLY = {"error": "read-only viewer"}
NOT_SHARED = {"error": "forbidden: not through a share"}


@pytest.fixture(scope="module")
def st(make_stack):
    return make_stack("share", users=USERS, env=["PTYD_SHARE_MIN_TTL=1"])


@pytest.fixture(scope="module")
def tokens():
    """Every token a test here was given: none may be on disk."""
    return []


def hdr(token):
    return {"Ptyd-Share": token}


def share(c, sid, tokens, role="view", user="bob", expires_in=600):
    body = {"session_id": sid, "role": role, "expires_in": expires_in}
    if user is not None:
        body["user"] = user
    r = c.post("share", body)
    assert r.status == 200, r
    j = r.json()
    assert len(j["token"]) == 43 and j["role"] == role, j
    tokens.append(j["token"])
    return j


def refused(r, status, body):
    assert r.status == status, r
    assert r.json() == body, r


def start(c, new_sid):
    sid = new_sid()
    r = c.start(sid)
    assert r.status == 200, r
    return sid


def say(c, sid, tag):
    """Type a line whose output only the shell makes; what to look for."""
    cmd, expected = marker(tag + secrets.token_hex(3))
    r = c.input(sid, cmd)
    assert r.status == 200, r
    return expected


def test_view_share_reads_every_byte_and_may_not_type_resize_or_close(
        st, new_sid, tokens):
    a, b = st.client("alice"), st.client("bob")
    sid = start(a, new_sid)
    tok = share(a, sid, tokens)["token"]
    own = a.stream(sid)
    viewer = b.stream(None, headers=hdr(tok))
    assert viewer.status == 200, viewer.body
    try:
        m = say(a, sid, "v")
        t_own = read_output_until(own, m)
        t_view = read_output_until(viewer, m)
        begin = max(t_own.start, t_view.start)
        end = min(t_own.end, t_view.end)
        assert end > begin
        assert t_own.slice(begin, end) == t_view.slice(begin, end)

        # Input, resize, close through the view share: refused, and the
        # terminal is as it was.
        h = hdr(tok)
        refused(b.post("input", {"data": "echo typed-by-bob\r"}, headers=h),
                403, READ_ONLY)
        refused(b.post("resize", {"rows": 10, "cols": 40}, headers=h),
                403, READ_ONLY)
        refused(b.post("close", {}, headers=h), 403, READ_ONLY)
        refused(b.post("input", {"session_id": sid, "data": "x"}, headers=h),
                403, READ_ONLY)
        assert sid in a.terminals()
        assert a.terminals()[sid]["rows"] != 10
        # The owner's endpoints are refused with the header, whoever sends
        # it; shared answers what a page needs.
        for ep, body in (("start", {"session_id": new_sid()}),
                         ("share", {"session_id": sid, "role": "view",
                                    "expires_in": 60, "user": "bob"}),
                         ("unshare", {"session_id": sid, "share_id": 1})):
            refused(b.post(ep, body, headers=h), 403, NOT_SHARED)
        for ep in ("list", "shares", "limits"):
            refused(b.get(ep, {"session_id": sid}, headers=h), 403,
                    NOT_SHARED)
        r = b.get("shared", headers=h)
        assert r.status == 200, r
        j = r.json()
        assert (j["session_id"], j["owner"], j["role"], j["running"]) == \
            (sid, "alice", "view", True), j
        # The session id, if given, must be the share's.
        r = b.get("output", {"session_id": "other"}, headers=h)
        refused(r, 400, {"error": "session_id does not match the share"})
        # More output still reaches the viewer after the refusals.
        m2 = say(a, sid, "w")
        read_output_until(viewer, m2, t_view)
        assert b"typed-by-bob" not in bytes(t_view.data)
    finally:
        viewer.close()
        own.close()
        a.close_term(sid)


def test_control_share_types_and_resizes_but_never_closes(st, new_sid,
                                                           tokens):
    a, b = st.client("alice"), st.client("bob")
    sid = start(a, new_sid)
    tok = share(a, sid, tokens, role="control")["token"]
    h = hdr(tok)
    try:
        with a.stream(sid) as own:
            cmd, m = marker("c" + secrets.token_hex(3))
            r = b.post("input", {"data": cmd}, headers=h)
            assert r.status == 200, r
            read_output_until(own, m)
        assert b.post("resize", {"rows": 11, "cols": 50},
                      headers=h).status == 200
        assert a.terminals()[sid]["rows"] == 11
        refused(b.post("close", {}, headers=h), 403, NOT_SHARED)
        assert sid in a.terminals()
    finally:
        a.close_term(sid)


def test_every_refused_share_gets_the_one_answer(st, new_sid, tokens):
    a, b, c = st.client("alice"), st.client("bob"), st.client("carol")
    sid = start(a, new_sid)
    for_bob = share(a, sid, tokens)
    h = hdr(for_bob["token"])

    # Another user than the named one; made-up tokens of every shape.
    refused(c.get("shared", headers=h), 403, INVALID)
    refused(c.post("input", {"data": "x"}, headers=h), 403, INVALID)
    s = c.stream(None, headers=h)
    assert s.status == 403, s.body
    for bad in ("x", "A" * 43, for_bob["token"][:-1] + "B", ""):
        refused(b.get("shared", headers=hdr(bad)), 403, INVALID)
    # Without the header, shared is nobody's share either.
    refused(b.get("shared"), 403, INVALID)
    # A token in the query is no token (and the access log has it: the
    # client's doing, which is why it counts for nothing; a share of its
    # own, kept out of the list the last test looks for on disk).
    url = share(a, sid, [])
    refused(b.get("shared", {"share": url["token"]}), 403, INVALID)

    # Revoked.
    r = a.post("unshare", {"session_id": sid,
                           "share_id": for_bob["share_id"]})
    assert r.status == 200 and r.json() == {"ok": True, "revoked": True}, r
    refused(b.get("shared", headers=h), 403, INVALID)
    r = a.post("unshare", {"session_id": sid,
                           "share_id": for_bob["share_id"]})
    assert r.json()["revoked"] is False, r
    listed = a.get("shares", {"session_id": sid}).json()["shares"]
    assert [x["share_id"] for x in listed] == [url["share_id"]], listed

    # Expired: share_min_ttl = 1 in this stack.
    short = share(a, sid, tokens, expires_in=2)
    assert b.get("shared", headers=hdr(short["token"])).status == 200
    wait_for(lambda: b.get("shared", headers=hdr(short["token"])).status
             == 403, 6, what="the share expired")

    # The terminal ended (and a restart is another incarnation).
    live = share(a, sid, tokens)
    assert a.post("start", {"session_id": sid, "restart": True}).status \
        == 200
    refused(b.get("shared", headers=hdr(live["token"])), 403, INVALID)
    again = share(a, sid, tokens)
    assert a.close_term(sid).status == 200
    refused(b.get("shared", headers=hdr(again["token"])), 403, INVALID)
    s = b.stream(None, headers=hdr(again["token"]))
    assert s.status == 403, s.body


def test_share_checks_its_fields_and_the_cap(st, new_sid, tokens):
    a = st.client("alice")
    sid = start(a, new_sid)
    try:
        def post(**kw):
            body = {"session_id": sid, "role": "view", "expires_in": 60,
                    "user": "bob"}
            body.update(kw)
            return a.post("share", {k: v for k, v in body.items()
                                    if v is not None})
        refused(post(role="admin"), 400,
                {"error": "role must be view or control"})
        refused(post(expires_in="60"), 400,
                {"error": "expires_in must be an integer number of seconds"})
        r = post(expires_in=86401)
        assert r.status == 400 and "expires_in" in r.json()["error"], r
        refused(post(user=7), 400, {"error": "user must be a user name"})
        refused(post(user=None), 403,
                {"error": "anonymous share links are off (share_anonymous "
                          "in ptyd.conf(5))"})
        refused(a.post("share", {"session_id": "nope-" + sid,
                                 "role": "view", "expires_in": 60,
                                 "user": "bob"}),
                404, {"error": "terminal not running"})
        for _ in range(16):
            share(a, sid, tokens)
        r = post()
        refused(r, 429, {"error": "too many shares for this terminal"})
        assert r.header("retry-after")
        listed = a.get("shares", {"session_id": sid}).json()["shares"]
        assert len(listed) == 16
        assert all(s["user"] == "bob" and s["viewers"] == 0 for s in listed)
        # Another owner's terminal of the same name is not alice's.
        refused(st.client("bob").post("share", {
            "session_id": sid, "role": "view", "expires_in": 60,
            "user": "bob"}), 404, {"error": "terminal not running"})
    finally:
        a.close_term(sid)


def events_until_end(s, timeout=10):
    try:
        s.read_to_end(timeout)
    except StreamEnded:
        pass
    return s.events


def test_revocation_and_expiry_end_the_share_stream(st, new_sid, tokens):
    a, b = st.client("alice"), st.client("bob")
    sid = start(a, new_sid)
    try:
        rev = share(a, sid, tokens)
        exp = share(a, sid, tokens, expires_in=2)
        s1 = b.stream(None, headers=hdr(rev["token"]))
        s2 = b.stream(None, headers=hdr(exp["token"]))
        assert s1.status == 200 and s2.status == 200
        with a.stream(sid) as own:
            m = say(a, sid, "r")
            read_output_until(s1, m)
            assert a.post("unshare", {"session_id": sid,
                                      "share_id": rev["share_id"]}).json() \
                == {"ok": True, "revoked": True}
            ev = events_until_end(s1)
            assert ev[-1].name == "share_ended" and ev[-1].id is None, ev
            assert ev[-1].data == {"reason": "revoked"}
            ev = events_until_end(s2, timeout=8)
            assert ev[-1].name == "share_ended", ev
            assert ev[-1].data == {"reason": "expired"}
            # The owner's stream goes on.
            m2 = say(a, sid, "o")
            read_output_until(own, m2)
    finally:
        a.close_term(sid)


def test_a_share_survives_a_ptyd_crash(st, new_sid, tokens):
    a, b = st.client("alice"), st.client("bob")
    sid = start(a, new_sid)
    try:
        keep = share(a, sid, tokens)
        gone = share(a, sid, tokens)
        assert a.post("unshare", {"session_id": sid,
                                  "share_id": gone["share_id"]}).status \
            == 200
        time.sleep(1.2)         # the mirror's flush: rows before the kill
        old = st.ptyd_pid()
        os.kill(old, signal.SIGKILL)
        wait_for(lambda: (lambda r: r.status == 200 and
                          r.json()["ptyd"]["pid"] != old)(a.health()),
                 15, what="a new ptyd serving")
        r = b.get("shared", headers=hdr(keep["token"]))
        assert r.status == 200 and r.json()["session_id"] == sid, r
        refused(b.get("shared", headers=hdr(gone["token"])), 403, INVALID)
        listed = a.get("shares", {"session_id": sid}).json()["shares"]
        assert [s["share_id"] for s in listed] == [keep["share_id"]]
        with b.stream(None, headers=hdr(keep["token"])) as s:
            assert s.status == 200
            m = say(a, sid, "k")
            read_output_until(s, m)
        # A new share after the take-over gets a new id.
        assert share(a, sid, tokens)["share_id"] > keep["share_id"]
    finally:
        a.close_term(sid)


def test_joins_and_leaves_are_audited_with_share_and_viewer(st, new_sid,
                                                            tokens):
    a, b = st.client("alice"), st.client("bob")
    sid = start(a, new_sid)
    j = share(a, sid, tokens)
    with b.stream(None, headers=hdr(j["token"])) as s:
        assert s.status == 200
        read_output_until(s, say(a, sid, "hello"))
    # Bob's leave before the unshare (else the unshare ends his stream).
    wait_for(lambda: a.get("watchers", {"session_id": sid})
             .json()["watchers"] == [], 5, what="bob gone")
    a.post("unshare", {"session_id": sid, "share_id": j["share_id"]})
    a.close_term(sid)
    tid = wait_for(lambda: (st.db_terminal(sid, owner="alice") or {})
                   .get("id"), 5, what="the terminal's row")

    def rows():
        return st.db("SELECT kind, actor, detail FROM terminal_events "
                     "WHERE terminal_id = ? AND kind IN ('share', 'unshare',"
                     " 'join', 'leave', 'share_end') ORDER BY id", (tid,))
    wait_for(lambda: len(rows()) >= 4, 5, what="share events")
    got = rows()
    kinds = [r["kind"] for r in got]
    assert kinds == ["share", "join", "leave", "unshare"], got
    tag = "share=%d" % j["share_id"]
    assert all(tag in r["detail"] for r in got), got
    assert got[0]["actor"].startswith("alice@")
    assert got[1]["actor"].startswith("bob@")
    assert got[2]["actor"].startswith("bob@")
    assert "role=view" in got[1]["detail"]
    row = st.db("SELECT * FROM shares WHERE id = ?", (j["share_id"],))[0]
    assert (row["terminal_id"], row["session_id"], row["owner"],
            row["role"], row["user"]) == (tid, sid, "alice", "view", "bob")
    assert row["revoked_at"] is not None and len(row["token_hash"]) == 64
    # sql/audit.sql's ready query says the same.
    with open(os.path.join(REPO, "sql", "audit.sql")) as f:
        q = re.search(r"^-- name: shares\n(.*?;)$", f.read(),
                      re.S | re.M).group(1)
    got = [r for r in st.db(q) if r["share_id"] == j["share_id"]]
    assert got and (got[0]["user"], got[0]["ended"], got[0]["joins"]) == \
        ("bob", "revoked", 1), got


def test_a_control_share_reaches_no_owner_endpoint_nor_other_terminal(
        st, new_sid, tokens):
    a, b = st.client("alice"), st.client("bob")
    sid, other = start(a, new_sid), start(a, new_sid)
    try:
        h = hdr(share(a, sid, tokens, role="control")["token"])
        for method, ep, body in (
                ("POST", "start", {"session_id": other}),
                ("POST", "share", {"session_id": sid, "role": "control",
                                   "expires_in": 600, "user": "bob"}),
                ("GET", "shares", {"session_id": sid}),
                ("POST", "unshare", {"session_id": sid, "share_id": 1}),
                ("GET", "list", None), ("GET", "metrics", None),
                ("GET", "limits", None), ("GET", "health", None)):
            r = b.post(ep, body, headers=h) if method == "POST" else \
                b.get(ep, body, headers=h)
            refused(r, 403, NOT_SHARED)
        # Another terminal of alice's, named in the query or the body.
        mismatch = {"error": "session_id does not match the share"}
        refused(b.post("input", {"session_id": other, "data": "x"},
                       headers=h), 400, mismatch)
        refused(b.post("resize", {"rows": 9, "cols": 40},
                       query={"session_id": other}, headers=h), 400, mismatch)
        refused(b.get("watchers", {"session_id": other}, headers=h), 400,
                mismatch)
        s = b.stream(other, headers=h)
        assert s.status == 400, s.body
        assert a.terminals()[other]["rows"] != 9
    finally:
        a.close_term(sid)
        a.close_term(other)


def test_a_revoked_stream_that_reads_nothing_lets_go_at_once(st, new_sid,
                                                             tokens):
    """A viewer that stopped reading holds the shell back (backpressure)
    until the stall timeout; once its share is revoked it must hold
    nothing: gone from the watchers and the shell free at once, not
    stall_timeout (10 s) later, whatever its socket does."""
    a, b = st.client("alice"), st.client("bob")
    sid = start(a, new_sid)
    try:
        j = share(a, sid, tokens)
        s = b.stream(None, headers=hdr(j["token"]), rcvbuf=4096)
        assert s.status == 200
        # More than the ring and every buffer between: bob, reading
        # nothing, is a full ring behind and the shell waits for him.
        done = os.path.join(st.state, "done-" + sid)
        r = a.input(sid, "head -c 6000000 /dev/zero | tr '\\0' x; "
                    "touch %s\r" % done)
        assert r.status == 200, r
        time.sleep(1.5)
        assert [w["share"] for w in a.get(
            "watchers", {"session_id": sid}).json()["watchers"]] \
            == [j["share_id"]]
        assert a.post("unshare", {"session_id": sid,
                                  "share_id": j["share_id"]}).json() \
            == {"ok": True, "revoked": True}
        wait_for(lambda: a.get("watchers", {"session_id": sid})
                 .json()["watchers"] == [], 2,
                 what="the revoked viewer gone from the watchers")
        assert not os.path.exists(done)
        wait_for(lambda: os.path.exists(done), 5, what="the shell free")
        # What bob still gets ends with share_ended.
        ev = events_until_end(s, timeout=10)
        assert ev and ev[-1].name == "share_ended", ev[-3:]
        s.close()
    finally:
        a.close_term(sid)


def test_no_token_is_written_anywhere(st, tokens):
    """Last in the module: every token the tests were given, against
    every file of the state directory, the database's dump and the logs
    (nginx's access and error logs, ptyd's, ptyd.fcgi's)."""
    assert len(tokens) > 20
    st.client("alice").health()
    time.sleep(1.2)             # the mirror's last flush
    dump = subprocess.run(["sqlite3", st.db_path, ".dump"],
                          capture_output=True, timeout=30)
    assert dump.returncode == 0 and b"CREATE TABLE shares" in dump.stdout
    blobs = [("sqlite3 .dump", dump.stdout)]
    for root, _, files in os.walk(st.state):
        for f in files:
            p = os.path.join(root, f)
            try:
                with open(p, "rb") as fh:
                    blobs.append((p, fh.read()))
            except OSError:
                pass
    assert any(p.endswith("nginx-access.log") for p, _ in blobs)
    for t in tokens:
        for p, data in blobs:
            assert t.encode() not in data, (t, p)


@pytest.fixture(scope="module")
def anon(make_stack):
    return make_stack("share-anon", users=USERS,
                      env=["PTYD_SHARE_ANONYMOUS=yes"])


def test_anonymous_links_only_with_share_anonymous(st, anon, new_sid):
    a = st.client("alice")
    sid = start(a, new_sid)
    refused(a.post("share", {"session_id": sid, "role": "view",
                             "expires_in": 60}), 403,
            {"error": "anonymous share links are off (share_anonymous in "
                      "ptyd.conf(5))"})
    a.close_term(sid)
    a = anon.client("alice")
    sid = start(a, new_sid)
    try:
        r = a.post("share", {"session_id": sid, "role": "view",
                             "expires_in": 60})
        assert r.status == 200 and r.json()["user"] is None, r
        tok = r.json()["token"]
        for who in ("bob", "carol"):
            r = anon.client(who).get("shared", headers=hdr(tok))
            assert r.status == 200 and r.json()["role"] == "view", r
    finally:
        a.close_term(sid)


def test_a_link_cannot_take_the_owners_last_places(make_stack, new_sid):
    """max_viewers = 4: streams through a share get two places, then 429;
    the owner's own pages still get the other two."""
    s = make_stack("share-places", users=USERS,
                   env=["PTYD_MAX_VIEWERS=4"])
    a, b = s.client("alice"), s.client("bob")
    sid = start(a, new_sid)
    tok = share(a, sid, [], user="bob")["token"]
    opened = []
    try:
        for _ in range(2):
            opened.append(b.stream(None, headers=hdr(tok)))
            assert opened[-1].status == 200, opened[-1].body
        third = b.stream(None, headers=hdr(tok))
        opened.append(third)
        assert third.status == 429, third.body
        for _ in range(2):
            opened.append(a.stream(sid))
            assert opened[-1].status == 200, opened[-1].body
        opened.append(a.stream(sid))
        assert opened[-1].status == 429, opened[-1].body
    finally:
        for v in opened:
            v.close()
