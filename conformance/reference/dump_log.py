"""Kafka reads kcoord's coordinator logs, kcoord reads Kafka's: `kafka-dump-log` (DumpLogSegments with
`--offsets-decoder` / `--transaction-log-decoder`) and kcoord's own log reader side by side, record by record.

Owns: `compare_log_dirs(harness, root)`: for every `__consumer_offsets-N` and `__transaction_state-N` folder under
`root` (a `kcoord serve` data folder, or a copy of a Kafka broker's log folder), every non-empty segment is dumped by
Kafka's tool (one JVM for all) and read by kcoord (`kcoord.impl.storage.log.read_partition_dir` and the
coordinators' record codecs, `group_log_schema` and `txn_log_schema`); the result (`Comparison`) lists, per record,
anything the two disagree on: a record one side has and the other not, a key or value that does not decode, a
record type or value version that differs, a field whose value differs (every field Kafka's decoder prints: all of
them for `__consumer_offsets`, whose decoder prints the generated JSON, tagged fields included; for
`__transaction_state` the producer id, epoch, state, partitions, last update time and timeout its decoder prints),
a transaction marker's type or coordinator epoch. `kinds` counts what was compared, by record type and value version.
Must not import: `kcoord.cli`.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .clients import JavaHarness, ToolRun

_LOG_DIR = re.compile(r"^(__transaction_state|__consumer_offsets)-\d+$")
_RECORD = re.compile(r"^\| offset: (\d+) .*?(?:key: (.*)|endTxnMarker: (\w+) coordinatorEpoch: (-?\d+))$")
#: Kafka's TransactionState names, by the id TransactionLogValue stores
_TXN_STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead",
               "PrepareEpochFence")


@dataclass(slots=True)
class Comparison:
    segments: int = 0
    records: int = 0
    kinds: dict[str, int] = field(default_factory=dict)  # "consumer_offsets key 8 value 0", "transaction value 1"...
    problems: list[str] = field(default_factory=list)

    def count(self, kind: str) -> None:
        self.kinds[kind] = self.kinds.get(kind, 0) + 1


def coordinator_dirs(root: Path) -> list[Path]:
    """The coordinator partition folders directly under `root` that hold a non-empty segment."""
    return sorted(d for d in root.iterdir() if d.is_dir() and _LOG_DIR.match(d.name)
                  and any(f.stat().st_size > 0 for f in d.glob("*.log")))


def compare_log_dirs(harness: JavaHarness, root: Path) -> Comparison:
    out = Comparison()
    dirs = coordinator_dirs(root)
    segments = [(d, f) for d in dirs for f in sorted(d.glob("*.log")) if f.stat().st_size > 0]
    runs = [ToolRun("kafka-dump-log", ("--files", str(f), "--print-data-log",
                                       "--transaction-log-decoder" if d.name.startswith("__transaction_state")
                                       else "--offsets-decoder")) for d, f in segments]
    results = harness.tools(runs, timeout_s=120) if runs else []
    dumped: dict[Path, dict[int, tuple[Any, ...]]] = {d: {} for d in dirs}
    for (d, f), result in zip(segments, results, strict=True):
        out.segments += 1
        if result.exit_code != 0 or result.stderr.strip():
            out.problems.append(f"{f}: kafka-dump-log exit {result.exit_code}: {result.stderr.strip()[:300]}")
        dumped[d].update(_parse_dump(result.stdout, f, out))
    for d in dirs:
        _compare_dir(d, dumped[d], out)
    return out


def _parse_dump(text: str, segment: Path, out: Comparison) -> Iterator[tuple[int, tuple[Any, ...]]]:
    """Kafka's decoded records of one segment: offset -> ("marker", type, coordinator epoch) or ("record", key text,
    payload text)."""
    for line in text.splitlines():
        if not line.startswith("| offset:"):
            continue
        m = _RECORD.match(line)
        if m is None:
            out.problems.append(f"{segment}: a record kafka-dump-log printed without a decoded key: {line[:200]}")
            continue
        if m.group(3) is not None:
            yield int(m.group(1)), ("marker", m.group(3), int(m.group(4)))
            continue
        key, _, payload = m.group(2).partition(" payload: ")
        yield int(m.group(1)), ("record", key, payload)


def _compare_dir(directory: Path, dumped: dict[int, tuple[Any, ...]], out: Comparison) -> None:
    from kcoord.impl.storage.batch import decode_end_txn_marker
    from kcoord.impl.storage.log import read_partition_dir

    txn = directory.name.startswith("__transaction_state")
    seen: set[int] = set()
    for batch in read_partition_dir(directory, on_tail=lambda s, stop: out.problems.append(
            f"{s}: kcoord's reader stopped at position {stop.position}: {stop.reason.value} {stop.detail}")):
        for record in batch.records:
            seen.add(record.offset)
            out.records += 1
            where = f"{directory.name} offset {record.offset}"
            theirs = dumped.get(record.offset)
            if theirs is None:
                out.problems.append(f"{where}: kcoord reads a record kafka-dump-log did not print")
                continue
            if batch.is_control:
                marker = decode_end_txn_marker(record)
                ours = ("marker", marker.control_type.name, marker.coordinator_epoch)
                out.count("marker")
                if ours != theirs:
                    out.problems.append(f"{where}: marker {ours[1:]} here, {theirs[1:]} in Kafka's dump")
                continue
            if theirs[0] != "record":
                out.problems.append(f"{where}: a record here, {theirs} in Kafka's dump")
                continue
            check = _compare_txn if txn else _compare_group
            out.problems.extend(f"{where}: {p}" for p in check(record.key, record.value, theirs[1], theirs[2], out))
    for offset in sorted(set(dumped) - seen):
        out.problems.append(f"{directory.name} offset {offset}: kafka-dump-log printed a record kcoord does not read")


# ---------------------------------------------------------------- __transaction_state


def _compare_txn(key: bytes | None, value: bytes | None, their_key: str, their_value: str,
                 out: Comparison) -> list[str]:
    from kcoord.impl.storage import txn_log_schema as schema

    try:
        transactional_id = schema.decode_key(key or b"").transactional_id
        decoded = schema.decode_value(value)
    except ValueError as e:
        return [f"kcoord cannot decode it: {e}"]
    problems = []
    if their_key != f"transaction_metadata::transactionalId={transactional_id}":
        problems.append(f"key {transactional_id!r} here, {their_key!r} in Kafka's dump")
    if decoded is None:
        out.count("transaction tombstone")
        return problems + ([] if their_value == "<DELETE>" else [f"a tombstone here, {their_value!r} in Kafka's"])
    out.count(f"transaction value {schema.value_version(value or b'')} client version "
              f"{decoded.client_transaction_version}")
    partitions = sorted(f"{p.topic}-{i}" for p in decoded.transaction_partitions or () for i in p.partition_ids)
    ours = (f"producerId:{decoded.producer_id},producerEpoch:{decoded.producer_epoch},"
            f"state={_TXN_STATES[int(decoded.transaction_status)]},partitions=[{','.join(partitions)}],"
            f"txnLastUpdateTimestamp={decoded.transaction_last_update_timestamp_ms},"
            f"txnTimeoutMs={decoded.transaction_timeout_ms}")
    theirs = re.sub(r"partitions=\[([^]]*)\]", lambda m: "partitions=[" + ",".join(sorted(filter(
        None, m.group(1).split(",")))) + "]", their_value)
    return problems + ([] if ours == theirs else [f"value {ours!r} here, {theirs!r} in Kafka's dump"])


# ---------------------------------------------------------------- __consumer_offsets


def _compare_group(key: bytes | None, value: bytes | None, their_key: str, their_value: str,
                   out: Comparison) -> list[str]:
    from kcoord.impl.storage import group_log_schema as schema

    try:
        rtype = schema.record_type(key or b"")
        decoded_key = schema.decode_key(key or b"")
        decoded = schema.decode_value(rtype, value)
    except ValueError as e:
        return [f"kcoord cannot decode it: {e}"]
    try:
        k, v = json.loads(their_key), None if their_value == "<DELETE>" else json.loads(their_value)
    except json.JSONDecodeError:
        return [f"Kafka's dump did not decode it: key {their_key[:100]!r} payload {their_value[:100]!r}"]
    problems = [] if int(k["type"]) == rtype else [f"record type {rtype} here, {k['type']} in Kafka's dump"]
    problems += _fields("key", k["data"], decoded_key)
    if decoded is None or v is None:
        out.count(f"consumer_offsets key {rtype} tombstone")
        return problems + ([] if decoded is None and v is None else ["a tombstone on one side only"])
    version = int.from_bytes((value or b"")[:2], "big", signed=True)
    out.count(f"consumer_offsets key {rtype} value {version}")
    if int(v["version"]) != version:
        problems.append(f"value version {version} here, {v['version']} in Kafka's dump")
    return problems + _fields("value", v["data"], decoded)


def _fields(where: str, theirs: Any, ours: Any) -> list[str]:
    """Every field Kafka's JSON shows, against kcoord's decoded dataclass (camelCase to snake_case names; bytes as
    base64, topic ids as Kafka's base64 Uuid text)."""
    if isinstance(theirs, dict) and isinstance(ours, bytes) and where.endswith(("subscription", "assignment")):
        try:  # a classic consumer group's member data: Kafka's decoder prints the consumer protocol's fields
            ours = _consumer_protocol(ours, "Subscription" if where.endswith("subscription") else "Assignment")
        except ValueError as e:
            return [f"{where}: Kafka's dump decodes it, kcoord's consumer-protocol reader cannot: {e}"]
    if isinstance(theirs, dict):
        if not dataclasses.is_dataclass(ours):
            return [f"{where}: {theirs!r} in Kafka's dump, {ours!r} here"]
        problems = []
        names = {f.name for f in dataclasses.fields(ours)}
        for name, value in theirs.items():
            attr = _snake(name)
            if attr not in names:
                problems.append(f"{where}.{name}: Kafka's dump has a field kcoord's record has not")
                continue
            problems += _fields(f"{where}.{name}", value, getattr(ours, attr))
        return problems
    if isinstance(theirs, list):
        ours_list = list(ours) if isinstance(ours, tuple | list) else None
        if ours_list is None or len(ours_list) != len(theirs):
            return [f"{where}: {theirs!r} in Kafka's dump, {ours!r} here"]
        return [p for t, o in zip(theirs, ours_list, strict=True) for p in _fields(where, t, o)]
    return [] if theirs == _json(ours) else [f"{where}: {theirs!r} in Kafka's dump, {_json(ours)!r} here"]


def _consumer_protocol(data: bytes, kind: str) -> Any:
    """ConsumerProtocolSubscription/Assignment bytes (version-prefixed) as kio's entity of that version."""
    import importlib

    from kio.serial import entity_reader
    from kio.serial.errors import SerialError

    if len(data) < 2:
        raise ValueError(f"{len(data)} bytes, too short for a version")
    version = min(int.from_bytes(data[:2], "big", signed=True), 3)
    schema = "consumer_protocol_subscription" if kind == "Subscription" else "consumer_protocol_assignment"
    module = importlib.import_module(f"kio.schema.{schema}.v{version}.data")
    try:
        entity, _ = entity_reader(getattr(module, f"ConsumerProtocol{kind}"))(data[2:], 0)
    except SerialError as e:
        raise ValueError(str(e)) from e
    return entity


def _json(value: Any) -> Any:
    """A decoded value as Kafka's JsonConverter prints it."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, uuid.UUID):
        return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")
    return value


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def summary(kinds: dict[str, int]) -> Sequence[str]:
    return [f"{n} {kind}" for kind, n in sorted(kinds.items())]
