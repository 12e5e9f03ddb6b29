"""The simulator: deterministic from the seed (in one process and across processes with different hash seeds), the
summary agrees with the files, every fault fires and is switchable, the workload reaches what it is for (rotation of
veteran producer ids, fenced zombies, rebalances of both group kinds, committed and aborted transactions)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kcoord.impl.errors import IllegalStateError
from kcoord.impl.runtime.clock import ManualClock
from kcoord.impl.sim import FAULTS, SimConfig, parse_faults, simulate
from kcoord.impl.sim.config import DEFAULT_FAULT_INTERVAL_MS
from kcoord.impl.sim.scheduler import Scheduler

ROOT = Path(__file__).resolve().parents[3]


def digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def rows(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for p in sorted(folder.rglob("*.jsonl")) for line in p.read_text().splitlines()]


def run(tmp_path: Path, name: str, **kw: Any) -> tuple[Any, Path]:
    out = tmp_path / name / "traces"
    summary = simulate(SimConfig(**kw), out, tmp_path / name / "data")
    return summary, out


# ---------------------------------------------------------------- the scheduler


def test_scheduler_runs_by_time_then_in_scheduling_order() -> None:
    clock = ManualClock(100)
    s = Scheduler(clock)
    seen: list[str] = []
    s.after(5, lambda: seen.append("b"))
    s.after(0, lambda: seen.append("a"))
    s.after(5, lambda: seen.append("c"))
    s.after(0, lambda: s.after(0, lambda: seen.append("a2")))  # scheduled for now while running: runs this step
    assert s.run_due() == 3 and seen == ["a", "a2"]
    assert s.next_time_ms() == 105
    clock.advance(5)
    s.run_due()
    assert seen == ["a", "a2", "b", "c"] and len(s) == 0


def test_scheduler_is_bounded() -> None:
    s = Scheduler(ManualClock(0), max_pending=2)
    s.after(1, lambda: None)
    s.after(1, lambda: None)
    with pytest.raises(IllegalStateError, match="more than 2"):
        s.after(1, lambda: None)


def test_fault_names_parse() -> None:
    assert parse_faults("all") == frozenset(FAULTS)
    assert parse_faults("none") == frozenset()
    assert parse_faults("client-crash, clock_jump") == {"client_crash", "clock_jump"}
    with pytest.raises(ValueError, match=r"unknown fault.*disk_full"):
        parse_faults("client_crash,disk_full")


# ---------------------------------------------------------------- determinism


def test_same_seed_same_bytes_different_seed_different_bytes(tmp_path: Path) -> None:
    first, a = run(tmp_path, "a", seed=11, events=1_500)
    second, b = run(tmp_path, "b", seed=11, events=1_500)
    _, c = run(tmp_path, "c", seed=12, events=1_500)
    assert digest(a) == digest(b) and digest(a)
    assert first.as_dict() | {"trace_dir": None} == second.as_dict() | {"trace_dir": None}
    assert digest(a) != digest(c)


def _cli(out: Path, hash_seed: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    return subprocess.run([str(Path(sys.executable).parent / "kcoord"), "simulate", "--seed", "5", "--events", "1200",
                           "--out", str(out)], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)


@pytest.mark.slow
def test_the_cli_prints_the_seed_first_and_is_byte_identical_across_processes(tmp_path: Path) -> None:
    """Different string-hash seeds (set iteration orders) must not change a single byte of the traces."""
    one, two = _cli(tmp_path / "one", "1"), _cli(tmp_path / "two", "2")
    assert one.returncode == 0, one.stderr
    assert two.returncode == 0, two.stderr
    assert one.stdout.splitlines()[0] == "seed 5"
    assert digest(tmp_path / "one") == digest(tmp_path / "two")


# ---------------------------------------------------------------- what a run contains


def test_summary_matches_the_files_and_every_fault_fires(tmp_path: Path) -> None:
    intervals = {**DEFAULT_FAULT_INTERVAL_MS, "client_crash": 800}
    summary, out = run(tmp_path, "all", seed=3, events=4_000, zombie_share=1.0, fault_interval_ms=intervals)
    written = rows(out)
    per_machine = Counter(r["machine"] for r in written)
    assert dict(per_machine) == summary.rows and summary.events == len(written) >= 4_000
    assert set(summary.rows) == {"Transaction", "PartitionProducer", "ClassicGroup", "ConsumerGroup",
                                 "ConsumerGroupMember"}
    assert set(summary.faults) == set(FAULTS), summary.faults
    completes = Counter(r["to_state"] for r in written if r["event"] == "CompleteTxn" and r["kind"] == "transition")
    assert completes["CompleteCommit"] == summary.committed > 0 and completes["CompleteAbort"] == summary.aborted > 0
    assert summary.rebalances > 0
    assert len({r["node"] for r in written}) >= 2  # coordinators on several nodes


def test_no_faults_means_none_injected(tmp_path: Path) -> None:
    summary, out = run(tmp_path, "none", seed=3, events=1_500, faults=frozenset())
    assert summary.faults == {}
    written = rows(out)
    assert not [r for r in written if r["event"] == "FenceFailed"]
    epochs: dict[str, set[int]] = {}
    for r in written:
        epochs.setdefault(r["key"], set()).add(r["coordinator_epoch"])
    assert all(len(e) == 1 for e in epochs.values())  # no failover: every key keeps its coordinator epoch


def test_zombies_are_fenced(tmp_path: Path) -> None:
    summary, out = run(tmp_path, "zombie", seed=4, events=3_000, producers=4, classic_consumers=0, consumers=0,
                       streams=0, veterans=0, faults=frozenset({"client_crash", "zombie_producer"}),
                       fault_interval_ms={"client_crash": 500}, zombie_share=1.0)
    assert summary.faults["zombie_producer"] > 0 and summary.clients["zombie_requests"] > 0
    written = rows(out)
    fences = [r for r in written if r["machine"] == "Transaction" and r["to_state"] == "PrepareEpochFence"]
    fenced_errors = ("PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH")
    refused = [r for r in written if r["kind"] == "reject" and r["error"] in fenced_errors]
    assert fences and refused


def test_veterans_rotate_their_producer_id(tmp_path: Path) -> None:
    _, out = run(tmp_path, "veteran", seed=2, events=800, producers=0, classic_consumers=0, consumers=0, streams=0,
                 veterans=1, faults=frozenset())
    mine = [r for r in rows(out) if r["machine"] == "Transaction" and r["key"] == "veteran-0"]
    assert mine[0]["kind"] == "load" and mine[0]["producer_epoch"] == 32_762
    rotated = [r for r in mine if r["event"] == "CompleteTxn" and r["producer_epoch"] == 0]
    assert rotated and rotated[0]["producer_id"] != mine[0]["producer_id"]
    assert max(r["producer_epoch"] for r in mine) == 32_767  # the last transaction of the old id


# ---------------------------------------------------------------- the command line


def test_cli_usage_errors_and_the_bug_list(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from kcoord.cli import _register, app
    from kcoord.cmd_simulate import parse_clients

    _register()  # every command, so that `simulate` is a subcommand (typer runs a lone command without its name)

    assert parse_clients("producers=8, streams=0") == {"producers": 8, "streams": 0}
    with pytest.raises(ValueError, match="unknown client kind 'brokers'"):
        parse_clients("brokers=3")
    runner = CliRunner()
    listed = runner.invoke(app, ["simulate", "--list-bugs"])
    assert listed.exit_code == 0 and "KAFKA-9666" in listed.output and "--bug KAFKA-16147" in listed.output
    bad = runner.invoke(app, ["simulate", "--faults", "client_crash,meteor", "--out", str(tmp_path / "t")])
    assert bad.exit_code == 2 and "meteor" in bad.output
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("old run")
    busy = runner.invoke(app, ["simulate", "--out", str(tmp_path / "full")])
    assert busy.exit_code == 2 and "not an empty folder" in busy.output
    ok = runner.invoke(app, ["simulate", "--seed", "8", "--events", "300", "--clients", "producers=1,classic=0,"
                             "consumers=0,streams=0,veterans=0", "--faults", "none", "--format", "parquet",
                             "--out", str(tmp_path / "run")])
    assert ok.exit_code == 0, ok.output
    assert ok.output.splitlines()[0] == "seed 8"
    assert sorted(p.parent.name for p in (tmp_path / "run").rglob("*.parquet")) == ["PartitionProducer", "Transaction"]
