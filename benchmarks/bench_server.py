"""`kcoord serve` against Apache Kafka 4.0.2 on the same machine, in the same run, with the same clients: classic and
KIP-848 heartbeats, and committed transactions with offsets, per second and per CPU-second of the server.

Run: ``.venv/bin/python benchmarks/bench_server.py [--quick] [--seconds S] [--runs N]
[--workloads classic,consumer,txn,txn2] [--connections 8] [--durability os,fsync]
[--targets kcoord,kafka[,kcoord2,compiled]] [--client-processes 2] [--json PATH]``.

For each durability mode, one `kcoord serve` node (`KcoordServer` in its own process; Kafka 4.0's defaults except
`group.initial.rebalance.delay.ms=0`) and one Apache Kafka 4.0.2 node (`ReferenceKafka`, KRaft, combined
broker+controller; Kafka's defaults for `os`, and `log.flush.interval.messages=1` — an fsync per append — for
`fsync`) run at once. The clients are `bench_clients.py`'s raw-frame clients (one request in flight per connection,
every answer's error code checked), in `--client-processes` processes of their own, whose CPU is measured too: the
machine ceiling, cores ÷ (server + clients CPU per unit), is the most any server design could get through these
clients on this machine at today's CPU costs. `--targets ...,kcoord2` adds two kcoord nodes in two processes that
share nothing, the client processes split between them: the bound of serving one broker per process. The runs
alternate between the two servers (kcoord, Kafka, kcoord, ...), so both see the same machine load; the tables give
medians.

Reported per workload: the rate (heartbeats or transactions per second, wall clock), the server process's CPU time
(user + system of all its threads, from /proc: for kcoord the Python process with its fsync threads, for Kafka the
JVM) per request and per unit of work, and the units of work per server CPU-second — on a machine shared with other
jobs the wall rate depends on what else runs, the CPU cost much less. Heartbeats write nothing, so they are measured
in the `os` phase only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import multiprocessing.synchronize
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_clients import ADD_PARTITIONS_RETRY_BACKOFF_MS, WORKLOADS, Counts, create_topics, measure

DURABILITY = ("os", "fsync")
TARGETS = ("kcoord", "kafka")
#: what each target runs with in each durability mode
KAFKA_SETTINGS = {"os": {}, "fsync": {"log.flush.interval.messages": "1"}}
UNIT = {"classic": "heartbeats", "consumer": "heartbeats", "txn": "transactions", "txn2": "transactions"}


def serve_kcoord(data_dir: str, durability: str, address_queue: multiprocessing.Queue[str],
                 stop: multiprocessing.synchronize.Event, loop: str = "default") -> None:
    """A `kcoord serve` node in this (child) process until `stop` is set; its bootstrap goes into `address_queue`."""
    from kcoord.impl.cluster import ClusterConfig
    from kcoord.impl.group.config import GroupConfig
    from kcoord.impl.runtime.process import tune_gc
    from kcoord.impl.server import serve
    from kcoord.impl.server.serve import KcoordServer, ServeOptions
    from kcoord.impl.storage.log import Durability

    # (an older kcoord, measured for a before/after table, has no `Durability.named` and no `run_event_loop`: its
    # only modes were fsync per batch, the default, and group commit)
    named = getattr(Durability, "named", lambda name: None if name == "fsync" else Durability.group(5, 1 << 20))
    run = getattr(serve, "run_event_loop", lambda main, loop: asyncio.run(main))

    # `kcoord serve` checks no records unless told (`--check-records`); an older kcoord has no such setting
    unchecked = {"check_records": False} if "check_records" in ClusterConfig.__dataclass_fields__ else {}

    async def main() -> None:
        options = ServeOptions(data_dir=Path(data_dir), port=0,
                               cluster=ClusterConfig(groups=GroupConfig(initial_rebalance_delay_ms=0),
                                                     durability=named(durability), **unchecked))
        server = KcoordServer(options)
        await server.start()
        tune_gc()  # as `kcoord serve` does once started
        address_queue.put(server.bootstrap)
        while not stop.is_set():
            await asyncio.sleep(0.1)
        await server.stop()

    run(main(), loop)


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of process `pid` (all its threads) and of its live child processes (a helper the
    server started) so far (/proc/PID/stat fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    children = 0.0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            kids = (task / "children").read_text().split()
        except OSError:
            continue
        for kid in kids:
            with contextlib.suppress(OSError):
                children += cpu_s(int(kid))
    return own + children


@dataclass
class Server:
    name: str
    bootstrap: str
    pid: int
    stop: Callable[[], None]
    others: tuple[Server, ...] = ()  # more independent nodes of this target (`kcoord2`), the connections split

    def nodes(self) -> list[tuple[str, int]]:
        """(bootstrap, pid) of every node of this target."""
        return [(self.bootstrap, self.pid)] + [(o.bootstrap, o.pid) for o in self.others]

    def stop_all(self) -> None:
        for server in (self, *self.others):
            server.stop()


def start_kcoord_pair(data_dir: Path, durability: str, loop: str = "default") -> Server:
    """Two `kcoord serve` nodes in two processes that share nothing: the most a design serving one broker per
    process could give on this machine (no marker or verification traffic between them, which a real split has)."""
    first = start_kcoord(data_dir / "a", durability, loop)
    second = start_kcoord(data_dir / "b", durability, loop)
    return Server("kcoord2", first.bootstrap, first.pid, first.stop, (second,))


def start_kcoord(data_dir: Path, durability: str, loop: str = "default") -> Server:
    addresses: multiprocessing.Queue[str] = multiprocessing.Queue()
    stop = multiprocessing.Event()
    process = multiprocessing.Process(target=serve_kcoord, args=(str(data_dir), durability, addresses, stop, loop),
                                      daemon=True)
    process.start()
    bootstrap = addresses.get(timeout=120)
    assert process.pid is not None

    def stopped() -> None:
        stop.set()
        process.join(60)

    return Server("kcoord", bootstrap, process.pid, stopped)


#: issue 31's compiled server (`impl/native/server/`, built by `make native`)
COMPILED = Path(__file__).resolve().parents[1] / "build" / "native" / "release" / "kcoord-native"


def start_compiled(data_dir: Path, durability: str) -> Server:
    """The compiled server, impl/native/server (the txn2 and txn workloads' requests only; see its source's header),
    in a process of its own."""
    if not COMPILED.exists():
        raise SystemExit(f"{COMPILED} is not built: run `make native` (it builds it with cargo)")
    process = subprocess.Popen([str(COMPILED), str(data_dir), durability], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    bootstrap = process.stdout.readline().strip()
    if not bootstrap:
        raise SystemExit(f"{COMPILED} exited ({process.wait()}) before listening")

    def stopped() -> None:
        process.terminate()
        process.wait(60)

    return Server("compiled", bootstrap, process.pid, stopped)


def start_kafka(data_dir: Path, durability: str) -> Server:
    from kcoord.conformance.reference.broker import ReferenceKafka, ReferenceOptions

    kafka = ReferenceKafka(ReferenceOptions(data_dir, port=0, nodes=1, settings=KAFKA_SETTINGS[durability]))
    kafka.start()
    return Server("kafka", kafka.bootstrap, kafka.processes[0].pid, kafka.stop)


#: target name -> how its nodes start (data dir, durability, kcoord's event loop)
STARTERS: dict[str, Callable[[Path, str, str], Server]] = {
    "kcoord": start_kcoord, "kcoord2": start_kcoord_pair,
    "kafka": lambda data_dir, durability, _: start_kafka(data_dir, durability),
    "compiled": lambda data_dir, durability, _: start_compiled(data_dir, durability)}


def _client(bootstrap: str, pids: list[int], workload: str, connections: int, first: int, tag: str, seconds: float,
            barrier: Any, out: multiprocessing.Queue[Counts], backoff_ms: float) -> None:
    out.put(asyncio.run(measure(bootstrap, workload, connections, tag, seconds, first_index=first, barrier=barrier,
                                cpu=lambda: sum(cpu_s(pid) for pid in pids), add_retry_backoff_ms=backoff_ms)))


@dataclass(frozen=True)
class Sample:
    per_s: float  # heartbeats or transactions per second (wall)
    requests_per_s: float
    cpu_us_per_request: float
    cpu_us_per_unit: float
    retries: int
    client_cpu_us_per_unit: float = 0.0  # the client processes' own CPU per unit of work, summed over them

    def ceiling(self, cores: int) -> float:
        """Units per second this machine could do at most if its `cores` ran only this server and these clients
        at these CPU costs: the bound a design that spreads the server over more threads or processes meets."""
        return cores * 1e6 / max(self.cpu_us_per_unit + self.client_cpu_us_per_unit, 1e-9)


def sample(server: Server, workload: str, connections: int, processes: int, tag: str, seconds: float,
           backoff_ms: float = ADD_PARTITIONS_RETRY_BACKOFF_MS) -> Sample:
    """One run: `connections` connections split over `processes` client processes."""
    processes = max(1, min(processes, connections))
    barrier = multiprocessing.Barrier(processes)
    out: multiprocessing.Queue[Counts] = multiprocessing.Queue()
    shares = [connections // processes + (i < connections % processes) for i in range(processes)]
    firsts = [sum(shares[:i]) for i in range(processes)]
    nodes = server.nodes()
    if processes < len(nodes):
        raise SystemExit(f"{server.name} has {len(nodes)} nodes: needs --client-processes >= {len(nodes)}")
    pids = [pid for _, pid in nodes]
    clients = [multiprocessing.Process(target=_client, args=(nodes[i % len(nodes)][0], pids, workload, n, first, tag,
                                                              seconds, barrier, out, backoff_ms))
               for i, (n, first) in enumerate(zip(shares, firsts, strict=True))]
    for c in clients:
        c.start()
    results = [out.get(timeout=600) for _ in clients]
    # the server's CPU over the measured window only (read by the clients when their clock starts and at their
    # last answer; the processes start together, so the longest span covers all of them)
    cpu = max(r.server_cpu_s for r in results)
    for c in clients:
        c.join(60)
    done = sum(r.done for r in results)
    requests = sum(r.requests for r in results)
    elapsed = statistics.mean(r.elapsed_s for r in results)
    client_cpu = sum(r.client_cpu_s for r in results)
    return Sample(done / elapsed, requests / elapsed, 1e6 * cpu / max(requests, 1), 1e6 * cpu / max(done, 1),
                  sum(r.retries for r in results), 1e6 * client_cpu / max(done, 1))


Results = dict[tuple[str, str, int, str], list[Sample]]  # (durability, workload, connections, target) -> runs


def _median(samples: list[Sample], attribute: str) -> float:
    return statistics.median(getattr(s, attribute) for s in samples)


def table(results: Results, runs: int, seconds: float) -> str:
    lines = ["| durability | workload | connections | kcoord /s | Kafka /s | kcoord/Kafka (wall) "
             "| kcoord CPU µs/request | Kafka CPU µs/request | kcoord per CPU-s | Kafka per CPU-s "
             "| kcoord/Kafka (per CPU-s) | retries kcoord / Kafka | clients CPU µs/unit kcoord / Kafka "
             "| machine ceiling /s kcoord / Kafka |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    cores = os.cpu_count() or 1
    keys = sorted({k[:3] for k in results}, key=lambda k: (DURABILITY.index(k[0]), WORKLOADS.index(k[1]), k[2]))
    for durability, workload, n in keys:
        k, j = results.get((durability, workload, n, "kcoord")), results.get((durability, workload, n, "kafka"))

        def cell(samples: list[Sample] | None, attribute: str, fmt: str = ",.0f") -> str:
            return format(_median(samples, attribute), fmt) if samples else "-"

        def ceiling(samples: list[Sample] | None) -> str:
            return f"{statistics.median(s.ceiling(cores) for s in samples):,.0f}" if samples else "-"

        def per_cpu(samples: list[Sample] | None) -> float | None:
            return 1e6 / _median(samples, "cpu_us_per_unit") if samples else None

        ratio = f"{_median(k, 'per_s') / _median(j, 'per_s'):.2f}" if k and j else "-"
        kp, jp = per_cpu(k), per_cpu(j)
        cpu_ratio = f"{kp / jp:.2f}" if kp and jp else "-"
        lines.append(f"| {durability} | {workload} ({UNIT[workload]}) | {n} | {cell(k, 'per_s')} | "
                     f"{cell(j, 'per_s')} | {ratio} | {cell(k, 'cpu_us_per_request')} | "
                     f"{cell(j, 'cpu_us_per_request')} | "
                     f"{kp or 0:,.0f} | {jp or 0:,.0f} | {cpu_ratio} | {cell(k, 'retries')} / {cell(j, 'retries')} | "
                     f"{cell(k, 'client_cpu_us_per_unit')} / {cell(j, 'client_cpu_us_per_unit')} | "
                     f"{ceiling(k)} / {ceiling(j)} |")
    return "\n".join(lines) + (f"\n\n(median of {runs} runs of {seconds:g} s each, the targets alternating; the "
                               f"machine ceiling is {cores} cores ÷ (server + clients CPU per unit), median over the "
                               "runs)")


def targets_table(results: Results) -> str:
    """Every target but Kafka, one row each (`kcoord2`: two independent nodes; `compiled`: the compiled server)."""
    cores = os.cpu_count() or 1
    lines = ["| durability | workload | connections | target (nodes) | /s | server CPU µs/unit (all nodes) "
             "| clients CPU µs/unit | machine ceiling /s |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for (durability, workload, n, target), samples in sorted(results.items()):
        if target != "kafka":
            lines.append(f"| {durability} | {workload} | {n} | {target} ({2 if target == 'kcoord2' else 1}) | "
                         f"{_median(samples, 'per_s'):,.0f} | {_median(samples, 'cpu_us_per_unit'):,.0f} | "
                         f"{_median(samples, 'client_cpu_us_per_unit'):,.0f} | "
                         f"{statistics.median(x.ceiling(cores) for x in samples):,.0f} |")
    return "\n".join(lines)


def _phase(durability: str, targets: list[str], workloads: list[str], connections: list[int], args: Any,
           tmp: Path, results: Results) -> None:
    servers: dict[str, Server] = {}
    try:
        for target in targets:
            data_dir = tmp / f"{target}-{durability}"
            servers[target] = STARTERS[target](data_dir, durability, args.loop)
            for bootstrap, _ in servers[target].nodes():
                asyncio.run(create_topics(bootstrap))
        run = 0
        for workload in workloads:
            if durability == "fsync" and not workload.startswith("txn") and "os" in args.durability:
                continue  # heartbeats write nothing: measured once, in the os phase
            for n in connections:
                for r in range(args.runs):
                    order = targets if r % 2 == 0 else targets[::-1]
                    for target in order:
                        run += 1
                        s = sample(servers[target], workload, n, args.client_processes, f"{durability}{run}",
                                   args.seconds, args.add_retry_backoff_ms)
                        results.setdefault((durability, workload, n, target), []).append(s)
                        print(f"{durability} {workload} x{n} {target}: {s.per_s:,.0f}/s, "
                              f"{s.cpu_us_per_request:,.0f} CPU µs/request, {s.cpu_us_per_unit:,.0f} CPU µs/unit, "
                              f"{s.client_cpu_us_per_unit:,.0f} clients' CPU µs/unit, {s.retries} retries, "
                              f"load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
    finally:
        for server in servers.values():
            server.stop_all()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="1 run of 1 s per configuration (a smoke test)")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--connections", default="8")
    parser.add_argument("--durability", default=",".join(DURABILITY))
    parser.add_argument("--targets", default=",".join(TARGETS),
                        help="kcoord, kafka, kcoord2: two kcoord nodes in two processes sharing nothing, the "
                             "client processes split between them (the bound of one process per broker), and "
                             "compiled: issue 31's compiled server, impl/native/server (txn2 and txn only; see "
                             "benchmarks/compiled_server.sh)")
    parser.add_argument("--client-processes", type=int, default=2)
    parser.add_argument("--loop", default="default", help="kcoord's event loop: default (kcoord serve's) or asyncio")
    parser.add_argument("--add-retry-backoff-ms", type=float, default=ADD_PARTITIONS_RETRY_BACKOFF_MS,
                        help="txn: the wait before re-sending an AddPartitionsToTxn answered CONCURRENT_TRANSACTIONS "
                             "(default: Kafka's Java client's 20 ms; 1 was the bench's own before issue 31's ninth "
                             "session)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.quick:
        args.runs, args.seconds = 1, 1.0
    targets = [t for t in args.targets.split(",") if t]
    workloads = [w for w in args.workloads.split(",") if w]
    connections = [int(n) for n in args.connections.split(",")]
    args.durability = [d for d in args.durability.split(",") if d]
    load_start = os.getloadavg()[0]
    results: Results = {}
    with tempfile.TemporaryDirectory(prefix="kcoord-bench-server-") as tmp:
        for durability in args.durability:
            _phase(durability, targets, workloads, connections, args, Path(tmp), results)
    print(table(results, args.runs, args.seconds))
    if {"kcoord2", "compiled"} & set(targets):
        print("\n" + targets_table(results))
    load = os.getloadavg()
    print(f"\nload average {load_start:.2f} at the start, {load[0]:.2f} at the end, on {os.cpu_count()} cpus; one node "
          f"each (kcoord2: two); {args.client_processes} client processes")
    if args.json:
        args.json.write_text(json.dumps({"/".join(map(str, k)): [s.__dict__ for s in ss] for k, ss in results.items()}
                                        | {"loadavg_1m": [load_start, load[0]]}, indent=1) + "\n")


if __name__ == "__main__":
    started = time.monotonic()
    main()
    print(f"({time.monotonic() - started:.0f} s)", file=sys.stderr)
