"""`reap.oldest_child`: how the runner finds a test process whose fork server died before naming it."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import os, subprocess, sys, time
from coderl.sandbox import reap
first = subprocess.Popen(["sleep", "30"])
time.sleep(0.05)
later = subprocess.Popen(["sleep", "30"])
exited = subprocess.Popen(["true"])
os.waitid(os.P_PID, exited.pid, os.WEXITED | os.WNOWAIT)  # until it is a zombie (not reaped), newer than both
print(reap.oldest_child() == first.pid, reap.oldest_child(spare=frozenset({first.pid})) == later.pid,
      reap.oldest_child(spare=frozenset({first.pid, later.pid})) == exited.pid)
for p in (first, later):
    p.kill()
    p.wait()
exited.wait()
print(reap.oldest_child())
"""


def test_oldest_child_is_the_first_forked_of_the_live_and_dead_children():
    # A process of its own: the test process has children of its own (the engine's slots).
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=30, check=True)
    assert out.stdout.split() == ["True", "True", "True", "None"]
