"""test_metrics_and_audit.py -- how requests are counted in the metrics,
and that the audit log cannot be rewritten (fcgi/metrics.c,
sql/schema.sql; regression tests from the review of health, metrics and
the audit log).

1. GET limits is an endpoint of its own: the metrics count it as
   endpoint="limits", not with the unknown endpoints as "other".
2. The audit log refuses UPDATE and DELETE; REPLACE INTO (a DELETE that
   fires no DELETE trigger unless recursive_triggers is on) must not
   rewrite an event either.

One ptyd and one ptyd.fcgi (FastCGI on a Unix socket, no nginx) in a temp
dir, from test_daemon_life's fixture.
"""

import re
import sqlite3
import time

import pytest

from fcgi_raw import fcgi_exchange
from ptyd_stack import wait_for
from test_daemon_life import daemon, fcgi_call, start_fcgi  # noqa: F401


@pytest.mark.deadline(60)
def test_limits_requests_are_counted_as_limits_in_the_metrics(
        daemon):  # noqa: F811
    d = daemon
    sock = d.sock()
    d.up(sock)
    fsock = start_fcgi(d, sock, d.env(PTYD_LOCAL="address"))
    for _ in range(3):
        status, _ = fcgi_call(fsock, "GET", "limits")
        assert status == 200
    # The body is text, not JSON: fetch it raw.
    status, text = fcgi_exchange(fsock, {
        "REQUEST_METHOD": "GET", "REQUEST_SCHEME": "http",
        "DOCUMENT_URI": "/api/terminal/metrics",
        "REQUEST_URI": "/api/terminal/metrics", "HTTP_HOST": "127.0.0.1",
        "REMOTE_ADDR": "127.0.0.1", "CONTENT_LENGTH": "0"})
    text = text.decode()
    assert status == 200
    assert re.search(r'^ptyd_fcgi_requests_total\{endpoint="limits",'
                     r'status="200"\} 3$', text, re.M), \
        [ln for ln in text.splitlines() if "requests_total{" in ln]


@pytest.mark.deadline(60)
def test_replace_into_cannot_rewrite_an_audit_event(daemon):  # noqa: F811
    d = daemon
    sock = d.sock()
    d.up(sock)
    d.start_term(sock, "r1")
    d.ctl(sock, "input", "r1", "true\n")

    def events():
        db = sqlite3.connect("file:%s?mode=ro" % d.db, uri=True, timeout=5)
        try:
            return db.execute("SELECT id, kind, actor, detail FROM "
                              "terminal_events WHERE kind = 'input'"
                              ).fetchall()
        finally:
            db.close()

    wait_for(lambda: events(), 10, what="the input event written")
    (eid, kind, actor, detail), = events()
    db = sqlite3.connect(d.db, timeout=5)
    try:
        with pytest.raises(sqlite3.DatabaseError):
            db.execute("UPDATE terminal_events SET actor = 'x' "
                       "WHERE id = ?", (eid,))
        refused = False
        try:
            db.execute("REPLACE INTO terminal_events (id, at, kind, actor, "
                       "detail) VALUES (?, 0, 'input', 'nobody@nowhere', "
                       "'1 bytes')", (eid,))
            db.commit()
        except sqlite3.DatabaseError:
            refused = True
    finally:
        db.close()
    time.sleep(0.1)
    assert events() == [(eid, kind, actor, detail)], \
        "REPLACE INTO rewrote audit event %d (refused: %s)" % (eid, refused)
