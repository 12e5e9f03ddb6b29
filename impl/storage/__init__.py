"""kcoord's storage layer: Kafka's on-disk formats for the coordinator logs.

Owns: coordinator-log partitioning (``partitioning``), v2 record batches (``batch``), partition logs with
recovery, durability and compaction (``log``, ``compaction``), the ``__transaction_state`` and
``__consumer_offsets`` record schemas (``txn_log_schema``, ``group_log_schema``), and durable producer-id blocks
(``producer_ids``). Import the submodules directly; this package re-exports only the most used names.
Must not import ``kcoord.model``.
"""

from __future__ import annotations

from .batch import ControlType, Record, RecordBatch, encode_batch, encode_new_batch
from .batch_decoder import decode_batches
from .log import AppendInfo, Durability, PartitionLog, RecoveryReport, read_partition_dir
from .partitioning import java_string_hash, partition_for

__all__ = [
    "AppendInfo",
    "ControlType",
    "Durability",
    "PartitionLog",
    "Record",
    "RecordBatch",
    "RecoveryReport",
    "decode_batches",
    "encode_batch",
    "encode_new_batch",
    "java_string_hash",
    "partition_for",
    "read_partition_dir",
]
