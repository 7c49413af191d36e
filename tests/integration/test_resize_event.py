"""test_resize_event.py -- the stream tells its viewers the terminal's
size (DESIGN 3, `resize`), through nginx with two users: every viewer
(the owner's stream, a view share's) gets the event, with no id, at the
same place in the output (after the bytes written before the resize,
before those written after it), a viewer far behind included; the ids of
the output around it are unchanged; a viewer that attaches later gets
the size as it is, once, after its replay.

Before the event existed a view-only page asked GET shared every 10 s for
the size, and drew the owner's output at a stale size meanwhile.
"""

import time

import pytest

from ptyd_http import Transcript, marker, read_output_until

USERS = ["alice:pw-a", "bob:pw-b"]
# More output than the buffers between ptyd and a viewer that reads none
# of it hold, so ptyd still owes him some of it when the size changes.
FLOOD = 6 * 1024 * 1024


@pytest.fixture(scope="module")
def st(make_stack):
    # A ring that holds the whole flood: a viewer that reads none of it
    # does not hold the shell back.
    return make_stack("resize-ev", users=USERS,
                      ptyd_args=["--ring-size", str(2 * FLOOD)])


def share(c, sid):
    r = c.post("share", {"session_id": sid, "role": "view",
                         "expires_in": 600, "user": "bob"})
    assert r.status == 200, r
    return r.json()


def resize_events(s):
    return [e for e in s.events if e.name == "resize"]


def until_resize(s, tr, timeout=20):
    """Read s into tr until its next resize event; that event, checked
    for its framing (event and data, no id)."""
    deadline = time.monotonic() + timeout
    while True:
        ev = s.next_event(max(0.01, deadline - time.monotonic()))
        if ev.name == "resize":
            assert ev.id is None, ev.lines
            assert [k for k, _ in ev.fields] == ["event", "data"], ev.lines
            assert ev.data_raw.startswith('{"rows": '), ev.data_raw
            return ev
        tr.feed(ev)


def quiet(s, tr, secs=0.5, timeout=20):
    """Read s into tr until nothing comes for secs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            ev = s.next_event(secs)
        except TimeoutError:
            return
        tr.feed(ev)
    raise AssertionError("the stream never went quiet")


def test_every_viewer_gets_the_resize_where_it_stands_in_the_output(
        st, new_sid):
    a, b = st.client("alice"), st.client("bob")
    sid = new_sid()
    assert a.start(sid, rows=24, cols=80).status == 200
    try:
        h = {"Ptyd-Share": share(a, sid)["token"]}
        own = a.stream(sid)
        assert own.status == 200
        # Bob's window takes almost nothing: he falls behind at once.
        bob = b.stream(None, headers=h, rcvbuf=4096)
        assert bob.status == 200
        tro, trb = Transcript(), Transcript()
        # Each first hears the size it joins at, after its replay.
        assert until_resize(own, tro).data == {"rows": 24, "cols": 80}
        assert until_resize(bob, trb).data == {"rows": 24, "cols": 80}

        # Output bob does not read (the ring holds it all: the shell
        # goes on); the owner reads it.
        cmd, done = marker("fl")
        assert a.input(sid, "yes 0123456789abcdefghij | head -c %d; %s"
                       % (FLOOD, cmd)).status == 200
        read_output_until(own, done, tro, timeout=60)
        quiet(own, tro)
        at = tro.end

        assert a.resize(sid, rows=30, cols=100).status == 200
        ev = until_resize(own, tro)
        assert ev.data == {"rows": 30, "cols": 100}
        assert tro.end == at, "output before the resize came after it"
        # Output after it, before bob reads on.
        cmd2, after = marker("af")
        assert a.input(sid, cmd2).status == 200
        read_output_until(own, after, tro)

        # Bob, megabytes behind when it was made, gets it exactly there
        # too: not where he stood, nor where he is when he reads on.
        ev = until_resize(bob, trb, timeout=60)
        assert ev.data == {"rows": 30, "cols": 100}
        assert trb.end == at, (trb.end, at)
        # And the rest after it; ids go on from where they were (the
        # Transcript checks each output starts at the last's end).
        read_output_until(bob, after, trb, timeout=60)
        for s, tr in ((own, tro), (bob, trb)):
            sizes = [e.data for e in resize_events(s)]
            assert sizes == [{"rows": 24, "cols": 80},
                             {"rows": 30, "cols": 100}], sizes
            i = s.events.index(resize_events(s)[-1])
            ids = [e.id for e in s.events[i + 1:] if e.name == "output"]
            assert ids and ids[0] > at
            assert after.encode() in tr.data[at - tr.start:]
        own.close()
        bob.close()
    finally:
        a.close_term(sid)


def test_a_later_viewer_gets_the_size_after_its_replay(st, new_sid):
    a = st.client("alice")
    sid = new_sid()
    assert a.start(sid, rows=24, cols=80).status == 200
    try:
        own = a.stream(sid)
        tro = Transcript()
        until_resize(own, tro)
        assert a.resize(sid, rows=33, cols=101).status == 200
        assert until_resize(own, tro).data == {"rows": 33, "cols": 101}
        cmd, m = marker()
        assert a.input(sid, cmd).status == 200
        read_output_until(own, m, tro)
        quiet(own, tro)
        end = tro.end

        # Raw replay: all of the backlog, then the size as it is now
        # (the change before the attach is not replayed where it stood).
        late = a.stream(sid)
        tr = Transcript()
        ev = until_resize(late, tr)
        assert ev.data == {"rows": 33, "cols": 101}
        assert tr.end == end and m.encode() in tr.data
        # A screen: the same size, once, after it.
        scr = a.stream(sid, query={"attach": "screen"})
        first = scr.next_event()
        assert first.name == "screen", first
        assert (first.data["rows"], first.data["cols"]) == (33, 101)
        ev = until_resize(scr, Transcript())
        assert ev.data == {"rows": 33, "cols": 101}
        # Nothing more while the size stays.
        quiet(scr, Transcript())
        assert len(resize_events(scr)) == 1
        for s in (own, late, scr):
            s.close()
    finally:
        a.close_term(sid)
