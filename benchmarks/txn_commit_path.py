"""Where a committed transaction's server CPU goes, by durability mode: requests per transaction, the
CONCURRENT_TRANSACTIONS retries, the fsync rounds and the time between an EndTxn's markers being queued and the
transaction's Complete* being visible, and the server's CPU split between the event loop's thread and the others.

Run: ``.venv/bin/python benchmarks/txn_commit_path.py [--durability os,fsync] [--runs 3] [--seconds 3]
[--add-retry-backoff-ms 20[,1]] [--workloads txn[,txn2]] [--connections 8] [--json PATH]`` (from any directory; with
``PYTHONPATH=TREE`` another checkout's kcoord, laid out as the installed package, is measured with this
script's clients; ``--fsync-method auto|syncfs|fsync``: `kcoord serve --fsync-method`, for a tree that has it).

One `kcoord serve` node per durability mode (as `bench_server.py` starts it: no record check), instrumented in its own
process: `KcoordServer._start_flush` counts the fsync rounds (a round: the fsyncs of every log with appends not yet
on disk, side by side on the fsync threads) and their fsyncs, by the kind of log (`__transaction_state`,
`__consumer_offsets`, data); `MarkerChannel.add` and `._on_one_completed` time each
transaction from its markers being queued (its EndTxn is answered then) to its Complete* record being applied (its
next AddPartitionsToTxn is no longer CONCURRENT_TRANSACTIONS), in fsync rounds and in ms; `Cluster.poll` counts the
cluster loop's polls; the handlers' latency counters give the requests per API. The clients are `bench_clients.py`'s
(8 connections in 2 processes; `--workloads txn,txn2`: Transactions V1 and V2, alternating within each run),
which read the server's per-thread CPU from /proc at the start and the end of the
measured window: the loop thread is the process's main thread, the others are the fsync threads (and the metrics
server's, idle here).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import multiprocessing
import multiprocessing.connection
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_clients import ADD_PARTITIONS_RETRY_BACKOFF_MS, create_topics, measure

_TICK = os.sysconf("SC_CLK_TCK")


def _serve(data_dir: str, durability: str, control: multiprocessing.connection.Connection,
           count_calls: bool = False, fsync_method: str | None = None) -> None:
    """An instrumented `kcoord serve` node; answers `control`'s "counters" with a snapshot, stops on "stop".
    `count_calls`: also the spec decisions by machine and event, the shard submits, the cluster flushes and the loop
    turns (wrappers around hot functions: off when CPU is compared)."""
    from kcoord.impl.cluster import Cluster, ClusterConfig
    from kcoord.impl.group.config import GroupConfig
    from kcoord.impl.runtime.process import tune_gc
    from kcoord.impl.server import serve
    from kcoord.impl.server.serve import KcoordServer, ServeOptions
    from kcoord.impl.storage.log import Durability
    from kcoord.impl.txn import markers

    counters: collections.Counter[str] = collections.Counter()
    queued: dict[str, tuple[int, float]] = {}

    start_flush = KcoordServer._start_flush

    def counted_start_flush(self: Any, *args: Any, **kwargs: Any) -> None:
        before = self._flushing
        start_flush(self, *args, **kwargs)
        if before is None and self._flushing is not None:
            counters["fsync_rounds"] += 1
            counters["fsyncs"] += len(self._flushing)
            counters["fsyncs:same log again in a round"] += len(self._flushing) - len(
                {id(t.log) for t in self._flushing})
            for ticket in self._flushing:  # what each fsync is for: the log's kind
                name = ticket.log.path.name
                counters["fsyncs:" + (name.rsplit("-", 1)[0] if name.startswith("__") else "data")] += 1

    add = markers.MarkerChannel.add

    def counted_add(self: Any, txn_partition: int, coordinator_epoch: int, instance: Any) -> Any:
        queued[instance["transactional_id"]] = (counters["fsync_rounds"], time.perf_counter())
        return add(self, txn_partition, coordinator_epoch, instance)

    completed = markers.MarkerChannel._on_one_completed

    def counted_completed(self: Any, txn: Any, error: str) -> None:
        completed(self, txn, error)
        if error in markers._COMPLETED:
            since = queued.pop(txn.transactional_id, None)
            if since is not None:
                counters["completed"] += 1
                counters["complete_rounds"] += counters["fsync_rounds"] - since[0]
                counters["complete_us"] += int(1e6 * (time.perf_counter() - since[1]))

    poll = Cluster.poll

    def counted_poll(self: Any) -> int:
        counters["polls"] += 1
        return poll(self)

    from kcoord.impl.runtime.shard import Shard

    complete_durable = Shard.complete_durable

    def counted_complete_durable(self: Any) -> int:
        done = complete_durable(self)
        counters["shard_looks"] += 1
        counters["shard_looks_idle"] += done == 0
        return done

    from kcoord.impl.statemachine import MachineTable

    decide = MachineTable.decide

    def counted_decide(self: Any, instance: Any, event: str, args: Any, **kw: Any) -> Any:
        counters[f"decisions:{self.name}.{event}"] += 1
        return decide(self, instance, event, args, **kw)

    submit = Shard.submit

    def counted_submit(self: Any, keys: Any, handler: Any, **kw: Any) -> Any:
        counters["shard_submits"] += 1
        return submit(self, keys, handler, **kw)

    flush = Cluster.flush

    def counted_flush(self: Any) -> int:
        counters["cluster_flushes"] += 1
        return flush(self)

    turn = KcoordServer._turn

    def counted_turn(self: Any) -> int:
        counters["loop_turns"] += 1
        return turn(self)

    if count_calls:
        MachineTable.decide = counted_decide  # type: ignore[method-assign]
        Shard.submit = counted_submit  # type: ignore[method-assign]
        Cluster.flush = counted_flush  # type: ignore[method-assign]
        KcoordServer._turn = counted_turn  # type: ignore[method-assign]
    Shard.complete_durable = counted_complete_durable  # type: ignore[method-assign]
    KcoordServer._start_flush = counted_start_flush  # type: ignore[method-assign]
    markers.MarkerChannel.add = counted_add  # type: ignore[method-assign]
    markers.MarkerChannel._on_one_completed = counted_completed  # type: ignore[method-assign]
    Cluster.poll = counted_poll  # type: ignore[method-assign]
    stop = threading.Event()
    server_ref: list[Any] = []

    def answer() -> None:
        while True:
            command = control.recv()
            if command == "stop":
                stop.set()
                return
            snapshot = dict(counters)
            if server_ref:
                for api, buckets in server_ref[0].metrics.counters.latency.items():
                    snapshot[f"requests:{api}"] = int(sum(buckets[:-1]))
            control.send(snapshot)

    async def main() -> None:
        unchecked = {"check_records": False} if "check_records" in ClusterConfig.__dataclass_fields__ else {}
        method = {"fsync_method": fsync_method} if fsync_method else {}
        if method and "fsync_method" not in ServeOptions.__dataclass_fields__:
            raise SystemExit(f"--fsync-method {fsync_method}: this tree's ServeOptions has no fsync_method")
        options = ServeOptions(data_dir=Path(data_dir), port=0,
                               cluster=ClusterConfig(groups=GroupConfig(initial_rebalance_delay_ms=0),
                                                     durability=Durability.named(durability), **unchecked),
                               **method)
        server = KcoordServer(options)
        await server.start()
        tune_gc()
        server_ref.append(server)
        control.send(server.bootstrap)
        threading.Thread(target=answer, daemon=True).start()
        while not stop.is_set():
            await asyncio.sleep(0.05)
        await server.stop()

    serve.run_event_loop(main(), "default")


class _ThreadCpu:
    """The server's CPU seconds so far (for `measure`), remembering each reading's per-thread split."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.readings: list[tuple[float, float, float]] = []  # (all threads, the main thread, its system part)
        self.switches: list[tuple[int, int, int]] = []  # context switches (the main thread, the other threads now
        # alive, the main thread's involuntary ones alone)

    def __call__(self) -> float:
        from bench_server import cpu_s

        total = cpu_s(self.pid)  # (with a helper process the server started)
        main, system = _ticks(Path(f"/proc/{self.pid}/task/{self.pid}/stat"))
        self.readings.append((total, main, system))
        self.switches.append(_switches(self.pid))
        return total


def _ticks(stat: Path) -> tuple[float, float]:
    """A thread's user + system CPU seconds, and the system part alone."""
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK, int(fields[12]) / _TICK


def _switches(pid: int) -> tuple[int, int, int]:
    """Voluntary + involuntary context switches of the main thread, and of the process's other live threads; the
    main thread's involuntary ones (preempted, not asleep)."""
    main = others = preempted = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            text = (task / "status").read_text()
        except OSError:
            continue
        n = sum(int(line.split()[1]) for line in text.splitlines() if line.endswith("ctxt_switches") or
                "ctxt_switches:" in line)
        if task.name == str(pid):
            main = n
            preempted = sum(int(line.split()[1]) for line in text.splitlines()
                            if line.startswith("nonvoluntary_ctxt_switches"))
        else:
            others += n
    return main, others, preempted


def _client(bootstrap: str, pid: int, connections: int, first: int, tag: str, seconds: float, barrier: Any,
            backoff_ms: float, out: multiprocessing.Queue[dict[str, Any]], workload: str = "txn") -> None:
    cpu = _ThreadCpu(pid)
    counts = asyncio.run(measure(bootstrap, workload, connections, tag, seconds, first_index=first, barrier=barrier,
                                 cpu=cpu, add_retry_backoff_ms=backoff_ms))
    (total0, main0, sys0), (total1, main1, sys1) = cpu.readings[0], cpu.readings[-1]
    out.put({"done": counts.done, "retries": counts.retries, "requests": counts.requests,
             "elapsed_s": counts.elapsed_s, "server_cpu_s": total1 - total0, "loop_cpu_s": main1 - main0,
             "loop_sys_s": sys1 - sys0, "client_cpu_s": counts.client_cpu_s,
             "loop_switches": cpu.switches[-1][0] - cpu.switches[0][0],
             "other_switches": cpu.switches[-1][1] - cpu.switches[0][1], "retried": counts.retried,
             "loop_preempted": cpu.switches[-1][2] - cpu.switches[0][2],
             "epoch_bumps": counts.epoch_bumps})


def run_once(bootstrap: str, pid: int, control: multiprocessing.connection.Connection, tag: str, seconds: float,
             backoff_ms: float, connections: int = 8, processes: int = 2, workload: str = "txn") -> dict[str, float]:
    barrier = multiprocessing.Barrier(processes)
    out: multiprocessing.Queue[dict[str, Any]] = multiprocessing.Queue()
    shares = [connections // processes + (i < connections % processes) for i in range(processes)]
    control.send("counters")
    before = control.recv()
    clients = [multiprocessing.Process(target=_client, args=(bootstrap, pid, n, sum(shares[:i]), f"{tag}p{i}",
                                                             seconds, barrier, backoff_ms, out, workload))
               for i, n in enumerate(shares)]
    for c in clients:
        c.start()
    results = [out.get(timeout=600) for _ in clients]
    for c in clients:
        c.join(60)
    control.send("counters")
    after = control.recv()
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    done = sum(r["done"] for r in results)
    widest = max(results, key=lambda r: r["server_cpu_s"])
    per = 1e6 / max(done, 1)
    row = {"txn_per_s": done / statistics.mean(r["elapsed_s"] for r in results),
           "server_cpu_us_per_txn": widest["server_cpu_s"] * per, "loop_cpu_us_per_txn": widest["loop_cpu_s"] * per,
           "loop_system_cpu_us_per_txn": widest["loop_sys_s"] * per,
           "other_threads_cpu_us_per_txn": (widest["server_cpu_s"] - widest["loop_cpu_s"]) * per,
           "clients_cpu_us_per_txn": sum(r["client_cpu_s"] for r in results) * per,
           "requests_per_txn": sum(r["requests"] for r in results) / max(done, 1),
           "loop_context_switches_per_txn": widest["loop_switches"] / max(done, 1),
           "other_threads_context_switches_per_txn": widest["other_switches"] / max(done, 1),
           "loop_involuntary_switches_per_txn": widest["loop_preempted"] / max(done, 1),
           "concurrent_retries_per_txn": sum(r["retries"] for r in results) / max(done, 1),
           "fsync_rounds_per_txn": delta.get("fsync_rounds", 0) / max(done, 1),
           "fsyncs_per_txn": delta.get("fsyncs", 0) / max(done, 1),
           "polls_per_txn": delta.get("polls", 0) / max(done, 1),
           "loop_turns_per_txn": delta.get("loop_turns", 0) / max(done, 1),
           "cluster_flushes_per_txn": delta.get("cluster_flushes", 0) / max(done, 1),
           "shard_submits_per_txn": delta.get("shard_submits", 0) / max(done, 1),
           "decisions_per_txn": sum(v for k, v in delta.items() if k.startswith("decisions:")) / max(done, 1),
           "shard_completions_looked_per_txn": delta.get("shard_looks", 0) / max(done, 1),
           "shard_completions_idle_per_txn": delta.get("shard_looks_idle", 0) / max(done, 1),
           "rounds_markers_to_complete": delta.get("complete_rounds", 0) / max(delta.get("completed", 0), 1),
           "ms_markers_to_complete": delta.get("complete_us", 0) / 1000 / max(delta.get("completed", 0), 1)}
    if workload == "txn2":
        row["epoch_bumps_per_txn"] = sum(r["epoch_bumps"] for r in results) / max(done, 1)
    for r in results:
        for key, n in r["retried"].items():
            row[f"retried:{key}_per_txn"] = row.get(f"retried:{key}_per_txn", 0) + n / max(done, 1)
    for key, value in sorted(delta.items()):
        if key.startswith(("requests:", "fsyncs:", "decisions:")):
            row[f"{key}_per_txn"] = value / max(done, 1)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--durability", default="os,fsync")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--add-retry-backoff-ms", default=str(ADD_PARTITIONS_RETRY_BACKOFF_MS),
                        help="comma-separated: each value is measured in turn (20: Kafka's Java client)")
    parser.add_argument("--workloads", default="txn", help="comma-separated, alternating: txn (Transactions V1, "
                        "5 requests), txn2 (V2, Kafka 4.0's Java client: 3 requests)")
    parser.add_argument("--connections", type=int, default=8, help="producers (one connection each, in 2 processes)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--fsync-method", choices=("auto", "syncfs", "fsync"),
                        help="`kcoord serve --fsync-method` (default: the server's; a tree without it has fsync only)")
    parser.add_argument("--count-calls", action="store_true",
                        help="also count decisions (by machine.event), shard submits, cluster flushes, loop turns")
    args = parser.parse_args()
    backoffs = [float(b) for b in args.add_retry_backoff_ms.split(",")]
    workloads = args.workloads.split(",")
    load = [os.getloadavg()[0]]
    out: dict[str, list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="kcoord-txn-path-") as tmp:
        for durability in args.durability.split(","):
            parent, child = multiprocessing.Pipe()
            server = multiprocessing.Process(target=_serve, args=(f"{tmp}/{durability}", durability, child,
                                                                   args.count_calls, args.fsync_method),
                                             daemon=True)
            server.start()
            bootstrap = parent.recv()
            assert server.pid is not None
            asyncio.run(create_topics(bootstrap))
            try:
                pairs = [(w, b) for w in workloads for b in backoffs]
                for run in range(args.runs):
                    for workload, backoff in pairs if run % 2 == 0 else pairs[::-1]:
                        row = run_once(bootstrap, server.pid, parent, f"{durability}{run}{workload}b{backoff:g}",
                                       args.seconds, backoff, connections=args.connections, workload=workload)
                        row["load"] = os.getloadavg()[0]
                        name = f"{durability}/backoff{backoff:g}" if workloads == ["txn"] else \
                            f"{durability}/{workload}/backoff{backoff:g}"
                        out.setdefault(name, []).append(row)
                        print(f"{durability} {workload} backoff {backoff:g} ms: " + ", ".join(
                            f"{k} {v:,.2f}" for k, v in row.items()), file=sys.stderr, flush=True)
            finally:
                parent.send("stop")
                server.join(60)
    load.append(os.getloadavg()[0])
    keys = sorted({k for rows in out.values() for row in rows for k in row})
    print("| measure | " + " | ".join(out) + " |")
    print("|---|" + "---:|" * len(out))
    for key in keys:
        if not any(r.get(key, 0) for rows in out.values() for r in rows):
            continue  # (an API the workload does not use)
        print(f"| {key} | " + " | ".join(f"{statistics.median(r.get(key, 0) for r in rows):,.2f}"
                                         for rows in out.values()) + " |")
    print(f"\n(median of {args.runs} runs of {args.seconds:g} s; load average {load[0]:.2f} at the start, "
          f"{load[1]:.2f} at the end, {os.cpu_count()} cpus)")
    if args.json:
        args.json.write_text(json.dumps(out | {"loadavg_1m": load}, indent=1) + "\n")


if __name__ == "__main__":
    main()
