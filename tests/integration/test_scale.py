"""test_scale.py -- the long tests (marked slow; their size follows
PTYD_TEST_SCALE, default 1 = full size):

- more than 1,024 open streams at once (full size 1,100) through nginx,
  each still delivering output, with no descriptor of a ptyd.fcgi process
  reaching 1024 (libfcgi's select() would corrupt memory past it);
- 100,000 keystroke POSTs while 200 streams are open (full size), with
  zero non-2xx answers and zero lost or reordered keystrokes.

CI may run them reduced (PTYD_TEST_SCALE=0.1: 110 streams, 10,000 POSTs);
they still assert everything at that size.
"""

import selectors
import threading
import time

import pytest

from ptyd_http import SSE, marker, read_output_until
from ptyd_stack import (fd_numbers, pids_matching, proc_state, scale,
                        wait_for)


def fcgi_pids(st):
    return [p for p in pids_matching(
        lambda cl: cl[0].endswith("ptyd.fcgi") and
        any(st.state in a for a in cl)) if proc_state(p) != "Z"]


@pytest.fixture(scope="module")
def big(make_stack):
    return make_stack("big", ptyd_args=["--max-terminals", "64",
                                        "--max-viewers", "128"])


@pytest.mark.slow
@pytest.mark.deadline(240)
def test_more_than_1024_open_streams_all_deliver_output(big, new_sid):
    st = big
    c = st.client()
    n_streams = scale(1100, 40)
    n_terms = 20
    per = -(-n_streams // n_terms)
    sids = []
    streams = []
    try:
        for _ in range(n_terms):
            sid = new_sid()
            assert c.start(sid).status == 200
            sids.append(sid)
        for i in range(n_streams):
            sid = sids[i // per]
            try:
                s = SSE(st.port, sid, timeout=20)
            except (AssertionError, OSError) as e:
                raise AssertionError("stream %d of %d failed: %s\n"
                                     "nginx error log tail:\n%s"
                                     % (i + 1, n_streams, e,
                                        st.log_tail("nginx-error")))
            assert s.status == 200, (i, s.status, s.body)
            streams.append((sid, s))
        viewers = wait_for(lambda: (lambda n: n if n >= n_streams else
                                    None)(c.health().json()["ptyd"]
                                          ["viewers"]), 15,
                           what="%d viewers attached" % n_streams)
        assert viewers == n_streams
        # Streams live at 1024 and above (fcgi/streamloop.c), where
        # libfcgi's select() never sees them: the numbers below stay free
        # for the requests libfcgi parses, however many streams are open.
        pids = fcgi_pids(st)
        assert pids, "no ptyd.fcgi process found"
        low = sum(len([n for n in fd_numbers(p) if n < 1024]) for p in pids)
        high = sum(len([n for n in fd_numbers(p) if n >= 1024]) for p in pids)
        assert high >= 2 * n_streams, (low, high)
        assert low < 64 * len(pids), (low, high)
        # Keystrokes still answer promptly and reach every stream.
        wants = {}
        slowest = 0.0
        for sid in sids:
            cmd, want = marker()
            t0 = time.monotonic()
            r = c.input(sid, cmd)
            slowest = max(slowest, time.monotonic() - t0)
            assert r.status == 200, r
            wants[sid] = want
        assert slowest < 2.0, slowest
        for sid, s in streams:
            read_output_until(s, wants[sid], timeout=20)
        assert c.health().status == 200
    finally:
        for _, s in streams:
            s.close()
    wait_for(lambda: c.health().json()["ptyd"]["viewers"] == 0, 15,
             what="every viewer detached after the clients left")
    for sid in sids:
        c.close_term(sid)


class Drain(threading.Thread):
    """Reads many streams at once: the checked ones parsed into events,
    the others only drained so they never hold the shells back."""

    def __init__(self, checked, drained):
        super().__init__(daemon=True)
        self.sel = selectors.DefaultSelector()
        for s in checked:
            s.sock.setblocking(False)
            self.sel.register(s.sock, selectors.EVENT_READ, ("check", s))
        for s in drained:
            s.sock.setblocking(False)
            self.sel.register(s.sock, selectors.EVENT_READ, ("drain", s))
        self.stop = threading.Event()
        self.error = None

    def run(self):
        try:
            while not self.stop.is_set():
                # Let data gather between rounds: a few large reads cost
                # the senders far less interpreter time than many small.
                time.sleep(0.05)
                for key, _ in self.sel.select(0.2):
                    kind, s = key.data
                    try:
                        data = key.fileobj.recv(262144)
                    except (BlockingIOError, InterruptedError):
                        continue
                    if not data:
                        self.sel.unregister(key.fileobj)
                        continue
                    if kind == "check":
                        s.feed(data)
        except Exception as e:      # reported by the test
            self.error = e


@pytest.mark.slow
@pytest.mark.deadline(280)
def test_keystroke_posts_under_load_never_fail_or_get_lost(big, new_sid):
    st = big
    c = st.client()
    n_posts = scale(100000, 2000)
    n_terms = 10
    n_streams = 200
    sids = [new_sid() for _ in range(n_terms)]
    streams = []
    drain = None
    try:
        for sid in sids:
            r = c.start(sid)
            assert r.status == 200, r
            pid = r.json()["pid"]
            # Every byte typed comes back once, unchanged, in order.
            assert c.input(sid, "stty raw -echo; exec cat\r").status == 200
            wait_for(lambda: open("/proc/%d/comm" % pid).read().strip()
                     == "cat", 5, what="cat running in " + sid)
        per = n_streams // n_terms
        checked, drained = [], []
        for sid in sids:
            for k in range(per):
                s = SSE(st.port, sid, timeout=20)
                assert s.status == 200, (s.status, s.body)
                streams.append(s)
                (checked if k == 0 else drained).append(s)
        drain = Drain(checked, drained)
        drain.start()
        failures = []
        sent = {sid: [] for sid in sids}

        def sender(sid, count):
            cl = st.client(keepalive=True)
            try:
                cl.input(sid, "<<")
                for i in range(count):
                    tok = "%x." % i
                    try:
                        r = cl.input(sid, tok)
                        status = r.status
                    except Exception as e:
                        status = repr(e)
                    if status != 200:
                        failures.append((sid, i, status))
                        continue
                    sent[sid].append(tok)
                cl.input(sid, ">>")
            finally:
                cl.close()
        t0 = time.monotonic()
        threads = [threading.Thread(target=sender,
                                    args=(sid, n_posts // n_terms))
                   for sid in sids]
        for t in threads:
            t.start()
        for t in threads:
            t.join(240)
        dt = time.monotonic() - t0
        assert not any(t.is_alive() for t in threads), "senders hung"
        assert failures == [], "%d failed POSTs, first: %r" % (
            len(failures), failures[:5])
        total = sum(len(v) for v in sent.values())
        assert total == (n_posts // n_terms) * n_terms
        print("%d POSTs in %.1fs (%.0f/s) with %d streams open"
              % (total, dt, total / dt, n_streams))

        # Every keystroke arrived, once, in order, on the checked viewer
        # of its terminal.
        def text_of(s):
            return b"".join(e.payload for e in list(s.events)
                            if e.name == "output")
        for sid, s in zip(sids, checked):
            want = ("<<" + "".join(sent[sid]) + ">>").encode()
            got = wait_for(lambda: (lambda b: b if b.endswith(b">>") else
                                    None)(text_of(s)), 30,
                           what="all keystrokes echoed on " + sid)
            i = got.find(b"<<")
            assert got[i:] == want, (
                "keystrokes lost or reordered on %s: got %d bytes, want %d"
                % (sid, len(got) - i, len(want)))
        assert drain.error is None, drain.error
    finally:
        if drain is not None:
            drain.stop.set()
            drain.join(5)
        for s in streams:
            s.close()
        for sid in sids:
            c.close_term(sid)
