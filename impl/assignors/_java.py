"""Java semantics the assignors depend on: string order and hashing, and java.util.HashMap iteration order.

Kafka's assignors are Java, and a few of their tie-breaks are not written down anywhere but fall out of the JDK:
strings compare by UTF-16 code unit (not by code point, as Python does), and some loops walk a
``java.util.HashMap`` or ``HashSet``, whose iteration order is fixed by ``hashCode``, the table capacity and the
insertion order. This module reproduces exactly those pieces, so that an assignor restated in Python picks the same
member or partition Java would.

HashMap model (JDK 8-21): a key lands in bucket ``spread(hash) & (capacity - 1)`` with
``spread(h) = h ^ (h >>> 16)``; a bucket is a list in insertion order (resizing splits a bucket in two and keeps
the relative order); iteration walks buckets from 0. Capacity starts at 16 (``new HashMap<>()``) or at
``tableSizeFor(max(n / 0.75 + 1, 16))`` (``new HashSet<>(collection)``) and doubles when the size exceeds 3/4 of
it, or when a bucket reaches 9 entries while the capacity is below 64. A bucket of 9 or more entries in a table
of 64 or more becomes a red-black tree whose iteration order is not modelled: such a bucket keeps insertion order
here, which is approximate (Java's own order there can even depend on identity hash codes). It takes 9 keys whose
spread hashes share their low bits, which ordinary member ids and partition numbers do not produce;
:attr:`HashOrder.approximate` reports it.

Owns: nothing stateful. Imports: the standard library only.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Hashable, Iterable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)

_MASK32 = 0xFFFFFFFF
_DEFAULT_CAPACITY = 16
_TREEIFY_THRESHOLD = 8
_MIN_TREEIFY_CAPACITY = 64


def string_sort_key(value: str) -> bytes:
    """A key that orders strings as Java's ``String.compareTo`` does (by UTF-16 code unit)."""
    return value.encode("utf-16-be", "surrogatepass")


def string_hash(value: str) -> int:
    """Java's ``String.hashCode()``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units, as a signed int32."""
    h = 0
    data = value.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & _MASK32
    return h - (1 << 32) if h & 0x80000000 else h


def int_hash(value: int) -> int:
    """Java's ``Integer.hashCode()``."""
    return to_int32(value)


def topic_partition_hash(topic_hash: int, partition: int) -> int:
    """``org.apache.kafka.common.TopicPartition.hashCode()``: ``31 * (31 + partition) + topic.hashCode()``."""
    return to_int32(31 * (31 + partition) + topic_hash)


def uuid_hash(value: uuid.UUID) -> int:
    """``org.apache.kafka.common.Uuid.hashCode()``: fold ``msb ^ lsb`` to 32 bits."""
    msb, lsb = uuid_longs(value)
    h = (msb ^ lsb) & 0xFFFFFFFFFFFFFFFF
    return to_int32((h >> 32) ^ h)


def uuid_longs(value: uuid.UUID) -> tuple[int, int]:
    """The signed (mostSignificantBits, leastSignificantBits) pair Kafka's ``Uuid`` holds."""
    raw = value.int
    return to_int64(raw >> 64), to_int64(raw & 0xFFFFFFFFFFFFFFFF)


def uuid_sort_key(value: uuid.UUID) -> tuple[int, int]:
    """A key that orders UUIDs as Kafka's ``Uuid.compareTo`` does (signed longs, most significant first)."""
    return uuid_longs(value)


def to_int32(value: int) -> int:
    value &= _MASK32
    return value - (1 << 32) if value & 0x80000000 else value


def to_int64(value: int) -> int:
    value &= 0xFFFFFFFFFFFFFFFF
    return value - (1 << 64) if value & (1 << 63) else value


def _spread(h: int) -> int:
    h &= _MASK32
    return h ^ (h >> 16)


def table_size_for(capacity: int) -> int:
    """``HashMap.tableSizeFor``: the smallest power of two >= capacity (at least 1)."""
    n = 1
    while n < capacity:
        n <<= 1
    return n


def hash_set_copy_capacity(size: int) -> int:
    """Table capacity of ``new HashSet<>(collection)`` for a collection of ``size`` elements."""
    return table_size_for(max(int(size / 0.75) + 1, _DEFAULT_CAPACITY))


class HashOrder(Generic[K]):
    """Tracks where keys sit in a ``java.util.HashMap`` so its iteration order can be read back.

    Only the positions are modelled (bucket and insertion sequence), not the values. ``first()`` is what
    ``map.keySet().iterator().next()`` returns; ``ordered()`` is the whole iteration.
    """

    __slots__ = ("_bucket_sizes", "_capacity", "_entries", "_hash", "_seq", "approximate")

    def __init__(self, hash_fn: Callable[[K], int], capacity: int = _DEFAULT_CAPACITY) -> None:
        self._hash = hash_fn
        self._capacity = capacity
        self._entries: dict[K, tuple[int, int]] = {}  # key -> (spread hash, insertion sequence)
        self._bucket_sizes: dict[int, int] = {}
        self._seq = 0
        self.approximate = False  # a bucket Java would have turned into a tree (see the module docstring)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    @property
    def capacity(self) -> int:
        return self._capacity

    def add(self, key: K) -> None:
        """``put``: a key already present keeps its position."""
        if key in self._entries:
            return
        spread = _spread(self._hash(key))
        bucket = spread & (self._capacity - 1)
        already = self._bucket_sizes.get(bucket, 0)
        self._entries[key] = (spread, self._seq)
        self._seq += 1
        self._bucket_sizes[bucket] = already + 1
        if already >= _TREEIFY_THRESHOLD:
            if self._capacity < _MIN_TREEIFY_CAPACITY:
                self._resize()
            else:
                self.approximate = True
        if len(self._entries) > self._capacity * 3 // 4:
            self._resize()

    def remove(self, key: K) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            bucket = entry[0] & (self._capacity - 1)
            self._bucket_sizes[bucket] -= 1

    def _resize(self) -> None:
        self._capacity *= 2
        sizes: dict[int, int] = {}
        mask = self._capacity - 1
        for spread, _ in self._entries.values():
            sizes[spread & mask] = sizes.get(spread & mask, 0) + 1
        self._bucket_sizes = sizes

    def _position(self, key: K) -> tuple[int, int]:
        spread, seq = self._entries[key]
        return spread & (self._capacity - 1), seq

    def first(self) -> K:
        """The key ``iterator().next()`` returns. The map must not be empty."""
        return min(self._entries, key=self._position)

    def ordered(self) -> list[K]:
        return sorted(self._entries, key=self._position)


def hash_map_order(keys: Iterable[K], hash_fn: Callable[[K], int], capacity: int = _DEFAULT_CAPACITY) -> list[K]:
    """Iteration order of a HashMap (initial table ``capacity``) after putting ``keys`` in the given order."""
    order: HashOrder[K] = HashOrder(hash_fn, capacity)
    for key in keys:
        order.add(key)
    return order.ordered()


def string_hash_map_order(keys: Iterable[str]) -> list[str]:
    """Iteration order of ``new HashMap<String, V>()`` after putting ``keys`` in the given order."""
    return hash_map_order(keys, string_hash)
