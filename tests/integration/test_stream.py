"""test_stream.py -- the output stream's content on the shared default
stack: base64 bytes exact, text mode's U+FFFD and JSON escaping, a
multi-byte character never split, 10 MB complete and in order, a vanished
client detached, many concurrent streams with POSTs still answering.
"""

import time

import pytest

from ptyd_http import Shell, Transcript, marker, read_output_until
from ptyd_stack import wait_for


def printf_all_bytes():
    """A printf format that prints bytes 0..255 in order."""
    fmt = "".join("%%" if b == 0x25 else "\\%03o" % b for b in range(256))
    # -opost: the tty must not turn \n into \r\n in the middle of them.
    return "stty -opost; printf '%s'; stty opost" % fmt


def test_base64_output_carries_exactly_the_raw_bytes(stack, term):
    sid, _ = term()
    c = stack.client()
    with Shell(c, sid, encoding="base64") as sh:
        out = sh.run(printf_all_bytes())
        assert bytes(range(256)) in out, out
        sh.run("printf '\\303\\050|\\300\\257|\\355\\240\\200|\\377'")
        assert b"\xc3\x28|\xc0\xaf|\xed\xa0\x80|\xff" in sh.tr.data
        # Every event is b64 and ids advance by exactly its bytes (the
        # transcript checked contiguity while feeding).
        out_ev = [e for e in sh.s.events if e.name == "output"]
        assert out_ev and all(set(e.data) == {"b64"} for e in out_ev)
        assert not sh.tr.inexact


def test_text_output_replaces_invalid_utf8_and_escapes_controls(stack,
                                                                 term):
    sid, _ = term()
    c = stack.client()
    with Shell(c, sid) as sh:
        sh.run(printf_all_bytes())
        sh.run("printf 'X\\303\\050Y'")
        raw_lines = [ln for e in sh.s.events for ln in e.lines]
    text = sh.tr.data.decode("utf-8")
    want = bytes(range(128)).decode("ascii") + "\ufffd" * 128
    assert want in text, repr(text[-600:])
    assert "X\ufffd(Y" in text
    # JSON escapes every control character: none is raw on the wire.
    for ln in raw_lines:
        assert not any(ord(ch) < 0x20 for ch in ln), repr(ln)


def test_multibyte_characters_are_never_split_between_events(stack, term):
    sid, _ = term()
    c = stack.client()
    n = 30000
    with Shell(c, sid) as sh:
        # Three-byte EURO SIGN typed as octal escapes, so the command
        # line itself is ASCII; 90,000 bytes cross many read boundaries.
        sh.run("printf '\\342\\202\\254%%.0s' $(seq 1 %d)" % n, timeout=20)
        events = [e for e in sh.s.events if e.name == "output"]
    assert not sh.tr.inexact, "an event carried U+FFFD"
    assert sh.tr.data.decode("utf-8").count("\u20ac") == n
    for e in events:
        assert "\ufffd" not in e.data["text"], e
    # Ids advance by the UTF-8 length of each event's text: nothing split,
    # lost or duplicated at the boundaries.
    prev = None
    for e in events:
        if prev is not None:
            assert e.id - prev.id == len(e.data["text"].encode()), (prev, e)
        prev = e


@pytest.mark.deadline(120)
def test_ten_megabytes_reach_a_fast_reader_complete_and_in_order(stack,
                                                                  term):
    sid, _ = term()
    c = stack.client()
    n = 1400000     # seq output is ~11.5 MB once the tty adds \r
    with Shell(c, sid) as sh:
        t0 = time.monotonic()
        out = sh.run("seq 1 %d" % n, timeout=90)
        dt = time.monotonic() - t0
    assert len(out) > 10 * 1000 * 1000
    lines = out.split(b"\r\n")
    assert len(lines) == n, (len(lines), lines[:3], lines[-3:])
    for i, ln in enumerate(lines, 1):
        if ln != str(i).encode():
            raise AssertionError("line %d is %r" % (i, ln[:80]))
    print("10 MB test: %d bytes in %.2fs (%.1f MB/s)"
          % (len(out), dt, len(out) / dt / 1e6))


@pytest.mark.parametrize("abort", [True, False], ids=["rst", "fin"])
def test_vanished_client_makes_terminal_unwatched_within_two_seconds(
        stack, term, abort):
    sid, _ = term()
    c = stack.client()
    s = c.stream(sid)
    assert s.status == 200
    s.next_event()
    wait_for(lambda: c.terminals()[sid]["subscribers"] == 1, 3,
             what="subscribers 1")
    t0 = time.monotonic()
    s.close(abort=abort)
    t = wait_for(lambda: (lambda e: e if e["subscribers"] == 0 else None)(
        c.terminals()[sid]), 2.0, interval=0.02,
        what="viewer detached after the client vanished")
    dt = time.monotonic() - t0
    assert t["unwatched_since"] is not None
    print("detached %.3fs after the client vanished" % dt)
    # Nothing pins the terminal: the mirror agrees within its flush.
    wait_for(lambda: (lambda r: r and r["subscribers"] == 0 and
                      r["unwatched_since"] is not None)(
        stack.db_terminal(sid)), 3, what="mirror shows unwatched")


def test_vanished_idle_client_of_a_silent_terminal_is_detached(stack, term):
    # The handler must notice the client went away by polling the FastCGI
    # connection, not only at its next write: here nothing is written.
    sid, _ = term()
    c = stack.client()
    with Shell(c, sid) as sh:
        sh.run("true")
    s = c.stream(sid)
    while s.poll(0.3):
        pass
    wait_for(lambda: c.terminals()[sid]["subscribers"] == 1, 3,
             what="subscribers 1")
    s.close(abort=True)
    wait_for(lambda: c.terminals()[sid]["subscribers"] == 0, 2.0,
             interval=0.02, what="silent viewer detached")


@pytest.mark.deadline(120)
def test_fifty_concurrent_streams_while_posts_keep_answering(stack, term):
    c = stack.client()
    sids = [term()[0] for _ in range(10)]
    streams = {sid: [c.stream(sid) for _ in range(5)] for sid in sids}
    try:
        for ss in streams.values():
            for s in ss:
                assert s.status == 200, (s.status, s.body)
        wait_for(lambda: c.health().json()["ptyd"]["viewers"] >= 50, 5,
                 what="50 viewers attached")
        wants = {}
        worst = 0
        for round_ in range(5):
            for sid in sids:
                cmd, want = marker()
                t0 = time.monotonic()
                r = c.input(sid, cmd)
                worst = max(worst, time.monotonic() - t0)
                assert r.status == 200, r
                wants.setdefault(sid, []).append(want)
        assert worst < 2.0, "slowest POST took %.2fs" % worst
        for sid, ss in streams.items():
            for s in ss:
                tr = Transcript()
                for w in wants[sid]:
                    read_output_until(s, w, tr)
    finally:
        for ss in streams.values():
            for s in ss:
                s.close()
