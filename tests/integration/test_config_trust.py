"""test_config_trust.py -- what settings, the lock and CGI mode must not
trust (lib/config.c, ptyd/lock.c, fcgi/main.c; regression tests from
their review).

1. CGI: a query without '=' becomes the program's argv under Apache's
   mod_cgi (RFC 3875 4.4, Apache's default_build_command): every setting
   is an option now, so such a query must not change the gate.
2. A ptyd.conf that others may write (it names the shell and the ptyd that
   autostart runs) is not taken without a word.
3. A lock file that cannot be opened (a symlink at <db>.lock) must not let
   two ptyds share one database.

No nginx: ptyd.fcgi runs as plain CGI, ptyd daemonized, all in a temp dir.
"""

import json
import os
import subprocess

import pytest

from test_config import CTL, FCGI, PTYD, clean_env, run, write_conf
from test_daemon_life import daemon  # noqa: F401 (fixture)


def cgi(argv_words, query, tmp_path):
    """One CGI GET of health from a remote client, as Apache's mod_cgi runs
    a script: the query's words (no '=') also on the command line."""
    env = {"PATH": "/usr/bin:/bin", "GATEWAY_INTERFACE": "CGI/1.1",
           "REQUEST_METHOD": "GET", "SCRIPT_NAME": "/cgi-bin/ptyd.fcgi",
           "PATH_INFO": "/api/terminal/health", "QUERY_STRING": query,
           "REMOTE_ADDR": "203.0.113.9", "REMOTE_PORT": "40000",
           "SERVER_ADDR": "198.51.100.1", "SERVER_PORT": "80",
           "HTTP_HOST": "evil.example", "REQUEST_SCHEME": "http",
           "HOME": str(tmp_path),
           "PTYD_STATE_DIR": str(tmp_path / "st"), "PTYD_AUTOSTART": "no"}
    r = subprocess.run([FCGI] + argv_words, env=env, capture_output=True,
                       stdin=subprocess.DEVNULL, timeout=20)
    head = r.stdout.decode(errors="replace").partition("\r\n\r\n")[0]
    status = None
    for ln in head.split("\r\n"):
        if ln.startswith("Status:"):
            status = int(ln.split()[1])
    return r.returncode, status, r


@pytest.mark.deadline(30)
def test_cgi_query_words_on_the_command_line_do_not_open_the_gate(tmp_path):
    # Without the words: a remote client is refused.
    rc, status, r = cgi([], "", tmp_path)
    assert (rc, status) == (0, 403), r.stdout
    # GET /cgi-bin/ptyd.fcgi/api/terminal/health?--allow-remote+yes+
    # --allowed-hosts+evil.example -- Apache splits the query on '+' into
    # argv.  The gate must hold: refused (403), or the request refused
    # outright (400), never let through (ptyd down here: 503).
    words = ["--allow-remote", "yes", "--allowed-hosts", "evil.example"]
    rc, status, r = cgi(words, "+".join(words), tmp_path)
    assert status in (400, 403), \
        "the query's words reached the gate's settings: %r" % r.stdout


@pytest.mark.deadline(30)
def test_a_config_file_others_can_write_is_not_taken_silently(tmp_path):
    conf = write_conf(tmp_path / "ptyd.conf",
                      "state_dir = %s\nshell = /bin/sh\n" % (tmp_path / "st"))
    os.chmod(conf, 0o666)
    for prog in (PTYD, FCGI, CTL):
        r = run([prog, "--config", conf, "--print-config"],
                env=clean_env(HOME=str(tmp_path)))
        err = r.stderr.decode()
        # Refused, or at least a word on stderr naming the file.
        assert r.returncode != 0 or conf in err, \
            "%s took a world-writable %s without a word" % (prog, conf)


@pytest.mark.deadline(60)
def test_a_symlink_at_the_lock_does_not_let_two_ptyds_share_a_database(
        daemon):  # noqa: F811
    d = daemon
    os.makedirs(d.state, mode=0o700, exist_ok=True)
    os.symlink(os.path.join(d.root, "elsewhere"), d.lock)
    codes = []
    for name in ("a", "b"):
        sock = d.sock(name)
        pidfile = os.path.join(d.root, name + ".pid")
        r = d.run("--socket", sock, "--pidfile", pidfile)
        codes.append(r.returncode)
        if r.returncode == 0:
            d.daemon_pid(pidfile)
    assert codes != [0, 0], \
        "two ptyds run on %s (the lock could not be opened)" % d.db


@pytest.mark.deadline(30)
def test_ptyd_takes_every_descriptor_its_hard_limit_allows(daemon):  # noqa
    """Regression: an autostarted ptyd inherited the 1024-descriptor soft
    limit ptyd.fcgi's workers keep for libfcgi's select(); 32 terminals
    with 32 viewers each are past it."""
    import resource
    d = daemon
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard <= 1024:
        pytest.skip("hard limit %d: nothing to raise to" % hard)
    pidfile = os.path.join(d.root, "nofile.pid")
    r = subprocess.run(
        ["prlimit", "--nofile=1024:%d" % hard, "--", PTYD, "--shell",
         "/bin/sh", "--socket", d.sock("nofile"), "--pidfile", pidfile],
        env=d.env(), capture_output=True, stdin=subprocess.DEVNULL,
        timeout=20)
    assert r.returncode == 0, r.stderr
    pid = d.daemon_pid(pidfile)
    with open("/proc/%d/limits" % pid) as f:
        line = [ln for ln in f if ln.startswith("Max open files")][0]
    assert line.split()[3] == str(hard), line


@pytest.mark.deadline(30)
def test_cgi_with_settings_that_do_not_load_answers_the_apis_json(tmp_path):
    """Regression: a CGI run whose settings did not load printed nothing,
    so the web server answered its own HTML 500.  The API's JSON 500
    says where to look; the reason (with its path) stays in the log."""
    conf = write_conf(tmp_path / "ptyd.conf", "no_such_key = 1\n")
    env = {"PATH": "/usr/bin:/bin", "GATEWAY_INTERFACE": "CGI/1.1",
           "REQUEST_METHOD": "GET", "PATH_INFO": "/api/terminal/health",
           "QUERY_STRING": "", "PTYD_CONFIG": conf, "HOME": str(tmp_path)}
    r = subprocess.run([FCGI], env=env, capture_output=True,
                       stdin=subprocess.DEVNULL, timeout=20)
    head, _, body = r.stdout.decode().partition("\r\n\r\n")
    assert head.startswith("Status: 500"), r.stdout
    assert "application/json" in head
    assert "error" in json.loads(body)
    assert conf not in body, "a server path in the answer"
    assert b"no_such_key" in r.stderr
