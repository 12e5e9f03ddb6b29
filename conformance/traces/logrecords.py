"""Coordinator log folders → the records in them, decoded, with where each one is and what came before it.

Owns: `Entry` (one record of a `__transaction_state-N` / `__consumer_offsets-N` folder: its place — folder, offset,
timestamp, leader epoch — its batch's producer id, epoch and transactional/control flags, and whether every offset
before it is still in the log), `entries(folder)` (the folder's records in offset order, read with
`kcoord.impl.storage.log.read_partition_dir`), `StateRecord` (a record that is the whole persisted state of one
instance: a TransactionLogValue, a GroupMetadataValue) and `state_records` (the state records of a folder, each with
its key's previous record).

What a record follows. Compaction removes records, never reorders them, and keeps a key's last value: the surviving
records of a key are a suffix of its history. A key's first surviving record follows the fresh instance when no
offset before it is missing (nothing was removed before it: it was the key's first record; Kafka's and kcoord's
logs number records densely from 0), else it is a *snapshot* of unknown history. After a tombstone the next record
follows the fresh instance again.
Must not import: pyspark, kcoord.cli.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LOG_DIR = re.compile(r"^(__transaction_state|__consumer_offsets)-(\d+)$")
PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")  # any partition folder of a broker's log directory


@dataclass(frozen=True, slots=True)
class Place:
    """Where a record is: its partition folder's name, offset and timestamp."""

    partition: str
    offset: int
    ts_ms: int

    def __str__(self) -> str:
        return f"{self.partition}@{self.offset}"


@dataclass(frozen=True, slots=True)
class Entry:
    place: Place
    leader_epoch: int
    producer_id: int
    producer_epoch: int
    transactional: bool
    control: bool
    key: bytes | None
    value: bytes | None
    dense: bool  # every offset before this one is in the log (nothing was removed before it)
    batch: Any = None  # the `RecordBatch` the record is in (its base offset, sequences, timestamps)
    record: Any = None  # the `Record` itself (a control record's marker is decoded from it)

    @property
    def last_in_batch(self) -> bool:
        return self.record is self.batch.records[-1]


def topic_of(folder: str) -> str:
    match = LOG_DIR.match(os.path.basename(os.path.normpath(folder)))
    if match is None:
        raise ValueError(f"{folder} is not a coordinator partition folder")
    return match.group(1)


def entries(folder: str, on_tail: Callable[[Path, Any], None] | None = None) -> Iterator[Entry]:
    """Every record of a partition folder, control records included, in offset order."""
    from kcoord.impl.storage.log import read_partition_dir

    name = os.path.basename(os.path.normpath(folder))
    expected = 0
    dense = True
    for batch in read_partition_dir(folder, on_tail=on_tail):
        for record in batch.records:
            if record.offset != expected:
                dense = False
            expected = record.offset + 1
            yield Entry(Place(name, record.offset, record.timestamp_ms), batch.partition_leader_epoch,
                        batch.producer_id, batch.producer_epoch, batch.is_transactional, batch.is_control,
                        record.key, record.value, dense, batch, record)


@dataclass(slots=True)
class StateRecord:
    """A record holding one instance's whole persisted state (`values` None: a tombstone), and what it follows
    (`follows`): the key's `previous` record, the fresh instance, or nothing known (a snapshot)."""

    machine: str
    key: str
    place: Place
    leader_epoch: int
    values: Mapping[str, Any] | None
    seq: int = 0  # the key's record number in the folder (compaction keeps a suffix of the key's history)
    follows: str = "snapshot"  # "previous" | "fresh" | "snapshot"
    previous: StateRecord | None = None  # set while `follows == "previous"` and the record is being checked

    @property
    def tombstone(self) -> bool:
        return self.values is None


@dataclass(slots=True)
class Keys:
    """Per key of one folder, its last record: the next one follows it."""

    last: dict[tuple[str, str], StateRecord] = field(default_factory=dict)

    def follow(self, record: StateRecord, dense: bool) -> StateRecord:
        """Link `record` to what it follows and remember it as its key's last record."""
        k = (record.machine, record.key)
        previous = self.last.get(k)
        if previous is None:
            record.follows = "fresh" if dense else "snapshot"
        else:
            record.seq = previous.seq + 1
            record.follows = "fresh" if previous.tombstone else "previous"
            record.previous = None if previous.tombstone else previous
            previous.previous = None  # checked already: only one record back is kept per key
        self.last[k] = record
        return record
