"""partition_for must equal Kafka's Utils.abs(String.hashCode) % 50 exactly (reference §2.11)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kcoord.impl.storage.partitioning import java_string_hash, kafka_abs, partition_for

VECTORS = [
    ("", 0, 0),
    ("known", 102204227, 27),
    ("my-group", -1906497762, 12),
    ("group-id", 506313513, 13),
    ("test-txn", -1147936081, 31),
    ("transactional-id-1", 1051133891, 41),
    ("polygenelubricants", -2147483648, 0),  # Integer.MIN_VALUE: Utils.abs gives 0, Python abs would give 48
    ("😀", 1772899, 49),  # U+1F600 counts as two UTF-16 code units
]


@pytest.mark.parametrize(("key", "hash_value", "partition"), VECTORS)
def test_reference_vectors(key: str, hash_value: int, partition: int) -> None:
    assert java_string_hash(key) == hash_value
    assert partition_for(key) == partition


def _reference_hash(s: str) -> int:
    """The reference's own formulation: big-endian UTF-16 units, masked every step."""
    h = 0
    b = s.encode("utf-16-be")
    for i in range(0, len(b), 2):
        h = (31 * h + ((b[i] << 8) | b[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


@given(st.text(max_size=400))
def test_matches_reference_formulation(s: str) -> None:
    assert java_string_hash(s) == _reference_hash(s)
    assert 0 <= partition_for(s) < 50
    assert -(1 << 31) <= java_string_hash(s) < (1 << 31)


def test_long_keys_use_the_masked_loop_and_agree() -> None:
    key = "x" * 1000 + "é"
    assert java_string_hash(key) == _reference_hash(key)


def test_kafka_abs_and_partition_count() -> None:
    assert kafka_abs(-(1 << 31)) == 0
    assert kafka_abs(-5) == 5
    assert partition_for("known", 1) == 0
    assert partition_for("known", 7) == 102204227 % 7
    with pytest.raises(ValueError, match="num_partitions must be positive"):
        partition_for("known", 0)
