"""test_install.py -- `make install` from the distribution, and the
installed programs run from their prefix.

One build per module: the tree `make dist` tars (made with `make distdir`
in PTYD_BUILDDIR) is configured with --prefix in a temp dir and built and
installed with npm and node made unusable on PATH, so the page's assets
must come from the tarball.  Then, from the prefix only: every file of the
install layout (/work spec, docs/deploy.md "Build and install"), the systemd units through
`systemd-analyze verify`, the man pages through man's warnings, and a
stack of the installed ptyd.fcgi with nginx running as www-data, using the
installed nginx blocks and page, with ptyd autostarted from libexec.

Owns: nothing but its temp dir and the processes it starts (found by
their pid or by the installed binary's path, which is unique to the temp
prefix).
"""

import grp
import hashlib
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

import front_servers as fs
from ptyd_http import Client, read_output_until
from ptyd_stack import BUILDDIR, children_of, free_port, wait_for

VERSION = "1.0.0"
BUILD_TIMEOUT = 240

# The install layout of the spec, relative to the prefix.
LAYOUT = [
    "bin/ptydctl", "bin/ptyd.fcgi", "libexec/ptyd/ptyd",
    "libexec/ptyd/ptyd-keeper", "libexec/ptyd/ptyd-recorder",
    "share/man/man8/ptyd.8", "share/man/man8/ptyd.fcgi.8",
    "share/man/man1/ptydctl.1", "share/man/man5/ptyd.conf.5",
    "share/ptyd/sql/schema.sql", "share/ptyd/sql/audit.sql",
    "share/ptyd/nginx/ptyd-location.conf",
    "share/ptyd/nginx/ptyd-location-auth-basic.conf",
    "share/ptyd/nginx/ptyd-location-auth-request.conf",
    "share/ptyd/nginx/ptyd-fastcgi.conf", "share/ptyd/nginx/ptyd-errors.conf",
    "share/ptyd/nginx/ptyd-stream.conf", "share/ptyd/nginx/ptyd-page.conf",
    "share/ptyd/nginx/ptyd-location-fcgiwrap.conf",
    "share/ptyd/apache/ptyd-fcgid.conf", "share/ptyd/apache/ptyd-cgid.conf",
    "share/ptyd/apache/ptyd-proxy-fcgi.conf",
    "share/ptyd/apache/ptyd-fcgid-wrapper", "share/ptyd/apache/ptyd-page.conf",
    "share/ptyd/lighttpd/ptyd-fastcgi.conf",
    "share/ptyd/lighttpd/ptyd-cgi.conf", "share/ptyd/spawn-fcgi/run",
    "share/ptyd/web/index.html",
    "etc/ptyd.conf.sample", "etc/logrotate.d/ptyd",
    "lib/systemd/system/ptyd.service", "lib/systemd/system/ptyd@.service",
    "lib/systemd/system/ptyd-keeper.service",
    "lib/systemd/system/ptyd-keeper@.service",
    "lib/systemd/system/ptyd-fcgi.socket",
    "lib/systemd/system/ptyd-fcgi.service",
    "lib/systemd/user/ptyd.service", "lib/systemd/user/ptyd-keeper.service",
    "share/doc/ptyd/README.md", "share/doc/ptyd/LICENSE",
    "share/doc/ptyd/NEWS", "share/doc/ptyd/HACKING.md",
    "share/doc/ptyd/docs/DESIGN.md", "share/doc/ptyd/docs/STYLE.md",
    "share/doc/ptyd/docs/deploy.md", "share/doc/ptyd/docs/hosting.md",
    "share/doc/ptyd/docs/operating.md", "share/doc/ptyd/docs/page.md",
    "share/doc/ptyd/docs/scaling.md", "share/doc/ptyd/docs/security.md",
]
MANPAGES = ["share/man/man8/ptyd.8", "share/man/man8/ptyd.fcgi.8",
            "share/man/man1/ptydctl.1", "share/man/man5/ptyd.conf.5"]
UNITS = ["lib/systemd/system/ptyd.service",
         "lib/systemd/system/ptyd@.service",
         "lib/systemd/system/ptyd-keeper.service",
         "lib/systemd/system/ptyd-keeper@.service",
         "lib/systemd/system/ptyd-fcgi.socket",
         "lib/systemd/system/ptyd-fcgi.service",
         "lib/systemd/user/ptyd.service",
         "lib/systemd/user/ptyd-keeper.service"]
# Each handle unit (ptydctl service) and the keeper unit it requires.
UNIT_PAIRS = [("lib/systemd/system/ptyd.service",
               "lib/systemd/system/ptyd-keeper.service",
               "ptyd-keeper.service"),
              ("lib/systemd/system/ptyd@.service",
               "lib/systemd/system/ptyd-keeper@.service",
               "ptyd-keeper@%i.service"),
              ("lib/systemd/user/ptyd.service",
               "lib/systemd/user/ptyd-keeper.service",
               "ptyd-keeper.service")]
# Every key of the settings table (spec: "Keys").
KEYS = """state_dir db socket log log_level pidfile shell shell_arg
workspace_root default_workspace idle_grace reap_interval linger
stall_timeout max_terminals max_per_owner max_viewers ring_size input_limit
shell_umask listen fcgi_log fcgi_pidfile socket_group socket_mode
autostart ptyd heartbeat
stream_padding
max_threads processes auth local allow_remote allowed_hosts
trusted_proxy_cidrs trust_forwarded_for""".split()

# Stand-ins for npm and node, first on PATH: the build must not run them.
SHIM = """#!/bin/sh
echo "$0 $*" >> "%s"
echo "$0: not to be used by a build from the tarball" >&2
exit 1
"""


def run(cmd, log, **kw):
    """Run cmd (list) with output appended to log; raise with its tail on
    failure."""
    with open(log, "ab") as f:
        f.write(("\n$ %s\n" % " ".join(cmd)).encode())
        f.flush()
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL,
                           timeout=kw.pop("timeout", BUILD_TIMEOUT), **kw)
    if r.returncode != 0:
        with open(log, "rb") as f:
            tail = f.read()[-3000:].decode(errors="replace")
        raise AssertionError("%s exited %d:\n%s"
                             % (" ".join(cmd), r.returncode, tail))


class Installed:
    def __init__(self, root):
        self.root = root
        self.src = os.path.join(root, "ptyd-%s" % VERSION)
        self.build = os.path.join(root, "build")
        self.prefix = os.path.join(root, "prefix")
        self.log = os.path.join(root, "build.log")
        self.npm_log = os.path.join(root, "npm-used.log")

    def path(self, rel):
        return os.path.join(self.prefix, rel)


@pytest.fixture(scope="module")
def installed():
    root = tempfile.mkdtemp(prefix="ptyd-install-", dir="/tmp")
    os.chmod(root, 0o755)       # nginx's workers (www-data) come through
    inst = Installed(root)
    try:
        _build(inst)
        yield inst
    finally:
        _kill_installed(inst)
        if not os.environ.get("PTYD_TEST_KEEP"):
            shutil.rmtree(root, ignore_errors=True)


def _umask022():
    os.umask(0o022)     # installed files readable by www-data


def _build(inst):
    if not os.path.exists(os.path.join(BUILDDIR, "Makefile")):
        pytest.fail("no configured build in %s" % BUILDDIR)
    # What `make dist` puts in the tarball, as a tree.
    run(["make", "-C", BUILDDIR, "-s", "distdir", "distdir=" + inst.src],
        inst.log)
    shims = os.path.join(inst.root, "shims")
    os.makedirs(shims)
    for name in ("npm", "node", "npx"):
        p = os.path.join(shims, name)
        with open(p, "w") as f:
            f.write(SHIM % inst.npm_log)
        os.chmod(p, 0o755)
    env = {"PATH": shims + ":/usr/sbin:/usr/bin:/sbin:/bin",
           "HOME": inst.root, "LANG": "C.UTF-8", "TMPDIR": inst.root,
           # No proxy, no way out: the build must not need the network.
           "http_proxy": "http://127.0.0.1:9", "https_proxy":
           "http://127.0.0.1:9"}
    os.makedirs(inst.build)

    inst.env = env
    kw = dict(cwd=inst.build, env=env, preexec_fn=_umask022)
    run([os.path.join(inst.src, "configure"), "-q",
         "--prefix=" + inst.prefix], inst.log, **kw)
    run(["make", "-s", "-j2"], inst.log, **kw)
    run(["make", "-s", "install"], inst.log, **kw)


def _installed_ptyd_pids(inst, name="ptyd"):
    exe = inst.path("libexec/ptyd/" + name)
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if os.readlink("/proc/%s/exe" % d) == exe:
                pids.append(int(d))
        except OSError:
            pass
    return pids


def _kill_installed(inst):
    """SIGTERM the keeper an installed ptyd.fcgi autostarted (its ptyd
    hangs up the shells), then any ptyd left (one without a keeper);
    SIGKILL what is left after 10 s.  Keepers first: a ptyd that gets
    SIGTERM under its keeper leaves, and the keeper starts another."""
    for name in ("ptyd-keeper", "ptyd"):
        for p in _installed_ptyd_pids(inst, name):
            try:
                os.kill(p, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 10
        while _installed_ptyd_pids(inst, name) and \
                time.monotonic() < deadline:
            time.sleep(0.05)
    for name in ("ptyd-keeper", "ptyd"):
        for p in _installed_ptyd_pids(inst, name):
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass


# ---- the files ------------------------------------------------------------


def test_build_used_no_npm(installed):
    assert not os.path.exists(installed.npm_log), \
        open(installed.npm_log).read()
    # The tarball carries the built page, not its npm sources.
    assert os.path.isfile(os.path.join(installed.src, "web/dist/index.html"))
    assert not os.path.exists(os.path.join(installed.src, "web/node_modules"))


# Tracked files the tarball leaves out on purpose: git's own.
NOT_DISTRIBUTED = {".gitignore", ".git-blame-ignore-revs"}


def test_tarball_carries_every_tracked_file(installed):
    """A file added to the repository but not to the tarball (dist.mk)
    is a build, a test or a document that an unpacked release lacks."""
    src = os.path.dirname(os.path.abspath(__file__)) + "/../.."
    r = subprocess.run(["git", "-C", src, "ls-files", "-z"],
                       capture_output=True, timeout=30)
    if r.returncode != 0:
        pytest.skip("not a git checkout: nothing to compare the tarball to")
    tracked = [f for f in r.stdout.decode().split("\0") if f]
    assert len(tracked) > 100
    missing = [f for f in tracked if f not in NOT_DISTRIBUTED
               and not os.path.lexists(os.path.join(installed.src, f))]
    assert missing == [], "not in the tarball (dist.mk): %s" % missing


def test_layout(installed):
    missing = [f for f in LAYOUT if not os.path.isfile(installed.path(f))]
    assert not missing, "not installed: %s" % missing
    for f in ("bin/ptydctl", "bin/ptyd.fcgi", "libexec/ptyd/ptyd",
              "libexec/ptyd/ptyd-keeper"):
        assert os.access(installed.path(f), os.X_OK), f
    # logrotate's postrotate signals the pid file the keeper's unit
    # writes (the keeper passes SIGHUP on to ptyd).
    unit = open(installed.path(
        "lib/systemd/system/ptyd-keeper.service")).read()
    rot = open(installed.path("etc/logrotate.d/ptyd")).read()
    m = re.search(r"^ExecStart=\S+ .*--pidfile (\S+)", unit, re.M)
    assert m and installed.path("libexec/ptyd/ptyd") in unit, unit
    assert 'kill -HUP "$(cat %s)"' % m.group(1) in rot, rot
    assert re.search(r"--log (\S+)", unit).group(1).startswith(
        "/var/log/ptyd/") and "/var/log/ptyd/*.log {" in rot
    # ptyd is in libexec only; no npm leftovers anywhere.
    assert not os.path.exists(installed.path("bin/ptyd"))
    for dirpath, dirs, files in os.walk(installed.prefix):
        assert "node_modules" not in dirs, dirpath
        for name in files:
            assert name not in ("package.json", "package-lock.json"), \
                os.path.join(dirpath, name)


def _unit_keys(text):
    """A unit file's keys (any section): name -> list of values."""
    keys = {}
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z]+)=(.*)$", line)
        if m:
            keys.setdefault(m.group(1), []).append(m.group(2))
    return keys


def test_units_keep_the_shells_across_a_restart(installed):
    """ptyd.service (and ptyd@, and the user unit) is the handle: its main
    process is ptydctl service, restarted with SIGUSR1 (an upgrade), so a
    restart does not kill the keeper, which runs the shells in a unit of
    its own, as ptyd -f with the old units' hardening."""
    for handle, keeper, name in UNIT_PAIRS:
        h = _unit_keys(open(installed.path(handle)).read())
        k = _unit_keys(open(installed.path(keeper)).read())
        ctl = installed.path("bin/ptydctl")
        assert h["ExecStart"] == [ctl + " service"], (handle, h)
        assert h["ExecReload"] == [ctl + " upgrade"], (handle, h)
        assert h["RestartKillSignal"] == ["SIGUSR1"], (handle, h)
        assert name in h["Requires"][0].split(), (handle, h)
        assert name in h["After"][0].split(), (handle, h)
        # ptydctl waits up to 30 s for the keeper to stop.
        assert int(h["TimeoutStopSec"][0]) > 30, (handle, h)
        assert k["ExecStart"][0].startswith(
            installed.path("libexec/ptyd/ptyd") + " -f"), (keeper, k)
        assert k["KillMode"] == ["mixed"], (keeper, k)
        assert k["Restart"] == ["on-failure"], (keeper, k)
        assert "Install" not in open(installed.path(keeper)).read(), \
            "the keeper is started through its handle only"
        # ptydctl service speaks to the keeper's ptyd: same account, same
        # state directory.
        def state(keys):
            return [v for v in keys.get("Environment", [])
                    if v.startswith("PTYD_STATE_DIR=")]
        assert h.get("User") == k.get("User"), (handle, h, k)
        assert h.get("Group") == k.get("Group"), (handle, h, k)
        assert state(h) == state(k), (handle, h, k)
    system = _unit_keys(open(installed.path(
        "lib/systemd/system/ptyd-keeper.service")).read())
    assert system["OOMScoreAdjust"] == ["-900"], system
    for key in ("StateDirectory", "LogsDirectory", "RuntimeDirectory"):
        assert key in system, key


def test_page_assets_versioned(installed):
    web = installed.path("share/ptyd/web")
    html = open(os.path.join(web, "index.html")).read()
    refs = re.findall(r'(?:href|src)="([^"?#]+)"', html)
    refs = [r for r in refs if not r.startswith(("?", "http"))]
    assert any(r.endswith(".js") for r in refs), refs
    assert any(r.endswith(".css") for r in refs), refs
    assets = set(os.listdir(os.path.join(web, "assets")))
    named = re.compile(r"^[a-z-]+\.([0-9a-f]{12})\.(js|css|svg)$")
    for r in refs:
        assert r.startswith("assets/"), r
        name = r[len("assets/"):]
        m = named.match(name)
        assert m, "not a versioned name: %s" % r
        data = open(os.path.join(web, r), "rb").read()
        assert hashlib.sha256(data).hexdigest()[:12] == m.group(1), r
    # The app's imports name versioned neighbours that exist.
    app = [r for r in refs if r.startswith("assets/app.")][0]
    text = open(os.path.join(web, app)).read()
    imports = re.findall(r"""from '\./([^']+)'|import\('\./([^']+)'\)""",
                         text)
    imports = [a or b for a, b in imports]
    assert len(imports) >= 2, imports
    for name in imports:
        assert named.match(name) and name in assets, name


def test_sample_config_has_every_key(installed):
    text = open(installed.path("etc/ptyd.conf.sample")).read()
    for k in KEYS:
        assert re.search(r"^#%s = " % re.escape(k), text + "\n", re.M) or \
            re.search(r"^#%s =$" % re.escape(k), text, re.M), k


def test_ptyd_fcgi_finds_ptyd_in_libexec(installed):
    # The binary names the install's libexec (configure's directory).
    data = open(installed.path("bin/ptyd.fcgi"), "rb").read()
    assert installed.path("libexec/ptyd").encode() in data


def test_units_verify(installed):
    sa = shutil.which("systemd-analyze")
    if sa is None:
        pytest.skip("systemd-analyze is not installed (Debian: systemd)")
    env = dict(os.environ)
    # Documentation=man:... is checked with man: find ours.
    env["MANPATH"] = installed.path("share/man") + ":"
    r = subprocess.run([sa, "verify"] + [installed.path(u) for u in UNITS],
                       capture_output=True, timeout=60, env=env,
                       stdin=subprocess.DEVNULL)
    out = (r.stdout + r.stderr).decode(errors="replace")
    assert r.returncode == 0 and out.strip() == "", out


def test_man_pages(installed):
    for page in MANPAGES:
        p = installed.path(page)
        r = subprocess.run(["man", "--warnings", "-l", p],
                           capture_output=True, timeout=30,
                           env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
                                "MANWIDTH": "80", "LANG": "C.UTF-8",
                                "MAN_KEEP_FORMATTING": ""},
                           stdin=subprocess.DEVNULL)
        assert r.returncode == 0, (page, r.stderr)
        assert r.stderr.decode().strip() == "", (page, r.stderr)
        text = r.stdout.decode(errors="replace")
        assert "NAME" in text and "SEE ALSO" in text, page
        # Every configure directory was filled in.
        assert not re.search(r"@[a-z_]+@", open(p).read()), page
        if shutil.which("mandoc"):
            r = subprocess.run(["mandoc", "-Tlint", "-Wwarning", p],
                               capture_output=True, timeout=30)
            assert r.returncode == 0, (page, r.stdout, r.stderr)


# ---- the installed programs running --------------------------------------

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
    types {{
        text/html html;
        text/css css;
        application/javascript js;
        image/svg+xml svg;
    }}
    upstream ptyd_fcgi {{ server "unix:{sock}"; }}
    upstream ptyd_fcgi_kept {{ server "unix:{sock}"; keepalive 16; }}
    server {{
        listen 127.0.0.1:{port};
        server_name localhost;
        include ptyd/ptyd-location.conf;
        set $ptyd_frame_ancestors "'self'";
        include ptyd/ptyd-page.conf;
    }}
}}
"""

APACHE_CONF = """ServerRoot "{d}"
Listen 127.0.0.1:{port}
ServerName 127.0.0.1
PidFile "{d}/apache2.pid"
DefaultRuntimeDir "{d}"
Mutex file:{d} default
ErrorLog "{d}/error.log"
LogLevel warn
User www-data
Group www-data
TypesConfig /etc/mime.types
{modules}
<Directory />
    Require all denied
    AllowOverride None
</Directory>
<VirtualHost 127.0.0.1:{port}>
    ServerName 127.0.0.1
    Define PTYD_SOCKET {sock}
    Include "{share}/apache/ptyd-proxy-fcgi.conf"
    Include "{share}/apache/ptyd-page.conf"
</VirtualHost>
"""
APACHE_MODULES = ("mpm_event", "authz_core", "proxy", "proxy_fcgi",
                  "headers", "mime", "dir", "env", "deflate", "filter")


class InstalledStack:
    """The installed ptyd.fcgi (as root, socket in group www-data with the
    given mode) behind nginx whose workers are www-data, configured with
    the installed location blocks (nginx/ptyd -> PREFIX/share/ptyd/nginx),
    or behind Apache running as www-data with the installed
    apache/ptyd-proxy-fcgi.conf and apache/ptyd-page.conf."""

    def __init__(self, inst, name, mode, front="nginx"):
        self.inst = inst
        self.dir = os.path.join(inst.root, name)
        os.makedirs(os.path.join(self.dir, "front", "tmp"))
        os.makedirs(os.path.join(self.dir, "run"))
        self.home = os.path.join(self.dir, "home")
        os.makedirs(self.home, mode=0o700)
        for d in (self.dir, os.path.join(self.dir, "run"),
                  os.path.join(self.dir, "front")):
            os.chmod(d, 0o755)
        self.sock = os.path.join(self.dir, "run", "fcgi.sock")
        self.mode = mode
        self.front = front
        self.port = None
        self.procs = []

    def start(self):
        state = os.path.join(self.home, "state")
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": self.home,
               "LANG": "C.UTF-8", "SHELL": "/bin/bash",
               "XDG_STATE_HOME": state, "PTYD_STATE_DIR": state,
               "PTYD_SOCKET": os.path.join(state, "ptyd.sock")}
        fcgi_log = open(os.path.join(self.dir, "fcgi.log"), "ab")
        self.procs.append(subprocess.Popen(
            [self.inst.path("bin/ptyd.fcgi"), "--listen", self.sock,
             "--socket-group", "www-data", "--socket-mode", self.mode],
            env=env, cwd=self.dir, stdin=subprocess.DEVNULL,
            stdout=fcgi_log, stderr=subprocess.STDOUT,
            start_new_session=True))
        wait_for(lambda: os.path.exists(self.sock), timeout=10,
                 what="ptyd.fcgi's socket")
        if self.front == "apache":
            self._start_apache()
        else:
            self._start_nginx()

        def up():
            try:
                return Client(self.port).request("GET", "/",
                                                 timeout=2).status == 200
            except OSError:
                return False
        wait_for(up, timeout=10, what="%s serving the page" % self.front)
        return self

    def _start_apache(self):
        binary = fs.need("apache2", "apache2")
        for m in APACHE_MODULES:
            fs.need_file("%s/mod_%s.so" % (fs.APACHE_MODULES, m), "apache2")
        ad = os.path.join(self.dir, "front")
        self.port = free_port()
        conf = os.path.join(ad, "apache2.conf")
        with open(conf, "w") as f:
            f.write(APACHE_CONF.format(
                d=ad, port=self.port, sock=self.sock,
                share=self.inst.path("share/ptyd"),
                modules="\n".join("LoadModule %s_module %s/mod_%s.so"
                                  % (m, fs.APACHE_MODULES, m)
                                  for m in APACHE_MODULES)))
        chk = subprocess.run([binary, "-t", "-f", conf], capture_output=True,
                             timeout=30)
        assert chk.returncode == 0, chk.stderr.decode(errors="replace")
        self.procs.append(subprocess.Popen(
            [binary, "-f", conf, "-DFOREGROUND"], cwd=ad,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True))

    def _start_nginx(self):
        nd = os.path.join(self.dir, "front")
        os.symlink(self.inst.path("share/ptyd/nginx"),
                   os.path.join(nd, "ptyd"))
        self.port = free_port()
        with open(os.path.join(nd, "nginx.conf"), "w") as f:
            f.write(NGINX_CONF.format(d=nd, sock=self.sock, port=self.port))
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        self.procs.append(subprocess.Popen(
            [nginx, "-p", nd + "/", "-c", os.path.join(nd, "nginx.conf"),
             "-e", os.path.join(nd, "error.log")],
            cwd=nd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True))

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait(5)
        _kill_installed(self.inst)

    def log(self, name):
        try:
            return open(os.path.join(self.dir, name),
                        errors="replace").read()[-2000:]
        except OSError:
            return ""


@pytest.fixture
def installed_stack(installed, request):
    stacks = []

    def make(name, mode, front="nginx"):
        st = InstalledStack(installed, name, mode, front)
        stacks.append(st)
        return st.start()
    yield make
    for st in stacks:
        st.stop()


@pytest.mark.deadline(60)
@pytest.mark.parametrize("front", ["nginx", "apache"])
def test_installed_stack_as_www_data(installed, installed_stack, front):
    """The installed page and API behind a front server whose workers are
    www-data, configured only with the installed files."""
    st = installed_stack("www-" + front, "0660", front)
    c = Client(st.port)
    # The installed page, its assets cacheable for ever.
    page = c.request("GET", "/")
    assert page.status == 200, page
    html = page.body.decode()
    app = re.search(r'src="(assets/app\.[0-9a-f]{12}\.js)"', html).group(1)
    r = c.request("GET", "/" + app)
    assert r.status == 200, r
    # A module script needs a JavaScript type (RFC 9239 names
    # text/javascript; nginx's mime.types says application/javascript).
    assert r.header("content-type", "").split(";")[0] in (
        "application/javascript", "text/javascript"), r.headers
    assert "immutable" in r.header("cache-control", ""), r.headers
    # Everything the page and its modules name is served.
    names = re.findall(r'(?:href|src)="(assets/[^"]+)"', html)
    names += ["assets/" + m for m in
              re.findall(r"from '\./([^']+)'", r.body.decode())]
    for n in names:
        a = c.request("GET", "/" + n)
        assert a.status == 200 and a.body, (n, a)
    assert "no-cache" in page.header("cache-control", ""), page.headers
    assert page.header("x-content-type-options") == "nosniff", page.headers
    # Only this origin may frame it (DESIGN 6).
    assert "frame-ancestors 'self'" in page.header(
        "content-security-policy", ""), page.headers
    assert page.header("x-frame-options") == "SAMEORIGIN", page.headers
    assert c.request("GET", "/node_modules/x.js").status in (403, 404)

    # A terminal over HTTP, through nginx's www-data workers, ptyd.fcgi's
    # group socket and a ptyd autostarted from libexec.
    sid = "install-" + os.urandom(4).hex()
    r = c.start(sid)
    assert r.status == 200, (r, st.log("fcgi.log"), st.log("front/error.log"))
    pids = _installed_ptyd_pids(installed)
    assert pids, "no ptyd running from %s" % installed.path("libexec")
    s = c.stream(sid)
    try:
        assert s.status == 200, s.body
        r = c.input(sid, "echo hi-$((6*7))\r")
        assert r.status == 200, r
        read_output_until(s, "hi-42", timeout=10)
    finally:
        s.close()
    c.close_term(sid)
    # The workers really are www-data, and the socket is theirs by group.
    st_sock = os.stat(st.sock)
    assert oct(st_sock.st_mode & 0o777) == "0o660"
    assert grp.getgrgid(st_sock.st_gid).gr_name == "www-data"
    master = st.procs[-1].pid
    workers = children_of(master)
    assert workers, "%s has no workers" % front
    www = pwd.getpwnam("www-data").pw_uid
    for pid in workers:
        with open("/proc/%d/status" % pid) as f:
            uid = [line.split()[1] for line in f if line.startswith("Uid:")]
        assert uid == [str(www)], (pid, uid)


@pytest.mark.deadline(60)
@pytest.mark.parametrize("front", ["nginx", "apache"])
def test_socket_mode_0600_locks_www_data_out(installed, installed_stack,
                                             front):
    st = installed_stack("private-" + front, "0600", front)
    r = Client(st.port).health()
    # nginx (www-data) may not connect: its 502, which the installed
    # ptyd-fastcgi.conf answers as the API's JSON 503 with Retry-After.
    assert r.status == 503, (r, st.log("front/error.log"))
    assert r.header("content-type", "").startswith("application/json"), r
    assert r.json() == {"error": "ptyd.fcgi is not running"}, r
    assert r.header("retry-after"), r
    err = st.log("front/error.log")
    assert "Permission denied" in err and st.sock in err, err


# ---- reconfigured: last, since it moves the build to another prefix ------

def _objects(build):
    """{object file: mtime} of a build tree."""
    got = {}
    for d, _, files in os.walk(build):
        for f in files:
            if f.endswith(".o"):
                p = os.path.join(d, f)
                got[p] = os.stat(p).st_mtime_ns
    return got


def _uses_paths_h(obj):
    """Does make's dependency file of obj name lib/paths.h?"""
    d, f = os.path.split(obj)
    try:
        with open(os.path.join(d, ".deps", f[:-2] + ".Po")) as po:
            return re.search(r"(^|[\s/])lib/paths\.h\b", po.read(),
                             re.M) is not None
    except FileNotFoundError:
        return False


@pytest.mark.deadline(200)
def test_a_reconfigured_tree_installs_programs_with_the_new_paths(
        installed, tmp_path):
    """Issue 33: ./configure --prefix=B in a tree built for A, then make
    and make install.  B's ptyd.fcgi must look for ptyd.conf and ptyd
    under B; it used to keep A's (the paths were -D flags, which make
    does not see, so nothing was rebuilt).  make rebuilds exactly the
    objects that include lib/paths.h."""
    b = Installed(installed.root)
    b.prefix = os.path.join(installed.root, "prefix-b")
    kw = dict(cwd=installed.build, env=installed.env, preexec_fn=_umask022)
    before = _objects(installed.build)
    run([os.path.join(installed.src, "configure"), "-q",
         "--prefix=" + b.prefix], installed.log, **kw)
    run(["make", "-s", "-j2"], installed.log, **kw)
    after = _objects(installed.build)
    rebuilt = sorted(o for o in after if after[o] != before.get(o))
    users = sorted(o for o in after if _uses_paths_h(o))
    run(["make", "-s", "install"], installed.log, **kw)

    st = tmp_path / "st"
    with open(b.path("etc/ptyd.conf"), "w") as f:
        f.write("state_dir = %s\nheartbeat = 7\nlocal = address\n"
                "shell = /bin/sh\n" % st)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
           "LANG": "C.UTF-8"}
    fcgi = b.path("bin/ptyd.fcgi")
    r = subprocess.run([fcgi, "--print-config"], env=env,
                       capture_output=True, timeout=20)
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    assert re.search(r"^heartbeat = 7  # %s:2$"
                     % re.escape(b.path("etc/ptyd.conf")), out, re.M), out
    assert re.search(r"^ptyd = %s  # " % re.escape(
        b.path("libexec/ptyd/ptyd")), out, re.M), out
    r = subprocess.run([fcgi, "--help"], env=env, capture_output=True,
                       timeout=20)
    assert b.path("etc/ptyd.conf") in r.stdout.decode(), r.stdout

    # A request autostarts B's ptyd, not A's.
    cgi = dict(env, REQUEST_METHOD="GET", GATEWAY_INTERFACE="CGI/1.1",
               DOCUMENT_URI="/api/terminal/health", REMOTE_ADDR="127.0.0.1",
               HTTP_HOST="127.0.0.1:8080", SERVER_PORT="8080",
               REQUEST_SCHEME="http")
    try:
        r = subprocess.run([fcgi], env=cgi, capture_output=True,
                           stdin=subprocess.DEVNULL, timeout=30)
        m = re.search(rb'"pid": (\d+)', r.stdout)
        assert m, (r.stdout, r.stderr)
        exe = os.readlink("/proc/%d/exe" % int(m.group(1)))
        assert exe == b.path("libexec/ptyd/ptyd"), exe
    finally:
        _kill_installed(b)
    # What make rebuilt: the objects that include lib/paths.h, no more.
    assert users and rebuilt == users, (rebuilt, users)
