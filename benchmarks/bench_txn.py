"""Transaction coordinator throughput: committed transactions/s, `__transaction_state` load speed, tracing overhead.

Run: ``.venv/bin/python benchmarks/bench_txn.py [--runs N] [--quick] [--json PATH] [--profile WHAT]``.

- **commit**: in process, on real logs (a temp dir, fsync really called). Each producer calls InitProducerId once, then
  loops AddPartitionsToTxn(3 partitions) → EndTxn(COMMIT) → (markers to an in-process broker that acknowledges at
  once) → Complete. "fsync per batch" writes and fsyncs every plan as its own batch; "group commit" lets the writes
  of one turn of the loop share one batch and one fsync per partition (``Durability.group(0 ms)`` and one ``poll``
  per turn), with many producers in flight so there is something to batch (the mean records per batch written is
  reported). A transaction counts once its CompleteCommit record is durable. The process runs with the garbage-
  collector setting `kcoord serve` applies after start-up (``impl/runtime/process.py``); one row repeats the group-
  commit run with CPython's defaults.
- **load**: a 1M-record ``__transaction_state`` partition written in the coordinator's own record format (legal
  histories of 10,000 transactional ids), loaded by ``TransactionCoordinator.load`` (open + recovery scan + read +
  replay + markers for the Prepare* ones); with 1-record batches (what the coordinator writes with fsync per batch:
  one plan, one batch), 40-record batches (what the group-commit run above writes: it reports the records per batch)
  and 100-record batches. The storage share (``PartitionLog.open`` + ``read``) is reported
  apart.
- **tracing**: the group-commit run with tracing off, to a MemorySink and to a ParquetSink.

Wall-clock seconds (``time.perf_counter``), median of ``--runs``. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kcoord.impl.interfaces import MarkerResult, TopicPartition, TxnMarker
from kcoord.impl.runtime.clock import SystemClock
from kcoord.impl.runtime.completion import Completion
from kcoord.impl.runtime.process import restore_gc, tune_gc
from kcoord.impl.runtime.trace import MemorySink, ParquetSink, Tracer, TraceSink, TypedSchema
from kcoord.impl.statemachine import MachineTable
from kcoord.impl.storage.log import Durability, PartitionLog, partition_dir_name
from kcoord.impl.storage.producer_ids import ProducerIdBlockStore, ProducerIdManager, store_requester
from kcoord.impl.txn import TRANSACTION_STATE_TOPIC, TransactionCoordinator, TxnConfig
from kcoord.impl.txn.records import encode_instance, encode_txn_key

TX = MachineTable.load("transaction")
PRODUCERS = 2_000  # concurrent producers in the group-commit runs (40 per __transaction_state partition)
PARTITIONS = tuple(TopicPartition("bench", p) for p in range(3))


class AcceptAllBroker:
    """The one broker of an in-process benchmark: every marker it is sent is written (NONE)."""

    node_id = 1

    def write_txn_markers(self, markers: list[TxnMarker]) -> Completion[list[MarkerResult]]:
        return Completion.of([dict.fromkeys(m.partitions, "NONE") for m in markers])


class OneBrokerRouter:
    """Every partition is led by the one `AcceptAllBroker`."""

    broker = AcceptAllBroker()

    def leader_of(self, tp: TopicPartition) -> AcceptAllBroker:
        return self.broker


def _coordinator(data_dir: Path, durability: Durability, sink: TraceSink | None = None) -> TransactionCoordinator:
    clock = SystemClock()
    ids = ProducerIdManager(store_requester(ProducerIdBlockStore(data_dir / "pids")), clock_ms=clock.now_ms)
    coordinator = TransactionCoordinator(data_dir=data_dir / "logs", clock=clock, router=OneBrokerRouter(),
                                         producer_ids=ids, tracer=Tracer(sink), durability=durability)
    coordinator.load_all()
    return coordinator


# ---------------------------------------------------------------------------------------------- commit throughput


class _Producer:
    """One client: Init once, then AddPartitions → EndTxn → wait for CompleteCommit, again and again."""

    __slots__ = ("busy", "epoch", "pid", "step", "txn_id")

    def __init__(self, txn_id: str) -> None:
        self.txn_id, self.pid, self.epoch, self.step, self.busy = txn_id, -1, -1, "init", False


def _drive(coordinator: TransactionCoordinator, producers: list[_Producer], target: int) -> None:
    """Run the producers until `target` transactions are complete (one request per idle producer per turn)."""
    c = coordinator
    shard_of = {p.txn_id: c.runtime.shard_for(p.txn_id) for p in producers}

    def send(p: _Producer) -> None:
        p.busy = True
        if p.step == "init":
            c.init_producer_id(p.txn_id, 60_000).then(lambda d, p=p: on_init(p, d.result()))
        elif p.step == "add":
            c.add_partitions(p.txn_id, p.pid, p.epoch, PARTITIONS).then(lambda d, p=p: on_add(p, d.result()))
        elif p.step == "end":
            c.end_txn(p.txn_id, p.pid, p.epoch, "COMMIT", 3).then(lambda d, p=p: on_end(p, d.result()))
        else:  # wait for the markers and the Complete record
            inst = shard_of[p.txn_id].get("Transaction", (p.txn_id,))
            p.busy = False
            if inst is not None and inst["state"] == "CompleteCommit":
                p.step = "add"

    def on_init(p: _Producer, r: Any) -> None:
        assert r.error == "NONE", r
        p.pid, p.epoch, p.step, p.busy = r.producer_id, r.producer_epoch, "add", False

    def on_add(p: _Producer, r: Any) -> None:
        assert set(r.values()) == {"NONE"}, r
        p.step, p.busy = "end", False

    def on_end(p: _Producer, r: Any) -> None:
        assert r.error == "NONE", r
        p.step, p.busy = "wait", False

    while c.channel.stats.completed < target:
        for p in producers:
            if not p.busy:
                send(p)
        c.poll()


def bench_commit(durability: Durability, producers: int, transactions: int, sink: TraceSink | None = None,
                 serve_gc: bool = True) -> tuple[float, float, float]:
    """Committed transactions per wall-clock second and per CPU second of this process, and the mean records per
    batch in the coordinator's logs. `serve_gc`: the process runs with `kcoord serve`'s garbage-collector setting
    (`tune_gc`, applied after start-up as the server does); False: CPython's defaults."""
    with tempfile.TemporaryDirectory() as tmp:
        coordinator = _coordinator(Path(tmp), durability, sink)
        clients = [_Producer(f"bench-{i}") for i in range(producers)]
        warm = producers  # the first transaction of each producer includes its InitProducerId
        _drive(coordinator, clients, warm)
        previous_gc = tune_gc() if serve_gc else None
        try:
            start, cpu_start = time.perf_counter(), time.process_time()
            _drive(coordinator, clients, warm + transactions)
            if sink is not None:
                sink.flush()  # the sink's buffered work is part of the cost
            elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        finally:
            if previous_gc is not None:
                restore_gc(previous_gc)
        done = coordinator.channel.stats.completed - warm
        batches = [b for shard in coordinator.runtime.shards.values() for b in shard.log.read(0)]
        per_batch = sum(len(b.records) for b in batches) / max(1, len(batches))
        coordinator.shutdown()
        if sink is not None:
            sink.close()
        return done / elapsed, done / cpu, per_batch


# ---------------------------------------------------------------------------------------------- load


_CYCLE = ("Ongoing", "PrepareCommit", "CompleteCommit", "Ongoing", "PrepareAbort", "CompleteAbort")


def write_partition(path: Path, records: int, ids: int, batch_records: int) -> None:
    """`records` records of `ids` transactional ids, each id walking a legal history (Empty, then commit/abort
    cycles), written `batch_records` to a batch."""
    instances = []
    for i in range(ids):
        inst = TX.fresh({"transactional_id": f"load-{i:06d}"})
        inst.update(producer_id=i, previous_producer_id=i, producer_epoch=0, txn_timeout_ms=60_000,
                    txn_last_update_timestamp_ms=1, client_txn_version=0)
        instances.append(inst)
    keys = [encode_txn_key(inst["transactional_id"]) for inst in instances]
    steps = [0] * ids
    with PartitionLog.open(path, durability=Durability.group(10_000, 1 << 30)) as log:
        batch: list[tuple[bytes | None, bytes | None]] = []
        for n in range(records):
            i = n % ids
            inst = instances[i]
            step = steps[i]
            state = "Empty" if step == 0 else _CYCLE[(step - 1) % len(_CYCLE)]
            inst["state"] = state
            inst["partitions"] = frozenset() if state in ("Empty", "CompleteCommit", "CompleteAbort") else \
                frozenset({"orders-0", "orders-1", "payments-3"})
            inst["txn_start_timestamp_ms"] = -1 if state == "Empty" else 1_000 + step
            inst["txn_last_update_timestamp_ms"] = 1_000 + step
            steps[i] = step + 1
            batch.append((keys[i], encode_instance(inst, 1)))
            if len(batch) == batch_records:
                log.append(batch, timestamp_ms=1)
                batch = []
        if batch:
            log.append(batch, timestamp_ms=1)


def bench_load(records: int, batch_records: int, runs: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        folder = data_dir / "logs" / partition_dir_name(TRANSACTION_STATE_TOPIC, 0)
        write_partition(folder, records, 10_000, batch_records)
        loads, cpus, storage = [], [], []
        for _ in range(runs):
            coordinator = _coordinator_unloaded(data_dir)
            start, cpu_start = time.perf_counter(), time.process_time()
            coordinator.load(0)
            loads.append(time.perf_counter() - start)
            cpus.append(time.process_time() - cpu_start)
            assert len(coordinator.runtime.shards[0].instances["Transaction"]) == 10_000
            coordinator.shutdown()
            start = time.perf_counter()
            log = PartitionLog.open(folder)
            count = sum(len(b.records) for b in log.read())
            storage.append(time.perf_counter() - start)
            log.close()
            assert count == records
        return {"load_records_per_s": records / statistics.median(loads),
                "load_records_per_cpu_s": records / statistics.median(cpus),
                "storage_records_per_s": records / statistics.median(storage)}


def _coordinator_unloaded(data_dir: Path) -> TransactionCoordinator:
    clock = SystemClock()
    ids = ProducerIdManager(store_requester(ProducerIdBlockStore(data_dir / "pids")), clock_ms=clock.now_ms)
    return TransactionCoordinator(data_dir=data_dir / "logs", clock=clock, router=OneBrokerRouter(), producer_ids=ids,
                                  config=TxnConfig(), tracer=Tracer(None))


# ---------------------------------------------------------------------------------------------- main


def _commit_variants(runs: int, scale: int) -> dict[str, tuple[float, float, float]]:
    """Every variant once per run, interleaved, so that load from other processes hits them alike; medians."""
    group = Durability.group(0, 1 << 20)
    columns = {"Transaction": TypedSchema.of_table(TX)}  # as `kcoord serve --trace-format parquet` writes
    samples: dict[str, list[tuple[float, float, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        variants: dict[str, Callable[[int], tuple[float, float, float]]] = {
            "commit_per_batch": lambda r: bench_commit(Durability.per_batch(), 50, 1_000 // scale),
            "commit_group": lambda r: bench_commit(group, PRODUCERS, 20_000 // scale),
            "commit_group_default_gc": lambda r: bench_commit(group, PRODUCERS, 20_000 // scale, serve_gc=False),
            "commit_group_memory_trace": lambda r: bench_commit(group, PRODUCERS, 20_000 // scale, MemorySink()),
            "commit_group_parquet_trace": lambda r: bench_commit(
                group, PRODUCERS, 20_000 // scale, ParquetSink(Path(tmp) / f"run-{r}", columns)),
        }
        for r in range(runs):
            for name, fn in variants.items():
                samples.setdefault(name, []).append(fn(r))
    return {name: (statistics.median(w for w, _, _ in xs), statistics.median(c for _, c, _ in xs),
                   statistics.median(b for _, _, b in xs)) for name, xs in samples.items()}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke test of the benchmark)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--profile", choices=["commit", "load"], help="print a cProfile of one run and stop")
    args = parser.parse_args(argv)
    scale = 10 if args.quick else 1
    if args.profile:
        fn: Callable[[], Any] = (lambda: bench_commit(Durability.group(0, 1 << 20), PRODUCERS, 10_000 // scale)) \
            if args.profile == "commit" else (lambda: bench_load(1_000_000 // scale, 1, 1))
        profiler = cProfile.Profile()
        profiler.runcall(fn)
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
        return {}
    load_before = os.getloadavg()[0]
    results: dict[str, Any] = dict(_commit_variants(args.runs, scale))
    load_runs = max(1, min(args.runs, 3))
    results["load_batch_1"] = bench_load(1_000_000 // scale, 1, load_runs)
    results["load_batch_40"] = bench_load(1_000_000 // scale, 40, load_runs)
    results["load_batch_100"] = bench_load(1_000_000 // scale, 100, load_runs)
    results["machine"] = {"cpus": os.cpu_count(), "loadavg_1m_before": load_before,
                          "loadavg_1m_after": os.getloadavg()[0], "python": sys.version.split()[0]}
    _print_table(results, args.runs)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return results


def _print_table(r: dict[str, Any], runs: int) -> None:
    base_wall, base_cpu, _ = r["commit_group"]

    def overhead(name: str) -> str:
        wall, cpu, _ = r[name]
        return f"overhead {(base_wall / wall - 1) * 100:+.0f} % wall, {(base_cpu / cpu - 1) * 100:+.0f} % CPU"

    def rates(name: str) -> tuple[str, str]:
        wall, cpu, _ = r[name]
        return f"{wall:,.0f}", f"{cpu:,.0f}"

    load1, load40, load100 = r["load_batch_1"], r["load_batch_40"], r["load_batch_100"]
    rows = [
        ("committed txn/s, fsync per batch (50 producers)", *rates("commit_per_batch"),
         f"{r['commit_per_batch'][2]:.1f} records per batch"),
        (f"committed txn/s, group commit ({PRODUCERS} producers)", *rates("commit_group"),
         f"target ≥ 5,000; {r['commit_group'][2]:.1f} records per batch"),
        ("  with CPython's default GC settings", *rates("commit_group_default_gc"),
         "the row above runs with `kcoord serve`'s (`impl/runtime/process.py`)"),
        ("  with MemorySink tracing", *rates("commit_group_memory_trace"), overhead("commit_group_memory_trace")),
        ("  with ParquetSink tracing", *rates("commit_group_parquet_trace"), overhead("commit_group_parquet_trace")),
        ("load records/s, 1-record batches", f"{load1['load_records_per_s']:,.0f}",
         f"{load1['load_records_per_cpu_s']:,.0f}", "target ≥ 300,000"),
        ("  of which storage only (open + read)", f"{load1['storage_records_per_s']:,.0f}", "", ""),
        ("load records/s, 40-record batches (what the group-commit run writes)",
         f"{load40['load_records_per_s']:,.0f}", f"{load40['load_records_per_cpu_s']:,.0f}", "target ≥ 300,000"),
        ("  of which storage only (open + read)", f"{load40['storage_records_per_s']:,.0f}", "", ""),
        ("load records/s, 100-record batches", f"{load100['load_records_per_s']:,.0f}",
         f"{load100['load_records_per_cpu_s']:,.0f}", "target ≥ 300,000"),
        ("  of which storage only (open + read)", f"{load100['storage_records_per_s']:,.0f}", "", ""),
    ]
    m = r["machine"]
    print(f"\nmedian of {runs} runs (load: of {max(1, min(runs, 3))}); Python {m['python']}, {m['cpus']} CPUs, "
          f"1-min load average {m['loadavg_1m_before']:.1f} before / {m['loadavg_1m_after']:.1f} after\n")
    print("| measure | per wall-clock s | per CPU s of this process | note |")
    print("|---|---:|---:|---|")
    for name, wall, cpu, note in rows:
        print(f"| {name} | {wall} | {cpu} | {note} |")


if __name__ == "__main__":
    main()
