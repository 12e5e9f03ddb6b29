"""kafka-reference §4.2, items 1–3 in order (`UnifiedLog.analyzeAndValidateProducerState`, `ProducerAppendInfo`):
one test per row of the decision table, each asserting the answer, the spec state afterwards, the spec row that
answered, and what is (or is not) on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from kcoord.impl.errors import Errors, IllegalStateError, KafkaError
from kcoord.impl.interfaces import TxnOperation
from kcoord.impl.partition import PartitionConfig
from kcoord.impl.partition.producer_state import NUM_BATCHES_TO_RETAIN

from .helpers import T0_MS, TP, Env, batch, make_env, values

PID = 4000


def produce_ok(env: Env, b: object, **kw: object) -> int:
    result = env.produce(b, **kw)  # type: ignore[arg-type]
    assert result.error == "NONE", result
    return result.base_offset


# ---------------------------------------------------------------------------------------------- 1. duplicates


def test_duplicate_of_each_cached_batch_answers_its_original_offsets_and_appends_nothing(env: Env) -> None:
    sent = [batch(PID, 0, seq=3 * i, n=3) for i in range(NUM_BATCHES_TO_RETAIN)]
    offsets = [produce_ok(env, b) for b in sent]
    assert offsets == [0, 3, 6, 9, 12]
    before_disk, before_state = env.on_disk(), env.state(PID)
    for b, offset in zip(sent, offsets, strict=True):
        again = env.produce(b)
        assert (again.error, again.base_offset) == ("NONE", offset)
        assert again.log_append_time_ms == b.max_timestamp_ms  # Kafka returns the cached batch's timestamp there
        row = env.rows()[-1]
        assert (row["kind"], row["row"], row["error"], row["arg_is_duplicate"]) == ("reject", 0, "NONE", True)
    assert env.on_disk() == before_disk and env.state(PID) == before_state
    assert env.part.log_end_offset == 15


def test_duplicate_no_longer_cached_is_out_of_order(env: Env) -> None:
    sent = [batch(PID, 0, seq=i) for i in range(NUM_BATCHES_TO_RETAIN + 1)]
    for b in sent:
        produce_ok(env, b)
    assert [m.first_seq for m in env.part.states.cached_batches(PID)] == [1, 2, 3, 4, 5]
    result = env.produce(sent[0])
    assert result.error == "OUT_OF_ORDER_SEQUENCE_NUMBER" and result.base_offset == -1
    assert env.rows()[-1]["row"] == 4  # the sequence check, not the duplicate row
    assert len(env.on_disk()) == NUM_BATCHES_TO_RETAIN + 1
    assert env.state(PID)["last_sequence"] == 5  # type: ignore[index]


def test_same_sequence_range_at_another_epoch_is_not_a_duplicate(env: Env) -> None:
    produce_ok(env, batch(PID, 0, seq=0))
    assert produce_ok(env, batch(PID, 1, seq=0)) == 1  # a bump to epoch 1 at sequence 0 is a new batch
    assert env.part.states.cached_batches(PID)[0].first_offset == 1  # the new epoch cleared the cache
    assert len(env.on_disk()) == 2


# ---------------------------------------------------------------------------------------------- 2. verification


def test_verification_failure_is_invalid_txn_state_and_writes_nothing(env: Env) -> None:
    result = env.produce(batch(PID, 0, seq=0, txn=True), txn_id="t1")  # never added to the transaction
    # Kafka 4.0.2's ReplicaManager answers before the log: its InvalidTxnStateException message, no log start offset
    # (as the reference broker answered the differential fuzzer)
    assert (result.error, result.error_message, result.log_start_offset) == (
        "INVALID_TXN_STATE", "Partition was not added to the transaction", -1)
    assert env.verifier.calls == [("t1", PID, 0, TP)]
    assert env.state(PID) is None and env.on_disk() == []
    row = env.rows()[-1]
    assert (row["row"], row["arg_verification_ok"], row["seq"], row["from_state"]) == (1, False, -1, "Unknown")


def test_verified_first_batch_opens_the_transaction_and_later_batches_skip_verification(env: Env) -> None:
    produce_ok(env, batch(PID, 0, seq=0, n=2))  # idempotent history first: the txn opens at offset 2
    env.verifier.add(PID)
    assert produce_ok(env, batch(PID, 0, seq=2, txn=True)) == 2
    assert produce_ok(env, batch(PID, 0, seq=3, txn=True)) == 3
    assert len(env.verifier.calls) == 1
    state = env.state(PID)
    assert state is not None and (state["state"], state["current_txn_first_offset"]) == ("Ongoing", 2)
    assert env.part.states.verification_entry(PID) is None  # the transactional append consumed it
    assert [b.is_transactional for b in env.on_disk()] == [False, True, True]


def test_verification_overtaken_by_an_abort_marker_does_not_count(env: Env) -> None:
    """The ABA case behind the unique guard: verified, but an ABORT marker for the producer was written before the
    append, so the verification belonged to a transaction that is over."""
    env.verifier.add(PID)
    env.verifier.hold = True
    pending = env.manager.produce(TP.topic, 0, batch(PID, 0, seq=0, txn=True), transactional_id="t1")
    assert env.marker(PID, 0, "ABORT") == {TP: "NONE"}  # clears the verification entry (a transactional batch)
    env.verifier.release()
    assert pending.result().error == "INVALID_TXN_STATE"
    assert env.rows()[-1]["row"] == 1 and env.rows()[-1]["arg_verification_ok"] is False
    assert [b.is_control for b in env.on_disk()] == [True]


def test_a_batch_above_the_lowest_sequence_in_verification_waits_for_it(env: Env) -> None:
    env.verifier.add(PID)
    env.verifier.hold = True
    first = env.manager.produce(TP.topic, 0, batch(PID, 0, seq=0, txn=True), transactional_id="t1")
    second = env.manager.produce(TP.topic, 0, batch(PID, 0, seq=1, txn=True), transactional_id="t1")
    assert env.part.states.verification_lowest_seq(PID) == 0
    env.verifier.release(1)  # the coordinator answers the second request first
    assert second.result().error == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    assert env.rows()[-1]["row"] == 3 and env.on_disk() == []
    env.verifier.release(0)
    assert first.result().error == "NONE"
    assert env.state(PID)["state"] == "Ongoing"  # type: ignore[index]


@pytest.mark.parametrize(("answer", "operation", "expected"), [
    ("NOT_COORDINATOR", TxnOperation.DEFAULT_ERROR, "NOT_ENOUGH_REPLICAS"),
    ("COORDINATOR_LOAD_IN_PROGRESS", TxnOperation.DEFAULT_ERROR, "NOT_ENOUGH_REPLICAS"),
    ("CONCURRENT_TRANSACTIONS", TxnOperation.DEFAULT_ERROR, "NOT_ENOUGH_REPLICAS"),
    ("CONCURRENT_TRANSACTIONS", TxnOperation.GENERIC_ERROR_SUPPORTED, "NOT_ENOUGH_REPLICAS"),
    ("PRODUCER_FENCED", TxnOperation.DEFAULT_ERROR, "INVALID_PRODUCER_EPOCH"),
    ("PRODUCER_FENCED", TxnOperation.ADD_PARTITION, "INVALID_PRODUCER_EPOCH"),
    # Kafka answers the coordinator's own error: ReplicaManager's postVerificationCallback keeps it
    ("INVALID_PRODUCER_ID_MAPPING", TxnOperation.DEFAULT_ERROR, "INVALID_PRODUCER_ID_MAPPING"),
    ("TRANSACTION_ABORTABLE", TxnOperation.GENERIC_ERROR_SUPPORTED, "TRANSACTION_ABORTABLE"),  # Produce v11
    ("TRANSACTION_ABORTABLE", TxnOperation.ADD_PARTITION, "TRANSACTION_ABORTABLE"),
    ("UNSUPPORTED_VERSION", TxnOperation.ADD_PARTITION, "UNSUPPORTED_VERSION"),
])
def test_the_coordinators_answer_is_translated_as_kafka_and_nothing_is_appended(
        env: Env, answer: str, operation: TxnOperation, expected: str) -> None:
    env.verifier.forced = answer
    result = env.produce(batch(PID, 0, seq=0, txn=True), operation=operation)
    assert result.error == expected
    if answer == "PRODUCER_FENCED":  # Kafka 4.0.2 gives no message (seen by the differential fuzzer)
        assert result.error_message is None
    if operation is TxnOperation.ADD_PARTITION:  # (CONCURRENT_TRANSACTIONS would be asked again: see below)
        assert [c[0] for c in env.verifier.calls] == ["add:txn"]
    assert env.on_disk() == [] and env.state(PID) is None


def test_transactions_v2_adds_the_partition_even_with_verification_off(tmp_path: Path) -> None:
    for e in make_env(tmp_path, PartitionConfig(transaction_partition_verification_enable=False)):
        assert e.produce(batch(PID, 0, seq=0, txn=True), operation=TxnOperation.ADD_PARTITION).error == "NONE"
        assert e.verifier.calls == [("add:txn", PID, 0, TP)]
        assert e.produce(batch(PID, 0, seq=1, txn=True), operation=TxnOperation.ADD_PARTITION).error == "NONE"
        assert len(e.verifier.calls) == 1  # the transaction is open here at this epoch: nothing to add


def test_transactions_v2_add_is_asked_again_while_the_coordinator_is_busy(env: Env) -> None:
    """Kafka's handleProduceAppend: CONCURRENT_TRANSACTIONS (the previous transaction's markers are in flight) is
    asked again every 20 ms until 100 ms have passed; then the client gets CONCURRENT_TRANSACTIONS."""
    env.verifier.add_answers = ["CONCURRENT_TRANSACTIONS", "CONCURRENT_TRANSACTIONS"]
    pending = env.manager.produce(TP.topic, 0, batch(PID, 0, seq=0, txn=True), transactional_id="t1",
                                  operation=TxnOperation.ADD_PARTITION)
    assert not pending.done and env.manager.next_deadline_ms() == T0_MS + 20
    for _ in range(2):
        env.clock.advance(20)
        env.manager.poll()
    assert pending.result().error == "NONE" and len(env.verifier.calls) == 3
    env.verifier.add_answers = ["CONCURRENT_TRANSACTIONS"] * 10
    late = env.manager.produce(TP.topic, 0, batch(PID + 1, 0, seq=0, txn=True), transactional_id="t2",
                               operation=TxnOperation.ADD_PARTITION)
    for _ in range(6):
        env.clock.advance(20)
        env.manager.poll()
    assert late.result().error == "CONCURRENT_TRANSACTIONS" and len(env.verifier.calls) == 3 + 6
    assert env.manager.next_deadline_ms() != T0_MS + 140


def test_a_v2_marker_at_the_next_transactions_epoch_keeps_its_verification(env: Env) -> None:
    """UnifiedLog's isV2NextTransactionStarted: a TV2 client writes its next transaction at the bumped epoch while
    the previous one's marker (which carries that epoch) is still on its way; the marker must not void the add."""
    env.verifier.add(PID)
    assert env.produce(batch(PID, 0, seq=0, txn=True), operation=TxnOperation.ADD_PARTITION).error == "NONE"
    env.verifier.hold = True
    pending = env.manager.produce(TP.topic, 0, batch(PID, 1, seq=0, txn=True), transactional_id="t1",
                                  operation=TxnOperation.ADD_PARTITION)
    assert env.marker(PID, 1, "COMMIT") == {TP: "NONE"}  # the previous transaction's TV2 marker, epoch 0 + 1
    env.verifier.release()
    assert pending.result().error == "NONE"
    assert [(b.is_control, b.producer_epoch) for b in env.on_disk()] == [(False, 0), (True, 1), (False, 1)]


def test_a_verification_request_that_failed_is_retriable_but_our_own_bug_is_raised(env: Env) -> None:
    """The coordinator unreachable (OSError: NETWORK_EXCEPTION) or failing the request with a Kafka error is
    NOT_ENOUGH_REPLICAS, which the producer retries; an IllegalStateError behind the verification is a bug of ours:
    it surfaces from whoever completes the verification, and the produce is not answered (it was once answered
    NOT_ENOUGH_REPLICAS like a network error)."""
    env.verifier.add(PID)
    env.verifier.hold = True
    for failure in (OSError("connection reset"), KafkaError(Errors.NOT_COORDINATOR, "moved")):
        pending = env.manager.produce(TP.topic, 0, batch(PID, 0, seq=0, txn=True), transactional_id="t1")
        done, _ = env.verifier.held.pop(0)
        done.fail(failure)
        assert pending.result().error == "NOT_ENOUGH_REPLICAS", failure
    pending = env.manager.produce(TP.topic, 0, batch(PID, 0, seq=0, txn=True), transactional_id="t1")
    done, _ = env.verifier.held.pop(0)
    with pytest.raises(IllegalStateError, match="planted"):
        done.fail(IllegalStateError("planted"))
    assert not pending.done
    assert env.on_disk() == [] and env.state(PID) is None


def test_verification_disabled_appends_without_asking(tmp_path: object) -> None:
    from kcoord.impl.partition import PartitionConfig

    from .helpers import make_env

    for e in make_env(tmp_path, PartitionConfig(transaction_partition_verification_enable=False)):  # type: ignore[arg-type]
        assert e.produce(batch(PID, 0, seq=0, txn=True)).error == "NONE"
        assert e.verifier.calls == [] and e.state(PID)["state"] == "Ongoing"  # type: ignore[index]


# ---------------------------------------------------------------------------------------------- 3. appendDataBatch


def test_older_epoch_is_invalid_producer_epoch_never_producer_fenced(env: Env) -> None:
    produce_ok(env, batch(PID, 3, seq=0))
    result = env.produce(batch(PID, 2, seq=1))
    assert result.error == "INVALID_PRODUCER_EPOCH"
    assert env.rows()[-1]["row"] == 2 and env.state(PID)["producer_epoch"] == 3  # type: ignore[index]
    assert len(env.on_disk()) == 1


def test_epoch_bump_must_start_at_sequence_zero(env: Env) -> None:
    produce_ok(env, batch(PID, 0, seq=0, n=3))
    assert env.produce(batch(PID, 1, seq=3)).error == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    assert env.rows()[-1]["row"] == 4
    assert produce_ok(env, batch(PID, 1, seq=0)) == 3
    state = env.state(PID)
    assert state is not None and (state["producer_epoch"], state["last_sequence"]) == (1, 0)


def test_a_rejected_append_carries_no_error_message(env: Env) -> None:
    """Kafka 4.0's ReplicaManager gives a Produce partition an error message only for a RecordValidationException;
    an OutOfOrderSequenceException or InvalidProducerEpochException is answered with a null message (as the
    differential fuzzer saw on the reference broker)."""
    produce_ok(env, batch(PID, 3, seq=0))
    assert [(r.error, r.error_message) for r in (env.produce(batch(PID, 3, seq=5)), env.produce(batch(PID, 2, seq=1)))
            ] == [("OUT_OF_ORDER_SEQUENCE_NUMBER", None), ("INVALID_PRODUCER_EPOCH", None)]


def test_same_epoch_gap_is_out_of_order(env: Env) -> None:
    produce_ok(env, batch(PID, 0, seq=0, n=2))
    result = env.produce(batch(PID, 0, seq=3))  # 2 expected
    assert result.error == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    assert env.state(PID)["last_sequence"] == 1  # type: ignore[index]
    assert produce_ok(env, batch(PID, 0, seq=2)) == 2


def test_sequence_wraps_after_max_int(env: Env) -> None:
    top = 2**31 - 1
    produce_ok(env, batch(PID, 0, seq=top - 1, n=3))  # an unknown producer may start anywhere; this batch wraps
    assert env.state(PID)["last_sequence"] == 0  # type: ignore[index]
    produce_ok(env, batch(PID, 0, seq=1))
    produce_ok(env, batch(PID, 1, seq=0))
    for seq in range(1, 3):
        produce_ok(env, batch(PID, 1, seq=seq))
    # the exact edge: a batch ending at 2147483647 is followed by sequence 0
    other = PID + 1
    produce_ok(env, batch(other, 0, seq=top))
    assert env.produce(batch(other, 0, seq=1)).error == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    assert produce_ok(env, batch(other, 0, seq=0)) == env.part.log_end_offset - 1
    assert env.state(other)["last_sequence"] == 0  # type: ignore[index]


def test_unknown_epoch_after_expiration_accepts_any_sequence(env: Env) -> None:
    produce_ok(env, batch(PID, 5, seq=0, n=4))  # record timestamps T0..T0+3: the entry's last timestamp is T0+3
    env.clock.advance(env.config.producer_id_expiration_ms + 2)
    assert env.part.expire_producers() == []
    env.clock.advance(1)
    assert env.part.expire_producers() == [PID]
    assert env.state(PID) is None
    assert env.rows()[-1]["event"] == "Expire" and env.rows()[-1]["to_state"] == "Expired"
    assert produce_ok(env, batch(PID, 5, seq=1234)) == 4  # a gap at the same epoch, accepted on a fresh entry
    assert produce_ok(env, batch(PID + 1, 0, seq=77)) == 5  # never seen: any sequence
    assert env.state(PID)["last_sequence"] == 1234  # type: ignore[index]


def test_non_transactional_batch_inside_an_open_transaction_is_invalid_txn_state(env: Env) -> None:
    env.verifier.add(PID)
    produce_ok(env, batch(PID, 0, seq=0, txn=True))
    result = env.produce(batch(PID, 0, seq=1, txn=False))
    assert result.error == "INVALID_TXN_STATE"
    assert env.rows()[-1]["row"] == 5
    assert env.state(PID)["state"] == "Ongoing" and len(env.on_disk()) == 1  # type: ignore[index]


def test_accepted_batch_is_rewritten_at_the_log_end_offset_with_its_records_intact(env: Env) -> None:
    produce_ok(env, batch())  # a plain batch (no producer id) at offset 0
    sent = batch(PID, 0, seq=0, n=3, ts_ms=123, tag="x")
    assert produce_ok(env, sent) == 1
    on_disk = env.on_disk()[1]
    assert on_disk.base_offset == 1 and on_disk.partition_leader_epoch == env.part.leader_epoch
    assert [(r.offset, r.timestamp_ms, r.key, r.headers) for r in on_disk.records] == [
        (1 + i, 123 + i, f"k{i}".encode(), (("h", b"x"),)) for i in range(3)]
    assert values(list(on_disk.records)) == ["x-0", "x-1", "x-2"]
    assert (on_disk.producer_id, on_disk.producer_epoch, on_disk.base_sequence) == (PID, 0, 0)


def test_a_failed_append_applies_nothing_and_answers_kafka_storage_error(env: Env) -> None:
    produce_ok(env, batch(PID, 0, seq=0))
    rows, state = len(env.rows()), env.state(PID)
    env.part.log.fail_next_append(written_bytes=10)
    assert env.produce(batch(PID, 0, seq=1)).error == "KAFKA_STORAGE_ERROR"
    env.verifier.add(PID + 1)
    env.part.log.fail_next_append()
    assert env.produce(batch(PID + 1, 0, seq=0, txn=True)).error == "KAFKA_STORAGE_ERROR"
    env.part.log.fail_next_append()
    assert env.marker(PID, 0, "COMMIT") == {TP: "KAFKA_STORAGE_ERROR"}
    assert (len(env.rows()), env.state(PID), env.state(PID + 1)) == (rows, state, None)  # decided, never applied
    assert len(env.on_disk()) == 1 and env.part.states.open_transactions() == {}
    assert produce_ok(env, batch(PID, 0, seq=1)) == 1  # the producer's retry goes through


def test_next_epochs_first_batch_is_verified_while_the_old_transaction_waits_for_its_marker(env: Env) -> None:
    """Transactions V2: the producer's next transaction (epoch 1) starts before this partition has the previous
    one's marker (epoch 0 still open here). The leader asks the coordinator, which answers CONCURRENT_TRANSACTIONS
    while the markers are in flight, so the batch is not merged into the old transaction."""
    env.verifier.add(PID)
    produce_ok(env, batch(PID, 0, seq=0, txn=True))
    env.verifier.forced = "CONCURRENT_TRANSACTIONS"
    assert env.produce(batch(PID, 1, seq=0, txn=True)).error == "NOT_ENOUGH_REPLICAS"  # retriable
    assert env.verifier.calls[-1][2] == 1 and len(env.on_disk()) == 1
    assert env.marker(PID, 1, "ABORT") == {TP: "NONE"}
    env.verifier.forced = None
    assert produce_ok(env, batch(PID, 1, seq=0, txn=True)) == 2
    assert env.state(PID)["current_txn_first_offset"] == 2  # type: ignore[index]  # a transaction of its own


def test_refused_verification_at_a_newer_epoch_is_invalid_txn_state(env: Env) -> None:
    """Kafka 4.x: an open transaction only spares verification at its own epoch (spec fix: Append's verification
    check), so a TV2 next-transaction batch the coordinator refused is not merged into the previous transaction."""
    env.verifier.add(PID)
    produce_ok(env, batch(PID, 0, seq=0, txn=True))
    env.verifier.remove(PID)  # the coordinator does not have this partition in the epoch-1 transaction
    assert env.produce(batch(PID, 1, seq=0, txn=True)).error == "INVALID_TXN_STATE"
