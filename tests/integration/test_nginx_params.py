"""test_nginx_params.py -- what the shipped nginx config hands ptyd.fcgi
of a browser's request headers (nginx/ptyd-fastcgi.conf).

The real nginx, with the tree's nginx/*.conf installed as an operator
installs them (front_servers.nginx_server) and ptyd-location.conf
included, passes each request to a FastCGI responder of this test that
records the parameters it gets, in order, and answers 200.  Sent: every
header the config hides (the list is read from the config, each name in
one case or another), the headers the gate reads, a repeated
X-Forwarded-For with a line named X_Forwarded_For among its lines (the
server takes underscores, as underscores_in_headers on does) and one
header nobody knows.

Asserted, for a keystroke POST and for the output stream:
  - the headers ptyd.fcgi reads arrive (Host, Origin, Sec-Fetch-Site,
    Last-Event-ID), and so do the signs of a proxy (X-Forwarded-For as one
    param, its lines joined in order, without the X_Forwarded_For line;
    and X-Real-IP) and a header no list names: hiding is by name, so
    nothing the gate may need is dropped unseen;
  - none of the hidden ones does (User-Agent, Accept-*, Referer, client
    hints, Sec-Fetch-Mode/Dest/User, credentials, forgeable identity
    headers, Proxy); REMOTE_USER is the location's, empty.

Before the change every header reached ptyd.fcgi, and nginx held all of
them in the FastCGI request it keeps for a stream's life (bench/streams
--browser: about 0.5 kB more an open viewer).
"""

import os
import re
import socket
import struct
import threading

import front_servers as fs
from ptyd_http import raw_status
from ptyd_stack import REPO

FCGI_BEGIN_REQUEST, FCGI_END_REQUEST = 1, 3
FCGI_PARAMS, FCGI_STDIN, FCGI_STDOUT = 4, 5, 6
FCGI_KEEP_CONN = 1

# Every header the shipped config hides, read from the config itself (an
# empty HTTP_ parameter): each is sent below, under its header name.
with open(os.path.join(REPO, "nginx", "ptyd-fastcgi.conf")) as f:
    HIDDEN = re.findall(r'(?m)^fastcgi_param\s+(HTTP_[A-Z_]+)\s+"";', f.read())


def header_of(param):
    """HTTP_SEC_CH_UA -> Sec-Ch-Ua."""
    return "-".join(w.capitalize() for w in param[5:].split("_"))


# A browser's values where it matters what they look like; any value
# does for the rest.
VALUES = {
    "HTTP_USER_AGENT": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 "
                       "(KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
    "HTTP_COOKIE": "session=s3cret; other=app",
    "HTTP_AUTHORIZATION": "Basic YWxpY2U6cGFzc3dvcmQ=",
    "HTTP_REMOTE_USER": "mallory",
    "HTTP_X_REMOTE_USER": "mallory",
    "HTTP_SEC_CH_UA": '"Chromium";v="120", "Not?A_Brand";v="8"',
}
# Connection is the request's own (close); the rest are sent here, every
# other one with its name in another case, as nginx matches names.
BROWSER = [(header_of(p) if i % 2 else header_of(p).upper(),
            VALUES.get(p, "x%d" % i))
           for i, p in enumerate(HIDDEN) if p != "HTTP_CONNECTION"]


def read_exact(s, n):
    buf = b""
    while len(buf) < n:
        d = s.recv(n - len(buf))
        if not d:
            return None
        buf += d
    return buf


def decode_pairs(data):
    """The name-value pairs in order, repeats kept."""
    out, i = [], 0
    while i < len(data):
        lens = []
        for _ in range(2):
            if data[i] < 128:
                lens.append(data[i])
                i += 1
            else:
                lens.append(struct.unpack(">I", data[i:i + 4])[0] & 0x7fffffff)
                i += 4
        out.append((data[i:i + lens[0]].decode(),
                    data[i + lens[0]:i + lens[0] + lens[1]].decode()))
        i += lens[0] + lens[1]
    return out


class Recorder:
    """A FastCGI responder on a Unix socket: records each request's
    parameters and answers 200 with a short body; keeps the connection
    when nginx asks it to."""

    def __init__(self, path):
        self.path = path
        self.requests = []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(16)
        self.thread = threading.Thread(target=self.accept, daemon=True)
        self.thread.start()

    def accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(c,),
                             daemon=True).start()

    def serve(self, c):
        with c:
            keep, params = False, b""
            while True:
                hdr = read_exact(c, 8)
                if hdr is None:
                    return
                _, rtype, rid, clen, plen, _ = struct.unpack(">BBHHBB", hdr)
                body = read_exact(c, clen + plen)
                if body is None:
                    return
                body = body[:clen]
                if rtype == FCGI_BEGIN_REQUEST:
                    keep = bool(body[2] & FCGI_KEEP_CONN)
                    params = b""
                elif rtype == FCGI_PARAMS:
                    params += body
                elif rtype == FCGI_STDIN and clen == 0:
                    self.requests.append(decode_pairs(params))
                    out = (b"Status: 200 OK\r\nContent-Type: text/plain\r\n"
                           b"\r\nok")
                    c.sendall(
                        struct.pack(">BBHHBB", 1, FCGI_STDOUT, rid,
                                    len(out), 0, 0) + out +
                        struct.pack(">BBHHBB", 1, FCGI_STDOUT, rid, 0, 0, 0) +
                        struct.pack(">BBHHBB", 1, FCGI_END_REQUEST, rid, 8,
                                    0, 0) + bytes(8))
                    if not keep:
                        return

    def close(self):
        self.sock.close()


def check(p, port, extra):
    names = [k for k, _ in p]
    d = dict(p)
    for k in HIDDEN:
        assert k not in names, "%s reached ptyd.fcgi: %r" % (k, d[k])
    assert d["REMOTE_USER"] == ""
    assert d["HTTP_HOST"] == "127.0.0.1:%d" % port
    assert d["HTTP_SEC_FETCH_SITE"] == "same-origin"
    # One param, the lines of the header joined in order: ptyd.fcgi denies
    # a forwarded header that comes as two params (their order need not
    # be the lines'), and X_Forwarded_For, which would be one of them, is
    # not passed (test_limits, test_front_forwarded).
    assert [v for k, v in p if k == "HTTP_X_FORWARDED_FOR"] == [
        "192.168.1.5, 203.0.113.9"]
    assert d["HTTP_X_REAL_IP"] == "203.0.113.9"
    assert d["HTTP_X_NOBODY_KNOWS"] == "kept"
    for k, v in extra.items():
        assert d[k] == v, (k, p)


def test_browser_headers_that_ptyd_fcgi_never_reads_stay_in_nginx(tmp_path):
    fs.need("nginx", "nginx-light")
    d = str(tmp_path)
    rec = Recorder(os.path.join(d, "fcgi.sock"))
    ngx = fs.nginx_server(
        os.path.join(d, "nginx"),
        "        underscores_in_headers on;\n"
        "        include ptyd/ptyd-location.conf;",
        "    upstream ptyd_fcgi { server unix:%s; }\n"
        "    upstream ptyd_fcgi_kept { server unix:%s; keepalive 4; }"
        % (rec.path, rec.path))
    ngx.start()
    try:
        port = ngx.port
        assert len(HIDDEN) >= 20, HIDDEN
        common = BROWSER + [("Sec-Fetch-Site", "same-origin"),
                            ("X-Forwarded-For", "192.168.1.5"),
                            ("X_Forwarded_For", "10.9.9.9"),
                            ("X-Forwarded-For", "203.0.113.9"),
                            ("X-Real-IP", "203.0.113.9"),
                            ("X-Nobody-Knows", "kept")]
        origin = ("Origin", "http://127.0.0.1:%d" % port)
        assert raw_status(port, "POST", "/api/terminal/input",
                       common + [origin,
                                 ("Content-Type", "application/json")],
                       b'{"session_id": "a", "data": "x"}') == 200
        assert raw_status(port, "GET", "/api/terminal/output?session_id=a",
                       common + [("Last-Event-ID", "42")]) == 200
        assert len(rec.requests) == 2, rec.requests
        post, get = rec.requests
        assert dict(post)["PATH_INFO"] == "/input"
        check(post, port, {"HTTP_ORIGIN": origin[1],
                           "CONTENT_TYPE": "application/json"})
        assert dict(get)["PATH_INFO"] == "/output"
        check(get, port, {"HTTP_LAST_EVENT_ID": "42"})
    finally:
        ngx.stop()
        rec.close()
