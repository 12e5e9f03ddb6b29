"""`--durability fsync`: a round begun when the loop has nothing else to do runs on the loop's thread (`IdleSelect`,
`KcoordServer._round_here`); its answers still go out only once their records are on disk, and its errors fail the
same logs as a round on the syncfs thread."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from kio.schema.init_producer_id.v4 import InitProducerIdRequest
from kio.schema.types import ProducerId, TransactionalId
from kio.static.primitive import i16
from served_cluster import ServedCluster
from test_response_memo import INFO, _ms

from kcoord.impl.cluster import ClusterConfig
from kcoord.impl.server.apis import node_registry
from kcoord.impl.server.broker import BrokerContext
from kcoord.impl.server.codec import decode_response, encode_request
from kcoord.impl.server.dispatch import Dispatcher, Reply
from kcoord.impl.storage.log import Durability
from kcoord.impl.txn.config import TxnConfig

pytestmark = [pytest.mark.wire]

SYNCFS_S = 0.2  # each round's syncfs takes this long


def _init(tid: str) -> Any:
    return InitProducerIdRequest(transactional_id=TransactionalId(tid), transaction_timeout=_ms(60_000),
                                 producer_id=ProducerId(-1), producer_epoch=i16(-1))


def rounds_on_thread(server: Any) -> None:
    """Every round on the syncfs thread, as with uvloop (on the loop's thread, between two requests)."""
    if server._idle_select is not None:
        server._idle_select.uninstall(asyncio.get_running_loop())
        server._idle_select = None


def _config() -> ClusterConfig:
    # (no timer due: the transaction shards' abort checks an hour apart)
    return ClusterConfig(txn=TxnConfig(abort_interval_ms=3_600_000), durability=Durability.fsync())


async def _send(dispatcher: Dispatcher, tid: str) -> int:
    frame = encode_request(_init(tid), correlation_id=1, client_id="idle-rounds")
    outcome = await dispatcher.dispatch(frame, INFO)
    assert isinstance(outcome, Reply)
    return int(decode_response(_init(tid).__api_key__, 4, outcome.payload)[1].error_code.value)


def test_a_request_to_an_idle_loop_is_answered_after_its_round_ran_on_the_loops_thread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with ServedCluster(tmp_path, 1, trace=False, config=_config()) as served:
        server = served.server
        dispatcher = served.call(lambda: Dispatcher(node_registry(BrokerContext(server.shared, 0))))
        sync = server._round_sync
        assert sync is not None and sync.whole_round and server._idle_select is not None
        real_syncfs = sync._syncfs
        logs = [shard.log for shard in server.cluster.nodes[0].txn.runtime.shards.values()]
        syncs: list[tuple[str, float, float]] = []  # (thread, start, end) of every syncfs
        pending = []  # at each syncfs: the transaction logs with records not yet durable

        def slow_syncfs(fd: int) -> int:
            start = time.monotonic()
            pending.append(sum(1 for log in logs if log.durable_offset < log.log_end_offset))
            time.sleep(SYNCFS_S)
            result = int(real_syncfs(fd))
            syncs.append((threading.current_thread().name, start, time.monotonic()))
            return result

        async def scenario() -> tuple[int, float, float]:
            start = time.monotonic()
            code = await _send(dispatcher, "idle-0")
            return code, start, time.monotonic()

        monkeypatch.setattr(sync, "_syncfs", slow_syncfs)
        assert served.thread is not None
        code, sent_at, answered_at = served.thread.run(scenario())
        monkeypatch.setattr(sync, "_syncfs", real_syncfs)
        inline = served.call(lambda: server.rounds_inline)
    assert code == 0
    assert inline >= 1 and syncs, (inline, syncs)
    thread, start, end = syncs[0]
    assert thread == "kcoord-serve", syncs  # the loop's thread ran the round
    assert sent_at <= start and end <= answered_at, (sent_at, syncs, answered_at)  # answered once on disk
    assert pending[0] == 1, "the request's record was durable before its round's syncfs"


def _failed_round(root: Path, inline: bool) -> tuple[int, list[int], int]:
    """InitProducerId while every transaction log's next fsync fails: its answer, the transaction partitions still
    loaded and the rounds run on the loop's thread."""
    with ServedCluster(root, 1, trace=False, config=_config()) as served:
        server = served.server
        if not inline:
            served.call(lambda: rounds_on_thread(server))
        runtime = server.cluster.nodes[0].txn.runtime
        dispatcher = served.call(lambda: Dispatcher(node_registry(BrokerContext(server.shared, 0))))

        def fail_every_log() -> None:
            for shard in runtime.shards.values():
                shard.log.fail_next_flush()

        served.call(fail_every_log)
        assert served.thread is not None
        code = served.thread.run(_send(dispatcher, "failing-0"))
        loaded = served.call(lambda: sorted(runtime.shards))
        return code, loaded, served.call(lambda: server.rounds_inline)


def test_an_inline_rounds_errors_fail_the_same_logs_as_a_round_on_the_thread(tmp_path: Path) -> None:
    code_here, loaded_here, inline_here = _failed_round(tmp_path / "here", inline=True)
    code_there, loaded_there, inline_there = _failed_round(tmp_path / "there", inline=False)
    assert inline_here >= 1 and inline_there == 0
    assert code_here != 0, "the write whose fsync failed was acknowledged"
    assert (code_here, loaded_here) == (code_there, loaded_there)
