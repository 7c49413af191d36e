"""ptyd_http.py -- HTTP and Server-Sent Events clients for the integration
tests, standard library only.

Owns: one-shot JSON requests (http.client), a raw-socket SSE reader that
keeps every byte of the wire format so tests can check the framing, and a
transcript that reassembles output bytes by stream position.  Does not own:
starting the stack (ptyd_stack.py) or any assertion about the contract (the
tests).

Every network wait takes a deadline; nothing here blocks for ever.
"""

import base64
import http.client
import json
import secrets
import select
import socket
import struct
import time
import urllib.parse

DEFAULT_TIMEOUT = 10.0
API = "/api/terminal/"


class Response:
    """A complete HTTP response: status, lower-cased headers, body."""

    def __init__(self, status, reason, headers, body):
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body.decode("utf-8"))

    def header(self, name, default=None):
        return self.headers.get(name.lower(), default)

    def __repr__(self):
        return "<Response %d %r %r>" % (self.status, self.headers,
                                         self.body[:300])


def basic_auth(user, password):
    tok = base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
    return "Basic " + tok


class Client:
    """JSON requests to one nginx port, optionally as an auth_basic user.

    A client may keep one HTTP/1.1 connection open (keepalive=True) for
    load tests; by default each request uses a fresh connection so a test
    never sees a half-dead connection left by an earlier one.
    """

    def __init__(self, port, user=None, password=None, host=None,
                 keepalive=False):
        self.port = port
        self.user = user
        self.password = password
        self.host = host if host is not None else "127.0.0.1:%d" % port
        self.keepalive = keepalive
        self._conn = None

    def close(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _headers(self, extra):
        h = {"Host": self.host}
        if self.user is not None:
            h["Authorization"] = basic_auth(self.user, self.password)
        if extra:
            h.update(extra)
        return h

    def request(self, method, path, body=None, headers=None,
                timeout=DEFAULT_TIMEOUT):
        """Send one request; body may be bytes, str, or a JSON-able object
        (then Content-Type: application/json is added unless given)."""
        hdrs = self._headers(headers)
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body, ensure_ascii=False)
            if not any(k.lower() == "content-type" for k in hdrs):
                hdrs["Content-Type"] = "application/json"
        if isinstance(body, str):
            body = body.encode("utf-8")
        if not path.startswith("/"):
            path = API + path
        if self.keepalive:
            if self._conn is None:
                self._conn = http.client.HTTPConnection(
                    "127.0.0.1", self.port, timeout=timeout)
            conn = self._conn
        else:
            conn = http.client.HTTPConnection("127.0.0.1", self.port,
                                              timeout=timeout)
            hdrs.setdefault("Connection", "close")
        try:
            # skip_host: the Host header is ours, so tests can send a
            # foreign one to the DNS-rebinding check.
            conn.putrequest(method, path, skip_host=True,
                            skip_accept_encoding=True)
            for k, v in hdrs.items():
                conn.putheader(k, v)
            if body is not None or method in ("POST", "PUT"):
                conn.putheader("Content-Length", str(len(body or b"")))
            conn.endheaders(body)
            r = conn.getresponse()
            data = r.read()
            resp = Response(r.status, r.reason,
                            {k.lower(): v for k, v in r.getheaders()}, data)
            if r.will_close and self.keepalive:
                self.close()
            return resp
        except Exception:
            if self.keepalive:
                self.close()
            raise
        finally:
            if not self.keepalive:
                conn.close()

    # Endpoint helpers.  They return the Response; the tests assert.
    def post(self, endpoint, obj, query=None, headers=None, **kw):
        path = API + endpoint
        if query:
            path += "?" + urllib.parse.urlencode(query)
        return self.request("POST", path, obj, headers=headers, **kw)

    def get(self, endpoint, query=None, headers=None, **kw):
        path = API + endpoint
        if query:
            path += "?" + urllib.parse.urlencode(query)
        return self.request("GET", path, headers=headers, **kw)

    def start(self, sid, **fields):
        fields["session_id"] = sid
        return self.post("start", fields)

    def input(self, sid, data):
        return self.post("input", {"session_id": sid, "data": data})

    def post_and_cut(self, endpoint, obj):
        """Send a POST and close the connection without reading any
        answer, as a client whose link drops after sending."""
        body = json.dumps(obj).encode()
        s = socket.create_connection(("127.0.0.1", self.port))
        s.sendall(b"POST %s HTTP/1.1\r\nHost: %s\r\n"
                  b"Content-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n"
                  % ((API + endpoint).encode(), self.host.encode(),
                     len(body)) + body)
        s.close()

    def resize(self, sid, rows=None, cols=None):
        obj = {"session_id": sid}
        if rows is not None:
            obj["rows"] = rows
        if cols is not None:
            obj["cols"] = cols
        return self.post("resize", obj)

    def close_term(self, sid):
        return self.post("close", {"session_id": sid})

    def list(self):
        return self.get("list")

    def limits_caps(self):
        """GET limits' terminals: ptyd's caps in force."""
        r = self.get("limits")
        assert r.status == 200, r
        return r.json().get("terminals")

    def health(self):
        return self.get("health")

    def terminals(self):
        """The caller's terminals as a dict session_id -> entry."""
        r = self.list()
        if r.status != 200:
            raise AssertionError("list answered %r" % (r,))
        return {t["session_id"]: t for t in r.json()["terminals"]}

    def stream(self, sid, **kw):
        return SSE(self.port, sid, user=self.user, password=self.password,
                   host=self.host, **kw)


class Event:
    """One dispatched SSE event, with its raw lines for framing checks."""

    def __init__(self, lines, t):
        self.lines = lines
        self.t = t
        self.id = None
        self.name = None
        self.data_raw = None
        self.fields = []
        for ln in lines:
            key, sep, val = ln.partition(":")
            if sep and val.startswith(" "):
                val = val[1:]
            self.fields.append((key, val))
            if key == "id":
                self.id = int(val)
            elif key == "event":
                self.name = val
            elif key == "data":
                self.data_raw = val if self.data_raw is None else \
                    self.data_raw + "\n" + val
        self.data = json.loads(self.data_raw) if self.data_raw else None

    @property
    def payload(self):
        """The raw output bytes an `output` event carries."""
        if "b64" in self.data:
            return base64.b64decode(self.data["b64"])
        return self.data["text"].encode("utf-8", "surrogatepass")

    def __repr__(self):
        d = self.data_raw or ""
        if len(d) > 120:
            d = d[:120] + "..."
        return "<Event id=%s %s %s>" % (self.id, self.name, d)


class StreamEnded(Exception):
    """The response ended (EOF or last chunk) before the wait was met."""


class SSE:
    """A GET /api/terminal/output stream on a raw socket.

    The status line and headers are read in the constructor; a non-200
    answer keeps its body in .body.  Events are parsed line by line:
    comment lines (": heartbeat") are recorded in .comments with their
    arrival time, field lines collect into an Event that a blank line
    dispatches.  Chunked transfer coding is undone as bytes arrive.
    """

    def __init__(self, port, sid, last_event_id=None, query=None,
                 encoding=None, user=None, password=None, host=None,
                 headers=None, rcvbuf=None, timeout=DEFAULT_TIMEOUT):
        q = {}
        if sid is not None:
            q["session_id"] = sid
        if encoding:
            q["encoding"] = encoding
        if query:
            q.update(query)
        path = API + "output"
        if q:
            path += "?" + urllib.parse.urlencode(q)
        hdrs = {"Host": host or "127.0.0.1:%d" % port,
                "Accept": "text/event-stream",
                "Cache-Control": "no-cache",
                "Connection": "close"}
        if user is not None:
            hdrs["Authorization"] = basic_auth(user, password)
        if last_event_id is not None:
            hdrs["Last-Event-ID"] = str(last_event_id)
        if headers:
            hdrs.update(headers)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf is not None:
            # Must precede connect() to shrink the advertised window.
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(timeout)
        self.sock.connect(("127.0.0.1", port))
        req = "GET %s HTTP/1.1\r\n" % path
        req += "".join("%s: %s\r\n" % kv for kv in hdrs.items()) + "\r\n"
        self.sock.sendall(req.encode())
        self.raw = bytearray()      # bytes off the wire not yet de-chunked
        self.buf = bytearray()      # body bytes not yet parsed into lines
        self.eof = False            # socket closed by the peer
        self.body_done = False      # last chunk / Content-Length reached
        self.chunked = False
        self.remaining = None       # Content-Length left, if given
        self.chunk_left = 0
        self.events = []            # every event dispatched so far
        self.comments = []          # (time, line)
        self.pending_lines = []
        self._cursor = 0            # events[] index next_event() is at
        self.bytes_in = 0
        self._read_head(time.monotonic() + timeout)
        self.body = b""
        if self.status != 200:
            self.body = self._read_all(time.monotonic() + timeout)

    # -- wire --------------------------------------------------------------
    def _recv(self, deadline):
        """Read once from the socket into self.raw. False on EOF."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("deadline reached waiting for stream data")
        # poll(), not select(): a test holding over 1,024 streams has
        # descriptors past FD_SETSIZE.
        p = select.poll()
        p.register(self.sock, select.POLLIN)
        if not p.poll(left * 1000):
            raise TimeoutError("deadline reached waiting for stream data")
        try:
            data = self.sock.recv(262144)
        except ConnectionResetError:
            data = b""
        if not data:
            self.eof = True
            return False
        self.bytes_in += len(data)
        self.raw += data
        return True

    def _read_head(self, deadline):
        while b"\r\n\r\n" not in self.raw:
            if not self._recv(deadline):
                raise AssertionError("connection closed before headers: %r"
                                     % bytes(self.raw))
        head, _, rest = bytes(self.raw).partition(b"\r\n\r\n")
        self.raw = bytearray(rest)
        lines = head.decode("latin-1").split("\r\n")
        self.status_line = lines[0]
        self.status = int(lines[0].split()[1])
        self.headers = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(":")
            self.headers[k.strip().lower()] = v.strip()
        te = self.headers.get("transfer-encoding", "").lower()
        self.chunked = "chunked" in te
        if "content-length" in self.headers:
            self.remaining = int(self.headers["content-length"])
        self._dechunk()

    def _dechunk(self):
        """Move complete body bytes from self.raw to self.buf."""
        if not self.chunked:
            if self.remaining is not None:
                take = min(self.remaining, len(self.raw))
                self.buf += self.raw[:take]
                del self.raw[:take]
                self.remaining -= take
                if self.remaining == 0:
                    self.body_done = True
            else:
                self.buf += self.raw
                self.raw.clear()
            return
        while not self.body_done:
            if self.chunk_left > 0:
                take = min(self.chunk_left, len(self.raw))
                if take == 0:
                    return
                self.buf += self.raw[:take]
                del self.raw[:take]
                self.chunk_left -= take
                if self.chunk_left > 0:
                    return
                self.chunk_left = -2    # expect CRLF after the data
            if self.chunk_left == -2:
                if len(self.raw) < 2:
                    return
                if self.raw[:2] != b"\r\n":
                    raise AssertionError("bad chunk trailer %r"
                                         % bytes(self.raw[:16]))
                del self.raw[:2]
                self.chunk_left = 0
            i = self.raw.find(b"\r\n")
            if i < 0:
                return
            size = int(bytes(self.raw[:i]).split(b";")[0], 16)
            del self.raw[:i + 2]
            if size == 0:
                self.body_done = True
                return
            self.chunk_left = size

    def _read_all(self, deadline):
        while not self.body_done and not self.eof:
            self._recv(deadline)
            self._dechunk()
        out = bytes(self.buf)
        self.buf.clear()
        return out

    def json(self):
        return json.loads(self.body.decode("utf-8"))

    # -- events ------------------------------------------------------------
    def _parse(self):
        """Parse complete lines of self.buf; return new events."""
        new = []
        while True:
            i = self.buf.find(b"\n")
            if i < 0:
                break
            line = bytes(self.buf[:i]).decode("utf-8")
            del self.buf[:i + 1]
            if line.endswith("\r"):
                line = line[:-1]
            now = time.monotonic()
            if line == "":
                if self.pending_lines:
                    ev = Event(self.pending_lines, now)
                    self.pending_lines = []
                    self.events.append(ev)
                    new.append(ev)
            elif line.startswith(":"):
                self.comments.append((now, line))
            else:
                self.pending_lines.append(line)
        return new

    def poll(self, timeout):
        """Wait up to timeout for more data; return new events ([] on
        timeout).  Raises StreamEnded once the body is over."""
        deadline = time.monotonic() + timeout
        while True:
            new = self._parse()
            if new:
                return new
            if self.body_done or self.eof:
                raise StreamEnded("stream ended")
            try:
                self._recv(deadline)
            except TimeoutError:
                return []
            self._dechunk()

    def next_event(self, timeout=DEFAULT_TIMEOUT):
        """The next event not yet returned by next_event()."""
        deadline = time.monotonic() + timeout
        while self._cursor >= len(self.events):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no event within %.1fs" % timeout)
            self.poll(left)
        ev = self.events[self._cursor]
        self._cursor += 1
        return ev

    def feed(self, data):
        """Bytes read from self.sock by someone else (a selector loop):
        de-chunk and parse them; return the new events."""
        self.bytes_in += len(data)
        self.raw += data
        self._dechunk()
        return self._parse()

    def discard_events(self):
        """Forget the events parsed so far (a long reader's memory)."""
        self.events.clear()
        self._cursor = 0

    def read_until(self, pred, timeout=DEFAULT_TIMEOUT):
        """Read events until pred(event) is true; return that event."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("condition not met within %.1fs; last "
                                   "events: %r" % (timeout, self.events[-5:]))
            ev = self.next_event(left)
            if pred(ev):
                return ev

    def read_to_end(self, timeout=DEFAULT_TIMEOUT):
        """Read until the response ends; return all events."""
        deadline = time.monotonic() + timeout
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("stream did not end within %.1fs"
                                       % timeout)
                self.poll(left)
        except StreamEnded:
            pass
        return self.events

    def close(self, abort=False):
        """Close the socket; abort=True sends a RST (SO_LINGER 0)."""
        if self.sock is None:
            return
        if abort:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                 struct.pack("ii", 1, 0))
        self.sock.close()
        self.sock = None

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()


class Transcript:
    """Output bytes of one viewer indexed by stream position.

    feed() takes events in order; it checks that each output event starts
    where the previous one ended (after a gap: at the gap's id), so a
    transcript is a proof of "no byte twice, none missing".
    """

    def __init__(self):
        self.start = None       # position of the first byte held
        self.end = None         # position after the last byte held
        self.data = bytearray()
        self.gaps = []
        self.closed = None      # terminal_closed event, if seen
        self.other = []
        self.inexact = False

    def feed(self, ev):
        if ev.name == "output":
            b = ev.payload
            begin = ev.id - len(b)
            if "text" in ev.data and "\ufffd" in ev.data["text"]:
                # Replaced invalid bytes: the text no longer tells how
                # many bytes the event carried, so positions after this
                # are approximate.
                self.inexact = True
                begin = self.end if self.end is not None else begin
            if self.end is None:
                self.start = begin
            elif begin != self.end:
                raise AssertionError(
                    "output event %r starts at %d, expected %d (previous "
                    "end)" % (ev, begin, self.end))
            self.end = ev.id
            self.data += b
        elif ev.name == "gap":
            self.gaps.append(ev)
            if self.end is None:
                self.start = ev.id
            self.end = ev.id
            self.data.clear()
            self.start = ev.id
        elif ev.name == "terminal_closed":
            self.closed = ev
        else:
            self.other.append(ev)

    def slice(self, begin, end):
        """Bytes between absolute positions begin and end."""
        assert self.start <= begin <= end <= self.end, \
            (self.start, begin, end, self.end)
        return bytes(self.data[begin - self.start:end - self.start])

    def text(self):
        return self.data.decode("utf-8", "replace")


def read_output_until(stream, needle, transcript=None,
                      timeout=DEFAULT_TIMEOUT):
    """Feed events into a transcript until needle (bytes or str) appears in
    the output bytes; return the transcript."""
    if isinstance(needle, str):
        needle = needle.encode("utf-8")
    tr = transcript if transcript is not None else Transcript()
    deadline = time.monotonic() + timeout
    # Search only bytes not searched yet (plus an overlap), so reading
    # megabytes stays linear.
    searched = 0
    while tr.data.find(needle, searched) < 0:
        searched = max(0, len(tr.data) - len(needle) + 1)
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("%r not seen within %.1fs; output tail: %r"
                               % (needle, timeout, bytes(tr.data[-400:])))
        try:
            ev = stream.next_event(left)
        except StreamEnded:
            raise AssertionError("stream ended before %r; output tail: %r"
                                 % (needle, bytes(tr.data[-400:])))
        tr.feed(ev)
        if ev.name == "gap":
            searched = 0
        if ev.name in ("terminal_closed", "terminal_error") and \
                tr.data.find(needle, searched) < 0:
            raise AssertionError("%s before %r; output tail: %r"
                                 % (ev, needle, bytes(tr.data[-400:])))
    return tr


def fcgi_connections(client, how):
    """ptyd.fcgi's count of requests taken on connections accepted for
    them (how="accepted"), or kept from an earlier request ("kept"),
    read from the metrics."""
    r = client.get("metrics")
    assert r.status == 200, r
    want = 'ptyd_fcgi_connections_total{how="%s"} ' % how
    for line in r.body.decode().splitlines():
        if line.startswith(want):
            return float(line.split()[1])
    raise AssertionError("no %s in the metrics" % want.strip())


def read_to_eof(sock):
    """Every byte the peer sends until it closes (the socket's timeout
    bounds each wait)."""
    data = b""
    while True:
        d = sock.recv(65536)
        if not d:
            return data
        data += d


def raw_status(port, method, path, headers, body=b"",
               timeout=DEFAULT_TIMEOUT):
    """One HTTP/1.1 request with exactly these header lines, repeats and
    odd names kept, in order (http.client would merge or refuse some);
    the response's status."""
    lines = ["%s %s HTTP/1.1" % (method, path), "Host: 127.0.0.1:%d" % port,
             "Connection: close"]
    lines += ["%s: %s" % h for h in headers]
    if body:
        lines.append("Content-Length: %d" % len(body))
    with socket.create_connection(("127.0.0.1", port), timeout) as s:
        s.settimeout(timeout)
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        data = read_to_eof(s)
    return int(data.split(None, 2)[1])


def marker(tag=None):
    """(command, expected): a shell line whose output differs from its
    echo, so seeing `expected` proves the shell ran it.  The command ends
    with CR, as a terminal's Enter key sends."""
    tag = tag or "mk" + secrets.token_hex(4)
    return "echo %s-$((6*7))xyz\r" % tag, "%s-42xyz" % tag


class Shell:
    """A terminal driven like a user: one attached viewer, commands typed
    with input POSTs, output read until a marker that only the shell's
    expansion can produce."""

    def __init__(self, client, sid, encoding=None):
        self.c = client
        self.sid = sid
        self.s = client.stream(sid, encoding=encoding)
        if self.s.status != 200:
            raise AssertionError("stream answered %d %r"
                                 % (self.s.status, self.s.body))
        self.tr = Transcript()

    def send(self, data):
        r = self.c.input(self.sid, data)
        if r.status != 200:
            raise AssertionError("input answered %r" % (r,))

    def run(self, cmd, timeout=DEFAULT_TIMEOUT):
        """Type cmd, return the bytes it printed (between two markers)."""
        tag = secrets.token_hex(4)
        begin = ("B%s-2" % tag).encode()
        end = ("E%s-2" % tag).encode()
        self.send("echo B%s-$((1+1)); %s; echo E%s-$((1+1))\r"
                  % (tag, cmd, tag))
        read_output_until(self.s, end, self.tr, timeout)
        data = bytes(self.tr.data)
        i = data.rindex(begin) + len(begin)
        j = data.rindex(end)
        return data[i:j].strip(b"\r\n")

    def settled_count(self, text):
        """How many times text is in the output once everything typed so
        far has run: two round trips through the shell after a pause."""
        self.run("true")
        time.sleep(0.3)
        self.run("true")
        return bytes(self.tr.data).count(text.encode())

    def close(self):
        self.s.close()

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()
