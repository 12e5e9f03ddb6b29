"""The raw-frame Kafka clients of the server benchmarks (`bench_server.py`, `bench_group_commit.py`): the same code
drives `kcoord serve` and Apache Kafka, so the two are compared on one workload.

Each connection has one request in flight (request, wait for the answer, next). Request frames are encoded with kio
once and re-sent (a broker does not require distinct correlation ids); every answer's error codes are checked — a
benchmark that counted error answers would measure nothing. Heartbeat answers are checked by reading the error code at
its fixed offset (Heartbeat v4 and ConsumerGroupHeartbeat v0 both put it right after the throttle time), so the client
stays cheap; every other answer is decoded with kio.

Workloads (each connection on its own group or transactional id):
  * ``classic``: JoinGroup (twice, for the member id) + SyncGroup once, then Heartbeat v4 only;
  * ``consumer``: KIP-848 — ConsumerGroupHeartbeat v0 joining (epoch 0, one subscribed topic), then heartbeats at
    the member's epoch with every optional field null (unchanged);
  * ``txn``: a committed transaction with offsets, as a consume-transform-produce task commits one: AddPartitionsToTxn
    (2 partitions), one transactional Produce (acks=all) of one record to each, AddOffsetsToTxn, TxnOffsetCommit (one
    partition of the input topic), EndTxn(commit). An AddPartitionsToTxn answered CONCURRENT_TRANSACTIONS (the last
    transaction's markers are still being written) is retried after `ADD_PARTITIONS_RETRY_BACKOFF_MS` (20 ms), counted:
    what Kafka's Java client does (`TransactionManager.AddPartitionsToTxnHandler.maybeOverrideRetryBackoffMs`: the
    first AddPartitionsToTxn of a transaction answered CONCURRENT_TRANSACTIONS is re-sent after
    `ADD_PARTITIONS_RETRY_BACKOFF_MS = 20L`, which `Sender.maybeSendAndPollTransactionalRequest` sleeps before the
    retry; read in kafka-clients 4.0.2's bytecode). Until issue 31's ninth session the bench retried after 1 ms, 20
    times as eagerly as Kafka's client: `--add-retry-backoff-ms 1` measures that way again.
  * ``txn2``: the same transaction as Kafka 4.0's Java client sends it once `transaction.version` 2 is finalized
    (Transactions V2, KIP-890): a transactional Produce v12 to the 2 partitions (the partition leader adds them to the
    transaction), TxnOffsetCommit v5 (the group coordinator adds the offsets partition), EndTxn v5 (commit; the
    answer carries the bumped epoch, which the next transaction uses, its sequences starting again at 0): 3
    requests. A Produce or TxnOffsetCommit answered CONCURRENT_TRANSACTIONS (the leader's implicit add met the last
    transaction's unfinished markers) or NOT_ENOUGH_REPLICAS (the leader's add was inconclusive) is re-sent after
    the same 20 ms back-off, counted (`Counts.retried`, by error).
Before any of them, FindCoordinator is asked until it answers (Kafka creates its internal topics on first use).
"""

from __future__ import annotations

import asyncio
import datetime
import struct
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kio.schema.add_offsets_to_txn.v3 import AddOffsetsToTxnRequest
from kio.schema.add_partitions_to_txn.v3 import AddPartitionsToTxnRequest
from kio.schema.add_partitions_to_txn.v3.request import AddPartitionsToTxnTopic
from kio.schema.consumer_group_heartbeat.v0 import ConsumerGroupHeartbeatRequest
from kio.schema.create_topics.v4 import CreateTopicsRequest
from kio.schema.create_topics.v4.request import CreatableTopic
from kio.schema.end_txn import v5 as end_txn_v5
from kio.schema.end_txn.v3 import EndTxnRequest
from kio.schema.find_coordinator.v3 import FindCoordinatorRequest
from kio.schema.heartbeat.v4 import HeartbeatRequest
from kio.schema.init_producer_id.v4 import InitProducerIdRequest
from kio.schema.join_group.v5 import JoinGroupRequest
from kio.schema.join_group.v5.request import JoinGroupRequestProtocol
from kio.schema.produce import v8 as produce_v8
from kio.schema.produce import v12 as produce_v12
from kio.schema.sync_group.v3 import SyncGroupRequest
from kio.schema.sync_group.v3.request import SyncGroupRequestAssignment
from kio.schema.txn_offset_commit import v5 as txn_offset_commit_v5
from kio.schema.txn_offset_commit.v3 import TxnOffsetCommitRequest
from kio.schema.txn_offset_commit.v3.request import TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic
from kio.schema.types import GroupId, ProducerId, TopicName, TransactionalId
from kio.static.primitive import i8, i16, i32, i32Timedelta, i64

from kcoord.impl.server.codec import decode_response, encode_request
from kcoord.impl.server.frames import encode_frame
from kcoord.impl.storage.batch import encode_new_batch

TOPIC = "bench-out"
INPUT_TOPIC = "bench-in"
PARTITIONS = 16
WORKLOADS = ("classic", "consumer", "txn", "txn2")
CONCURRENT_TRANSACTIONS = 51
NOT_ENOUGH_REPLICAS = 19
#: Kafka's Java client: the first AddPartitionsToTxn of a transaction answered CONCURRENT_TRANSACTIONS is retried after
#: this long (`TransactionManager.ADD_PARTITIONS_RETRY_BACKOFF_MS`, kafka-clients 4.0.2)
ADD_PARTITIONS_RETRY_BACKOFF_MS = 20
MEMBER_ID_REQUIRED = 79
RETRIABLE_SETUP = (14, 15, 16)  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
_SIZE = struct.Struct(">i")
_ERROR_AT = struct.Struct(">h")


class BenchError(RuntimeError):
    """The broker answered a benchmark request with an error it should not have."""


def _ms(ms: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=ms))


def _check(error_code: Any, what: str, allowed: tuple[int, ...] = ()) -> int:
    value = int(getattr(error_code, "value", error_code))
    if value != 0 and value not in allowed:
        raise BenchError(f"{what} answered error {value} ({getattr(error_code, 'name', '?')})")
    return value


class Connection:
    """One client connection: one request in flight."""

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
        """An encoded request frame; it may be sent many times."""
        self.correlation_id += 1
        frame: bytes = encode_frame(encode_request(body, correlation_id=self.correlation_id, client_id="kcoord-bench"))
        return frame

    async def raw(self, frame: bytes) -> bytes:
        self.writer.write(frame)
        (size,) = _SIZE.unpack(await self.reader.readexactly(4))
        self.requests += 1
        return await self.reader.readexactly(size)

    async def send(self, frame: bytes, api_key: int, version: int) -> Any:
        return decode_response(api_key, version, await self.raw(frame))[1]

    async def request(self, body: Any) -> Any:
        return await self.send(self.frame(body), body.__api_key__, body.__version__)

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()


async def find_coordinator(conn: Connection, key: str, key_type: int) -> None:
    """Ask until the coordinator of `key` is known (Kafka makes its internal topic on the first ask)."""
    for _ in range(600):
        answer = await conn.request(FindCoordinatorRequest(key=key, key_type=i8(key_type)))
        if _check(answer.error_code, f"FindCoordinator {key}", RETRIABLE_SETUP) == 0:
            return
        await asyncio.sleep(0.1)
    raise BenchError(f"no coordinator for {key} after 60 s")


async def create_topics(bootstrap: str) -> None:
    """The benchmark topics (an existing one is fine: a server may be measured more than once)."""
    conn = await Connection.open(bootstrap)
    try:
        answer = await conn.request(CreateTopicsRequest(
            topics=tuple(CreatableTopic(name=TopicName(name), num_partitions=i32(PARTITIONS), replication_factor=i16(1),
                                        assignments=(), configs=()) for name in (TOPIC, INPUT_TOPIC)),
            timeout=_ms(30_000), validate_only=False))
        for topic in answer.topics:
            _check(topic.error_code, "CreateTopics", (36,))  # TOPIC_ALREADY_EXISTS
    finally:
        await conn.close()


class Start:
    """Every connection sets up first; the clock starts when all have."""

    def __init__(self, connections: int, seconds: float, barrier: Any = None,
                 cpu: Callable[[], float] = lambda: 0.0) -> None:
        """`barrier`: a `multiprocessing.Barrier` shared with the other client processes of the run; `cpu`: the
        server's CPU seconds so far, read when the clock starts and when it stops."""
        self.barrier = barrier
        self.cpu = cpu
        self.cpu_start = 0.0
        self.client_cpu_start = 0.0
        self.waiting = connections
        self.seconds = seconds
        self.go = asyncio.Event()
        self.started = 0.0
        self.deadline = 0.0

    async def ready(self, conn: Connection) -> float:
        conn.requests = 0  # setup requests are not counted
        self.waiting -= 1
        if self.waiting == 0:
            if self.barrier is not None:
                await asyncio.get_running_loop().run_in_executor(None, self.barrier.wait)
            self.cpu_start = self.cpu()
            self.client_cpu_start = time.process_time()
            self.started = time.perf_counter()
            self.deadline = self.started + self.seconds
            self.go.set()
        await self.go.wait()
        return self.deadline


@dataclass
class Counts:
    done: int = 0
    retries: int = 0
    requests: int = 0
    elapsed_s: float = 0.0
    server_cpu_s: float = 0.0  # the server's CPU time from this process's start to its last answer
    client_cpu_s: float = 0.0  # this client process's own CPU time (all its threads) over the same span
    errors: list[str] = field(default_factory=list)
    retried: dict[str, int] = field(default_factory=dict)  # txn2: retries by "API:error code"
    epoch_bumps: int = 0  # txn2: EndTxn answers carrying the producer's epoch + 1 (Transactions V2)


# ---------------------------------------------------------------------------------------------- heartbeats


async def _join_alone(conn: Connection, group: str) -> tuple[str, int]:
    """Join `group` as its only member and sync; (member id, generation)."""
    await find_coordinator(conn, group, 0)
    member_id = ""
    for _ in range(100):
        join = await conn.request(JoinGroupRequest(
            group_id=GroupId(group), session_timeout=_ms(45_000), rebalance_timeout=_ms(60_000), member_id=member_id,
            group_instance_id=None, protocol_type="consumer",
            protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),)))
        member_id = join.member_id
        code = _check(join.error_code, "JoinGroup", (MEMBER_ID_REQUIRED, *RETRIABLE_SETUP))
        if code == 0:
            break
        if code in RETRIABLE_SETUP:  # Kafka: the offsets topic's partition is still being loaded
            await asyncio.sleep(0.1)
    else:
        raise BenchError("JoinGroup kept asking for a member id")
    sync = await conn.request(SyncGroupRequest(
        group_id=GroupId(group), generation_id=join.generation_id, member_id=member_id, group_instance_id=None,
        assignments=(SyncGroupRequestAssignment(member_id=member_id, assignment=b""),)))
    _check(sync.error_code, "SyncGroup")
    return member_id, int(join.generation_id)


def _heartbeat_error(payload: bytes) -> int:
    # response header v1: correlation id (4) + empty tagged fields (1); then throttle_time_ms (4), error_code (2)
    (error,) = _ERROR_AT.unpack_from(payload, 9)
    return int(error)


async def classic(conn: Connection, name: str, start: Start) -> int:
    member_id, generation = await _join_alone(conn, name)
    frame = conn.frame(HeartbeatRequest(group_id=GroupId(name), generation_id=i32(generation), member_id=member_id,
                                        group_instance_id=None))
    deadline = await start.ready(conn)
    done = 0
    while time.perf_counter() < deadline:
        _check(_heartbeat_error(await conn.raw(frame)), "Heartbeat")
        done += 1
    return done


async def consumer(conn: Connection, name: str, start: Start) -> int:
    await find_coordinator(conn, name, 0)
    joined = None
    for _ in range(50):
        joined = await conn.request(ConsumerGroupHeartbeatRequest(
            group_id=GroupId(name), member_id="", member_epoch=i32(0), rebalance_timeout=_ms(60_000),
            subscribed_topic_names=(TopicName(TOPIC),), topic_partitions=()))
        if _check(joined.error_code, "ConsumerGroupHeartbeat (join)", RETRIABLE_SETUP) == 0:
            break
        await asyncio.sleep(0.1)
    assert joined is not None and joined.member_id
    frame = conn.frame(ConsumerGroupHeartbeatRequest(group_id=GroupId(name), member_id=joined.member_id,
                                                     member_epoch=joined.member_epoch, topic_partitions=None))
    deadline = await start.ready(conn)
    done = 0
    while time.perf_counter() < deadline:
        _check(_heartbeat_error(await conn.raw(frame)), "ConsumerGroupHeartbeat")
        done += 1
    return done


# ---------------------------------------------------------------------------------------------- transactions


@dataclass
class _Producer:
    txn_id: str
    group: str
    pid: int
    epoch: int
    partitions: tuple[int, int]
    sequences: list[int] = field(default_factory=lambda: [0, 0])


async def _init_producer(conn: Connection, name: str, index: int) -> _Producer:
    await find_coordinator(conn, name, 1)
    await find_coordinator(conn, name, 0)  # the group whose offsets the transactions commit
    for _ in range(100):
        init = await conn.request(InitProducerIdRequest(transactional_id=TransactionalId(name),
                                                        transaction_timeout=_ms(60_000), producer_id=ProducerId(-1),
                                                        producer_epoch=i16(-1)))
        if _check(init.error_code, "InitProducerId", (*RETRIABLE_SETUP, CONCURRENT_TRANSACTIONS)) == 0:
            break
        await asyncio.sleep(0.1)
    partitions = ((2 * index) % PARTITIONS, (2 * index + 1) % PARTITIONS)
    return _Producer(name, name, int(init.producer_id), int(init.producer_epoch), partitions)


def _produce_request(p: _Producer, schema: Any = produce_v8) -> Any:
    """A transactional Produce of one record to each of `p`'s partitions (its sequences taken), in `schema`'s
    version: v8 (Transactions V1, the partitions added beforehand) or v12 (V2: the leader adds them)."""
    now = int(time.time() * 1000)
    data = []
    for i, partition in enumerate(p.partitions):
        batch = encode_new_batch([(None, b"bench")], base_offset=0, timestamp_ms=now, producer_id=p.pid,
                                 producer_epoch=p.epoch, base_sequence=p.sequences[i], transactional=True)
        p.sequences[i] += 1
        data.append(schema.request.PartitionProduceData(index=i32(partition), records=batch))
    return schema.ProduceRequest(
        transactional_id=TransactionalId(p.txn_id), acks=i16(-1), timeout=_ms(30_000),
        topic_data=(schema.request.TopicProduceData(name=TopicName(TOPIC), partition_data=tuple(data)),))


async def txn(conn: Connection, name: str, start: Start, counts: Counts, index: int,
              add_retry_backoff_ms: float = ADD_PARTITIONS_RETRY_BACKOFF_MS) -> int:
    p = await _init_producer(conn, name, index)
    backoff_s = add_retry_backoff_ms / 1000
    tid, pid, epoch = TransactionalId(p.txn_id), ProducerId(p.pid), i16(p.epoch)
    add = conn.frame(AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=(AddPartitionsToTxnTopic(name=TopicName(TOPIC),
                                                     partitions=tuple(i32(x) for x in p.partitions)),)))
    add_offsets = conn.frame(AddOffsetsToTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                                                    group_id=GroupId(p.group)))
    commit = conn.frame(EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=True))
    done = 0
    deadline = await start.ready(conn)
    while time.perf_counter() < deadline:
        while True:
            answer = await conn.send(add, 24, 3)
            codes = {_check(r.partition_error_code, "AddPartitionsToTxn", (CONCURRENT_TRANSACTIONS,))
                     for t in answer.results_by_topic_v3_and_below for r in t.results_by_partition}
            if codes == {0}:
                break
            counts.retries += 1
            await asyncio.sleep(backoff_s)
        produced = await conn.request(_produce_request(p))
        for response in produced.responses:
            for part in response.partition_responses:
                _check(part.error_code, "Produce")
        _check((await conn.send(add_offsets, 25, 3)).error_code, "AddOffsetsToTxn")
        while True:  # (Kafka may still be loading the group's offsets partition: retried, as its clients do)
            committed = await conn.request(TxnOffsetCommitRequest(
                transactional_id=tid, group_id=GroupId(p.group), producer_id=pid, producer_epoch=epoch,
                generation_id=i32(-1), member_id="", group_instance_id=None,
                topics=(TxnOffsetCommitRequestTopic(name=TopicName(INPUT_TOPIC), partitions=(
                    TxnOffsetCommitRequestPartition(partition_index=i32(index % PARTITIONS),
                                                    committed_offset=i64(done + 1), committed_leader_epoch=i32(-1),
                                                    committed_metadata=""),)),)))
            codes = {_check(part.error_code, "TxnOffsetCommit", RETRIABLE_SETUP)
                     for topic in committed.topics for part in topic.partitions}
            if codes == {0}:
                break
            counts.retries += 1
            await asyncio.sleep(0.01)
        _check((await conn.send(commit, 26, 3)).error_code, "EndTxn")
        done += 1
    return done


def _retry(counts: Counts, api: str, code: int) -> None:
    counts.retries += 1
    key = f"{api}:{code}"
    counts.retried[key] = counts.retried.get(key, 0) + 1


async def txn2(conn: Connection, name: str, start: Start, counts: Counts, index: int,
               retry_backoff_ms: float = ADD_PARTITIONS_RETRY_BACKOFF_MS) -> int:
    """Transactions V2: Produce v12, TxnOffsetCommit v5, EndTxn v5 per transaction (see the module's docstring)."""
    p = await _init_producer(conn, name, index)
    backoff_s = retry_backoff_ms / 1000
    tid, group = TransactionalId(p.txn_id), GroupId(p.group)
    retriable = (CONCURRENT_TRANSACTIONS, NOT_ENOUGH_REPLICAS)
    done = 0
    deadline = await start.ready(conn)
    while time.perf_counter() < deadline:
        # (a retry re-sends the same batches: their sequences were not taken)
        produce = conn.frame(_produce_request(p, produce_v12))
        while True:
            answer = await conn.send(produce, 0, 12)
            codes = {_check(part.error_code, "Produce v12", retriable)
                     for response in answer.responses for part in response.partition_responses}
            if codes == {0}:
                break
            _retry(counts, "Produce", max(codes))
            await asyncio.sleep(backoff_s)
        pid, epoch = ProducerId(p.pid), i16(p.epoch)
        offsets = conn.frame(txn_offset_commit_v5.TxnOffsetCommitRequest(
            transactional_id=tid, group_id=group, producer_id=pid, producer_epoch=epoch, generation_id=i32(-1),
            member_id="", group_instance_id=None,
            topics=(txn_offset_commit_v5.request.TxnOffsetCommitRequestTopic(name=TopicName(INPUT_TOPIC), partitions=(
                txn_offset_commit_v5.request.TxnOffsetCommitRequestPartition(
                    partition_index=i32(index % PARTITIONS), committed_offset=i64(done + 1),
                    committed_leader_epoch=i32(-1), committed_metadata=""),)),)))
        while True:
            committed = await conn.send(offsets, 28, 5)
            codes = {_check(part.error_code, "TxnOffsetCommit v5", (*retriable, *RETRIABLE_SETUP))
                     for topic in committed.topics for part in topic.partitions}
            if codes == {0}:
                break
            _retry(counts, "TxnOffsetCommit", max(codes))
            await asyncio.sleep(backoff_s)
        ended = await conn.request(end_txn_v5.EndTxnRequest(transactional_id=tid, producer_id=pid,
                                                            producer_epoch=epoch, committed=True))
        _check(ended.error_code, "EndTxn v5")
        new_pid, new_epoch = int(ended.producer_id), int(ended.producer_epoch)
        if new_pid < 0 or new_epoch < 0:
            raise BenchError(f"EndTxn v5 answered producer {new_pid} epoch {new_epoch}: no Transactions V2 epoch")
        counts.epoch_bumps += new_pid == p.pid and new_epoch == p.epoch + 1
        if (new_pid, new_epoch) != (p.pid, p.epoch):  # a new epoch: each partition's sequences start again
            p.pid, p.epoch, p.sequences = new_pid, new_epoch, [0, 0]
        done += 1
    return done


# ---------------------------------------------------------------------------------------------- driver


async def measure(bootstrap: str, workload: str, connections: int, tag: str, seconds: float, *,
                  first_index: int = 0, barrier: Any = None, cpu: Callable[[], float] = lambda: 0.0,
                  add_retry_backoff_ms: float = ADD_PARTITIONS_RETRY_BACKOFF_MS) -> Counts:
    """`connections` connections running `workload` for `seconds` (after every one has set up); names carry `tag`,
    so repeated runs use fresh groups and transactional ids. `first_index`: this process's first connection number
    (several client processes split the connections of one run); `barrier`: see `Start`; `add_retry_backoff_ms`:
    the txn workload's wait before re-sending an AddPartitionsToTxn answered CONCURRENT_TRANSACTIONS."""
    conns = [await Connection.open(bootstrap) for _ in range(connections)]
    counts = Counts()
    try:
        start = Start(connections, seconds, barrier, cpu)
        names = [f"bench-{workload}-{tag}-{first_index + i}-{uuid.uuid4().hex[:6]}" for i in range(connections)]
        if workload == "classic":
            jobs = [classic(c, names[i], start) for i, c in enumerate(conns)]
        elif workload == "consumer":
            jobs = [consumer(c, names[i], start) for i, c in enumerate(conns)]
        elif workload == "txn":
            jobs = [txn(c, names[i], start, counts, first_index + i, add_retry_backoff_ms)
                    for i, c in enumerate(conns)]
        elif workload == "txn2":
            jobs = [txn2(c, names[i], start, counts, first_index + i, add_retry_backoff_ms)
                    for i, c in enumerate(conns)]
        else:
            raise ValueError(f"unknown workload {workload!r}")
        counts.done = sum(await asyncio.gather(*jobs))
        counts.elapsed_s = time.perf_counter() - start.started
        counts.server_cpu_s = cpu() - start.cpu_start
        counts.client_cpu_s = time.process_time() - start.client_cpu_start
        counts.requests = sum(c.requests for c in conns)
        return counts
    finally:
        for c in conns:
            await c.close()
