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
import functools
import re
import time
from typing import Any

from .looks import look_transaction
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
    obs = target.observations
    tc = make_txn_client(client, target, txn_id, source, group)
    try:
        tc.init()
        look_transaction(obs, target, "initialised", txn_id)
        records = sorted(tc.consume(10))
        if [v for _, _, v in records[:10]] != [f"i{i}".encode() for i in range(10)]:
            raise ScenarioFailed(f"read {records} from the input, expected i0..i9")
        steps = (("commit 1", [b"c:i%d" % i for i in range(5)], 5, True, 5),
                 ("abort", [b"x:i%d" % i for i in range(5, 10)], 10, False, 5),  # the abort drops its offsets
                 ("commit 2", [b"c:i%d" % i for i in range(5, 10)], 10, True, 10))
        for label, values, offset, commit, expected_offset in steps:
            _one_transaction(tc, sink, values, offset, commit=commit)
            look_transaction(obs, target, label, txn_id)
            wait_until(functools.partial(_committed_is, target, group, source, {0: expected_offset}),
                       target.timeout_s, f"the group's committed offset is {expected_offset} after the {label}")
            obs.exact(f"{label}: committed offsets", target.committed(group, source))
    finally:
        tc.close()
    seen = _committed_values(target, sink)
    obs.exact("read_committed saw", seen)
    expected = [b"c:i%d" % i for i in range(10)]
    if seen != expected:
        raise ScenarioFailed(f"read_committed saw {seen}, expected {expected}")
    everything = [v for _, _, v in target.read(sink, "read_uncommitted")]
    obs.exact("read_uncommitted saw the aborted records", all(b"x:i%d" % i in everything for i in range(5, 10)))
    if not all(b"x:i%d" % i in everything for i in range(5, 10)):
        raise ScenarioFailed(f"the aborted records are missing from the log itself: {everything}")
    return "2 commits and 1 abort; read_committed saw the 10 committed outputs only; offsets 5 then 10"


def _committed_is(target: Target, group: str, topic: str, expected: dict[int, int]) -> bool:
    return target.committed(group, topic) == expected


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
    obs = target.observations
    first = make_txn_client(client, target, txn_id)
    second: TxnClient | None = None
    try:
        first.init()
        first.begin()
        first.produce(sink, b"open-1")
        second = make_txn_client(client, target, txn_id)
        second.init()
        error = _expect_fenced(first, sink)
        error_kind = _error_kind(error)
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
    obs.exact("the first producer's failure", error_kind)
    obs.exact("read_committed saw", seen)
    look_transaction(obs, target, "after the second commit", txn_id)
    if seen != [b"new-2"]:
        raise ScenarioFailed(f"read_committed saw {seen}, expected only the second producer's record")
    obs.exact("read_uncommitted saw the fenced record",
              b"open-1" in [v for _, _, v in target.read(sink, "read_uncommitted")])
    if b"open-1" not in [v for _, _, v in target.read(sink, "read_uncommitted")]:
        raise ScenarioFailed("the fenced producer's record is not in the log (it was acknowledged)")
    return f"first producer fenced ({error[:60]}); its open transaction aborted"


def _error_kind(error: str) -> str:
    """The error a client failed with, without the broker's words: librdkafka's error code name
    (`KafkaError{code=PRODUCER_FENCED,...}`), else the exception's type (`ProducerFencedError: ...`)."""
    code = re.search(r"code=([A-Z_]+)", error)
    return code.group(1) if code else error.split(":", 1)[0]


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
    obs = target.observations
    obs.exact("read_committed saw every acknowledged commit once", sorted(set(seen) & set(committed)) == sorted(
        committed) and len(seen) == len(set(seen)))
    _check_exactly_once(seen, committed, maybe)
    state = _settled_state(target, txn_id)
    ended = "committed" if b"open" in seen else "aborted"
    obs.exact("the transaction open at the restart ended", ended)
    obs.exact("commits that needed a new producer", len(maybe))
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


def _once_markers_written(target: Target, tp: Any) -> list[Any]:
    """The partition's producers once none has a transaction open (or what it shows after the timeout)."""
    deadline = time.monotonic() + min(target.timeout_s, 10.0)
    while True:
        producers = target.admin().describe_producers([tp])[tp].active_producers
        if all(p.current_transaction_start_offset == -1 for p in producers) or time.monotonic() > deadline:
            return list(producers)
        time.sleep(0.1)


def _observe_producers(target: Target, during: list[Any], after: list[Any]) -> None:
    """Each producer by its role (idempotent: no transaction open while the other one's was), before and after."""
    obs = target.observations
    roles = {p.producer_id: "idempotent" if p.current_transaction_start_offset == -1 else "transactional"
             for p in during}
    obs.exact("while open: producers", sorted(roles.values()))
    for when, producers in (("while open", during), ("after the commit", after)):
        for p in sorted(producers, key=lambda p: roles.get(p.producer_id, "?")):
            role = roles.get(p.producer_id, "unknown")
            obs.exact(f"{when}: {role} producer's (epoch, last sequence, transaction start)",
                      (p.producer_epoch, p.last_sequence, p.current_transaction_start_offset))
            obs.shape(f"{when}: {role} producer's coordinator epoch", p.coordinator_epoch)


def describe_producers(target: Target) -> str:
    """DescribeProducers (KIP-664) shows what a partition keeps per producer: an idempotent producer's last
    sequence, a transactional producer's open transaction (its first offset), and once the commit's marker is
    written no open transaction and the coordinator epoch of the marker.

    What Kafka 4.0 really does: EndTxn is answered once PrepareCommit is in the transaction log; the markers are
    written to the partitions after that, so right after the client's commit returns the partition may still show
    the transaction open (the reference did, with coordinator epoch -1). The scenario waits for the marker."""
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
        after = _once_markers_written(target, tp)
    finally:
        producer.close()
    shown = [(p.producer_id, p.last_sequence, p.coordinator_epoch, p.current_transaction_start_offset) for p in during]
    _observe_producers(target, during, after)
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
