"""`TransactionShardSpec`: what the runtime needs to know about a `__transaction_state` partition.

Owns: `replay` and the end of a load (the last value per key wins, a tombstone removes the id: the load keeps only
each key's latest raw value — the log's scan puts plain batches' records straight into `last_values`, the
runtime's `LastValueReplay`, and `replay` takes the rest — and `on_loaded` decodes those once and
`shard.install`s them: a partition of 1M records for 10k transactional ids decodes 10k values, not 1M; a load
installs a snapshot, as the runtime's `install` says, so skipping the superseded values loses nothing),
`check_record` (on the live path, the record a plan wrote must decode to its change's post-state — the second of
the two paths that compute the same thing; the runtime calls it when the shard's `check_records` is on), and the
coordinator's part of `on_loaded` (re-send the markers of every PrepareCommit/PrepareAbort transaction, start the
periodic timeout-abort and expiration tasks).
Must not import: `kcoord.model`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from operator import itemgetter
from typing import Any, NoReturn

from ..errors import IllegalStateError
from ..runtime.shard import Change, RecordBytes, Shard
from ..statemachine import MachineTable
from ..storage.batch import LastValues, RecordBatch
from ..storage.txn_log_schema import SchemaError, value_version
from .records import PERSISTED_FIELDS, RecordCodec, decode_persisted, persisted_view

MACHINE = "Transaction"


class TransactionShardSpec:
    def __init__(self, table: MachineTable, codec: RecordCodec, on_loaded: Callable[[Shard], None]) -> None:
        self.table = table
        self.tables: Mapping[str, MachineTable] = {MACHINE: table}
        self.codec = codec
        self.value_version = codec.version
        self._checked = PERSISTED_FIELDS if codec.version >= 1 else PERSISTED_FIELDS[:-3]
        self._expected = itemgetter(*self._checked)  # post-state -> the persisted fields, in `_checked` order
        self._final_states = table.final_states
        self._version_prefix = self.value_version.to_bytes(2, "big", signed=True)
        self._partitions = codec.partitions
        self._on_loaded = on_loaded
        self.last_values = LastValues()  # during a load: key -> (last value, its offset), and the scan's counts
        self._replayed = 0  # records taken by `replay`, not by the scan

    @property
    def replayed_records(self) -> int:
        """Records taken in by the loads so far (by the log's scan or by `replay`)."""
        return self._replayed + self.last_values.records

    def replay(self, shard: Shard, batch: RecordBatch, key: bytes | None, value: bytes | None, offset: int) -> None:
        if key is None:
            raise SchemaError(f"__transaction_state-{shard.partition} offset {offset}: a record without a key")
        self.last_values.latest[key] = (value, offset)
        self._replayed += 1

    def replay_records(self, shard: Shard, batch: RecordBatch) -> None:
        """`replay` for every record of `batch` (the batches the log's last-value scan does not take itself)."""
        latest = self.last_values.latest
        for record in batch.records:
            key = record.key
            if key is None:
                raise SchemaError(f"__transaction_state-{shard.partition} offset {record.offset}: a record without a "
                                  "key")
            latest[key] = (record.value, record.offset)
        self._replayed += len(batch.records)

    def _install_latest(self, shard: Shard) -> None:
        latest = self.last_values.latest
        self.last_values = LastValues(records=self.last_values.records)
        for key, (value, offset) in latest.items():
            if value is None:
                continue  # expired: nothing was installed for it in this load
            try:
                transactional_id = self.codec.transactional_id(key)
                instance = self.codec.decode(transactional_id, value)
            except SchemaError as e:
                raise SchemaError(f"__transaction_state-{shard.partition} offset {offset}: {e}") from e
            shard.install(self.table, (transactional_id,), instance)

    def check_record(self, change: Change, record: RecordBytes) -> None:
        key, value = record
        post = change.decision.post
        (transactional_id,) = change.key
        if post is None or key != self.codec.key(transactional_id):
            raise IllegalStateError(f"transaction {transactional_id!r}: record key {key!r} does not describe "
                                    f"change {change.decision.event} (post {post})")
        if post["state"] in self._final_states:
            if value is not None:
                raise IllegalStateError(f"transaction {transactional_id!r}: {post['state']} must be a tombstone")
            return
        if value is None:
            raise IllegalStateError(f"transaction {transactional_id!r}: a tombstone for state {post['state']}")
        if value[:2] != self._version_prefix:  # the version, compared as the two bytes it is written as
            raise IllegalStateError(f"transaction {transactional_id!r}: value version {value_version(value)} written, "
                                    f"expected {self.value_version}")
        written = decode_persisted(value, self._partitions)  # every persisted field, decoded from the bytes written
        if written[:len(self._checked)] != self._expected(post):
            _mismatch(transactional_id, written, post, self.value_version)

    def on_loaded(self, shard: Shard) -> None:
        self._install_latest(shard)
        self._on_loaded(shard)


def _mismatch(transactional_id: str, written: tuple[Any, ...], post: Mapping[str, Any], version: int) -> NoReturn:
    expected = persisted_view(post, version)
    actual = persisted_view(dict(zip(PERSISTED_FIELDS, written, strict=True)), version)
    diff = {k: (v, expected[k]) for k, v in actual.items() if v != expected[k]}
    raise IllegalStateError(f"transaction {transactional_id!r}: the record says {diff} (written, expected)")
