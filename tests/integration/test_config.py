"""test_config.py -- the settings of ptyd, ptyd.fcgi and ptydctl (lib/config.c)
with the real binaries: --version, --help and a wrong option in all three;
--print-config and each value's origin; one ptyd.conf read by all three; a
bad file refusing to start; the same socket from a login shell's
environment and a web server's; and autostart with a config file, twice
(the second time after kill -9), giving ptyd the same settings.

No nginx here: ptyd.fcgi runs as plain CGI, as a web server without
FastCGI would run it.  Everything lives in pytest's tmp_path.
"""

import json
import os
import re
import signal
import subprocess

import pytest

from ptyd_stack import (BUILDDIR, REPO, proc_cmdline, proc_ppid, proc_state,
                        wait_for)

PTYD = os.path.join(BUILDDIR, "ptyd", "ptyd")
FCGI = os.path.join(BUILDDIR, "fcgi", "ptyd.fcgi")
CTL = os.path.join(BUILDDIR, "ptydctl", "ptydctl")
PROGRAMS = [("ptyd", PTYD), ("ptyd.fcgi", FCGI), ("ptydctl", CTL)]


def version():
    with open(os.path.join(REPO, "configure.ac")) as f:
        m = re.search(r"AC_INIT\(\[ptyd\],\s*\[([^\]]+)\]", f.read())
    return m.group(1)


def clean_env(**more):
    """An environment without any PTYD_* setting of the caller's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PTYD_")}
    env.update(more)
    return env


def run(argv, env=None, timeout=20):
    return subprocess.run(argv, env=env or clean_env(), capture_output=True,
                          stdin=subprocess.DEVNULL, timeout=timeout)


def settings(out):
    """--print-config's lines as {key: [(value, origin), ...]}."""
    got = {}
    for ln in out.decode().splitlines():
        m = re.fullmatch(r'(\w+) = ("(?:[^"\\]|\\.)*"|\S+)  # (.+)', ln)
        assert m, "not a setting line: %r" % ln
        value = m.group(2)
        if value.startswith('"'):
            value = re.sub(r'\\(.)', r'\1', value[1:-1])
        got.setdefault(m.group(1), []).append((value, m.group(3)))
    return got


def write_conf(path, text):
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("name,prog", PROGRAMS)
def test_version_help_and_a_wrong_option(name, prog):
    r = run([prog, "--version"])
    assert (r.returncode, r.stdout.decode(), r.stderr) == \
        (0, "%s %s\n" % (name, version()), b"")
    r = run([prog, "--help"])
    assert r.returncode == 0 and r.stderr == b""
    out = r.stdout.decode()
    assert out.startswith("usage: ") and "--print-config" in out and \
        "--config FILE" in out and "--socket PATH" in out, out
    r = run([prog, "--no-such-option"])
    assert r.returncode == 2 and r.stdout == b""
    assert b"usage: " in r.stderr


def test_the_old_option_names_still_parse():
    r = run([FCGI, "--ptyd-socket", "/x/p.sock", "--no-autostart",
             "--heartbeat", "2.5", "--print-config"])
    assert r.returncode == 0, r.stderr
    s = settings(r.stdout)
    assert s["socket"] == [("/x/p.sock", "command line")]
    assert s["autostart"] == [("no", "command line")]
    assert s["heartbeat"] == [("2.5", "command line")]
    r = run([PTYD, "-f", "-v", "--print-config"])
    assert r.returncode == 0, r.stderr
    s = settings(r.stdout)
    assert s["log_level"] == [("debug", "command line")]
    assert s["log"] == [("-", "default")], "foreground: stderr"


def test_print_config_shows_each_value_and_where_it_came_from(tmp_path):
    conf = write_conf(tmp_path / "ptyd.conf",
                      "# settings\n"
                      "idle_grace = 42\n"
                      "\n"
                      "state_dir = %s/st\n"
                      "max_terminals = 9\n"
                      "shell_arg = -l\n"
                      "shell_arg = \"two words\"\n" % tmp_path)
    env = clean_env(PTYD_MAX_TERMINALS="7", PTYD_LINGER="1.5")
    r = run([PTYD, "--config", conf, "--reap-interval", "5",
             "--max-terminals", "8", "--print-config"], env=env)
    assert r.returncode == 0, r.stderr
    s = settings(r.stdout)
    assert s["idle_grace"] == [("42", conf + ":2")]
    assert s["max_terminals"] == [("8", "command line")]
    assert s["linger"] == [("1.5", "env PTYD_LINGER")]
    assert s["reap_interval"] == [("5", "command line")]
    assert s["stall_timeout"] == [("10", "default")]
    assert s["shell_arg"] == [("-l", conf + ":6"),
                              ("two words", conf + ":7")]
    st = str(tmp_path / "st")
    assert s["state_dir"] == [(st, conf + ":4")]
    for key, name in (("db", "ptyd.db"), ("socket", "ptyd.sock"),
                      ("log", "ptyd.log"), ("pidfile", "ptyd.pid")):
        assert s[key] == [(os.path.join(st, name), "default")], key
    assert "allow_remote" not in s, "only ptyd's keys"
    # The same file read by the other two: their keys, the same paths.
    for prog in (FCGI, CTL):
        r = run([prog, "--print-config"], env=clean_env(PTYD_CONFIG=conf))
        assert r.returncode == 0, r.stderr
        o = settings(r.stdout)
        assert o["socket"] == [(os.path.join(st, "ptyd.sock"), "default")]
        assert "idle_grace" not in o


@pytest.mark.parametrize("name,prog", PROGRAMS)
def test_an_unknown_key_or_bad_value_refuses_to_start(tmp_path, name, prog):
    conf = write_conf(tmp_path / "ptyd.conf",
                      "max_terminals = 3\nmax_terminls = 4\n")
    r = run([prog, "--config", conf, "--print-config"])
    assert r.returncode == 1 and r.stdout == b""
    assert ("%s:2: unknown key 'max_terminls'" % conf).encode() in \
        r.stderr, r.stderr
    r = run([prog, "--config", str(tmp_path / "absent.conf")])
    assert r.returncode == 1 and b"absent.conf" in r.stderr
    r = run([prog, "--print-config"], env=clean_env(
        PTYD_STATE_DIR="/" + "d" * 120))
    assert r.returncode == 1 and b"socket: " in r.stderr, r.stderr


def test_a_login_shell_and_a_web_server_find_the_same_socket(tmp_path):
    login = clean_env(XDG_RUNTIME_DIR="/a", HOME=os.path.expanduser("~"),
                      XDG_STATE_HOME="/a/state")
    web = {k: v for k, v in clean_env(HOME=str(tmp_path)).items()
           if not k.startswith("XDG_")}
    found = set()
    for prog in (PTYD, FCGI, CTL):
        for env in (login, web):
            r = run([prog, "--print-config"], env=env)
            assert r.returncode == 0, r.stderr
            s = settings(r.stdout)
            found.add((s["socket"][0][0], s["db"][0][0]))
    assert len(found) == 1, found
    sock, db = found.pop()
    assert not sock.startswith("/a/") and str(tmp_path) not in sock
    assert os.path.dirname(sock) == os.path.dirname(db)


def ctl(conf, *args):
    return run([CTL, "--config", conf] + list(args))


def terminals(conf):
    r = ctl(conf, "list", "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["terminals"]


def held_to_the_cap(conf, prefix):
    """Start three terminals under max_terminals = 2: the least recently
    active one makes room (DESIGN 4), so two are left (with the default
    cap of 32, three).  Their session ids, and the two the rule keeps:
    the third and whichever of the first two spoke last."""
    for i in (1, 2):
        r = ctl(conf, "start", "%s-%d" % (prefix, i))
        assert r.returncode == 0, r.stderr
    # Both shells' prompts out, so no output moves the order after this.
    wait_for(lambda: all(t["last_activity"] > t["started_at"]
                         for t in terminals(conf)), 10, what="the prompts")
    keep = max(terminals(conf), key=lambda t: t["last_activity"])
    r = ctl(conf, "start", "%s-3" % prefix)
    assert r.returncode == 0, r.stderr
    return (sorted(t["session_id"] for t in terminals(conf)),
            sorted([keep["session_id"], "%s-3" % prefix]))


def test_one_file_sets_up_ptyd_and_ptydctl_finds_it(tmp_path):
    """ptyd started with nothing but the file; ptydctl told nothing but
    the file finds its socket, and the cap in the file holds."""
    conf = write_conf(tmp_path / "ptyd.conf",
                      "state_dir = %s/st\nmax_terminals = 2\n"
                      "shell = /bin/sh\n" % tmp_path)
    p = subprocess.Popen([PTYD, "-f", "--config", conf],
                         env=clean_env(), stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: ctl(conf, "stats").returncode == 0, 10,
                 what="ptyd answering ptydctl")
        # The pid started is the keeper's (DESIGN 10), ptyd its child.
        assert re.search(rb"^keeper_pid\s+%d$" % p.pid,
                         ctl(conf, "stats").stdout,
                         re.M)
        held, kept = held_to_the_cap(conf, "cf")
        assert held == kept
    finally:
        p.terminate()
        p.wait(timeout=15)


def cgi_health(conf_args, env):
    """One CGI request to ptyd.fcgi (GET health); ptyd's pid."""
    env = dict(env, REQUEST_METHOD="GET", DOCUMENT_URI="/api/terminal/health",
               REMOTE_ADDR="127.0.0.1", HTTP_HOST="127.0.0.1:8080",
               SERVER_PORT="8080", REQUEST_SCHEME="http")
    r = run([FCGI] + conf_args, env=env, timeout=30)
    assert r.returncode == 0, r.stderr
    head, _, body = r.stdout.decode().partition("\r\n\r\n")
    assert "Status: 200" in head or not head.startswith("Status:"), \
        r.stdout
    m = re.search(r'"pid": (\d+)', body)
    assert m, r.stdout
    return int(m.group(1))


@pytest.mark.parametrize("how", ["env", "option"])
def test_autostart_passes_the_settings_and_a_replacement_gets_them(
        tmp_path, how):
    st = tmp_path / "st"
    conf = write_conf(tmp_path / "ptyd.conf",
                      "state_dir = %s\nidle_grace = 77\nmax_terminals = 2\n"
                      "shell = /bin/sh\nlocal = address\n" % st)
    # A web server's environment: its own HOME, no XDG_RUNTIME_DIR.
    env = {k: v for k, v in clean_env(HOME=str(tmp_path)).items()
           if not k.startswith("XDG_")}
    env["PTYD_PTYD"] = PTYD
    if how == "env":
        env["PTYD_CONFIG"] = conf
        args = []
    else:
        args = ["--config", conf]
    mask = os.umask(0o022)
    os.umask(mask)
    # ... and the umask ptyd.fcgi was started with, for the shells.
    want = ["ptyd", "--config", conf, "--state-dir", str(st), "--db",
            str(st / "ptyd.db"), "--umask", "%04o" % mask,
            "--socket", str(st / "ptyd.sock")]
    pids, keepers = [], []
    try:
        for round in range(2):
            pid = cgi_health(args, env)
            pids.append(pid)
            # Its keeper, known before any assertion, so that a failure
            # below leaves no keeper behind (the finally kills it).
            kp = proc_ppid(pid)
            if (proc_cmdline(kp) or [""])[0] == "ptyd-keeper":
                keepers.append(kp)
            assert proc_cmdline(pid) == want
            # The same command line, asked what it runs with.
            r = run([PTYD] + want[1:] + ["--print-config"], env=env)
            s = settings(r.stdout)
            assert s["idle_grace"] == [("77", conf + ":2")]
            assert s["max_terminals"] == [("2", conf + ":3")]
            # And the running one holds to it.
            assert re.match(rb"pid\s+%d\n" % pid, ctl(conf, "stats").stdout)
            held, kept = held_to_the_cap(conf, "as%d" % round)
            assert held == kept
            # Gone for good, keeper first (it would start another: DESIGN
            # 10), so that the next request's autostart replaces it.
            if kp in keepers:
                os.kill(kp, signal.SIGKILL)
            os.kill(pid, signal.SIGKILL)
            wait_for(lambda: proc_state(pid) in (None, "Z"), 10,
                     what="ptyd gone")
        assert pids[0] != pids[1]
    finally:
        for pid in keepers + pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
