"""test_adversarial.py -- the adversarial run (tests/attack/attack.py) as
part of the suite: every attack it tries must be held.  The storm is run
with PTYD_TEST_SCALE x 1,000 stalled viewers (at least 200)."""

import os
import subprocess
import sys

import pytest

from ptyd_stack import REPO, scale

pytestmark = pytest.mark.deadline(300)


def test_every_attack_of_the_adversarial_run_is_held():
    r = subprocess.run([sys.executable,
                        os.path.join(REPO, "tests", "attack", "attack.py"),
                        "--viewers", str(scale(1000, 200))],
                       capture_output=True, timeout=280,
                       stdin=subprocess.DEVNULL)
    out = r.stdout.decode(errors="replace")
    print(out)
    assert r.returncode == 0, out + r.stderr.decode(errors="replace")[-2000:]
    assert "BROKEN" not in out and " held, 0 broken" in out, out
