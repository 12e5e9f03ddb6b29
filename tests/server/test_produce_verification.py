"""KIP-890 over the wire: a transactional Produce to several partitions is verified with the transaction coordinator
once per request (Kafka 4.0: `ReplicaManager.appendRecords` → `maybeStartTransactionVerificationForPartitions`, one
verify-only AddPartitionsToTxn per transactional id), and its answers are the bytes of one verification per partition
(the path before: `PartitionManager.produce` without `deferred`)."""

from __future__ import annotations

import datetime
import importlib
import time
from pathlib import Path
from typing import Any

import pytest
from kio.schema.create_topics.v4 import CreateTopicsRequest
from kio.schema.create_topics.v4.request import CreatableTopic
from kio.schema.init_producer_id.v4 import InitProducerIdRequest
from kio.schema.types import ProducerId, TopicName, TransactionalId
from kio.static.primitive import i16, i32, i32Timedelta
from served_cluster import ServedCluster
from test_response_memo import Script, _add

from kcoord.impl.partition.manager import PartitionManager
from kcoord.impl.storage.batch import encode_new_batch
from kcoord.impl.txn.coordinator import TransactionCoordinator

TOPIC = "memo-out"  # `_add`'s topic


def _produce(version: int, tid: str, pid: int, epoch: int, partitions: tuple[int, ...], seq: int) -> Any:
    module = importlib.import_module(f"kio.schema.produce.v{version}")
    request = importlib.import_module(f"kio.schema.produce.v{version}.request")
    now = int(time.time() * 1000)
    data = tuple(request.PartitionProduceData(index=i32(p), records=encode_new_batch(
        [(None, b"v")], base_offset=0, timestamp_ms=now, producer_id=pid, producer_epoch=epoch, base_sequence=seq,
        transactional=True)) for p in partitions)
    return module.ProduceRequest(transactional_id=TransactionalId(tid), acks=i16(-1), timeout=_ms(30_000),
                                 topic_data=(request.TopicProduceData(name=TopicName(TOPIC), partition_data=data),))


def _ms(ms: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=ms))


def run(root: Path, version: int) -> tuple[list[list[int]], list[str], bytes]:
    """Errors of a Produce to partitions 0, 1, 2 of which 0 and 1 were added, the coordinator calls made for it and
    the answer's bytes."""
    calls: list[str] = []
    with ServedCluster(root, 1, trace=False) as served:
        s = Script(served)
        s.send("topics", CreateTopicsRequest(
            topics=(CreatableTopic(name=TopicName(TOPIC), num_partitions=i32(4), replication_factor=i16(1),
                                   assignments=(), configs=()),), timeout=_ms(30_000), validate_only=False))
        init = s.send("init", InitProducerIdRequest(transactional_id=TransactionalId("v"),
                                                    transaction_timeout=_ms(60_000), producer_id=ProducerId(-1),
                                                    producer_epoch=i16(-1)))
        pid, epoch = int(init.producer_id), int(init.producer_epoch)
        s.send("add", _add("v", pid, epoch, (0, 1)))
        with pytest.MonkeyPatch.context() as m:
            for name in ("verify_partition", "verify_partitions"):
                original = getattr(TransactionCoordinator, name)
                m.setattr(TransactionCoordinator, name,
                          lambda self, *a, _o=original, _n=name, **k: calls.append(_n) or _o(self, *a, **k))
            answer = s.send("produce", _produce(version, "v", pid, epoch, (0, 1, 2), 0))
        errors = [[p.error_code.value for p in t.partition_responses] for t in answer.responses]
    return errors, calls, s.last


@pytest.mark.parametrize("version", [8, 11])
def test_one_verification_per_produce_request_with_the_same_bytes(tmp_path: Path, version: int) -> None:
    errors, calls, per_request = run(tmp_path / "request", version)
    assert calls == ["verify_partitions"]
    # up to v10 the refused partition is INVALID_TXN_STATE (48); from v11 TRANSACTION_ABORTABLE (120)
    assert errors == [[0, 0, 48 if version <= 10 else 120]]
    produce = PartitionManager.produce
    with pytest.MonkeyPatch.context() as m:  # the path before: one verification per partition
        m.setattr(PartitionManager, "produce", lambda self, *a, deferred=None, **k: produce(self, *a, **k))
        errors_before, calls_before, per_partition = run(tmp_path / "partition", version)
    assert calls_before == ["verify_partition"] * 3 and errors_before == errors
    assert per_request == per_partition
