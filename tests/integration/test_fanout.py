"""test_fanout.py -- one busy terminal, many viewers, every byte to each
(issue 31: the paths bench/versus times, asserted here without a clock).

- 8 and 64 viewers of one terminal that prints a flood each get all of it,
  exactly, in order (a Transcript per viewer: no byte twice, none missing);
- a viewer that never reads, among fast ones, costs them no byte: ptyd
  cuts it off after its stall timeout and the others get the whole flood.

The flood is bigger than the ring (--ring-size), so the shell is paced by
its viewers throughout: the pty read loop, the pump and its budgets, the
stream loop's sends to a full connection and nginx's buffer all turn over
many times.

A viewer that has taken STREAM_GROW_AFTER (2 MiB, fcgi/stream.c) gets a
larger send buffer on ptyd.fcgi's connection to nginx, so larger records
per sendmsg: the 4 MB floods cross it mid-stream (every byte still comes,
once, in order) and each fast viewer's connection is seen grown.  (One
that never reads does not take 2 MiB: in bench/storm's 1,000, none grew.)
"""

import os
import re
import secrets
import selectors
import subprocess
import time

import pytest

from ptyd_http import SSE, Transcript
from ptyd_stack import children_of

STALL = 2
RING = 256 * 1024
PTYD = ["--max-terminals", "8", "--max-viewers", "128",
        "--stall-timeout", str(STALL), "--ring-size", str(RING)]


@pytest.fixture(scope="module")
def fan(make_stack):
    return make_stack("fanout", ptyd_args=PTYD)


def flood(c, sid, nbytes):
    """Type a command printing nbytes of 'x' between two markers that only
    the shell's expansion produces; return (begin, end) markers."""
    tag = secrets.token_hex(4)
    begin, end = "B%s-2" % tag, "E%s-2" % tag
    r = c.input(sid, "echo B%s-$((1+1)); head -c %d /dev/zero | tr '\\0' x;"
                " echo E%s-$((1+1))\r" % (tag, nbytes, tag))
    assert r.status == 200, r
    return begin.encode(), end.encode()


def read_all(streams, end, timeout):
    """Read every stream (one selector) until each transcript holds end."""
    trs = {s: Transcript() for s in streams}
    sel = selectors.DefaultSelector()
    for s in streams:
        s.sock.setblocking(False)
        sel.register(s.sock, selectors.EVENT_READ, s)
    left = set(streams)
    deadline = time.monotonic() + timeout
    while left:
        assert time.monotonic() < deadline, \
            "%d of %d viewers not done" % (len(left), len(streams))
        for key, _ in sel.select(1.0):
            s = key.data
            try:
                data = s.sock.recv(1 << 16)
            except BlockingIOError:
                continue
            assert data, "a viewer's stream ended early"
            for ev in s.feed(data):
                trs[s].feed(ev)
            s.discard_events()
            if s in left and end in trs[s].data[-4096:]:
                left.discard(s)
                sel.unregister(s.sock)
    return trs


SNDBUF_SMALL = 2 * 16 * 1024       # what the kernel makes of 16 KiB
SNDBUF_GROWN = 2 * 64 * 1024


def fcgi_sndbufs(st):
    """The send buffer (ss's skmem tb) of every Unix socket ptyd.fcgi's
    processes hold."""
    with open(os.path.join(st.state, "run", "fcgi.pid")) as f:
        master = int(f.read().strip())
    pids = {master, *children_of(master)}
    out = subprocess.run(["ss", "-x", "-m", "-p"], capture_output=True,
                         text=True, check=True, timeout=20).stdout
    got = []
    for line in out.splitlines():
        users = {int(p) for p in re.findall(r'"ptyd\.fcgi",pid=(\d+)', line)}
        m = re.search(r"\btb(\d+)", line)
        if users & pids and m:
            got.append(int(m.group(1)))
    return got


def floods_of(trs, begin, end, nbytes):
    for tr in trs.values():
        assert not tr.gaps and not tr.inexact
        data = bytes(tr.data)
        i = data.rindex(begin) + len(begin)
        j = data.rindex(end)
        got = data[i:j].strip(b"\r\n")
        assert len(got) == nbytes and got.count(b"x") == nbytes, \
            (len(got), got.count(b"x"))


@pytest.mark.deadline(180)
@pytest.mark.parametrize("nviewers,nbytes",
                         [(8, 4 * 1000 * 1000), (64, 1000 * 1000)],
                         ids=["8", "64"])
def test_every_viewer_of_a_flood_gets_every_byte(fan, new_sid, nviewers,
                                                  nbytes):
    c = fan.client()
    sid = new_sid()
    assert c.start(sid).status == 200
    streams = []
    try:
        for _ in range(nviewers):
            s = SSE(fan.port, sid, timeout=10)
            assert s.status == 200, s.body
            streams.append(s)
        begin, end = flood(c, sid, nbytes)
        trs = read_all(streams, end, timeout=150)
        floods_of(trs, begin, end, nbytes)
        if nbytes > 2 * 1024 * 1024:
            assert fcgi_sndbufs(fan).count(SNDBUF_GROWN) >= nviewers
    finally:
        for s in streams:
            s.close()
        c.close_term(sid)


@pytest.mark.deadline(120)
def test_a_viewer_that_never_reads_costs_the_fast_ones_no_byte(fan, new_sid):
    c = fan.client()
    sid = new_sid()
    assert c.start(sid).status == 200
    nbytes = 4 * 1000 * 1000     # much more than the ring and the buffers
    fast, stuck = [], None
    try:
        stuck = SSE(fan.port, sid, rcvbuf=4096, timeout=10)
        assert stuck.status == 200
        for _ in range(7):
            s = SSE(fan.port, sid, timeout=10)
            assert s.status == 200, s.body
            fast.append(s)
        begin, end = flood(c, sid, nbytes)
        trs = read_all(fast, end, timeout=100)
        floods_of(trs, begin, end, nbytes)
        assert fcgi_sndbufs(fan).count(SNDBUF_GROWN) >= len(fast)
        # The stuck one is no longer among ptyd's viewers: cut off.
        assert c.health().json()["ptyd"]["viewers"] <= len(fast)
    finally:
        if stuck is not None:
            stuck.close()
        for s in fast:
            s.close()
        c.close_term(sid)
