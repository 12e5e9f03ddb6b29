"""The record check (`Shard.check_records`), on and off.

`kcoord serve` runs without it unless `--check-records` (every in-process use, and the served tests, keep it on): the
live path then installs a post-state without decoding the record that describes it. What covers that: a load reads
every record back, so each state a transaction passes through must load as the live path installed it, and an encoder
that writes a wrong field is caught either way — by the live check when it is on, by that load comparison when off.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from kcoord.impl.errors import IllegalStateError
from kcoord.impl.txn.records import RecordCodec, persisted_view

from .harness import Harness

VERSION = 1  # the value version `TxnConfig`'s default server_txn_version writes


def _harness(tmp_path: Path, *, check_records: bool) -> Harness:
    h = Harness(tmp_path)
    h.coordinator.runtime.check_records = check_records  # before any shard exists: every shard takes it
    return h


@pytest.fixture
def unchecked(tmp_path: Path) -> Iterator[Harness]:
    h = _harness(tmp_path, check_records=False)
    yield h
    h.coordinator.shutdown()


def _reloaded(h: Harness, transactional_id: str) -> dict[str, Any]:
    partition = h.partition(transactional_id)
    h.coordinator.unload(partition)
    h.coordinator.load(partition)
    loaded = h.get(transactional_id)
    assert loaded is not None
    return persisted_view(loaded, VERSION)


def _each_state_loads_as_installed(h: Harness, transactional_id: str, result: str) -> list[str]:
    """Init, add partitions, end: after each step the live instance's persisted fields must be what a load of the
    log gives. Returns the states compared."""
    seen = []
    r = h.init(transactional_id)
    steps = [lambda: None, lambda: h.add(transactional_id, r.producer_id, r.producer_epoch),
             lambda: (h.end(transactional_id, r.producer_id, r.producer_epoch, result, 5), h.settle())]
    for step in steps:
        step()
        live = h.get(transactional_id)
        assert live is not None
        seen.append(live["state"])
        assert _reloaded(h, transactional_id) == persisted_view(live, VERSION), live["state"]
    return seen


def test_without_the_check_every_state_a_transaction_passes_loads_as_installed(unchecked: Harness) -> None:
    assert unchecked.shard("t-commit").check_records is False
    assert _each_state_loads_as_installed(unchecked, "t-commit", "COMMIT") == ["Empty", "Ongoing", "CompleteCommit"]
    assert _each_state_loads_as_installed(unchecked, "t-abort", "ABORT") == ["Empty", "Ongoing", "CompleteAbort"]


def _wrong_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """A broken encoder: every value written says a timeout one more than the state's."""
    encode = RecordCodec.encode

    def wrong(codec: RecordCodec, instance: Mapping[str, Any]) -> bytes:
        return encode(codec, {**instance, "txn_timeout_ms": instance["txn_timeout_ms"] + 1})

    monkeypatch.setattr(RecordCodec, "encode", wrong)


def test_a_wrong_encoding_fails_the_load_comparison_without_the_check(unchecked: Harness,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    _wrong_timeout(monkeypatch)
    with pytest.raises(AssertionError, match="Empty"):
        _each_state_loads_as_installed(unchecked, "t-bad", "COMMIT")


def test_a_wrong_encoding_fails_the_live_path_with_the_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    h = _harness(tmp_path, check_records=True)
    try:
        _wrong_timeout(monkeypatch)
        with pytest.raises(IllegalStateError, match="txn_timeout_ms"):
            h.init("t-bad")
    finally:
        h.coordinator.shutdown()
