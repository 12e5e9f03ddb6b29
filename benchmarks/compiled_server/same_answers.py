"""The compiled server (impl/native/server) answers as `kcoord serve` does: the same requests (set-up; Transactions V2
transactions of two producers and V1 transactions of a third, as bench_clients.py's txn2 and txn workloads send
them; and the errors a client can provoke on those paths) sent to both, every answer compared byte for byte —
kcoord's are encoded by kio, so this holds the compiled server's codec to kio's — but FindCoordinator's, compared
field by field (the port differs). Exit 1 on the first difference, saying where.

Run by `benchmarks/compiled_server.sh` (``python benchmarks/compiled_server/same_answers.py
build/native/release/kcoord-native``) and by tests/impl/native/test_same_answers.py (`compare`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_clients import INPUT_TOPIC, TOPIC, Connection, _ms, _produce_request, _Producer, create_topics
from kio.schema.add_offsets_to_txn.v3 import AddOffsetsToTxnRequest
from kio.schema.add_partitions_to_txn.v3 import AddPartitionsToTxnRequest
from kio.schema.add_partitions_to_txn.v3.request import AddPartitionsToTxnTopic
from kio.schema.end_txn import v3 as end_txn_v3
from kio.schema.end_txn import v5 as end_txn_v5
from kio.schema.find_coordinator.v3 import FindCoordinatorRequest
from kio.schema.init_producer_id.v4 import InitProducerIdRequest
from kio.schema.produce import v12 as produce_v12
from kio.schema.txn_offset_commit import v3 as txn_offset_commit_v3
from kio.schema.txn_offset_commit import v5 as txn_offset_commit_v5
from kio.schema.types import GroupId, ProducerId, TopicName, TransactionalId
from kio.static.primitive import i8, i16, i32, i64

from kcoord.impl.server.codec import decode_response

#: fields whose values differ by construction (where the server listens), or that only Kafka's newer tagged fields
#: carry
IGNORED = {"host", "port", "node_id", "node_endpoints", "current_leader"}


def _plain(value: Any) -> Any:
    """An answer as nested tuples and dicts of plain values, the ignored fields left out."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value) if f.name not in IGNORED}
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    return getattr(value, "value", value)


async def _script(bootstrap: str) -> list[tuple[str, Any]]:
    """The requests, in order, and each one's answer."""
    await create_topics(bootstrap)
    conn = await Connection.open(bootstrap)
    answers: list[tuple[str, Any]] = []

    async def ask(what: str, body: Any) -> Any:
        raw = await conn.raw(conn.frame(body))
        answer = decode_response(body.__api_key__, body.__version__, raw)[1]
        answers.append((what, _plain(answer) if isinstance(body, FindCoordinatorRequest) else raw))
        return answer

    producers = []
    for n in range(3):
        name = f"same-{n}"
        await ask(f"FindCoordinator {name}", FindCoordinatorRequest(key=name, key_type=i8(1)))
        init = await ask(f"InitProducerId {name}", InitProducerIdRequest(
            transactional_id=TransactionalId(name), transaction_timeout=_ms(60_000), producer_id=ProducerId(-1),
            producer_epoch=i16(-1)))
        producers.append(_Producer(name, name, int(init.producer_id), int(init.producer_epoch), (2 * n, 2 * n + 1)))

    def offsets(p: _Producer, offset: int, schema: Any = txn_offset_commit_v5) -> Any:
        return schema.TxnOffsetCommitRequest(
            transactional_id=TransactionalId(p.txn_id), group_id=GroupId(p.group), producer_id=ProducerId(p.pid),
            producer_epoch=i16(p.epoch), generation_id=i32(-1), member_id="", group_instance_id=None,
            topics=(schema.request.TxnOffsetCommitRequestTopic(name=TopicName(INPUT_TOPIC), partitions=(
                schema.request.TxnOffsetCommitRequestPartition(
                    partition_index=i32(0), committed_offset=i64(offset), committed_leader_epoch=i32(-1),
                    committed_metadata=""),)),))

    def add(p: _Producer, topic: str = TOPIC, epoch: int | None = None) -> Any:
        return AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=TransactionalId(p.txn_id), v3_and_below_producer_id=ProducerId(p.pid),
            v3_and_below_producer_epoch=i16(p.epoch if epoch is None else epoch),
            v3_and_below_topics=(AddPartitionsToTxnTopic(name=TopicName(topic),
                                                         partitions=tuple(i32(x) for x in p.partitions)),))

    def add_offsets(p: _Producer) -> Any:
        return AddOffsetsToTxnRequest(transactional_id=TransactionalId(p.txn_id), producer_id=ProducerId(p.pid),
                                      producer_epoch=i16(p.epoch), group_id=GroupId(p.group))

    def end_v1(p: _Producer, committed: bool = True) -> Any:
        return end_txn_v3.EndTxnRequest(transactional_id=TransactionalId(p.txn_id), producer_id=ProducerId(p.pid),
                                        producer_epoch=i16(p.epoch), committed=committed)

    def end(p: _Producer, epoch: int | None = None, committed: bool = True) -> Any:
        return end_txn_v5.EndTxnRequest(transactional_id=TransactionalId(p.txn_id), producer_id=ProducerId(p.pid),
                                        producer_epoch=i16(p.epoch if epoch is None else epoch), committed=committed)

    v1 = producers.pop()
    for round_ in range(3):  # Transactions V1, as the txn workload sends them (the second one aborted)
        await ask(f"AddPartitionsToTxn round {round_}", add(v1))
        await ask(f"Produce v8 round {round_}", _produce_request(v1))
        await ask(f"AddOffsetsToTxn round {round_}", add_offsets(v1))
        await ask(f"TxnOffsetCommit v3 round {round_}", offsets(v1, round_ + 1, txn_offset_commit_v3))
        await ask(f"EndTxn v3 round {round_}", end_v1(v1, committed=round_ != 1))
    await ask("EndTxn v3 with no transaction ongoing", end_v1(v1))
    await ask("Produce v8 to partitions not in the transaction", _produce_request(v1))
    await ask("TxnOffsetCommit v3 without AddOffsetsToTxn", offsets(v1, 9, txn_offset_commit_v3))
    await ask("AddPartitionsToTxn with an old epoch", add(v1, epoch=v1.epoch - 1))
    await ask("AddPartitionsToTxn with an unknown topic", add(v1, topic="no-such-topic"))
    for round_ in range(3):
        for p in producers:
            await ask(f"Produce {p.txn_id} round {round_}", _produce_request(p, produce_v12))
            await ask(f"TxnOffsetCommit {p.txn_id} round {round_}", offsets(p, round_ + 1))
            ended = await ask(f"EndTxn {p.txn_id} round {round_}", end(p, committed=round_ != 1))
            p.pid, p.epoch, p.sequences = int(ended.producer_id), int(ended.producer_epoch), [0, 0]
    a, b = producers
    # the errors of this path
    await ask("EndTxn with no transaction ongoing", end(a))
    await ask("EndTxn with an old epoch", end(a, epoch=a.epoch - 1))
    b.sequences = [5, 0]
    await ask("Produce with a sequence gap", _produce_request(b, produce_v12))
    b.sequences = [0, 0]
    stale = _Producer(a.txn_id, a.group, a.pid, a.epoch - 1, a.partitions)
    await ask("Produce with an old epoch", _produce_request(stale, produce_v12))
    await ask("TxnOffsetCommit with an old epoch", offsets(stale, 9))
    unknown = _produce_request(a, produce_v12)
    unknown = dataclasses.replace(unknown, topic_data=(dataclasses.replace(unknown.topic_data[0],
                                                                           name=TopicName("no-such-topic")),))
    await ask("Produce to an unknown topic", unknown)
    await conn.close()
    return answers


def _start_kcoord(data_dir: Path) -> tuple[str, Any]:
    from bench_server import start_kcoord
    server = start_kcoord(data_dir, "os")
    return server.bootstrap, server.stop


def compare(binary: str) -> tuple[int, str | None]:
    """The script sent to the compiled server `binary` and to `kcoord serve`: how many answers, and the first that
    differs (what was asked, both answers, where they part), or None."""
    with tempfile.TemporaryDirectory(prefix="kcoord-same-answers-") as tmp:
        native = subprocess.Popen([binary, f"{tmp}/native", "os"], stdout=subprocess.PIPE, text=True)
        assert native.stdout is not None
        try:
            theirs = asyncio.run(_script(native.stdout.readline().strip()))
        finally:
            native.terminate()
            native.wait()
            native.stdout.close()
        bootstrap, stop = _start_kcoord(Path(tmp) / "kcoord")
        try:
            ours = asyncio.run(_script(bootstrap))
        finally:
            stop()
    for (what, expected), (_, got) in zip(ours, theirs, strict=True):
        if expected != got:
            where = ""
            if isinstance(expected, bytes) and isinstance(got, bytes):
                pairs = enumerate(zip(expected, got, strict=False))
                at = next((i for i, (a, b) in pairs if a != b), min(len(expected), len(got)))
                where = f" (the first difference at byte {at} of {len(expected)} and {len(got)})"
            return len(ours), f"{what}: kcoord answered {expected!r}, the compiled server {got!r}{where}"
    return len(ours), None


def main() -> int:
    count, difference = compare(sys.argv[1])
    if difference is not None:
        print(f"same_answers: {difference}", file=sys.stderr)
        return 1
    print(f"same_answers: {count} answers, the compiled server's equal to kcoord's (byte for byte, FindCoordinator's "
          "field by field)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
