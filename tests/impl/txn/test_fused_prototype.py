"""The fused AddPartitions prototype (benchmarks/fused_txn_op.py, issue 31's measurement, not wired into the server)
does exactly what today's generic path does: the differential check passes and takes every fused row, and it fails
for a fused path that differs in an answer, a trace row, the state installed, or the record written."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from kcoord.impl.errors import IllegalStateError


def _load() -> ModuleType:
    path = Path(__file__).resolve().parents[3] / "benchmarks" / "fused_txn_op.py"
    spec = importlib.util.spec_from_file_location("fused_txn_op", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fused_txn_op"] = module
    spec.loader.exec_module(module)
    return module


F = _load()


def test_fused_path_matches_the_generic_path() -> None:
    seen = F.differential(ops=400)
    for row in (12, 13, 14, 16, 19):  # every (Ongoing, AddPartitions) row was answered by the fused path
        assert seen[f"fused row {row}"] > 0, seen
    for error in ("NONE", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH", "INVALID_PRODUCER_ID_MAPPING",
                  "CONCURRENT_TRANSACTIONS"):
        assert seen[error] > 0, seen


class WrongAnswer(F.FusedCoordinator):  # type: ignore[name-defined,misc]
    def _reject(self, shard: Any, key: Any, s: Any, row: int, *rest: Any) -> Any:
        return super()._reject(shard, key, s, 12 if row == 13 else row, *rest)


class NoTrace(F.FusedCoordinator):  # type: ignore[name-defined,misc]
    """Counts the trace sequence but emits no row."""

    def _trace(self, shard: Any, key: Any, *args: Any) -> None:
        shard.next_seq("Transaction", key)


class WrongState(F.FusedCoordinator):  # type: ignore[name-defined,misc]
    """Installs another timestamp than it wrote (without the record check only the state compared tells)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.check_records = False

    def _install(self, shard: Any, key: Any, pre: Any, post: Any, record: Any, trace_args: Any) -> None:
        post = {**post, "txn_last_update_timestamp_ms": post["txn_last_update_timestamp_ms"] + 1}
        super()._install(shard, key, pre, post, record, trace_args)


class WrongRecord(F.FusedCoordinator):  # type: ignore[name-defined,misc]
    """The record says another timestamp; without the record check only the log bytes tell."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.check_records = False
        self.codec = _OtherTimestamp(self.codec)  # the fused path's codec only (the generic fallback keeps its own)


class _OtherTimestamp:
    def __init__(self, codec: Any) -> None:
        self.codec = codec

    def __getattr__(self, name: str) -> Any:
        return getattr(self.codec, name)

    def encode(self, post: dict[str, Any]) -> bytes:
        return bytes(self.codec.encode({**post, "txn_last_update_timestamp_ms": 7}))


class WrongRecordChecked(WrongRecord):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.check_records = True


@pytest.mark.parametrize(("mutant", "error", "message"), [
    (WrongAnswer, AssertionError, "generic"),
    (NoTrace, AssertionError, "trace rows differ"),
    (WrongState, AssertionError, "in-memory state differs"),
    (WrongRecord, AssertionError, "log bytes differ"),
    (WrongRecordChecked, IllegalStateError, "the record does not describe"),
])
def test_the_differential_check_catches_a_different_fused_path(mutant: type, error: type[Exception],
                                                                message: str) -> None:
    with pytest.raises(error, match=message):
        F.differential(ops=400, fused=mutant)
