"""Damaging a copy of a `__transaction_state` partition the ways a buggy coordinator or a bad copy could: the checks'
own test of themselves on real logs.

Owns: `DAMAGES` and `damage(folder, kind)`, which rewrites the partition folder (a copy: never point it at a live
broker's data) with one damage and says which record it touched:
- `drop`: a key's Prepare* record is removed (the Complete* then follows the Ongoing record directly);
- `swap`: a key's Prepare* and Complete* values change places (their keys and offsets stay);
- `field`: one field of one value changes (a Prepare* record's producer epoch, + 7);
- `reappend`: an old value of a key (one with a lower producer epoch than the key's last one) is appended again at
  the end of the log, as a coordinator replaying stale state would.
The folder is rewritten as one segment (offsets, timestamps and batch attributes kept; indexes dropped, the readers
ignore them) with kcoord's batch encoder.
Must not import: pyspark, kcoord.cli.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

DAMAGES = ("drop", "swap", "field", "reappend")


class NothingToDamage(ValueError):
    """The partition has no record the damage applies to."""


def _load(folder: Path) -> list[Any]:
    from kcoord.impl.storage.log import read_partition_dir

    return list(read_partition_dir(folder))


def _states(batches: list[Any]) -> list[tuple[int, int, str, Any]]:
    """(batch index, record index, transactional id, decoded value) of every non-tombstone value."""
    from kcoord.impl.storage.txn_log_schema import decode_value
    from kcoord.impl.txn.records import decode_txn_key

    out = []
    for b, batch in enumerate(batches):
        for r, record in enumerate(batch.records):
            if record.key is None or record.value is None:
                continue
            out.append((b, r, decode_txn_key(record.key), decode_value(record.value)))
    return out


def _prepared(states: list[tuple[int, int, str, Any]], nth: int) -> tuple[tuple[int, int, str, Any], ...]:
    """The chosen key's Prepare* record directly followed (for that key) by its Complete*."""
    last: dict[str, tuple[int, int, str, Any]] = {}
    found = []
    for s in states:
        before = last.get(s[2])
        if before is not None and _status(before) in (2, 3) and _status(s) in (4, 5):
            found.append((before, s))
        last[s[2]] = s
    if len(found) <= nth:
        raise NothingToDamage(f"no Prepare* record followed by its Complete* (number {nth}) here")
    return found[nth]


def _status(s: tuple[int, int, str, Any]) -> int:
    return int(s[3].transaction_status)


def damage(folder: str | Path, kind: str, key: str | None = None, nth: int = 0) -> str:
    """Apply one damage to the partition folder, to the records of `key` (any key when None) and the `nth` place the
    damage applies to (so several damages can go into one copy); returns what was done (naming the record)."""
    if kind not in DAMAGES:
        raise ValueError(f"unknown damage {kind!r} (choose from {', '.join(DAMAGES)})")
    path = Path(folder)
    batches = _load(path)
    states = [s for s in _states(batches) if key is None or s[2] == key]
    what = _APPLY[kind](batches, states, nth)
    _rewrite(path, batches)
    return what


def _replace(batches: list[Any], b: int, r: int, value: bytes | None, drop: bool = False) -> None:
    batch = batches[b]
    records = list(batch.records)
    if drop:
        del records[r]
    else:
        records[r] = dataclasses.replace(records[r], value=value)
    batches[b] = dataclasses.replace(batch, records=tuple(records))


def _drop(batches: list[Any], states: list[tuple[int, int, str, Any]], nth: int) -> str:
    prepare, _ = _prepared(states, nth)
    offset = batches[prepare[0]].records[prepare[1]].offset
    _replace(batches, prepare[0], prepare[1], None, drop=True)
    return f"dropped the {prepare[2]} Prepare record at offset {offset}"


def _swap(batches: list[Any], states: list[tuple[int, int, str, Any]], nth: int) -> str:
    prepare, complete = _prepared(states, nth)
    a = batches[prepare[0]].records[prepare[1]]
    c = batches[complete[0]].records[complete[1]]
    _replace(batches, prepare[0], prepare[1], c.value)
    _replace(batches, complete[0], complete[1], a.value)
    return f"swapped the {prepare[2]} values at offsets {a.offset} and {c.offset}"


def _field(batches: list[Any], states: list[tuple[int, int, str, Any]], nth: int) -> str:
    from kcoord.impl.storage.txn_log_schema import encode_value, value_version

    prepare, _ = _prepared(states, nth)
    record = batches[prepare[0]].records[prepare[1]]
    value = prepare[3]
    changed = dataclasses.replace(value, producer_epoch=value.producer_epoch + 7)
    _replace(batches, prepare[0], prepare[1], encode_value(changed, value_version(record.value)))
    return f"changed the producer epoch of the {prepare[2]} value at offset {record.offset} to {changed.producer_epoch}"


def _reappend(batches: list[Any], states: list[tuple[int, int, str, Any]], nth: int) -> str:
    from kcoord.impl.storage.batch import Record, RecordBatch

    last: dict[str, tuple[int, int, str, Any]] = {}
    for s in states:
        last[s[2]] = s
    older = [s for s in states if s[3].producer_epoch < last[s[2]][3].producer_epoch]
    for s in older[nth:nth + 1]:
            old = batches[s[0]].records[s[1]]
            tail = batches[-1]
            offset = tail.base_offset + tail.last_offset_delta + 1
            ts = max(r.timestamp_ms for b in batches for r in b.records) + 1
            batches.append(RecordBatch.of([Record(offset, ts, old.key, old.value)],
                                          partition_leader_epoch=tail.partition_leader_epoch))
            return f"appended again the {s[2]} value of offset {old.offset} at offset {offset}"
    raise NothingToDamage("no key has an older value with a lower producer epoch than its last one")


_APPLY: dict[str, Callable[[list[Any], list[tuple[int, int, str, Any]], int], str]] = {
    "drop": _drop, "swap": _swap, "field": _field, "reappend": _reappend}


def _rewrite(folder: Path, batches: list[Any]) -> None:
    from kcoord.impl.storage.batch import encode_batch

    for f in folder.iterdir():
        if f.suffix in (".log", ".index", ".timeindex", ".txnindex", ".snapshot"):
            f.unlink()
    base = batches[0].base_offset if batches else 0
    (folder / f"{base:020d}.log").write_bytes(b"".join(encode_batch(b) for b in batches))
