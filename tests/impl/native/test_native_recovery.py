"""kcoord-native recovers its state from its data directory (impl/native/server/src/recovery.rs): transactions
committed, the server killed (SIGKILL) and started again on the same folder — InitProducerId bumps the recovered
epoch, a producer's sequences continue and a gap or duplicate is answered as before the crash, a transaction left
open goes on and commits, the whole history checks clean against the spec (`kcoord check-traces --engine python`); a
crash between PrepareCommit and CompleteCommit is completed at the start (markers, then CompleteCommit); a torn tail
is cut and said (file, byte position), damage inside a log refuses the start and changes nothing; and the layout is
kcoord's: kcoord serve started on a copy of kcoord-native's folder answers as kcoord-native does, and kcoord-native on
a copy of kcoord serve's folder as kcoord serve does."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import signal
import struct
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_clients import (  # noqa: E402
    INPUT_TOPIC,
    TOPIC,
    Connection,
    _ms,
    _produce_request,
    _Producer,
    create_topics,
)
from kio.schema.add_offsets_to_txn.v3 import AddOffsetsToTxnRequest  # noqa: E402
from kio.schema.add_partitions_to_txn.v3 import AddPartitionsToTxnRequest  # noqa: E402
from kio.schema.add_partitions_to_txn.v3.request import AddPartitionsToTxnTopic  # noqa: E402
from kio.schema.end_txn import v3 as end_txn_v3  # noqa: E402
from kio.schema.end_txn import v5 as end_txn_v5  # noqa: E402
from kio.schema.init_producer_id.v4 import InitProducerIdRequest  # noqa: E402
from kio.schema.produce import v12 as produce_v12  # noqa: E402
from kio.schema.txn_offset_commit import v3 as txn_offset_commit_v3  # noqa: E402
from kio.schema.txn_offset_commit import v5 as txn_offset_commit_v5  # noqa: E402
from kio.schema.types import GroupId, ProducerId, TopicName, TransactionalId  # noqa: E402
from kio.static.primitive import i16, i32, i64  # noqa: E402

from kcoord.impl.server.codec import decode_response  # noqa: E402

pytestmark = pytest.mark.wire

_HEAD = struct.Struct(">qi")  # a batch's base offset and length
COMPLETE_COMMIT = 4
PREPARE_COMMIT = 2


# ---------------------------------------------------------------------------------------------- the server


@dataclass
class Native:
    process: subprocess.Popen[str]
    bootstrap: str

    def kill(self) -> str:
        """SIGKILL (no clean stop of any kind); what it said on stderr."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)
        assert self.process.stderr is not None
        return self.process.stderr.read()


def start(binary: Path, data_dir: Path, durability: str = "os") -> Native:
    process = subprocess.Popen([str(binary), str(data_dir), durability], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    bootstrap = process.stdout.readline().strip()
    if not bootstrap:
        assert process.stderr is not None
        raise AssertionError(f"kcoord-native exited {process.wait(30)} before listening: {process.stderr.read()}")
    return Native(process, bootstrap)


@contextlib.contextmanager
def serving(binary: Path, data_dir: Path, durability: str = "os") -> Iterator[Native]:
    """`start`, and the server killed on the way out if the block did not (a failed assertion leaves no server)."""
    native = start(binary, data_dir, durability)
    try:
        yield native
    finally:
        if native.process.poll() is None:
            native.process.kill()
            native.process.wait(30)


def refused(binary: Path, data_dir: Path) -> tuple[int, str]:
    """A start expected to be refused: its exit code and stderr."""
    done = subprocess.run([str(binary), str(data_dir), "os"], capture_output=True, text=True, timeout=30, check=False)
    assert not done.stdout, f"it listened: {done.stdout!r}"
    return done.returncode, done.stderr


def check_traces(data_dir: Path) -> str:
    kcoord = Path(sys.executable).parent / "kcoord"
    done = subprocess.run([str(kcoord), "check-traces", str(data_dir), "--engine", "python"],
                          capture_output=True, text=True, timeout=600, check=False, cwd=ROOT)
    assert done.returncode == 0, f"check-traces exit {done.returncode}:\n{done.stdout}\n{done.stderr}"
    assert "0 violations" in done.stdout, done.stdout
    return done.stdout


# ---------------------------------------------------------------------------------------------- a client


class Client:
    """One connection; `ask` sends a kio request body and returns (decoded answer, raw answer without the
    correlation id)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    @classmethod
    async def open(cls, bootstrap: str) -> Client:
        return cls(await Connection.open(bootstrap))

    async def ask(self, body: Any) -> tuple[Any, bytes]:
        raw = await self.conn.raw(self.conn.frame(body))
        return decode_response(body.__api_key__, body.__version__, raw)[1], raw[4:]

    async def init(self, txn_id: str) -> tuple[int, int, int]:
        answer, _ = await self.ask(InitProducerIdRequest(
            transactional_id=TransactionalId(txn_id), transaction_timeout=_ms(60_000), producer_id=ProducerId(-1),
            producer_epoch=i16(-1)))
        return int(answer.error_code.value), int(answer.producer_id), int(answer.producer_epoch)

    async def produce(self, p: _Producer, v2: bool = False) -> list[tuple[int, int]]:
        """(error code, base offset) per partition."""
        answer, _ = await self.ask(_produce_request(p, produce_v12) if v2 else _produce_request(p))
        return [(int(part.error_code.value), int(part.base_offset))
                for r in answer.responses for part in r.partition_responses]

    async def raw_produce(self, p: _Producer, sequences: list[int]) -> bytes:
        """A V1 Produce of `p` at `sequences` (its own left as they were): the raw answer."""
        _, raw = await self.ask(_produce_request(replace(p, sequences=list(sequences))))
        return raw

    async def add(self, p: _Producer) -> set[int]:
        answer, _ = await self.ask(AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=TransactionalId(p.txn_id), v3_and_below_producer_id=ProducerId(p.pid),
            v3_and_below_producer_epoch=i16(p.epoch),
            v3_and_below_topics=(AddPartitionsToTxnTopic(name=TopicName(TOPIC),
                                                         partitions=tuple(i32(x) for x in p.partitions)),)))
        return {int(r.partition_error_code.value) for t in answer.results_by_topic_v3_and_below
                for r in t.results_by_partition}

    async def add_offsets(self, p: _Producer) -> int:
        answer, _ = await self.ask(AddOffsetsToTxnRequest(
            transactional_id=TransactionalId(p.txn_id), producer_id=ProducerId(p.pid), producer_epoch=i16(p.epoch),
            group_id=GroupId(p.group)))
        return int(answer.error_code.value)

    async def offsets(self, p: _Producer, offset: int, v2: bool = False) -> set[int]:
        schema = txn_offset_commit_v5 if v2 else txn_offset_commit_v3
        answer, _ = await self.ask(schema.TxnOffsetCommitRequest(
            transactional_id=TransactionalId(p.txn_id), group_id=GroupId(p.group), producer_id=ProducerId(p.pid),
            producer_epoch=i16(p.epoch), generation_id=i32(-1), member_id="", group_instance_id=None,
            topics=(schema.request.TxnOffsetCommitRequestTopic(name=TopicName(INPUT_TOPIC), partitions=(
                schema.request.TxnOffsetCommitRequestPartition(
                    partition_index=i32(0), committed_offset=i64(offset), committed_leader_epoch=i32(-1),
                    committed_metadata=""),)),)))
        return {int(part.error_code.value) for t in answer.topics for part in t.partitions}

    async def end(self, p: _Producer, v2: bool = False, committed: bool = True) -> int:
        """EndTxn; with `v2` the producer takes the epoch it answers (its sequences start again)."""
        if not v2:
            answer, _ = await self.ask(end_txn_v3.EndTxnRequest(
                transactional_id=TransactionalId(p.txn_id), producer_id=ProducerId(p.pid),
                producer_epoch=i16(p.epoch), committed=committed))
            return int(answer.error_code.value)
        answer, _ = await self.ask(end_txn_v5.EndTxnRequest(
            transactional_id=TransactionalId(p.txn_id), producer_id=ProducerId(p.pid), producer_epoch=i16(p.epoch),
            committed=committed))
        if int(answer.error_code.value) == 0:
            p.pid, p.epoch, p.sequences = int(answer.producer_id), int(answer.producer_epoch), [0, 0]
        return int(answer.error_code.value)

    async def close(self) -> None:
        await self.conn.close()


async def producer(client: Client, txn_id: str, index: int) -> _Producer:
    code, pid, epoch = await client.init(txn_id)
    assert code == 0
    return _Producer(txn_id, f"group-{txn_id}", pid, epoch, (2 * index, 2 * index + 1))


async def v1_transaction(client: Client, p: _Producer, offset: int) -> None:
    assert await client.add(p) == {0}
    assert {code for code, _ in await client.produce(p)} == {0}
    assert await client.add_offsets(p) == 0
    assert await client.offsets(p, offset) == {0}
    assert await client.end(p) == 0


async def v2_transaction(client: Client, p: _Producer, offset: int) -> None:
    assert {code for code, _ in await client.produce(p, v2=True)} == {0}
    assert await client.offsets(p, offset, v2=True) == {0}
    assert await client.end(p, v2=True) == 0


# ---------------------------------------------------------------------------------------------- the logs


def batches(path: Path) -> Iterator[tuple[int, bytes]]:
    """(byte position, bytes) of each whole batch of a segment."""
    data = path.read_bytes()
    at = 0
    while at + 12 <= len(data):
        _, length = _HEAD.unpack_from(data, at)
        if at + 12 + length > len(data):
            return
        yield at, data[at:at + 12 + length]
        at += 12 + length


def segment(data_dir: Path, partition: str) -> Path:
    return data_dir / partition / "00000000000000000000.log"


def txn_partition(txn_id: str) -> str:
    from kcoord.impl.storage.partitioning import partition_for
    return f"__transaction_state-{partition_for(txn_id, 50)}"


def offsets_partition(group: str) -> str:
    from kcoord.impl.storage.partitioning import partition_for
    return f"__consumer_offsets-{partition_for(group, 50)}"


def txn_statuses(data_dir: Path, txn_id: str) -> list[int]:
    """The TransactionStatus of every record of `txn_id` in its transaction-log partition, in order."""
    from kcoord.impl.storage.log import read_partition_dir
    from kcoord.impl.storage.txn_log_schema import decode_key, decode_value
    statuses = []
    for batch in read_partition_dir(data_dir / txn_partition(txn_id)):
        for record in batch.records:
            if decode_key(record.key).transactional_id == txn_id and record.value is not None:
                statuses.append(int(decode_value(record.value).transaction_status))
    return statuses


def is_marker(b: bytes, commit: bool) -> bool:
    attributes = struct.unpack_from(">h", b, 21)[0]
    return bool(attributes & 0x20) and b[61:].find(struct.pack(">hh", 0, 1 if commit else 0)) >= 0


def recovered_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if "recovered" in line]
    assert len(lines) == 1, stderr
    return lines[0]


# ---------------------------------------------------------------------------------------------- (a) a restart


async def _restart_continues(binary: Path, data: Path) -> None:
    with serving(binary, data) as server:
        await create_topics(server.bootstrap)
        c = await Client.open(server.bootstrap)
        v1 = await producer(c, "rec-v1", 0)
        await v1_transaction(c, v1, 1)
        v2 = await producer(c, "rec-v2", 1)
        await v2_transaction(c, v2, 1)
        await v2_transaction(c, v2, 2)
        # V1: a transaction left open with data and a pending offset in it; a gap and a duplicate answered
        assert await c.add(v1) == {0}
        produced = await c.produce(v1)
        assert {code for code, _ in produced} == {0}
        gap = await c.raw_produce(v1, [5, 5])
        duplicate = await c.raw_produce(v1, [1, 1])
        assert await c.add_offsets(v1) == 0
        assert await c.offsets(v1, 2) == {0}
        await c.close()
        server.kill()

    with serving(binary, data) as server:
        c = await Client.open(server.bootstrap)
        assert await c.raw_produce(v1, [5, 5]) == gap
        assert await c.raw_produce(v1, [1, 1]) == duplicate
        # the open transaction goes on: its sequences continue, at the offsets after the last batch
        assert await c.produce(v1) == [(0, base + 1) for _, base in produced]
        assert await c.end(v1) == 0
        await v2_transaction(c, v2, 3)
        # an existing transactional id: its recovered producer id, the epoch bumped; a new one: an id above all seen
        assert await c.init("rec-v2") == (0, v2.pid, v2.epoch + 1)
        code, fresh, epoch = await c.init("rec-new")
        assert (code, epoch) == (0, 0) and fresh > max(v1.pid, v2.pid)
        await c.close()
        line = recovered_line(server.kill())
        assert "2 transactional ids" in line and "2 committed offsets (1 pending)" in line, line

    # once more: the second life's writes recovered too (the pending offset committed by its marker)
    with serving(binary, data) as server:
        c = await Client.open(server.bootstrap)
        assert await c.init("rec-v1") == (0, v1.pid, v1.epoch + 1)
        await c.close()
        line = recovered_line(server.kill())
        assert "3 transactional ids" in line and "2 committed offsets (0 pending)" in line, line


def test_a_restart_after_sigkill_continues_where_it_stopped(native_release: Path, tmp_path: Path) -> None:
    asyncio.run(_restart_continues(native_release / "kcoord-native", tmp_path / "data"))
    check_traces(tmp_path / "data")


# ---------------------------------------------------------------------------------------------- (b) prepared


async def _committed_twice(binary: Path, data: Path, txn_id: str) -> _Producer:
    """A V2 producer's two committed transactions, the server killed after them; the producer as it stands."""
    with serving(binary, data) as server:
        await create_topics(server.bootstrap)
        c = await Client.open(server.bootstrap)
        p = await producer(c, txn_id, 1)
        await v2_transaction(c, p, 1)
        await v2_transaction(c, p, 2)
        await c.close()
        server.kill()
    return p


def _drop_last_batch(path: Path) -> bytes:
    """The last batch of a segment cut off (as if never written); its bytes."""
    position, last = list(batches(path))[-1]
    with path.open("r+b") as f:
        f.truncate(position)
    return last


async def _init_after_start(binary: Path, data: Path, txn_id: str,
                            durability: str = "os") -> tuple[tuple[int, int, int], str]:
    with serving(binary, data, durability) as server:
        c = await Client.open(server.bootstrap)
        answer = await c.init(txn_id)
        await c.close()
        return answer, server.kill()


@pytest.mark.parametrize("durability", ["os", "fsync"])
def test_b_a_crash_between_prepare_commit_and_complete_commit_is_completed_at_the_start(
        native_release: Path, tmp_path: Path, durability: str) -> None:
    binary, data, txn_id = native_release / "kcoord-native", tmp_path / "data", "rec-prepared"
    p = asyncio.run(_committed_twice(binary, data, txn_id))
    # the last transaction as a crash right after its PrepareCommit record leaves it: no markers, no CompleteCommit
    complete = _drop_last_batch(segment(data, txn_partition(txn_id)))
    assert txn_statuses(data, txn_id)[-1] == PREPARE_COMMIT
    touched = [f"{TOPIC}-{n}" for n in p.partitions] + [offsets_partition(p.group)]
    for partition in touched:
        assert is_marker(_drop_last_batch(segment(data, partition)), commit=True)

    answer, stderr = asyncio.run(_init_after_start(binary, data, txn_id, durability))
    assert "(1 prepared transactions completed)" in recovered_line(stderr)
    assert "1 committed offsets (0 pending)" in recovered_line(stderr)
    assert txn_statuses(data, txn_id)[-3:] == [PREPARE_COMMIT, COMPLETE_COMMIT, 0]  # then InitProducerId's Empty
    for partition in touched:
        assert is_marker(list(batches(segment(data, partition)))[-1][1], commit=True), partition
    assert complete  # (the record dropped above: the start wrote its own)
    assert answer == (0, p.pid, p.epoch + 1)  # completed: not CONCURRENT_TRANSACTIONS, the epoch bumped
    check_traces(data)


# ---------------------------------------------------------------------------------------------- (c) torn tails


def test_c_a_torn_tail_is_cut_and_said_and_the_rest_recovered(native_release: Path, tmp_path: Path) -> None:
    binary, data, txn_id = native_release / "kcoord-native", tmp_path / "data", "rec-torn"
    p = asyncio.run(_committed_twice(binary, data, txn_id))
    data_log = segment(data, f"{TOPIC}-{p.partitions[0]}")
    kept = data_log.read_bytes()
    with data_log.open("ab") as f:
        f.write(b"\x00\x00\x00\x00\x00\x00\x00\x09garbage" * 5)  # a base offset, a length, no batch
    txn_log = segment(data, txn_partition(txn_id))
    position, last = list(batches(txn_log))[-1]  # the CompleteCommit record's batch, cut in half
    with txn_log.open("r+b") as f:
        f.truncate(position + len(last) // 2)

    answer, stderr = asyncio.run(_init_after_start(binary, data, txn_id))
    assert f"{data_log}: cut 75 bytes at byte {len(kept)}, from offset " in stderr, stderr
    assert f"{txn_log}: cut {len(last) // 2} bytes at byte {position}, from offset " in stderr, stderr
    assert "a short batch" in stderr
    assert data_log.read_bytes().startswith(kept)
    # the rest recovered: the transaction whose CompleteCommit was cut is PrepareCommit again, and completed
    assert "(1 prepared transactions completed)" in recovered_line(stderr)
    assert answer == (0, p.pid, p.epoch + 1)
    check_traces(data)


def test_c_damage_inside_a_log_refuses_the_start_and_changes_nothing(native_release: Path, tmp_path: Path) -> None:
    binary, data, txn_id = native_release / "kcoord-native", tmp_path / "data", "rec-damaged"
    asyncio.run(_committed_twice(binary, data, txn_id))
    txn_log = segment(data, txn_partition(txn_id))
    damaged = bytearray(txn_log.read_bytes())
    damaged[70] ^= 0xFF  # inside the first batch's records: its CRC no longer matches; whole batches follow
    txn_log.write_bytes(bytes(damaged))
    before = {path: path.read_bytes() for path in data.rglob("*") if path.is_file()}

    code, stderr = refused(binary, data)
    assert code != 0
    assert stderr.count("\n") == 1, stderr
    assert f"{txn_log}: the batch at byte 0 (offset 0) is damaged (CRC-32C" in stderr, stderr
    assert {path: path.read_bytes() for path in data.rglob("*") if path.is_file()} == before


# ---------------------------------------------------------------------------------------------- (d) kcoord's server


async def _after_restart(bootstrap: str, p: _Producer) -> list[Any]:
    """What a server started on the folder answers: InitProducerId for the existing id, then a transaction of the
    producer at the epoch it got (Produce v12 at sequences 0, a sequence gap, TxnOffsetCommit, EndTxn), raw."""
    c = await Client.open(bootstrap)
    try:
        code, pid, epoch = await c.init(p.txn_id)
        p = replace(p, pid=pid, epoch=epoch, sequences=[0, 0])
        answers: list[Any] = [(code, pid, epoch)]
        answers.append((await c.ask(_produce_request(p, produce_v12)))[1])
        answers.append((await c.ask(_produce_request(replace(p, sequences=[5, 5]), produce_v12)))[1])
        answers.append(await c.offsets(p, 3, v2=True))
        answers.append(await c.end(p, v2=True))
        return answers
    finally:
        await c.close()


def test_d_kcoord_serve_on_a_copy_of_the_folder_answers_as_kcoord_native(native_release: Path,
                                                                          tmp_path: Path) -> None:
    from bench_server import start_kcoord
    binary, data, txn_id = native_release / "kcoord-native", tmp_path / "data", "rec-same"
    p = asyncio.run(_committed_twice(binary, data, txn_id))
    copy = tmp_path / "copy"
    shutil.copytree(data, copy)

    with serving(binary, data) as native:
        theirs = asyncio.run(_after_restart(native.bootstrap, p))
    server = start_kcoord(copy, "os")
    try:
        ours = asyncio.run(_after_restart(server.bootstrap, p))
    finally:
        server.stop()
    assert theirs[0] == (0, p.pid, p.epoch + 1)
    assert theirs == ours


def test_d_kcoord_serve_on_a_copy_of_the_folder_hands_out_no_producer_id_kcoord_native_did(
        native_release: Path, tmp_path: Path) -> None:
    """kcoord-native keeps kcoord serve's `producer-id-blocks` file (the next block's first id, written before an id
    of a new block is handed out), so kcoord serve on its folder gives a new transactional id a producer id above
    every one kcoord-native gave: no two producers share one."""
    from bench_server import start_kcoord
    binary, data = native_release / "kcoord-native", tmp_path / "data"
    p = asyncio.run(_committed_twice(binary, data, "rec-ids"))
    magic, version, first_free = struct.unpack_from(">4shq", (data / "producer-id-blocks").read_bytes())
    assert (magic, version) == (b"KPID", 0) and first_free > p.pid
    server = start_kcoord(data, "os")
    try:
        ((code, pid, epoch),) = asyncio.run(_inits(server.bootstrap, ["rec-ids-new"]))
    finally:
        server.stop()
    assert (code, epoch) == (0, 0) and pid >= first_free > p.pid


async def _inits(bootstrap: str, txn_ids: list[str]) -> list[tuple[int, int, int]]:
    c = await Client.open(bootstrap)
    try:
        return [await c.init(txn_id) for txn_id in txn_ids]
    finally:
        await c.close()


def test_d_kcoord_native_on_a_copy_of_a_folder_kcoord_serve_wrote_answers_as_kcoord_serve(
        native_release: Path, tmp_path: Path) -> None:
    """The other way round: kcoord serve's history of same_answers.py (V1 and V2 transactions, commits, aborts, the
    errors of those paths), then InitProducerId for its three transactional ids from both servers, each started on
    its own copy of the folder."""
    from bench_server import start_kcoord

    from benchmarks.compiled_server.same_answers import _script
    data, copy, txn_ids = tmp_path / "kcoord", tmp_path / "copy", ["same-0", "same-1", "same-2"]
    server = start_kcoord(data, "os")
    try:
        asyncio.run(_script(server.bootstrap))
    finally:
        server.stop()
    shutil.copytree(data, copy)
    magic, _, first_free = struct.unpack_from(">4shq", (copy / "producer-id-blocks").read_bytes())
    server = start_kcoord(data, "os")
    try:
        ours = asyncio.run(_inits(server.bootstrap, txn_ids))
    finally:
        server.stop()
    with serving(native_release / "kcoord-native", copy) as native:
        theirs = asyncio.run(_inits(native.bootstrap, [*txn_ids, "brand-new"]))
        assert "3 transactional ids" in recovered_line(native.kill())
    assert theirs[:3] == ours
    assert ours[0][0] == 0 and ours[0][2] > 0  # (an epoch bumped from a recovered one, not a fresh id's 0)
    # a new id: none kcoord serve's allocator may have handed out (its producer-id-blocks file says which), and the
    # file moved on a block before it was handed out
    assert magic == b"KPID" and theirs[3] == (0, first_free, 0)
    assert struct.unpack_from(">4shq", (copy / "producer-id-blocks").read_bytes())[2] == first_free + 1000
