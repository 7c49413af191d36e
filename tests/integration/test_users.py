"""test_users.py -- ownership through nginx auth_basic: two users sending
the same session_id get two terminals, and neither can see, attach to, type
into, resize or close the other's.  The stack also trusts forwarded
headers, to show that an authenticated user passes the gate regardless.
"""

import pytest

from ptyd_http import SSE, marker, read_output_until
from ptyd_stack import proc_gone, proc_state, wait_for


@pytest.fixture(scope="module")
def users(make_stack):
    return make_stack("users", users=["alice:pw-a", "bob:pw-b"],
                      env=["PTYD_TRUST_FORWARDED_FOR=1"])


def alive(pid):
    return proc_state(pid) not in (None, "Z")


def test_requests_without_credentials_are_refused_by_nginx(users):
    c = users.client()
    assert c.get("list").status == 401
    assert c.post("start", {"session_id": "anon"}).status == 401
    bad = users.client("alice")
    bad.password = "wrong"
    assert bad.get("list").status == 401


def test_same_session_id_gives_each_user_their_own_terminal(users,
                                                            new_sid):
    alice, bob = users.client("alice"), users.client("bob")
    sid = new_sid()
    ra, rb = alice.start(sid), bob.start(sid)
    assert ra.status == 200 and rb.status == 200, (ra, rb)
    pa, pb = ra.json()["pid"], rb.json()["pid"]
    try:
        assert pa != pb and alive(pa) and alive(pb)
        assert alice.terminals()[sid]["pid"] == pa
        assert bob.terminals()[sid]["pid"] == pb
        ca, wa = marker()
        cb, wb = marker()
        with alice.stream(sid) as sa, bob.stream(sid) as sb:
            assert sa.status == 200 and sb.status == 200
            assert alice.input(sid, ca).status == 200
            assert bob.input(sid, cb).status == 200
            ta = read_output_until(sa, wa)
            tb = read_output_until(sb, wb)
            # Each typed into their own shell only.
            assert c_in(ta, cb) is False and c_in(tb, ca) is False
        # The mirror (at most 1 s behind) keys rows by owner too.
        want = sorted([("alice", pa), ("bob", pb)])
        wait_for(lambda: sorted((r["owner"], r["pid"]) for r in users.db(
            "SELECT owner, pid FROM terminals WHERE session_id = ? AND "
            "state = 'running'", (sid,))) == want, 3,
            what="a running row per owner")
        # Bob closing "his" id closes only his.
        assert bob.close_term(sid).json() == {"ok": True, "closed": True}
        wait_for(lambda: proc_gone(pb), 4, what="bob's shell gone")
        assert alive(pa)
        assert alice.terminals()[sid]["running"] is True
        # The audit log names who attached and who closed.
        ev = wait_for(lambda: (lambda rows: rows if any(
            r["kind"] == "close" for r in rows) else None)(users.db(
                "SELECT e.kind, e.actor, t.owner FROM terminal_events e "
                "JOIN terminals t ON t.id = e.terminal_id "
                "WHERE e.session_id = ?", (sid,))), 3,
            what="close event of bob's terminal")
        attach = [r for r in ev if r["kind"] == "attach"]
        assert {r["owner"] for r in attach} == {"alice", "bob"}, ev
        for r in attach:
            assert r["owner"] in (r["actor"] or ""), r
        close = [r for r in ev if r["kind"] == "close"]
        assert len(close) == 1 and "bob" in (close[0]["actor"] or ""), ev
    finally:
        alice.close_term(sid)
        bob.close_term(sid)


def c_in(transcript, cmd):
    return cmd.rstrip("\r").encode() in transcript.data


def test_a_user_cannot_touch_another_users_terminal(users, new_sid):
    alice, bob = users.client("alice"), users.client("bob")
    sid = new_sid()
    r = alice.start(sid)
    assert r.status == 200, r
    pa = r.json()["pid"]
    try:
        assert sid not in bob.terminals()
        assert bob.input(sid, "kill -9 $$\r").status == 404
        assert bob.resize(sid, 10, 10).status == 404
        with SSE(users.port, sid, user="bob", password="pw-b") as s:
            assert s.status == 404, (s.status, s.body)
        r = bob.close_term(sid)
        assert r.status == 200 and r.json()["closed"] is False, r
        assert alive(pa)
        t = alice.terminals()[sid]
        assert t["running"] is True and (t["rows"], t["cols"]) == (24, 80)
        # health is the daemon's, but list is per owner.
        assert all(x["pid"] != pa for x in bob.list().json()["terminals"])
    finally:
        alice.close_term(sid)


def test_authenticated_user_passes_gate_and_host_checks(users, new_sid):
    alice = users.client("alice")
    r = alice.get("list", headers={"X-Forwarded-For": "8.8.8.8"})
    assert r.status == 200, r
    foreign = users.client("alice", host="evil.example:%d" % users.port)
    assert foreign.get("list").status == 200
