"""test_accounts.py -- many Unix accounts on one host behind one nginx
(DESIGN 8): each web user's shells run as their own Unix account, and no
account reaches another's terminals, sockets, database or logs.

Two real Unix accounts are created for the test.  Each runs its own ptyd
and ptyd.fcgi (PTYD_AUTH=front), as that account, with its state in a
home only it can enter; each ptyd.fcgi listens on a socket made as
systemd's ptyd-fcgi@.socket makes it (by root: owner the account, group
www-data, mode 0660, handed over as standard input).  One nginx, its
workers www-data, runs nginx/ptyd-accounts.conf.example (addresses and
paths replaced; each replacement must find its line) with
ptyd-location-accounts.conf: auth_basic, then the map from web user to
socket.  A third web user has a password and no account.
"""

import grp
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile

import pytest

from ptyd_http import Client, Shell
from ptyd_stack import (BUILDDIR, REPO, children_of, free_port, proc_gone,
                        wait_for)

ACCOUNTS = ["ptyd-it-alice", "ptyd-it-bob"]
NOBODY = "ptyd-it-carol"        # a password, no account
PASSWORD = "acct-pw"
EXAMPLE = os.path.join(REPO, "nginx", "ptyd-accounts.conf.example")

# Run as an account: try each path, print what happened to each.
PROBE = r'''
import json, socket, sys
out = {}
for kind, path in json.loads(sys.argv[1]):
    try:
        if kind == "connect":
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(path)
            s.close()
        elif kind == "read":
            open(path, "rb").read(1)
        else:
            __import__("os").listdir(path)
        out[path] = "ok"
    except OSError as e:
        out[path] = e.__class__.__name__
print(json.dumps(out))
'''


def run_as(user, args, timeout=30):
    return subprocess.run(["runuser", "-u", user, "--"] + args,
                          capture_output=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def probe(user, checks):
    r = run_as(user, ["/usr/bin/python3", "-c", PROBE, json.dumps(checks)])
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    return json.loads(r.stdout)


class Account:
    """One Unix account with its own ptyd and ptyd.fcgi."""

    def __init__(self, name, base):
        self.name = name
        self.created = False
        self.home = os.path.join(base, "home", name)
        self.state = os.path.join(self.home, "state")
        self.conf = os.path.join(self.home, "ptyd.conf")
        self.fcgi_sock = os.path.join(base, "run", name + ".sock")
        self.procs = []

    @property
    def ptyd_sock(self):
        return os.path.join(self.state, "ptyd.sock")

    @property
    def db(self):
        return os.path.join(self.state, "ptyd.db")

    @property
    def log(self):
        return os.path.join(self.state, "ptyd.log")

    def create(self):
        try:
            pwd.getpwnam(self.name)
            subprocess.run(["usermod", "--home", self.home, self.name],
                           check=True, capture_output=True, timeout=30)
        except KeyError:
            subprocess.run(["useradd", "--no-create-home", "--home-dir",
                            self.home, "--shell", "/bin/bash", self.name],
                           check=True, capture_output=True, timeout=30)
            self.created = True
        pw = pwd.getpwnam(self.name)
        self.uid, self.gid = pw.pw_uid, pw.pw_gid
        os.makedirs(self.home)
        os.chown(self.home, self.uid, self.gid)
        os.chmod(self.home, 0o700)
        with open(self.conf, "w") as f:
            f.write('state_dir = "%s"\nlog = "%s"\nauth = front\n'
                    'autostart = no\nshell = /bin/bash\n'
                    'shell_arg = --norc\nshell_arg = --noprofile\n'
                    'shell_arg = -i\n' % (self.state, self.log))
        os.chown(self.conf, self.uid, self.gid)
        os.chmod(self.conf, 0o600)

    def _spawn(self, argv, stdin, logf):
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": self.home,
               "USER": self.name, "LOGNAME": self.name,
               "SHELL": "/bin/bash", "LANG": "C.UTF-8"}
        p = subprocess.Popen(["setpriv", "--reuid", str(self.uid),
                              "--regid", str(self.gid), "--init-groups",
                              "--"] + argv, stdin=stdin, stdout=logf,
                             stderr=subprocess.STDOUT, env=env,
                             cwd=self.home, start_new_session=True)
        self.procs.append(p)
        return p

    def start(self, bindir, logdir):
        """ptyd as the account (as ptyd@NAME.service runs it), then the
        socket as ptyd-fcgi@NAME.socket makes it and ptyd.fcgi on it."""
        with open(os.path.join(logdir, self.name + ".out"), "ab") as logf:
            self.ptyd = self._spawn([os.path.join(bindir, "ptyd"), "-f",
                                     "--config", self.conf],
                                    subprocess.DEVNULL, logf)
            wait_for(lambda: os.path.exists(self.ptyd_sock) or
                     self.ptyd.poll() is not None, timeout=10,
                     what="%s's ptyd socket" % self.name)
            assert self.ptyd.poll() is None, "%s's ptyd exited" % self.name
            ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            ls.bind(self.fcgi_sock)
            os.chown(self.fcgi_sock, self.uid, grp.getgrnam("www-data").gr_gid)
            os.chmod(self.fcgi_sock, 0o660)
            ls.listen(128)
            try:
                self.fcgi = self._spawn([os.path.join(bindir, "ptyd.fcgi"),
                                         "--config", self.conf,
                                         "--processes", "1"], ls, logf)
            finally:
                ls.close()

    def stop(self):
        if not hasattr(self, "uid"):
            return              # never created
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=5)
        if self.created:
            # Shells ptyd could not take down (it waits 1.5 s, then
            # SIGKILL): the account is ours, so are they.
            for pid in pids_of_uid(self.uid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            wait_for(lambda: not pids_of_uid(self.uid), timeout=5,
                     what="%s's processes to end" % self.name)
            subprocess.run(["userdel", self.name], capture_output=True,
                           timeout=30)


def pids_of_uid(uid):
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if os.stat("/proc/" + d).st_uid == uid:
                    out.append(int(d))
            except FileNotFoundError:
                pass
    return out


def htpasswd_line(user):
    h = subprocess.run(["openssl", "passwd", "-apr1", "-stdin"],
                       input=PASSWORD.encode(), check=True,
                       capture_output=True).stdout.decode().strip()
    return "%s:%s\n" % (user, h)


def nginx_conf(base, port):
    """nginx.conf (workers www-data, everything under base) and the
    example as conf.d would hold it, with the test's paths."""
    nd = os.path.join(base, "nginx")
    with open(EXAMPLE) as f:
        text = f.read()
    edits = [
        ("listen 443 ssl;", "listen 127.0.0.1:%d;" % port),
        ("    ssl_certificate /etc/ssl/certs/terminals.example.org.pem;\n",
         ""),
        ("    ssl_certificate_key "
         "/etc/ssl/private/terminals.example.org.key;\n", ""),
        ("    include ptyd/ptyd-page.conf;\n", ""),
        ("/etc/nginx/ptyd.htpasswd", os.path.join(nd, "htpasswd")),
        ("/etc/nginx/ptyd-accounts.map", os.path.join(nd, "accounts.map")),
    ]
    for old, new in edits:
        assert old in text, "the example no longer has %r" % old
        text = text.replace(old, new)
    with open(os.path.join(nd, "ptyd-accounts.conf"), "w") as f:
        f.write(text)
    temps = "".join("    %s_temp_path %s/tmp/%s;\n" % (k, nd, k)
                    for k in ("client_body", "proxy", "fastcgi", "uwsgi",
                              "scgi"))
    with open(os.path.join(nd, "nginx.conf"), "w") as f:
        f.write("user www-data;\nworker_processes 1;\npid %s/nginx.pid;\n"
                "error_log %s/error.log warn;\n"
                "events { worker_connections 512; }\n"
                "http {\n    access_log off;\n%s"
                "    include %s/ptyd-accounts.conf;\n}\n"
                % (nd, nd, temps, nd))


@pytest.fixture(scope="module")
def site():
    if os.geteuid() != 0:
        pytest.skip("needs root to create Unix accounts (useradd)")
    for prog in ("useradd", "runuser", "setpriv", "nginx", "openssl"):
        if shutil.which(prog) is None:
            pytest.skip("%s is not installed" % prog)
    try:
        grp.getgrnam("www-data")
    except KeyError:
        pytest.skip("no www-data group (nginx's workers run as it)")
    base = tempfile.mkdtemp(prefix="ptyd-accts-", dir="/tmp")
    os.chmod(base, 0o755)
    bindir, logdir, nd = (os.path.join(base, d) for d in
                          ("bin", "log", "nginx"))
    for d in (bindir, logdir, os.path.join(base, "run"),
              os.path.join(nd, "ptyd"), os.path.join(nd, "tmp"),
              os.path.join(base, "home")):
        os.makedirs(d)
        os.chmod(d, 0o755)
    # Binaries every account can run (the checkout may be closed to them).
    shutil.copy2(os.path.join(BUILDDIR, "ptyd", "ptyd"), bindir)
    shutil.copy2(os.path.join(BUILDDIR, "fcgi", "ptyd.fcgi"), bindir)
    for f in os.listdir(os.path.join(REPO, "nginx")):
        if f.startswith("ptyd-") and f.endswith(".conf"):
            shutil.copy2(os.path.join(REPO, "nginx", f),
                         os.path.join(nd, "ptyd"))
    accounts = [Account(n, base) for n in ACCOUNTS]
    nginx_pid = None
    try:
        with open(os.path.join(nd, "htpasswd"), "w") as f:
            for u in ACCOUNTS + [NOBODY]:
                f.write(htpasswd_line(u))
        os.chown(os.path.join(nd, "htpasswd"), 0,
                 grp.getgrnam("www-data").gr_gid)
        os.chmod(os.path.join(nd, "htpasswd"), 0o640)
        with open(os.path.join(nd, "accounts.map"), "w") as f:
            for a in accounts:
                f.write("%s unix:%s;\n" % (a.name, a.fcgi_sock))
        for a in accounts:
            a.create()
            a.start(bindir, logdir)
        port = free_port()
        nginx_conf(base, port)
        r = subprocess.run(["nginx", "-p", nd + "/", "-c",
                            os.path.join(nd, "nginx.conf"), "-e",
                            os.path.join(nd, "error.log")],
                           capture_output=True, timeout=30)
        assert r.returncode == 0, r.stderr.decode(errors="replace")
        with open(os.path.join(nd, "nginx.pid")) as f:
            nginx_pid = int(f.read())
        c = Client(port, user=ACCOUNTS[0], password=PASSWORD)
        wait_for(lambda: c.health().status == 200, timeout=10,
                 what="health through nginx")
        yield {"port": port, "base": base, "nginx_pid": nginx_pid,
               "accounts": {a.name: a for a in accounts}}
    finally:
        stop_site(nginx_pid, accounts, base)


def stop_site(nginx_pid, accounts, base):
    """nginx, then each account's daemons and the account itself, then the
    directory: each step runs even if an earlier one fails."""
    try:
        if nginx_pid is not None:
            os.kill(nginx_pid, signal.SIGTERM)
            wait_for(lambda: proc_gone(nginx_pid), timeout=10,
                     what="nginx to exit")
    finally:
        try:
            for a in accounts:
                a.stop()
        finally:
            if not os.environ.get("PTYD_TEST_KEEP"):
                shutil.rmtree(base, ignore_errors=True)


def client(site, user):
    return Client(site["port"], user=user, password=PASSWORD)


def proc_uid(pid):
    return os.stat("/proc/%d" % pid).st_uid


@pytest.mark.deadline(60)
def test_each_web_user_gets_a_shell_of_their_own_account(site):
    accts = site["accounts"]
    for name, a in accts.items():
        # The daemons run as the account, the nginx workers as www-data.
        assert proc_uid(a.ptyd.pid) == a.uid
        assert proc_uid(a.fcgi.pid) == a.uid
        c = client(site, name)
        sid = "own-" + name
        r = c.start(sid)
        assert r.status == 200, r
        assert proc_uid(r.json()["pid"]) == a.uid
        other = accts[next(n for n in accts if n != name)]
        with Shell(c, sid) as sh:
            assert sh.run("id -un") == name.encode()
            assert sh.run("cat %s >/dev/null 2>&1 && echo READ || "
                          "echo DENIED" % other.db) == b"DENIED"
        assert sorted(c.terminals()) == [sid]
    workers = children_of(site["nginx_pid"])
    assert workers and all(proc_uid(p) == pwd.getpwnam("www-data").pw_uid
                           for p in workers), workers


@pytest.mark.deadline(60)
def test_a_user_without_an_account_gets_403_json_after_the_password(site):
    c = client(site, NOBODY)
    for r in (c.list(), c.start("carol-1"), c.health()):
        assert r.status == 403, r
        assert r.header("content-type", "").startswith("application/json")
        assert "no terminal account" in r.json()["error"], r
    # Wrong or no password: 401, whether the name has an account or not.
    for user in (NOBODY, ACCOUNTS[0]):
        r = Client(site["port"], user=user, password="wrong").list()
        assert r.status == 401, r
    r = Client(site["port"]).list()
    assert r.status == 401, r


@pytest.mark.deadline(60)
def test_a_user_naming_the_others_terminals_gets_none_of_them(site):
    alice, bob = ACCOUNTS
    cb = client(site, bob)
    sid = "bob-secret"
    r = cb.start(sid)
    assert r.status == 200, r
    bob_pid = r.json()["pid"]
    ca = client(site, alice)
    forged = [{}, {"Remote-User": bob}, {"X-Remote-User": bob}]
    for h in forged:
        r = ca.post("input", {"session_id": sid, "data": "echo pwned\r"},
                    headers=h)
        assert r.status == 404, (h, r)
        r = ca.post("resize", {"session_id": sid, "rows": 40}, headers=h)
        assert r.status == 404, (h, r)
        s = ca.stream(sid, headers=h)
        s.close()
        assert s.status == 404, (h, s.status, s.body)
        r = ca.post("close", {"session_id": sid}, headers=h)
        assert r.status == 200 and r.json()["closed"] is False, (h, r)
        r = ca.get("list", headers=h)
        assert sid not in [t["session_id"] for t in r.json()["terminals"]]
    # Starting that id gives alice a terminal of her own, as alice.
    r = ca.start(sid)
    assert r.status == 200, r
    assert r.json()["pid"] != bob_pid
    assert proc_uid(r.json()["pid"]) == site["accounts"][alice].uid
    # bob's terminal is untouched and saw none of it.
    t = cb.terminals()[sid]
    assert t["pid"] == bob_pid and t["running"] and t["rows"] == 24
    with Shell(cb, sid) as sh:
        sh.run("true")
        assert b"pwned" not in bytes(sh.tr.data)


@pytest.mark.deadline(60)
def test_no_account_reaches_anothers_sockets_database_or_logs(site):
    accts = site["accounts"]
    www = grp.getgrnam("www-data").gr_gid
    for name, a in accts.items():
        other = accts[next(n for n in accts if n != name)]
        theirs = [["connect", other.ptyd_sock], ["connect", other.fcgi_sock],
                  ["read", other.db], ["read", other.log],
                  ["read", other.conf], ["list", other.state],
                  ["list", other.home]]
        got = probe(name, theirs)
        assert set(got.values()) == {"PermissionError"}, got
        # The same probe reaches the account's own (so the refusals above
        # are the other account's modes, not a broken probe).
        mine = [["connect", a.ptyd_sock], ["connect", a.fcgi_sock],
                ["read", a.db], ["read", a.log], ["list", a.state]]
        got = probe(name, mine)
        assert set(got.values()) == {"ok"}, got
        # nginx's user reaches each account's ptyd.fcgi and nothing else.
        got = probe("www-data", [["connect", a.fcgi_sock],
                                 ["connect", a.ptyd_sock], ["read", a.db]])
        assert got == {a.fcgi_sock: "ok", a.ptyd_sock: "PermissionError",
                       a.db: "PermissionError"}, got
        st = os.stat(a.fcgi_sock)
        assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == \
            (a.uid, www, 0o660), st
