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
import subprocess

import pytest

from owned_stack import OwnedStack, as_user, ensure_user

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
