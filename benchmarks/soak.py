"""Soak: `kcoord serve` under fuzzed frames, stalled large requests and real transactional and offset-commit writers,
killed with SIGKILL at random moments and restarted on the same data directory, for `--minutes`. Reports frames
sent, kill -9 cycles, crashes, the server's RSS, and what was acknowledged against what is found after each restart.

Run: ``.venv/bin/python benchmarks/soak.py --minutes 10 [--seed N] [--json PATH]``.

Each cycle starts `kcoord serve` (its own process; durability alternating fsync and group commit), then runs, until a
SIGKILL 2-6 s later (random):
  * fuzzers: frames of real clients (tests/impl/server/corpus) bit-flipped, truncated, spliced, re-tagged, or
    random, sent as fast as the server reads them (a connection the server closes is opened again);
  * stallers: connections that declare an 8 MiB request, send half of it, and stop;
  * a transactional writer: raw frames, InitProducerId once, then transactions of 3 records (AddPartitionsToTxn,
    Produce acks=all, EndTxn commit); a transaction is acknowledged when EndTxn answers NONE;
  * an offset committer: OffsetCommit of a growing offset for one group; acknowledged when it answers NONE.
After each restart (and at the end) the previous cycles are checked against what the server holds: every record of
every acknowledged transaction is read back (read_committed), no transaction is seen in part, and the group's committed
offset is at least the last acknowledged one. A crash is a server that exits unless killed, or a Python traceback in
its output. RSS (VmRSS) is read after start-up and just before each kill.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_server import Connection, _create_topic
from kio.schema.add_partitions_to_txn.v1 import AddPartitionsToTxnRequest
from kio.schema.add_partitions_to_txn.v1.request import AddPartitionsToTxnTopic
from kio.schema.end_txn.v1 import EndTxnRequest
from kio.schema.init_producer_id.v1 import InitProducerIdRequest
from kio.schema.offset_commit.v8 import OffsetCommitRequest
from kio.schema.offset_commit.v8.request import OffsetCommitRequestPartition, OffsetCommitRequestTopic
from kio.schema.produce.v8 import ProduceRequest
from kio.schema.produce.v8.request import PartitionProduceData, TopicProduceData
from kio.schema.types import GroupId, ProducerId, TopicName, TransactionalId
from kio.static.primitive import i16, i32, i32Timedelta, i64

from kcoord.impl.storage.batch import encode_new_batch

ROOT = Path(__file__).resolve().parents[1]
KCOORD = str(Path(sys.executable).parent / "kcoord")
CORPUS = ROOT / "tests" / "impl" / "server" / "corpus" / "client_frames.json"
TOPIC, GROUP, TXN = "bench-out", "soak-g", "soak-tx"  # (bench_server's topic: 8 partitions)
MiB = 1 << 20


@dataclass
class Totals:
    cycles: int = 0
    frames_sent: int = 0
    crashes: int = 0
    tracebacks: int = 0
    txn_acknowledged: int = 0
    txn_found: int = 0
    records_acknowledged: int = 0
    records_found: int = 0
    partial_transactions: int = 0
    offset_acknowledged: int = -1
    offset_found: int = -1
    offset_behind: int = 0  # restarts that found a committed offset below the last acknowledged one
    rss_start_mib: float = 0.0
    rss_end_mib: list[float] = field(default_factory=list)


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


# ---------------------------------------------------------------------------------------------- fuzz and stall


def _mutate(rnd: random.Random, corpus: list[bytes]) -> bytes:
    base = rnd.choice(corpus)
    kind = rnd.choice(["flip", "flip", "truncate", "retag", "splice", "random"])
    if kind == "flip":
        data = bytearray(base)
        for _ in range(rnd.randint(1, 4)):
            bit = rnd.randrange(64, len(data) * 8) if len(data) > 8 else rnd.randrange(len(data) * 8)
            data[bit // 8] ^= 1 << (bit % 8)
        return bytes(data)
    if kind == "truncate":
        return base[: rnd.randrange(len(base))]
    if kind == "retag":
        return struct.pack(">hh", rnd.randint(-5, 120), rnd.randint(-3, 30)) + base[4:]
    if kind == "splice":
        other = rnd.choice(corpus)
        return base[: rnd.randrange(len(base) + 1)] + other[rnd.randrange(len(other) + 1):]
    return rnd.randbytes(rnd.randint(0, 64))


def fuzz(port: int, stop: threading.Event, seed: int, sent: list[int]) -> None:
    rnd = random.Random(seed)
    corpus = [bytes.fromhex(e["frame_hex"]) for e in json.loads(CORPUS.read_text())]
    while not stop.is_set():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
                sock.setblocking(False)
                while not stop.is_set():
                    frame = _mutate(rnd, corpus)
                    data = struct.pack(">i", len(frame)) + frame
                    try:
                        sock.sendall(data)
                    except BlockingIOError:
                        time.sleep(0.001)
                        continue
                    sent[0] += 1
                    try:
                        if sock.recv(1 << 16) == b"":
                            break  # closed by the server (bad input): a new connection
                    except BlockingIOError:
                        pass
        except OSError:
            time.sleep(0.05)


def stall(port: int, stop: threading.Event) -> list[socket.socket]:
    held = []
    for _ in range(4):
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=2)
            sock.sendall(struct.pack(">ihhi", 8 * MiB, 0, 8, 1))
            sock.settimeout(0.5)
            try:
                for _ in range(16):
                    sock.sendall(bytes(256 * 1024))  # half of the 8 MiB, then nothing more
            except OSError:
                pass
            held.append(sock)
        except OSError:
            pass
    return held


# ---------------------------------------------------------------------------------------------- writers


def _ms(seconds: int) -> i32Timedelta:
    import datetime

    return i32Timedelta.parse(datetime.timedelta(seconds=seconds))


async def transactions(bootstrap: str, cycle: int, acked: list[tuple[int, int]], stop: threading.Event) -> None:
    """Transactions of 3 records "cycle:n:i" to partition 0; (cycle, n) appended to `acked` when committed."""
    conn = await Connection.open(bootstrap)
    while True:  # after a restart the previous epoch's transaction may still be completing: retriable errors
        init = await conn.request(InitProducerIdRequest(transactional_id=TransactionalId(TXN),
                                                        transaction_timeout=_ms(seconds=60)))
        if int(init.error_code.value) == 0:
            break
        if stop.is_set():
            return
        await asyncio.sleep(0.05)
    pid, epoch = int(init.producer_id), int(init.producer_epoch)
    sequence, n = 0, 0
    while not stop.is_set():
        add = await conn.request(AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=TransactionalId(TXN), v3_and_below_producer_id=ProducerId(pid),
            v3_and_below_producer_epoch=i16(epoch),
            v3_and_below_topics=(AddPartitionsToTxnTopic(name=TopicName(TOPIC), partitions=(i32(0),)),)))
        if int(add.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code.value) != 0:
            await asyncio.sleep(0.02)
            continue
        records = [(None, b"%d:%d:%d" % (cycle, n, i)) for i in range(3)]
        batch = encode_new_batch(records, base_offset=0, timestamp_ms=int(time.time() * 1000), producer_id=pid,
                                 producer_epoch=epoch, base_sequence=sequence, transactional=True)
        produced = await conn.request(ProduceRequest(
            transactional_id=TransactionalId(TXN), acks=i16(-1), timeout=_ms(seconds=30),
            topic_data=(TopicProduceData(name=TopicName(TOPIC), partition_data=(
                PartitionProduceData(index=i32(0), records=batch),)),)))
        if int(produced.responses[0].partition_responses[0].error_code.value) != 0:
            return
        sequence += 3
        ended = await conn.request(EndTxnRequest(transactional_id=TransactionalId(TXN), producer_id=ProducerId(pid),
                                                 producer_epoch=i16(epoch), committed=True))
        if int(ended.error_code.value) != 0:
            return
        acked.append((cycle, n))
        n += 1


async def commits(bootstrap: str, start: int, acked: list[int], stop: threading.Event) -> None:
    conn = await Connection.open(bootstrap)
    offset = start
    while not stop.is_set():
        offset += 1
        answer = await conn.request(OffsetCommitRequest(
            group_id=GroupId(GROUP), generation_id_or_member_epoch=i32(-1), member_id="", group_instance_id=None,
            topics=(OffsetCommitRequestTopic(name=TopicName(TOPIC), partitions=(
                OffsetCommitRequestPartition(partition_index=i32(0), committed_offset=i64(offset),
                                             committed_leader_epoch=i32(-1), committed_metadata=""),)),)))
        if int(answer.topics[0].partitions[0].error_code.value) != 0:
            return
        acked.append(offset)


def writers(bootstrap: str, cycle: int, txns: list[tuple[int, int]], offsets: list[int], stop: threading.Event) -> None:
    async def both() -> None:
        outcomes = await asyncio.gather(transactions(bootstrap, cycle, txns, stop),
                                        commits(bootstrap, offsets[-1] if offsets else 0, offsets, stop),
                                        return_exceptions=True)
        for outcome in outcomes:  # the kill ends them with a connection error; anything else is a soak bug
            if isinstance(outcome, BaseException) and not isinstance(outcome, OSError | asyncio.IncompleteReadError):
                print(f"writer failed: {outcome!r}", file=sys.stderr, flush=True)

    asyncio.run(both())


# ---------------------------------------------------------------------------------------------- check


def check(bootstrap: str, txns: list[tuple[int, int]], offsets: list[int], totals: Totals) -> None:
    """What the restarted server holds against what was acknowledged before."""
    import kafka
    from kafka.structs import TopicPartition

    tp = TopicPartition(TOPIC, 0)
    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed",
                                   enable_auto_commit=False, group_id=GROUP, consumer_timeout_ms=3_000)
    try:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        found: dict[tuple[int, int], int] = {}
        deadline = time.monotonic() + 60
        while consumer.position(tp) < end and time.monotonic() < deadline:
            for records in consumer.poll(500).values():
                for r in records:
                    c, n, _ = r.value.split(b":")
                    found[(int(c), int(n))] = found.get((int(c), int(n)), 0) + 1
        committed = consumer.committed(tp)
    finally:
        consumer.close()
    totals.txn_acknowledged = len(txns)
    totals.txn_found = sum(1 for t in txns if found.get(t) == 3)
    totals.records_acknowledged = 3 * len(txns)
    totals.records_found = sum(min(found.get(t, 0), 3) for t in txns)
    totals.partial_transactions = sum(1 for count in found.values() if count != 3)
    if offsets:
        totals.offset_acknowledged = offsets[-1]
        totals.offset_found = committed if committed is not None else -1
        totals.offset_behind += totals.offset_found < offsets[-1]


# ---------------------------------------------------------------------------------------------- driver


def start(data_dir: Path, port: int, durability: str) -> subprocess.Popen[str]:
    process = subprocess.Popen([KCOORD, "serve", "--data-dir", str(data_dir), "--port", str(port), "--log-level",
                                "warning", "--durability", durability, "--max-frame-bytes", str(16 * MiB),
                                "--set", f"server.queued_max_request_bytes={32 * MiB}"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    deadline = time.monotonic() + 120
    while "listening on" not in process.stdout.readline():
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"kcoord serve did not start: {process.stderr.read() if process.stderr else ''}")
    return process


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=28)
    parser.add_argument("--fuzzers", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rnd = random.Random(args.seed)
    print(f"soak: seed {args.seed}, {args.minutes:g} minutes", file=sys.stderr, flush=True)
    totals, sent = Totals(), [0]
    txns: list[tuple[int, int]] = []
    offsets: list[int] = []
    port = free_port()
    ends = time.monotonic() + 60 * args.minutes
    with tempfile.TemporaryDirectory(prefix="kcoord-soak-") as tmp:
        data_dir = Path(tmp) / "data"
        process = start(data_dir, port, "fsync")
        bootstrap = f"127.0.0.1:{port}"
        asyncio.run(_create_topic(bootstrap))
        totals.rss_start_mib = rss_mib(process.pid)
        while True:
            cycle = totals.cycles
            stop = threading.Event()
            threads = [threading.Thread(target=fuzz, args=(port, stop, rnd.randrange(1 << 30), sent))
                       for _ in range(args.fuzzers)]
            threads.append(threading.Thread(target=writers, args=(bootstrap, cycle, txns, offsets, stop)))
            for t in threads:
                t.start()
            held = stall(port, stop)
            time.sleep(rnd.uniform(2, 6))
            totals.rss_end_mib.append(rss_mib(process.pid))
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)  # kill -9, mid-traffic
            else:
                totals.crashes += 1
            process.wait()
            stop.set()
            for t in threads:
                t.join(30)
            for sock in held:
                sock.close()
            err = process.stderr.read() if process.stderr else ""
            totals.tracebacks += err.count("Traceback")
            totals.cycles += 1
            totals.frames_sent = sent[0]
            process = start(data_dir, port, "group" if totals.cycles % 2 else "fsync")
            check(bootstrap, txns, offsets, totals)
            print(f"cycle {totals.cycles}: {sent[0]:,} frames, {totals.txn_found}/{totals.txn_acknowledged} "
                  f"transactions, offset {totals.offset_found}/{totals.offset_acknowledged}, RSS "
                  f"{totals.rss_end_mib[-1]:.0f} MiB", file=sys.stderr, flush=True)
            if time.monotonic() > ends:
                break
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
        totals.tracebacks += err.count("Traceback")
        totals.crashes += process.returncode != 0
    report(totals, args.minutes)
    if args.json:
        args.json.write_text(json.dumps(asdict(totals), indent=1) + "\n")


def report(t: Totals, minutes: float) -> None:
    ends = t.rss_end_mib or [0.0]
    print(f"| soak ({minutes:g} min) | figure |\n|---|---:|")
    for name, value in (
            ("kill -9 cycles", f"{t.cycles:,}"),
            ("fuzzed frames sent", f"{t.frames_sent:,}"),
            ("crashes (exits not killed, tracebacks)", f"{t.crashes}, {t.tracebacks}"),
            ("transactions acknowledged / found whole after the restarts", f"{t.txn_acknowledged:,} / {t.txn_found:,}"),
            ("records acknowledged / found", f"{t.records_acknowledged:,} / {t.records_found:,}"),
            ("transactions seen in part", f"{t.partial_transactions}"),
            ("last offset commit acknowledged / found", f"{t.offset_acknowledged:,} / {t.offset_found:,}"),
            ("restarts that found an offset below the last acknowledged", f"{t.offset_behind}"),
            ("server RSS after the first start", f"{t.rss_start_mib:.0f} MiB"),
            ("server RSS before each kill: first / median / max / last",
             f"{ends[0]:.0f} / {sorted(ends)[len(ends) // 2]:.0f} / {max(ends):.0f} / {ends[-1]:.0f} MiB")):
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()
