"""The one-pass compaction planner (`compaction.plan_compaction`: a transaction's records wait for its marker) against
the two passes it replaced (each transaction's outcome first, then the latest offset per key): the same plan for
logs of plain puts, tombstones, transactions of several producers (committed, aborted, open, interleaved) and
compactions between them."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kcoord.impl.storage.batch import ControlType, Record, RecordBatch
from kcoord.impl.storage.compaction import CompactionPlan, _marker_type, plan_compaction
from kcoord.impl.storage.log import PartitionLog

from .test_compaction import write_op


def _two_passes(first_pass: Iterable[RecordBatch], second_pass: Iterable[RecordBatch], *, log_end_offset: int,
                now_ms: int, tombstone_retention_ms: int) -> CompactionPlan:
    """The planner before (fcde023), verbatim but for names."""
    open_batches: dict[int, list[int]] = {}
    outcome: dict[int, ControlType] = {}
    batches_of_marker: dict[int, list[int]] = {}
    for batch in first_pass:
        if batch.is_control:
            marker = _marker_type(batch)
            if marker is not None:
                members = open_batches.pop(batch.producer_id, [])
                batches_of_marker[batch.base_offset] = members
                for base in members:
                    outcome[base] = marker
        elif batch.is_transactional:
            open_batches.setdefault(batch.producer_id, []).append(batch.base_offset)
    unstable = [bases[0] for bases in open_batches.values() if bases]
    plan = CompactionPlan(now_ms, tombstone_retention_ms, min(unstable, default=log_end_offset),
                          outcome_by_batch=outcome)
    latest = plan.latest_offset_by_key
    txn_records: dict[int, list[Record]] = {}
    for batch in second_pass:
        if batch.is_control:
            continue
        if batch.is_transactional:
            if outcome.get(batch.base_offset) is not ControlType.COMMIT:
                continue
            txn_records[batch.base_offset] = [r for r in batch.records if r.key is not None]
        for record in batch.records:
            if record.key is not None:
                latest[record.key] = record.offset
    for marker_offset, members in batches_of_marker.items():
        if any(plan.keeps(r) for base in members for r in txn_records.get(base, ())):
            plan.live_markers.add(marker_offset)
    return plan


_op = st.one_of(
    st.tuples(st.just("put"), st.integers(0, 5), st.booleans()),
    st.tuples(st.just("txn"), st.integers(0, 2), st.integers(0, 5)),
    st.tuples(st.just("end"), st.integers(0, 2), st.sampled_from([ControlType.COMMIT, ControlType.ABORT])),
    st.tuples(st.just("compact"), st.integers(0, 3000), st.just(0)),
    st.tuples(st.just("plan"), st.integers(0, 3000), st.just(0)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_op, max_size=60))
def test_one_pass_plans_as_the_two_passes(tmp_path_factory: object, ops: list[tuple[str, object, object]]) -> None:
    directory: Path = tmp_path_factory.mktemp("log")  # type: ignore[attr-defined]
    now = 0
    with PartitionLog.open(directory, segment_bytes=1024) as log:
        for kind, a, b in [*ops, ("plan", 100, 0)]:
            now += 100
            if not write_op(log, (kind, a, b), now):
                common = {"log_end_offset": log.log_end_offset, "now_ms": now, "tombstone_retention_ms": int(str(a))}
                once = plan_compaction(log.read(), **common)
                assert once == _two_passes(log.read(), log.read(), **common)
                if kind == "compact":
                    log.compact(now_ms=now, tombstone_retention_ms=int(str(a)))
