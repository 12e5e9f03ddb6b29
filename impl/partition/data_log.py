"""A data partition's files: its segment log (client batches appended as they came), and its metadata files.

Owns:
- `DataLog`, a `PartitionLog` that can also append a whole pre-built batch. `PartitionLog.append` builds a new batch
  from `(key, value)` pairs with one timestamp and no headers, which is right for coordinator records but would drop
  a client's per-record timestamps and headers; Kafka keeps the client's batch and only rewrites its base offset
  (and partition leader epoch). `append_batch` does that: the batch is re-encoded at the log end offset, and written
  with exactly `PartitionLog.append`'s write, roll, fsync and undo discipline. (It uses `PartitionLog`'s private
  write helpers: the storage layer has no public "append these bytes" yet; see the partition side's report.)
- `partition.metadata` (Kafka's format: `version: 0` / `topic_id: <base64 uuid>`), written once when the partition is
  created, and `leader-epoch-checkpoint` (Kafka's format: version, count, `epoch start_offset` lines): a single-node
  partition becomes leader again on every open, so each open appends a new leader epoch starting at the log end
  offset. Both are replaced atomically (temp file, fsync, rename, fsync the directory) — except in a new partition
  made with a `SyncLater` (a topic's partitions made together): there they are written in place and made durable
  by its one sync, so a crash before it may leave them missing or empty. An empty `partition.metadata` reads as
  none (the partition manager accepts that only below a partition of the same topic that has one, and rewrites it);
  an empty `leader-epoch-checkpoint` reads as no epochs, for an empty log only.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from uuid import UUID

from ..storage._files import DamagedFileError, SyncLater, atomic_write, fsync_dir, quoted_content
from ..storage.batch import ControlType, RecordBatch, encode_batch, encode_new_batch, end_txn_marker_entry, moved
from ..storage.log import AppendInfo, PartitionLog

PARTITION_METADATA_FILE = "partition.metadata"
LEADER_EPOCH_FILE = "leader-epoch-checkpoint"


class DataLog(PartitionLog):
    """A `PartitionLog` that appends whole batches (see the module docstring)."""

    def append_batch(self, batch: RecordBatch, *, partition_leader_epoch: int) -> AppendInfo:
        """Append `batch` at the log end offset, stamped with `partition_leader_epoch` (its records keep their
        offset deltas: the batch as written is `batch` moved to `info.base_offset`).

        Durability, rolling and failure behave as in `PartitionLog.append`: with per-batch durability the batch is
        fsynced before this returns; on `OSError` nothing of it remains and the offsets are unchanged.
        """
        base_offset = self.log_end_offset
        return self.append_encoded(moved(encode_batch(batch), base_offset, partition_leader_epoch), base_offset,
                                   base_offset + batch.last_offset_delta)

    def append_marker(self, control_type: ControlType, coordinator_epoch: int, producer_id: int, producer_epoch: int,
                      timestamp_ms: int, *, partition_leader_epoch: int) -> AppendInfo:
        """Append a transaction marker's control batch (one COMMIT/ABORT record stamped `timestamp_ms`) at the log
        end offset: the bytes of `append_batch` of that batch (`RecordBatch.of` a marker record, transactional and
        control), encoded at its place in one step (a commit writes one per partition)."""
        base_offset = self.log_end_offset
        data = encode_new_batch([end_txn_marker_entry(control_type, coordinator_epoch)], base_offset=base_offset,
                                timestamp_ms=timestamp_ms, producer_id=producer_id, producer_epoch=producer_epoch,
                                transactional=True, control=True, partition_leader_epoch=partition_leader_epoch)
        return self.append_encoded(data, base_offset, base_offset)



# ---------------------------------------------------------------------------------------------- metadata files


def write_partition_metadata(directory: Path, topic_id: UUID, later: SyncLater | None = None) -> None:
    """Kafka's `partition.metadata` (the topic id in base64url without padding, as `Uuid.toString`): replaced
    atomically, or with `later` written in place, durable at its sync (for a new partition's directory)."""
    data = f"version: 0\ntopic_id: {_uuid_text(topic_id)}\n".encode()
    if later is None:
        atomic_write(directory / PARTITION_METADATA_FILE, data)
    else:
        later.write_new(directory / PARTITION_METADATA_FILE, data)


def read_partition_metadata(directory: Path) -> UUID | None:
    """The topic id of a partition directory, or None when its `partition.metadata` is missing or empty. Anything
    else that is not Kafka's version 0 format raises `DamagedFileError` (the id cannot be guessed)."""
    path = directory / PARTITION_METADATA_FILE
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    if not data:
        return None
    try:
        fields = dict(line.split(": ", 1) for line in data.decode("utf-8").splitlines() if ": " in line)
        if fields.get("version") != "0" or "topic_id" not in fields:
            raise ValueError("no 'version: 0' and 'topic_id: ...' lines")
        text = fields["topic_id"]
        return UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (UnicodeDecodeError, ValueError) as e:  # (binascii.Error is a ValueError)
        topic = directory.name.rpartition("-")[0]
        raise DamagedFileError(path, f"not a partition.metadata file ({quoted_content(data)}: {e})",
                               f"copy partition.metadata from another partition of topic '{topic}' (a topic's "
                               "partitions share its id), or move this folder out of the data directory to drop the "
                               "partition") from None


def _uuid_text(topic_id: UUID) -> str:
    return base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")


def read_leader_epochs(directory: Path, *, log_end_offset: int | None = None) -> list[tuple[int, int]]:
    """The `(epoch, start_offset)` entries of `leader-epoch-checkpoint` (empty when there is none). An empty file
    (a new partition's, cut short by a crash) reads as no entries when the log is known empty (`log_end_offset`
    0); anything else that is not Kafka's version 0 checkpoint raises `DamagedFileError`."""
    path = directory / LEADER_EPOCH_FILE
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    if not data and log_end_offset == 0:
        return []
    try:
        lines = data.decode("ascii").split("\n")
        if len(lines) < 2 or lines[0] != "0":
            raise ValueError("the first line is not version 0")
        count = int(lines[1])
        entries = [tuple(int(x) for x in line.split()) for line in lines[2:2 + count]]
        if len(entries) != count or any(len(e) != 2 for e in entries):
            raise ValueError(f"expected {count} 'epoch offset' lines")
    except (UnicodeDecodeError, ValueError) as e:
        raise DamagedFileError(path, f"not a leader epoch checkpoint ({quoted_content(data)}: {e})",
                               "restore it from a copy, or remove it: the next start then begins a new epoch "
                               "history at the log end, from leader epoch 0 (restart clients that saw a higher "
                               "epoch)") from None
    return [(e[0], e[1]) for e in entries]


def begin_leader_epoch(directory: Path, log_end_offset: int, later: SyncLater | None = None
                       ) -> list[tuple[int, int]]:
    """Record a new leader epoch (one above the last, 0 for the first) starting at `log_end_offset`; return the
    entries as written (the new epoch last). With `later`, durable at its sync: a new checkpoint is written in
    place (a crash before the sync may leave it empty, which reads as no epochs: its log is empty), an existing
    one is replaced atomically."""
    entries = read_leader_epochs(directory, log_end_offset=log_end_offset)
    epoch = entries[-1][0] + 1 if entries else 0
    entries = [e for e in entries if e[1] < log_end_offset] + [(epoch, log_end_offset)]  # truncated tails drop out
    text = "0\n" + f"{len(entries)}\n" + "".join(f"{e} {o}\n" for e, o in entries)
    path = directory / LEADER_EPOCH_FILE
    if later is not None and not path.exists():
        later.write_new(path, text.encode())
    else:
        atomic_write(path, text.encode(), later=later)
    return entries


def create_partition_dir(directory: Path, topic_id: UUID, later: SyncLater | None = None) -> None:
    """The partition directory with its `partition.metadata` (the segment comes with the log): durable now, or at
    `later.sync()` for a directory made here (an existing one's metadata is replaced atomically, now)."""
    if directory.is_dir():
        later = None
    else:
        os.makedirs(directory)
        fsync_dir(directory.parent, later)
    write_partition_metadata(directory, topic_id, later)
