"""AddPartitionsToTxn, AddOffsetsToTxn and verify-only AddPartitionsToTxn: one test per row of reference §1.6."""

from __future__ import annotations

from pathlib import Path

import pytest

from kcoord.impl.interfaces import TopicPartition
from kcoord.impl.storage.log import Durability
from kcoord.impl.storage.partitioning import partition_for

from .harness import PARTS, START_MS, Harness, states

T = "txn-add"
A0, A1, B0 = PARTS


def ongoing(h: Harness, parts: frozenset[str] = frozenset({"orders-0"})) -> None:
    h.seed(T, "Ongoing", producer_id=5, previous_producer_id=5, producer_epoch=3, partitions=parts)


# ---------------------------------------------------------------- KafkaApis: before the coordinator


def test_unknown_topic_fails_the_request_and_the_rest_is_not_attempted(tmp_path: Path) -> None:
    h = Harness(tmp_path, topic_exists=lambda topic: topic != "payments")
    h.seed(T, "Empty", producer_id=5, previous_producer_id=5, producer_epoch=3)
    mark = h.end_offset(T)
    assert h.add(T, 5, 3) == {A0: "OPERATION_NOT_ATTEMPTED", A1: "OPERATION_NOT_ATTEMPTED",
                              B0: "UNKNOWN_TOPIC_OR_PARTITION"}
    assert h.add(T, 99, 99) == {A0: "OPERATION_NOT_ATTEMPTED", A1: "OPERATION_NOT_ATTEMPTED",
                                B0: "UNKNOWN_TOPIC_OR_PARTITION"}  # the coordinator is not asked at all
    assert h.records_since(T, mark) == [] and h.get(T)["state"] == "Empty"


# ---------------------------------------------------------------- handleAddPartitionsToTransaction, in order


def test_empty_transactional_id_is_invalid(h: Harness) -> None:
    assert h.run(h.coordinator.add_partitions("", 5, 3, PARTS)) == dict.fromkeys(PARTS, "INVALID_REQUEST")


def test_no_metadata_is_invalid_producer_id_mapping(h: Harness) -> None:
    mark = h.end_offset(T)
    assert h.add(T, 5, 3) == dict.fromkeys(PARTS, "INVALID_PRODUCER_ID_MAPPING")
    assert h.records_since(T, mark) == [] and h.get(T) is None


def test_other_producer_id_is_invalid_producer_id_mapping(h: Harness) -> None:
    ongoing(h)
    assert h.add(T, 6, 3) == dict.fromkeys(PARTS, "INVALID_PRODUCER_ID_MAPPING")


def test_other_epoch_is_fenced_and_downgraded_for_old_clients(h: Harness) -> None:
    ongoing(h)
    mark = h.end_offset(T)
    assert h.add(T, 5, 2) == dict.fromkeys(PARTS, "PRODUCER_FENCED")
    assert h.add(T, 5, 4, request_version=1) == dict.fromkeys(PARTS, "INVALID_PRODUCER_EPOCH")
    assert h.records_since(T, mark) == [] and h.get(T)["partitions"] == frozenset({"orders-0"})


def test_pending_write_answers_concurrent_transactions(tmp_path: Path) -> None:
    h = Harness(tmp_path, durability=Durability.group(max_delay_ms=10, max_bytes=1 << 20))
    h.seed(T, "Empty", producer_id=5, previous_producer_id=5, producer_epoch=3)
    first = h.coordinator.add_partitions(T, 5, 3, [A0])
    second = h.coordinator.add_partitions(T, 5, 3, [A1])
    assert not first.done and second.result() == {A1: "CONCURRENT_TRANSACTIONS"}
    h.clock.advance(10)
    h.coordinator.poll()
    assert first.result() == {A0: "NONE"} and h.get(T)["partitions"] == frozenset({"orders-0"})


def test_pending_fence_answers_concurrent_transactions_to_the_current_epoch(tmp_path: Path) -> None:
    h = Harness(tmp_path, durability=Durability.group(max_delay_ms=10, max_bytes=1 << 20))
    ongoing(h)
    fence = h.coordinator.init_producer_id(T, 60_000)
    assert not fence.done
    assert h.run(h.coordinator.add_partitions(T, 5, 3, [A1]), max_polls=1) == {A1: "CONCURRENT_TRANSACTIONS"}


@pytest.mark.parametrize("state", ["PrepareCommit", "PrepareAbort"])
def test_prepare_states_answer_concurrent_transactions(h: Harness, state: str) -> None:
    h.target.hold = True
    h.seed(T, state, producer_id=5, previous_producer_id=5, producer_epoch=3, partitions=frozenset({"orders-0"}))
    mark = h.end_offset(T)
    assert h.add(T, 5, 3) == dict.fromkeys(PARTS, "CONCURRENT_TRANSACTIONS")
    assert h.records_since(T, mark) == []


def test_ongoing_with_every_partition_already_added_writes_nothing(h: Harness) -> None:
    ongoing(h, frozenset(str(tp) for tp in PARTS))
    mark = h.end_offset(T)
    assert h.add(T, 5, 3, [A0, B0]) == {A0: "NONE", B0: "NONE"}
    assert h.records_since(T, mark) == []


@pytest.mark.parametrize("state", ["Empty", "CompleteCommit", "CompleteAbort"])
def test_first_partitions_open_a_transaction(h: Harness, state: str) -> None:
    h.seed(T, state, producer_id=5, previous_producer_id=5, producer_epoch=3)
    h.clock.advance(7)
    mark = h.end_offset(T)
    assert h.add(T, 5, 3) == dict.fromkeys(PARTS, "NONE")
    (record,) = h.records_since(T, mark)
    assert record[1] is not None
    assert (record[1]["state"], record[1]["partitions"], record[1]["txn_start_timestamp_ms"]) == \
        ("Ongoing", frozenset(str(tp) for tp in PARTS), START_MS + 7)


def test_more_partitions_grow_the_open_transaction_and_keep_its_start(h: Harness) -> None:
    ongoing(h)
    h.clock.advance(9)
    mark = h.end_offset(T)
    assert h.add(T, 5, 3, [A0, B0]) == {A0: "NONE", B0: "NONE"}
    (record,) = h.records_since(T, mark)
    assert record[1] is not None
    assert record[1]["partitions"] == frozenset({"orders-0", "payments-0"})
    assert (record[1]["txn_start_timestamp_ms"], record[1]["txn_last_update_timestamp_ms"]) == \
        (START_MS, START_MS + 9)


def test_implicit_add_by_a_partition_leader_records_client_tv2(h: Harness) -> None:
    h.seed(T, "Empty", producer_id=5, previous_producer_id=5, producer_epoch=3)
    assert h.add(T, 5, 3, [A0], txn_version=2) == {A0: "NONE"}
    assert h.get(T)["client_txn_version"] == 2


# ---------------------------------------------------------------- AddOffsetsToTxn


def test_add_offsets_adds_the_groups_offsets_partition(h: Harness) -> None:
    h.seed(T, "Empty", producer_id=5, previous_producer_id=5, producer_epoch=3)
    mark = h.end_offset(T)
    assert h.run(h.coordinator.add_offsets(T, 5, 3, "my-group")) == "NONE"
    expected = f"__consumer_offsets-{partition_for('my-group', 50)}"
    (record,) = h.records_since(T, mark)
    assert record[1] is not None and record[1]["partitions"] == frozenset({expected})
    assert h.coordinator.offsets_partition("my-group") == TopicPartition.parse(expected)


def test_add_offsets_errors(h: Harness) -> None:
    assert h.run(h.coordinator.add_offsets("", 5, 3, "g")) == "INVALID_REQUEST"
    h.shard(T)
    assert h.run(h.coordinator.add_offsets(T, 5, 3, "g")) == "INVALID_PRODUCER_ID_MAPPING"
    ongoing(h)
    assert h.run(h.coordinator.add_offsets(T, 5, 2, "g")) == "PRODUCER_FENCED"
    assert h.run(h.coordinator.add_offsets(T, 5, 2, "g", request_version=1)) == "INVALID_PRODUCER_EPOCH"


# ---------------------------------------------------------------- verify-only (KIP-890 part 1)


def verify(h: Harness, pid: int, epoch: int, tp: TopicPartition) -> str:
    h.shard(T)
    return str(h.run(h.coordinator.verify_partition(T, pid, epoch, tp)))


def test_verify_rows(h: Harness) -> None:
    assert verify(h, 5, 3, A0) == "INVALID_PRODUCER_ID_MAPPING"  # no metadata
    ongoing(h)
    mark = h.end_offset(T)
    assert verify(h, 6, 3, A0) == "INVALID_PRODUCER_ID_MAPPING"
    assert verify(h, 5, 4, A0) == "PRODUCER_FENCED"
    assert verify(h, 5, 3, A0) == "NONE"
    assert verify(h, 5, 3, B0) == "TRANSACTION_ABORTABLE"
    assert h.records_since(T, mark) == []
    assert h.run(h.coordinator.verify_partition("", 5, 3, A0)) == "INVALID_REQUEST"


@pytest.mark.parametrize("state", ["PrepareCommit", "PrepareAbort"])
def test_verify_in_prepare_is_concurrent_transactions(h: Harness, state: str) -> None:
    h.target.hold = True
    h.seed(T, state, producer_id=5, previous_producer_id=5, producer_epoch=3, partitions=frozenset({"orders-0"}))
    assert verify(h, 5, 3, A0) == "CONCURRENT_TRANSACTIONS"


@pytest.mark.parametrize("state", ["Empty", "CompleteCommit", "CompleteAbort"])
def test_verify_with_no_open_transaction_is_abortable(h: Harness, state: str) -> None:
    h.seed(T, state, producer_id=5, previous_producer_id=5, producer_epoch=3)
    assert verify(h, 5, 3, A0) == "TRANSACTION_ABORTABLE"


def test_verify_ignores_the_pending_state(tmp_path: Path) -> None:
    h = Harness(tmp_path, durability=Durability.group(max_delay_ms=10, max_bytes=1 << 20))
    ongoing(h)
    adding = h.coordinator.add_partitions(T, 5, 3, [B0])
    assert not adding.done and h.shard(T).pending("Transaction", (T,))
    assert h.coordinator.verify_partition(T, 5, 3, A0).result() == "NONE"
    assert h.coordinator.verify_partition(T, 5, 3, B0).result() == "TRANSACTION_ABORTABLE"  # not durable yet
    h.clock.advance(10)
    h.coordinator.poll()
    assert h.coordinator.verify_partition(T, 5, 3, B0).result() == "NONE"
    assert states(h.records_since(T, 0))[-1] == "Ongoing"


# ---------------------------------------------------------------- Transactions V2: a partition leader's add


def test_a_leaders_v2_add_opens_the_transaction_at_client_version_2(h: Harness) -> None:
    """`add_partition` (the `TxnVerifier` side of Produce v12+ / TxnOffsetCommit v5+): AddPartitionsToTxn v5, not
    verify-only, which Kafka's transactionVersionForAddPartitionsToTxn makes a client-version-2 add."""
    h.seed(T, "CompleteCommit", producer_id=5, previous_producer_id=5, producer_epoch=3)
    mark = h.end_offset(T)
    assert h.run(h.coordinator.add_partition(T, 5, 3, A0)) == "NONE"
    (record,) = h.records_since(T, mark)
    assert record[1] is not None
    assert (record[1]["state"], record[1]["partitions"], record[1]["client_txn_version"]) == \
        ("Ongoing", frozenset({"orders-0"}), 2)
    assert h.run(h.coordinator.add_partition(T, 5, 3, A0)) == "NONE"  # already in: nothing written
    assert len(h.records_since(T, mark)) == 1
    assert h.run(h.coordinator.add_partition(T, 5, 2, A1)) == "PRODUCER_FENCED"
    assert h.run(h.coordinator.add_partition(T, 6, 3, A1)) == "INVALID_PRODUCER_ID_MAPPING"
