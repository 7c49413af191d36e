"""test_front_spawn_fcgi.py -- ptyd.fcgi started by spawn-fcgi under a
process supervisor (runit's runsv, with the shipped spawn-fcgi/run), as
the test's Unix account, nginx in front with nginx/ptyd-location.conf
(issue 14): the walk through the API (front_servers.exercise), and the
supervisor starting ptyd.fcgi again after it is killed, the terminal
living on in ptyd.
"""

import os
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
