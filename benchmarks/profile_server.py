"""Where a `kcoord serve` request's CPU goes, by layer: a cProfile of the server process over a `bench_server.py`
workload, each function's own time put in one layer, scaled to the CPU per request measured without the profiler.

Run: ``.venv/bin/python benchmarks/profile_server.py [--workload classic|consumer|txn|txn2] [--connections 8]
[--seconds 4] [--durability os|fsync] [--top 25] [--timer wall|cpu] [--save PROFILE]``.

The server (one node, as in `bench_server.py`) runs in a child process twice: once plain, for the CPU per request
(user + system from /proc, as `bench_server.py` counts it), once under cProfile (wall-clock timer: a CPU-time timer is
a system call per function call and distorts far more), for the shares. The waits (epoll, fsync threads' joins) are
left out of the shares; the socket system calls are a layer of their own. A profile inflates many small calls more
than a few large ones, so the split is an estimate; the total is measured.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import multiprocessing
import multiprocessing.synchronize
import pstats
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_clients import create_topics
from bench_server import sample, serve_kcoord, start_kcoord

#: (substring of the file, or of "file:function") -> layer; the first match wins
LAYERS: tuple[tuple[str, str], ...] = (
    ("method 'send' of '_socket", "socket system calls"),
    ("method 'recv' of '_socket", "socket system calls"),
    ("method 'recv_into' of '_socket", "socket system calls"),
    ("posix.fsync", "fsync (on the loop's thread)"),
    ("posix.write", "log writes"),
    ("server/connection.py", "framing and connection"),
    ("server/frames.py", "framing and connection"),
    ("server/request_memory.py", "framing and connection"),
    ("server/fast_wire.py", "framing and connection"),
    ("asyncio/streams.py", "framing and connection"),
    ("codec.py:decode_request", "decode"),
    ("codec.py:read_header_start", "decode"),
    ("server/lengths.py", "decode"),
    ("server/nullability.py", "decode"),
    ("kio/serial/readers.py", "decode"),
    ("kio/serial/_parse.py", "decode"),
    ("server/fast_codec.py", "decode"),
    ("codec.py:encode_response", "encode"),
    ("kio/serial/writers.py", "encode"),
    ("kio/serial/_serialize.py", "encode"),
    ("server/dispatch.py", "dispatch"),
    ("server/metrics.py", "metrics"),
    ("prometheus_client", "metrics"),
    ("runtime/trace.py", "tracing"),
    ("server/handlers_", "handler (kio <-> coordinator messages)"),
    ("server/kio_build.py", "handler (kio <-> coordinator messages)"),
    ("server/responses.py", "handler (kio <-> coordinator messages)"),
    ("server/broker.py", "handler (kio <-> coordinator messages)"),
    ("server/serve.py", "cluster loop (poll, flush, deadlines)"),
    ("runtime/runtime.py", "cluster loop (poll, flush, deadlines)"),
    ("impl/cluster.py", "cluster loop (poll, flush, deadlines)"),
    ("partition/manager.py:poll", "cluster loop (poll, flush, deadlines)"),
    ("partition/manager.py:flush", "cluster loop (poll, flush, deadlines)"),
    ("partition/manager.py:next_deadline_ms", "cluster loop (poll, flush, deadlines)"),
    ("kcoord/impl", "coordinator, partitions and storage"),
    ("/impl/", "coordinator, partitions and storage"),
    ("kio/", "decode"),
    ("asyncio/", "event loop"),
    ("selectors.py", "event loop"),
    ("uvloop", "event loop"),
    ("_contextvars", "event loop"),
)
WAITS = ("method 'poll' of 'select.epoll'", "method 'acquire' of '_thread.lock'", "threading.py:wait",
         "concurrent/futures/_base.py:result", "posix.fsync")


def layer_of(location: str) -> str | None:
    if any(w in location for w in WAITS[:-1]):
        return None
    for pattern, layer in LAYERS:
        if pattern in location:
            return layer
    return "other (builtins, stdlib)"


def _profiled(data_dir: str, durability: str, addresses: multiprocessing.Queue[str],
              stop: multiprocessing.synchronize.Event, go: multiprocessing.synchronize.Event, out: str,
              timer: str) -> None:
    profile = cProfile.Profile(time.thread_time) if timer == "cpu" else cProfile.Profile()
    enabled = []
    # cProfile profiles the thread that enables it: `serve_kcoord`'s loop sleeps 0.1 s at a time on the loop's
    # thread, so the profile starts there, at the first such sleep once `go` is set (after the start-up)
    original = asyncio.sleep

    async def sleep_and_check(delay: float, result: object = None) -> object:
        if go.is_set() and not enabled:
            enabled.append(True)
            profile.enable()
        value = await original(delay, result)
        if stop.is_set():  # the server stops next (closing its logs fsyncs them): not a request's cost
            profile.disable()
        return value

    asyncio.sleep = sleep_and_check  # type: ignore[assignment]
    try:
        serve_kcoord(data_dir, durability, addresses, stop)
    finally:
        profile.disable()
        profile.dump_stats(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", default="classic", help="a bench_clients.py workload: classic, consumer, "
                        "txn (Transactions V1) or txn2 (V2: Produce v12, TxnOffsetCommit v5, EndTxn v5)")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--durability", default="os")
    parser.add_argument("--client-processes", type=int, default=2)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--save", type=Path, help="keep the profile (pstats format) in this file")
    parser.add_argument("--timer", choices=("wall", "cpu"), default="wall",
                        help="cProfile's clock: wall (cheap; a syscall that lets another process run is charged "
                             "the time it waited) or cpu (this thread's CPU time: a clock_gettime per call, "
                             "inflating small functions, but a preempted send is charged only its own CPU)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kcoord-profile-") as tmp:
        server = start_kcoord(Path(tmp) / "plain", args.durability)
        try:
            asyncio.run(create_topics(server.bootstrap))
            plain = [sample(server, args.workload, args.connections, args.client_processes, f"p{i}", args.seconds)
                     for i in range(3)]
        finally:
            server.stop()
        cpu_us = sorted(s.cpu_us_per_request for s in plain)[1]
        stats_file = str(Path(tmp) / "server.prof")
        addresses: multiprocessing.Queue[str] = multiprocessing.Queue()
        stop, go = multiprocessing.Event(), multiprocessing.Event()
        process = multiprocessing.Process(target=_profiled, args=(str(Path(tmp) / "profiled"), args.durability,
                                                                   addresses, stop, go, stats_file, args.timer))
        process.start()
        bootstrap = addresses.get(timeout=120)
        asyncio.run(create_topics(bootstrap))
        go.set()
        time.sleep(0.3)
        from bench_server import Server

        profiled = sample(Server("kcoord", bootstrap, process.pid or 0, lambda: None), args.workload,
                          args.connections, args.client_processes, "prof", args.seconds)
        stop.set()
        process.join(60)
        stats = pstats.Stats(stats_file)
        if args.save:
            stats.dump_stats(args.save)
    requests = profiled.requests_per_s * args.seconds
    by_layer: dict[str, float] = defaultdict(float)
    by_function: list[tuple[float, str]] = []
    for (file, line, function), (_cc, _nc, tottime, _ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        location = f"{file}:{function}" if file != "~" else function
        layer = layer_of(location)
        if layer is not None:
            by_layer[layer] += tottime
            by_function.append((tottime, f"{Path(file).name}:{line}({function})" if file != "~" else function))
    total = sum(by_layer.values())
    print(f"workload {args.workload} x{args.connections}, durability {args.durability}: {cpu_us:,.0f} CPU µs per "
          f"request unprofiled (median of 3: {', '.join(f'{s.cpu_us_per_request:,.0f}' for s in plain)}); "
          f"{requests:,.0f} requests profiled")
    print("\n| layer | share | CPU µs per request |\n|---|---:|---:|")
    for layer, seconds in sorted(by_layer.items(), key=lambda kv: -kv[1]):
        print(f"| {layer} | {100 * seconds / total:.1f} % | {cpu_us * seconds / total:,.1f} |")
    print(f"| **total** | 100 % | {cpu_us:,.1f} |")
    print(f"\ntop {args.top} functions by own time (profiled µs per request):")
    for seconds, name in sorted(by_function, reverse=True)[:args.top]:
        print(f"  {1e6 * seconds / max(requests, 1):8.1f}  {name}")


if __name__ == "__main__":
    main()
