"""`kcoord serve` throughput: heartbeats/s and full transactions/s, from 1 connection and from 8 connections.

Run: ``.venv/bin/python benchmarks/bench_server.py [--quick] [--seconds S] [--runs N] [--durability fsync|group|both]
[--json PATH]``.

The server (`KcoordServer`, one node, Kafka 4.0's defaults except `group.initial.rebalance.delay.ms=0`) runs once
per durability mode of `kcoord serve` — `fsync` (the default: every write fsynced before it is answered) and `group`
(group commit: writes of up to 5 ms share one fsync, still before any answer) — in its own process, so client and
server do not share a GIL. The client is asyncio in this process and speaks raw frames built with kio, one request
in flight per connection (request, wait for the answer, next), and decodes every answer to check its error code —
a benchmark that counted error answers would measure nothing. Two workloads:

  * heartbeats: each connection is the one member of its own classic group (JoinGroup twice for the member id,
    SyncGroup, then only Heartbeat v4 at the same generation);
  * transactions: each connection is a transactional producer (InitProducerId once), then per transaction
    AddPartitionsToTxn + a transactional Produce of one record (acks=all) + EndTxn(commit). An AddPartitionsToTxn
    that finds the previous transaction still writing its markers is answered CONCURRENT_TRANSACTIONS, and the
    client retries as Kafka's clients do (without their 20 ms backoff); the retries are counted and reported.

Each configuration runs `--runs` times for `--seconds` each; the table shows the median (and min/max). Numbers depend
on machine load, so the host's load average is printed with them.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import multiprocessing
import multiprocessing.synchronize
import os
import statistics
import struct
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kio.schema.add_partitions_to_txn.v1 import AddPartitionsToTxnRequest
from kio.schema.add_partitions_to_txn.v1.request import AddPartitionsToTxnTopic
from kio.schema.create_topics.v4 import CreateTopicsRequest
from kio.schema.create_topics.v4.request import CreatableTopic
from kio.schema.end_txn.v1 import EndTxnRequest
from kio.schema.heartbeat.v4 import HeartbeatRequest
from kio.schema.init_producer_id.v1 import InitProducerIdRequest
from kio.schema.join_group.v5 import JoinGroupRequest
from kio.schema.join_group.v5.request import JoinGroupRequestProtocol
from kio.schema.produce.v8 import ProduceRequest
from kio.schema.produce.v8.request import PartitionProduceData, TopicProduceData
from kio.schema.sync_group.v3 import SyncGroupRequest
from kio.schema.sync_group.v3.request import SyncGroupRequestAssignment
from kio.schema.types import GroupId, ProducerId, TopicName, TransactionalId
from kio.static.primitive import i16, i32, i32Timedelta

from kcoord.impl.cluster import ClusterConfig
from kcoord.impl.group.config import GroupConfig
from kcoord.impl.server.codec import decode_response, encode_request
from kcoord.impl.server.frames import encode_frame
from kcoord.impl.storage.batch import encode_new_batch
from kcoord.impl.storage.log import Durability

TOPIC = "bench-out"
PARTITIONS = 8
CONCURRENT_TRANSACTIONS = 51
MEMBER_ID_REQUIRED = 79
GROUP_COMMIT_MS = 5
DURABILITY = ("fsync", "group")


def _serve(data_dir: str, durability: str, address_queue: multiprocessing.Queue[str],
           stop: multiprocessing.synchronize.Event) -> None:
    from kcoord.impl.server.serve import KcoordServer, ServeOptions

    async def main() -> None:
        # `kcoord serve --durability group` uses the same group commit (5 ms, 1 MiB by default)
        mode = None if durability == "fsync" else Durability.group(GROUP_COMMIT_MS, 1 << 20)
        options = ServeOptions(data_dir=Path(data_dir), port=0,
                               cluster=ClusterConfig(groups=GroupConfig(initial_rebalance_delay_ms=0),
                                                     durability=mode))
        server = KcoordServer(options)
        await server.start()
        address_queue.put(server.bootstrap)
        while not stop.is_set():
            await asyncio.sleep(0.1)
        await server.stop()

    asyncio.run(main())


def _ms(seconds: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(seconds=seconds))


class BenchError(RuntimeError):
    """The server answered a benchmark request with an error it should not have."""


class Connection:
    """One client connection: one request in flight, every answer decoded."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.correlation_id = 0
        self.requests = 0

    @classmethod
    async def open(cls, bootstrap: str) -> Connection:
        host, _, port = bootstrap.split(",")[0].rpartition(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        return cls(reader, writer)

    def frame(self, body: Any) -> bytes:
        """An encoded request frame; it may be sent many times (the server does not require distinct ids)."""
        self.correlation_id += 1
        frame: bytes = encode_frame(encode_request(body, correlation_id=self.correlation_id, client_id="kcoord-bench"))
        return frame

    async def send(self, frame: bytes, api_key: int, version: int) -> Any:
        self.writer.write(frame)
        (size,) = struct.unpack(">i", await self.reader.readexactly(4))
        payload = await self.reader.readexactly(size)
        self.requests += 1
        return decode_response(api_key, version, payload)[1]

    async def request(self, body: Any) -> Any:
        return await self.send(self.frame(body), body.__api_key__, body.__version__)

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()


def _check(error_code: Any, what: str, allowed: tuple[int, ...] = ()) -> int:
    value = int(error_code.value)
    if value != 0 and value not in allowed:
        raise BenchError(f"{what} answered {error_code.name} ({value})")
    return value


# ---------------------------------------------------------------------------------------------- heartbeats


async def _join_alone(conn: Connection, group: str) -> tuple[str, int]:
    """Join `group` as its only member and sync; (member id, generation)."""
    member_id = ""
    for _ in range(3):
        join = await conn.request(JoinGroupRequest(
            group_id=GroupId(group), session_timeout=_ms(seconds=45),
            rebalance_timeout=_ms(seconds=60), member_id=member_id, group_instance_id=None,
            protocol_type="consumer", protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),)))
        member_id = join.member_id
        if _check(join.error_code, "JoinGroup", (MEMBER_ID_REQUIRED,)) == 0:
            break
    else:
        raise BenchError("JoinGroup kept asking for a member id")
    sync = await conn.request(SyncGroupRequest(
        group_id=GroupId(group), generation_id=join.generation_id, member_id=member_id, group_instance_id=None,
        assignments=(SyncGroupRequestAssignment(member_id=member_id, assignment=b""),)))
    _check(sync.error_code, "SyncGroup")
    return member_id, int(join.generation_id)


async def _heartbeats(conn: Connection, index: int, run: int, start: Start) -> int:
    member_id, generation = await _join_alone(conn, f"bench-hb-{run}-{index}")
    body = HeartbeatRequest(group_id=GroupId(f"bench-hb-{run}-{index}"), generation_id=i32(generation),
                            member_id=member_id, group_instance_id=None)
    frame = conn.frame(body)
    deadline = await start.ready(conn)
    done = 0
    while time.perf_counter() < deadline:
        _check((await conn.send(frame, 12, 4)).error_code, "Heartbeat")
        done += 1
    return done


# ---------------------------------------------------------------------------------------------- transactions


class Start:
    """Every connection sets up (joins its group, initialises its producer) first; the clock starts when all have."""

    def __init__(self, connections: int, seconds: float) -> None:
        self.waiting = connections
        self.seconds = seconds
        self.go = asyncio.Event()
        self.started = 0.0
        self.deadline = 0.0

    async def ready(self, conn: Connection) -> float:
        conn.requests = 0  # setup requests are not counted
        self.waiting -= 1
        if self.waiting == 0:
            self.started = time.perf_counter()
            self.deadline = self.started + self.seconds
            self.go.set()
        await self.go.wait()
        return self.deadline


@dataclass
class TxnCounts:
    transactions: int = 0
    retries: int = 0


async def _transactions(conn: Connection, index: int, run: int, start: Start, counts: TxnCounts) -> int:
    txn_id = f"bench-txn-{run}-{index}"
    init = await conn.request(InitProducerIdRequest(transactional_id=TransactionalId(txn_id),
                                                    transaction_timeout=_ms(seconds=60)))
    _check(init.error_code, "InitProducerId")
    pid, epoch = int(init.producer_id), int(init.producer_epoch)
    partition = index % PARTITIONS
    add = conn.frame(AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=TransactionalId(txn_id), v3_and_below_producer_id=ProducerId(pid),
        v3_and_below_producer_epoch=i16(epoch),
        v3_and_below_topics=(AddPartitionsToTxnTopic(name=TopicName(TOPIC), partitions=(i32(partition),)),)))
    commit = conn.frame(EndTxnRequest(transactional_id=TransactionalId(txn_id), producer_id=ProducerId(pid),
                                      producer_epoch=i16(epoch), committed=True))
    sequence = 0
    done = 0
    deadline = await start.ready(conn)
    while time.perf_counter() < deadline:
        while True:
            answer = await conn.send(add, 24, 1)
            result = answer.results_by_topic_v3_and_below[0].results_by_partition[0]
            code = _check(result.partition_error_code, "AddPartitionsToTxn", (CONCURRENT_TRANSACTIONS,))
            if code == 0:
                break
            counts.retries += 1
        batch = encode_new_batch([(None, b"bench")], base_offset=0, timestamp_ms=int(time.time() * 1000),
                                 producer_id=pid, producer_epoch=epoch, base_sequence=sequence, transactional=True)
        produced = await conn.request(ProduceRequest(
            transactional_id=TransactionalId(txn_id), acks=i16(-1), timeout=_ms(seconds=30),
            topic_data=(TopicProduceData(name=TopicName(TOPIC), partition_data=(
                PartitionProduceData(index=i32(partition), records=batch),)),)))
        _check(produced.responses[0].partition_responses[0].error_code, "Produce")
        sequence += 1
        _check((await conn.send(commit, 26, 1)).error_code, "EndTxn")
        done += 1
    counts.transactions += done
    return done


# ---------------------------------------------------------------------------------------------- driver


@dataclass(frozen=True)
class Rate:
    per_s: float  # heartbeats or transactions per second
    requests_per_s: float
    retries: int


async def _measure(bootstrap: str, workload: str, connections: int, run: int, seconds: float) -> Rate:
    conns = [await Connection.open(bootstrap) for _ in range(connections)]
    try:
        counts = TxnCounts()
        start = Start(connections, seconds)
        if workload == "heartbeats":
            jobs = [_heartbeats(c, i, run, start) for i, c in enumerate(conns)]
        else:
            jobs = [_transactions(c, i, run, start, counts) for i, c in enumerate(conns)]
        done = sum(await asyncio.gather(*jobs))
        elapsed = time.perf_counter() - start.started
        return Rate(done / elapsed, sum(c.requests for c in conns) / elapsed, counts.retries)
    finally:
        for c in conns:
            await c.close()


async def _create_topic(bootstrap: str) -> None:
    conn = await Connection.open(bootstrap)
    try:
        answer = await conn.request(CreateTopicsRequest(
            topics=(CreatableTopic(name=TopicName(TOPIC), num_partitions=i32(PARTITIONS), replication_factor=i16(1),
                                   assignments=(), configs=()),),
            timeout=_ms(seconds=30), validate_only=False))
        _check(answer.topics[0].error_code, "CreateTopics")
    finally:
        await conn.close()


Results = dict[tuple[str, str, int], list[Rate]]  # (durability, workload, connections) -> one Rate per run


def _table(results: Results, runs: int, seconds: float) -> str:
    lines = [f"| durability | workload | connections | per second (median of {runs} x {seconds:g} s) | min | max | "
             "requests/s (median) | CONCURRENT_TRANSACTIONS retries (median) |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for (durability, workload, connections), rates in results.items():
        per_s = [r.per_s for r in rates]
        retries = f"{statistics.median(r.retries for r in rates):,.0f}" if workload == "transactions" else "-"
        lines.append(f"| {durability} | {workload} | {connections} | {statistics.median(per_s):,.0f} | "
                     f"{min(per_s):,.0f} | {max(per_s):,.0f} | "
                     f"{statistics.median(r.requests_per_s for r in rates):,.0f} | {retries} |")
    return "\n".join(lines)


def _bench_server(durability: str, runs: int, seconds: float, results: Results) -> None:
    """Start a server with `durability` in its own process and measure every workload against it."""
    with tempfile.TemporaryDirectory(prefix="kcoord-bench-server-") as data_dir:
        address_queue: multiprocessing.Queue[str] = multiprocessing.Queue()
        stop = multiprocessing.Event()
        server = multiprocessing.Process(target=_serve, args=(data_dir, durability, address_queue, stop),
                                         daemon=True)
        server.start()
        try:
            bootstrap = address_queue.get(timeout=60)
            asyncio.run(_create_topic(bootstrap))
            run = 0
            for workload in ("heartbeats", "transactions"):
                for connections in (1, 8):
                    rates = []
                    for _ in range(runs):
                        run += 1
                        rates.append(asyncio.run(_measure(bootstrap, workload, connections, run, seconds)))
                    results[(durability, workload, connections)] = rates
                    median = statistics.median(r.per_s for r in rates)
                    print(f"{durability}: {workload} x {connections}: {median:,.0f}/s", file=sys.stderr, flush=True)
        finally:
            stop.set()
            server.join(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="1 run of 1 s per configuration (a smoke test)")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--durability", choices=(*DURABILITY, "both"), default="both")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    runs, seconds = (1, 1.0) if args.quick else (args.runs, args.seconds)

    results: Results = {}
    for durability in DURABILITY if args.durability == "both" else (args.durability,):
        _bench_server(durability, runs, seconds, results)
    print(_table(results, runs, seconds))
    load = os.getloadavg()
    print(f"\nload average {load[0]:.2f} on {os.cpu_count()} cpus; one kcoord node; durability fsync: every write "
          f"fsynced before it is answered, group: group commit (at most {GROUP_COMMIT_MS} ms), still before answering")
    if args.json:
        args.json.write_text(json.dumps({"/".join(map(str, k)): [r.__dict__ for r in rs] for k, rs in results.items()}
                                        | {"loadavg_1m": load[0]}, indent=1) + "\n")


if __name__ == "__main__":
    main()
