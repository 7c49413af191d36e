"""test_package.py -- the Debian package (debian/): built from the tree,
installed on this machine, run, upgraded under a running shell, removed
and purged, with nothing left behind.

One build per run: the tree's files (git ls-files: tracked and new, not
ignored; never the build directory's objects) are copied to a temp dir
with the page's xterm.js (web/node_modules/@xterm) and built with
`dpkg-buildpackage -b` (nocheck: the unit suites run elsewhere).  The
package to upgrade to is the same .deb repacked with a higher version
(dpkg-deb -R, Version edited, dpkg-deb -b): dpkg then goes through its
whole upgrade (prerm upgrade, every file unpacked anew, so the running
binaries become "(deleted)", postinst configure with the old version)
exactly as for a rebuilt package, at no second build's cost; what it
does not bring is different code, which the keeper's own tests swap
(test_keeper.py).

The daemons run as systemd would run the shipped units, which this
machine's init does not: the commands, account and environment are read
from the installed unit files (ptyd-keeper.service, ptyd-fcgi.socket and
ptyd-fcgi.service), the socket is made by the test as the socket unit
says and passed as standard input.  nginx (workers www-data) is
configured with the installed snippets only, auth_basic in front and
`auth = front` in the conffile /etc/ptyd.conf, as docs/package.md says.

Needs root (dpkg, a system account); refuses to run where a ptyd package
is already installed.  Owns: its temp dir, the package while the test
runs (purged at the end whatever happens), the account `ptyd` if the
package made it here (deleted again), the processes it starts.
"""

import glob
import grp
import os
import pwd
import re
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile

import pytest

from ptyd_http import Client, read_output_until
from ptyd_stack import BUILDDIR, REPO, free_port, wait_for

PKG = "ptyd"
ACCOUNT = "ptyd"
KEEPER = "/usr/libexec/ptyd/ptyd-keeper"
PTYD = "/usr/libexec/ptyd/ptyd"
FCGI = "/usr/bin/ptyd.fcgi"
UNITS = "/lib/systemd/system"
BUILD_TIMEOUT = 600
DPKG_TIMEOUT = 120
PATH = "/usr/sbin:/usr/bin:/sbin:/bin"

# The folders the package makes at run time (postinst, tmpfiles.d) and
# purge removes.
STATE = ["/var/lib/ptyd", "/var/log/ptyd", "/run/ptyd", "/run/ptyd-fcgi"]
# Conffiles the package must have (dpkg-query's list may hold more).
CONFFILES = ["/etc/ptyd.conf", "/etc/ptyd/pool.d/README",
             "/etc/logrotate.d/ptyd",
             "/etc/nginx/snippets/ptyd-upstream.conf",
             "/etc/nginx/snippets/ptyd-location.conf",
             "/etc/nginx/snippets/ptyd-location-auth-basic.conf",
             "/etc/nginx/snippets/ptyd-fastcgi.conf",
             "/etc/nginx/snippets/ptyd-stream.conf",
             "/etc/nginx/snippets/ptyd-errors.conf",
             "/etc/nginx/snippets/ptyd-page.conf",
             "/etc/apache2/conf-available/ptyd.conf",
             "/etc/lighttpd/conf-available/50-ptyd.conf"]
SYSTEM_UNITS = ["ptyd.service", "ptyd@.service", "ptyd-keeper.service",
                "ptyd-keeper@.service", "ptyd-fcgi.socket",
                "ptyd-fcgi.service", "ptyd-fcgi@.socket",
                "ptyd-fcgi@.service"]

APACHE_MODULES = ("mpm_event", "authz_core", "proxy", "proxy_fcgi",
                  "headers", "mime", "dir", "env", "deflate", "filter")
# Apache as Debian's apache2.conf has it, but for the modules: what
# a2enconf enabled at server level, the shipped blocks in a VirtualHost.
APACHE_CONF = """ServerRoot "{d}"
Listen 127.0.0.1:{port}
ServerName 127.0.0.1
PidFile "{d}/apache2.pid"
DefaultRuntimeDir "{d}"
Mutex file:{d} default
ErrorLog "{d}/error.log"
User www-data
Group www-data
TypesConfig /etc/mime.types
{modules}
IncludeOptional /etc/apache2/conf-enabled/ptyd.conf
<VirtualHost 127.0.0.1:{port}>
    ServerName 127.0.0.1
    Include /usr/share/ptyd/apache/ptyd-proxy-fcgi.conf
    Include /usr/share/ptyd/apache/ptyd-page.conf
</VirtualHost>
"""
# lighttpd with what lighty-enable-mod enabled.
LIGHTTPD_CONF = """server.document-root = "/usr/share/ptyd/web"
server.bind = "127.0.0.1"
server.port = {port}
include "/etc/lighttpd/conf-enabled/*fastcgi.conf"
include "/etc/lighttpd/conf-enabled/50-ptyd.conf"
"""
ENABLED = ["/etc/apache2/conf-enabled/ptyd.conf",
           "/etc/lighttpd/conf-enabled/50-ptyd.conf"]

NGINX_CONF = """user www-data;
worker_processes 1;
daemon off;
pid "{d}/nginx.pid";
error_log "{d}/error.log" warn;
events {{ worker_connections 256; }}
http {{
    access_log "{d}/access.log";
    client_body_temp_path "{d}/tmp/client_body";
    proxy_temp_path "{d}/tmp/proxy";
    fastcgi_temp_path "{d}/tmp/fastcgi";
    uwsgi_temp_path "{d}/tmp/uwsgi";
    scgi_temp_path "{d}/tmp/scgi";
    include /etc/nginx/mime.types;
    include snippets/ptyd-upstream.conf;
    server {{
        listen 127.0.0.1:{port};
        server_name localhost;
        set $ptyd_htpasswd "{d}/htpasswd";
        include snippets/ptyd-location-auth-basic.conf;
        set $ptyd_frame_ancestors "'self'";
        include snippets/ptyd-page.conf;
    }}
}}
"""


def run(cmd, log, timeout=DPKG_TIMEOUT, **kw):
    """Run cmd with its output appended to log; return the output; raise
    with the output's tail on failure."""
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       stdin=subprocess.DEVNULL, timeout=timeout, **kw)
    out = r.stdout.decode(errors="replace")
    with open(log, "a") as f:
        f.write("\n$ %s\n%s" % (" ".join(cmd), out))
    if r.returncode != 0:
        raise AssertionError("%s exited %d:\n%s"
                             % (" ".join(cmd), r.returncode, out[-3000:]))
    return out


def installed_version():
    r = subprocess.run(["dpkg-query", "-W", "-f=${Status} ${Version}", PKG],
                       capture_output=True, timeout=30)
    if r.returncode != 0:
        return None
    status = r.stdout.decode().split()
    if status[:3] == ["install", "ok", "installed"]:
        return status[3]
    if status[:3] == ["deinstall", "ok", "config-files"]:
        return "(config-files)"
    return "(%s)" % " ".join(status)


def pids_of(*programs):
    """pids whose executable is one of programs (or was, before dpkg
    replaced or removed the file): pid -> the link's text."""
    found = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            exe = os.readlink("/proc/%s/exe" % d)
        except OSError:
            continue
        if exe.removesuffix(" (deleted)") in programs:
            found[int(d)] = exe
    return found


def unit_keys(name):
    keys = {}
    with open(os.path.join(UNITS, name)) as f:
        for line in f:
            m = re.match(r"^([A-Za-z]+)=(.*)$", line.rstrip("\n"))
            if m:
                keys.setdefault(m.group(1), []).append(m.group(2))
    return keys


def as_account(user, group):
    return ["setpriv", "--reuid", user, "--regid", group, "--init-groups",
            "--"]


# ---- the build -----------------------------------------------------------


class Debs:
    def __init__(self, root):
        self.root = root
        self.src = os.path.join(root, "src")
        self.log = os.path.join(root, "package.log")
        self.deb = None
        self.upgrade = None
        self.version = None
        self.new_version = None


def _copy_tree(debs):
    files = subprocess.run(
        ["git", "-c", "safe.directory=*", "-C", REPO, "ls-files", "-z",
         "-co", "--exclude-standard"],
        capture_output=True, timeout=60, check=True).stdout
    # (node_modules: npm's, wherever it is, never the tree's own)
    names = [n for n in files.split(b"\0")
             if n and os.path.lexists(os.path.join(REPO.encode(), n)) and
             b"node_modules" not in n.split(b"/")]
    os.makedirs(debs.src)
    tar = subprocess.run(["tar", "-C", REPO, "--null", "-T", "-", "-cf",
                          "-"], input=b"\0".join(names), capture_output=True,
                         timeout=120, check=True).stdout
    subprocess.run(["tar", "-C", debs.src, "-xf", "-"], input=tar,
                   timeout=120, check=True)
    # The page: built from xterm.js where npm put it, else the page this
    # build made (web/local.mk installs a shipped web/dist as it is).
    xterm = os.path.join(REPO, "web", "node_modules", "@xterm")
    dist = os.path.join(BUILDDIR, "web", "dist")
    if os.path.isdir(xterm):
        shutil.copytree(xterm, os.path.join(debs.src, "web", "node_modules",
                                            "@xterm"), symlinks=True)
    elif os.path.isfile(os.path.join(dist, "index.html")):
        shutil.copytree(dist, os.path.join(debs.src, "web", "dist"))
    else:
        pytest.fail("no xterm.js in web/node_modules and no built page: "
                    "run scripts/setup")


def _build(debs):
    env = {"PATH": PATH, "HOME": debs.root, "LANG": "C.UTF-8",
           "TMPDIR": debs.root, "DEB_BUILD_OPTIONS": "nocheck parallel=2"}
    run(["dpkg-buildpackage", "-b", "-us", "-uc"], debs.log,
        timeout=BUILD_TIMEOUT, cwd=debs.src, env=env)
    found = glob.glob(os.path.join(debs.root, PKG + "_*.deb"))
    assert len(found) == 1, found
    debs.deb = found[0]
    debs.version = subprocess.run(
        ["dpkg-deb", "-f", debs.deb, "Version"], capture_output=True,
        timeout=30, check=True).stdout.decode().strip()


def _repack(debs):
    """The upgrade: the same package at a higher version."""
    tree = os.path.join(debs.root, "repack")
    run(["dpkg-deb", "-R", debs.deb, tree], debs.log)
    debs.new_version = debs.version + "+repack1"
    ctl = os.path.join(tree, "DEBIAN", "control")
    with open(ctl) as f:
        text = f.read()
    text, n = re.subn(r"^Version: .*$", "Version: " + debs.new_version,
                      text, flags=re.M)
    assert n == 1, text
    with open(ctl, "w") as f:
        f.write(text)
    debs.upgrade = os.path.join(debs.root, "%s_%s.deb"
                                % (PKG, debs.new_version))
    run(["dpkg-deb", "--root-owner-group", "-b", tree, debs.upgrade],
        debs.log)


@pytest.fixture(scope="module")
def debs():
    if os.geteuid() != 0:
        pytest.skip("needs root: installs a package and a system account")
    for tool in ("dpkg-buildpackage", "dh", "lintian", "nginx", "openssl",
                 "setpriv"):
        if shutil.which(tool, path=PATH) is None:
            pytest.fail("%s is not installed: run scripts/setup" % tool)
    if installed_version() is not None:
        pytest.fail("a %s package is on this machine (%s): this test "
                    "installs and purges its own, so it leaves that one be"
                    % (PKG, installed_version()))
    root = tempfile.mkdtemp(prefix="ptyd-pkg-", dir="/tmp")
    os.chmod(root, 0o755)      # nginx's workers read the htpasswd
    d = Debs(root)
    try:
        _copy_tree(d)
        _build(d)
        _repack(d)
        yield d
    finally:
        if not os.environ.get("PTYD_TEST_KEEP"):
            shutil.rmtree(root, ignore_errors=True)


def test_lintian_finds_no_errors(debs):
    r = subprocess.run(["lintian", "--pedantic", "--info", debs.deb],
                       capture_output=True, timeout=300,
                       env={"PATH": PATH, "LANG": "C.UTF-8",
                            "HOME": debs.root})
    out = (r.stdout + r.stderr).decode(errors="replace")
    errors = [line for line in out.splitlines() if line.startswith("E:")]
    assert not errors, out
    # lintian exits 2 when it could not check (a broken package).
    assert r.returncode in (0, 1), out


# ---- installed, running, upgraded, removed, purged ----------------------


class Stack:
    """The package's keeper and ptyd.fcgi as their units run them, and
    nginx in front with the installed snippets."""

    def __init__(self, root):
        self.dir = os.path.join(root, "stack")
        self.front = os.path.join(self.dir, "front")
        os.makedirs(os.path.join(self.front, "tmp"))
        os.chmod(self.dir, 0o755)
        os.chmod(self.front, 0o755)
        self.procs = []
        self.undo = []          # links the test made outside its dir
        self.port = None
        self.password = "pw-" + os.urandom(6).hex()

    def home(self):
        """The shells' HOME: a folder of the account's own."""
        home = os.path.join(self.dir, "home")
        os.makedirs(home, mode=0o700, exist_ok=True)
        pw = pwd.getpwnam(ACCOUNT)
        os.chown(home, pw.pw_uid, pw.pw_gid)
        return home

    def env(self, unit, home):
        pw = pwd.getpwnam(ACCOUNT)
        env = {"PATH": PATH, "LANG": "C.UTF-8", "HOME": home,
               "USER": ACCOUNT, "LOGNAME": ACCOUNT, "SHELL": "/bin/bash"}
        for e in unit.get("Environment", []):
            k, v = e.split("=", 1)
            env[k] = v
        assert pw.pw_shell == "/bin/bash", pw
        return env

    def spawn(self, argv, log, **kw):
        f = open(os.path.join(self.dir, log), "ab")
        p = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT,
                             start_new_session=True, **kw)
        f.close()
        self.procs.append(p)
        return p

    def start_keeper(self):
        """ptyd-keeper.service: ptyd -f, which becomes the keeper."""
        k = unit_keys("ptyd-keeper.service")
        argv = shlex.split(k["ExecStart"][0])
        assert argv[0] == PTYD, argv
        self.keeper = self.spawn(
            as_account(k["User"][0], k["Group"][0]) + argv, "keeper.out",
            env=self.env(k, self.home()), stdin=subprocess.DEVNULL,
            cwd="/")
        pidfile = argv[argv.index("--pidfile") + 1]
        wait_for(lambda: os.path.exists(pidfile) and
                 open(pidfile).read().strip() == str(self.keeper.pid),
                 timeout=10, what="the keeper's pid file")

    def start_fcgi(self):
        """ptyd-fcgi.socket (made here, as root) and ptyd-fcgi.service
        (given the socket as standard input)."""
        s = unit_keys("ptyd-fcgi.socket")
        path = s["ListenStream"][0]
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            if os.path.exists(path):
                os.unlink(path)
            sock.bind(path)
            os.chown(path, pwd.getpwnam(s["SocketUser"][0]).pw_uid,
                     grp.getgrnam(s["SocketGroup"][0]).gr_gid)
            os.chmod(path, int(s["SocketMode"][0], 8))
            sock.listen(128)
            u = unit_keys("ptyd-fcgi.service")
            self.spawn(as_account(u["User"][0], u["Group"][0]) +
                       shlex.split(u["ExecStart"][0]), "fcgi.out",
                       env=self.env(u, pwd.getpwnam(ACCOUNT).pw_dir),
                       stdin=sock.fileno(), cwd="/")
        finally:
            sock.close()
        self.sock = path

    def start_nginx(self, user):
        hashed = subprocess.run(
            ["openssl", "passwd", "-apr1", "-stdin"],
            input=self.password.encode(), capture_output=True, timeout=30,
            check=True).stdout.decode().strip()
        with open(os.path.join(self.front, "htpasswd"), "w") as f:
            f.write("%s:%s\n" % (user, hashed))
        os.chmod(os.path.join(self.front, "htpasswd"), 0o644)
        # Relative includes resolve against nginx.conf's folder.
        os.symlink("/etc/nginx/snippets", os.path.join(self.front,
                                                       "snippets"))
        self.port = free_port()
        conf = os.path.join(self.front, "nginx.conf")
        with open(conf, "w") as f:
            f.write(NGINX_CONF.format(d=self.front, port=self.port))
        nginx = shutil.which("nginx", path=PATH)
        chk = subprocess.run([nginx, "-t", "-p", self.front + "/", "-c",
                              conf, "-e", os.path.join(self.front,
                                                       "error.log")],
                             capture_output=True, timeout=30)
        assert chk.returncode == 0, chk.stderr.decode(errors="replace")
        self.spawn([nginx, "-p", self.front + "/", "-c", conf, "-e",
                    os.path.join(self.front, "error.log")], "nginx.out",
                   stdin=subprocess.DEVNULL, cwd=self.front)

        def up():
            try:
                return Client(self.port).request("GET", "/",
                                                 timeout=2).status == 200
            except OSError:
                return False
        wait_for(up, timeout=10, what="nginx serving the page")

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    continue
                try:
                    p.wait(20)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait(5)

    def log(self, name, n=2000):
        try:
            with open(os.path.join(self.dir, name), errors="replace") as f:
                return f.read()[-n:]
        except OSError:
            return ""

    def logs(self):
        return "\n".join("--- %s\n%s" % (n, self.log(n)) for n in
                         ("keeper.out", "fcgi.out", "nginx.out",
                          "front/error.log")) + \
            "\n--- ptyd.log\n" + _tail("/var/log/ptyd/ptyd.log")


def _tail(path, n=2000):
    try:
        with open(path, errors="replace") as f:
            return f.read()[-n:]
    except OSError:
        return "(none)"


def serving_ptyd(keeper):
    """The ptyd the keeper runs: its child whose program is ptyd."""
    kids = [p for p, exe in pids_of(PTYD).items()
            if _ppid(p) == keeper]
    return kids[0] if len(kids) == 1 else None


def _ppid(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _uid(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("Uid:"):
                return int(line.split()[1])
    return None


def _owned_by(uid, skip):
    """Files under the system's folders owned by uid, but for skip."""
    r = subprocess.run(["find", "/etc", "/var", "/run", "/srv", "/opt",
                        "/usr", "/tmp", "-xdev", "-path", skip, "-prune",
                        "-o", "-uid", str(uid), "-print"],
                       capture_output=True, timeout=120)
    return [p for p in r.stdout.decode(errors="replace").splitlines() if p]


def _owner_of(path):
    r = subprocess.run(["dpkg-query", "-S", path], capture_output=True,
                       timeout=30)
    return r.stdout.decode(errors="replace").strip() if r.returncode == 0 \
        else None


def _apt(args, log):
    return run(["apt-get", "-y", "-q", "-o", "DPkg::Lock::Timeout=120"] +
               args, log, timeout=300,
               env={"PATH": PATH, "LANG": "C.UTF-8",
                    "DEBIAN_FRONTEND": "noninteractive"})


@pytest.fixture
def installed(debs):
    had_account = True
    try:
        pwd.getpwnam(ACCOUNT)
    except KeyError:
        had_account = False
    stack = Stack(debs.root)
    try:
        yield stack
    finally:
        stack.stop()
        for link in stack.undo + ENABLED:
            if os.path.islink(link):
                os.unlink(link)
        _purge_whatever_happens()
        for p in pids_of(KEEPER, PTYD, FCGI):
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if not had_account:
            subprocess.run(["userdel", ACCOUNT], capture_output=True,
                           timeout=30)
            subprocess.run(["groupdel", ACCOUNT], capture_output=True,
                           timeout=30)


def _enable_other_fronts(debs, stack):
    """a2enconf ptyd and lighty-enable-mod ptyd, as an operator would;
    Apache and lighttpd must take the result.  Returns what the test
    must undo (lighttpd's fastcgi, enabled as a dependency)."""
    for tool in ("a2enconf", "apache2", "lighty-enable-mod", "lighttpd"):
        if shutil.which(tool, path=PATH) is None:
            pytest.fail("%s is not installed: run scripts/setup" % tool)
    fastcgi = "/etc/lighttpd/conf-enabled/10-fastcgi.conf"
    undo = [] if os.path.lexists(fastcgi) else [fastcgi]
    env = {"PATH": PATH, "LANG": "C.UTF-8"}
    run(["a2enconf", "-q", "ptyd"], debs.log, env=env)
    run(["lighty-enable-mod", "ptyd"], debs.log, env=env)
    for link in ENABLED + [fastcgi]:
        assert os.path.exists(link), link
    d = os.path.join(stack.dir, "apache")
    os.makedirs(d)
    conf = os.path.join(d, "apache2.conf")
    with open(conf, "w") as f:
        f.write(APACHE_CONF.format(
            d=d, port=free_port(),
            modules="\n".join("LoadModule %s_module "
                              "/usr/lib/apache2/modules/mod_%s.so" % (m, m)
                              for m in APACHE_MODULES)))
    run(["apache2", "-t", "-f", conf], debs.log, env=env)
    conf = os.path.join(stack.dir, "lighttpd.conf")
    with open(conf, "w") as f:
        f.write(LIGHTTPD_CONF.format(port=free_port()))
    run(["lighttpd", "-tt", "-f", conf], debs.log, env=env)
    return undo


def _purge_whatever_happens():
    """dpkg --purge; if the package's own scripts fail (the bug under
    test, say), purge with them stubbed, and remove what they would
    have: no test leaves a half-installed package on the machine."""
    if installed_version() is None:
        return
    r = subprocess.run(["dpkg", "--purge", PKG], capture_output=True,
                       timeout=DPKG_TIMEOUT)
    if r.returncode == 0 or installed_version() is None:
        return
    for script in ("prerm", "postrm"):
        path = "/var/lib/dpkg/info/%s.%s" % (PKG, script)
        if os.path.exists(path):
            with open(path, "w") as f:
                f.write("#!/bin/sh\nexit 0\n")
    subprocess.run(["dpkg", "--purge", PKG], capture_output=True,
                   timeout=DPKG_TIMEOUT)
    for d in STATE + ["/etc/ptyd"]:
        shutil.rmtree(d, ignore_errors=True)
    subprocess.run(["a2disconf", "-q", "-p", "ptyd"], capture_output=True,
                   timeout=30)


def _install(debs, stack):
    out = run(["dpkg", "-i", debs.deb], debs.log)
    assert installed_version() == debs.version, out
    # The account of the single-account service, its folders.
    pw = pwd.getpwnam(ACCOUNT)
    assert pw.pw_uid < 1000 and pw.pw_dir == "/var/lib/ptyd" and \
        pw.pw_shell == "/bin/bash", pw
    assert grp.getgrgid(pw.pw_gid).gr_name == ACCOUNT
    for d, mode, group in (("/var/lib/ptyd", 0o700, ACCOUNT),
                           ("/var/log/ptyd", 0o750, ACCOUNT),
                           ("/run/ptyd", 0o755, ACCOUNT),
                           ("/run/ptyd-fcgi", 0o750, "www-data")):
        st = os.stat(d)
        assert st.st_uid == pw.pw_uid and st.st_mode & 0o777 == mode and \
            grp.getgrgid(st.st_gid).gr_name == group, (d, oct(st.st_mode))
    # Conffiles, by dpkg's own list.
    conf = subprocess.run(["dpkg-query", "-W", "-f=${Conffiles}", PKG],
                          capture_output=True, timeout=30).stdout.decode()
    listed = [line.split()[0] for line in conf.splitlines() if line.strip()]
    assert not set(CONFFILES) - set(listed), listed
    # The programs under /usr, the units verified by systemd.
    for f in (PTYD, KEEPER, FCGI, "/usr/bin/ptydctl"):
        assert os.access(f, os.X_OK), f
    units = [os.path.join(UNITS, u) for u in SYSTEM_UNITS]
    r = subprocess.run(["systemd-analyze", "verify"] + units,
                       capture_output=True, timeout=60)
    out = (r.stdout + r.stderr).decode(errors="replace")
    assert r.returncode == 0 and not out.strip(), out
    # Nothing enabled or started by the package.
    assert not pids_of(KEEPER, PTYD, FCGI)
    # The operator's choice (docs/package.md): nginx checks the
    # passwords, ptyd.fcgi believes it.  A conffile edit.
    with open("/etc/ptyd.conf", "a") as f:
        f.write("auth = front\n")
    return run(["dpkg-query", "-L", PKG], debs.log).split("\n")


def _shell(stack, c, sid):
    """A terminal through nginx; the shell's pid and a mark in its state."""
    r = c.start(sid)
    assert r.status == 200, (r, stack.logs())
    s = c.stream(sid)
    try:
        assert s.status == 200, s.body
        r = c.input(sid, "MARK=kept-$((6*7)); echo pid=$$:$MARK\r")
        assert r.status == 200, r
        tr = read_output_until(s, "pid=", timeout=10)
        tr = read_output_until(s, ":kept-42", tr, timeout=10)
    finally:
        s.close()
    m = re.search(rb"pid=(\d+):kept-42", bytes(tr.data))
    assert m, bytes(tr.data)
    return int(m.group(1))


@pytest.mark.deadline(300)
def test_install_run_upgrade_remove_purge(debs, installed):
    stack = installed
    files = _install(debs, stack)
    stack.undo += _enable_other_fronts(debs, stack)

    stack.start_keeper()
    stack.start_fcgi()
    stack.start_nginx("alice")
    c = Client(stack.port, user="alice", password=stack.password)
    assert c.health().status == 200, stack.logs()
    sid = "pkg-" + os.urandom(4).hex()
    shell = _shell(stack, c, sid)
    acct = pwd.getpwnam(ACCOUNT).pw_uid
    assert _uid(shell) == acct, shell
    keeper = stack.keeper.pid
    old = serving_ptyd(keeper)
    assert old, pids_of(PTYD)

    # The upgrade: dpkg replaces every file; postinst has the keeper start
    # the new ptyd, which takes the shell over; the old one exits.
    out = run(["dpkg", "-i", debs.upgrade], debs.log)
    assert installed_version() == debs.new_version, out
    assert "1 keeper(s) asked" in out, out
    assert pids_of(KEEPER)[keeper].endswith(" (deleted)")

    def taken_over():
        new = serving_ptyd(keeper)
        if new is None or new == old:
            return None
        return new if not pids_of(PTYD)[new].endswith(" (deleted)") \
            else None
    new = wait_for(taken_over, timeout=30,
                   what=lambda: "a new ptyd under the keeper; %s"
                   % stack.logs())
    assert old not in pids_of(PTYD), "the old ptyd is still running"
    # The same shell, its state and output kept, answering.
    assert os.path.exists("/proc/%d" % shell) and _uid(shell) == acct
    assert _ppid(shell) == keeper
    s = c.stream(sid)
    try:
        assert s.status == 200, (s.body, stack.logs())
        tr = read_output_until(s, "pid=%d:kept-42" % shell, timeout=10)
        r = c.input(sid, "echo again-$$-$MARK\r")
        assert r.status == 200, r
        read_output_until(s, "again-%d-kept-42" % shell, tr, timeout=10)
    finally:
        s.close()
    assert serving_ptyd(keeper) == new
    # The operator's edit of a conffile survives the upgrade.
    with open("/etc/ptyd.conf") as f:
        assert "auth = front\n" in f.read()

    # Remove: prerm ends the shells (the keeper hangs them up) and stops
    # ptyd.fcgi; the conffiles and the state stay.
    _apt(["remove", PKG], debs.log)
    assert installed_version() == "(config-files)"
    wait_for(lambda: not pids_of(KEEPER, PTYD, FCGI), timeout=5,
             what=lambda: "nothing of ours running: %s"
             % pids_of(KEEPER, PTYD, FCGI))
    assert not os.path.exists("/proc/%d" % shell), "the shell outlived it"
    for f in files:
        if f.startswith(("/usr/", "/lib/")) and os.path.isfile(f):
            raise AssertionError("%s is left after remove" % f)
    assert os.path.isfile("/etc/ptyd.conf")
    assert os.path.isdir("/var/lib/ptyd")

    # Purge: nothing of the package is left but the account, locked.
    _apt(["purge", PKG], debs.log)
    assert installed_version() is None
    left = []
    for f in files:
        if not f.startswith("/") or not os.path.lexists(f):
            continue
        if os.path.isdir(f) and (os.path.normpath(f).count("/") <= 1 or
                                 _owner_of(f)):
            continue            # a folder of the system or of others
        left.append(f)
    left += [d for d in STATE + ["/etc/ptyd", "/etc/ptyd.conf"] + ENABLED
             if os.path.lexists(d)]
    assert not left, left
    pw = pwd.getpwnam(ACCOUNT)
    assert pw.pw_shell == "/usr/sbin/nologin", pw
    # Expired (shadow's 8th field, days since 1970): no login, no su.
    shadow = subprocess.run(["getent", "shadow", ACCOUNT],
                            capture_output=True, timeout=30).stdout.decode()
    assert shadow.split(":")[7] == "1", shadow
    owned = _owned_by(pw.pw_uid, debs.root)
    assert not owned, owned
    assert not pids_of(KEEPER, PTYD, FCGI)

    # Installed again, the account is opened again; purged again, locked.
    run(["dpkg", "-i", debs.deb], debs.log)
    pw = pwd.getpwnam(ACCOUNT)
    assert pw.pw_shell == "/bin/bash", pw
    shadow = subprocess.run(["getent", "shadow", ACCOUNT],
                            capture_output=True, timeout=30).stdout.decode()
    assert shadow.split(":")[7] == "", shadow
    run(["dpkg", "--purge", PKG], debs.log)
    assert pwd.getpwnam(ACCOUNT).pw_shell == "/usr/sbin/nologin"
    assert not [d for d in STATE + ["/etc/ptyd"] if os.path.lexists(d)]
