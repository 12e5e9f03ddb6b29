"""A `kcoord serve` node's CPU per request without the sockets: `Dispatcher.dispatch` called in process on the frames
`bench_clients.py` sends, and where that CPU goes (cProfile, cumulative, by function).

Run: ``.venv/bin/python benchmarks/profile_dispatch.py [--workload consumer|classic|txn|txn2] [--groups 8]
[--requests 20000] [--runs 5] [--durability os|fsync] [--profile] [--top 30]``.

A `KcoordServer` (os durability, Kafka 4.0's defaults except `group.initial.rebalance.delay.ms=0`, as
`bench_server.py` runs it) starts in this process; `--groups` groups of one member each are set up through its
dispatcher (the joins wait for their writes, on the server's own loop), then each group's steady heartbeat frame is
dispatched in turn `--requests` times, synchronously: a heartbeat that changes nothing is answered without waiting,
and one that would wait is an error here. The figure is CPU µs (process_time) per dispatched request: decode,
handler, coordinator, encode, metrics — everything `bench_server.py` measures except the socket calls and the event
loop. The answers' error codes are checked.

`--workload txn`: `--groups` transactional producers (`bench_clients.txn`'s transaction: AddPartitionsToTxn of 2
partitions, a transactional Produce to both, AddOffsetsToTxn, TxnOffsetCommit, EndTxn commit) run side by side as
tasks on the server's own loop, each awaiting its answers (an EndTxn waits for its log write and markers, as over a
socket), until `--requests` transactions are committed; every request frame is built before the clock starts. The
figure is CPU µs per committed transaction of this process (`--durability fsync`: with its fsync threads) minus the
client's own checking of the answers and the AddPartitionsToTxn retries (CONCURRENT_TRANSACTIONS while the
previous transaction's markers complete: in process the next transaction starts at once; over sockets there are
almost none), each timed apart. `--workload txn2`: Kafka 4.0's Java client's Transactions V2 transaction instead
(`bench_clients.txn2`'s: Produce v12 to both partitions, the leader adding them; TxnOffsetCommit v5; EndTxn v5), its
frames built as it goes (each transaction writes with the epoch the previous EndTxn answered) and timed as the
client's.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_clients import (
    CONCURRENT_TRANSACTIONS,
    INPUT_TOPIC,
    PARTITIONS,
    TOPIC,
    _init_producer,
    _ms,
    _produce_request,
    end_txn_v5,
    produce_v12,
    txn_offset_commit_v5,
)
from kio.schema.add_offsets_to_txn.v3 import AddOffsetsToTxnRequest
from kio.schema.add_partitions_to_txn.v3 import AddPartitionsToTxnRequest
from kio.schema.add_partitions_to_txn.v3.request import AddPartitionsToTxnTopic
from kio.schema.consumer_group_heartbeat.v0 import ConsumerGroupHeartbeatRequest
from kio.schema.end_txn.v3 import EndTxnRequest
from kio.schema.heartbeat.v4 import HeartbeatRequest
from kio.schema.join_group.v5 import JoinGroupRequest
from kio.schema.join_group.v5.request import JoinGroupRequestProtocol
from kio.schema.sync_group.v3 import SyncGroupRequest
from kio.schema.sync_group.v3.request import SyncGroupRequestAssignment
from kio.schema.txn_offset_commit.v3 import TxnOffsetCommitRequest
from kio.schema.txn_offset_commit.v3.request import TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic
from kio.schema.types import GroupId, ProducerId, TopicName, TransactionalId
from kio.static.primitive import i16, i32, i64

from kcoord.impl.server.codec import decode_response, encode_request
from kcoord.impl.server.dispatch import ConnectionInfo, Dispatcher, Reply

_ERROR_AT = struct.Struct(">h")
INFO = ConnectionInfo(1, "127.0.0.1", 50000)


class Node:
    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher
        self.correlation_id = 0
        self.busy = 0  # requests in progress: the server's `busy_connections`, as this node's producers have them

    def frame(self, body: Any) -> bytes:
        self.correlation_id += 1
        return encode_request(body, correlation_id=self.correlation_id, client_id="kcoord-bench")

    async def raw(self, frame: bytes) -> bytes:
        self.busy += 1
        try:
            outcome = await self.dispatcher.dispatch(frame, INFO)
        finally:
            self.busy -= 1
        assert isinstance(outcome, Reply), outcome
        return outcome.payload

    async def send(self, frame: bytes, api_key: int, version: int) -> Any:
        return decode_response(api_key, version, await self.raw(frame))[1]

    async def request(self, body: Any) -> Any:
        return await self.send(self.frame(body), body.__api_key__, body.__version__)


async def _setup_consumer(node: Node, group: str) -> bytes:
    from kcoord.impl.server.codec import decode_response as _  # noqa: F401 (imported above; kept for clarity)

    for _attempt in range(100):
        joined = await node.request(ConsumerGroupHeartbeatRequest(
            group_id=GroupId(group), member_id="", member_epoch=i32(0), rebalance_timeout=_ms(60_000),
            subscribed_topic_names=(TopicName(TOPIC),), topic_partitions=()))
        if joined.error_code.value == 0:
            break
        await asyncio.sleep(0.05)
    else:
        raise RuntimeError(f"{group}: the join kept failing ({joined.error_code})")
    return node.frame(ConsumerGroupHeartbeatRequest(group_id=GroupId(group), member_id=joined.member_id,
                                                    member_epoch=joined.member_epoch, topic_partitions=None))


async def _setup_classic(node: Node, group: str) -> bytes:
    member_id = ""
    for _attempt in range(100):
        join = await node.request(JoinGroupRequest(
            group_id=GroupId(group), session_timeout=_ms(45_000), rebalance_timeout=_ms(60_000), member_id=member_id,
            group_instance_id=None, protocol_type="consumer",
            protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),)))
        member_id = join.member_id
        if join.error_code.value == 0:
            break
    sync = await node.request(SyncGroupRequest(
        group_id=GroupId(group), generation_id=join.generation_id, member_id=member_id, group_instance_id=None,
        assignments=(SyncGroupRequestAssignment(member_id=member_id, assignment=b""),)))
    assert sync.error_code.value == 0, sync
    return node.frame(HeartbeatRequest(group_id=GroupId(group), generation_id=join.generation_id,
                                       member_id=member_id, group_instance_id=None))


def _dispatch_now(dispatcher: Dispatcher, frame: bytes) -> bytes:
    steps = dispatcher.dispatch(frame, INFO)
    try:
        steps.send(None)
    except StopIteration as stop:
        outcome = stop.value
    else:
        steps.close()
        raise RuntimeError("a steady heartbeat waited: it is not answered at once")
    assert isinstance(outcome, Reply)
    return outcome.payload


def run(frames: list[bytes], dispatcher: Dispatcher, requests: int) -> float:
    """CPU µs per request over `requests` dispatches (the frames in turn)."""
    n = len(frames)
    start = time.process_time()
    for i in range(requests):
        payload = _dispatch_now(dispatcher, frames[i % n])
        # response header v1 (correlation id, empty tags), throttle time, then the error code
        if _ERROR_AT.unpack_from(payload, 9)[0] != 0:
            raise RuntimeError(f"heartbeat answered error {_ERROR_AT.unpack_from(payload, 9)[0]}")
    return 1e6 * (time.process_time() - start) / requests


class TxnDriver:
    """`bench_clients.txn`'s transaction, in process: the frames built ahead, the answers checked (timed apart)."""

    def __init__(self, node: Node, producers: list[Any]) -> None:
        self.node = node
        self.producers = producers
        self.fixed = [self._fixed_frames(p) for p in producers]
        self.client_s = 0.0
        self.retry_s = 0.0
        self.retries = 0
        self.done = [0] * len(producers)

    def _fixed_frames(self, p: Any) -> tuple[bytes, bytes, bytes]:
        tid, pid, epoch = TransactionalId(p.txn_id), ProducerId(p.pid), i16(p.epoch)
        return (self.node.frame(AddPartitionsToTxnRequest(
                    v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
                    v3_and_below_topics=(AddPartitionsToTxnTopic(name=TopicName(TOPIC), partitions=tuple(
                        i32(x) for x in p.partitions)),))),
                self.node.frame(AddOffsetsToTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                                                       group_id=GroupId(p.group))),
                self.node.frame(EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                                              committed=True)))

    def frames(self, i: int, count: int) -> list[tuple[bytes, bytes]]:
        """The next `count` transactions' Produce and TxnOffsetCommit frames of producer `i`."""
        p = self.producers[i]
        out = []
        for n in range(self.done[i], self.done[i] + count):
            commit = TxnOffsetCommitRequest(
                transactional_id=TransactionalId(p.txn_id), group_id=GroupId(p.group), producer_id=ProducerId(p.pid),
                producer_epoch=i16(p.epoch), generation_id=i32(-1), member_id="", group_instance_id=None,
                topics=(TxnOffsetCommitRequestTopic(name=TopicName(INPUT_TOPIC), partitions=(
                    TxnOffsetCommitRequestPartition(partition_index=i32(i % PARTITIONS), committed_offset=i64(n + 1),
                                                    committed_leader_epoch=i32(-1), committed_metadata=""),)),))
            out.append((self.node.frame(_produce_request(p)), self.node.frame(commit)))
        return out

    def _check(self, payload: bytes, api_key: int, version: int) -> int:
        start = time.process_time()
        body = decode_response(api_key, version, payload)[1]
        if api_key == 24:
            codes = {r.partition_error_code.value for t in body.results_by_topic_v3_and_below
                     for r in t.results_by_partition}
        elif api_key == 0:
            codes = {part.error_code.value for r in body.responses for part in r.partition_responses}
        elif api_key == 28:
            codes = {part.error_code.value for t in body.topics for part in t.partitions}
        else:
            codes = {body.error_code.value}
        self.client_s += time.process_time() - start
        if codes - {0, CONCURRENT_TRANSACTIONS}:
            raise RuntimeError(f"api key {api_key} answered {codes}")
        return max(codes)

    async def _one(self, i: int, frames: list[tuple[bytes, bytes]]) -> None:
        add, add_offsets, end = self.fixed[i]
        raw = self.node.raw
        for produce, offsets in frames:
            while True:
                start = time.process_time()
                answer = await raw(add)
                if not self._check(answer, 24, 3):
                    break
                # a retry: answered at once (the coordinator's CONCURRENT_TRANSACTIONS, nothing awaited), so its CPU
                # is this span alone; left out, as over sockets (where a client's round trip lets the markers
                # finish) there are almost none
                self.retry_s += time.process_time() - start
                self.retries += 1
                await asyncio.sleep(0.001)
            self._check(await raw(produce), 0, 8)
            self._check(await raw(add_offsets), 25, 3)
            self._check(await raw(offsets), 28, 3)
            self._check(await raw(end), 26, 3)
            self.done[i] += 1

    async def run(self, transactions: int) -> float:
        """CPU µs per committed transaction over `transactions` (split among the producers), the client's part out."""
        per = max(1, transactions // len(self.producers))
        batches = [self.frames(i, per) for i in range(len(self.producers))]
        self.client_s = self.retry_s = 0.0
        start = time.process_time()
        await asyncio.gather(*(self._one(i, frames) for i, frames in enumerate(batches)))
        return 1e6 * (time.process_time() - start - self.client_s - self.retry_s) / (per * len(self.producers))


class TxnV2Driver(TxnDriver):
    """`bench_clients.txn2`'s transaction (Transactions V2: Produce v12 to both partitions, the leader adding them;
    TxnOffsetCommit v5; EndTxn v5, whose answer gives the epoch the next transaction writes with), in process. Its
    frames are built as it goes (each transaction's epoch and sequences come from the one before), timed as the
    client's, as are the answers' checks; a Produce or TxnOffsetCommit answered CONCURRENT_TRANSACTIONS is sent again
    (counted and timed apart as a retry, as `TxnDriver`'s)."""

    def frames(self, i: int, count: int) -> list[tuple[bytes, bytes]]:
        return [(b"", b"")] * count  # (built in `_one`, from the previous EndTxn's answer)

    async def _one(self, i: int, frames: list[tuple[bytes, bytes]]) -> None:
        p, node = self.producers[i], self.node
        tid, group = TransactionalId(p.txn_id), GroupId(p.group)
        for _ in frames:
            start = time.process_time()
            pid, epoch = ProducerId(p.pid), i16(p.epoch)
            produce = node.frame(_produce_request(p, produce_v12))
            schema = txn_offset_commit_v5.request
            offsets = node.frame(txn_offset_commit_v5.TxnOffsetCommitRequest(
                transactional_id=tid, group_id=group, producer_id=pid, producer_epoch=epoch, generation_id=i32(-1),
                member_id="", group_instance_id=None, topics=(schema.TxnOffsetCommitRequestTopic(
                    name=TopicName(INPUT_TOPIC), partitions=(schema.TxnOffsetCommitRequestPartition(
                        partition_index=i32(i % PARTITIONS), committed_offset=i64(self.done[i] + 1),
                        committed_leader_epoch=i32(-1), committed_metadata=""),)),)))
            end = node.frame(end_txn_v5.EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                                                      committed=True))
            self.client_s += time.process_time() - start
            for frame, api_key, version in ((produce, 0, 12), (offsets, 28, 5)):
                while True:
                    start = time.process_time()
                    if not self._check(await node.raw(frame), api_key, version):
                        break
                    self.retry_s += time.process_time() - start
                    self.retries += 1
                    await asyncio.sleep(0.001)
            answer = await node.raw(end)
            start = time.process_time()
            ended = decode_response(26, 5, answer)[1]
            if ended.error_code.value != 0 or ended.producer_epoch < 0:
                raise RuntimeError(f"EndTxn v5 answered {ended}")
            if (int(ended.producer_id), int(ended.producer_epoch)) != (p.pid, p.epoch):
                p.pid, p.epoch, p.sequences = int(ended.producer_id), int(ended.producer_epoch), [0, 0]
            self.client_s += time.process_time() - start
            self.done[i] += 1


async def _txn_driver(node: Node, producers: int, workload: str = "txn") -> TxnDriver:
    driver = TxnV2Driver if workload == "txn2" else TxnDriver
    return driver(node, [await _init_producer(node, f"bench-{workload}-{i}", i) for i in range(producers)])  # type: ignore[arg-type]


async def main_async(args: argparse.Namespace) -> None:
    from bench_clients import create_topics
    from bench_server import serve_kcoord  # noqa: F401 (same configuration, built here in process)

    from kcoord.impl.cluster import ClusterConfig
    from kcoord.impl.group.config import GroupConfig
    from kcoord.impl.runtime.process import tune_gc
    from kcoord.impl.server.serve import KcoordServer, ServeOptions
    from kcoord.impl.storage.log import Durability

    with tempfile.TemporaryDirectory(prefix="kcoord-profile-dispatch-") as tmp:
        # as `kcoord serve` runs: no record check unless `--check-records` (an older kcoord has no such setting)
        checks = {"check_records": args.check_records} if "check_records" in ClusterConfig.__dataclass_fields__ else {}
        server = KcoordServer(ServeOptions(data_dir=Path(tmp), port=0, cluster=ClusterConfig(
            groups=GroupConfig(initial_rebalance_delay_ms=0), durability=Durability.named(args.durability),
            **checks)))
        await server.start()
        tune_gc()
        try:
            await create_topics(server.bootstrap)
            node = Node(server.listeners[0].dispatcher)
            assert server.shared is not None
            if not server.shared.alone():  # (fsync durability: never alone)
                pass
            elif args.workload in ("txn", "txn2"):  # alone: no other producer's request in progress, as over sockets
                server.shared.alone = lambda: node.busy <= 1
            if args.workload in ("txn", "txn2"):
                await _measure_txn(node, args)
            else:
                await _measure_heartbeats(node, args)
        finally:
            await server.stop()


async def _measure_heartbeats(node: Node, args: argparse.Namespace) -> None:
    setup = _setup_consumer if args.workload == "consumer" else _setup_classic
    frames = [await setup(node, f"bench-{args.workload}-{i}") for i in range(args.groups)]
    run(frames, node.dispatcher, 1000)  # warm up
    figures = [run(frames, node.dispatcher, args.requests) for _ in range(args.runs)]
    _report(args, figures, "dispatched request")
    if args.profile:
        _profile(args, lambda: run(frames, node.dispatcher, args.requests))


async def _measure_txn(node: Node, args: argparse.Namespace) -> None:
    driver = await _txn_driver(node, args.groups, args.workload)
    await driver.run(args.groups * 20)  # warm up
    figures = [await driver.run(args.requests) for _ in range(args.runs)]
    _report(args, figures, f"committed transaction ({driver.retries} retries left out)")
    if args.profile:
        profile = cProfile.Profile()
        profile.enable()
        await driver.run(args.requests)
        profile.disable()
        _print_profile(args, profile)


def _report(args: argparse.Namespace, figures: list[float], what: str) -> None:
    print(f"{args.workload}: {statistics.median(figures):.1f} CPU µs per {what}, best "
          f"{min(figures):.1f} (median of {args.runs}: {', '.join(f'{f:.1f}' for f in figures)})")


def _profile(args: argparse.Namespace, work: Any) -> None:
    profile = cProfile.Profile()
    profile.enable()
    work()
    profile.disable()
    _print_profile(args, profile)


def _print_profile(args: argparse.Namespace, profile: cProfile.Profile) -> None:
    stats = pstats.Stats(profile)
    if args.save:
        stats.dump_stats(args.save)
    stats.sort_stats(args.sort).print_stats(args.top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", choices=("consumer", "classic", "txn", "txn2"), default="consumer")
    parser.add_argument("--durability", choices=("os", "fsync"), default="os")
    parser.add_argument("--sort", default="cumulative", help="pstats sort key of --profile's listing")
    parser.add_argument("--groups", type=int, default=8, help="groups (heartbeats) or producers (txn)")
    parser.add_argument("--requests", type=int, default=20_000, help="requests (heartbeats) or transactions (txn)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--check-records", action="store_true", help="as `kcoord serve --check-records`")
    parser.add_argument("--save", type=Path, help="keep the profile (pstats format) in this file")
    parser.add_argument("--top", type=int, default=30)
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
