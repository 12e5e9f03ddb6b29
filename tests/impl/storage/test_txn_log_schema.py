"""__transaction_state records: exact bytes per TransactionLogKey.json / TransactionLogValue.json, both versions."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kcoord.impl.storage.txn_log_schema import (
    SchemaError,
    TransactionLogKey,
    TransactionLogValue,
    TransactionStatus,
    TxnPartitions,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    value_version,
    value_version_for,
)


def _classic_string(s: str) -> bytes:
    return struct.pack(">h", len(s.encode())) + s.encode()


def _compact_string(s: str) -> bytes:
    return bytes([len(s.encode()) + 1]) + s.encode()  # unsigned varint, small lengths only


ONGOING = TransactionLogValue(
    producer_id=1000, producer_epoch=3, transaction_timeout_ms=60_000,
    transaction_status=TransactionStatus.ONGOING,
    transaction_partitions=(TxnPartitions("orders", (0, 2)),),
    transaction_last_update_timestamp_ms=1_700_000_000_500, transaction_start_timestamp_ms=1_700_000_000_000,
)


def test_key_bytes() -> None:
    key = TransactionLogKey("txn-1")
    assert encode_key(key) == b"\x00\x00" + _classic_string("txn-1")
    assert decode_key(encode_key(key)) == key
    with pytest.raises(SchemaError, match="unknown key version 1"):
        decode_key(b"\x00\x01" + _classic_string("txn-1"))
    with pytest.raises(SchemaError, match="trailing"):
        decode_key(encode_key(key) + b"\x00")


def test_value_v0_bytes() -> None:
    expected = (struct.pack(">hqhib", 0, 1000, 3, 60_000, 1)
                + struct.pack(">i", 1) + _classic_string("orders") + struct.pack(">iii", 2, 0, 2)
                + struct.pack(">qq", 1_700_000_000_500, 1_700_000_000_000))
    assert encode_value(ONGOING, 0) == expected
    assert decode_value(expected) == ONGOING
    assert value_version(expected) == 0


def test_value_v1_bytes_with_tagged_fields() -> None:
    value = TransactionLogValue(**{**_fields(ONGOING), "previous_producer_id": 7, "next_producer_id": 2000,
                                   "client_transaction_version": 2})
    expected = (struct.pack(">hqhib", 1, 1000, 3, 60_000, 1)
                + bytes([2]) + _compact_string("orders") + bytes([3]) + struct.pack(">ii", 0, 2) + b"\x00"
                + struct.pack(">qq", 1_700_000_000_500, 1_700_000_000_000)
                + bytes([3])  # three tagged fields, in tag order: tag, size, value
                + bytes([0, 8]) + struct.pack(">q", 7)
                + bytes([1, 8]) + struct.pack(">q", 2000)
                + bytes([2, 2]) + struct.pack(">h", 2))
    assert encode_value(value, 1) == expected
    assert decode_value(expected) == value


def test_value_v1_defaults_are_not_written_and_unknown_tags_are_skipped() -> None:
    encoded = encode_value(ONGOING, 1)
    assert encoded is not None and encoded.endswith(b"\x00")  # no tagged fields
    # KIP-939's NextProducerEpoch (tag 3) from a newer Kafka: skipped.
    with_unknown = encoded[:-1] + bytes([1, 3, 2]) + struct.pack(">h", 9)
    assert decode_value(with_unknown) == ONGOING


def test_empty_state_writes_null_partitions() -> None:
    empty = TransactionLogValue(5, 0, 1000, TransactionStatus.EMPTY, None, 10, -1)
    v0 = encode_value(empty, 0)
    v1 = encode_value(empty, 1)
    assert v0 is not None and v0[17:21] == b"\xff\xff\xff\xff"  # int32 -1: null array
    assert v1 is not None and v1[17] == 0  # compact null
    assert decode_value(v0) == decode_value(v1) == empty
    with pytest.raises(SchemaError, match="Empty must have no partitions"):
        encode_value(TransactionLogValue(5, 0, 1000, TransactionStatus.EMPTY, (TxnPartitions("t", (1,)),), 1, 1), 1)


def test_complete_state_with_no_partitions_is_an_empty_array() -> None:
    done = TransactionLogValue(5, 1, 1000, TransactionStatus.COMPLETE_COMMIT, (), 10, 5)
    assert decode_value(encode_value(done, 0)) == done
    assert decode_value(encode_value(done, 1)) == done


def test_version_rules() -> None:
    assert [value_version_for(tv) for tv in (0, 1, 2)] == [0, 1, 1]
    rotated = TransactionLogValue(**{**_fields(ONGOING), "previous_producer_id": 7, "next_producer_id": 8})
    # Version 0 cannot carry the tagged fields; like Kafka, the producer-id links are left out there...
    assert decode_value(encode_value(rotated, 0)) == ONGOING
    # ...but a non-default ClientTransactionVersion is refused (Kafka throws UnsupportedVersionException).
    with pytest.raises(SchemaError, match="ClientTransactionVersion=2"):
        encode_value(TransactionLogValue(**{**_fields(ONGOING), "client_transaction_version": 2}), 0)
    with pytest.raises(SchemaError, match="cannot write version 2"):
        encode_value(ONGOING, 2)
    assert encode_value(None, 1) is None and decode_value(None) is None  # tombstone


@pytest.mark.parametrize("bad", [b"\x00", b"\x00\x02" + b"\x00" * 40, b"\x00\x00\x00"])
def test_malformed_values_raise_schema_errors(bad: bytes) -> None:
    with pytest.raises(SchemaError):
        decode_value(bad)


def test_unknown_status_is_rejected() -> None:
    encoded = bytearray(encode_value(ONGOING, 0) or b"")
    encoded[16] = 9
    with pytest.raises(SchemaError, match="unknown TransactionStatus 9"):
        decode_value(bytes(encoded))


def _fields(value: TransactionLogValue) -> dict[str, object]:
    return {f: getattr(value, f) for f in value.__dataclass_fields__}


_int64 = st.integers(-(2**63), 2**63 - 1)


@given(
    st.integers(0, 2**63 - 1), st.integers(-1, 2**15 - 1), st.integers(0, 2**31 - 1),
    st.sampled_from(list(TransactionStatus)),
    st.lists(st.tuples(st.text(max_size=20), st.lists(st.integers(0, 2**31 - 1), max_size=5)), max_size=4),
    _int64, _int64, _int64, _int64, st.integers(0, 2), st.sampled_from([0, 1]),
)
def test_round_trip(pid: int, epoch: int, timeout: int, status: TransactionStatus,
                    parts: list[tuple[str, list[int]]], last: int, start: int, prev: int, nxt: int,
                    client_tv: int, version: int) -> None:
    partitions = None if status is TransactionStatus.EMPTY else tuple(TxnPartitions(t, tuple(p)) for t, p in parts)
    value = TransactionLogValue(pid, epoch, timeout, status, partitions, last, start,
                                prev if version else -1, nxt if version else -1, client_tv if version else 0)
    assert decode_value(encode_value(value, version)) == value
    key = TransactionLogKey(parts[0][0] if parts else "")
    assert decode_key(encode_key(key)) == key
