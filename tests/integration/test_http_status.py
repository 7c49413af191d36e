"""test_http_status.py -- every status code of DESIGN section 2 through the
real nginx, on the shared default stack: 400, 403 (Host, CSRF), 404, 405,
413, 415, and the order in which they are checked.  The gate's 403 (which
needs a trusted proxy), 429 and 503 need special stacks: test_limits.py.
"""

import json

import pytest

JSON = {"Content-Type": "application/json"}


def assert_json_error(r, status, message=None):
    assert r.status == status, r
    ct = r.header("content-type", "")
    assert ct.startswith("application/json"), r
    assert r.header("cache-control") == "no-store", r
    body = r.json()
    assert set(body) == {"error"}, body
    assert isinstance(body["error"], str) and body["error"]
    if message is not None:
        assert body["error"] == message, body
    return body


# -- 400 ---------------------------------------------------------------------

@pytest.mark.parametrize("body", [
    b'{"session_id": ',
    b'{"session_id": "a",}',
    b'not json',
    b'',
    b'[1, 2]',
    b'"a string"',
])
def test_malformed_or_non_object_json_body_is_400(stack, body):
    r = stack.client().request("POST", "start", body, headers=JSON)
    assert_json_error(r, 400)


@pytest.mark.parametrize("sid", [
    5, None, True, ["a"], {"a": 1}, "", "a b", "a/b", "a\u00e9", "x" * 129,
    "semi;colon", "a\nb",
])
def test_invalid_session_id_is_400(stack, sid):
    c = stack.client()
    assert_json_error(c.post("start", {"session_id": sid}), 400)
    assert_json_error(c.post("input", {"session_id": sid, "data": "x"}), 400)


def test_missing_session_id_is_400_on_every_endpoint(stack):
    c = stack.client()
    for ep in ("start", "input", "resize", "close"):
        assert_json_error(c.post(ep, {"data": "x"}), 400)
    assert_json_error(c.get("output"), 400)


def test_session_id_of_128_allowed_characters_is_accepted(stack, term):
    sid = ("Az09._:-" * 16)[:128]
    assert len(sid) == 128
    _, j = term(sid=sid)
    assert j["session_id"] == sid
    assert sid in stack.client().terminals()


def test_session_id_in_query_must_match_body(stack, term, new_sid):
    c = stack.client()
    a, b = new_sid(), new_sid()
    r = c.post("start", {"session_id": a}, query={"session_id": b})
    assert_json_error(r, 400)
    assert a not in c.terminals() and b not in c.terminals()
    # Agreeing query and body is fine, and the query alone names it too.
    sid, _ = term()
    r = c.post("input", {"session_id": sid, "data": ""},
               query={"session_id": sid})
    assert r.status == 200, r
    r = c.post("input", {"session_id": sid, "data": "x"},
               query={"session_id": sid + "x"})
    assert_json_error(r, 400)
    r = c.post("resize", {"rows": 30}, query={"session_id": sid})
    assert r.status == 200, r


def test_invalid_session_id_in_output_query_is_400(stack):
    from ptyd_http import SSE
    with SSE(stack.port, "bad id!") as s:
        assert s.status == 400, (s.status, s.body)
        assert "error" in s.json()


@pytest.mark.parametrize("data", [5, True, ["x"], {"a": "b"}])
def test_input_data_of_wrong_type_is_400(stack, term, data):
    sid, _ = term()
    r = stack.client().post("input", {"session_id": sid, "data": data})
    assert_json_error(r, 400)


def test_input_data_missing_or_null_is_400_and_empty_is_200(stack, term):
    sid, _ = term()
    c = stack.client()
    assert_json_error(c.post("input", {"session_id": sid}), 400)
    assert_json_error(c.post("input", {"session_id": sid, "data": None}),
                      400)
    r = c.post("input", {"session_id": sid, "data": ""})
    assert r.status == 200 and r.json() == {"ok": True}, r


@pytest.mark.parametrize("field", ["rows", "cols"])
@pytest.mark.parametrize("value", ["30", True, False, 30.5, [30], {"n": 30}])
def test_non_integer_rows_or_cols_is_400_on_start_and_resize(
        stack, term, new_sid, field, value):
    c = stack.client()
    sid = new_sid()
    assert_json_error(c.post("start", {"session_id": sid, field: value}),
                      400)
    assert sid not in c.terminals()
    sid, _ = term()
    assert_json_error(c.post("resize", {"session_id": sid, field: value}),
                      400)


def test_integral_float_rows_and_cols_are_accepted(stack, term):
    sid, _ = term(rows=30.0, cols=100.0)
    c = stack.client()
    t = c.terminals()[sid]
    assert (t["rows"], t["cols"]) == (30, 100)
    assert c.post("resize", {"session_id": sid, "rows": 31.0,
                             "cols": 101.0}).status == 200
    t = c.terminals()[sid]
    assert (t["rows"], t["cols"]) == (31, 101)


# -- 403 Host and CSRF -------------------------------------------------------

def test_foreign_host_header_is_403(stack):
    c = stack.client(host="evil.example:%d" % stack.port)
    r = c.get("list")
    assert_json_error(r, 403)
    r = c.post("start", {"session_id": "rebind"})
    assert_json_error(r, 403)
    assert "rebind" not in stack.client().terminals()


@pytest.mark.parametrize("host", ["localhost:%d", "127.0.0.1:%d"])
def test_allowed_host_headers_pass(stack, host):
    c = stack.client(host=host % stack.port)
    assert c.get("list").status == 200


@pytest.mark.parametrize("hdrs", [
    {"Origin": "http://evil.example"},
    {"Origin": "http://127.0.0.1:1"},
    {"Origin": "https://127.0.0.1:%d"},
    {"Origin": "null"},
    {"Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "same-site"},
])
def test_cross_origin_post_is_403(stack, new_sid, hdrs):
    hdrs = {k: (v % stack.port if "%d" in v else v) for k, v in hdrs.items()}
    c = stack.client()
    sid = new_sid()
    r = c.post("start", {"session_id": sid}, headers=hdrs)
    assert_json_error(r, 403)
    assert sid not in c.terminals()


@pytest.mark.parametrize("hdrs", [
    {"Origin": "http://127.0.0.1:%d"},
    {"Sec-Fetch-Site": "same-origin"},
    {"Sec-Fetch-Site": "none"},
    {"Origin": "http://127.0.0.1:%d", "Sec-Fetch-Site": "same-origin"},
])
def test_same_origin_post_is_accepted(stack, term, hdrs):
    hdrs = {k: (v % stack.port if "%d" in v else v) for k, v in hdrs.items()}
    sid, _ = term()
    r = stack.client().post("input", {"session_id": sid, "data": ""},
                            headers=hdrs)
    assert r.status == 200, r


def test_forwarded_for_from_loopback_is_ignored_without_trust(stack):
    # DESIGN 6: forwarded headers count only with PTYD_TRUST_FORWARDED_FOR;
    # otherwise a loopback raw peer is local whatever it claims.
    c = stack.client()
    r = c.get("list", headers={"X-Forwarded-For": "8.8.8.8"})
    assert r.status == 200, r
    r = c.get("list", headers={"X-Real-IP": "8.8.8.8"})
    assert r.status == 200, r


# -- 404 ---------------------------------------------------------------------

def test_unknown_terminal_is_404_not_running(stack, new_sid):
    c = stack.client()
    sid = new_sid()
    assert_json_error(c.input(sid, "x"), 404, "terminal not running")
    assert_json_error(c.resize(sid, 30, 100), 404, "terminal not running")
    r = c.close_term(sid)
    assert r.status == 200 and r.json() == {"ok": True, "closed": False}, r
    from ptyd_http import SSE
    with SSE(stack.port, sid) as s:
        assert s.status == 404, (s.status, s.body)
        assert s.headers.get("content-type", "").startswith(
            "application/json")
        assert s.json() == {"error": "terminal not running"}


# -- 405 ---------------------------------------------------------------------

@pytest.mark.parametrize("method,endpoint", [
    ("GET", "start"), ("GET", "input"), ("GET", "resize"), ("GET", "close"),
    ("POST", "output"), ("POST", "list"), ("POST", "health"),
    ("PUT", "input"), ("DELETE", "close"), ("PATCH", "start"),
])
def test_wrong_method_is_405(stack, method, endpoint):
    body = {"session_id": "x"} if method != "GET" else None
    r = stack.client().request(method, endpoint, body)
    assert_json_error(r, 405)


def test_405_is_checked_before_host_and_csrf(stack):
    c = stack.client(host="evil.example:%d" % stack.port)
    assert c.request("GET", "start").status == 405
    c = stack.client()
    r = c.request("GET", "start", headers={"Origin": "http://evil.example"})
    assert r.status == 405, r


# -- 413 ---------------------------------------------------------------------

def test_body_over_64_kib_is_413(stack, term):
    sid, _ = term()
    body = json.dumps({"session_id": sid, "data": "a" * (70 * 1024)})
    r = stack.client().request("POST", "input", body, headers=JSON)
    assert r.status == 413, r


def test_input_of_8192_multibyte_characters_is_accepted(stack, term):
    sid, _ = term()
    c = stack.client()
    # 8192 code points of 3 and of 4 bytes each: counted as characters.
    assert c.input(sid, "\u20ac" * 8192).status == 200
    assert c.input(sid, "\U0001F600" * 8192).status == 200
    assert c.input(sid, "a" * 8192).status == 200


@pytest.mark.parametrize("data", ["\u20ac" * 8193, "a" * 8193,
                                  "\U0001F600" * 8193])
def test_input_of_8193_characters_is_413(stack, term, data):
    sid, _ = term()
    r = stack.client().input(sid, data)
    assert_json_error(r, 413, "input too large")


def test_413_is_checked_before_415(stack, term):
    sid, _ = term()
    body = json.dumps({"session_id": sid, "data": "a" * (70 * 1024)})
    r = stack.client().request("POST", "input", body,
                               headers={"Content-Type": "text/plain"})
    assert r.status == 413, r


# -- 415 ---------------------------------------------------------------------

@pytest.mark.parametrize("ctype", [None, "text/plain",
                                   "application/x-www-form-urlencoded",
                                   "multipart/form-data; boundary=x"])
def test_post_without_json_content_type_is_415(stack, new_sid, ctype):
    c = stack.client()
    sid = new_sid()
    hdrs = {"Content-Type": ctype} if ctype else {}
    r = c.request("POST", "start", json.dumps({"session_id": sid}).encode(),
                  headers=hdrs)
    assert_json_error(r, 415)
    assert sid not in c.terminals()


def test_json_content_type_with_parameters_is_accepted(stack, term, new_sid):
    c = stack.client()
    sid = new_sid()
    r = c.request("POST", "start", json.dumps({"session_id": sid}),
                  headers={"Content-Type": "application/json; charset=utf-8"})
    assert r.status == 200, r
    c.close_term(sid)


def test_415_is_checked_before_400(stack):
    r = stack.client().request("POST", "start", b"{not json",
                               headers={"Content-Type": "text/plain"})
    assert_json_error(r, 415)


def test_403_csrf_is_checked_before_415(stack):
    r = stack.client().request("POST", "start", b"{not json",
                               headers={"Content-Type": "text/plain",
                                        "Origin": "http://evil.example"})
    assert_json_error(r, 403)


def test_api_works_under_another_mount_point(stack, term):
    # ptyd.fcgi routes on the last path segment only; the demo config
    # mounts the same API under /sub/ as well.
    sid, _ = term()
    c = stack.client()
    r = c.request("GET", "/sub/api/terminal/list")
    assert r.status == 200, r
    assert sid in {t["session_id"] for t in r.json()["terminals"]}
    r = c.request("POST", "/sub/api/terminal/input",
                  {"session_id": sid, "data": ""})
    assert r.status == 200, r
