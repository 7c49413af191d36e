"""test_observe.py -- issue 13 "Observe" on a real stack: health that
says degraded (503, Retry-After) while the database refuses writes and ok
again after; /metrics in Prometheus text format 0.0.4, parsed; the audit
log's triggers, one input event per request, ptydctl prune; ptydctl's
--json; the upgrade of a schema-2 database in place.

Each test runs on this module's own stack: the database is locked and
rewritten here, which the shared stack must never see.
"""

import json
import math
import os
import re
import subprocess
import time

import pytest

from ptyd_stack import BUILDDIR, wait_for

PTYDCTL = os.path.join(BUILDDIR, "ptydctl", "ptydctl")

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_prometheus(text):
    """A small parser of text format 0.0.4: {family: {"type", "help",
    "samples": [(name, labels dict, value)]}}.  Asserts the format's rules
    this needs: HELP and TYPE before a family's samples, each once, and
    every sample belonging to a declared family."""
    fams = {}
    for line in text.splitlines():
        if not line:
            continue
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            kind, name, rest = line[2:6], *line[7:].split(" ", 1)
            f = fams.setdefault(name, {"samples": []})
            key = "help" if kind == "HELP" else "type"
            assert key not in f, "second %s for %s" % (kind, name)
            assert not f["samples"], "%s after samples: %s" % (kind, name)
            f[key] = rest
            continue
        assert not line.startswith("#"), line
        m = SAMPLE.match(line)
        assert m, "not a sample line: %r" % line
        name, labels, value = m.group(1), m.group(3) or "", m.group(4)
        fam = name
        for sfx in ("_bucket", "_sum", "_count"):
            if name.endswith(sfx) and name[:-len(sfx)] in fams and \
                    fams[name[:-len(sfx)]].get("type") == "histogram":
                fam = name[:-len(sfx)]
        assert fam in fams, "sample of an undeclared family: %r" % line
        assert "type" in fams[fam] and "help" in fams[fam], fam
        fams[fam]["samples"].append(
            (name, dict(LABEL.findall(labels)), float(value)))
    for name, f in fams.items():
        assert f.get("type") in ("counter", "gauge", "histogram"), name
        if f["type"] == "counter":
            assert name.endswith("_total"), name
    return fams


def value(fams, name, **labels):
    """The one sample of name with these labels (and maybe others)."""
    fam = fams.get(name) or fams[re.sub(r"_(bucket|sum|count)$", "", name)]
    got = [v for n, lb, v in fam["samples"] if n == name and
           all(lb.get(k) == w for k, w in labels.items())]
    assert len(got) == 1, (name, labels, got)
    return got[0]


def requests_of(fams, endpoint):
    return sum(v for n, lb, v in fams["ptyd_fcgi_requests_total"]["samples"]
               if lb["endpoint"] == endpoint)


def scrape(st):
    r = st.client().get("metrics")
    assert r.status == 200, r
    assert r.header("Content-Type") == "text/plain; version=0.0.4", r
    return parse_prometheus(r.body.decode())


def ctl(st, *args, check=True):
    r = subprocess.run([PTYDCTL, "--socket",
                        os.path.join(st.state, "run", "ptyd.sock")]
                       + list(args), capture_output=True, timeout=30)
    if check:
        assert r.returncode == 0, r
    return r


def sqlite(db, sql):
    return subprocess.run(["sqlite3", "-batch", db, sql],
                          capture_output=True, timeout=30)


@pytest.fixture(scope="module")
def ost(make_stack):
    return make_stack("observe")


# -- health and metrics while the database fails ----------------------------

@pytest.mark.deadline(60)
def test_locked_database_makes_health_degraded_and_metrics_count_it(
        ost, new_sid):
    c = ost.client()
    sid = new_sid()
    assert c.start(sid).status == 200
    h = c.health()
    assert h.status == 200 and h.json()["status"] == "ok", h
    assert h.json()["db_failing"] is False
    aud = subprocess.Popen(["sqlite3", "-batch", ost.db_path],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
    try:
        aud.stdin.write(b"BEGIN EXCLUSIVE;\nSELECT 'lock-held';\n")
        aud.stdin.flush()
        assert aud.stdout.readline().strip() == b"lock-held"
        assert c.input(sid, "true\r").status == 200   # a change to write
        h = wait_for(lambda: (lambda r: r if r.status == 503 else None)(
            c.health()), 10, what="health degraded")
        j = h.json()
        assert j["status"] == "degraded" and j["ok"] is False, j
        assert j["db_failing"] is True and j["db_errors"] > 0, j
        assert h.header("Retry-After") == "1", h
        m = scrape(ost)
        assert value(m, "ptyd_db_failing") == 1
        assert value(m, "ptyd_db_errors_total") >= j["db_errors"]
        assert value(m, "ptyd_db_flush_lag_seconds") >= 2.0, \
            "the change has waited since the lock"
        # The CLI says the same, and exits 1 for scripts.
        r = ctl(ost, "health", "--json", check=False)
        assert r.returncode == 1 and \
            json.loads(r.stdout)["status"] == "degraded", r
    finally:
        aud.stdin.write(b"COMMIT;\n.quit\n")
        aud.stdin.flush()
        aud.wait(10)
    h = wait_for(lambda: (lambda r: r if r.status == 200 else None)(
        c.health()), 5, what="health ok again")
    assert h.json()["status"] == "ok" and h.json()["db_failing"] is False
    assert h.json()["db_errors"] > 0, "errors stay counted"
    m = scrape(ost)
    assert value(m, "ptyd_db_failing") == 0
    assert value(m, "ptyd_db_flush_lag_seconds") < 2.0


# -- metrics ----------------------------------------------------------------

def test_metrics_scrape_parses_and_counts(ost, new_sid):
    c = ost.client()
    m0 = scrape(ost)
    assert value(m0, "ptyd_up") == 1
    sid = new_sid()
    assert c.start(sid).status == 200
    assert c.input(sid, "echo metrics\r").status == 200
    assert c.input(sid, "").status == 200
    assert c.post("input", {"session_id": "no-such", "data": "x"}
                  ).status == 404
    m1 = wait_for(lambda: (lambda m: m if value(m, "ptyd_output_bytes_total")
                           > value(m0, "ptyd_output_bytes_total") else None)(
        scrape(ost)), 5, what="output counted")
    assert value(m1, "ptyd_starts_total") == \
        value(m0, "ptyd_starts_total") + 1
    assert value(m1, "ptyd_inputs_total") == \
        value(m0, "ptyd_inputs_total") + 2
    assert value(m1, "ptyd_input_bytes_total") == \
        value(m0, "ptyd_input_bytes_total") + len("echo metrics\r")
    assert value(m1, "ptyd_terminals", state="running") >= 1
    for name in ("ptyd_closes_total", "ptyd_reaps_total",
                 "ptyd_evictions_total", "ptyd_lost_total",
                 "ptyd_exits_total", "ptyd_db_errors_total"):
        assert m1[name]["type"] == "counter"
        assert value(m1, name) >= value(m0, name)
    assert value(m1, "ptyd_fcgi_requests_total", endpoint="input",
                 status="404") >= 1
    assert requests_of(m1, "start") == requests_of(m0, "start") + 1
    assert requests_of(m1, "input") == requests_of(m0, "input") + 3
    # Every histogram: buckets grow with le, +Inf is _count, and _count
    # is the endpoint's requests (they are counted together).
    h = m1["ptyd_fcgi_request_duration_seconds"]
    assert h["type"] == "histogram"
    eps = {lb["endpoint"] for _, lb, _ in h["samples"]}
    assert {"start", "input", "health", "list", "metrics"} <= eps
    assert "output" not in eps, "streams have their own histogram"
    for ep in eps:
        b = [(float(lb["le"]), v) for n, lb, v in h["samples"]
             if n.endswith("_bucket") and lb["endpoint"] == ep]
        assert [le for le, _ in b] == sorted(le for le, _ in b)
        assert b[-1][0] == math.inf
        assert all(x[1] <= y[1] for x, y in zip(b, b[1:])), (ep, b)
        count = value(m1, "ptyd_fcgi_request_duration_seconds_count",
                      endpoint=ep)
        assert b[-1][1] == count
        assert count == requests_of(m1, ep), ep
        assert value(m1, "ptyd_fcgi_request_duration_seconds_sum",
                     endpoint=ep) >= 0
    assert m1["ptyd_fcgi_stream_duration_seconds"]["type"] == "histogram"
    assert value(m1, "ptyd_fcgi_counters_shared") == 1


def test_stream_lifetime_goes_to_its_own_histogram(ost, new_sid):
    c = ost.client()
    sid = new_sid()
    assert c.start(sid).status == 200
    m0 = scrape(ost)
    with c.stream(sid) as s:
        s.next_event()
        m = wait_for(lambda: (lambda m: m if value(m, "ptyd_fcgi_streams")
                              >= 1 else None)(scrape(ost)), 5,
                     what="open stream counted")
        assert value(m, "ptyd_viewers") >= 1
        time.sleep(1.2)
    m1 = wait_for(lambda: (lambda m: m if value(
        m, "ptyd_fcgi_stream_duration_seconds_count") > value(
        m0, "ptyd_fcgi_stream_duration_seconds_count") else None)(
        scrape(ost)), 5, what="stream ended and counted")
    # It lasted over a second: in the le=1 bucket it is not.
    assert value(m1, "ptyd_fcgi_stream_duration_seconds_bucket", le="1") \
        == value(m0, "ptyd_fcgi_stream_duration_seconds_bucket", le="1")


def test_metrics_is_behind_the_same_gate(ost):
    c = ost.client(host="evil.example:%d" % ost.port)
    r = c.get("metrics")
    assert r.status == 403, r
    r = ost.client().request("POST", "metrics", {})
    assert r.status == 405, r


# Metrics are the operator's (issue 29): they count every user's
# terminals and keystrokes, so a web user of a shared account (auth =
# front) reads them only if metrics_users names them.  Before, every
# authenticated user read them.
def test_metrics_are_refused_to_a_web_user_not_named(make_stack):
    st = make_stack("metrics-users", users=["alice:pw-a", "prom:pw-p"],
                    env=["PTYD_METRICS_USERS=prom"])
    r = st.client("alice").get("metrics")
    assert r.status == 403, r
    assert "metrics_users" in r.json()["error"], r
    r = st.client("prom").get("metrics")
    assert r.status == 200 and b"ptyd_up 1" in r.body, r


def test_metrics_are_refused_outside_metrics_allow(make_stack):
    st = make_stack("metrics-allow", env=["PTYD_METRICS_ALLOW=10.0.0.0/8"])
    assert st.client().get("metrics").status == 403
    assert st.client().get("health").status == 200


# -- the audit log ----------------------------------------------------------

def test_audit_log_refuses_update_and_delete_from_the_sqlite3_shell(ost,
                                                                    term):
    term(client=ost.client())
    wait_for(lambda: ost.db("SELECT count(*) AS n FROM terminal_events")
             [0]["n"] > 0, 5, what="an event")
    n0 = ost.db("SELECT count(*) AS n FROM terminal_events")[0]["n"]
    for sql in ("UPDATE terminal_events SET detail = 'forged'",
                "DELETE FROM terminal_events",
                "DELETE FROM terminal_events WHERE at < 1e12"):
        r = sqlite(ost.db_path, sql)
        assert r.returncode != 0, (sql, r)
        assert b"append-only" in r.stdout + r.stderr, r
    assert ost.db("SELECT count(*) AS n FROM terminal_events")[0]["n"] >= n0
    assert ost.db("SELECT count(*) AS n FROM terminal_events WHERE "
                  "detail = 'forged'")[0]["n"] == 0


def test_two_inputs_are_two_events_with_actor_time_and_bytes(ost, term):
    c = ost.client()
    sid, _ = term(client=c)
    t0 = time.time()
    assert c.input(sid, "ab").status == 200
    assert c.input(sid, "cde").status == 200
    ev = wait_for(lambda: (lambda e: e if len(e) == 2 else None)(ost.db(
        "SELECT * FROM events WHERE session_id = ? AND kind = 'input' "
        "ORDER BY id", (sid,))), 5, what="two input events")
    assert [e["detail"] for e in ev] == ["2 bytes", "3 bytes"], ev
    assert all(e["actor"] == "@127.0.0.1" for e in ev), ev
    assert all(t0 - 1 <= e["at"] <= time.time() + 1 for e in ev), ev
    assert ev[0]["at"] <= ev[1]["at"]
    assert all(re.match(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$", e["at_utc"])
               for e in ev), ev
    assert "cde" not in json.dumps(ev), "the text is never logged"


def test_prune_removes_old_events_says_how_many_and_is_logged(ost):
    # Old events are a prefix of the hash chain (DESIGN 7): a prune
    # removes everything before its cutoff up to the first event at or
    # after it, and chains its own event on the end.
    time.sleep(1.1)
    n0 = ost.db("SELECT count(*) AS n FROM terminal_events")[0]["n"]
    old = ost.db("SELECT count(*) AS n FROM terminal_events WHERE "
                 "kind <> 'prune'")[0]["n"]
    assert old > 0
    r = ctl(ost, "prune", "--before", "0", "--db", ost.db_path)
    assert re.match(rb"^removed %d events before \d{4}-\d\d-\d\d "
                    rb"\d\d:\d\d:\d\d UTC \(the chain now starts after seq "
                    rb"\d+; the prune is seq \d+\)\n$" % old, r.stdout), r
    assert ost.db("SELECT count(*) AS n FROM terminal_events")[0]["n"] <= \
        n0 - old + 1 + 5    # ptyd may have written a few since
    p = ost.db("SELECT * FROM events WHERE kind = 'prune' ORDER BY id DESC "
               "LIMIT 1")[0]
    assert p["detail"].startswith("removed %d events before " % old), p
    assert p["actor"].endswith("@ptydctl"), p
    assert ost.db("SELECT count(*) AS n FROM prune_permit")[0]["n"] == 0
    # Nothing left to prune: says so; the permit did not outlive it.
    r = ctl(ost, "prune", "--before", "2000-01-01", "--db", ost.db_path)
    assert r.stdout.startswith(b"removed 0 events before 2000-01-01 "), r
    r = sqlite(ost.db_path, "DELETE FROM terminal_events WHERE kind = 'prune'")
    assert r.returncode != 0, r
    r = ctl(ost, "prune", "--before", "yesterday", "--db", ost.db_path,
            check=False)
    assert r.returncode == 2 and b"--before" in r.stderr, r


# -- ptydctl ------------------------------------------------------------------

def test_ptydctl_json_outputs_parse(ost, term):
    sid, j = term(client=ost.client())
    lst = json.loads(ctl(ost, "list", "--all", "--json").stdout)
    mine = [t for t in lst["terminals"] if t["session_id"] == sid]
    assert len(mine) == 1 and mine[0]["pid"] == j["pid"], lst
    show = json.loads(ctl(ost, "show", sid, "--json").stdout)
    assert show["session_id"] == sid and show["running"] is True, show
    health = json.loads(ctl(ost, "health", "--json").stdout)
    assert health["status"] == "ok" and health["db_failing"] is False
    stats = json.loads(ctl(ost, "stats", "--json").stdout)
    assert stats["running"] >= 1 and stats["starts"] >= 1, stats
    # The human forms: aligned columns with a header.
    out = ctl(ost, "list").stdout.decode().splitlines()
    assert out[0].split()[:3] == ["SESSION", "OWNER", "PID"], out
    assert out[0].index("PID") == [l for l in out if sid in l][0].index(
        str(j["pid"])), out
    assert ctl(ost, "show", "no-such-terminal", check=False).returncode == 1
    assert ctl(ost, "version").stdout.startswith(b"ptydctl ")


# -- migration ----------------------------------------------------------------

V3_ONLY = ("DROP TRIGGER terminal_events_no_delete; DROP VIEW events; "
           "DROP TRIGGER terminal_events_no_replace; "
           "DROP TABLE prune_permit; DROP TABLE recordings; "
           "ALTER TABLE terminal_events DROP COLUMN prev; "
           "ALTER TABLE terminal_events DROP COLUMN hash; "
           "PRAGMA user_version = 2;")


@pytest.mark.deadline(90)
def test_schema_2_database_is_upgraded_in_place(make_stack):
    st = make_stack("migrate")
    st.stop()
    # Back to the previous schema's shape, with history in it.
    r = sqlite(st.db_path, V3_ONLY + " INSERT INTO terminal_events (at, "
               "kind, detail) VALUES (1.5, 'old', 'kept');")
    assert r.returncode == 0, r
    st.start()
    wait_for(lambda: st.db("PRAGMA user_version")[0]["user_version"] == 6,
             10, what="upgraded to 6")
    names = {r["name"] for r in st.db("SELECT name FROM sqlite_master")}
    assert {"terminal_events_no_delete", "terminal_events_no_replace",
            "events", "prune_permit", "recordings"} <= names
    assert "migrated from schema version 5 to 6" in st.log("ptyd")
    assert "migrated from schema version 2 to 3" in st.log("ptyd")
    assert st.db("SELECT detail FROM events WHERE kind = 'old'") == \
        [{"detail": "kept"}], "history kept"
    # The hash chain starts after the history it cannot vouch for.
    assert "migrated from schema version 4 to 5" in st.log("ptyd")
    start = st.db("SELECT * FROM terminal_events WHERE kind = 'chain'")
    assert len(start) == 1 and start[0]["prev"] == "0" * 64, start
    assert st.db("SELECT count(*) AS n FROM terminal_events WHERE "
                 "hash IS NULL AND id > ?", (start[0]["id"],)) == \
        [{"n": 0}]
    r = sqlite(st.db_path, "DELETE FROM terminal_events")
    assert r.returncode != 0 and b"append-only" in r.stdout + r.stderr, r
