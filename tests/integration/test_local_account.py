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
import shutil
import subprocess
import tempfile

import pytest

from ptyd_stack import BUILDDIR, REPO, free_port, wait_for

OWNER = "ptyd-itest-own"
OTHER = "ptyd-itest-oth"

# Run as another uid: every endpoint once, the statuses as JSON.
PROBE = r'''
import http.client, json, sys
port, sid = int(sys.argv[1]), sys.argv[2]
def req(method, endpoint, body=None, query=""):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    h = {"Host": "127.0.0.1:%d" % port}
    if body is not None:
        body = json.dumps(body)
        h["Content-Type"] = "application/json"
    c.request(method, "/api/terminal/" + endpoint + query, body, h)
    r = c.getresponse()
    data = r.read(200) if endpoint != "output" else b""
    return r.status
out = {
    "health": req("GET", "health"),
    "list": req("GET", "list"),
    "input": req("POST", "input", {"session_id": sid, "data": "id -un\n"}),
    "resize": req("POST", "resize", {"session_id": sid, "rows": 30}),
    "output": req("GET", "output", query="?session_id=" + sid),
    "start": req("POST", "start", {"session_id": sid + "-b"}),
    "close": req("POST", "close", {"session_id": sid}),
}
print(json.dumps(out))
'''


def ensure_user(name):
    try:
        pwd.getpwnam(name)
        return False
    except KeyError:
        pass
    subprocess.run(["useradd", "--system", "--no-create-home",
                    "--home-dir", "/nonexistent", "--shell", "/bin/sh",
                    name], check=True, capture_output=True, timeout=30)
    return True


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


def as_user(user, args, timeout=30, env=None):
    return subprocess.run(["runuser", "-u", user, "--"] + args,
                          capture_output=True, timeout=timeout, env=env,
                          stdin=subprocess.DEVNULL)


class OwnedStack:
    """A whole stack started by scripts/ptyd-stack under another account,
    from copies of the binaries and scripts it can read (the checkout
    itself may sit in a directory other accounts cannot enter)."""

    def __init__(self, user, extra_env=()):
        self.user = user
        self.dir = tempfile.mkdtemp(prefix="ptyd-own-", dir="/tmp")
        os.chmod(self.dir, 0o755)
        tree = os.path.join(self.dir, "tree")
        for sub in ("scripts", "nginx", "web", "ptyd", "fcgi"):
            os.makedirs(os.path.join(tree, sub))
        shutil.copy2(os.path.join(REPO, "scripts", "ptyd-stack"),
                     os.path.join(tree, "scripts"))
        for f in os.listdir(os.path.join(REPO, "nginx")):
            shutil.copy2(os.path.join(REPO, "nginx", f),
                         os.path.join(tree, "nginx"))
        shutil.copy2(os.path.join(BUILDDIR, "ptyd", "ptyd"),
                     os.path.join(tree, "ptyd"))
        shutil.copy2(os.path.join(BUILDDIR, "fcgi", "ptyd.fcgi"),
                     os.path.join(tree, "fcgi"))
        self.home = os.path.join(self.dir, "home")
        os.makedirs(self.home)
        pw = pwd.getpwnam(user)
        os.chown(self.home, pw.pw_uid, pw.pw_gid)
        self.tree = tree
        self.state = os.path.join(self.home, "state")
        self.env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
                    "HOME": self.home, "LANG": "C.UTF-8",
                    "PTYD_BUILDDIR": tree, "SHELL": "/bin/sh",
                    "TMPDIR": self.home}
        self.extra_env = list(extra_env)
        self.port = None

    def start(self):
        self.port = free_port()
        cmd = [os.path.join(self.tree, "scripts", "ptyd-stack"), "start",
               "--port", str(self.port), "--state", self.state]
        for e in self.extra_env:
            cmd += ["--env", e]
        cmd += ["--", "--shell", "/bin/sh", "--workspace-root", self.home,
                "--default-workspace", self.home]
        r = as_user(self.user, cmd, timeout=60, env=self.env)
        assert r.returncode == 0, r.stderr.decode(errors="replace")
        return self

    def stop(self):
        as_user(self.user, [os.path.join(self.tree, "scripts", "ptyd-stack"),
                            "stop", "--state", self.state],
                timeout=60, env=self.env)
        shutil.rmtree(self.dir, ignore_errors=True)

    def probe(self, user, sid):
        if user == "root":
            r = subprocess.run(["/usr/bin/python3", "-c", PROBE,
                                str(self.port), sid], capture_output=True,
                               timeout=60)
        else:
            r = as_user(user, ["/usr/bin/python3", "-c", PROBE,
                               str(self.port), sid], timeout=60)
        assert r.returncode == 0, r.stderr.decode(errors="replace")
        return json.loads(r.stdout)


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
