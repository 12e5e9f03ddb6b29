"""A `kcoord serve` node's CPU per request without the sockets: `Dispatcher.dispatch` called in process on the frames
`bench_clients.py` sends, and where that CPU goes (cProfile, cumulative, by function).

Run: ``.venv/bin/python benchmarks/profile_dispatch.py [--workload consumer|classic] [--groups 8] [--requests 20000]
[--runs 5] [--profile] [--top 30]``.

A `KcoordServer` (os durability, Kafka 4.0's defaults except `group.initial.rebalance.delay.ms=0`, as
`bench_server.py` runs it) starts in this process; `--groups` groups of one member each are set up through its
dispatcher (the joins wait for their writes, on the server's own loop), then each group's steady heartbeat frame is
dispatched in turn `--requests` times, synchronously: a heartbeat that changes nothing is answered without waiting,
and one that would wait is an error here. The figure is CPU µs (process_time) per dispatched request: decode,
handler, coordinator, encode, metrics — everything `bench_server.py` measures except the socket calls and the event
loop. The answers' error codes are checked.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_clients import TOPIC, _ms
from kio.schema.consumer_group_heartbeat.v0 import ConsumerGroupHeartbeatRequest
from kio.schema.heartbeat.v4 import HeartbeatRequest
from kio.schema.join_group.v5 import JoinGroupRequest
from kio.schema.join_group.v5.request import JoinGroupRequestProtocol
from kio.schema.sync_group.v3 import SyncGroupRequest
from kio.schema.sync_group.v3.request import SyncGroupRequestAssignment
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i32

from kcoord.impl.server.codec import decode_response, encode_request
from kcoord.impl.server.dispatch import ConnectionInfo, Dispatcher, Reply

_ERROR_AT = struct.Struct(">h")
INFO = ConnectionInfo(1, "127.0.0.1", 50000)


class Node:
    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher
        self.correlation_id = 0

    def frame(self, body: Any) -> bytes:
        self.correlation_id += 1
        return encode_request(body, correlation_id=self.correlation_id, client_id="kcoord-bench")

    async def request(self, body: Any) -> Any:
        outcome = await self.dispatcher.dispatch(self.frame(body), INFO)
        assert isinstance(outcome, Reply), outcome
        return decode_response(body.__api_key__, body.__version__, outcome.payload)[1]


async def _setup_consumer(node: Node, group: str) -> bytes:
    from kcoord.impl.server.codec import decode_response as _  # noqa: F401 (imported above; kept for clarity)

    for _attempt in range(100):
        joined = await node.request(ConsumerGroupHeartbeatRequest(
            group_id=GroupId(group), member_id="", member_epoch=i32(0), rebalance_timeout=_ms(60_000),
            subscribed_topic_names=(TopicName(TOPIC),), topic_partitions=()))
        if joined.error_code.value == 0:
            break
        await asyncio.sleep(0.05)
    else:
        raise RuntimeError(f"{group}: the join kept failing ({joined.error_code})")
    return node.frame(ConsumerGroupHeartbeatRequest(group_id=GroupId(group), member_id=joined.member_id,
                                                    member_epoch=joined.member_epoch, topic_partitions=None))


async def _setup_classic(node: Node, group: str) -> bytes:
    member_id = ""
    for _attempt in range(100):
        join = await node.request(JoinGroupRequest(
            group_id=GroupId(group), session_timeout=_ms(45_000), rebalance_timeout=_ms(60_000), member_id=member_id,
            group_instance_id=None, protocol_type="consumer",
            protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),)))
        member_id = join.member_id
        if join.error_code.value == 0:
            break
    sync = await node.request(SyncGroupRequest(
        group_id=GroupId(group), generation_id=join.generation_id, member_id=member_id, group_instance_id=None,
        assignments=(SyncGroupRequestAssignment(member_id=member_id, assignment=b""),)))
    assert sync.error_code.value == 0, sync
    return node.frame(HeartbeatRequest(group_id=GroupId(group), generation_id=join.generation_id,
                                       member_id=member_id, group_instance_id=None))


def _dispatch_now(dispatcher: Dispatcher, frame: bytes) -> bytes:
    steps = dispatcher.dispatch(frame, INFO)
    try:
        steps.send(None)
    except StopIteration as stop:
        outcome = stop.value
    else:
        steps.close()
        raise RuntimeError("a steady heartbeat waited: it is not answered at once")
    assert isinstance(outcome, Reply)
    return outcome.payload


def run(frames: list[bytes], dispatcher: Dispatcher, requests: int) -> float:
    """CPU µs per request over `requests` dispatches (the frames in turn)."""
    n = len(frames)
    start = time.process_time()
    for i in range(requests):
        payload = _dispatch_now(dispatcher, frames[i % n])
        # response header v1 (correlation id, empty tags), throttle time, then the error code
        if _ERROR_AT.unpack_from(payload, 9)[0] != 0:
            raise RuntimeError(f"heartbeat answered error {_ERROR_AT.unpack_from(payload, 9)[0]}")
    return 1e6 * (time.process_time() - start) / requests


async def main_async(args: argparse.Namespace) -> None:
    from bench_clients import create_topics
    from bench_server import serve_kcoord  # noqa: F401 (same configuration, built here in process)

    from kcoord.impl.cluster import ClusterConfig
    from kcoord.impl.group.config import GroupConfig
    from kcoord.impl.runtime.process import tune_gc
    from kcoord.impl.server.serve import KcoordServer, ServeOptions
    from kcoord.impl.storage.log import Durability

    with tempfile.TemporaryDirectory(prefix="kcoord-profile-dispatch-") as tmp:
        server = KcoordServer(ServeOptions(data_dir=Path(tmp), port=0, cluster=ClusterConfig(
            groups=GroupConfig(initial_rebalance_delay_ms=0), durability=Durability.named("os"))))
        await server.start()
        tune_gc()
        try:
            await create_topics(server.bootstrap)
            node = Node(server.listeners[0].dispatcher)
            setup = _setup_consumer if args.workload == "consumer" else _setup_classic
            frames = [await setup(node, f"bench-{args.workload}-{i}") for i in range(args.groups)]
            run(frames, node.dispatcher, 1000)  # warm up
            figures = [run(frames, node.dispatcher, args.requests) for _ in range(args.runs)]
            print(f"{args.workload}: {statistics.median(figures):.1f} CPU µs per dispatched request, best "
                  f"{min(figures):.1f} (median of {args.runs}: {', '.join(f'{f:.1f}' for f in figures)})")
            if args.profile:
                profile = cProfile.Profile()
                profile.enable()
                run(frames, node.dispatcher, args.requests)
                profile.disable()
                stats = pstats.Stats(profile)
                if args.save:
                    stats.dump_stats(args.save)
                stats.sort_stats("cumulative").print_stats(args.top)
        finally:
            await server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", choices=("consumer", "classic"), default="consumer")
    parser.add_argument("--groups", type=int, default=8)
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--save", type=Path, help="keep the profile (pstats format) in this file")
    parser.add_argument("--top", type=int, default=30)
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
