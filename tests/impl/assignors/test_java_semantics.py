"""Java string order/hash and HashMap iteration order, checked against values printed by OpenJDK 17."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from kcoord.impl.assignors._java import (
    HashOrder,
    hash_map_order,
    int_hash,
    string_hash,
    string_hash_map_order,
    string_sort_key,
    topic_partition_hash,
    uuid_hash,
    uuid_sort_key,
)


def test_string_hash_matches_java() -> None:
    # "hello".hashCode(), "polygenelubricants".hashCode() (Integer.MIN_VALUE), a surrogate pair, a collision.
    assert string_hash("") == 0
    assert string_hash("hello") == 99162322
    assert string_hash("polygenelubricants") == -2147483648
    assert string_hash("\U0001f600x") == 54959989
    assert string_hash("Aa") == string_hash("BB") == 2112


def test_string_order_is_by_utf16_code_unit() -> None:
    # Collections.sort(["\uFFFF", "😀", "z", "é"]) in Java: the surrogate pair (0xD83D...) sorts before U+FFFF.
    values = ["\uffff", "\U0001f600", "z", "\u00e9"]
    assert sorted(values, key=string_sort_key) == ["z", "\u00e9", "\U0001f600", "\uffff"]
    assert sorted(values) != sorted(values, key=string_sort_key)  # Python's code-point order differs


def test_hash_map_order_matches_java() -> None:
    # new HashMap<>() with "consumer-0".."consumer-19" put in order; keySet() printed by Java.
    assert string_hash_map_order(f"consumer-{i}" for i in range(20)) == [
        "consumer-11", "consumer-10", "consumer-6", "consumer-17", "consumer-5", "consumer-16", "consumer-4",
        "consumer-19", "consumer-3", "consumer-18", "consumer-2", "consumer-13", "consumer-1", "consumer-12",
        "consumer-0", "consumer-15", "consumer-14", "consumer-9", "consumer-8", "consumer-7",
    ]
    # "Aa" and "BB" share a bucket: insertion order decides between them.
    keys = ["c", "b", "a", "Aa", "BB", "member-1", "member-10", "\u00e9", "\U0001f600"]
    assert string_hash_map_order(keys) == ["Aa", "BB", "a", "b", "c", "member-1", "\U0001f600", "\u00e9", "member-10"]
    assert string_hash_map_order(["BB", "Aa"]) == ["BB", "Aa"]


def test_small_ints_iterate_ascending() -> None:
    # A HashMap<Integer, _> whose keys are below its capacity iterates in ascending order.
    assert hash_map_order([9, 3, 7, 1, 0], int_hash) == [0, 1, 3, 7, 9]
    assert hash_map_order([17, 1], int_hash) == [17, 1]  # same bucket of a 16-slot table: insertion order


def test_hash_order_resizes_and_removes() -> None:
    order: HashOrder[int] = HashOrder(int_hash)
    for k in range(13):  # the 13th key exceeds 16 * 3/4 and doubles the table
        order.add(k)
    assert order.capacity == 32
    order.remove(0)
    assert order.first() == 1
    assert 0 not in order and len(order) == 12


def test_bucket_overflow_below_64_slots_resizes() -> None:
    # Nine keys in one bucket of a 16-slot table make Java resize (treeifyBin), which separates 0 and 16.
    order: HashOrder[int] = HashOrder(int_hash)
    for k in range(0, 9 * 64, 64):
        order.add(k)
    assert order.capacity == 32
    assert not order.approximate


def test_topic_partition_and_uuid_hashes() -> None:
    # TopicPartition("t", 3).hashCode() == 31 * (31 + 3) + "t".hashCode()
    assert topic_partition_hash(string_hash("t"), 3) == 31 * 34 + ord("t")
    u = uuid.UUID(int=(1 << 64) | 2)
    assert uuid_hash(u) == 3
    assert uuid_sort_key(uuid.UUID(int=1 << 127)) < uuid_sort_key(uuid.UUID(int=0))  # signed: top bit is negative


@given(st.lists(st.text(max_size=6), unique=True, max_size=40))
def test_hash_map_order_is_a_permutation(keys: list[str]) -> None:
    assert sorted(string_hash_map_order(keys)) == sorted(keys)
