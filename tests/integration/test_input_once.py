"""test_input_once.py -- a keystroke is executed at most once and never
lost, whatever the network does (DESIGN 2, input_id).

Regression: an input answered 503 because ptyd stood still for a moment
(ptyd.fcgi's 5 s deadline passed) was executed anyway once ptyd went on,
and the page's retry typed it a second time; so was one whose connection
was cut after the request was sent.
"""

import os
import secrets
import signal

import pytest

from ptyd_http import Shell, marker

pytestmark = pytest.mark.deadline(60)



def test_retry_after_ptyd_stood_still_runs_once(stack, term):
    sid, _ = term()
    c = stack.client()
    pid = stack.ptyd_pid()
    with Shell(c, sid) as sh:
        sh.run("true")
        cmd, want = marker()
        iid = "t:" + secrets.token_hex(4)
        os.kill(pid, signal.SIGSTOP)
        try:
            first = c.post("input", {"session_id": sid, "data": cmd,
                                     "input_id": iid}, timeout=30)
        finally:
            os.kill(pid, signal.SIGCONT)
        assert first.status == 503, first
        assert first.header("retry-after"), first
        again = c.post("input", {"session_id": sid, "data": cmd,
                                 "input_id": iid})
        assert again.status == 200, again
        assert again.json() == {"ok": True, "duplicate": True}, again
        assert sh.settled_count(want) == 1


def test_retry_after_a_cut_connection_runs_once(stack, term):
    sid, _ = term()
    c = stack.client()
    with Shell(c, sid) as sh:
        sh.run("true")
        cmd, want = marker()
        iid = "t:" + secrets.token_hex(4)
        c.post_and_cut("input", {"session_id": sid, "data": cmd,
                                 "input_id": iid})
        # The first may or may not have reached ptyd; either way the
        # retry leaves the text typed exactly once.
        r = c.post("input", {"session_id": sid, "data": cmd,
                             "input_id": iid})
        assert r.status == 200, r
        assert sh.settled_count(want) == 1


def test_a_new_id_runs_and_no_id_runs_every_time(stack, term):
    sid, _ = term()
    c = stack.client()
    with Shell(c, sid) as sh:
        cmd, want = marker()
        for iid in ("n:1", "n:2"):
            r = c.post("input", {"session_id": sid, "data": cmd,
                                 "input_id": iid})
            assert r.json() == {"ok": True}, r
        for _ in range(2):
            assert c.post("input", {"session_id": sid, "data": cmd}
                          ).json() == {"ok": True}
        assert sh.settled_count(want) == 4


@pytest.mark.parametrize("iid", ["", "a" * 65, "bad id", "x/y", 5, True,
                                 ["a"]])
def test_invalid_input_id_is_400(stack, term, iid):
    sid, _ = term()
    r = stack.client().post("input", {"session_id": sid, "data": "x",
                                      "input_id": iid})
    assert r.status == 400, r
    assert r.json() == {"error": "invalid input_id"}, r


def test_input_id_of_64_characters_is_accepted(stack, term):
    sid, _ = term()
    r = stack.client().post("input", {"session_id": sid, "data": "",
                                      "input_id": "A.b_c:d-" * 8})
    assert r.status == 200, r
