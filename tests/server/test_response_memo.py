"""The transactional APIs' answers built once (`answers.BodyMemo`) are byte for byte the answers built afresh.

The same script of transactional requests (answered NONE and several errors, each answer more than once, so the
memo is both filled and hit) goes to two fresh single-node clusters in turn: once as `kcoord serve` runs, once with
every memo lookup missing (every body built from the coordinator's answer); every response must be the same bytes.
"""

from __future__ import annotations

import asyncio
import datetime
from pathlib import Path
from typing import Any

import pytest
from kio.schema.add_offsets_to_txn.v3 import AddOffsetsToTxnRequest
from kio.schema.add_partitions_to_txn.v3 import AddPartitionsToTxnRequest
from kio.schema.add_partitions_to_txn.v3.request import AddPartitionsToTxnTopic
from kio.schema.create_topics.v4 import CreateTopicsRequest
from kio.schema.create_topics.v4.request import CreatableTopic
from kio.schema.end_txn.v3 import EndTxnRequest
from kio.schema.init_producer_id.v4 import InitProducerIdRequest
from kio.schema.txn_offset_commit.v3 import TxnOffsetCommitRequest
from kio.schema.txn_offset_commit.v3.request import TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic
from kio.schema.types import GroupId, ProducerId, TopicName, TransactionalId
from kio.static.primitive import i16, i32, i32Timedelta, i64
from served_cluster import ServedCluster

from kcoord.impl.server.answers import BodyMemo
from kcoord.impl.server.apis import node_registry
from kcoord.impl.server.broker import BrokerContext
from kcoord.impl.server.codec import decode_response, encode_request
from kcoord.impl.server.dispatch import ConnectionInfo, Dispatcher, Reply

TOPIC = "memo-out"
INFO = ConnectionInfo(1, "127.0.0.1", 1)
CONCURRENT_TRANSACTIONS = 51


class Script:
    """Requests sent one at a time through a dispatcher of the served node; every answer's bytes are kept."""

    def __init__(self, served: ServedCluster) -> None:
        self.served = served
        self.dispatcher = served.call(lambda: Dispatcher(node_registry(BrokerContext(served.server.shared, 0))))
        self.correlation_id = 0
        self.answers: list[tuple[str, bytes]] = []
        self.last = b""

    def send(self, what: str, body: Any, *, keep: bool = True) -> Any:
        if keep:  # (a retried request, whose count depends on timing, has its own id: the others' stay the same)
            self.correlation_id += 1
        frame = encode_request(body, correlation_id=self.correlation_id if keep else 1 << 30, client_id="memo")
        assert self.served.thread is not None
        outcome = self.served.thread.run(self.dispatcher.dispatch(frame, INFO))
        assert isinstance(outcome, Reply), (what, outcome)
        self.last = outcome.payload
        if keep:
            self.answers.append((what, outcome.payload))
        return decode_response(body.__api_key__, body.__version__, outcome.payload)[1]


def _add(tid: str, pid: int, epoch: int, partitions: tuple[int, ...], topic: str = TOPIC) -> Any:
    return AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=TransactionalId(tid), v3_and_below_producer_id=ProducerId(pid),
        v3_and_below_producer_epoch=i16(epoch), v3_and_below_topics=(
            AddPartitionsToTxnTopic(name=TopicName(topic), partitions=tuple(i32(p) for p in partitions)),))


def _offsets(tid: str, pid: int, epoch: int, group: str) -> Any:
    return AddOffsetsToTxnRequest(transactional_id=TransactionalId(tid), producer_id=ProducerId(pid),
                                  producer_epoch=i16(epoch), group_id=GroupId(group))


def _commit(tid: str, pid: int, epoch: int, group: str, offset: int) -> Any:
    return TxnOffsetCommitRequest(
        transactional_id=TransactionalId(tid), group_id=GroupId(group), producer_id=ProducerId(pid),
        producer_epoch=i16(epoch), generation_id=i32(-1), member_id="", group_instance_id=None,
        topics=(TxnOffsetCommitRequestTopic(name=TopicName(TOPIC), partitions=tuple(
            TxnOffsetCommitRequestPartition(partition_index=i32(p), committed_offset=i64(offset),
                                            committed_leader_epoch=i32(-1), committed_metadata="") for p in (0, 1))),))


def _end(tid: str, pid: int, epoch: int, commit: bool) -> Any:
    return EndTxnRequest(transactional_id=TransactionalId(tid), producer_id=ProducerId(pid),
                         producer_epoch=i16(epoch), committed=commit)


def _begin(s: Script, tid: str, pid: int, epoch: int, partitions: tuple[int, ...]) -> None:
    """AddPartitionsToTxn until the previous transaction's markers are done (CONCURRENT_TRANSACTIONS meanwhile: how
    many such answers come depends on timing, so only the last answer is compared)."""
    for _ in range(200):
        answer = s.send("add (retried)", _add(tid, pid, epoch, partitions), keep=False)
        codes = {r.partition_error_code.value for t in answer.results_by_topic_v3_and_below
                 for r in t.results_by_partition}
        if codes != {CONCURRENT_TRANSACTIONS}:
            s.answers.append(("add", s.last))
            return
        s.served.thread.run(asyncio.sleep(0.01))  # type: ignore[union-attr]
    raise AssertionError(f"{tid}: AddPartitionsToTxn kept answering CONCURRENT_TRANSACTIONS")


def run_script(root: Path) -> list[tuple[str, bytes]]:
    with ServedCluster(root, 1, trace=False) as served:
        s = Script(served)
        s.send("topics", CreateTopicsRequest(
            topics=(CreatableTopic(name=TopicName(TOPIC), num_partitions=i32(4), replication_factor=i16(1),
                                   assignments=(), configs=()),),
            timeout=_ms(30_000),
            validate_only=False))
        ids = {}
        for tid in ("memo-1", "memo-2"):
            init = s.send("init", InitProducerIdRequest(transactional_id=TransactionalId(tid),
                                                        transaction_timeout=_ms(60_000), producer_id=ProducerId(-1),
                                                        producer_epoch=i16(-1)))
            ids[tid] = int(init.producer_id), int(init.producer_epoch)
        (p1, e1), (p2, e2) = ids["memo-1"], ids["memo-2"]
        for round_ in range(3):  # every answer below at least twice: built once, then from the memo
            _begin(s, "memo-1", p1, e1, (0, 1))
            s.send("add again", _add("memo-1", p1, e1, (0, 1)))
            s.send("add more", _add("memo-1", p1, e1, (2,)))
            s.send("add stale epoch", _add("memo-1", p1, e1 - 1, (0, 1)))
            s.send("add wrong pid", _add("memo-1", p1 + 100, e1, (3,)))
            s.send("add unknown topic", _add("memo-1", p1, e1, (0,), topic="memo-nowhere"))
            s.send("add unknown id", _add("memo-nobody", p1, e1, (0,)))
            s.send("offsets", _offsets("memo-1", p1, e1, "memo-g"))
            s.send("offsets stale epoch", _offsets("memo-1", p1, e1 - 1, "memo-g"))
            s.send("offsets unknown id", _offsets("memo-nobody", p1, e1, "memo-g"))
            s.send("offsets again", _offsets("memo-1", p1, e1, "memo-g"))
            s.send("commit", _commit("memo-1", p1, e1, "memo-g", round_ + 1))
            s.send("commit stale epoch", _commit("memo-1", p1, e1 - 1, "memo-g", round_ + 1))
            s.send("commit wrong group", _commit("memo-1", p1, e1, "memo-other", round_ + 1))
            s.send("end wrong pid", _end("memo-1", p1 + 100, e1, True))
            s.send("end stale epoch", _end("memo-1", p1, e1 - 1, True))
            s.send("end unknown id", _end("memo-nobody", p1, e1, True))
            s.send("end other id, nothing open", _end("memo-2", p2, e2, True))
            s.send("end", _end("memo-1", p1, e1, round_ != 1))  # commit, abort, commit
        return s.answers


def _ms(ms: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=ms))


def test_memoised_transaction_answers_are_the_bytes_built_afresh(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    memoised = run_script(tmp_path / "memo")
    with monkeypatch.context() as m:
        m.setattr(BodyMemo, "body", lambda self, key, make: make())
        fresh = run_script(tmp_path / "fresh")
    assert [what for what, _ in memoised] == [what for what, _ in fresh]
    different = [(i, what, a.hex(), b.hex()) for i, ((what, a), (_, b)) in enumerate(zip(memoised, fresh, strict=True))
                 if a != b]
    assert not different, different
    codes = {what: payload for what, payload in fresh}
    assert len(codes) >= 18 and len(set(codes.values())) >= 8  # the script reaches many distinct answers
