"""owned_stack.py -- a whole stack run by another Unix account, and real
processes of other accounts to probe it: for the tests of "local means
this account" and of what a shell can read of the daemons.

Owns: creating test accounts (useradd, removed again by the caller),
running commands as them (runuser), and a stack started by
scripts/ptyd-stack as such an account from copies of the binaries and
scripts it can read (the checkout may sit where other accounts cannot
enter).  Does not own: any assertion.
"""

import json
import os
import pwd
import shutil
import subprocess
import tempfile

from ptyd_stack import BUILDDIR, REPO, free_port

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
