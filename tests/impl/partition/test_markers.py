"""kafka-reference §4.2 item 4 (`appendEndTxnMarker`), §4.2 item 5 (coordinator-origin appends) and §4.4 (the
partition leader answers INVALID_PRODUCER_EPOCH, never PRODUCER_FENCED): answers, spec state, control batches on
disk, the last stable offset and the aborted-transaction index."""

from __future__ import annotations

from kcoord.impl.interfaces import TopicPartition, TxnMarker
from kcoord.impl.partition import AbortedTxn, AppendOrigin
from kcoord.impl.storage.batch import ControlType, decode_end_txn_marker

from .helpers import TP, Env, batch

PID = 9000


def open_txn(env: Env, producer_id: int = PID, epoch: int = 0, seq: int = 0, n: int = 1) -> int:
    env.verifier.add(producer_id)
    result = env.produce(batch(producer_id, epoch, seq=seq, n=n, txn=True))
    assert result.error == "NONE", result
    return result.base_offset


def test_commit_marker_closes_the_transaction_and_writes_a_control_batch(env: Env) -> None:
    open_txn(env, n=2)
    assert env.part.last_stable_offset == 0
    assert env.marker(PID, 0, "COMMIT", coordinator_epoch=7) == {TP: "NONE"}
    state = env.state(PID)
    assert state is not None
    assert (state["state"], state["current_txn_first_offset"], state["txn_coordinator_epoch"]) == ("Known", -1, 7)
    assert state["last_sequence"] == 1  # same epoch: the sequence carries on
    control = env.on_disk()[-1]
    assert (control.base_offset, control.is_control, control.is_transactional) == (2, True, True)
    assert (control.producer_id, control.producer_epoch, control.base_sequence) == (PID, 0, -1)
    marker = decode_end_txn_marker(control.records[0])
    assert (marker.control_type, marker.coordinator_epoch) == (ControlType.COMMIT, 7)
    assert env.part.last_stable_offset == env.part.high_watermark == 3
    assert env.part.states.aborted_index == ()
    assert env.rows()[-1]["row"] == 15


def test_abort_marker_closes_the_transaction_and_indexes_it(env: Env) -> None:
    open_txn(env, n=3)
    assert env.marker(PID, 0, "ABORT", coordinator_epoch=2) == {TP: "NONE"}
    assert env.state(PID)["state"] == "Known"  # type: ignore[index]
    assert env.part.states.aborted_index == (AbortedTxn(PID, 0, 3, 4),)
    assert decode_end_txn_marker(env.on_disk()[-1].records[0]).control_type is ControlType.ABORT
    assert env.part.last_stable_offset == 4


def test_marker_with_an_older_producer_epoch_is_invalid_producer_epoch(env: Env) -> None:
    open_txn(env, epoch=5)
    assert env.marker(PID, 4, "ABORT") == {TP: "INVALID_PRODUCER_EPOCH"}
    assert env.rows()[-1]["row"] == 13
    assert env.state(PID)["state"] == "Ongoing" and len(env.on_disk()) == 1  # type: ignore[index]


def test_marker_from_an_older_coordinator_epoch_is_transaction_coordinator_fenced(env: Env) -> None:
    open_txn(env)
    assert env.marker(PID, 0, "COMMIT", coordinator_epoch=3) == {TP: "NONE"}
    open_txn(env, seq=1)
    assert env.marker(PID, 0, "ABORT", coordinator_epoch=2) == {TP: "TRANSACTION_COORDINATOR_FENCED"}
    assert env.rows()[-1]["row"] == 14
    state = env.state(PID)
    assert state is not None and (state["state"], state["txn_coordinator_epoch"]) == ("Ongoing", 3)
    assert env.part.last_stable_offset == 2  # the second transaction is still open at offset 2


def test_an_admin_abort_with_coordinator_epoch_minus_one_closes_a_transaction_no_marker_reached(env: Env) -> None:
    """KIP-664: an administrator aborts a hanging transaction with WriteTxnMarkers at coordinator epoch -1 (what
    kafka-python's `abort_transaction` sends by default). Kafka compares it with the partition's stored coordinator
    epoch only: -1 passes where no marker was seen, and is fenced once one was."""
    open_txn(env, n=2)
    assert env.marker(PID, 0, "ABORT", coordinator_epoch=-1) == {TP: "NONE"}
    state = env.state(PID)
    assert state is not None
    assert (state["state"], state["txn_coordinator_epoch"], state["current_txn_first_offset"]) == ("Known", -1, -1)
    assert env.part.states.aborted_index == (AbortedTxn(PID, 0, 2, 3),)
    assert decode_end_txn_marker(env.on_disk()[-1].records[0]).coordinator_epoch == -1
    open_txn(env, seq=2)
    assert env.marker(PID, 0, "COMMIT", coordinator_epoch=0) == {TP: "NONE"}
    open_txn(env, seq=3)
    assert env.marker(PID, 0, "ABORT", coordinator_epoch=-1) == {TP: "TRANSACTION_COORDINATOR_FENCED"}
    assert env.state(PID)["state"] == "Ongoing"  # type: ignore[index]


def test_marker_for_an_unknown_producer_takes_the_epochs_and_completes_nothing(env: Env) -> None:
    assert env.produce(batch()).error == "NONE"  # offset 0, no producer id
    assert env.marker(PID, 3, "ABORT", coordinator_epoch=1) == {TP: "NONE"}
    state = env.state(PID)
    assert state is not None
    assert (state["state"], state["producer_epoch"], state["txn_coordinator_epoch"]) == ("Known", 3, 1)
    assert env.rows()[-1]["row"] == 16 and env.rows()[-1]["from_state"] == "Unknown"
    assert env.part.states.aborted_index == () and env.part.last_stable_offset == 2
    assert [b.is_control for b in env.on_disk()] == [False, True]


def test_marker_at_a_bumped_epoch_restarts_the_producer_at_sequence_zero(env: Env) -> None:
    open_txn(env, n=2)
    assert env.marker(PID, 1, "ABORT") == {TP: "NONE"}  # TV2: the marker carries epoch + 1
    assert env.state(PID)["last_sequence"] == -1  # type: ignore[index]
    env.verifier.add(PID)
    assert env.produce(batch(PID, 1, seq=2, txn=True)).error == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    assert env.produce(batch(PID, 1, seq=0, txn=True)).error == "NONE"


def test_markers_for_partitions_not_held_here_are_unknown(env: Env) -> None:
    open_txn(env)
    elsewhere = (TopicPartition("nope", 0), TopicPartition(TP.topic, 1), TopicPartition("__consumer_offsets", 4))
    answers = env.marker(PID, 0, "COMMIT", tps=(*elsewhere, TP))
    assert answers == {**dict.fromkeys(elsewhere, "UNKNOWN_TOPIC_OR_PARTITION"), TP: "NONE"}
    assert list(answers) == [*elsewhere, TP]


def test_several_markers_in_one_request_are_answered_in_order(env: Env) -> None:
    open_txn(env, PID)
    open_txn(env, PID + 1)
    done = env.manager.write_txn_markers([TxnMarker(PID, 0, "COMMIT", 0, (TP,)),
                                          TxnMarker(PID + 1, 0, "ABORT", 0, (TP,)),
                                          TxnMarker(PID + 2, 0, "ABORT", 0, (TopicPartition("nope", 0),))])
    assert done.result() == [{TP: "NONE"}, {TP: "NONE"}, {TopicPartition("nope", 0): "UNKNOWN_TOPIC_OR_PARTITION"}]
    assert env.part.states.aborted_index == (AbortedTxn(PID + 1, 1, 3, 4),)


# ---------------------------------------------------------------------------------------------- §4.2 item 5


def test_coordinator_origin_checks_the_epoch_and_verification_but_no_sequence(env: Env) -> None:
    env.verifier.add(PID)
    offsets = batch(PID, 2, seq=-1, txn=True)  # the group coordinator's batches carry no sequence
    first = env.produce(offsets, origin=AppendOrigin.COORDINATOR)
    assert first.error == "NONE"
    state = env.state(PID)
    assert state is not None
    assert (state["state"], state["last_sequence"], state["current_txn_first_offset"]) == ("Ongoing", -1, 0)
    assert env.rows()[-1]["event"] == "CoordinatorAppend" and env.rows()[-1]["row"] == 11
    assert env.produce(offsets, origin=AppendOrigin.COORDINATOR).error == "NONE"  # no duplicate detection
    older = env.produce(batch(PID, 1, seq=-1, txn=True), origin=AppendOrigin.COORDINATOR)
    assert older.error == "INVALID_PRODUCER_EPOCH"
    assert env.rows()[-1]["row"] == 10
    assert len(env.on_disk()) == 2


def test_coordinator_origin_only_writes_transactional_batches_with_a_producer_id(env: Env) -> None:
    assert env.produce(batch(PID, 0, seq=-1), origin=AppendOrigin.COORDINATOR).error == "INVALID_RECORD"
    assert env.produce(batch(), origin=AppendOrigin.COORDINATOR).error == "NONE"  # plain offsets: no producer
    assert env.state(PID) is None


def test_coordinator_origin_without_verification_is_invalid_txn_state(env: Env) -> None:
    assert env.produce(batch(PID, 0, seq=-1, txn=True), origin=AppendOrigin.COORDINATOR).error == "INVALID_TXN_STATE"
    assert env.rows()[-1]["row"] == 9 and env.on_disk() == []


# ---------------------------------------------------------------------------------------------- §4.4


def test_the_leader_never_answers_producer_fenced(env: Env) -> None:
    open_txn(env, epoch=3)
    answers = {
        "produce, older epoch": env.produce(batch(PID, 2, seq=1, txn=True)).error,
        "marker, older epoch": env.marker(PID, 2, "COMMIT")[TP],
    }
    env.verifier.forced = "PRODUCER_FENCED"
    answers["verification fenced"] = env.produce(batch(PID + 1, 0, seq=0, txn=True)).error
    assert answers == dict.fromkeys(answers, "INVALID_PRODUCER_EPOCH")
    assert all(r["error"] != "PRODUCER_FENCED" for r in env.rows())
