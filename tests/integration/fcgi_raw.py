"""fcgi_raw.py -- speak FastCGI to ptyd.fcgi's socket directly, as any
process that can reach it could: for tests of what a raw peer can and
cannot do (set parameters nginx would never send, send malformed records).

Owns: encoding records and name-value pairs, one request's exchange, and
reading the status back.  Does not own: any assertion.
"""

import socket
import struct

from ptyd_http import read_to_eof

def fcgi_record(rtype, content, rid=1):
    return struct.pack(">BBHHBB", 1, rtype, rid, len(content), 0, 0) + content


def fcgi_pairs(params):
    out = b""
    for k, v in params.items():
        k, v = k.encode(), v.encode()
        for n in (len(k), len(v)):
            out += bytes([n]) if n < 128 else struct.pack(">I", n | 1 << 31)
        out += k + v
    return out


def fcgi_exchange(path, params, stdin=b"", timeout=10):
    """One FastCGI request over the Unix socket, with stdin as its body;
    returns the status code ptyd.fcgi wrote (from its Status: header) and
    the body of its answer."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    body = fcgi_pairs(params)
    s.sendall(fcgi_record(1, struct.pack(">HB5x", 1, 0)) +
              fcgi_record(4, body) + fcgi_record(4, b"") +
              (fcgi_record(5, stdin) if stdin else b"") +
              fcgi_record(5, b""))
    data = read_to_eof(s)
    s.close()
    out, i = b"", 0
    while i + 8 <= len(data):
        _, t, _, clen, plen, _ = struct.unpack(">BBHHBB", data[i:i + 8])
        if t == 6:
            out += data[i + 8:i + 8 + clen]
        i += 8 + clen + plen
    return fcgi_status(out)


def fcgi_status(out):
    """(status, body) of a responder's STDOUT: its Status: header, else
    200."""
    head, _, text = out.partition(b"\r\n\r\n")
    for line in head.decode().split("\r\n"):
        if line.lower().startswith("status:"):
            return int(line.split()[1]), text
    return 200, text


def fcgi_request(path, params, timeout=10):
    """One FastCGI request over the Unix socket; returns the status code
    ptyd.fcgi wrote (from its Status: header)."""
    return fcgi_exchange(path, params, timeout=timeout)[0]
