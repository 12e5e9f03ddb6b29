"""`benchmarks.cpu_tree`: a process orphaned inside the measured tree (as Spark's Python workers are) is counted, and
the reaper leaves alone the children someone else waits for.

Each case runs in a child interpreter: a child subreaper collects orphans for the rest of its life, which pytest's own
process must not.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.cpu_tree import Cgroup

ROOT = Path(__file__).resolve().parents[2]

ORPHAN = r'''
import json, os, resource, sys, time
from benchmarks.cpu_tree import Cgroup, Reaper, adopt_orphans, tree_cpu_s

adopt_orphans()
cgroup = Cgroup(sys.argv[1])
before, kernel = tree_cpu_s(), cgroup.usage_s()
r, w = os.pipe()
child = os.fork()
if child == 0:
    parent = os.getpid()
    if os.fork() == 0:  # the grandchild: burns CPU once its parent has ended (an orphan, as a daemon's worker is)
        while os.getppid() == parent:
            time.sleep(0.01)
        while sum(resource.getrusage(resource.RUSAGE_SELF)[:2]) < 1.0:
            pass
        os.write(w, json.dumps([os.getpid(), sum(resource.getrusage(resource.RUSAGE_SELF)[:2])]).encode())
        os._exit(0)
    os._exit(0)
os.waitpid(child, 0)
reaper = Reaper(keep=set()).start()
os.close(w)
pid, burned = json.loads(os.read(r, 100))
deadline = time.monotonic() + 20
while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
    time.sleep(0.05)
reaper.stop()
counted = tree_cpu_s() - before
print(json.dumps({"burned": burned, "counted": counted, "reaped": reaper.reaped,
                  "kernel": None if kernel is None else cgroup.usage_s() - kernel}))
'''

KEPT = r'''
import json, subprocess, time
from benchmarks.cpu_tree import Reaper, adopt_orphans

adopt_orphans()
kept = subprocess.Popen(["sh", "-c", "exit 3"])
other = subprocess.Popen(["sh", "-c", "exit 0"])
reaper = Reaper(keep={kept.pid}, every_s=0.05).start()
time.sleep(1.0)
reaper.stop()
print(json.dumps({"code": kept.wait(), "reaped": reaper.reaped}))
'''


def _run(script: str, *args: str) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", script, *args], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_an_orphaned_grandchild_s_cpu_is_counted() -> None:
    """As the kernel counts it too, where a cpuacct cgroup can be made (the whole tree's, the interpreter's own
    work between the two readings included)."""
    name = f"kcoord-test-{os.getpid()}"
    try:
        found = _run(ORPHAN, name)
    finally:
        Cgroup.remove(name)
    assert found["burned"] >= 1.0
    assert found["reaped"] == 1, found  # it came to us, not to init
    assert found["counted"] >= found["burned"] - 0.05, found  # (ticks of 10 ms)
    if found["kernel"] is not None:
        assert abs(found["counted"] - found["kernel"]) <= 0.1, found


def test_the_reaper_leaves_kept_children_to_their_waiter() -> None:
    found = _run(KEPT)
    assert found == {"code": 3, "reaped": 1}, found
