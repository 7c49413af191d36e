"""test_fcgi_records.py -- a malformed FastCGI record ends that one
connection, never a worker (issue 12).

Regression: libfcgi asserted on parameters whose name and value lengths
sum past 2^31 (and on other shapes), aborting the whole ptyd.fcgi worker
process and every stream it served: 50 bad connections killed all six
workers and every open stream.
"""

import os
import socket
import struct

import pytest

from fcgi_raw import fcgi_record, fcgi_request
from ptyd_http import Shell
from ptyd_stack import children_of

BEGIN = fcgi_record(1, struct.pack(">HB5x", 1, 0))
SHAPES = {
    "sum past 2^31": BEGIN + fcgi_record(4, struct.pack(
        ">II", 0xC0000000, 0xC0000000) + b"x" * 16) + fcgi_record(4, b""),
    "length past the stream": BEGIN + fcgi_record(4, struct.pack(
        ">BI", 3, 0xFFFFFFF0) + b"abc") + fcgi_record(4, b""),
    "record longer than sent": BEGIN + struct.pack(
        ">BBHHBB", 1, 4, 1, 200, 0, 0) + b"\x05\x05ab",
    "cut pair": BEGIN + fcgi_record(4, b"\x05\x05ab") + fcgi_record(4, b""),
    "stdin before params end": BEGIN + fcgi_record(5, b"x" * 10),
    "get values": fcgi_record(9, b"\x0f\x00FCGI_MPXS_CONNS") + BEGIN,
    "garbage": bytes(range(256)) * 4,
    "version 2": b"\x02" + BEGIN[1:] + fcgi_record(4, b""),
}


def send_raw(path, data):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    try:
        s.connect(path)
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        while s.recv(4096):
            pass
    except OSError:
        pass
    finally:
        s.close()


@pytest.mark.deadline(120)
def test_malformed_records_end_one_connection_not_a_worker(make_stack):
    st = make_stack("fcgi-records")
    sock = os.path.join(st.state, "run", "fcgi.sock")
    fcgi = int(open(os.path.join(st.state, "run", "fcgi.pid")).read())
    workers = sorted(children_of(fcgi))
    assert len(workers) >= 2, workers
    c = st.client()
    sid = "records"
    assert c.start(sid).status == 200
    with Shell(c, sid) as sh:
        sh.run("true")
        for i in range(60):
            send_raw(sock, list(SHAPES.values())[i % len(SHAPES)])
        # Every worker still runs, the open stream still streams, and a
        # well-formed request through the same socket is served.
        assert sorted(children_of(fcgi)) == workers
        assert sh.run("echo alive-$((40+2))", timeout=20).endswith(
            b"alive-42")
    assert fcgi_request(sock, {
        "REQUEST_METHOD": "GET", "DOCUMENT_URI": "/api/terminal/health",
        "REMOTE_ADDR": "203.0.113.5", "HTTP_HOST": "127.0.0.1"}) == 403
    assert "refused a FastCGI connection" in st.log("fcgi")
    c.close_term(sid)
