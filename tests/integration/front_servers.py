"""front_servers.py -- the front web servers of issue 14 (Apache with
mod_fcgid or mod_cgid, lighttpd, nginx with fcgiwrap, spawn-fcgi under
runit) run for real in a temp dir, each in front of ptyd.fcgi as a Unix
account made for the test, and the one walk through the API they all
must pass (exercise).

Owns: the test account (useradd; its home holds ~/.config/ptyd/ptyd.conf,
as a shared host's account would), copies of the binaries it can run,
each server's own complete config pointing only into the temp dir and
including the config files the tree ships (apache/, lighttpd/, nginx/,
spawn-fcgi/), the server processes (started in the foreground in a
session of their own, stopped by pid), and the figures a run measures.
Does not own: HTTP (ptyd_http.py) or the stack of scripts/ptyd-stack
(ptyd_stack.py).

Every server listens on 127.0.0.1 on a port of PTYD_TEST_PORT_BASE's
range.  A server whose program is not installed makes its test skip,
saying which Debian package brings it; nothing is counted as passed
without running.
"""

import os
import pwd
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import time

import pytest

from ptyd_http import Client, Transcript, marker, read_output_until
from ptyd_stack import (BUILDDIR, REPO, free_port, proc_gone, proc_state,
                        wait_for)

APACHE_MODULES = "/usr/lib/apache2/modules"
SHELL_CONF = ("shell = /bin/bash\nshell_arg = --norc\n"
              "shell_arg = --noprofile\nshell_arg = -i\n")


def need(program, package):
    """The program's path, or skip the test naming the package."""
    if os.geteuid() != 0:
        pytest.skip("front server tests start servers as root")
    for d in ("/usr/sbin", "/usr/bin", "/sbin", "/bin"):
        p = os.path.join(d, program)
        if os.access(p, os.X_OK):
            return p
    p = shutil.which(program)
    if p is None:
        pytest.skip("%s not installed (Debian package %s)" % (program,
                                                              package))
    return p


def need_file(path, package):
    if not os.path.exists(path):
        pytest.skip("%s not installed (Debian package %s)" % (path, package))
    return path


def subst(src, dst, mode=0o755, **values):
    """Copy a shipped *.in file with @key@ replaced, as make does."""
    with open(src) as f:
        text = f.read()
    for k, v in values.items():
        text = text.replace("@%s@" % k, v)
    with open(dst, "w") as f:
        f.write(text)
    os.chmod(dst, mode)
    return dst


# -- the account ---------------------------------------------------------------

class Account:
    """A Unix account made for one module: home in a temp dir (0755 up to
    it, so servers running as other users can reach their files), its
    ptyd.conf in ~/.config/ptyd/, and copies of ptyd, ptyd-keeper and
    ptyd.fcgi in a bin/ any account can run (ptyd.fcgi finds ptyd beside
    itself, ptyd its keeper: without it a crash of ptyd ends the shells)."""

    def __init__(self):
        self.name = "pf" + secrets.token_hex(4)
        self.dir = tempfile.mkdtemp(prefix="ptyd-front-", dir="/tmp")
        os.chmod(self.dir, 0o755)
        self.home = os.path.join(self.dir, "home")
        self.bin = os.path.join(self.dir, "bin")
        self.state = os.path.join(self.home, "state")
        self.created = False
        subprocess.run(["useradd", "--system", "--user-group",
                        "--no-create-home", "--home-dir", self.home,
                        "--shell", "/bin/bash", self.name],
                       check=True, capture_output=True, timeout=30)
        self.created = True
        pw = pwd.getpwnam(self.name)
        self.uid, self.gid = pw.pw_uid, pw.pw_gid
        os.makedirs(os.path.join(self.home, ".config", "ptyd"))
        os.makedirs(self.bin)
        for src in ("ptyd/ptyd", "ptyd/ptyd-keeper", "fcgi/ptyd.fcgi"):
            shutil.copy2(os.path.join(BUILDDIR, src), self.bin)
        self.fcgi = os.path.join(self.bin, "ptyd.fcgi")
        self.write_conf("")
        for root, dirs, files in os.walk(self.home):
            for n in dirs + files:
                os.chown(os.path.join(root, n), self.uid, self.gid)
        os.chown(self.home, self.uid, self.gid)
        os.chmod(self.home, 0o700)

    def write_conf(self, extra):
        """~/.config/ptyd/ptyd.conf: what every ptyd.fcgi of the account
        reads, whatever environment its server gave it (suexec keeps no
        PTYD_*)."""
        path = os.path.join(self.home, ".config", "ptyd", "ptyd.conf")
        with open(path, "w") as f:
            f.write("state_dir = %s\n%s%s" % (self.state, SHELL_CONF, extra))
        os.chown(path, self.uid, self.gid)
        os.chmod(path, 0o600)

    def mkdir(self, *parts, owner=True):
        """A directory in the temp dir, the account's (or root's)."""
        d = os.path.join(self.dir, *parts)
        os.makedirs(d, exist_ok=True)
        os.chmod(d, 0o755)
        if owner:
            os.chown(d, self.uid, self.gid)
        return d

    def pids(self):
        out = []
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                if os.stat("/proc/" + d).st_uid == self.uid:
                    out.append(int(d))
            except FileNotFoundError:
                pass
        return out

    def fcgi_pids(self):
        """Every live ptyd.fcgi process of the account (a master and its
        workers, or mod_fcgid's and CGI's one-process ones); not the
        zombies a server has yet to reap."""
        out = []
        for p in self.pids():
            try:
                with open("/proc/%d/comm" % p) as f:
                    if f.read().strip() != "ptyd.fcgi":
                        continue
                if proc_state(p) not in (None, "Z"):
                    out.append(p)
            except FileNotFoundError:
                pass
        return out

    def log_tail(self, n=20):
        try:
            with open(os.path.join(self.state, "ptyd.log"), "rb") as f:
                return b"".join(f.readlines()[-n:]).decode(errors="replace")
        except FileNotFoundError:
            return ""

    def cleanup(self):
        """ptyd (autostarted by ptyd.fcgi) gets SIGTERM and a few seconds
        to hang its shells up; whatever of this account is left is
        killed by pid.  Then the account and its files go."""
        try:
            with open(os.path.join(self.state, "ptyd.pid")) as f:
                pid = int(f.read().strip())
            if pid in self.pids():
                os.kill(pid, signal.SIGTERM)
                wait_for(lambda: proc_gone(pid), timeout=10,
                         what="ptyd to exit")
        except (FileNotFoundError, ValueError, ProcessLookupError,
                AssertionError):
            pass
        for _ in range(3):
            left = self.pids()
            if not left:
                break
            for p in left:
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.2)
        if self.created:
            subprocess.run(["userdel", self.name], capture_output=True,
                           timeout=30)
        shutil.rmtree(self.dir, ignore_errors=True)


# -- one server process -----------------------------------------------------------

class Server:
    """A server run in the foreground, its own session and process group,
    output to a log file; stopped by pid, its group killed if it lingers."""

    def __init__(self, name, argv, log, port=None, env=None, logs=()):
        self.name = name
        self.argv = argv
        self.log = log
        self.logs = [log] + list(logs)
        self.port = port
        self.env = env
        self.proc = None

    def start(self, timeout=15):
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                self.argv, stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True,
                env=self.env)
        if self.port is not None:
            wait_for(self.listening, timeout=timeout,
                     what=lambda: "%s on port %d; log:\n%s"
                     % (self.name, self.port, self.tail()))
        return self

    def listening(self):
        if self.proc.poll() is not None:
            raise AssertionError("%s exited (%s); log:\n%s"
                                 % (self.name, self.proc.returncode,
                                    self.tail()))
        try:
            socket.create_connection(("127.0.0.1", self.port), 0.5).close()
            return True
        except OSError:
            return False

    def tail(self, n=25):
        text = []
        for p in self.logs:
            try:
                with open(p, "rb") as f:
                    lines = f.readlines()[-n:]
                text.append("--- %s\n%s" % (p, b"".join(lines).decode(
                    errors="replace")))
            except FileNotFoundError:
                pass
        return "\n".join(text)

    def stop(self, timeout=10):
        if self.proc is None or self.proc.poll() is not None:
            return
        pid = self.proc.pid
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if self.proc.poll() is None:
            self.proc.wait(5)


# -- configs -----------------------------------------------------------------------

def apache_server(acct, d, conf_body, modules, user=None, docroot=None):
    """Apache in the foreground with a complete config of its own in d:
    only the modules given, everything it writes under d, listening on
    one loopback port; conf_body holds the ptyd part (Define and Include
    of the shipped file)."""
    binary = need("apache2", "apache2")
    for m in modules:
        need_file("%s/mod_%s.so" % (APACHE_MODULES, m),
                  "libapache2-mod-fcgid" if m == "fcgid" else "apache2")
    port = free_port()
    user = user or acct.name
    run = os.path.join(d, "run")
    os.makedirs(run, exist_ok=True)
    docroot = docroot or acct.mkdir(os.path.basename(d), "www", owner=False)
    lines = [
        "ServerRoot %s" % d,
        "Listen 127.0.0.1:%d" % port,
        "ServerName 127.0.0.1",
        "PidFile %s/apache2.pid" % run,
        "DefaultRuntimeDir %s" % run,
        "Mutex file:%s default" % run,
        "ErrorLog %s/error.log" % d,
        "LogLevel warn",
        "User %s" % user,
        "Group %s" % user,
        # No keep-alive: every request of the tests is on a fresh
        # connection anyway, and a stopping server waits for none.
        "KeepAlive Off",
        "LoadModule mpm_event_module %s/mod_mpm_event.so" % APACHE_MODULES,
        "LoadModule authz_core_module %s/mod_authz_core.so" % APACHE_MODULES,
    ]
    for m in modules:
        lines.append("LoadModule %s_module %s/mod_%s.so"
                     % (m, APACHE_MODULES, m))
    if "fcgid" in modules:
        lines += ["FcgidIPCDir %s/fcgid" % run,
                  "FcgidProcessTableFile %s/fcgid_shm" % run]
    if "cgid" in modules:
        lines.append("ScriptSock %s/cgid.sock" % run)
    lines += ["DocumentRoot %s" % docroot,
              "<Directory />", "    Require all denied",
              "    AllowOverride None", "</Directory>",
              "<Directory %s>" % docroot, "    Require all granted",
              "</Directory>", conf_body]
    conf = os.path.join(d, "apache2.conf")
    with open(conf, "w") as f:
        f.write("\n".join(lines) + "\n")
    chk = subprocess.run([binary, "-t", "-f", conf], capture_output=True,
                         timeout=30)
    assert chk.returncode == 0, chk.stderr.decode(errors="replace")
    # The error log is opened as root before the switch to User.
    return Server("apache2", [binary, "-f", conf, "-DFOREGROUND"],
                  os.path.join(d, "stdout.log"), port=port,
                  logs=[os.path.join(d, "error.log")])


def fcgid_wrappers(acct, d, owner):
    """The two copies of the shipped wrapper mod_fcgid runs (two files,
    two process classes), owned by owner's uid/gid."""
    out = []
    for name in ("ptyd.fcgi", "ptyd-stream.fcgi"):
        p = subst(os.path.join(REPO, "apache", "ptyd-fcgid-wrapper.in"),
                  os.path.join(d, name), bindir=acct.bin)
        os.chown(p, *owner)
        out.append(p)
    return out


def fcgid_body(req, stream, extra=""):
    """Apache's ptyd part for mod_fcgid: the two wrappers, the shipped
    file."""
    return ("%s\nDefine PTYD_FCGI %s\nDefine PTYD_FCGI_STREAM %s\n"
            "Include %s/apache/ptyd-fcgid.conf\n"
            % (extra, req, stream, REPO))


def cgid_body(acct):
    """Apache's ptyd part for mod_cgid: the account's ptyd.fcgi as CGI."""
    return "Define PTYD_CGI %s\nInclude %s/apache/ptyd-cgid.conf\n" % (
        acct.fcgi, REPO)


def lighttpd_cgi_body(acct):
    """lighttpd's ptyd part for mod_cgi."""
    return ('var.ptyd_cgi = "%s"\nvar.ptyd_lighttpd = "%s/lighttpd"\n'
            'include "%s/lighttpd/ptyd-cgi.conf"\n' % (acct.fcgi, REPO, REPO))


def lighttpd_fastcgi_body(acct, d, extra=""):
    """lighttpd's ptyd part for mod_fastcgi, the socket in d."""
    return ('var.ptyd_fcgi = "%s"\nvar.ptyd_socket = "%s/fcgi.sock"\n'
            'var.ptyd_lighttpd = "%s/lighttpd"\n'
            'include "%s/lighttpd/ptyd-fastcgi.conf"\n%s'
            % (acct.fcgi, d, REPO, REPO, extra))


def lighttpd_server(acct, d, conf_body):
    """lighttpd -D with a complete config of its own in d (owned by the
    account it runs as: it opens its log after dropping root)."""
    binary = need("lighttpd", "lighttpd")
    port = free_port()
    os.chown(d, acct.uid, acct.gid)
    www = os.path.join(d, "www")
    os.makedirs(www, exist_ok=True)
    lines = [
        'server.document-root = "%s"' % www,
        'server.bind = "127.0.0.1"',
        "server.port = %d" % port,
        'server.username = "%s"' % acct.name,
        'server.groupname = "%s"' % acct.name,
        'server.errorlog = "%s/error.log"' % d,
        'server.pid-file = "%s/lighttpd.pid"' % d,
        conf_body,
    ]
    conf = os.path.join(d, "lighttpd.conf")
    with open(conf, "w") as f:
        f.write("\n".join(lines) + "\n")
    chk = subprocess.run([binary, "-tt", "-f", conf], capture_output=True,
                         timeout=30)
    assert chk.returncode == 0, (chk.stdout + chk.stderr).decode(
        errors="replace")
    return Server("lighttpd", [binary, "-D", "-f", conf],
                  os.path.join(d, "stdout.log"), port=port,
                  logs=[os.path.join(d, "error.log")])


def nginx_server(d, server_body, http_body=""):
    """nginx, daemon off, with the tree's nginx/*.conf copied into
    d/ptyd/ as an operator installs them, workers as root (the sockets
    of the test are the account's)."""
    binary = need("nginx", "nginx-light")
    port = free_port()
    os.makedirs(os.path.join(d, "ptyd"), exist_ok=True)
    os.makedirs(os.path.join(d, "tmp"), exist_ok=True)
    for f in os.listdir(os.path.join(REPO, "nginx")):
        if f.endswith(".conf"):
            shutil.copy2(os.path.join(REPO, "nginx", f),
                         os.path.join(d, "ptyd"))
    tmp = os.path.join(d, "tmp")
    conf = os.path.join(d, "nginx.conf")
    with open(conf, "w") as f:
        f.write("""user root;
daemon off;
worker_processes 1;
pid %(d)s/nginx.pid;
error_log %(d)s/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path %(tmp)s/body;
    fastcgi_temp_path %(tmp)s/fastcgi;
    proxy_temp_path %(tmp)s/proxy;
    uwsgi_temp_path %(tmp)s/uwsgi;
    scgi_temp_path %(tmp)s/scgi;
%(http)s
    server {
        listen 127.0.0.1:%(port)d;
        server_name localhost;
        root %(d)s/www;
%(server)s
    }
}
""" % {"d": d, "tmp": tmp, "port": port, "http": http_body,
       "server": server_body})
    return Server("nginx", [binary, "-p", d + "/", "-c", conf, "-e",
                            os.path.join(d, "error.log")],
                  os.path.join(d, "stdout.log"), port=port,
                  logs=[os.path.join(d, "error.log")])


def nginx_fcgiwrap(acct, name, children):
    """fcgiwrap as the account with `children` processes, and nginx in
    front of it with the shipped location.  Returns (nginx, fcgiwrap),
    both started."""
    d = acct.mkdir(name)
    sock = os.path.join(d, "fcgiwrap.sock")
    wrap = Server("fcgiwrap", [
        "setpriv", "--reuid", str(acct.uid), "--regid", str(acct.gid),
        "--init-groups", need("fcgiwrap", "fcgiwrap"),
        "-c", str(children), "-s", "unix:" + sock],
        os.path.join(d, "fcgiwrap.log")).start()
    wait_for(lambda: os.path.exists(sock), timeout=10,
             what="fcgiwrap's socket")
    ngx = nginx_server(
        acct.mkdir(name, "nginx", owner=False),
        "        set $ptyd_cgi %s;\n"
        "        include ptyd/ptyd-location-fcgiwrap.conf;" % acct.fcgi,
        "    upstream ptyd_fcgiwrap { server unix:%s; }" % sock)
    try:
        ngx.start()
    except Exception:
        wrap.stop()
        raise
    return ngx, wrap


def runit_spawn_fcgi(acct, name, env):
    """runsv on a service dir made of the shipped spawn-fcgi/run and
    ./env files (ptyd.fcgi as the account, its socket's group the
    account's), as the README's "spawn-fcgi under a supervisor" sets it
    up.  Returns (runsv, service dir, socket), runsv started and the
    socket there."""
    need("spawn-fcgi", "spawn-fcgi")
    runsv = need("runsv", "runit")
    sv = acct.mkdir(name, "sv", owner=False)
    subst(os.path.join(REPO, "spawn-fcgi", "run.in"),
          os.path.join(sv, "run"), bindir=acct.bin)
    os.makedirs(os.path.join(sv, "env"))
    sock = os.path.join(acct.dir, name, "run", "fcgi.sock")
    for k, v in (("ACCOUNT", acct.name), ("SOCKET", sock),
                 ("WEB_GROUP", acct.name)):
        with open(os.path.join(sv, "env", k), "w") as f:
            f.write(v + "\n")
    srv = Server("runsv", [runsv, sv],
                 os.path.join(acct.dir, name, "runsv.log"), env=env).start()
    wait_for(lambda: os.path.exists(sock), timeout=10,
             what=lambda: "spawn-fcgi's socket; log:\n" + srv.tail())
    return srv, sv, sock


def runit_stop(srv, sv, env):
    """sv down (runsv stops ptyd.fcgi), then runsv itself."""
    subprocess.run(["sv", "-w", "10", "down", sv], env=env,
                   capture_output=True, timeout=30)
    srv.stop()


# -- the walk every server must pass -------------------------------------------------

def _run(c, sid, stream, tr, cmd, timeout=10):
    """Type cmd; return the bytes it printed (between two markers)."""
    tag = secrets.token_hex(3)
    c_in = c.input(sid, "echo B%s-$((1+1)); %s; echo E%s-$((1+1))\r"
                   % (tag, cmd, tag))
    assert c_in.status == 200, c_in
    end = ("E%s-2" % tag).encode()
    read_output_until(stream, end, tr, timeout)
    data = bytes(tr.data)
    i = data.rindex(("B%s-2" % tag).encode()) + len(tag) + 3
    return data[i:data.rindex(end)].strip(b"\r\n")


def keystrokes(c, sid, stream, tr, n=10, timeout=5):
    """n commands typed one at a time: (post_ms, echo_ms) of each, the
    POST's round trip and the time until its output event arrived."""
    out = []
    for _ in range(n):
        cmd, exp = marker()
        t0 = time.monotonic()
        r = c.input(sid, cmd)
        t1 = time.monotonic()
        assert r.status == 200, r
        read_output_until(stream, exp, tr, timeout)
        out.append(((t1 - t0) * 1000, (time.monotonic() - t0) * 1000))
    return out


def assert_frame_rule(headers, ancestors="'self'"):
    """An API answer's frame rule, as ptyd.fcgi writes it by default:
    CSP frame-ancestors with default-src 'none', X-Frame-Options
    SAMEORIGIN.  headers: lower-cased names."""
    assert headers.get("content-security-policy") == (
        "frame-ancestors %s; default-src 'none'" % ancestors), headers
    assert headers.get("x-frame-options") == "SAMEORIGIN", headers


def exercise(port, name, rounds=10, figures=None):
    """Start, input and its echo on the stream, a reconnect by
    Last-Event-ID (exactly the bytes after it: none twice, none lost),
    resize (the shell sees it), list, close (the stream ends with
    terminal_closed) -- through the server on port.  Returns the
    figures: p50 of the POST round trip and of keystroke to echo on the
    stream, and the first POST while a stream is open."""
    c = Client(port)
    sid = "%s-%s" % (name, secrets.token_hex(3))
    r = c.start(sid, rows=24, cols=80)
    assert r.status == 200, r
    body = r.json()
    assert body["ok"] is True and body["running"] is True, body
    # The frame rule (DESIGN 6) passes through every server: ptyd.fcgi
    # says it on each answer.
    assert_frame_rule(r.headers)

    s = c.stream(sid)
    try:
        assert s.status == 200, (s.status, s.body)
        assert s.headers["content-type"].startswith("text/event-stream"), \
            s.headers
        assert_frame_rule(s.headers)
        tr = Transcript()
        # The first POST while the stream holds its connection: under
        # mod_fcgid it once waited a second for a process (issue 14).
        times = keystrokes(c, sid, s, tr, n=rounds)
        seen_cmd, seen = marker()
        assert c.input(sid, seen_cmd).status == 200
        read_output_until(s, seen, tr)
        last = tr.end
    finally:
        s.close()

    # Output made while nobody watches, then a reconnect that resumes
    # exactly after the last event seen.
    cmd, exp = marker()
    r = c.input(sid, cmd)
    assert r.status == 200, r
    s = c.stream(sid, last_event_id=last)
    try:
        assert s.status == 200, (s.status, s.body)
        tr2 = Transcript()
        read_output_until(s, exp, tr2, timeout=10)
        assert tr2.gaps == [], tr2.gaps
        assert tr2.start == last, (tr2.start, last)
        # Nothing before the resume point came again.
        assert seen.encode() not in bytes(tr2.data), bytes(tr2.data)

        r = c.resize(sid, rows=31, cols=101)
        assert r.status == 200, r
        assert _run(c, sid, s, tr2, "stty size") == b"31 101"

        t = c.terminals()[sid]
        assert (t["rows"], t["cols"], t["running"]) == (31, 101, True), t
        assert t["subscribers"] >= 1, t

        r = c.close_term(sid)
        assert r.status == 200 and r.json()["closed"] is True, r
        ev = s.read_until(lambda e: e.name == "terminal_closed", timeout=10)
        assert ev.data["reason"] == "closed", ev
    finally:
        s.close()
    assert sid not in c.terminals()
    fig = {
        "first_post_ms": times[0][0],
        "post_p50_ms": statistics.median(t[0] for t in times),
        "echo_p50_ms": statistics.median(t[1] for t in times),
    }
    if figures is not None:
        figures[name] = fig
    print("\nfront %s: first POST during a stream %.1f ms, POST p50 %.1f "
          "ms, keystroke to echo p50 %.1f ms"
          % (name, fig["first_post_ms"], fig["post_p50_ms"],
             fig["echo_p50_ms"]))
    return fig


FORGED_PORT_CLIENT = r"""
import socket, sys
src, port, named = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", src))
s.connect(("127.0.0.1", port))
s.settimeout(10)
s.sendall(b"GET /api/terminal/list HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
          b"Connection: close\r\n\r\n" % named)
print(s.recv(64).split(b"\r\n")[0].decode())
"""


def forged_server_port(port):
    """The status another account's client gets when its Host names the
    port of a loopback connection that root holds from the client's own
    source port.  The account check looks the client's socket up by
    (REMOTE_ADDR, REMOTE_PORT, SERVER_ADDR, SERVER_PORT), so SERVER_PORT
    must be the port the client connected to: a server that takes it
    from Host (Apache's UseCanonicalName Off, its default) lets the
    client name root's connection instead, and be let in as local."""
    lst = socket.socket()
    cli = socket.socket()
    try:
        lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lst.bind(("127.0.0.1", 0))
        lst.listen(1)
        named = lst.getsockname()[1]
        # Root's connection, from a source port the client then shares
        # (SO_REUSEADDR on both; the two connections differ in their
        # destination port).
        cli.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        cli.bind(("127.0.0.1", 0))
        cli.connect(("127.0.0.1", named))
        src = cli.getsockname()[1]
        out = subprocess.run(
            [need("setpriv", "util-linux"), "--reuid=65534", "--regid=65534",
             "--clear-groups", "/usr/bin/python3", "-c", FORGED_PORT_CLIENT,
             str(src), str(port), str(named)],
            capture_output=True, timeout=30)
        line = out.stdout.decode().strip()
        assert line.startswith("HTTP/1."), (line, out.stderr.decode())
        return int(line.split()[1])
    finally:
        cli.close()
        lst.close()


def stream_is_buffered(port, name, wait=3.0):
    """True when the server holds the stream back: a terminal's prompt
    and a typed command's output (well under any buffer's size) do not
    reach the client within wait seconds, headers or not."""
    c = Client(port)
    sid = "%s-%s" % (name, secrets.token_hex(3))
    r = c.start(sid)
    assert r.status == 200, r
    cmd, exp = marker()
    try:
        try:
            s = c.stream(sid, timeout=wait)
        except (TimeoutError, socket.timeout):
            return True     # not even the headers came
        try:
            c.input(sid, cmd)
            try:
                read_output_until(s, exp, timeout=wait)
                return False
            except TimeoutError:
                return True
        finally:
            s.close()
    finally:
        c.close_term(sid)
