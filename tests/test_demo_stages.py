"""The coordinator stages of `kcoord demo` run on real logs and report what they saw; a stage that returns True has
checked Kafka's outcome (fencing, read_committed, exclusive assignments, committed offsets) itself."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console

from kcoord.demo_coordinators import group_stage, txn_stage


def _console() -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, width=160), buffer


def _machines(traces: Path) -> set[str]:
    return {json.loads(line)["machine"] for p in traces.rglob("*.jsonl") for line in p.read_text().splitlines()}


def test_txn_stage_commits_aborts_and_fences(tmp_path: Path) -> None:
    out, buffer = _console()
    assert txn_stage(out, tmp_path) is True
    text = buffer.getvalue()
    assert "PRODUCER_FENCED" in text and "['etl-a-0', 'etl-c-2']" in text
    assert {"Transaction", "PartitionProducer"} <= _machines(tmp_path / "traces")
    assert any(p.name.startswith("__transaction_state-") for p in (tmp_path / "data").rglob("*") if p.is_dir())


def test_group_stage_rebalances_and_commits(tmp_path: Path) -> None:
    out, buffer = _console()
    assert group_stage(out, tmp_path) is True
    text = buffer.getvalue()
    assert "generation 2" in text and "'orders-5': 105" in text and "state=Stable members=2" in text
    assert {"ClassicGroup", "ConsumerGroup", "ConsumerGroupMember"} <= _machines(tmp_path / "traces")
