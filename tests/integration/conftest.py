"""conftest.py -- fixtures for the integration suite.

Owns: the temp root (removed at the end), the shared default stack, the
factory for module stacks with special ptyd options, unique session ids
with automatic close, and a hard per-test deadline (SIGALRM) so no test
can hang the suite.  Does not own: the stack itself (ptyd_stack.py) or
HTTP (ptyd_http.py).

Environment:
  PTYD_BUILDDIR        where ptyd/ptyd, ptydctl/ptydctl, fcgi/ptyd.fcgi are
                       (default: the repository root)
  PTYD_TEST_PORT_BASE  first loopback port to use (default 18300; the
                       suite uses at most 200 ports from there)
  PTYD_TEST_SCALE      size factor of the long tests (default 1 = full
                       size: 1,100 streams, 100,000 POSTs; CI may pass 0.1)
  PTYD_TEST_KEEP       if set, keep the temp directories (logs, databases)

A failing test's report carries the tails of the logs of every stack that
was running (ptyd, ptyd.fcgi, nginx).
"""

import itertools
import os
import re
import secrets
import shutil
import signal
import tempfile

import pytest

import ptyd_stack
from ptyd_stack import Stack

DEFAULT_DEADLINE = 90


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if not rep.failed:
        return
    for st in ptyd_stack.running_stacks:
        text = []
        for name in ("ptyd", "fcgi", "nginx-error"):
            tail = st.log_tail(name, 20)
            if tail:
                text.append("--- %s.log\n%s" % (name, tail))
        if text:
            rep.sections.append(("logs of stack %s (%s)" % (st.name,
                                                           st.state),
                                 "\n".join(text)))


class DeadlineExceeded(Exception):
    pass


@pytest.fixture(autouse=True)
def _deadline(request):
    m = request.node.get_closest_marker("deadline")
    secs = m.args[0] if m else DEFAULT_DEADLINE

    def fire(signum, frame):
        raise DeadlineExceeded("test exceeded its %ds deadline" % secs)

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(secs)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture(scope="session")
def tmp_root():
    d = tempfile.mkdtemp(prefix="ptyd-itest-", dir="/tmp")
    yield d
    if not os.environ.get("PTYD_TEST_KEEP"):
        shutil.rmtree(d, ignore_errors=True)


class StackFactory:
    """Starts stacks and stops every one of them at the end of its scope."""

    def __init__(self, root):
        self.root = root
        self.stacks = []
        self.names = itertools.count()

    def __call__(self, name, **kw):
        st = Stack(self.root, "%s-%d" % (name, next(self.names)), **kw)
        self.stacks.append(st)
        return st.start()

    def close(self):
        # Every stack is stopped even if stopping one of them fails; the
        # first failure is reported after all are down.
        errors = []
        for st in reversed(self.stacks):
            try:
                st.cleanup()
            except Exception as e:
                errors.append("%s: %r" % (st.name, e))
        if errors:
            raise RuntimeError("stopping stacks failed: " + "; ".join(errors))


@pytest.fixture(scope="session")
def stack(tmp_root):
    """The shared stack with default ptyd options (plus the controlled
    shell) and a fake secret in the server's environment."""
    f = StackFactory(tmp_root)
    try:
        yield f("default", env=["PTYD_TEST_SECRET=s3cr3t"])
    finally:
        f.close()


@pytest.fixture(scope="module")
def make_stack(tmp_root):
    """Factory for module stacks: make_stack(name, ptyd_args=[...],
    users=[...], env=[...], fcgi_args=[...])."""
    f = StackFactory(tmp_root)
    try:
        yield f
    finally:
        f.close()


_sid_counter = itertools.count()


@pytest.fixture
def new_sid(request):
    """new_sid(prefix='') -> a session id unique in this run."""
    base = re.sub(r"[^A-Za-z0-9]", "", request.node.name)[:40]

    def make(prefix=""):
        return "%s%s-%d-%s" % (prefix, base, next(_sid_counter),
                               secrets.token_hex(3))
    return make


@pytest.fixture
def term(request, new_sid):
    """term(client=None, **start_fields) -> (sid, start JSON): starts a
    terminal on the default stack (or the client's stack) and closes it
    when the test ends, so the shared stack never fills its cap."""
    opened = []

    def start(client=None, **fields):
        c = client or request.getfixturevalue("stack").client()
        sid = fields.pop("sid", None) or new_sid()
        r = c.start(sid, **fields)
        assert r.status == 200, r
        opened.append((c, sid))
        return sid, r.json()

    yield start
    for c, sid in opened:
        try:
            c.close_term(sid)
        except Exception:
            pass
