"""`--durability fsync`: the requests that arrive while a round of fsyncs is in flight cost the cluster loop no turn
(every write then waits for the next round anyway); the turn that ends the round, in the round's own callback,
starts the next round with what arrived meanwhile and then completes what it made durable, and every request is
answered once its own write is durable."""

from __future__ import annotations

import asyncio
import os
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
from kcoord.impl.server import syncfs_process
from kcoord.impl.server.apis import node_registry
from kcoord.impl.server.broker import BrokerContext
from kcoord.impl.server.codec import decode_response, encode_request
from kcoord.impl.server.dispatch import Dispatcher, Reply
from kcoord.impl.storage.log import Durability
from kcoord.impl.txn.config import TxnConfig

pytestmark = [pytest.mark.wire]

FSYNC_S = 0.3  # each fsync (or syncfs) takes this long: the later requests all arrive while the first round runs
LATER = 6


def _slow_helper(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each syncfs of the helper process (`SyncfsProcess`, which runs the rounds) takes `FSYNC_S` more; before the
    server starts."""
    slow = syncfs_process._HELPER.replace("    code = 0 if",
                                          f"    __import__('time').sleep({FSYNC_S})\n    code = 0 if")
    assert slow != syncfs_process._HELPER
    monkeypatch.setattr(syncfs_process, "_HELPER", slow)


def _init(tid: str) -> Any:
    return InitProducerIdRequest(transactional_id=TransactionalId(tid), transaction_timeout=_ms(60_000),
                                 producer_id=ProducerId(-1), producer_epoch=i16(-1))


def test_requests_arriving_during_a_round_wait_for_its_end_without_polling(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # (no timer due during the round: the transaction shards' abort checks an hour apart)
    config = ClusterConfig(txn=TxnConfig(abort_interval_ms=3_600_000), durability=Durability.fsync())
    with ServedCluster(tmp_path, 1, trace=False, config=config) as served:
        server = served.server
        cluster = server.cluster
        dispatcher = served.call(lambda: Dispatcher(node_registry(BrokerContext(server.shared, 0))))
        polls = [0]
        poll = cluster.poll

        def counted_poll() -> int:
            polls[0] += 1
            return int(poll())

        real_fsync = os.fsync
        sync = server._round_sync  # (one syncfs a round, `--fsync-method auto` here; an fsync per log otherwise)
        assert sync is not None and sync.whole_round
        real_syncfs = sync._syncfs
        assert real_syncfs is not None

        def slow_fsync(fd: int) -> None:
            time.sleep(FSYNC_S)
            real_fsync(fd)

        def slow_syncfs(fd: int) -> int:
            time.sleep(FSYNC_S)
            return real_syncfs(fd)

        async def send(tid: str, correlation_id: int) -> tuple[int, float]:
            frame = encode_request(_init(tid), correlation_id=correlation_id, client_id="rounds")
            outcome = await dispatcher.dispatch(frame, INFO)
            assert isinstance(outcome, Reply)
            answer = decode_response(_init(tid).__api_key__, 4, outcome.payload)[1]
            return int(answer.error_code.value), time.monotonic()

        async def scenario() -> dict[str, Any]:
            at_first = polls[0]
            first = asyncio.ensure_future(send("rounds-0", 1))
            while server._flushing is None:  # the first request's round has started
                await asyncio.sleep(0.001)
            round_in_flight = server._flushing
            before = polls[0]
            starting = before - at_first
            later = []
            for i in range(1, LATER + 1):  # each in a loop turn of its own
                later.append(asyncio.ensure_future(send(f"rounds-{i}", i + 1)))
                await asyncio.sleep(0.005)
            during = polls[0] - before
            still_same_round = server._flushing is round_in_flight
            first_code, first_at = await first
            answers = [await f for f in later]
            return {"polls starting the round": starting, "polls during the round": during,
                    "same round": still_same_round, "first": first_code, "later": [code for code, _ in answers],
                    "later after first": all(at >= first_at for _, at in answers)}

        monkeypatch.setattr(cluster, "poll", counted_poll)
        monkeypatch.setattr(os, "fsync", slow_fsync)
        monkeypatch.setattr(sync, "_syncfs", slow_syncfs)
        assert served.thread is not None
        outcome = served.thread.run(scenario())
        monkeypatch.setattr(os, "fsync", real_fsync)
        monkeypatch.setattr(sync, "_syncfs", real_syncfs)
        assert outcome["same round"], "the requests took longer to send than a round: nothing measured"
        # (the turn that starts the round: a poll that appends the first request's write, one that finds nothing)
        assert outcome == {"polls starting the round": 2, "polls during the round": 0, "same round": True,
                           "first": 0, "later": [0] * LATER, "later after first": True}


def test_work_left_after_a_turns_polls_is_polled_on_without_a_new_request(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A turn stops after `_POLLS_PER_TURN` polls that all did work (a long load); the rest is polled in the next
    turns at once, also when the turn is the one that ends a round (in `_flush_done`, outside the loop's task)."""
    config = ClusterConfig(txn=TxnConfig(abort_interval_ms=3_600_000), durability=Durability.fsync())
    with ServedCluster(tmp_path, 1, trace=False, config=config) as served:
        server = served.server
        cluster = server.cluster
        dispatcher = served.call(lambda: Dispatcher(node_registry(BrokerContext(server.shared, 0))))
        left = [0]  # polls still to report work (as a load in steps would)
        poll, end_flush = cluster.poll, cluster.end_flush

        rounds = [0]

        def end_flush_then_busy(tickets: Any) -> None:  # work due from the first round's end on
            end_flush(tickets)
            rounds[0] += 1
            if rounds[0] == 1:
                left[0] = 200  # more than three turns' polls

        def busy_poll() -> int:
            done = int(poll())
            if left[0] > 0:
                left[0] -= 1
                done += 1
            return done

        async def scenario() -> tuple[int, int, int]:
            frame = encode_request(_init("unfinished-0"), correlation_id=1, client_id="rounds")
            outcome = await dispatcher.dispatch(frame, INFO)
            assert isinstance(outcome, Reply)
            code = int(decode_response(_init("x").__api_key__, 4, outcome.payload)[1].error_code.value)
            deadline = time.monotonic() + 0.5
            while left[0] and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            return code, left[0], rounds[0]

        monkeypatch.setattr(cluster, "poll", busy_poll)
        monkeypatch.setattr(cluster, "end_flush", end_flush_then_busy)
        assert served.thread is not None
        assert served.thread.run(scenario()) == (0, 0, 1)  # (answer NONE, nothing left, one round)


def test_the_next_round_begins_before_the_ended_rounds_completions(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The turn that ends a round begins the next one first, with the writes that arrived meanwhile, so that its sync
    runs while the loop completes (and answers) what the ended round made durable; those later writes are answered
    only once their own round has ended."""
    config = ClusterConfig(txn=TxnConfig(abort_interval_ms=3_600_000), durability=Durability.fsync())
    _slow_helper(monkeypatch)
    with ServedCluster(tmp_path, 1, trace=False, config=config) as served:
        server = served.server
        cluster = server.cluster
        dispatcher = served.call(lambda: Dispatcher(node_registry(BrokerContext(server.shared, 0))))
        assert server._syncfs_process is not None
        end_flush, poll = cluster.end_flush, cluster.poll
        ended: list[Any] = []  # the rounds ended, by their tickets
        in_flight_at_first_poll: list[Any] = []  # after each round's end: the round in flight at the next poll

        def noted_end_flush(tickets: Any) -> None:
            end_flush(tickets)
            ended.append(tickets)

        def noted_poll() -> int:
            if len(in_flight_at_first_poll) < len(ended):
                in_flight_at_first_poll.append(server._flushing)
            return int(poll())

        async def send(tid: str, correlation_id: int) -> int:
            frame = encode_request(_init(tid), correlation_id=correlation_id, client_id="rounds")
            outcome = await dispatcher.dispatch(frame, INFO)
            assert isinstance(outcome, Reply)
            return int(decode_response(_init(tid).__api_key__, 4, outcome.payload)[1].error_code.value)

        async def scenario() -> tuple[int, list[int], int]:
            first = asyncio.ensure_future(send("next-0", 1))
            while server._flushing is None:
                await asyncio.sleep(0.001)
            later = [asyncio.ensure_future(send(f"next-{i}", i + 1)) for i in range(1, 4)]
            code = await first
            rounds_when_first_answered = len(ended)
            return code, [await f for f in later], rounds_when_first_answered

        monkeypatch.setattr(cluster, "end_flush", noted_end_flush)
        monkeypatch.setattr(cluster, "poll", noted_poll)
        assert served.thread is not None
        code, later, rounds_when_first_answered = served.thread.run(scenario())
        assert (code, later, rounds_when_first_answered) == (0, [0, 0, 0], 1)
        # the round that ended first: the next one (the later requests' writes) was in flight at its completions' poll
        assert in_flight_at_first_poll[0] is not None and in_flight_at_first_poll[0] is not ended[0]
        assert len(ended) >= 2 and in_flight_at_first_poll[0] is ended[1]
