"""Shared helpers for the storage tests: a manual clock and small-log builders."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kcoord.impl.storage.log import Durability, PartitionLog


@dataclass
class ManualClock:
    now_ms: int = 1_000_000

    def __call__(self) -> int:
        return self.now_ms

    def advance(self, ms: int) -> None:
        self.now_ms += ms


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / "__transaction_state-7"


@pytest.fixture
def small_log(log_dir: Path, clock: ManualClock) -> Iterator[PartitionLog]:
    log = PartitionLog.open(log_dir, segment_bytes=1024, durability=Durability.per_batch(), clock_ms=clock)
    yield log
    log.close()


def kv(i: int, key_space: int = 1_000_000) -> tuple[bytes, bytes]:
    """A deterministic record whose content encodes its append index."""
    return b"key-%d" % (i % key_space), b"value-%06d" % i
