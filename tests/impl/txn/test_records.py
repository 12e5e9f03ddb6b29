"""Instances ↔ `__transaction_state` records: the fast codec against the schema module (both directions, both value
versions), what is and is not persisted, and records the coordinator must never write."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcoord.impl.errors import IllegalStateError
from kcoord.impl.runtime.shard import Change
from kcoord.impl.statemachine import MachineTable
from kcoord.impl.storage.txn_log_schema import SchemaError, decode_value, encode_value
from kcoord.impl.txn.records import (
    PERSISTED_FIELDS,
    RecordCodec,
    decode_instance,
    decode_persisted,
    decode_txn_key,
    encode_instance,
    encode_txn_key,
    group_partitions,
    instance_from_value,
    persisted_view,
    value_from_instance,
)
from kcoord.impl.txn.shard_spec import TransactionShardSpec

TX = MachineTable.load("transaction")
PERSISTED = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort")
int64 = st.integers(-(1 << 63), (1 << 63) - 1)
topics = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)
partition_names = st.frozensets(st.builds(lambda t, p: f"{t}-{p}", topics, st.integers(0, (1 << 31) - 1)),
                                max_size=8)


@st.composite
def instances(draw: Any, version: int) -> dict[str, Any]:
    state = draw(st.sampled_from(PERSISTED))
    inst = TX.fresh({"transactional_id": draw(st.text(max_size=20))})
    inst.update(state=state, producer_id=draw(int64), producer_epoch=draw(st.integers(-1, 32767)),
                txn_timeout_ms=draw(st.integers(-(1 << 31), (1 << 31) - 1)),
                partitions=frozenset() if state == "Empty" else draw(partition_names),
                txn_start_timestamp_ms=draw(int64), txn_last_update_timestamp_ms=draw(int64),
                last_producer_epoch=draw(st.integers(-1, 32767)), has_failed_epoch_fence=draw(st.booleans()))
    if version == 1:
        maybe = st.one_of(st.just(-1), int64)  # -1 leaves the tagged field out: every tag shape gets drawn
        inst.update(previous_producer_id=draw(maybe), next_producer_id=draw(maybe),
                    client_txn_version=draw(st.integers(0, 2)))
    return inst


@pytest.mark.parametrize("version", [0, 1])
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_fast_codec_matches_the_schema_module(version: int, data: Any) -> None:
    inst = data.draw(instances(version))
    fast = encode_instance(inst, version)
    assert fast == encode_value(value_from_instance(inst), version)
    txn_id = inst["transactional_id"]
    decoded = decode_instance(txn_id, fast)
    reference = decode_value(fast)
    assert reference is not None
    assert decoded == instance_from_value(txn_id, reference)
    assert persisted_view(decoded, version) == persisted_view(inst, version)
    assert (decoded["last_producer_epoch"], decoded["has_failed_epoch_fence"]) == (-1, False)  # never persisted
    assert decode_persisted(fast) == tuple(decoded[name] for name in PERSISTED_FIELDS)  # the write path's check


@given(st.text(max_size=40))
def test_keys_round_trip(transactional_id: str) -> None:
    assert decode_txn_key(encode_txn_key(transactional_id)) == transactional_id


def test_empty_writes_null_partitions_and_others_an_array() -> None:
    inst = TX.fresh({"transactional_id": "t"})
    inst.update(producer_id=1, producer_epoch=0)
    value = decode_value(encode_instance(inst, 1))
    assert value is not None and value.transaction_partitions is None
    inst.update(state="PrepareAbort", txn_start_timestamp_ms=5)  # a TV2 abort with nothing added
    value = decode_value(encode_instance(inst, 1))
    assert value is not None and value.transaction_partitions == ()


def test_partitions_are_grouped_by_topic_in_sorted_order() -> None:
    groups = group_partitions({"b-0", "a-10", "a-2", "my-topic-3"})
    assert [(g.topic, g.partition_ids) for g in groups] == [("a", (2, 10)), ("b", (0,)), ("my-topic", (3,))]


@pytest.mark.parametrize("state", ["PrepareEpochFence", "Dead"])
def test_pending_only_states_are_never_written(state: str) -> None:
    inst = TX.fresh({"transactional_id": "t"})
    inst.update(state=state, producer_id=1, producer_epoch=0)
    with pytest.raises(IllegalStateError, match="never written"):
        encode_instance(inst, 1)


def test_version_0_cannot_carry_a_client_transaction_version() -> None:
    inst = TX.fresh({"transactional_id": "t"})
    inst.update(producer_id=1, producer_epoch=0, client_txn_version=2)
    with pytest.raises(SchemaError):
        encode_instance(inst, 0)


def test_unknown_tagged_fields_are_skipped() -> None:
    """KIP-939's NextProducerEpoch (tag 3) in a newer Kafka's record."""
    inst = TX.fresh({"transactional_id": "t"})
    inst.update(producer_id=7, producer_epoch=3, previous_producer_id=6)
    plain = encode_instance(inst, 1)
    tagged_count_at = plain.rindex(b"\x01\x00\x08")  # one tag: 0 (PreviousProducerId), 8 bytes
    with_unknown = plain[:tagged_count_at] + b"\x02" + plain[tagged_count_at + 1:] + b"\x03\x02\x00\x05"
    assert decode_instance("t", with_unknown) == decode_instance("t", plain)


def test_a_bad_record_is_reported_by_the_schema_decoder() -> None:
    inst = TX.fresh({"transactional_id": "t"})
    inst.update(producer_id=1, producer_epoch=0)
    good = encode_instance(inst, 1)
    with pytest.raises(SchemaError):
        decode_instance("t", good[:-3])
    with pytest.raises(SchemaError):
        decode_instance("t", good[:16] + bytes([9]) + good[17:])  # TransactionStatus 9 does not exist
    fence = good[:16] + bytes([7]) + good[17:]  # PrepareEpochFence in a log: never written, so corrupt
    with pytest.raises(SchemaError, match="never written"):
        decode_instance("t", fence)


@pytest.mark.parametrize("version", [0, 1])
def test_long_topic_names_and_many_partitions(version: int) -> None:
    """Lengths above 127 take multi-byte varints at version 1."""
    inst = TX.fresh({"transactional_id": "t" * 300})
    inst.update(state="Ongoing", producer_id=1, producer_epoch=0, txn_start_timestamp_ms=1,
                partitions=frozenset({f"{'x' * 200}-{p}" for p in range(300)} | {"y-1"}))
    data = encode_instance(inst, version)
    assert data == encode_value(value_from_instance(inst), version)
    assert persisted_view(decode_instance(inst["transactional_id"], data), version) == persisted_view(inst, version)
    assert decode_txn_key(encode_txn_key(inst["transactional_id"])) == inst["transactional_id"]


def test_decode_persisted_takes_the_reference_decoder_on_what_the_fast_one_does_not_handle() -> None:
    inst = TX.fresh({"transactional_id": "t"})
    inst.update(producer_id=7, producer_epoch=3, previous_producer_id=6)
    plain = encode_instance(inst, 1)
    tagged_count_at = plain.rindex(b"\x01\x00\x08")
    with_unknown = plain[:tagged_count_at] + b"\x02" + plain[tagged_count_at + 1:] + b"\x03\x02\x00\x05"
    assert decode_persisted(with_unknown) == decode_persisted(plain)
    assert decode_persisted(plain)[:3] == ("Empty", 7, 3) and decode_persisted(plain)[7] == 6
    with pytest.raises(SchemaError):
        decode_persisted(plain[:-3])
    with pytest.raises(SchemaError, match="never written"):
        decode_persisted(plain[:16] + bytes([7]) + plain[17:])


def _written(version: int) -> tuple[TransactionShardSpec, Change, tuple[bytes, bytes]]:
    """An Ongoing transaction's AddPartitions change and the record the coordinator writes for it."""
    codec = RecordCodec(version)
    spec = TransactionShardSpec(TX, codec, lambda shard: None)
    pre = TX.fresh({"transactional_id": "t"})
    pre.update(producer_id=5, producer_epoch=2, txn_timeout_ms=60_000, state="CompleteCommit")
    decision = TX.decide(pre, "AddPartitions", {"pid": 5, "epoch": 2, "parts": frozenset({"a-0", "b-1"}),
                                                "txn_version": 0, "now_ms": 1_000})
    assert decision.post is not None and decision.to_state == "Ongoing"
    change = Change(TX, ("t",), decision, {}, False, 0)
    return spec, change, (codec.key("t"), codec.encode(decision.post))


@pytest.mark.parametrize("version", [0, 1])
def test_check_record_accepts_the_record_of_the_change(version: int) -> None:
    spec, change, record = _written(version)
    spec.check_record(change, record)
    post = change.decision.post
    assert post is not None
    written = decode_persisted(record[1])
    checked = PERSISTED_FIELDS if version else PERSISTED_FIELDS[:-3]
    assert written[:len(checked)] == tuple(post[name] for name in checked)
    assert written[0] == "Ongoing" and written[4] == frozenset({"a-0", "b-1"})


@pytest.mark.parametrize("field", PERSISTED_FIELDS)
def test_check_record_refuses_a_record_that_differs_in_any_persisted_field(field: str) -> None:
    """The cross-check on the write path: every persisted field of the written bytes is compared with the post-state
    (the tuple compare must stay as strong as the field-by-field one it replaced)."""
    spec, change, record = _written(1)
    assert change.decision.post is not None
    changed = {"state": "PrepareCommit", "partitions": frozenset({"a-0"}), "client_txn_version": 1}
    post = {**change.decision.post, field: changed.get(field, 77)}
    wrong = (record[0], encode_instance(post, 1))
    with pytest.raises(IllegalStateError, match=f"the record says .*'{field}'"):
        spec.check_record(change, wrong)


def test_check_record_refuses_a_wrong_key_version_or_tombstone() -> None:
    spec, change, (key, value) = _written(1)
    with pytest.raises(IllegalStateError, match="does not describe"):
        spec.check_record(change, (encode_txn_key("other"), value))
    with pytest.raises(IllegalStateError, match="value version 0 written, expected 1"):
        spec.check_record(change, (key, encode_instance(change.decision.post or {}, 0)))
    with pytest.raises(IllegalStateError, match="a tombstone for state Ongoing"):
        spec.check_record(change, (key, None))
    assert change.decision.post is not None
    dead = dataclasses.replace(change, decision=dataclasses.replace(
        change.decision, post={**change.decision.post, "state": "Dead"}))
    with pytest.raises(IllegalStateError, match="must be a tombstone"):
        spec.check_record(dead, (key, value))
    spec.check_record(dead, (key, None))
