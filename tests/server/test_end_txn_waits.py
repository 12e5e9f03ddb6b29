"""A served EndTxn answered NONE is sent once the transaction's markers and Complete* record are written
(`TxnConfig.end_txn_waits_for_markers_ms`, bounded), so the producer's next AddPartitionsToTxn finds the transaction
complete instead of CONCURRENT_TRANSACTIONS (DEVIATIONS.md: Kafka answers once the Prepare* record is durable). With
`--durability fsync` and a disk whose fsync or syncfs takes 50 ms the markers need a round of their own after the
PrepareCommit's, so an answer sent as Kafka sends it would find the transaction still in PrepareCommit."""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from typing import Any

import pytest
from kio.schema.add_partitions_to_txn.v3 import AddPartitionsToTxnRequest
from kio.schema.add_partitions_to_txn.v3.request import AddPartitionsToTxnTopic
from kio.schema.create_topics.v4 import CreateTopicsRequest
from kio.schema.create_topics.v4.request import CreatableTopic
from kio.schema.end_txn.v3 import EndTxnRequest
from kio.schema.init_producer_id.v4 import InitProducerIdRequest
from kio.schema.types import ProducerId, TopicName, TransactionalId
from kio.static.primitive import i16, i32
from served_cluster import ServedCluster, fast_cluster_config
from test_response_memo import Script, _ms

from kcoord.impl.storage.log import Durability

pytestmark = [pytest.mark.wire]

TOPIC = "hold-out"
TID = "hold-1"
CONCURRENT_TRANSACTIONS = 51


def _add(pid: int, epoch: int, partitions: tuple[int, ...]) -> Any:
    return AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=TransactionalId(TID), v3_and_below_producer_id=ProducerId(pid),
        v3_and_below_producer_epoch=i16(epoch), v3_and_below_topics=(
            AddPartitionsToTxnTopic(name=TopicName(TOPIC), partitions=tuple(i32(p) for p in partitions)),))


def _codes(answer: Any) -> set[int]:
    return {r.partition_error_code.value for t in answer.results_by_topic_v3_and_below for r in t.results_by_partition}


@pytest.mark.parametrize("hold_ms", [10_000, 0])
def test_end_txn_is_answered_once_the_transaction_is_complete(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              hold_ms: int) -> None:
    real_fsync = os.fsync

    def slow_fsync(fd: int) -> None:
        time.sleep(0.05)
        real_fsync(fd)

    config = fast_cluster_config(end_txn_waits_for_markers_ms=hold_ms)
    config = dataclasses.replace(config, durability=Durability.fsync())
    with ServedCluster(tmp_path, 1, trace=False, config=config) as served:
        s = Script(served)
        s.send("topics", CreateTopicsRequest(
            topics=(CreatableTopic(name=TopicName(TOPIC), num_partitions=i32(2), replication_factor=i16(1),
                                   assignments=(), configs=()),), timeout=_ms(30_000), validate_only=False))
        init = s.send("init", InitProducerIdRequest(transactional_id=TransactionalId(TID),
                                                    transaction_timeout=_ms(60_000), producer_id=ProducerId(-1),
                                                    producer_epoch=i16(-1)))
        pid, epoch = int(init.producer_id), int(init.producer_epoch)
        monkeypatch.setattr(os, "fsync", slow_fsync)
        sync = served.server._round_sync  # (a round is one syncfs with `--fsync-method auto` on Linux: slowed too)
        real_syncfs = sync._syncfs if sync is not None else None
        if real_syncfs is not None:
            def slow_syncfs(fd: int) -> int:
                time.sleep(0.05)
                return real_syncfs(fd)

            monkeypatch.setattr(sync, "_syncfs", slow_syncfs)
        assert _codes(s.send("add", _add(pid, epoch, (0, 1)))) == {0}
        end = s.send("end", EndTxnRequest(transactional_id=TransactionalId(TID), producer_id=ProducerId(pid),
                                          producer_epoch=i16(epoch), committed=True))
        assert end.error_code.value == 0
        txn = served.server.cluster.nodes[0].txn
        state = served.call(lambda: txn.runtime.shard(txn.runtime.partition_for(TID)).get("Transaction", (TID,))
                            ["state"])
        again = _codes(s.send("add next", _add(pid, epoch, (0,))))
        if hold_ms:
            assert (state, again) == ("CompleteCommit", {0})
        else:  # as Kafka answers: the markers' fsync round is still to come
            assert (state, again) == ("PrepareCommit", {CONCURRENT_TRANSACTIONS})
