"""Broker log directories → trace rows: the coordinators' records, and the producer appends of every partition.

Owns: finding partition folders (`find_log_dirs`: `__transaction_state-N` and `__consumer_offsets-N`, kcoord's or a
Kafka broker's, anywhere under the given paths — and, beside them in a broker's log directory, every other
partition; one replica of each partition: the one that reaches the highest offset), turning their records into rows
of the trace schema (`log_rows`) and `convert` (log folders → a trace folder of typed Parquet files the readers take,
streamed, with malformed records counted and written to the quarantine with their reason; a bad record never stops
the run).

How a record becomes a row. Segments are read with `kcoord.impl.storage.log.read_partition_dir`
(`kcoord.conformance.traces.logrecords`) and decoded with the coordinators' own declarations and mappings
(`kcoord.impl.txn.records.instance_from_value` for `TransactionLogValue`,
`kcoord.impl.group.shard_state.classic_from_record` for `GroupMetadataValue`; the KIP-848 records and the producer
appends: `grouplog`, `producerlog`), so the rows hold exactly the instances a coordinator would load. Per key, in
offset order: `seq` is the key's record number (dense: the log is the complete history of what survives),
`from_state` is the state of the key's previous value (the initial state for its first value and after a
tombstone), `to_state` the value's state; a tombstone leads to the machine's final state (or, for a machine without
one, its terminal state: ClassicGroup's Dead) and keeps the previous variables, as the runtime's `install` does.
`ts_ms` is the record's timestamp, `coordinator_epoch` the batch's partition leader epoch, `kind` `load` with event
`Load` and row -1, `error` NONE. The checker treats `load` rows as snapshots (see `checks`): the state changes derived
from consecutive values must follow paths of the table's edges, every value must satisfy the invariants, and the
trace properties apply. Compaction only removes a prefix of a key's history, so the surviving values of a key are
still consecutive. Besides the rows, each state record goes through the log checks (`logcheck`: the persisted-step
relation). The producer appends (transactional batches and markers) are transition rows (`producerlog`).
Must not import: pyspark, kcoord.cli.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from kcoord.model import ir

from .checks import LOAD_EVENT, Spec, Violation
from .grouplog import GroupLog
from .logcheck import StepChecker
from .logrecords import LOG_DIR, PARTITION_DIR, Entry, Keys, StateRecord, entries
from .producerlog import ProducerRows
from .readers import columns

GROUP_METADATA = 2
#: what decoding a record value can raise (SchemaError and RecordFormatError are ValueErrors)
_DECODING_ERRORS = (ValueError, KeyError, struct.error, UnicodeDecodeError, AssertionError)
Row = dict[str, Any]


def is_log_dir(path: str | Path) -> bool:
    return os.path.isdir(path) and LOG_DIR.match(os.path.basename(os.path.normpath(str(path)))) is not None


def find_log_dirs(paths: Sequence[str | Path], data_partitions: bool = True) -> list[str]:
    """Every coordinator partition folder at or under `paths` and, with `data_partitions`, every other partition
    folder of a log directory that holds coordinator partitions (sorted; one replica per partition name: the one
    whose last segment reaches furthest)."""
    found: set[str] = set()
    for raw in paths:
        p = os.path.normpath(str(raw))
        if is_log_dir(p):
            found.add(p)
            continue
        if not os.path.isdir(p):
            continue
        for root, dirs, _ in os.walk(p):
            if any(LOG_DIR.match(d) for d in dirs):
                found |= {os.path.join(root, d) for d in dirs if LOG_DIR.match(d) or (
                    data_partitions and _is_data_partition(os.path.join(root, d)))}
                dirs.clear()
                continue
            dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
    return _one_replica_each(found)


def _is_data_partition(path: str) -> bool:
    name = os.path.basename(path)
    return PARTITION_DIR.match(name) is not None and not name.startswith("__") and any(
        f.endswith(".log") for f in os.listdir(path))


def _one_replica_each(folders: set[str]) -> list[str]:
    """Replicas of one partition (a cluster's log directories) are prefixes of one log: keep the longest."""
    by_name: dict[str, list[str]] = {}
    for f in sorted(folders):
        by_name.setdefault(os.path.basename(f), []).append(f)
    return sorted(max(copies, key=_reach) for copies in by_name.values())


def _reach(folder: str) -> tuple[int, int]:
    segments = sorted(f for f in os.listdir(folder) if f.endswith(".log"))
    if not segments:
        return (-1, 0)
    last = segments[-1]
    return (int(last.split(".")[0]) if last.split(".")[0].isdigit() else -1,
            os.path.getsize(os.path.join(folder, last)))


@dataclass(slots=True)
class Bad:
    """A record that could not be turned into a row."""

    source: str
    offset: int
    reason: str
    raw: str


@dataclass(slots=True)
class _KeyTrack:
    seq: int = 0
    last: Row | None = None  # the key's previous row


@dataclass(slots=True)
class _Machine:
    spec: Spec
    cols: list[tuple[str, str]]
    removed_state: str
    tracks: dict[str, _KeyTrack] = field(default_factory=dict)

    @classmethod
    def of(cls, m: ir.Machine) -> _Machine:
        spec = Spec.of(m)
        finals = sorted(spec.final_states) or sorted(spec.terminal_states) or [spec.initial]
        return cls(spec, columns(m), finals[0])

    def row(self, key: str, instance: Mapping[str, Any] | None, ts_ms: int, epoch: int) -> Row:
        """The row of the key's next value (`instance`; None for a tombstone)."""
        track = self.tracks.setdefault(key, _KeyTrack())
        last = track.last
        fresh = last is None or last["to_state"] in self.spec.final_states or last["to_state"] == self.removed_state
        from_state = self.spec.initial if fresh or last is None else str(last["to_state"])
        if instance is None:
            values: Mapping[str, Any] = last if last is not None else {}
            to_state = self.removed_state
        else:
            values, to_state = instance, str(instance["state"])
        row: Row = {name: None for name, _ in self.cols}
        m = self.spec.machine
        for f in (*m.keys, *m.variables):
            value = values.get(f.name, self.spec.defaults.get(f.name))
            row[f.name] = sorted(value) if isinstance(value, frozenset | set) else value
        row.update(machine=m.name, key=key, seq=track.seq, ts_ms=ts_ms, node=0, coordinator_epoch=epoch,
                   kind="load", event=LOAD_EVENT, row=-1, error="NONE", from_state=from_state, to_state=to_state,
                   pending=False)
        track.seq += 1
        track.last = row
        return row


@dataclass(slots=True)
class LogChecks:
    """The checks that read records rather than rows (`logcheck`): each machine's persisted-step relation."""

    steps: dict[str, StepChecker] = field(default_factory=dict)
    violations: list[Violation] = field(default_factory=list)
    pairs_root: str | None = None  # where the pairs go, one JSON Lines file per machine (for the Spark engine)
    _pairs: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, machines: Mapping[str, ir.Machine]) -> LogChecks:
        from .steps import relation_for

        out = cls()
        for name, m in machines.items():
            relation = relation_for(m)
            if relation is not None:
                out.steps[name] = StepChecker(Spec.of(m), relation)
        return out

    def record(self, r: StateRecord) -> None:
        checker = self.steps.get(r.machine)
        if checker is None:
            return
        found = checker.check(r)
        if found is not None:
            self.violations.append(found)
        if self.pairs_root is not None:
            pair = checker.pair(r)
            if pair is not None:
                self._pair_file(r.machine).write(json.dumps(pair, separators=(",", ":")) + "\n")

    def _pair_file(self, machine: str) -> Any:
        handle = self._pairs.get(machine)
        if handle is None:
            assert self.pairs_root is not None
            os.makedirs(os.path.join(self.pairs_root, machine), exist_ok=True)
            handle = self._pairs[machine] = open(os.path.join(self.pairs_root, machine, "part-00000.jsonl"),  # noqa: SIM115
                                                 "w", encoding="utf-8")
        return handle

    def close(self) -> None:
        for handle in self._pairs.values():
            handle.close()
        self._pairs = {}

    @property
    def checked(self) -> dict[str, int]:
        return {name: c.checked for name, c in self.steps.items()}


def log_rows(directory: str, machines: Mapping[str, ir.Machine], bad: list[Bad],
             skipped: dict[str, int], checks: LogChecks | None = None,
             stops: list[str] | None = None) -> Iterator[Row]:
    """The rows of one partition folder, in offset order; records that fail to decode go to `bad`, records that
    are not machine state are counted in `skipped` (by kind), each state record goes through `checks`, and where a
    segment stops being readable is said in `stops` (`<segment>: <why> from position <n>`)."""
    from kcoord.impl.storage.log import LogCorruptedError

    name = os.path.basename(os.path.normpath(directory))
    match = LOG_DIR.match(name)
    topic = match.group(1) if match else None
    state_machine = {"__transaction_state": "Transaction", "__consumer_offsets": "ClassicGroup"}.get(topic or "")
    if state_machine is not None and state_machine not in machines:
        what = f"{state_machine} records (machine not loaded)"
        skipped[what] = skipped.get(what, 0) + 1
        return
    reader = _FolderReader(directory, machines, skipped, checks, state_machine)

    def tail(segment: Path, stop: Any) -> None:  # the last segment's unread end: said in the summary, not a row
        what = (f"bytes at the end of {segment} not read ({stop.reason.value} from position {stop.position}: "
                f"{stop.detail}; a segment being written, preallocated or cut by a crash)")
        skipped[what] = skipped.get(what, 0) + segment.stat().st_size - stop.position
        if stops is not None:
            stops.append(f"{segment}: {stop.reason.value} from position {stop.position} ({stop.detail})")

    try:
        for entry in entries(directory, on_tail=tail):
            try:
                rows = list(reader.entry(entry))
            except _DECODING_ERRORS as e:  # the record's problem, never the run's
                bad.append(Bad(directory, entry.place.offset, f"malformed:{type(e).__name__}: {e}",
                               _raw(entry.key, entry.value)))
                rows = []
            yield from rows
            yield from reader.batch_end(entry)
    except (LogCorruptedError, OSError, ValueError) as e:  # a damaged segment ends this folder, never the run
        bad.append(Bad(directory, -1, f"malformed:{type(e).__name__}: {e}", ""))
        if stops is not None:
            stops.append(f"{directory}: {type(e).__name__}: {e}")


@dataclass(slots=True)
class _FolderReader:
    """What one folder's records become: state rows (Transaction, ClassicGroup), KIP-848 rows, producer rows."""

    directory: str
    machines: Mapping[str, ir.Machine]
    skipped: dict[str, int]
    checks: LogChecks | None
    state_machine: str | None
    keys: Keys = field(default_factory=Keys)
    machine: _Machine | None = None
    group: GroupLog | None = None
    producers: ProducerRows | None = None

    def __post_init__(self) -> None:
        name = os.path.basename(os.path.normpath(self.directory))
        if self.state_machine is not None:
            self.machine = _Machine.of(self.machines[self.state_machine])
        if self.state_machine == "ClassicGroup":
            self.group = GroupLog.of(self.machines, name, self.skipped, _Machine.of)
        elif self.state_machine is None and "PartitionProducer" in self.machines:
            self.producers = ProducerRows.of(self.machines["PartitionProducer"], name, False)

    def entry(self, e: Entry) -> Iterator[Row]:
        if self.producers is not None:  # a data partition: its producers' transactional appends only
            row = self.producers.entry(e)
            if row is not None:
                yield row
            return
        if self.group is not None:
            yield from self.group.entry(e)
        if e.control or self.machine is None:
            return
        decode = _transaction_values if self.state_machine == "Transaction" else _group_values
        decoded = decode(e.key, e.value, self.skipped)
        if decoded is None:
            return
        key, instance = decoded
        if self.group is not None and self.group.consumer is not None and instance is not None:
            self.group.consumer.replaced(key)
        assert self.state_machine is not None
        record = self.keys.follow(StateRecord(self.state_machine, key, e.place, e.leader_epoch, instance), e.dense)
        if self.checks is not None:
            self.checks.record(record)
        yield self.machine.row(key, instance, e.place.ts_ms, e.leader_epoch)

    def batch_end(self, e: Entry) -> Iterator[Row]:
        if self.group is not None:
            yield from self.group.batch_end(e)


def _raw(key: bytes | None, value: bytes | None) -> str:
    return json.dumps({"key": key.hex() if key is not None else None,
                       "value": value.hex() if value is not None else None})


def _transaction_values(key: bytes | None, value: bytes | None,
                        skipped: dict[str, int]) -> tuple[str, Mapping[str, Any] | None] | None:
    from kcoord.impl.storage.txn_log_schema import decode_value
    from kcoord.impl.txn.records import decode_txn_key, instance_from_value

    if key is None:
        raise ValueError("a __transaction_state record without a key")
    transactional_id = decode_txn_key(key)
    decoded = decode_value(value)
    return transactional_id, None if decoded is None else instance_from_value(transactional_id, decoded)


def _group_values(key: bytes | None, value: bytes | None,
                  skipped: dict[str, int]) -> tuple[str, Mapping[str, Any] | None] | None:
    """A GroupMetadata record's group id and ClassicGroup instance; None for the other record types (`grouplog`)."""
    from kcoord.impl.group.shard_state import classic_from_record
    from kcoord.impl.storage import group_log_schema as schema

    if key is None:
        raise ValueError("a __consumer_offsets record without a key")
    if schema.record_type(key) != GROUP_METADATA:
        return None
    k = schema.decode_key(key)
    assert isinstance(k, schema.GroupMetadataKey)
    decoded = schema.decode_value(GROUP_METADATA, value)
    if decoded is None:
        return k.group, None
    assert isinstance(decoded, schema.GroupMetadataValue)
    instance, _ = classic_from_record(_classic_table(), k.group, decoded)
    return k.group, instance


@lru_cache(maxsize=1)
def _classic_table() -> Any:
    from kcoord.impl.statemachine import MachineTable

    return MachineTable.load("classic_group")


# ---------------------------------------------------------------- conversion


@dataclass(slots=True)
class Converted:
    """What `convert` produced: the trace folder, rows per machine, bad records per reason code, skipped records."""

    root: str
    rows: dict[str, int] = field(default_factory=dict)
    bad: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    checks: LogChecks = field(default_factory=LogChecks)
    stops: list[str] = field(default_factory=list)  # where a segment stopped being readable, and why
    log_dirs: list[str] = field(default_factory=list)

    def notes(self) -> list[str]:
        return [f"{n} {what} in coordinator logs (not derived as rows)" for what, n in sorted(self.skipped.items())]

    def nothing_read(self) -> str:
        """One line saying why the logs gave no row at all (when they gave none)."""
        where = f"the coordinator logs under {', '.join(self.log_dirs)}"
        if self.stops:
            more = f" (and {len(self.stops) - 1} more)" if len(self.stops) > 1 else ""
            return f"nothing could be read from {where}: {self.stops[0]}{more}"
        kinds = ", ".join(f"{n} {what}" for what, n in sorted(self.skipped.items()))
        return f"{where} hold no record a machine's state is derived from" + (f" (only {kinds})" if kinds else "")


def convert(log_dirs: Sequence[str], machines: Mapping[str, ir.Machine], root: str,
            quarantine_dir: str | None, pairs_root: str | None = None) -> Converted:
    """Write the rows of `log_dirs` as `<root>/<Machine>/part-<n>.parquet` in the typed format (one file per log
    folder and machine, streamed a row group at a time) and the bad records to `<quarantine_dir>/part-logs.jsonl`;
    the persisted-step checks run on the way (their violations in `Converted.checks`) and, with `pairs_root`, write
    the record pairs they checked there (`sparklog`'s input)."""
    out = Converted(root, checks=LogChecks.of(machines), log_dirs=list(log_dirs))
    out.checks.pairs_root = pairs_root
    bad: list[Bad] = []
    for n, directory in enumerate(log_dirs):
        writers: dict[str, _TypedFile] = {}
        try:
            for row in log_rows(directory, machines, bad, out.skipped, out.checks, out.stops):
                name = row["machine"]
                writer = writers.get(name)
                if writer is None:
                    writer = writers[name] = _TypedFile(os.path.join(root, name, f"part-{n:05d}.parquet"),
                                                        machines[name])
                writer.add(row)
                out.rows[name] = out.rows.get(name, 0) + 1
        finally:
            for writer in writers.values():
                writer.close()
    out.checks.close()
    for b in bad:
        code = b.reason.split(":", 1)[0]
        out.bad[code] = out.bad.get(code, 0) + 1
    if bad and quarantine_dir:
        os.makedirs(quarantine_dir, exist_ok=True)
        with open(os.path.join(quarantine_dir, "part-logs.jsonl"), "w", encoding="utf-8") as f:
            for b in bad:
                f.write(json.dumps({"machine": "", "source": b.source, "line": b.offset, "reason": b.reason,
                                    "raw": b.raw}) + "\n")
    return out


class _TypedFile:
    """One typed Parquet file written a row group at a time (rows sorted by key and seq within each)."""

    ROWS = 262_144

    def __init__(self, path: str, m: ir.Machine) -> None:
        from .writers import typed_schema

        os.makedirs(os.path.dirname(path), exist_ok=True)
        self.path = path
        self.schema = typed_schema(m)
        self.rows: list[Row] = []
        self.writer: Any = None

    def add(self, row: Row) -> None:
        self.rows.append(row)
        if len(self.rows) >= self.ROWS:
            self._write()

    def _write(self) -> None:
        import pyarrow.parquet as pq

        from kcoord.impl.runtime.trace import typed_table

        if not self.rows:
            return
        table = typed_table(self.rows, self.schema)
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.path, table.schema)
        self.writer.write_table(table, row_group_size=len(self.rows))
        self.rows = []

    def close(self) -> None:
        self._write()
        if self.writer is not None:
            self.writer.close()
