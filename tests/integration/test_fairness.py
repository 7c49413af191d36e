"""test_fairness.py -- one user's starts never end another user's shells
(DESIGN 6, fairness), through nginx with two authenticated users.

Regression: at the total cap a start evicted the least recently active
terminal of any owner, so alice starting a shell ended bob's.
"""

import pytest

from ptyd_stack import proc_state, wait_for


@pytest.fixture(scope="module")
def capped(make_stack):
    return make_stack("fair", users=["alice:pw-a", "bob:pw-b"],
                      ptyd_args=["--max-terminals", "3"])


def alive(pid):
    return proc_state(pid) not in (None, "Z")


def test_a_cap_full_of_another_users_shells_answers_429(capped, new_sid):
    alice, bob = capped.client("alice"), capped.client("bob")
    bobs = [new_sid("b") for _ in range(3)]
    pids = []
    try:
        for sid in bobs:
            r = bob.start(sid)
            assert r.status == 200, r
            pids.append(r.json()["pid"])
        r = alice.start(new_sid("a"))
        assert r.status == 429, r
        assert r.json() == {"error": "terminal limit reached: every "
                            "terminal is another user's; retry later"}, r
        assert r.header("retry-after", "").isdigit(), r
        assert sorted(bob.terminals()) == sorted(bobs)
        assert all(alive(p) for p in pids)
        assert alice.terminals() == {}
    finally:
        for sid in bobs:
            bob.close_term(sid)


def test_at_the_cap_a_user_evicts_only_their_own(capped, new_sid):
    alice, bob = capped.client("alice"), capped.client("bob")
    a1, b1, b2, a2 = (new_sid("a"), new_sid("b"), new_sid("b"),
                      new_sid("a"))
    try:
        assert alice.start(a1).status == 200
        rb = [bob.start(s) for s in (b1, b2)]
        assert all(r.status == 200 for r in rb), rb
        r = alice.start(a2)
        assert r.status == 200, r
        assert sorted(alice.terminals()) == [a2]
        assert sorted(bob.terminals()) == sorted([b1, b2])
        assert all(alive(r.json()["pid"]) for r in rb)
        wait_for(lambda: [e["session_id"] for e in capped.db(
            "SELECT session_id FROM terminal_events WHERE kind = 'evict'")]
            == [a1], 3, what="one evict event, of alice's a1")
    finally:
        for c, s in ((alice, a1), (alice, a2), (bob, b1), (bob, b2)):
            c.close_term(s)


# Where the web server names the owners (auth = front), the per-owner cap
# defaults to a quarter of the total, at least 4 (issue 29): before, it
# was the total, so one user could hold every terminal and every other
# user got 429.
@pytest.fixture(scope="module")
def shared(make_stack):
    return make_stack("fair-default", users=["alice:pw-a", "bob:pw-b"],
                      ptyd_args=["--max-terminals", "8"])


def test_in_front_mode_one_user_cannot_hold_every_terminal(shared, new_sid):
    alice, bob = shared.client("alice"), shared.client("bob")
    mine = [new_sid("a") for _ in range(6)]
    b = new_sid("b")
    try:
        for sid in mine:
            r = alice.start(sid)
            assert r.status == 200, r
        # Her fifth and sixth evicted her own oldest, not anyone's.
        assert sorted(alice.terminals()) == sorted(mine[2:])
        r = bob.start(b)
        assert r.status == 200, r
        assert alice.limits_caps() == {"max": 8, "per_owner": 4}
    finally:
        for sid in mine:
            alice.close_term(sid)
        bob.close_term(b)


def test_with_one_owner_the_per_owner_cap_is_the_total(make_stack):
    st = make_stack("fair-account", ptyd_args=["--max-terminals", "8"])
    assert st.client().limits_caps() == {"max": 8, "per_owner": 8}
