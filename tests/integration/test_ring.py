"""test_ring.py -- the output backlog end to end, on a stack whose ring is
small (--ring-size 65536): an unwatched terminal keeps reading into the
ring, a resume point that fell out of it gets `gap` with the exact number of
bytes lost, and output resumes after it.
"""

import os
import secrets

import pytest

from ptyd_http import Transcript, marker, read_output_until
from ptyd_stack import wait_for

RING = 65536


@pytest.fixture(scope="module")
def ring_stack(make_stack):
    return make_stack("ring", ptyd_args=["--ring-size", str(RING)])


def overflow_while_unwatched(st, c, sid, nbytes):
    """Attach, read to a marker, leave; then make the shell print nbytes
    while nobody watches.  Returns (resume position, done tag)."""
    cmd, want = marker()
    with c.stream(sid) as v:
        assert v.status == 200
        assert c.input(sid, cmd).status == 200
        last = read_output_until(v, want).end
    wait_for(lambda: c.terminals()[sid]["subscribers"] == 0, 3,
             what="viewer detached")
    tag = secrets.token_hex(4)
    done = os.path.join(st.home, "done-" + tag)
    # The file appears only after `head` wrote everything to the pty, which
    # needs ptyd to keep reading the unwatched terminal into its ring.
    assert c.input(sid, "head -c %d /dev/zero | tr '\\0' x; touch %s; "
                   "echo D%s-$((1+1))\r" % (nbytes, done, tag)).status == 200
    wait_for(lambda: os.path.exists(done), 10,
             what="shell finished writing %d bytes while unwatched" % nbytes)
    return last, "D%s-2" % tag


def test_resume_older_than_ring_gets_gap_with_lost_count_then_output(
        ring_stack, term):
    st = ring_stack
    c = st.client()
    sid, _ = term(client=c)
    n = 300000
    last, done = overflow_while_unwatched(st, c, sid, n)
    with c.stream(sid, last_event_id=last) as v:
        assert v.status == 200
        gap = v.next_event()
        assert gap.name == "gap", gap
        lost = gap.data["lost"]
        assert set(gap.data) == {"lost"}
        # The gap's id is where output resumes; lost is exactly the bytes
        # between the resume point asked for and that.
        assert gap.id - last == lost, (gap.id, last, lost)
        assert n - RING <= lost <= n + 4096, lost
        tr = Transcript()
        tr.feed(gap)
        read_output_until(v, done, tr)
        # The first output starts exactly at the gap's id, and what
        # follows fits in the ring.
        first = next(e for e in v.events if e.name == "output")
        assert first.id - len(first.payload) == gap.id
        assert tr.end - gap.id <= RING
        # Bytes lost + bytes received account for all x's printed.
        assert lost + tr.data.count(b"x") >= n
        # Output resumes live after the gap.
        cmd, want = marker()
        assert c.input(sid, cmd).status == 200
        read_output_until(v, want, tr)
    assert len(tr.gaps) == 1


def test_no_resume_point_replays_the_kept_backlog_without_gap(ring_stack,
                                                               term):
    st = ring_stack
    c = st.client()
    sid, _ = term(client=c)
    last, done = overflow_while_unwatched(st, c, sid, 200000)
    with c.stream(sid) as v:
        tr = read_output_until(v, done)
        assert tr.gaps == []
        assert tr.start > last
        assert tr.end - tr.start <= RING


def test_resume_point_still_in_ring_gets_no_gap(ring_stack, term):
    st = ring_stack
    c = st.client()
    sid, _ = term(client=c)
    last, done = overflow_while_unwatched(st, c, sid, 20000)
    with c.stream(sid, last_event_id=last) as v:
        first = v.next_event()
        assert first.name == "output", first
        assert first.id - len(first.payload) == last
        tr = Transcript()
        tr.feed(first)
        read_output_until(v, done, tr)
        assert tr.data.count(b"x") >= 20000


def test_gap_is_recorded_in_the_audit_log(ring_stack, term):
    st = ring_stack
    c = st.client()
    sid, _ = term(client=c)
    last, done = overflow_while_unwatched(st, c, sid, 200000)
    with c.stream(sid, last_event_id=last) as v:
        gap = v.next_event()
        assert gap.name == "gap"
    wait_for(lambda: st.db(
        "SELECT * FROM terminal_events WHERE session_id = ? AND kind = 'gap'",
        (sid,)), 3, what="a gap event in terminal_events")
