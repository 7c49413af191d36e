#!/usr/bin/env python3
"""Write the seed corpus for fuzz_fcgi: FastCGI requests as nginx sends them
to ptyd.fcgi (BEGIN_REQUEST, PARAMS, STDIN, each stream ended by an empty
record), a few shapes nginx could send, and the malformed shapes that abort
libfcgi, so that mutations start on both sides of the guard.  Rerun:
python3 tests/fuzz/make-corpus-fcgi.py tests/fuzz/corpus/fcgi"""
import os
import struct
import sys

BEGIN, PARAMS, STDIN, GET_VALUES = 1, 4, 5, 9


def rec(t, content=b"", rid=1, pad=None):
    if pad is None:
        pad = (8 - len(content) % 8) % 8
    return struct.pack(">BBHHBB", 1, t, rid, len(content), pad, 0) + \
        content + b"\0" * pad


def length(n, four=False):
    return struct.pack(">I", n | 0x80000000) if four or n > 127 else bytes([n])


def pair(name, value):
    name = name.encode() if isinstance(name, str) else name
    value = value.encode() if isinstance(value, str) else value
    return length(len(name)) + length(len(value)) + name + value


def begin(rid=1, role=1, flags=0):
    return rec(BEGIN, struct.pack(">HB5x", role, flags), rid, 0)


NGINX = b"".join(pair(k, v) for k, v in [
    ("REQUEST_METHOD", "POST"), ("CONTENT_TYPE", "application/json"),
    ("CONTENT_LENGTH", "27"), ("SCRIPT_NAME", "/api/terminal"),
    ("PATH_INFO", "/input"), ("REQUEST_URI", "/api/terminal/input"),
    ("REMOTE_ADDR", "127.0.0.1"), ("REMOTE_PORT", "51234"),
    ("SERVER_ADDR", "127.0.0.1"), ("SERVER_PORT", "8080"),
    ("HTTP_HOST", "localhost:8080"), ("HTTP_COOKIE", "c" * 300),
    ("HTTPS", "")])
BODY = b'{"session_id":"a","d":"ls\\r"}'


def request(params=NGINX, body=BODY, rid=1, split=None):
    if split is None:
        p = rec(PARAMS, params, rid)
    else:
        p = rec(PARAMS, params[:split], rid) + rec(PARAMS, params[split:], rid)
    s = rec(STDIN, body, rid) if body else b""
    return begin(rid) + p + rec(PARAMS, b"", rid) + s + rec(STDIN, b"", rid)


SEEDS = {
    "post": request(),
    "get": request(NGINX.replace(b"POST", b"GETS"), b""),
    "pairs-across-records": request(split=3),
    "length-across-records": request(split=len(pair("REQUEST_METHOD", "POST"))
                                     + 2),
    "four-byte-lengths": request(length(4, True) + length(1, True) + b"NAMEv"),
    "keep-conn-padding": begin(7, 1, 1) + rec(PARAMS, pair("A", "b"), 7, 255)
    + rec(PARAMS, b"", 7) + rec(STDIN, b"x", 7, 255) + rec(STDIN, b"", 7),
    "body-records": request(body=b"x" * 9000),
    # Malformed: each aborts or confuses libfcgi, the guard refuses it.
    "bad-length-sum": request(length(0x7ffffffe, True) +
                              length(0x7ffffffe, True) + b"AB"),
    "bad-name-past-params": request(length(100) + length(0) + b"ABC"),
    "bad-get-values": rec(GET_VALUES, pair("FCGI_MPXS_CONNS", "") * 8, 0),
    "bad-get-values-in-stdin": request()[:-8] +
    rec(GET_VALUES, pair("FCGI_MAX_CONNS", "") * 8, 0) + rec(STDIN, b""),
}

out = sys.argv[1] if len(sys.argv) > 1 else "tests/fuzz/corpus/fcgi"
os.makedirs(out, exist_ok=True)
for name, data in SEEDS.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
