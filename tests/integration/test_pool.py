"""test_pool.py -- ptyd-pool (ptyd-pool(8), DESIGN 11): one master, run
as root the way its unit runs it, serves every account of a pool folder,
each as its own account with no privilege left, restarts what dies, and
takes an added and a removed account on SIGHUP without touching the
others.

Run as an operator would: `make install DESTDIR=...` of the build, the
installed ptyd-pool in the foreground on a temp pool folder, three test
accounts of our own (ptyd-pool-a, -b, -c; created and removed here), one
nginx (workers www-data) in front with auth_basic and the installed
location blocks, mapping each web user to that account's socket.  At
start the folder holds a and c; b is added, a removed on a reload.

Owns: its temp dir, the three accounts, the master (and through it every
account's processes), nginx.
"""

import grp
import os
import pwd
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import time

import pytest

from ptyd_http import Client, Shell
from ptyd_stack import BUILDDIR, REPO, free_port, proc_gone, wait_for
from test_accounts import PASSWORD, htpasswd_line, nginx_conf, pids_of_uid

NAMES = {"a": "ptyd-pool-a", "b": "ptyd-pool-b", "c": "ptyd-pool-c"}
SECRET = "PTYD_POOL_TEST_SECRET"


def installed_prefix():
    with open(os.path.join(BUILDDIR, "Makefile")) as f:
        return re.search(r"^prefix = (.*)$", f.read(), re.M).group(1)


def pool_file(site, key, extra=""):
    user = NAMES[key]
    return ("# pool %s\nuser = %s\nlisten = %s\nlisten_group = www-data\n"
            "auth = front\nmetrics_users = %s\nprocesses = 1\n"
            "shell = /bin/bash\n"
            "shell_arg = --norc\nshell_arg = --noprofile\nshell_arg = -i\n"
            "%s" % (key, user, site["sock"][key], user, extra))


def write_pool(site, key, extra=""):
    path = os.path.join(site["pool"], key + ".conf")
    with open(path + ".tmp", "w") as f:
        f.write(pool_file(site, key, extra))
    os.chmod(path + ".tmp", 0o644)
    os.rename(path + ".tmp", path)


def create_user(name, home):
    try:
        pwd.getpwnam(name)
        subprocess.run(["usermod", "--home", home, name], check=True,
                       capture_output=True, timeout=30)
    except KeyError:
        subprocess.run(["useradd", "--no-create-home", "--home-dir", home,
                        "--shell", "/bin/bash", name], check=True,
                       capture_output=True, timeout=30)
    pw = pwd.getpwnam(name)
    os.makedirs(home)
    os.chown(home, pw.pw_uid, pw.pw_gid)
    os.chmod(home, 0o700)
    return pw


def kill_uid(uid):
    for pid in pids_of_uid(uid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    wait_for(lambda: not pids_of_uid(uid), timeout=10,
             what="uid %d's processes to end" % uid)


def master_children(site):
    """{(pool, kind): pid} of the master's children, by their argv."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv = f.read().split(b"\0")
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if ppid != site["master"].pid:
            continue
        conf = [a.decode() for a in argv if a.endswith(b".conf")]
        kind = "fcgi" if argv[0].endswith(b"ptyd.fcgi") else "ptyd"
        if conf:
            out[(os.path.basename(conf[0])[:-5], kind)] = int(pid)
    return out


def log_text(site):
    with open(site["log"], errors="replace") as f:
        return f.read()


def client(site, key):
    return Client(site["port"], user=NAMES[key], password=PASSWORD)


def serves(site, key):
    r = client(site, key).health()
    return r.status == 200 and r.json().get("pool") == key


@pytest.fixture(scope="module")
def site():
    if os.geteuid() != 0:
        pytest.skip("needs root: ptyd-pool starts as root, the test makes "
                    "accounts (useradd)")
    for prog in ("useradd", "userdel", "nginx", "openssl"):
        if shutil.which(prog) is None:
            pytest.skip("%s is not installed" % prog)
    base = tempfile.mkdtemp(prefix="ptyd-pool-", dir="/tmp")
    os.chmod(base, 0o755)
    dest, nd = os.path.join(base, "dest"), os.path.join(base, "nginx")
    s = {"base": base, "pool": os.path.join(base, "pool.d"),
         "log": os.path.join(base, "pool.log"), "users": {}, "master": None,
         "sock": {k: os.path.join(base, "run", k + ".sock") for k in NAMES},
         "nginx_pid": None}
    for d in (s["pool"], os.path.join(nd, "ptyd"), os.path.join(nd, "tmp"),
              os.path.join(base, "home")):
        os.makedirs(d)
        os.chmod(d, 0o755)
    try:
        # The install, as a package would make it, readable by everyone.
        with open(os.path.join(base, "install.log"), "wb") as f:
            r = subprocess.run(["make", "-C", BUILDDIR, "install",
                                "DESTDIR=" + dest], stdout=f,
                               stderr=subprocess.STDOUT, timeout=240)
        assert r.returncode == 0, "make install failed: see install.log"
        root = dest + installed_prefix()
        s["root"] = root
        for dirpath, dirs, files in os.walk(dest):
            os.chmod(dirpath, 0o755)
        share = os.path.join(root, "share", "ptyd", "nginx")
        for f in os.listdir(share):
            shutil.copy2(os.path.join(share, f), os.path.join(nd, "ptyd"))
        for k, name in NAMES.items():
            s["users"][k] = create_user(name,
                                        os.path.join(base, "home", name))
        www = grp.getgrnam("www-data").gr_gid
        with open(os.path.join(nd, "htpasswd"), "w") as f:
            for name in NAMES.values():
                f.write(htpasswd_line(name))
        os.chown(os.path.join(nd, "htpasswd"), 0, www)
        os.chmod(os.path.join(nd, "htpasswd"), 0o640)
        with open(os.path.join(nd, "accounts.map"), "w") as f:
            for k, name in NAMES.items():
                f.write("%s unix:%s;\n" % (name, s["sock"][k]))
        write_pool(s, "a")
        write_pool(s, "c")
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8",
               SECRET: "hunter2-" + os.urandom(4).hex(),
               "PTYD_STATE_DIR": "/nowhere-the-master-must-not-pass-on"}
        s["secret"] = env[SECRET]
        s["env"] = env
        start_master(s)
        s["port"] = free_port()
        nginx_conf(base, s["port"])
        r = subprocess.run(["nginx", "-p", nd + "/", "-c",
                            os.path.join(nd, "nginx.conf"), "-e",
                            os.path.join(nd, "error.log")],
                           capture_output=True, timeout=30)
        assert r.returncode == 0, r.stderr.decode(errors="replace")
        with open(os.path.join(nd, "nginx.pid")) as f:
            s["nginx_pid"] = int(f.read())
        for k in ("a", "c"):
            wait_for(lambda: serves(s, k), timeout=20,
                     what=lambda: "pool %s through nginx; log:\n%s"
                     % (k, log_text(s)[-3000:]))
        yield s
    finally:
        stop_site(s)


def start_master(s):
    """The installed ptyd-pool, in the foreground as its unit runs it."""
    with open(s["log"], "ab") as logf:
        s["master"] = subprocess.Popen(
            [os.path.join(s["root"], "sbin", "ptyd-pool"), "-d", s["pool"]],
            stdin=subprocess.DEVNULL, stdout=logf,
            stderr=subprocess.STDOUT, env=s["env"], start_new_session=True)


def stop_site(s):
    """nginx, the master (which stops every account), then whatever the
    accounts left, the accounts and the directory: each step runs even
    if one before it fails."""
    try:
        if s["nginx_pid"] is not None:
            os.kill(s["nginx_pid"], signal.SIGTERM)
            wait_for(lambda: proc_gone(s["nginx_pid"]), timeout=10,
                     what="nginx to exit")
    finally:
        try:
            m = s["master"]
            if m is not None and m.poll() is None:
                m.send_signal(signal.SIGTERM)
                try:
                    m.wait(timeout=40)
                except subprocess.TimeoutExpired:
                    os.killpg(m.pid, signal.SIGKILL)
                    m.wait(timeout=5)
        finally:
            for pw in s["users"].values():
                kill_uid(pw.pw_uid)
                subprocess.run(["userdel", pw.pw_name], capture_output=True,
                               timeout=30)
            if not os.environ.get("PTYD_TEST_KEEP"):
                shutil.rmtree(s["base"], ignore_errors=True)


def proc_status(pid):
    with open("/proc/%d/status" % pid) as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f
                    if ":\t" in line)


@pytest.mark.deadline(60)
def test_each_pool_serves_as_its_account_and_names_itself(site):
    for k in ("a", "c"):
        c = client(site, k)
        r = c.health()
        assert r.status == 200 and r.json()["pool"] == k, r
        r = c.get("metrics")
        assert r.status == 200, r
        assert 'ptyd_pool_info{pool="%s"} 1' % k in r.body.decode(), r
        sid = "who-" + k
        assert c.start(sid).status == 200
        with Shell(c, sid) as sh:
            assert sh.run("id -un") == NAMES[k].encode()
        assert c.close_term(sid).status == 200
    # The socket is made by the master as the file says.
    st = os.stat(site["sock"]["c"])
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == \
        (site["users"]["c"].pw_uid, grp.getgrnam("www-data").gr_gid, 0o660)


def account_groups(pw):
    return sorted(os.getgrouplist(pw.pw_name, pw.pw_gid))


@pytest.mark.deadline(60)
def test_no_privilege_is_left_in_any_account_process(site):
    """Each account's processes, the shells included: the account's
    uid, gid and groups and nothing else, no capability in any set
    (bounding and ambient too), no_new_privs, nothing of the master's
    environment, and no descriptor of a file, pipe or socket of root's."""
    c = client(site, "c")
    assert c.start("priv-c").status == 200
    try:
        for k in ("a", "c"):
            pw = site["users"][k]
            pids = pids_of_uid(pw.pw_uid)
            assert len(pids) >= 2, pids
            for pid in pids:
                st = proc_status(pid)
                ids = "%d\t%d\t%d\t%d" % ((pw.pw_uid,) * 4)
                assert st["Uid"] == ids, (pid, st["Uid"])
                assert st["Gid"] == ids.replace(str(pw.pw_uid),
                                                str(pw.pw_gid)), pid
                groups = sorted(int(g) for g in st["Groups"].split())
                assert groups == account_groups(pw), (pid, groups)
                for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd",
                            "CapAmb"):
                    assert int(st[cap], 16) == 0, (pid, cap, st[cap])
                assert st["NoNewPrivs"] == "1", pid
                with open("/proc/%d/environ" % pid, "rb") as f:
                    environ = f.read()
                assert SECRET.encode() not in environ, pid
                assert site["secret"].encode() not in environ, pid
                assert b"PTYD_STATE_DIR" not in environ, pid
                for fd in os.listdir("/proc/%d/fd" % pid):
                    path = "/proc/%d/fd/%s" % (pid, fd)
                    try:
                        fst, target = os.stat(path), os.readlink(path)
                    except FileNotFoundError:
                        continue
                    # Devices (/dev/null, /dev/ptmx) and the kernel's
                    # one anonymous inode (epoll, signalfd) are root's
                    # on any system.
                    if stat.S_ISCHR(fst.st_mode) or \
                            target.startswith("anon_inode:"):
                        continue
                    if fst.st_uid != 0:
                        continue
                    # A file of root's only as the account could open
                    # it itself (the keeper keeps ptyd's binary open for
                    # upgrades): read-only and readable by all.  A pipe
                    # or a socket of root's: never.
                    with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                        flags = int(re.search(r"^flags:\s*([0-7]+)",
                                              f.read(), re.M).group(1), 8)
                    assert (stat.S_ISREG(fst.st_mode) or
                            stat.S_ISDIR(fst.st_mode)) and \
                        flags & os.O_ACCMODE == os.O_RDONLY and \
                        fst.st_mode & 0o004, (pid, fd, target)
    finally:
        c.close_term("priv-c")


@pytest.mark.deadline(60)
def test_a_killed_ptyd_fcgi_is_started_again_and_the_log_says_why(site):
    before = master_children(site)
    old = before[("c", "fcgi")]
    os.kill(old, signal.SIGKILL)
    wait_for(lambda: master_children(site).get(("c", "fcgi"), old) != old,
             timeout=10, what="c's ptyd.fcgi again")
    wait_for(lambda: serves(site, "c"), timeout=10, what="c serving again")
    after = master_children(site)
    # Nothing else was touched.
    for key in (("c", "ptyd"), ("a", "fcgi"), ("a", "ptyd")):
        assert after[key] == before[key], key
    assert re.search(r"c: ptyd\.fcgi pid %d killed by signal 9 \(Killed\) "
                     r"after [0-9.]+ s; again in [0-9.]+ s" % old,
                     log_text(site)), log_text(site)[-2000:]


@pytest.mark.deadline(90)
def test_reload_adds_one_removes_one_and_leaves_the_third_alone(site):
    c = client(site, "c")
    assert c.start("keep-c").status == 200
    before = master_children(site)
    a_uid = site["users"]["a"].pw_uid
    with Shell(c, "keep-c") as sh:
        shell_pid = c.terminals()["keep-c"]["pid"]
        assert sh.run("echo before-$((6*7))") == b"before-42"
        os.unlink(os.path.join(site["pool"], "a.conf"))
        write_pool(site, "b")
        os.kill(site["master"].pid, signal.SIGHUP)
        wait_for(lambda: serves(site, "b"), timeout=20,
                 what=lambda: "pool b; log:\n" + log_text(site)[-2000:])
        wait_for(lambda: not pids_of_uid(a_uid), timeout=30,
                 what="a's processes to end")
        assert not os.path.exists(site["sock"]["a"])
        r = client(site, "a").health()
        assert r.status == 503 and "not running" in r.json()["error"], r
        after = master_children(site)
        assert after[("c", "ptyd")] == before[("c", "ptyd")]
        assert after[("c", "fcgi")] == before[("c", "fcgi")]
        # The same shell, on the same stream, answers.
        assert c.terminals()["keep-c"]["pid"] == shell_pid
        assert sh.run("echo after-$((6*7))") == b"after-42"
        assert client(site, "b").start("new-b").status == 200
        with Shell(client(site, "b"), "new-b") as shb:
            assert shb.run("id -un") == NAMES["b"].encode()
    assert c.close_term("keep-c").status == 200
    text = log_text(site)
    assert "a: removed" in text and "b: added" in text, text[-2000:]


@pytest.mark.deadline(60)
def test_a_settings_change_keeps_the_shells(site):
    """A ptyd.fcgi key restarts ptyd.fcgi alone; a ptyd key is applied by
    a live upgrade (a new ptyd under the same keeper reads the file):
    the shell, its pid and the other pool are untouched."""
    c = client(site, "c")
    assert c.start("set-c").status == 200
    shell_pid = c.terminals()["set-c"]["pid"]
    assert c.limits_caps()["max"] != 30
    before = master_children(site)
    write_pool(site, "c", "heartbeat = 4\nmax_terminals = 30\n")
    os.kill(site["master"].pid, signal.SIGHUP)
    wait_for(lambda: master_children(site).get(("c", "fcgi"))
             not in (None, before[("c", "fcgi")]), timeout=20,
             what="c's ptyd.fcgi restarted")
    wait_for(lambda: serves(site, "c") and
             client(site, "c").limits_caps()["max"] == 30, timeout=20,
             what=lambda: "c's new ptyd; log:\n" + log_text(site)[-2000:])
    after = master_children(site)
    assert after[("c", "ptyd")] == before[("c", "ptyd")]
    assert after[("b", "ptyd")] == before[("b", "ptyd")]
    assert after[("b", "fcgi")] == before[("b", "fcgi")]
    assert c.terminals()["set-c"]["pid"] == shell_pid
    with Shell(c, "set-c") as sh:
        assert sh.run("echo kept-$((6*7))") == b"kept-42"
    assert c.close_term("set-c").status == 200
    assert "c: ptyd's settings changed: upgrade" in log_text(site)


def test_ptydctl_pools_runs_a_command_in_every_account(site):
    r = subprocess.run([os.path.join(site["root"], "bin", "ptydctl"),
                        "--pools", "--pool-dir", site["pool"], "health"],
                       capture_output=True, timeout=30)
    out = r.stdout.decode()
    assert r.returncode == 0, (out, r.stderr)
    lines = out.splitlines()
    assert any(l.startswith("b: ") for l in lines), out
    assert any(l.startswith("c: ") for l in lines), out
    assert not any(l.startswith("a: ") for l in lines), out


def test_a_bad_file_is_named_by_check_mode(site):
    d = tempfile.mkdtemp(prefix="pool-check-", dir=site["base"])
    with open(os.path.join(d, "bad.conf"), "w") as f:
        f.write("user = root\nlisten = /run/x.sock\n")
    os.chmod(os.path.join(d, "bad.conf"), 0o644)
    r = subprocess.run([os.path.join(site["root"], "sbin", "ptyd-pool"),
                        "-t", "-d", d], capture_output=True, timeout=30)
    assert r.returncode == 1, r
    assert b"bad: user root" in r.stderr, r.stderr


def test_check_mode_finds_two_pools_on_one_socket(site):
    """-t reads the folder as the master would at start: the second file
    that names the first one's socket is the one refused."""
    d = tempfile.mkdtemp(prefix="pool-check-", dir=site["base"])
    sock = os.path.join(d, "one.sock")
    for name, user in (("e", NAMES["b"]), ("f", NAMES["c"])):
        with open(os.path.join(d, name + ".conf"), "w") as f:
            f.write("user = %s\nlisten = %s\n" % (user, sock))
        os.chmod(os.path.join(d, name + ".conf"), 0o644)
    r = subprocess.run([os.path.join(site["root"], "sbin", "ptyd-pool"),
                        "-t", "-d", d], capture_output=True, timeout=30)
    assert r.returncode == 1, r
    assert ("f: listen: %s is pool e's" % sock).encode() in r.stderr, \
        r.stderr
    assert b"e:" not in r.stderr, r.stderr


def test_check_mode_finds_two_pools_on_one_database(site):
    """Two files for one account, each with its own socket, would run two
    ptyds on one database (the second waits on the first's lock for
    ever): the second is refused, naming the first."""
    d = tempfile.mkdtemp(prefix="pool-check-", dir=site["base"])
    for name in ("g", "h"):
        with open(os.path.join(d, name + ".conf"), "w") as f:
            f.write("user = %s\nlisten = %s\n"
                    % (NAMES["b"], os.path.join(d, name + ".sock")))
        os.chmod(os.path.join(d, name + ".conf"), 0o644)
    r = subprocess.run([os.path.join(site["root"], "sbin", "ptyd-pool"),
                        "-t", "-d", d], capture_output=True, timeout=30)
    assert r.returncode == 1, r
    assert re.search(rb"h: db: /\S+/ptyd\.db is pool g's", r.stderr), \
        r.stderr
    assert b"g:" not in r.stderr, r.stderr


@pytest.mark.deadline(60)
def test_a_pool_naming_anothers_socket_is_not_started(site):
    """A file whose listen is another pool's would take that pool's
    socket from it at the bind: it is refused, the other left alone."""
    before = master_children(site)
    path = os.path.join(site["pool"], "d.conf")
    with open(path, "w") as f:
        f.write("user = %s\nlisten = %s\n" % (NAMES["b"], site["sock"]["c"]))
    os.chmod(path, 0o644)
    try:
        os.kill(site["master"].pid, signal.SIGHUP)
        wait_for(lambda: "d: listen: %s is pool c's; not started"
                 % site["sock"]["c"] in log_text(site), timeout=10,
                 what="the refusal in the log")
        assert master_children(site) == before
        assert serves(site, "c")
    finally:
        os.unlink(path)
        os.kill(site["master"].pid, signal.SIGHUP)


def keepers_of(uid):
    """The pids of uid's ptyd-keeper processes."""
    out = []
    for pid in pids_of_uid(uid):
        try:
            exe = os.readlink("/proc/%d/exe" % pid)
        except (FileNotFoundError, PermissionError):
            continue
        if os.path.basename(exe).startswith("ptyd-keeper"):
            out.append(pid)
    return out


@pytest.mark.deadline(90)
def test_a_killed_master_keeps_every_shell_and_the_next_adopts_them(site):
    """The master's death (kill -9, a crash, a restart) ended every
    account's keeper (PR_SET_PDEATHSIG), so every shell.  Now the keeper
    outlives it, and the next master adopts it (its pid file, uid, image
    and lock checked) instead of starting a second ptyd that would fail
    on the lock for ever; the same shell answers through nginx, and the
    adopted keeper's end is seen and it is started again."""
    c = client(site, "c")
    assert c.start("adopt-c").status == 200
    uid = site["users"]["c"].pw_uid
    shell_pid = c.terminals()["adopt-c"]["pid"]
    keeper = master_children(site)[("c", "ptyd")]
    assert keepers_of(uid) == [keeper]
    old = site["master"]
    old.send_signal(signal.SIGKILL)
    old.wait(timeout=10)
    # ptyd.fcgi goes with the master; the keeper and the shell stay.
    wait_for(lambda: client(site, "c").health().status in (502, 503, 504),
             timeout=10, what="c's ptyd.fcgi to go with the master")
    assert not proc_gone(keeper) and not proc_gone(shell_pid)
    start_master(site)
    wait_for(lambda: serves(site, "c"), timeout=20,
             what=lambda: "c again; log:\n" + log_text(site)[-2000:])
    assert "c: ptyd-keeper pid %d still runs: adopted" % keeper \
        in log_text(site), log_text(site)[-2000:]
    assert keepers_of(uid) == [keeper]
    c = client(site, "c")
    assert c.terminals()["adopt-c"]["pid"] == shell_pid
    with Shell(c, "adopt-c") as sh:
        assert sh.run("echo adopted-$((6*7))") == b"adopted-42"
    # No second keeper came later either (one failing on the lock).
    time.sleep(1)
    assert keepers_of(uid) == [keeper]
    assert "keeper: another" not in log_text(site)
    # The adopted keeper's end is seen (its pidfd) and it starts again.
    os.kill(keeper, signal.SIGKILL)
    wait_for(lambda: re.search(r"c: ptyd pid %d ended \(adopted" % keeper,
                               log_text(site)), timeout=10,
             what=lambda: "the end in the log:\n" + log_text(site)[-2000:])
    wait_for(lambda: serves(site, "c") and
             len(client(site, "c").terminals()) == 0, timeout=20,
             what="c's new keeper")
    assert len(keepers_of(uid)) == 1 and keepers_of(uid) != [keeper]


@pytest.mark.deadline(90)
def test_sigusr2_runs_the_master_again_keeping_every_process(site):
    """An upgrade of ptyd-pool itself: SIGUSR2 runs its binary again in
    the same process, which takes over every child (keepers and
    ptyd.fcgi, their pipes, the sockets) from the image before: same
    master pid, same processes, the same shell answers."""
    c = client(site, "c")
    assert c.start("usr2-c").status == 200
    shell_pid = c.terminals()["usr2-c"]["pid"]
    before = master_children(site)
    master = site["master"].pid
    mark = len(log_text(site))
    os.kill(master, signal.SIGUSR2)
    wait_for(lambda: "c: ptyd.fcgi pid %d taken over" % before[("c", "fcgi")]
             in log_text(site)[mark:], timeout=10,
             what=lambda: "the take-over; log:\n" + log_text(site)[-2000:])
    assert site["master"].poll() is None and site["master"].pid == master
    assert master_children(site) == before
    assert serves(site, "c")
    with Shell(c, "usr2-c") as sh:
        assert sh.run("echo usr2-$((6*7))") == b"usr2-42"
    assert c.terminals()["usr2-c"]["pid"] == shell_pid
    # The pipes came along: a child's line still reaches the log.
    os.kill(before[("c", "fcgi")], signal.SIGKILL)
    wait_for(lambda: "c: ptyd.fcgi pid %d killed by signal 9"
             % before[("c", "fcgi")] in log_text(site), timeout=10,
             what=lambda: "the reap; log:\n" + log_text(site)[-2000:])
    wait_for(lambda: serves(site, "c"), timeout=20, what="c again")
    assert c.close_term("usr2-c").status == 200
