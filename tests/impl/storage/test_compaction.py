"""Compaction: last value per key, tombstone retention, transactions and markers, offsets and reopen."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kcoord.impl.storage.batch import ControlType, RecordBatch, decode_end_txn_marker, end_txn_marker_entry
from kcoord.impl.storage.log import PartitionLog

from .conftest import kv

DAY_MS = 86_400_000


def _contents(log: PartitionLog) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for b in log.read() for r in b.records]


def _marker(log: PartitionLog, pid: int, control: ControlType, ts: int) -> int:
    return log.append([end_txn_marker_entry(control, 0)], timestamp_ms=ts, producer_id=pid, producer_epoch=0,
                      transactional=True, control=True).base_offset


def _txn(log: PartitionLog, pid: int, records: list[tuple[bytes, bytes | None]], ts: int) -> int:
    return log.append(records, timestamp_ms=ts, producer_id=pid, producer_epoch=0, transactional=True).base_offset


def test_last_value_per_key_keeps_offsets(small_log: PartitionLog, log_dir: Path) -> None:
    for i in range(60):
        small_log.append([kv(i, key_space=5)], timestamp_ms=i)
    report = small_log.compact(now_ms=100, tombstone_retention_ms=DAY_MS)
    expected = [(i, *kv(i, key_space=5)) for i in range(55, 60)]
    assert _contents(small_log) == expected
    assert (report.records_before, report.records_after) == (60, 5)
    assert report.bytes_after < report.bytes_before
    assert small_log.log_end_offset == 60 and small_log.append([kv(60)], timestamp_ms=0).base_offset == 60
    assert small_log.log_start_offset == 0
    small_log.close()
    with PartitionLog.open(log_dir, segment_bytes=1024) as reopened:
        assert reopened.recovery.truncated_bytes == 0
        assert _contents(reopened) == [*expected, (60, *kv(60))]
        assert reopened.log_end_offset == 61


def test_emptied_middle_segments_are_deleted_first_and_last_kept(small_log: PartitionLog, log_dir: Path) -> None:
    for i in range(80):
        small_log.append([(b"same-key", b"v%d" % i)], timestamp_ms=i)
    segments_before = small_log.segment_base_offsets
    report = small_log.compact(now_ms=100, tombstone_retention_ms=DAY_MS)
    after = small_log.segment_base_offsets
    assert after == (segments_before[0], segments_before[-1])
    assert report.segments_deleted == len(segments_before) - 2
    assert sorted(f for f in os.listdir(log_dir) if f.endswith(".log")) == [f"{b:020d}.log" for b in after]
    assert (log_dir / f"{after[0]:020d}.log").stat().st_size == 0
    assert _contents(small_log) == [(79, b"same-key", b"v79")]


def test_compaction_is_idempotent(small_log: PartitionLog) -> None:
    for i in range(40):
        small_log.append([kv(i, key_space=3)], timestamp_ms=i)
    small_log.compact(now_ms=0, tombstone_retention_ms=DAY_MS)
    again = small_log.compact(now_ms=0, tombstone_retention_ms=DAY_MS)
    assert again.segments_rewritten == again.segments_deleted == 0
    assert again.records_before == again.records_after == 3


def test_tombstones_expire_after_retention(small_log: PartitionLog) -> None:
    small_log.append([(b"a", b"1"), (b"b", b"1"), (b"c", b"1")], timestamp_ms=1000)
    small_log.append([(b"a", None)], timestamp_ms=2000)  # old tombstone
    small_log.append([(b"b", None)], timestamp_ms=9000)  # young tombstone
    small_log.append([(b"z", b"last")], timestamp_ms=9500)
    small_log.compact(now_ms=10_000, tombstone_retention_ms=5000)
    assert _contents(small_log) == [(2, b"c", b"1"), (4, b"b", None), (5, b"z", b"last")]
    small_log.compact(now_ms=14_000, tombstone_retention_ms=5000)
    assert _contents(small_log) == [(2, b"c", b"1"), (5, b"z", b"last")]


def test_emptied_last_batch_is_kept_to_preserve_the_end_offset(small_log: PartitionLog, log_dir: Path) -> None:
    small_log.append([(b"a", b"1")], timestamp_ms=0)
    small_log.append([(b"a", None), (b"b", None)], timestamp_ms=0)
    small_log.compact(now_ms=DAY_MS, tombstone_retention_ms=1)
    batches = list(small_log.read())
    assert len(batches) == 1
    empty = batches[0]
    assert (empty.base_offset, empty.last_offset, empty.records, empty.base_timestamp_ms) == (1, 2, (), -1)
    small_log.close()
    with PartitionLog.open(log_dir) as reopened:
        assert reopened.log_end_offset == 3
        assert reopened.append([kv(0)], timestamp_ms=0).base_offset == 3


def test_transactions_committed_aborted_and_open(small_log: PartitionLog) -> None:
    log = small_log
    log.append([(b"x", b"plain-1"), (b"y", b"plain-1")], timestamp_ms=0)  # 0-1
    _txn(log, 10, [(b"x", b"committed")], ts=0)  # 2
    _txn(log, 11, [(b"y", b"aborted")], ts=0)  # 3
    commit = _marker(log, 10, ControlType.COMMIT, ts=0)  # 4
    abort = _marker(log, 11, ControlType.ABORT, ts=0)  # 5
    open_first = _txn(log, 12, [(b"x", b"undecided")], ts=0)  # 6: first unstable offset
    log.append([(b"y", b"plain-2")], timestamp_ms=0)  # 7
    report = log.compact(now_ms=DAY_MS, tombstone_retention_ms=1000)
    assert report.first_unstable_offset == open_first
    assert _contents(log) == [
        (2, b"x", b"committed"),  # the latest decided value of x (the open txn may still abort)
        (commit, *end_txn_marker_entry(ControlType.COMMIT, 0)),  # kept: its transaction still has a record
        (6, b"x", b"undecided"),
        (7, b"y", b"plain-2"),
    ]
    assert commit == 4 and abort == 5
    # Once the open transaction commits, x's older value and the first marker go too.
    _marker(log, 12, ControlType.COMMIT, ts=DAY_MS)
    report = log.compact(now_ms=DAY_MS, tombstone_retention_ms=1000)
    assert report.first_unstable_offset == log.log_end_offset
    kept = _contents(log)
    assert [o for o, _, _ in kept] == [6, 7, 8]
    assert [b.is_control for b in log.read()] == [False, False, True]


def test_markers_are_kept_until_retention_when_their_records_are_gone(small_log: PartitionLog) -> None:
    _txn(small_log, 1, [(b"k", b"aborted")], ts=0)
    _marker(small_log, 1, ControlType.ABORT, ts=5000)
    small_log.append([(b"k", b"later")], timestamp_ms=6000)
    small_log.compact(now_ms=7000, tombstone_retention_ms=5000)
    offsets = [(b.base_offset, b.is_control) for b in small_log.read()]
    assert offsets == [(1, True), (2, False)]  # aborted records gone, young marker stays
    marker_batch = next(iter(small_log.read()))
    assert decode_end_txn_marker(marker_batch.records[0]).control_type is ControlType.ABORT
    small_log.compact(now_ms=10_000, tombstone_retention_ms=5000)
    assert [(b.base_offset, b.is_control) for b in small_log.read()] == [(2, False)]


def test_partial_batch_keeps_header_fields(small_log: PartitionLog) -> None:
    small_log.append([(b"a", b"1"), (b"b", b"1"), (b"c", b"1")], timestamp_ms=100, producer_id=3, producer_epoch=7,
                     base_sequence=40)
    small_log.append([(b"b", b"2")], timestamp_ms=200)
    small_log.compact(now_ms=0, tombstone_retention_ms=DAY_MS)
    first = next(iter(small_log.read()))
    assert [r.offset for r in first.records] == [0, 2]
    assert (first.base_offset, first.last_offset_delta, first.producer_id, first.producer_epoch,
            first.base_sequence) == (0, 2, 3, 7, 40)


def test_leftover_compacting_file_is_discarded_on_open(log_dir: Path) -> None:
    with PartitionLog.open(log_dir) as log:
        log.append([kv(0)], timestamp_ms=0)
    (log_dir / "00000000000000000000.log.compacting").write_bytes(b"half-written")
    with PartitionLog.open(log_dir) as log:
        assert sorted(os.listdir(log_dir)) == ["00000000000000000000.log", "recovery-point"]
        assert _contents(log) == [(0, *kv(0))]


# ------------------------------------------------------------------------------------------ replay equivalence


def _replay(batches: list[RecordBatch]) -> dict[bytes, bytes]:
    """What a coordinator's load materialises: last value per key by offset, transactions applied on COMMIT."""
    state: dict[bytes, tuple[int, bytes | None]] = {}
    pending: dict[int, list[tuple[int, bytes, bytes | None]]] = {}
    for batch in batches:
        if batch.is_control:
            if not batch.records:
                continue  # an emptied last batch kept only for its offsets
            marker = decode_end_txn_marker(batch.records[0]).control_type
            for offset, key, value in pending.pop(batch.producer_id, []):
                if marker is ControlType.COMMIT and offset > state.get(key, (-1, None))[0]:
                    state[key] = (offset, value)
            continue
        for r in batch.records:
            assert r.key is not None
            if batch.is_transactional:
                pending.setdefault(batch.producer_id, []).append((r.offset, r.key, r.value))
            else:
                state[r.key] = (r.offset, r.value)
    return {k: v for k, (_, v) in state.items() if v is not None}


_op = st.one_of(
    st.tuples(st.just("put"), st.integers(0, 5), st.booleans()),
    st.tuples(st.just("txn"), st.integers(0, 2), st.integers(0, 5)),
    st.tuples(st.just("end"), st.integers(0, 2), st.sampled_from([ControlType.COMMIT, ControlType.ABORT])),
    st.tuples(st.just("compact"), st.integers(0, 3000), st.just(0)),
)


def write_op(log: PartitionLog, op: tuple[str, object, object], now: int) -> bool:
    """Append what a generated op writes at time `now` (a put or tombstone of key `a`, a transactional record of
    producer `a` to key `b`, producer `a`'s marker `b`); False for an op that writes nothing (compact, plan)."""
    kind, a, b = op
    if kind == "put":
        log.append([(b"k%d" % int(str(a)), None if b else b"v%d" % now)], timestamp_ms=now)
    elif kind == "txn":
        _txn(log, int(str(a)), [(b"k%d" % int(str(b)), b"t%d" % now)], ts=now)
    elif kind == "end":
        assert isinstance(b, ControlType)
        _marker(log, int(str(a)), b, ts=now)
    else:
        return False
    return True


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_op, max_size=40))
def test_compaction_never_changes_what_replay_sees(tmp_path_factory: pytest.TempPathFactory,
                                                   ops: list[tuple[str, object, object]]) -> None:
    directory = tmp_path_factory.mktemp("log")
    now = 0
    with PartitionLog.open(directory, segment_bytes=1024) as log:
        for kind, a, b in ops:
            now += 100
            if not write_op(log, (kind, a, b), now):
                before = list(log.read())
                end = log.log_end_offset
                log.compact(now_ms=now, tombstone_retention_ms=int(str(a)))
                after = list(log.read())
                assert _replay(after) == _replay(before)
                assert log.log_end_offset == end
                kept = {(r.offset, r.key, r.value) for batch in after for r in batch.records}
                assert kept <= {(r.offset, r.key, r.value) for batch in before for r in batch.records}
        final = list(log.read())
        end = log.log_end_offset
    with PartitionLog.open(directory, segment_bytes=1024) as reopened:
        assert list(reopened.read()) == final and reopened.log_end_offset == end


def test_empty_batch_kept_for_the_end_offset_is_dropped_once_not_last(small_log: PartitionLog) -> None:
    small_log.append([(b"a", None)], timestamp_ms=0)
    small_log.compact(now_ms=DAY_MS, tombstone_retention_ms=1)
    assert [(b.base_offset, len(b.records)) for b in small_log.read()] == [(0, 0)]
    small_log.append([(b"b", b"1")], timestamp_ms=DAY_MS)
    small_log.compact(now_ms=DAY_MS, tombstone_retention_ms=1)
    assert [(b.base_offset, len(b.records)) for b in small_log.read()] == [(1, 1)]


@pytest.mark.parametrize("fails", ["write", "directory fsync"])
def test_a_failure_midway_through_compaction(small_log: PartitionLog, log_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                             fails: str) -> None:
    """The second segment's rewrite fails. Before its rename (a full disk while writing it) that segment is as it
    was: the log stays usable, half compacted. After the rename (its directory fsync) this object's view is not
    trusted: the log fails until it is reopened. Either way a reopen reads a valid log."""
    from kcoord.impl.storage import _files

    for i in range(60):
        small_log.append([kv(i, key_space=4)], timestamp_ms=i)
    calls = 0
    real_replace, real_fsync_dir = os.replace, _files.fsync_dir

    def replace_then_fail(src: str, dst: str) -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    def fsync_dir_then_fail(path: Path, later: object = None) -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise OSError(5, "Input/output error")
        real_fsync_dir(path)

    if fails == "write":
        monkeypatch.setattr(os, "replace", replace_then_fail)
    else:
        monkeypatch.setattr(_files, "fsync_dir", fsync_dir_then_fail)
    with pytest.raises(OSError, match="No space" if fails == "write" else "Input/output"):
        small_log.compact(now_ms=0, tombstone_retention_ms=DAY_MS)
    monkeypatch.undo()
    if fails == "write":
        assert not list(log_dir.glob("*.compacting"))
        small_log.append([kv(60, key_space=4)], timestamp_ms=60)
        assert {k: v for _, k, v in _contents(small_log)} == {k: v for k, v in (kv(i, 4) for i in range(57, 61))}
    else:
        with pytest.raises(OSError, match="reopen the log"):
            small_log.append([kv(0)], timestamp_ms=0)
    small_log.close()
    end = 61 if fails == "write" else 60
    with PartitionLog.open(log_dir, segment_bytes=1024) as reopened:  # a half-compacted log is a valid log
        assert [o for o, _, _ in _contents(reopened)][-4:] == list(range(end - 4, end))
        assert {k: v for _, k, v in _contents(reopened)} == {k: v for k, v in (kv(i, 4) for i in range(end - 4, end))}
        assert reopened.log_end_offset == end
