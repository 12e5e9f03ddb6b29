"""Wire-layer throughput: ApiVersions round trips per second against a real `WireServer` on loopback.

Run: ``.venv/bin/python benchmarks/bench_wire.py [--seconds S] [--runs N] [--json PATH]``.
The server runs in its own process (so client and server do not share a GIL); the client is asyncio in this
process. Each configuration runs `--runs` times for `--seconds` each and reports the median:
  * 1 connection, one request in flight (request, wait, answer: pure latency-bound),
  * 8 connections, one request in flight each,
  * 1 connection, 32 pipelined requests in flight (what read-ahead buys).
Requests are ApiVersions v3 (flexible header; the answer lists the 23 APIs of `versions.CLIENT_VERSIONS`, ~150
bytes, as `kcoord serve` will); numbers depend on machine load, so the host's load average is printed with them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import struct
import time
from pathlib import Path

from kio.schema.api_versions.v3 import ApiVersionsRequest
from kio.static.protocol import ResponsePayload

from kcoord.impl.server import (
    CLIENT_VERSIONS,
    Dispatcher,
    HandlerRegistry,
    Request,
    ServerOptions,
    WireServer,
    encode_request,
)
from kcoord.impl.server.frames import encode_frame

REQUEST = ApiVersionsRequest(client_software_name="kcoord-bench", client_software_version="1.0")


def _serve(port_queue: multiprocessing.Queue[int], stop: multiprocessing.synchronize.Event) -> None:
    async def main() -> None:
        registry = HandlerRegistry()
        for api_key, versions in CLIENT_VERSIONS.items():
            if api_key != 18:
                registry.register(api_key, _never_called, versions)
        server = WireServer(Dispatcher(registry), ServerOptions())
        await server.start()
        port_queue.put(server.address[1])
        while not stop.is_set():
            await asyncio.sleep(0.1)
        await server.stop()

    asyncio.run(main())


async def _never_called(request: Request) -> ResponsePayload:
    raise AssertionError(f"the benchmark sends only ApiVersions, got api key {request.api_key}")


async def _read_answer(reader: asyncio.StreamReader) -> bytes:
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    return await reader.readexactly(size)


async def _one_connection(port: int, seconds: float, in_flight: int) -> int:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    frame = encode_frame(encode_request(REQUEST, correlation_id=1, client_id="bench"))
    done = 0
    deadline = time.perf_counter() + seconds
    try:
        writer.write(frame * in_flight)
        while time.perf_counter() < deadline:
            await _read_answer(reader)
            done += 1
            writer.write(frame)
        for _ in range(in_flight):
            await _read_answer(reader)
    finally:
        writer.close()
        await writer.wait_closed()
    return done


async def _run(port: int, connections: int, in_flight: int, seconds: float) -> float:
    started = time.perf_counter()
    counts = await asyncio.gather(*(_one_connection(port, seconds, in_flight) for _ in range(connections)))
    return sum(counts) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    port_queue: multiprocessing.Queue[int] = multiprocessing.Queue()
    stop = multiprocessing.Event()
    server = multiprocessing.Process(target=_serve, args=(port_queue, stop), daemon=True)
    server.start()
    try:
        port = port_queue.get(timeout=30)
        results = {}
        for name, connections, in_flight in (("1 connection", 1, 1), ("8 connections", 8, 1),
                                             ("1 connection, 32 pipelined", 1, 32)):
            rates = [asyncio.run(_run(port, connections, in_flight, args.seconds)) for _ in range(args.runs)]
            results[name] = statistics.median(rates)
            print(f"{name:>28}: {results[name]:>9,.0f} ApiVersions round trips/s "
                  f"(median of {args.runs} x {args.seconds:g}s; min {min(rates):,.0f}, max {max(rates):,.0f})")
    finally:
        stop.set()
        server.join(10)
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} on {os.cpu_count()} cpus")
    if args.json:
        args.json.write_text(json.dumps({"round_trips_per_s": results, "loadavg_1m": load[0]}, indent=1) + "\n")


if __name__ == "__main__":
    main()
