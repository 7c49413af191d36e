"""test_local_account.py -- "local" means this Unix account (DESIGN 6,
PTYD_LOCAL=account), tried with real Unix accounts through real nginx.

Regression: every local user counted as local, so on a shared host any
other account (or another customer's script) that reached nginx on
loopback got a shell of this account.  Here a stack runs as one account
(created for the test), and requests come from that account, from root,
and from a second account, each as a real process of that uid.
"""

import json
import os
import pwd
import socket
import sqlite3
import struct
import subprocess
import time

import pytest

from owned_stack import OwnedStack, as_user, ensure_user
from ptyd_stack import children_of

OWNER = "ptyd-itest-own"
OTHER = "ptyd-itest-oth"


@pytest.fixture(scope="module")
def accounts():
    if os.geteuid() != 0:
        pytest.skip("needs root to create Unix accounts (useradd)")
    made = [n for n in (OWNER, OTHER) if ensure_user(n)]
    try:
        yield OWNER, OTHER
    finally:
        for n in made:
            subprocess.run(["userdel", n], capture_output=True, timeout=30)


@pytest.fixture(scope="module")
def owned(accounts):
    st = OwnedStack(accounts[0]).start()
    try:
        yield st
    finally:
        st.stop()


def start_as_owner(st, sid):
    """The owner's own client (a process of that uid) starts a terminal."""
    code = ("import http.client,json,sys\n"
            "c=http.client.HTTPConnection('127.0.0.1',%d,timeout=10)\n"
            "c.request('POST','/api/terminal/start',json.dumps("
            "{'session_id':%r}),{'Content-Type':'application/json',"
            "'Host':'127.0.0.1:%d'})\n"
            "r=c.getresponse();print(r.status);print(r.read().decode())\n"
            % (st.port, sid, st.port))
    r = as_user(st.user, ["/usr/bin/python3", "-c", code])
    status, body = r.stdout.decode().split("\n", 1)
    return int(status), body


def test_another_account_gets_nothing_of_this_accounts_shells(owned,
                                                              accounts):
    sid = "acct-%d" % os.getpid()
    status, body = start_as_owner(owned, sid)
    assert status == 200, body
    pid = json.loads(body)["pid"]
    # The shell runs as the owner's account.
    assert os.stat("/proc/%d" % pid).st_uid == pwd.getpwnam(OWNER).pw_uid
    got = owned.probe(OTHER, sid)
    assert got == {k: 403 for k in got}, got
    # The terminal is untouched: still running, not closed by the probe.
    assert os.path.exists("/proc/%d" % pid)


def test_the_accounts_own_clients_and_root_get_in(owned, accounts):
    sid = "acct-own-%d" % os.getpid()
    status, body = start_as_owner(owned, sid)
    assert status == 200, body
    got = owned.probe(OWNER, sid)
    assert got["health"] == 200 and got["list"] == 200, got
    assert got["input"] == 200 and got["resize"] == 200, got
    assert got["output"] == 200 and got["start"] == 200, got
    assert got["close"] == 200, got
    got = owned.probe("root", sid + "-r")
    assert got["health"] == 200 and got["list"] == 200, got


def test_address_mode_lets_every_local_account_in(accounts):
    """PTYD_LOCAL=address is the seed's rule, for a single-user machine:
    the same probe that is refused above gets through, so the refusal is
    the account check and nothing else."""
    st = OwnedStack(accounts[0], ["PTYD_LOCAL=address"]).start()
    try:
        got = st.probe(OTHER, "addr-%d" % os.getpid())
        assert got["health"] == 200 and got["list"] == 200, got
    finally:
        st.stop()


# Sends a harmless GET and, pipelined behind it, the real request, then
# half-closes, reads GET's answer and closes: the socket is in TIME_WAIT
# (owned by no one) by the time nginx passes the second request on.
CLOSE_TRICK = r'''
import json, socket, sys, time
port, sid, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
b = json.dumps({"session_id": sid}).encode()
req = (b"POST /api/terminal/start HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
       b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
       % (port, len(b))) + b
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" + req)
    s.shutdown(socket.SHUT_WR)
    s.recv(65536)
    s.close()
    time.sleep(0.2)
'''


def test_a_socket_closed_after_sending_is_no_ones(owned, accounts):
    """Regression: a socket in TIME_WAIT reads as uid 0 (root, let in),
    and another account could turn its own into one by closing right
    after sending: 19 of 20 such starts ran as this account."""
    sid = "acct-tw-%d" % os.getpid()
    r = as_user(OTHER, ["/usr/bin/python3", "-c", CLOSE_TRICK,
                        str(owned.port), sid, "10"], timeout=60)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    time.sleep(1.5)         # the mirror flushes within a second
    got = owned.probe("root", sid + "-check")
    assert got["list"] == 200
    with sqlite3.connect("file:%s?mode=ro" % os.path.join(
            owned.state, "ptyd.db"), uri=True) as db:
        rows = db.execute("SELECT kind FROM terminal_events WHERE "
                          "session_id = ?", (sid,)).fetchall()
    assert rows == [], "another account's request ran: %r" % rows


# Run as another account: a TCP connection to nginx whose port it prints,
# then, once told, a request for a shell on it; prints the status.
ASK_ON_SIGNAL = r'''
import json, socket, sys
port, sid = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port), timeout=10)
print(s.getsockname()[1], flush=True)
sys.stdin.readline()
body = json.dumps({"session_id": sid}).encode()
s.sendall(b"POST /api/terminal/start HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
          b"Content-Type: application/json\r\nContent-Length: %d\r\n"
          b"Connection: close\r\n\r\n" % (port, len(body)) + body)
resp = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    resp += b
print(int(resp.split()[1]), flush=True)
'''


def forged_answer(cport, port, uid, seq):
    """A socket-diagnostics answer, as the kernel gives one, naming uid as
    the owner of the client socket 127.0.0.1:cport -> 127.0.0.1:port."""
    lo = socket.inet_aton("127.0.0.1") + bytes(12)
    sockid = (struct.pack(">HH", cport, port) + lo + lo +
              struct.pack("=III", 0, 0xffffffff, 0xffffffff))
    msg = (struct.pack("=BBBB", socket.AF_INET, 1, 0, 0) + sockid +
           struct.pack("=IIIII", 0, 0, 0, uid, 4242))
    # SOCK_DIAG_BY_FAMILY (20)
    return struct.pack("=IHHII", 16 + len(msg), 20, 0, seq, 0) + msg


def netlink_portids(pids):
    """Port ids of the NETLINK_SOCK_DIAG sockets the processes hold."""
    inodes = set()
    for pid in pids:
        d = "/proc/%d/fd" % pid
        for fd in os.listdir(d):
            try:
                t = os.readlink(os.path.join(d, fd))
            except OSError:
                continue
            if t.startswith("socket:["):
                inodes.add(int(t[8:-1]))
    found = []
    with open("/proc/net/netlink") as f:
        next(f)
        for line in f:
            w = line.split()
            if int(w[1]) == 4 and int(w[-1]) in inodes:
                found.append(int(w[2]))
    return found


def test_only_the_kernels_socket_diagnostics_answer_counts(accounts):
    """ptyd.fcgi keeps its netlink sockets between lookups, so each has a
    port id that /proc/net/netlink shows.  Only a sender with CAP_NET_ADMIN
    may send to another's NETLINK_SOCK_DIAG socket; were one to queue
    answers there naming this account as the owner of another account's
    TCP socket, that account would get a shell.  The sockets are connected
    to the kernel, which then refuses every other sender, and each answer's
    sender and sequence number are checked.  Here root forges them for
    the other account's connection: every one refused, and so is the
    request.  (One ptyd.fcgi process, so the request meets the socket the
    answers were aimed at.)  The refusals are what this catches: with
    the connect gone, the answers are queued (99 of 99) and only the
    sequence check, whose numbers count up from 1, stands between them
    and a shell; the status is checked too, for the case where every
    defence is gone (helper-35: 200)."""
    st = OwnedStack(accounts[0], ["PTYD_PROCESSES=1"]).start()
    asker = None
    try:
        got = st.probe(OWNER, "nl-own-%d" % os.getpid())
        assert got["list"] == 200, got
        with open(os.path.join(st.state, "run", "fcgi.pid")) as f:
            master = int(f.read().strip())
        portids = netlink_portids([master] + children_of(master))
        assert portids, "ptyd.fcgi keeps no netlink socket to aim at"
        asker = subprocess.Popen(
            ["runuser", "-u", OTHER, "--", "/usr/bin/python3", "-c",
             ASK_ON_SIGNAL, str(st.port), "nl-forged-%d" % os.getpid()],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        cport = int(asker.stdout.readline())
        uid = pwd.getpwnam(OWNER).pw_uid
        sent = refused = 0
        with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 4) as nl:
            for pid in portids:
                # The sequence numbers of the first lookups, among them
                # the next one; never blocking on a full queue.
                for seq in range(1, 100):
                    try:
                        nl.sendto(forged_answer(cport, st.port, uid, seq),
                                  socket.MSG_DONTWAIT, (pid, 0))
                        sent += 1
                    except ConnectionRefusedError:
                        refused += 1
                    except BlockingIOError:
                        break
        asker.stdin.write(b"go\n")
        asker.stdin.flush()
        status = int(asker.stdout.readline())
        assert asker.wait(timeout=30) == 0
        assert (sent, refused) == (0, 99 * len(portids)), \
            "ptyd.fcgi's netlink sockets take answers from anyone"
        assert status == 403, "the forged owner was believed"
    finally:
        if asker is not None and asker.poll() is None:
            asker.kill()
        st.stop()
