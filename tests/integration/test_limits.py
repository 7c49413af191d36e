"""test_limits.py -- limits and refusals that need special stacks: the
viewer limit (429), the gate behind a trusted proxy (403), ptyd down with
autostart off (503) and on (started exactly once), the terminal cap with
its eviction order.
"""

import os
import signal
import threading
import time

import pytest

from ptyd_http import SSE, marker, raw_status, read_output_until
from ptyd_stack import proc_cmdline, proc_gone, wait_for


def ptyd_pids_of(st):
    """Live ptyd daemons of this stack (found by their socket, in the
    stack's state directory whoever started them: their environment is
    wiped, DESIGN 6)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/comm" % d) as f:
                if f.read().strip() != "ptyd":
                    continue
            with open("/proc/%s/stat" % d) as f:
                if f.read().rpartition(")")[2].split()[0] == "Z":
                    continue
        except (FileNotFoundError, ProcessLookupError):
            continue
        if st.state in " ".join(proc_cmdline(int(d)) or []):
            out.append(int(d))
    return out


# -- viewer limit and the trusted-proxy gate (one stack) ---------------------

@pytest.fixture(scope="module")
def limited(make_stack):
    return make_stack("limited", ptyd_args=["--max-viewers", "2"],
                      env=["PTYD_TRUST_FORWARDED_FOR=1",
                           "PTYD_TRUSTED_PROXY_CIDRS=10.0.0.0/8"])


def test_stream_beyond_viewer_limit_is_429_before_any_200(limited, term):
    c = limited.client()
    sid, _ = term(client=c)
    a = c.stream(sid)
    b = c.stream(sid)
    try:
        assert a.status == 200 and b.status == 200
        with c.stream(sid) as third:
            assert third.status == 429, (third.status, third.body)
            assert "error" in third.json()
            # Every 429 says when to come back (DESIGN 2).
            assert third.headers.get("retry-after", "").isdigit(), \
                third.headers
        # The refused one did not take a slot: still two viewers.
        assert c.terminals()[sid]["subscribers"] == 2
        a.close(abort=True)
        wait_for(lambda: c.terminals()[sid]["subscribers"] == 1, 3,
                 what="one viewer left")
        with c.stream(sid) as again:
            assert again.status == 200
            cmd, want = marker()
            assert c.input(sid, cmd).status == 200
            read_output_until(again, want)
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize("xff", [
    "8.8.8.8",
    "10.0.0.1, 8.8.8.8",
    "8.8.8.8, 10.0.0.1",
    "::ffff:8.8.8.8",
    "garbage",
    "192.168.1.5, not-an-ip",
    "192.168.1.5, ",
])
def test_forwarded_public_or_malformed_client_is_denied_by_the_gate(
        limited, xff):
    c = limited.client()
    r = c.get("list", headers={"X-Forwarded-For": xff})
    assert r.status == 403, r
    msg = r.json()["error"]
    # One fixed message for every denial, whatever the endpoint.
    r2 = c.post("start", {"session_id": "gate-x"},
                headers={"X-Forwarded-For": xff})
    assert r2.status == 403 and r2.json()["error"] == msg, r2
    assert "gate-x" not in c.terminals()


@pytest.mark.parametrize("xff", [
    "192.168.1.5",
    "192.168.1.5, 10.0.0.1",
    "::ffff:192.168.1.5",
    "172.16.3.4",
])
def test_forwarded_private_client_through_trusted_proxies_is_allowed(
        limited, limited_address, xff):
    # By address (PTYD_LOCAL=address, the seed's rule) a private client
    # behind trusted proxies is local.  With the default (account) it is
    # not: no socket of this host says whose it is (DESIGN 6).
    r = limited.client().get("list", headers={"X-Forwarded-For": xff})
    assert r.status == 403, r
    r = limited_address.client().get("list", headers={"X-Forwarded-For": xff})
    assert r.status == 200, r


@pytest.fixture(scope="module")
def limited_address(make_stack):
    return make_stack("limited-address", env=[
        "PTYD_TRUST_FORWARDED_FOR=1", "PTYD_LOCAL=address",
        "PTYD_TRUSTED_PROXY_CIDRS=10.0.0.0/8"])


@pytest.mark.parametrize("name", ["X-Forwarded-For", "X-Real-IP"])
def test_a_forged_first_line_of_a_repeated_forwarded_header_is_no_address(
        limited_address, name):
    # The attack: a trusted proxy that adds its own X-Forwarded-For line
    # (HAProxy's `option forwardfor` does) puts it after the one the
    # client wrote.  nginx passed each line as a param of its own and
    # libfcgi's lookup found the first, so the client chose its address:
    # a private one, which PTYD_LOCAL=address counts as local (200 before
    # the fix).  nginx now passes X-Forwarded-For as one param, its lines
    # joined in order, which names a public client (403); two X-Real-IP
    # lines arrive as two params, which name no one (403).  Other front
    # servers: test_front_forwarded.
    port = limited_address.port

    def get(*lines):
        return raw_status(port, "GET", "/api/terminal/list", list(lines))

    assert get((name, "192.168.1.5")) == 200
    assert get((name, "203.0.113.9")) == 403
    assert get((name, "192.168.1.5"), (name, "203.0.113.9")) == 403
    assert get((name, "192.168.1.5"), (name, "192.168.1.6")) == (
        200 if name == "X-Forwarded-For" else 403)


def test_a_client_named_only_in_forwarded_or_via_is_not_the_proxy(
        limited_address):
    # Forwarded (RFC 7239) and Via are not read for an address.  A trusted
    # proxy that names its client only there, or not at all, was taken to
    # be making its own request: loopback, local (200 before).  Beside
    # X-Forwarded-For, Via changes nothing.
    port = limited_address.port

    def get(*lines):
        return raw_status(port, "GET", "/api/terminal/list", list(lines))

    assert get(("Forwarded", "for=203.0.113.9")) == 403
    assert get(("Forwarded", "for=192.168.1.5")) == 403
    assert get(("Via", "1.1 varnish")) == 403
    assert get() == 200
    assert get(("X-Forwarded-For", "192.168.1.5"),
               ("Via", "1.1 varnish")) == 200


def test_forwarded_must_name_the_client_x_forwarded_for_names(
        limited_address):
    # A proxy that writes only Forwarded passes on the client's own
    # X-Forwarded-For, and that named whatever the client wished: a
    # private address, local with local = address (200 before, for the
    # list and the stream alike).  Forwarded is now checked against it.
    port = limited_address.port
    forged = ("X-Forwarded-For", "192.168.1.5")

    def status(path, *lines):
        return raw_status(port, "GET", path, list(lines))

    for path in ("/api/terminal/list",
                 "/api/terminal/output?session_id=fwd-none"):
        assert status(path, forged, ("Forwarded", "for=203.0.113.9")) \
            == 403, path
        assert status(path, ("X-Real-IP", "192.168.1.5"),
                      ("Forwarded", "for=203.0.113.9;proto=http")) \
            == 403, path
        # The client's own Forwarded line beside the proxy's: which came
        # first no one can tell, so neither is believed.
        assert status(path, forged, ("Forwarded", "for=192.168.1.5"),
                      ("Forwarded", "for=203.0.113.9")) == 403, path
        assert status(path, forged, ("Forwarded", "for=unknown")) \
            == 403, path
    # A proxy that names the same client in both gets in, with or without
    # the quotes RFC 7239 wants around a port.
    assert status("/api/terminal/list", forged,
                  ("Forwarded", 'for="192.168.1.5:5555";proto=http')) == 200
    assert status("/api/terminal/list", forged,
                  ("Forwarded", "for=192.168.1.5:5555;host=example.org:8080")
                  ) == 200


def test_gate_is_checked_before_method(limited):
    c = limited.client()
    r = c.request("GET", "start", headers={"X-Forwarded-For": "8.8.8.8"})
    assert r.status == 403, r


# -- ptyd down ---------------------------------------------------------------

@pytest.fixture(scope="module")
def no_autostart(make_stack):
    return make_stack("noauto", fcgi_args=["--no-autostart"])


def test_ptyd_down_without_autostart_is_503_with_retry_after(no_autostart):
    st = no_autostart
    c = st.client()
    pid = st.ptyd_pid()
    os.kill(pid, signal.SIGTERM)
    wait_for(lambda: proc_gone(pid), 10, what="ptyd exited on SIGTERM")
    for r in (c.health(), c.list(), c.start("down-1"),
              c.input("down-1", "x")):
        assert r.status == 503, r
        assert r.header("retry-after") is not None, r
        assert int(r.header("retry-after")) >= 1
        assert "error" in r.json()
    with SSE(st.port, "down-1") as s:
        assert s.status == 503, (s.status, s.body)
    # Autostart off: nobody brought a daemon back.
    assert ptyd_pids_of(st) == []
    assert c.health().status == 503


@pytest.fixture(scope="module")
def autostart(make_stack):
    return make_stack("auto")


def test_autostart_starts_ptyd_exactly_once_under_concurrent_requests(
        autostart):
    st = autostart
    c = st.client()
    pid = st.ptyd_pid()
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: proc_gone(pid) or None, 5, what="ptyd killed")
    results = []

    def hit():
        try:
            results.append(st.client().health().status)
        except Exception as e:
            results.append(repr(e))
    threads = [threading.Thread(target=hit) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert results.count(200) == 16, results
    pids = ptyd_pids_of(st)
    assert len(pids) == 1, pids
    new = c.health().json()["ptyd"]["pid"]
    assert new == pids[0] and new != pid


# -- the terminal cap --------------------------------------------------------

@pytest.fixture(scope="module")
def capped(make_stack):
    return make_stack("capped", ptyd_args=["--max-terminals", "3",
                                           "--linger", "60"])


def test_cap_evicts_exited_first_then_least_recently_active(capped,
                                                            new_sid):
    st = capped
    c = st.client()
    a, b, d, e, f = (new_sid(x) for x in "abdef")
    pids = {}
    for sid in (a, b, d):
        r = c.start(sid)
        assert r.status == 200, r
        pids[sid] = r.json()["pid"]
        time.sleep(0.05)    # distinct last_activity stamps
    try:
        # a becomes the most recently active; b is now the oldest.
        with c.stream(a) as va:
            cmd, want = marker()
            assert c.input(a, cmd).status == 200
            read_output_until(va, want)
        with c.stream(b) as vb:
            vb.next_event()
            r = c.start(e)
            assert r.status == 200, r
            pids[e] = r.json()["pid"]
            evs = vb.read_to_end(timeout=10)
        assert evs[-1].name == "terminal_closed", evs[-3:]
        assert evs[-1].data["reason"] == "evicted"
        assert set(c.terminals()) == {a, d, e}
        wait_for(lambda: proc_gone(pids[b]), 4, what="evicted shell gone")
        wait_for(lambda: (st.db_terminal(b) or {}).get("state") == "evicted",
                 3, what="mirror shows b evicted")
        # d exits and lingers; the next new id evicts it, not a (which is
        # now the least recently active running one).
        with c.stream(d) as vd:
            assert c.input(d, "exit 4\r").status == 200
            vd.read_to_end(timeout=10)
        assert c.terminals()[d]["running"] is False
        r = c.start(f)
        assert r.status == 200, r
        assert set(c.terminals()) == {a, e, f}
        # Restarting or reusing an existing id at the cap evicts nothing.
        assert c.start(a, restart=True).status == 200
        assert c.start(e).status == 200
        assert set(c.terminals()) == {a, e, f}
    finally:
        for sid in (a, b, d, e, f):
            c.close_term(sid)


def nice_of(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rpartition(")")[2].split()[16])


def test_an_autostart_by_a_stream_gives_ptyd_and_its_shells_no_low_priority(
        make_stack, new_sid):
    """Regression: a stream's thread dropped to nice 19 before it asked
    ptyd, so a page's EventSource reconnecting first after ptyd died
    autostarted ptyd, and every shell it spawned, at nice 19."""
    st = make_stack("auto-nice")
    c = st.client()
    pid = st.ptyd_pid()
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: proc_gone(pid) or None, 5, what="ptyd killed")
    with SSE(st.port, new_sid()) as s:      # no such terminal: 404
        assert s.status == 404, (s.status, s.body)
    new = c.health().json()["ptyd"]["pid"]
    assert new != pid
    sid = new_sid()
    r = c.start(sid)
    assert r.status == 200, r
    try:
        assert nice_of(new) == 0, "ptyd at nice %d" % nice_of(new)
        assert nice_of(r.json()["pid"]) == 0
    finally:
        c.close_term(sid)


def test_a_process_whose_threads_all_streamed_accepts_again(make_stack,
                                                            new_sid):
    """Regression: a stream's thread ends with its stream; when every
    thread of a ptyd.fcgi process had been streaming (at its thread cap)
    nobody was left to lead, and the process never accepted again."""
    st = make_stack("all-streams", fcgi_args=["--processes", "1",
                                              "--max-threads", "3"])
    c = st.client()
    sids = [new_sid() for _ in range(3)]
    for sid in sids:
        assert c.start(sid).status == 200
    try:
        streams = [c.stream(sid) for sid in sids]
        assert all(s.status == 200 for s in streams)
        for s in streams:
            s.close()
        time.sleep(0.5)
        r = c.get("health", timeout=5)
        assert r.status == 200, r
    finally:
        for sid in sids:
            c.close_term(sid)
