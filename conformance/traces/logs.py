"""Coordinator log directories → trace rows: every record value of a key becomes one `load` row.

Owns: finding partition folders (`find_log_dirs`: `__transaction_state-N` and `__consumer_offsets-N`, kcoord's or a
Kafka broker's, anywhere under the given paths), turning their records into rows of the trace schema (`log_rows`)
and `convert` (log folders → a JSON Lines trace folder the readers take, streamed, with malformed records counted and
written to the quarantine with their reason; a bad record never stops the run).

How a record becomes a row. Segments are read with `kcoord.impl.storage.log.read_partition_dir` and each value is
decoded with the coordinators' own mapping (`kcoord.impl.txn.records.instance_from_value` for `TransactionLogValue`,
`kcoord.impl.group.shard_state.classic_from_record` for `GroupMetadataValue`), so the rows hold exactly the instance
a coordinator would load. Per key, in offset order: `seq` is the key's record number (dense: the log is the complete
history of what survives), `from_state` is the state of the key's previous value (the initial state for its first
value and after a tombstone), `to_state` the value's state; a tombstone leads to the machine's final state (or, for a
machine without one, its terminal state: ClassicGroup's Dead) and keeps the previous variables, as the runtime's
`install` does. `ts_ms` is the record's timestamp, `coordinator_epoch` the batch's partition leader epoch, `kind`
`load` with event `Load` and row -1, `error` NONE. The checker treats `load` rows as snapshots (see `checks`): the
state changes derived from consecutive values must follow paths of the table's edges, every value must satisfy the
invariants, and the trace properties (epochs that never go backwards, transactions that complete in time) apply.
Compaction only removes a prefix of a key's history, so the surviving values of a key are still consecutive.

Not derived from logs (counted as skipped, and named in the summary): offset commits (no machine state), KIP-848
consumer-group records (a ConsumerGroup or member instance is assembled from several record types at the end of a
load, not per record) and the producer state the group coordinator keeps for transactional offset commits. Their
checks need the runtime's JSONL/Parquet traces.
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
from .logcheck import StepChecker
from .logrecords import LOG_DIR, Keys, StateRecord, entries, topic_of
from .readers import columns

GROUP_METADATA = 2
#: what decoding a record value can raise (SchemaError and RecordFormatError are ValueErrors)
_DECODING_ERRORS = (ValueError, KeyError, struct.error, UnicodeDecodeError, AssertionError)
Row = dict[str, Any]


def is_log_dir(path: str | Path) -> bool:
    return os.path.isdir(path) and LOG_DIR.match(os.path.basename(os.path.normpath(str(path)))) is not None


def find_log_dirs(paths: Sequence[str | Path]) -> list[str]:
    """Every coordinator partition folder at or under `paths` (sorted, each once)."""
    found: set[str] = set()
    for raw in paths:
        p = os.path.normpath(str(raw))
        if is_log_dir(p):
            found.add(p)
            continue
        if not os.path.isdir(p):
            continue
        for root, dirs, _ in os.walk(p):
            for d in list(dirs):
                if LOG_DIR.match(d):
                    found.add(os.path.join(root, d))
                    dirs.remove(d)
            dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
    return sorted(found)


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
        if checker is not None:
            found = checker.check(r)
            if found is not None:
                self.violations.append(found)

    @property
    def checked(self) -> dict[str, int]:
        return {name: c.checked for name, c in self.steps.items()}


def log_rows(directory: str, machines: Mapping[str, ir.Machine], bad: list[Bad],
             skipped: dict[str, int], checks: LogChecks | None = None) -> Iterator[Row]:
    """The rows of one partition folder, in offset order; records that fail to decode go to `bad`, records that
    are not machine state are counted in `skipped` (by kind), and each state record goes through `checks`."""
    from kcoord.impl.storage.log import LogCorruptedError

    topic = topic_of(directory)
    decode = _transaction_values if topic == "__transaction_state" else _group_values
    wanted = "Transaction" if topic == "__transaction_state" else "ClassicGroup"
    if wanted not in machines:
        skipped[f"{wanted} records (machine not loaded)"] = skipped.get(f"{wanted} records (machine not loaded)",
                                                                          0) + 1
        return
    machine = _Machine.of(machines[wanted])
    keys = Keys()

    def tail(segment: Path, stop: Any) -> None:  # the last segment's unread end: said in the summary, not a row
        what = (f"bytes at the end of {segment} not read ({stop.reason.value} from position {stop.position}: "
                f"{stop.detail}; a segment being written, preallocated or cut by a crash)")
        skipped[what] = skipped.get(what, 0) + segment.stat().st_size - stop.position

    try:
        for entry in entries(directory, on_tail=tail):
            if entry.control:
                continue
            try:
                decoded = decode(entry.key, entry.value, skipped)
            except _DECODING_ERRORS as e:  # the record's problem, never the run's
                bad.append(Bad(directory, entry.place.offset, f"malformed:{type(e).__name__}: {e}",
                               _raw(entry.key, entry.value)))
                continue
            if decoded is None:
                continue
            key, instance = decoded
            record = keys.follow(StateRecord(wanted, key, entry.place, entry.leader_epoch, instance), entry.dense)
            if checks is not None:
                checks.record(record)
            yield machine.row(key, instance, entry.place.ts_ms, entry.leader_epoch)
    except (LogCorruptedError, OSError, ValueError) as e:  # a damaged segment ends this folder, never the run
        bad.append(Bad(directory, -1, f"malformed:{type(e).__name__}: {e}", ""))


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
    from kcoord.impl.group.shard_state import classic_from_record
    from kcoord.impl.storage import group_log_schema as schema

    if key is None:
        raise ValueError("a __consumer_offsets record without a key")
    rtype = schema.record_type(key)
    if rtype != GROUP_METADATA:
        what = "offset commits" if rtype <= 1 else "consumer-group records (KIP-848)" if rtype <= 8 else \
            "other group records"
        skipped[what] = skipped.get(what, 0) + 1
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

    def notes(self) -> list[str]:
        return [f"{n} {what} in coordinator logs (not derived as rows)" for what, n in sorted(self.skipped.items())]


def convert(log_dirs: Sequence[str], machines: Mapping[str, ir.Machine], root: str,
            quarantine_dir: str | None) -> Converted:
    """Write the rows of `log_dirs` as `<root>/<Machine>/part-<n>.jsonl` (one file per log folder, streamed) and the
    bad records to `<quarantine_dir>/part-logs.jsonl`."""
    out = Converted(root, checks=LogChecks.of(machines))
    bad: list[Bad] = []
    for n, directory in enumerate(log_dirs):
        handles: dict[str, Any] = {}
        try:
            for row in log_rows(directory, machines, bad, out.skipped, out.checks):
                name = row["machine"]
                handle = handles.get(name)
                if handle is None:
                    folder = os.path.join(root, name)
                    os.makedirs(folder, exist_ok=True)
                    handle = handles[name] = open(os.path.join(folder, f"part-{n:05d}.jsonl"), "w",  # noqa: SIM115
                                                  encoding="utf-8")
                handle.write(json.dumps(row, separators=(",", ":")) + "\n")
                out.rows[name] = out.rows.get(name, 0) + 1
        finally:
            for handle in handles.values():
                handle.close()
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
