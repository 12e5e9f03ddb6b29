"""Which coordinator-log partition owns a group id or transactional id.

Owns Kafka's ``partitionFor``: ``Utils.abs(key.hashCode()) % num_partitions`` with Java's ``String.hashCode``
(31-polynomial over UTF-16 code units, int32 wrap-around). This is on the request hot path, so it avoids
per-call allocation beyond one ``encode``. Must not import ``kcoord.model``.
"""

from __future__ import annotations

import functools
import sys

__all__ = ["DEFAULT_NUM_PARTITIONS", "java_string_hash", "kafka_abs", "partition_for"]

DEFAULT_NUM_PARTITIONS = 50
"""``offsets.topic.num.partitions`` and ``transaction.state.log.num.partitions`` defaults."""

_INT32_MIN = -(1 << 31)
_UNMASKED_MAX_UNITS = 256
_UTF16_NATIVE = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode()``: ``h = 31*h + unit`` over UTF-16 code units, as a signed int32.

    Characters outside the BMP count as two code units (a surrogate pair), exactly as in Java.
    """
    units: bytes | memoryview = s.encode("ascii") if s.isascii() else memoryview(s.encode(_UTF16_NATIVE)).cast("H")
    h = 0
    if len(units) <= _UNMASKED_MAX_UNITS:
        # Short keys (the common case): let Python's int grow and wrap once at the end; ~2x faster than masking.
        for unit in units:
            h = 31 * h + unit
        h &= 0xFFFFFFFF
    else:
        for unit in units:
            h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def kafka_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: ``Integer.MIN_VALUE`` maps to 0 (Python's ``abs`` would give 2**31)."""
    return 0 if n == _INT32_MIN else abs(n)


@functools.lru_cache(maxsize=1 << 16)
def partition_for(key: str, num_partitions: int = DEFAULT_NUM_PARTITIONS) -> int:
    """The coordinator-log partition that owns ``key`` (a group id or a transactional id). Remembered for the last
    65,536 keys: Java's string hash in Python costs a microsecond or more, and every request of a group or a
    transaction (a transactional Produce once per partition it verifies) asks it again."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    return kafka_abs(java_string_hash(key)) % num_partitions
