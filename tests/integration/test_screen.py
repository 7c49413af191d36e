"""test_screen.py -- attach=screen through the real stack (DESIGN 3): a
viewer without a usable resume position gets one `screen` event that, fed
to a terminal emulator (pyte), shows what a viewer that watched from the
start shows; terminal queries in the backlog are not in it; replay=raw
(and no parameter) still replays the backlog byte for byte; Last-Event-ID
still resumes exactly; an id older than the ring gives gap then screen; a
resize is reflected.
"""

import time

import pytest

from ptyd_http import Transcript, read_output_until
from ptyd_stack import wait_for

pyte = pytest.importorskip("pyte", reason="python3-pyte (scripts/setup)")

ROWS, COLS = 24, 80
SCREEN = {"attach": "screen"}


class Screen(pyte.Screen):
    """pyte 0.8 takes vim's CSI > 4;2 m (modifyOtherKeys) for SGR and
    fails on it; a terminal ignores it."""

    def select_graphic_rendition(self, *attrs, private=False):
        if not private:
            super().select_graphic_rendition(*attrs)


def render(data, rows=ROWS, cols=COLS):
    scr = Screen(cols, rows)
    pyte.ByteStream(scr).feed(bytes(data))
    return scr


def cells(scr):
    return [[(c.data, c.fg, c.bg, c.bold, c.italics, c.underscore,
              c.reverse, c.strikethrough)
             for c in (scr.buffer[y][x] for x in range(scr.columns))]
            for y in range(scr.lines)]


def assert_same_screen(a, b, attrs=True):
    assert a.display == b.display, "\n%s\n---\n%s" % (
        "\n".join(a.display), "\n".join(b.display))
    assert (a.cursor.x, a.cursor.y) == (b.cursor.x, b.cursor.y)
    assert a.cursor.hidden == b.cursor.hidden
    if attrs:
        assert cells(a) == cells(b)


def first_event(s, timeout=10):
    ev = s.next_event(timeout)
    assert ev.name != "terminal_error", ev
    return ev


def quiet(sh_stream, tr, secs=0.4, timeout=10):
    """Read the watcher until the terminal has been silent for secs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            ev = sh_stream.next_event(secs)
        except TimeoutError:
            return
        tr.feed(ev)
    raise AssertionError("terminal never went quiet")


class Watcher:
    """A raw viewer attached before the shell's first byte."""

    def __init__(self, c, sid):
        self.c = c
        self.sid = sid
        self.s = c.stream(sid, encoding="base64")
        assert self.s.status == 200, self.s.body
        self.tr = Transcript()

    def type(self, text, until, timeout=20):
        r = self.c.input(self.sid, text)
        assert r.status == 200, r
        read_output_until(self.s, until, self.tr, timeout)

    def upto(self, pos, timeout=10):
        """The watcher's bytes from the start to pos."""
        deadline = time.monotonic() + timeout
        while self.tr.end < pos:
            self.tr.feed(self.s.next_event(deadline - time.monotonic()))
        return self.tr.slice(self.tr.start, pos)


@pytest.fixture
def watched(stack, term):
    def make(**kw):
        sid, _ = term(rows=kw.get("rows", ROWS), cols=kw.get("cols", COLS))
        return sid, Watcher(stack.client(), sid)
    yield make


def screen_of(c, sid, **kw):
    s = c.stream(sid, query=SCREEN, **kw)
    assert s.status == 200, s.body
    ev = first_event(s)
    assert ev.name == "screen", ev
    d = ev.data
    return s, ev, d["text"].encode("utf-8"), d["rows"], d["cols"]


FULLSCREEN = (
    r"printf '\033[?1049h\033[2J\033[H\033[1;31mRED\033[0m "
    r"\033[4;32munder\033[0m\033[5;10H\033[42;30mgreen bg  \033[0m"
    r"\033[7;3H\346\227\245\346\234\254 wide \033[38;5;200mX\033[0m"
    r"\033[9;70H\033[7mrev\033[0m\033[12;1HM%sREADY"
    r"\033[?1h\033[?2004h\033[?1000h\033[?1006h\033[3;4H\033[?25l'"
    r" $((6*7)); read x" "\r")


def test_scripted_fullscreen_program_attaches_as_the_watcher_sees_it(
        stack, watched):
    sid, w = watched()
    w.type("echo primary-$((1+1))\r", b"primary-2")
    w.type(FULLSCREEN, b"M42READY")
    quiet(w.s, w.tr)
    s, ev, text, rows, cols = screen_of(stack.client(), sid)
    assert (rows, cols) == (ROWS, COLS)
    assert_same_screen(render(w.upto(ev.id)), render(text))
    # The modes the program set, which no cell shows.
    for mode in (b"\x1b[?1h", b"\x1b[?2004h", b"\x1b[?1000h",
                 b"\x1b[?1006h", b"\x1b[?25l", b"\x1b[?1049h"):
        assert mode in text, mode
    # Live output follows from the screen's position.
    w.c.input(sid, "\recho live-$((1+1))\r")
    tr = Transcript()
    tr.end = tr.start = ev.id
    read_output_until(s, "live-2", tr, 10)
    s.close()


def test_vim_attaches_mid_session(stack, watched):
    sid, w = watched()
    w.type("printf 'alpha%s\\nbeta\\n' $((40+2)) > /tmp/ptyd-screen-$$.txt;"
           " echo made-$((1+1))\r", b"made-2")
    w.type("exec vi -u NONE -i NONE -n /tmp/ptyd-screen-$$.txt\r",
           b"alpha42")
    quiet(w.s, w.tr, 0.8)
    s, ev, text, rows, cols = screen_of(stack.client(), sid)
    s.close()
    want = render(w.upto(ev.id))
    assert any("alpha42" in ln for ln in want.display)
    # vim asks the terminal things (t_RV and others): never replayed.
    assert b"\x1b[>c" not in text and b"\x1b[6n" not in text
    assert b"\x1b[?1049h" in text
    assert_same_screen(want, render(text), attrs=False)


QUERIES = (b"\x1b[c", b"\x1b[>c", b"\x1b[6n", b"\x1b]10;?")


def test_queries_in_the_backlog_are_not_in_the_screen(stack, watched):
    sid, w = watched()
    w.type(r"printf '\033[c\033[>c\033[6n\033]10;?\007'; echo Q$((6*7))"
           "\r", b"Q42")
    c = stack.client()
    s, ev, text, _, _ = screen_of(c, sid)
    s.close()
    for q in QUERIES:
        assert q not in text, q
    # They are in the backlog: replay=raw still has them.
    raw = c.stream(sid, query={"replay": "raw"}, encoding="base64")
    tr = read_output_until(raw, b"Q42", Transcript())
    raw.close()
    for q in QUERIES:
        assert q in tr.data, q


def test_raw_replay_is_byte_exact_with_or_without_the_parameter(
        stack, watched):
    sid, w = watched()
    w.type("seq 1 3000; printf '\\303\\251t\\303\\251 %s\\n' $((6*7))\r",
           "été 42".encode())
    c = stack.client()
    for q in ({"replay": "raw"}, {"attach": "raw"}, None):
        r = c.stream(sid, query=q, encoding="base64")
        tr = Transcript()
        while tr.end is None or tr.end < w.tr.end:
            ev = r.next_event(10)
            assert ev.name == "output", (q, ev)
            tr.feed(ev)
        r.close()
        assert tr.start == w.tr.start
        assert bytes(tr.data[:len(w.tr.data)]) == bytes(w.tr.data), q


def test_last_event_id_resumes_exactly_even_with_attach_screen(
        stack, watched):
    sid, w = watched()
    w.type("seq 1 2000; echo R$((6*7))\r", b"R42")
    ids = [e.id for e in w.s.events if e.name == "output"]
    mid = ids[len(ids) // 2]
    c = stack.client()
    for how in ("header", "query"):
        if how == "header":
            r = c.stream(sid, query=SCREEN, last_event_id=mid,
                         encoding="base64")
        else:
            r = c.stream(sid, query=dict(SCREEN, last_event_id=mid),
                         encoding="base64")
        tr = Transcript()
        while tr.end is None or tr.end < w.tr.end:
            ev = r.next_event(10)
            assert ev.name == "output", ev
            tr.feed(ev)
        r.close()
        assert tr.start == mid
        w.upto(tr.end)  # the prompt may have come after R42
        assert bytes(tr.data) == w.tr.slice(mid, tr.end)


def test_large_scrollback_is_one_event_and_bounded(stack, watched):
    sid, w = watched()
    w.type("seq -f '%078g' 1 1500; echo L$((6*7))\r", b"L42")
    quiet(w.s, w.tr)
    s, ev, text, _, _ = screen_of(stack.client(), sid)
    s.close()
    assert len(text) > 32 * 1024  # several MSG_SCREEN pieces
    assert_same_screen(render(w.upto(ev.id)), render(text))
    lines = text.count(b"\r\n")
    assert 1000 <= lines <= 1000 + ROWS, lines
    assert b"%078d" % 1500 in text
    assert b"%078d" % 400 not in text  # older than the bound


def test_resize_is_reflected(stack, watched):
    sid, w = watched()
    w.type("echo a-$((1+1))\r", b"a-2")  # output at 24x80 first
    c = stack.client()
    assert c.resize(sid, rows=30, cols=100).status == 200
    w.type("stty size; echo Z$((6*7))\r", b"Z42")
    s, ev, text, rows, cols = screen_of(c, sid)
    s.close()
    assert (rows, cols) == (30, 100)
    shown = render(text, rows, cols).display
    assert any(ln.startswith("30 100") for ln in shown), shown


def test_screen_then_heartbeat_marks_the_end_of_replay(stack, watched):
    sid, w = watched()
    w.type("echo H$((6*7))\r", b"H42")
    quiet(w.s, w.tr)
    s = stack.client().stream(sid, query=dict(SCREEN, heartbeat="event"))
    assert first_event(s).name == "screen"
    # At once, not the 5 s heartbeat of a quiet stream.
    t0 = time.monotonic()
    assert first_event(s).name == "heartbeat"
    assert time.monotonic() - t0 < 2
    s.close()


def test_bad_attach_parameters_are_400(stack, watched):
    sid, _ = watched()
    c = stack.client()
    for q in ({"attach": "bogus"}, {"replay": "screen"},
              {"attach": "screen", "replay": "raw"}):
        r = c.stream(sid, query=q)
        assert r.status == 400, (q, r.status, r.body)
        r.close()


@pytest.fixture(scope="module")
def small_ring(make_stack):
    return make_stack("screen-ring", ptyd_args=["--ring-size", "8192"])


def test_too_old_id_gives_gap_then_screen(small_ring, new_sid):
    c = small_ring.client()
    sid = new_sid()
    assert c.start(sid, rows=ROWS, cols=COLS).status == 200
    try:
        w = Watcher(c, sid)
        w.type("seq 1 20000; echo G$((6*7))\r", b"G42")
        quiet(w.s, w.tr)
        first = min(e.id for e in w.s.events if e.id is not None)
        s = c.stream(sid, query=SCREEN, last_event_id=first)
        gap = first_event(s)
        assert gap.name == "gap" and gap.data["lost"] > 0, gap
        ev = first_event(s)
        assert ev.name == "screen", ev
        assert ev.id > gap.id
        shown = render(ev.data["text"].encode()).display
        assert any("G42" in ln for ln in shown), shown
        assert any("20000" in ln for ln in shown), shown
        s.close()
    finally:
        c.close_term(sid)


def test_a_program_older_than_the_ring_is_still_on_the_alternate_screen(
        small_ring, new_sid):
    """A full-screen program that came up before the ring's oldest byte:
    its switch to the alternate screen and its hidden cursor are no longer
    among the bytes the emulator is rebuilt from, and still hold."""
    c = small_ring.client()
    sid = new_sid()
    assert c.start(sid, rows=ROWS, cols=COLS).status == 200
    try:
        w = Watcher(c, sid)
        w.type(r"printf '\033[?1049h\033[?25l\033[2J'; awk 'BEGIN { for "
               r'(i = 0; i < 600; i++) printf "\033[H\033[2Kframe %d of a '
               r'full-screen program", i }'
               r"'; printf '\033[12;1HD%s' $((6*7)); read x" "\r", b"D42")
        quiet(w.s, w.tr)
        assert w.tr.start < small_ring_start(c, sid)
        s, ev, text, _, _ = screen_of(c, sid)
        s.close()
        assert b"\x1b[?1049h" in text and b"\x1b[?25l" in text, text
        normal, alt = text.split(b"\x1b[?1049h", 1)
        assert b"frame" not in normal, normal
        shown = render(text)
        assert shown.cursor.hidden
        assert shown.display[0].startswith("frame 599 "), shown.display
        assert shown.display[11].startswith("D42"), shown.display
    finally:
        c.close_term(sid)


def small_ring_start(c, sid):
    """The position of the oldest byte the ring still holds: where a
    raw replay starts."""
    r = c.stream(sid, query={"replay": "raw"}, encoding="base64")
    try:
        ev = r.next_event(10)
        assert ev.name == "output", ev
        return ev.id - len(ev.payload)
    finally:
        r.close()


# A screen no emulator is kept for, or one that would cost too much to
# draw, is the raw replay, and the stream says so first (issue 29): a
# `replay` event with the reason, its id where the raw bytes start.
def test_a_screen_too_big_for_an_emulator_says_replay_size(stack, watched):
    sid, w = watched(rows=300, cols=300)
    w.type("echo big-$((6*7))\r", b"big-42")
    with stack.client().stream(sid, query=SCREEN) as s:
        assert s.status == 200, s.body
        ev = first_event(s)
        assert ev.name == "replay", ev
        assert ev.data == {"reason": "size"}, ev
        assert int(ev.id) == w.tr.start, (ev.id, w.tr.start)
        read_output_until(s, b"big-42")


def decaln_file(tmp_path, n):
    """A file of n ESC # 8: every cell drawn per 3 bytes."""
    f = tmp_path / "decaln"
    f.write_bytes(b"\033#8" * n)
    f.chmod(0o644)
    tmp_path.chmod(0o755)
    return f


# The emulator's work is bounded a step at a time (issue 29): a viewer
# whose screen takes many steps waits for it, and gets it whole.
def test_a_screen_that_takes_many_steps_comes_whole(stack, watched,
                                                    tmp_path):
    sid, w = watched()
    f = decaln_file(tmp_path, 20000)   # 38 M units: about 150 steps
    w.type("cat %s; echo done-$((6*7))\r" % f, b"done-42", timeout=60)
    quiet(w.s, w.tr)
    with stack.client().stream(sid, query=SCREEN,
                               encoding="base64") as s:
        ev = first_event(s, timeout=30)
        assert ev.name == "screen", ev
        scr = render(ev.data["text"].encode("utf-8"))
        assert_same_screen(scr, render(w.upto(int(ev.id))), attrs=False)
        assert int(ev.id) == w.tr.end
        assert "EEEE" in "\n".join(scr.display)


# Past SCREEN_SYNC_WORK the viewer gets the screen as far as it was drawn,
# then the rest of the backlog as output, audited: its terminal ends up
# right, and nobody else waited.
def test_a_screen_that_would_cost_too_much_is_drawn_in_part(stack, watched,
                                                          tmp_path):
    sid, w = watched()
    f = decaln_file(tmp_path, 200000)  # 390 M units
    w.type("cat %s; echo done-$((6*7))\r" % f, b"done-42", timeout=60)
    c = stack.client()
    with c.stream(sid, query=SCREEN, encoding="base64") as s:
        assert s.status == 200, s.body
        ev = first_event(s, timeout=30)
        assert ev.name == "screen", ev
        assert int(ev.id) < w.tr.end
        tr = Transcript()
        read_output_until(s, b"done-42", tr, timeout=60)
        assert tr.start == int(ev.id), (tr.start, ev.id)
        assert b"\033#8" * 1000 in bytes(tr.data)
    wait_for(lambda: stack.db(
        "SELECT count(*) AS n FROM terminal_events WHERE kind = 'screen' "
        "AND session_id = ? AND detail LIKE '%the rest replayed'",
        (sid,))[0]["n"] == 1, 5, what="a screen event in the audit log")


# A terminal that ends while a viewer waits for its screen hands it out as
# it stands: the viewer still sees the end (terminal_closed), as a raw
# viewer does, even when ptyd is shutting down.
def test_a_viewer_waiting_for_the_screen_sees_its_terminal_end(
        stack, watched, tmp_path):
    sid, w = watched()
    f = decaln_file(tmp_path, 200000)
    w.type("cat %s; echo done-$((6*7))\r" % f, b"done-42", timeout=60)
    c = stack.client()
    with c.stream(sid, query=SCREEN, encoding="base64") as s:
        assert s.status == 200, s.body
        assert c.close_term(sid).status == 200
        names = []
        deadline = time.monotonic() + 30
        while "terminal_closed" not in names:
            names.append(s.next_event(deadline - time.monotonic()).name)
        assert names[0] == "screen", names[:3]

