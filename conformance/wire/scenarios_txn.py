"""Transaction scenarios: consume-transform-produce with commit and abort, fencing by a second producer, a broker
restart in the middle of a transactional workload, and the producer state a partition shows (DescribeProducers).

Owns the scenario bodies (see `scenarios_groups` for the conventions). What is checked is what a client can see: a
read_committed reader sees every committed record exactly once and no aborted record; the group's committed offsets
move only with committed transactions; a fenced producer gets a fencing error and its open transaction is aborted;
after a restart every acknowledged commit is still there and the open transaction ends aborted or committed.
Must not import: `kcoord.impl`.
"""

from __future__ import annotations

import contextlib
import time

from .members import MemberFactory
from .ownership import OwnershipLog
from .producers import Fenced, TxnClient, TxnFailed, make_txn_client
from .target import ScenarioFailed, ScenarioSkipped, Target, wait_until

_SETTLED_STATES = frozenset({"Empty", "CompleteCommit", "CompleteAbort"})


def _tag(client: str) -> str:
    return {"kafka-python": "kp", "aiokafka": "ak", "confluent-kafka": "ck"}[client]


def _committed_values(target: Target, topic: str) -> list[bytes]:
    return [v for _, _, v in target.read(topic, "read_committed")]


def transactions(client: str, target: Target) -> str:
    """Read 10 inputs as a group member; commit a transaction producing 5 outputs with the offsets, abort one
    producing the other 5, then commit them again: read_committed sees exactly the committed outputs, in order."""
    tag = _tag(client)
    source, sink = target.name(tag, "txn-in"), target.name(tag, "txn-out")
    group, txn_id = target.name(tag, "txn-group"), target.name(tag, "txn")
    target.create_topic(source, 1)
    target.create_topic(sink, 1)
    target.produce(source, [(0, f"i{i}".encode()) for i in range(10)])
    tc = make_txn_client(client, target, txn_id, source, group)
    try:
        tc.init()
        records = sorted(tc.consume(10))
        if [v for _, _, v in records[:10]] != [f"i{i}".encode() for i in range(10)]:
            raise ScenarioFailed(f"read {records} from the input, expected i0..i9")
        _one_transaction(tc, sink, [b"c:i%d" % i for i in range(5)], 5, commit=True)
        _one_transaction(tc, sink, [b"x:i%d" % i for i in range(5, 10)], 10, commit=False)
        wait_until(lambda: target.committed(group, source) == {0: 5}, target.timeout_s,
                   "the group's committed offset is 5 (the aborted transaction's offsets are dropped)")
        _one_transaction(tc, sink, [b"c:i%d" % i for i in range(5, 10)], 10, commit=True)
    finally:
        tc.close()
    wait_until(lambda: target.committed(group, source) == {0: 10}, target.timeout_s,
               "the group's committed offset is 10 after the last commit")
    seen = _committed_values(target, sink)
    expected = [b"c:i%d" % i for i in range(10)]
    if seen != expected:
        raise ScenarioFailed(f"read_committed saw {seen}, expected {expected}")
    everything = [v for _, _, v in target.read(sink, "read_uncommitted")]
    if not all(b"x:i%d" % i in everything for i in range(5, 10)):
        raise ScenarioFailed(f"the aborted records are missing from the log itself: {everything}")
    return "2 commits and 1 abort; read_committed saw the 10 committed outputs only; offsets 5 then 10"


def _one_transaction(tc: TxnClient, sink: str, values: list[bytes], offset: int, *, commit: bool) -> None:
    tc.begin()
    for value in values:
        tc.produce(sink, value)
    tc.send_offsets({0: offset})
    if commit:
        tc.commit()
    else:
        tc.abort()


def fencing(client: str, target: Target) -> str:
    """A second producer with the same transactional.id fences the first: the first gets a fencing error, its open
    transaction is aborted (read_committed never shows its record), and the second commits normally."""
    tag = _tag(client)
    sink, txn_id = target.name(tag, "fence-out"), target.name(tag, "fence")
    target.create_topic(sink, 1)
    first = make_txn_client(client, target, txn_id)
    second: TxnClient | None = None
    try:
        first.init()
        first.begin()
        first.produce(sink, b"open-1")
        second = make_txn_client(client, target, txn_id)
        second.init()
        error = _expect_fenced(first, sink)
        # A fenced producer can only be closed, and it must be before the second one opens its transaction: a client
        # that answers INVALID_PRODUCER_EPOCH with a KIP-360 epoch bump (kafka-python 3.0.12 does) sends
        # InitProducerId with its old epoch, and Kafka 4.0 checks only the producer id, not the epoch, when the
        # transaction is Ongoing (kafka-reference.md §1.5) — a bump landing after the second producer's
        # AddPartitionsToTxn fences the second producer and aborts its transaction. Closing waits for requests in
        # flight, so no bump of the first arrives later.
        first.close()
        second.begin()
        second.produce(sink, b"new-2")
        second.commit()
    finally:
        first.close()
        if second is not None:
            second.close()
    seen = _committed_values(target, sink)
    if seen != [b"new-2"]:
        raise ScenarioFailed(f"read_committed saw {seen}, expected only the second producer's record")
    if b"open-1" not in [v for _, _, v in target.read(sink, "read_uncommitted")]:
        raise ScenarioFailed("the fenced producer's record is not in the log (it was acknowledged)")
    return f"first producer fenced ({error[:60]}); its open transaction aborted"


def _expect_fenced(first: TxnClient, sink: str) -> str:
    try:
        first.produce(sink, b"late-1")
        first.commit()
    except Fenced as e:
        return str(e)
    except TxnFailed as e:
        raise ScenarioFailed(f"the fenced producer failed with {e}, not with a fencing error") from None
    raise ScenarioFailed("the first producer committed after a second producer with its transactional.id started")


def restart_mid_transaction(target: Target) -> str:
    """Transactions committed before, during and after a broker restart (kafka-python), with a group member reading
    the output throughout: nothing acknowledged is lost, the transaction open at the restart ends committed or
    aborted, and producer and consumer carry on."""
    if target.restart is None:
        raise ScenarioSkipped("needs --restart-command (a way to restart the broker)")
    sink, txn_id, group = target.name("kp", "rs-out"), target.name("kp", "rs"), target.name("kp", "rs-group")
    target.create_topic(sink, 2)
    log = OwnershipLog()
    committed: list[bytes] = []
    maybe: list[bytes] = []  # commits whose outcome the client could not learn
    with MemberFactory("kafka-python", target, log) as factory:
        reader = factory.make("reader", group, sink)
        producer = make_txn_client("kafka-python", target, txn_id)
        try:
            producer.init()
            for i in range(3):
                producer = _commit_one(target, producer, txn_id, sink, f"r{i}".encode(), committed, maybe)
            producer.begin()
            producer.produce(sink, b"open")
            target.restart()
            target.reset_admin()
            try:
                producer.commit()
                committed.append(b"open")
            except (Fenced, TxnFailed):
                maybe.append(b"open")
            for i in range(3, 6):
                producer = _commit_one(target, producer, txn_id, sink, f"r{i}".encode(), committed, maybe)
        finally:
            producer.close()
        wait_until(lambda: set(committed) <= {v for _, _, v in reader.consumed()}, target.timeout_s,
                   "the group member read every committed record across the restart")
        reader.stop()
    seen = _committed_values(target, sink)
    _check_exactly_once(seen, committed, maybe)
    state = _settled_state(target, txn_id)
    ended = "committed" if b"open" in seen else "aborted"
    return f"{len(committed)} commits survived the restart; the open transaction was {ended}; last state {state}"


def _commit_one(target: Target, producer: TxnClient, txn_id: str, sink: str, value: bytes, committed: list[bytes],
                maybe: list[bytes]) -> TxnClient:
    """Commit one record; on a failure start a new producer (which fences and cleans up) and try again."""
    for _ in range(5):
        try:
            producer.begin()
            producer.produce(sink, value)
            producer.commit()
            committed.append(value)
            return producer
        except (Fenced, TxnFailed):
            maybe.append(value)
            producer.close()
            time.sleep(0.5)
            producer = make_txn_client("kafka-python", target, txn_id)
            producer.init()
    raise ScenarioFailed(f"could not commit {value!r} after 5 attempts")


def _check_exactly_once(seen: list[bytes], committed: list[bytes], maybe: list[bytes]) -> None:
    lost = [v for v in committed if v not in seen]
    duplicated = sorted({v for v in seen if seen.count(v) > 1})
    strangers = [v for v in seen if v not in committed and v not in maybe]
    if lost or duplicated or strangers:
        raise ScenarioFailed(f"read_committed saw {seen}: lost {lost}, duplicated {duplicated}, never committed "
                             f"{strangers}")


def _settled_state(target: Target, txn_id: str) -> str:
    states: list[str] = []

    def settled() -> bool:
        with contextlib.suppress(Exception):
            described = target.admin().describe_transactions([txn_id])
            state = described[txn_id].state
            states.append(getattr(state, "value", str(state)))
            return states[-1] in _SETTLED_STATES
        return False

    wait_until(settled, target.timeout_s, f"transaction {txn_id} is settled (states seen: {states[-3:]})",
               interval_s=0.2)
    return states[-1]


def describe_producers(target: Target) -> str:
    """DescribeProducers (KIP-664) shows what a partition keeps per producer: an idempotent producer's last
    sequence, a transactional producer's open transaction (its first offset), and after the commit no open
    transaction and the coordinator epoch of the marker."""
    from kafka.structs import TopicPartition

    topic = target.name("kp", "producers")
    target.create_topic(topic, 1)
    target.produce(topic, [(0, f"i{i}".encode()) for i in range(3)])  # offsets 0-2, sequences 0-2
    tp = TopicPartition(topic, 0)
    producer = make_txn_client("kafka-python", target, target.name("kp", "producers-txn"))
    try:
        producer.init()
        producer.begin()
        producer.produce(topic, b"open")  # offset 3
        during = target.admin().describe_producers([tp])[tp].active_producers
        producer.commit()
        after = target.admin().describe_producers([tp])[tp].active_producers
    finally:
        producer.close()
    shown = [(p.producer_id, p.last_sequence, p.coordinator_epoch, p.current_transaction_start_offset) for p in during]
    idempotent = [p for p in during if p.current_transaction_start_offset == -1]
    open_txn = [p for p in during if p.current_transaction_start_offset != -1]
    if len(idempotent) != 1 or (idempotent[0].last_sequence, idempotent[0].coordinator_epoch) != (2, -1):
        raise ScenarioFailed(f"while a transaction was open the partition showed {shown} (producer id, last sequence, "
                             "coordinator epoch, transaction start): expected one idempotent producer at sequence 2")
    if len(open_txn) != 1 or (open_txn[0].current_transaction_start_offset, open_txn[0].last_sequence) != (3, 0):
        raise ScenarioFailed(f"while a transaction was open the partition showed {shown}: expected one transaction "
                             "open at offset 3 with sequence 0")
    [committed] = [p for p in after if p.producer_id == open_txn[0].producer_id] or [None]
    if committed is None or committed.current_transaction_start_offset != -1 or committed.coordinator_epoch < 0:
        raise ScenarioFailed(f"after the commit the transactional producer showed {committed}: expected no open "
                             "transaction and the marker's coordinator epoch")
    return (f"idempotent producer {idempotent[0].producer_id} at sequence 2; transactional producer "
            f"{committed.producer_id} open at offset 3, then committed "
            f"(coordinator epoch {committed.coordinator_epoch})")
