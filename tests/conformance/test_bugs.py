"""Seeded bugs are caught: for each bug of the catalogue, a short simulation on its documented seed with the bug
switched on makes it fire, and the Python reference checker reports the expected check with a short witness; the
same seed with the fixed coordinators gives no violation at all.

The checker's API is used in one place (`reference_check`), so that a change to it touches one function.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from kcoord.conformance.bugs import BUGS, KnownBug, bug, enable
from kcoord.impl.cluster import ClusterConfig
from kcoord.impl.seeded import SeededBug
from kcoord.impl.sim import SimConfig, default_cluster_config, simulate

WITNESS_ROWS_MAX = 20


@dataclass(frozen=True, slots=True)
class Checked:
    violations: list[Any]
    quarantined: int


def reference_check(traces: Path, out: Path, machines: dict[str, Any] | None = None) -> Checked:
    """The adapter: what the Python reference checker finds in `traces` (bundled specs unless `machines`). It also
    checks them from spill files (at most 300 rows of a machine in memory, 7 buckets by key) and requires the same
    violations, witnesses included: the seeded bugs break the cross-key properties the spilled check maps and
    reduces."""
    from kcoord.conformance.traces.pycheck import Options, check_paths
    from kcoord.model.loader import bundled_machines

    machines = machines or bundled_machines()
    result = check_paths([str(traces)], machines, str(out))
    spilled = check_paths([str(traces)], machines, options=Options(max_rows_in_memory=300, buckets=7))
    assert spilled.spilled and spilled.violations == result.violations
    return Checked(result.violations, result.quarantine.total)


def witness_rows(violation: Any) -> int:
    data = json.loads(violation.witness_rows)
    return sum(len(segment["rows"]) for segment in data["segments"])


def run(b: KnownBug, tmp_path: Path, name: str, *, with_bug: bool) -> Path:
    config = SimConfig(seed=b.seed, events=b.events, **b.workload)
    cluster = default_cluster_config(config)
    traces = tmp_path / name / "traces"
    simulate(config, traces, tmp_path / name / "data", cluster_config=b.enable(cluster) if with_bug else cluster)
    return traces


def digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*.jsonl")):
        h.update(p.read_bytes())
    return h.hexdigest()


def matches(v: Any, b: KnownBug) -> bool:
    return v.machine == b.machine and any(v.check == check and (not name or v.name == name)
                                          for check, name in b.checks)


# ---------------------------------------------------------------- the catalogue


def test_catalogue_names_and_switches() -> None:
    assert set(BUGS) == {"KAFKA-17507", "KAFKA-16147", "KAFKA-9666", "fence-without-bump",
                         "endtxn-retry-commits-later", "epoch-overflow-no-rotation"}
    assert bug("kafka-16147") is BUGS["KAFKA-16147"]
    with pytest.raises(ValueError, match="unknown bug 'KAFKA-1'; known: KAFKA-17507"):
        bug("KAFKA-1")
    assert {b.bug for b in BUGS.values()} == set(SeededBug)  # one catalogue entry per switch
    plain = ClusterConfig()
    assert plain.seeded_bugs == frozenset()
    turned_on = enable("KAFKA-9666", plain)
    assert turned_on.seeded_bugs == {SeededBug.KAFKA_9666} and replace(turned_on, seeded_bugs=frozenset()) == plain
    assert enable("KAFKA-16147", enable("KAFKA-17507", plain)).seeded_bugs == {SeededBug.KAFKA_17507,
                                                                                 SeededBug.KAFKA_16147}


# ---------------------------------------------------------------- each bug fires and is caught


def _rows(traces: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for p in sorted(traces.rglob("*.jsonl")) for line in p.read_text().splitlines()]


def _offsets_completed_before_materialised(traces: Path) -> list[tuple[str, int]]:
    """KAFKA-17507's symptom, read straight off the rows: a transaction reached CompleteCommit/CompleteAbort at a
    time before its `__consumer_offsets` partition's marker was applied (materialised)."""
    rows = _rows(traces)
    markers: dict[tuple[str, int, int], int] = {}
    for r in rows:
        if r["machine"] == "PartitionProducer" and r["event"] == "WriteMarker" and r["kind"] == "transition":
            key = (r["partition"], r["producer_id"], r["arg_epoch"])
            markers[key] = min(markers.get(key, r["ts_ms"]), r["ts_ms"])
    txns = sorted((r for r in rows if r["machine"] == "Transaction"), key=lambda r: (r["key"], r["seq"]))
    late = []
    for before, r in itertools.pairwise(txns):
        if r["key"] != before["key"] or r["event"] != "CompleteTxn" or r["kind"] != "transition":
            continue
        for p in before["partitions"]:
            written = markers.get((p, before["producer_id"], before["producer_epoch"]))
            if p.startswith("__consumer_offsets-") and (written is None or written > r["ts_ms"]):
                late.append((r["key"], r["seq"]))
    return late


@pytest.mark.slow
@pytest.mark.parametrize("name", list(BUGS))
def test_seeded_bug_is_caught_and_the_fixed_coordinator_is_clean(name: str, tmp_path: Path) -> None:
    b = BUGS[name]
    buggy = run(b, tmp_path, "bug", with_bug=True)
    fixed = run(b, tmp_path, "fixed", with_bug=False)
    assert digest(buggy) != digest(fixed), f"{name} did not change a single row on seed {b.seed}: it never fired"
    if name == "KAFKA-17507":
        assert _offsets_completed_before_materialised(buggy) and not _offsets_completed_before_materialised(fixed)
    clean = reference_check(fixed, tmp_path / "fixed-check")
    assert clean.quarantined == 0
    assert clean.violations == [], [(v.machine, v.key, v.check, v.name, v.message) for v in clean.violations[:5]]
    found = reference_check(buggy, tmp_path / "bug-check")
    caught = [v for v in found.violations if matches(v, b)]
    assert caught, f"{name}: expected one of {b.checks} on {b.machine}, got " \
                   f"{sorted({(v.machine, v.check, v.name) for v in found.violations})}"
    assert min(witness_rows(v) for v in caught) <= WITNESS_ROWS_MAX
