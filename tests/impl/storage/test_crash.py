"""Crash safety: SIGKILL a child process appending in a loop, reopen, and check every acknowledged record survived.

The child acknowledges (prints) an offset only once the log says it is durable; after each kill the parent reopens
the same directory, checks offsets 0..end-1 are all present with the value written for them, and that no
acknowledged offset is missing. The next child continues appending where recovery says the log ends.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kcoord.impl.storage.log import PartitionLog

CHILD = r"""
import sys
from kcoord.impl.storage.log import Durability, PartitionLog

path, mode = sys.argv[1], sys.argv[2]
durability = Durability.per_batch() if mode == "per_batch" else Durability.group(max_delay_ms=0, max_bytes=1 << 20)
log = PartitionLog.open(path, segment_bytes=4096, durability=durability, clock_ms=lambda: 0)
offset = log.log_end_offset
print("ready", offset, flush=True)
while True:
    for _ in range(1 if mode == "per_batch" else 3):
        info = log.append([(b"k%d" % (offset % 37), b"v%d" % offset)], timestamp_ms=offset)
        assert info.base_offset == offset, (info, offset)
        offset += 1
    if mode == "group":
        assert log.flush_if_due(0)
    sys.stdout.write("%d\n" % (log.durable_offset - 1))
    sys.stdout.flush()
"""


def _crash_loop(directory: Path, mode: str, iterations: int, seed: int) -> None:
    rng = random.Random(seed)
    print(f"crash loop seed={seed} mode={mode}")
    acked_max = -1
    for _ in range(iterations):
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(directory), mode], stdout=subprocess.PIPE,
                                 text=True)
        assert child.stdout is not None
        ready = child.stdout.readline().split()
        assert ready == ["ready", str(acked_max + 1)]  # the child appends where the last recovery ended
        time.sleep(rng.uniform(0.0, 0.06))
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        acked = [int(line) for line in child.stdout.read().split()]
        child.stdout.close()
        acked_max = max([acked_max, *acked])
        with PartitionLog.open(directory, segment_bytes=4096) as log:
            records = [(r.offset, r.value) for b in log.read() for r in b.records]
            assert records == [(o, b"v%d" % o) for o in range(log.log_end_offset)]
            assert log.log_end_offset > acked_max  # nothing acknowledged was lost
            acked_max = log.log_end_offset - 1  # unacknowledged but durable records are part of the log now


@pytest.mark.parametrize("mode", ["per_batch", "group"])
def test_sigkill_during_appends_loses_nothing_acknowledged(tmp_path: Path, mode: str) -> None:
    _crash_loop(tmp_path / "__consumer_offsets-0", mode, iterations=3, seed=7)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["per_batch", "group"])
def test_sigkill_during_appends_many_times(tmp_path: Path, mode: str) -> None:
    seed = random.SystemRandom().randrange(1 << 32)
    _crash_loop(tmp_path / "__consumer_offsets-0", mode, iterations=50, seed=seed)
