"""Producer expiration on the injectable clock (the spec's Expire row, `producer.id.expiration.ms`, checked every
`producer.id.expiration.check.interval.ms`), and the broker-level WriteTxnMarkers router."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from kcoord.impl.errors import Errors, IllegalStateError, KafkaError
from kcoord.impl.interfaces import MarkerResult, TopicPartition, TxnMarker
from kcoord.impl.partition import BrokerMarkerTarget
from kcoord.impl.runtime.completion import Completion

from .helpers import T0_MS, TP, Env, batch

A, C = 5, 6


def test_idle_producers_expire_on_the_check_interval_but_open_transactions_never(env: Env) -> None:
    env.verifier.add(A)
    assert env.produce(batch(A, 0, seq=0, txn=True, ts_ms=T0_MS)).error == "NONE"
    assert env.produce(batch(C, 0, seq=0, ts_ms=T0_MS)).error == "NONE"
    expiration, interval = env.config.producer_id_expiration_ms, env.config.producer_id_expiration_check_interval_ms
    assert env.manager.next_deadline_ms() == T0_MS + interval
    env.clock.advance(expiration - 1)
    env.manager.poll()  # due (many intervals passed) but C is one millisecond too young
    assert env.state(C) is not None
    env.clock.advance(1)
    env.manager.poll()  # the last check was just now: not due again yet
    assert env.state(C) is not None
    env.clock.advance(interval)
    env.manager.poll()
    assert env.state(C) is None
    assert env.state(A)["state"] == "Ongoing"  # type: ignore[index]
    expire_rows = [r for r in env.rows() if r["event"] == "Expire"]
    assert [(r["producer_id"], r["from_state"], r["to_state"], r["arg_now_ms"]) for r in expire_rows] == [
        (C, "Known", "Expired", env.clock.now_ms())]
    env.clock.advance(100 * expiration)
    env.manager.poll()
    assert env.state(A)["state"] == "Ongoing"  # type: ignore[index]
    assert env.marker(A, 0, "COMMIT") == {TP: "NONE"}
    env.clock.advance(expiration)
    assert env.part.expire_producers() == [A]  # once the transaction is over, it may expire


def test_lingering_verification_entries_expire_too(env: Env) -> None:
    env.verifier.hold = True
    env.manager.produce(TP.topic, 0, batch(A, 0, seq=0, txn=True), transactional_id="t")
    assert env.part.states.verification_entry(A) is not None
    env.clock.advance(env.config.producer_id_expiration_ms)
    env.part.expire_producers()
    assert env.part.states.verification_entry(A) is None
    env.verifier.add(A)
    env.verifier.release()  # the coordinator finally confirms, too late: the guard is gone
    assert env.rows()[-1]["row"] == 1 and env.state(A) is None


@dataclass
class FakeGroupCoordinator:
    """Holds `__consumer_offsets`: answers after `release`, with a chosen error."""

    error: str = "NONE"
    got: list[TxnMarker] = field(default_factory=list)
    pending: list[tuple[Completion[list[MarkerResult]], Sequence[TxnMarker]]] = field(default_factory=list)

    def write_txn_markers(self, markers: Sequence[TxnMarker]) -> Completion[list[MarkerResult]]:
        self.got += markers
        done: Completion[list[MarkerResult]] = Completion()
        self.pending.append((done, markers))
        return done

    def release(self) -> None:
        done, markers = self.pending.pop(0)
        done.set([dict.fromkeys(m.partitions, self.error) for m in markers])


def test_broker_router_splits_markers_between_data_partitions_and_the_group_coordinator(env: Env) -> None:
    group = FakeGroupCoordinator(error="NOT_COORDINATOR")
    router = BrokerMarkerTarget(env.manager)
    router.register("__consumer_offsets", group)
    env.verifier.add(A)
    assert env.produce(batch(A, 0, seq=0, txn=True)).error == "NONE"
    offsets, unknown = TopicPartition("__consumer_offsets", 7), TopicPartition("gone", 0)
    done = router.write_txn_markers([TxnMarker(A, 0, "COMMIT", 1, (offsets, TP, unknown)),
                                     TxnMarker(C, 0, "ABORT", 1, (offsets,))])
    assert not done.done  # the group coordinator has not materialised the offsets yet (KAFKA-17507's order)
    assert env.state(A)["state"] == "Known"  # type: ignore[index]  # the data partition has its marker already
    assert [m.partitions for m in group.got] == [(offsets,), (offsets,)]
    group.release()
    assert done.result() == [{offsets: "NOT_LEADER_OR_FOLLOWER", TP: "NONE", unknown: "UNKNOWN_TOPIC_OR_PARTITION"},
                             {offsets: "NOT_LEADER_OR_FOLLOWER"}]
    assert [list(r) for r in done.result()] == [[offsets, TP, unknown], [offsets]]  # the markers' order


def test_broker_router_answers_a_holder_s_failed_request_but_raises_our_own_bug(env: Env) -> None:
    """A holder failing the request with a Kafka error or a disk error (OSError: KAFKA_STORAGE_ERROR, Kafka's answer
    to a failed append) is answered per partition, a coordinator's error as NOT_LEADER_OR_FOLLOWER; an
    IllegalStateError is a bug of ours: it surfaces from whoever completes the request, and the marker is not
    answered (it was once answered UNKNOWN_SERVER_ERROR)."""
    group = FakeGroupCoordinator()
    router = BrokerMarkerTarget(env.manager)
    router.register("__consumer_offsets", group)
    offsets = TopicPartition("__consumer_offsets", 7)
    for failure, expected in ((KafkaError(Errors.NOT_COORDINATOR, "moved"), "NOT_LEADER_OR_FOLLOWER"),
                              (OSError("no space left on device"), "KAFKA_STORAGE_ERROR")):
        done = router.write_txn_markers([TxnMarker(A, 0, "COMMIT", 1, (offsets,))])
        pending, _ = group.pending.pop(0)
        pending.fail(failure)
        assert done.result() == [{offsets: expected}]
    done = router.write_txn_markers([TxnMarker(A, 0, "COMMIT", 1, (offsets,))])
    pending, _ = group.pending.pop(0)
    with pytest.raises(IllegalStateError, match="planted"):
        pending.fail(IllegalStateError("planted"))
    assert not done.done


def test_broker_router_refuses_negative_producer_ids_and_epochs_before_any_holder(env: Env) -> None:
    """No control batch carries a negative producer id or epoch: such a marker is INVALID_REQUEST on every partition,
    the group coordinator's included (it once reached the offsets log's writer, which raised), and nothing is
    written; the other markers of the request are answered as usual."""
    group = FakeGroupCoordinator(error="NONE")
    router = BrokerMarkerTarget(env.manager)
    router.register("__consumer_offsets", group)
    offsets = TopicPartition("__consumer_offsets", 3)
    end = env.part.log_end_offset
    done = router.write_txn_markers([TxnMarker(-5, 0, "COMMIT", 0, (offsets, TP)),
                                     TxnMarker(A, -1, "ABORT", 0, (TP, offsets))])
    assert done.result() == [{offsets: "INVALID_REQUEST", TP: "INVALID_REQUEST"},
                             {TP: "INVALID_REQUEST", offsets: "INVALID_REQUEST"}]
    assert group.got == [] and env.part.log_end_offset == end
    mixed = router.write_txn_markers([TxnMarker(-1, -1, "ABORT", 0, (TP,)), TxnMarker(A, 0, "ABORT", 0, (offsets,))])
    assert [m.producer_id for m in group.got] == [A]
    group.release()
    assert mixed.result() == [{TP: "INVALID_REQUEST"}, {offsets: "NONE"}]


def test_broker_router_without_markers_or_owners(env: Env) -> None:
    router = BrokerMarkerTarget(env.manager)
    assert router.write_txn_markers([]).result() == []
    offsets = TopicPartition("__consumer_offsets", 0)
    answer = router.write_txn_markers([TxnMarker(A, 0, "ABORT", 0, (offsets,))]).result()
    assert answer == [{offsets: "UNKNOWN_TOPIC_OR_PARTITION"}]  # nobody registered for the offsets topic
