"""test_front_spawn_fcgi.py -- ptyd.fcgi started by spawn-fcgi under a
process supervisor (runit's runsv, with the shipped spawn-fcgi/run), as
the test's Unix account, nginx in front with nginx/ptyd-location.conf
(issue 14): the walk through the API (front_servers.exercise), and the
supervisor starting ptyd.fcgi again after it is killed, the terminal
living on in ptyd.
"""

import os
import pwd
import secrets
import subprocess

import pytest

import front_servers as fs
from ptyd_http import Client
from ptyd_stack import REPO, wait_for

ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}


@pytest.fixture(scope="module")
def supervised():
    """(account, nginx, service dir, socket): runsv on a service dir made
    of the shipped run script and ./env files, nginx in front."""
    fs.need("spawn-fcgi", "spawn-fcgi")
    runsv = fs.need("runsv", "runit")
    fs.need("nginx", "nginx-light")
    acct = fs.Account()
    srv = ngx = None
    try:
        sv = acct.mkdir("sv", owner=False)
        fs.subst(os.path.join(REPO, "spawn-fcgi", "run.in"),
                 os.path.join(sv, "run"), bindir=acct.bin)
        os.makedirs(os.path.join(sv, "env"))
        sock = os.path.join(acct.dir, "run", "fcgi.sock")
        for k, v in (("ACCOUNT", acct.name), ("SOCKET", sock),
                     ("WEB_GROUP", acct.name)):
            with open(os.path.join(sv, "env", k), "w") as f:
                f.write(v + "\n")
        srv = fs.Server("runsv", [runsv, sv],
                        os.path.join(acct.dir, "runsv.log"), env=ENV).start()
        wait_for(lambda: os.path.exists(sock), timeout=10,
                 what=lambda: "spawn-fcgi's socket; log:\n" + srv.tail())
        ngx = fs.nginx_server(
            acct.mkdir("nginx", owner=False),
            "        include ptyd/ptyd-location.conf;",
            "    upstream ptyd_fcgi { server unix:%s; }\n"
            "    upstream ptyd_fcgi_kept { server unix:%s; keepalive 16; }"
            % (sock, sock)).start()
        yield acct, ngx, sv, sock
    finally:
        if ngx is not None:
            ngx.stop()
        if srv is not None:
            subprocess.run(["sv", "-w", "10", "down", sv], env=ENV,
                           capture_output=True, timeout=30)
            srv.stop()
        acct.cleanup()


def supervised_pid(sv):
    with open(os.path.join(sv, "supervise", "pid")) as f:
        s = f.read().strip()
    return int(s) if s else None


def test_walk(supervised):
    acct, ngx, sv, sock = supervised
    pid = supervised_pid(sv)
    # What runs under the supervisor is ptyd.fcgi itself, as the account.
    with open("/proc/%d/comm" % pid) as f:
        assert f.read().strip() == "ptyd.fcgi"
    assert os.stat("/proc/%d" % pid).st_uid == acct.uid
    fig = fs.exercise(ngx.port, "spawn-fcgi-runit")
    assert fs.forged_server_port(ngx.port) == 403
    assert fig["echo_p50_ms"] < 250, fig


def test_supervisor_restarts(supervised):
    """ptyd.fcgi killed: runsv starts it again on the same socket, and
    the terminal (in ptyd) is still there."""
    acct, ngx, sv, sock = supervised
    c = Client(ngx.port)
    assert c.start("kept").status == 200
    old = supervised_pid(sv)
    os.kill(old, 9)
    wait_for(lambda: supervised_pid(sv) not in (None, old), timeout=10,
             what="runsv to start ptyd.fcgi again")
    wait_for(lambda: c.list().status == 200, timeout=10,
             what="the API back")
    t = c.terminals()["kept"]
    assert t["running"] is True, t
    assert c.close_term("kept").json()["closed"] is True


# -- the run script itself, with a stand-in for spawn-fcgi --------------------

STUB = """#!/bin/sh
{ echo "umask=$(umask)"; env; } > "%s"
"""


@pytest.fixture(scope="module")
def acct_only():
    a = fs.Account()
    yield a
    a.cleanup()


def run_script(acct, sock, env=None, umask=0o077):
    """The shipped run script, as runsv runs it (root, the supervisor's
    environment), with spawn-fcgi replaced by a script that records the
    environment and umask it was given.  (exit status, stderr, what the
    stand-in recorded or None)."""
    d = acct.mkdir("runscript-%s" % secrets.token_hex(3), owner=False)
    run = fs.subst(os.path.join(REPO, "spawn-fcgi", "run.in"),
                   os.path.join(d, "run"), bindir=acct.bin)
    out = os.path.join(d, "stub.out")
    stub = os.path.join(d, "spawn-fcgi")
    with open(stub, "w") as f:
        f.write(STUB % out)
    os.chmod(stub, 0o755)
    e = dict(ENV, ACCOUNT=acct.name, SOCKET=sock, WEB_GROUP=acct.name,
             SPAWN_FCGI=stub, **(env or {}))
    r = subprocess.run([run], cwd=d, env=e, capture_output=True, timeout=30,
                       preexec_fn=lambda: os.umask(umask))
    got = None
    if os.path.exists(out):
        with open(out) as f:
            got = f.read()
    return r.returncode, r.stdout.decode() + r.stderr.decode(), got


def test_run_refuses_a_directory_everyone_may_write(acct_only):
    """SOCKET in /tmp-like directory: refused, and the directory is not
    handed to the account (it was chowned to it and made 0750)."""
    d = acct_only.mkdir("shared-%s" % secrets.token_hex(3), owner=False)
    os.chmod(d, 0o1777)
    rc, err, got = run_script(acct_only, os.path.join(d, "fcgi.sock"))
    st = os.stat(d)
    assert (st.st_uid, st.st_mode & 0o7777) == (0, 0o1777), \
        (st.st_uid, oct(st.st_mode), err)
    assert rc == 1 and got is None, (rc, err)
    assert "others may write to it" in err, err


@pytest.mark.parametrize("owner,mode", [("other", 0o755), ("root", 0o775)])
def test_run_refuses_a_directory_another_may_write(acct_only, owner, mode):
    """A directory another account owns (it could take the socket away
    and put its own in the web server's way), or one a group may write
    to: refused, and left as it is."""
    d = acct_only.mkdir("foreign-%s" % secrets.token_hex(3), owner=False)
    uid = pwd.getpwnam("nobody").pw_uid if owner == "other" else 0
    os.chown(d, uid, 0)
    os.chmod(d, mode)
    rc, err, got = run_script(acct_only, os.path.join(d, "fcgi.sock"))
    st = os.stat(d)
    assert (st.st_uid, st.st_mode & 0o7777) == (uid, mode), (st, err)
    assert rc == 1 and got is None, (rc, err)
    assert "give SOCKET a directory of its own" in err, err


def test_run_leaves_an_existing_directory_alone(acct_only):
    """A directory that exists (the account's home, say) keeps its owner,
    group and mode: the script changes only a directory it made."""
    d = acct_only.mkdir("existing-%s" % secrets.token_hex(3), owner=False)
    rc, err, got = run_script(acct_only, os.path.join(d, "fcgi.sock"))
    st = os.stat(d)
    assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (0, 0, 0o755), \
        (st.st_uid, st.st_gid, oct(st.st_mode), err)
    assert rc == 0 and got is not None, (rc, err)


def test_run_makes_its_directory_for_the_account(acct_only):
    d = os.path.join(acct_only.dir, "made-%s" % secrets.token_hex(3), "run")
    rc, err, got = run_script(acct_only, os.path.join(d, "fcgi.sock"))
    assert rc == 0 and got is not None, (rc, err)
    st = os.stat(d)
    assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == \
        (acct_only.uid, acct_only.gid, 0o750), (st, err)


def test_run_refuses_a_relative_socket(acct_only):
    rc, err, got = run_script(acct_only, "fcgi.sock")
    assert rc == 1 and got is None, (rc, err)
    assert "absolute" in err, err


def test_run_starts_from_a_clean_environment(acct_only):
    """What runsv was given (root's PATH, anything else) does not reach
    ptyd.fcgi and so the shells; the umask is 022 whatever the
    supervisor's; the locale passes."""
    d = os.path.join(acct_only.dir, "env-%s" % secrets.token_hex(3))
    rc, err, got = run_script(
        acct_only, os.path.join(d, "fcgi.sock"),
        env={"SUPERVISOR_SECRET": "s3cret", "TZ": "UTC"}, umask=0o077)
    assert rc == 0 and got is not None, (rc, err)
    lines = got.splitlines()
    assert "umask=0022" in lines, got
    env = dict(l.split("=", 1) for l in lines[1:] if "=" in l)
    env.pop("PWD", None)
    env.pop("SHLVL", None)
    env.pop("_", None)
    assert env == {"PATH": "/usr/local/bin:/usr/bin:/bin",
                   "LANG": "C.UTF-8", "TZ": "UTC"}, env


def test_socket_group_not_the_accounts_says_so(acct_only):
    """ptyd.fcgi --listen --socket-group www-data run as an account not in
    www-data (docs/deploy.md's own line): it cannot give the socket to that
    group.  It exits 1 saying why and what to do, and leaves no socket."""
    d = acct_only.mkdir("sockgrp-%s" % secrets.token_hex(3))
    sock = os.path.join(d, "fcgi.sock")
    r = subprocess.run(
        [fs.need("setpriv", "util-linux"), "--reuid=%d" % acct_only.uid,
         "--regid=%d" % acct_only.gid, "--init-groups", acct_only.fcgi,
         "--listen", sock, "--socket-group", "www-data",
         "--socket-mode", "0660", "--no-autostart"],
        env=ENV, capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    err = r.stderr.decode()
    assert r.returncode == 1, (r.returncode, err)
    assert "--socket-group www-data: this account is not in that group" \
        in err, err
    assert not os.path.exists(sock)
