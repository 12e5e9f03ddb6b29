"""Record which (api key, version) each real client sends in its normal flows, against the fake broker.

Run: `.venv/bin/python tests/impl/server/record_client_versions.py [--json out.json]`. Prints one line per
(client, flow, api, versions). The server advertises every version kio has, so each client picks its own maximum.
This is a tool, not a test; `test_wire_clients.py` checks the bootstrap part of it on every run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import sys
import threading
import time
import traceback
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from fake_broker import FakeBroker, recording_registry
from kio.schema.index import api_key_map

from kcoord.impl.server import Dispatcher, ServerOptions, WireServer
from kcoord.impl.server.dispatch import ConnectionInfo, Outcome

TOPIC = "t1"
GROUP = "g1"


class CapturingDispatcher:
    """Wraps a Dispatcher and keeps the first raw frame of each (api key, version): the fuzz corpus."""

    def __init__(self, inner: Dispatcher) -> None:
        self.inner = inner
        self.frames: dict[tuple[int, int], bytes] = {}

    async def dispatch(self, frame: bytes, connection: ConnectionInfo) -> Outcome:
        if len(frame) >= 4:
            key = (int.from_bytes(frame[0:2], "big", signed=True), int.from_bytes(frame[2:4], "big", signed=True))
            self.frames.setdefault(key, frame)
        return await self.inner.dispatch(frame, connection)


@contextlib.contextmanager
def running_broker(corpus: dict[tuple[int, int], bytes] | None = None) -> Iterator[FakeBroker]:
    """The recording fake broker on a free loopback port, served from a background thread."""
    loop = asyncio.new_event_loop()
    broker = FakeBroker(host="127.0.0.1", port=0)
    capturing = CapturingDispatcher(Dispatcher(recording_registry(broker)))
    server = WireServer(capturing, ServerOptions())
    loop.run_until_complete(server.start())
    broker.port = server.address[1]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield broker
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
        if corpus is not None:
            corpus.update(capturing.frames)


def wait_for_assignment(poll: Callable[[], object], assignment: Callable[[], object], who: str,
                        timeout_s: float = 10.0) -> None:
    """Poll until the consumer has partitions; a flow that never gets any must fail, not be recorded as ok."""
    deadline = time.monotonic() + timeout_s
    while not assignment():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{who}: no partitions assigned after {timeout_s:.0f}s")
        poll()


# --- kafka-python --------------------------------------------------------------------------------------------


def kafka_python_flows(bootstrap: str) -> dict[str, Callable[[], None]]:
    import kafka
    from kafka.admin import KafkaAdminClient
    from kafka.structs import OffsetAndMetadata, TopicPartition

    def idempotent() -> None:
        p = kafka.KafkaProducer(bootstrap_servers=bootstrap, client_id="kp-idem", enable_idempotence=True, acks="all")
        p.send(TOPIC, b"v").get(timeout=10)
        p.close(timeout=5)

    def transactional() -> None:
        p = kafka.KafkaProducer(bootstrap_servers=bootstrap, client_id="kp-txn", transactional_id="tx-kp")
        p.init_transactions()
        p.begin_transaction()
        p.send(TOPIC, b"v").get(timeout=10)
        p.send_offsets_to_transaction({TopicPartition(TOPIC, 0): OffsetAndMetadata(5, "", -1)}, GROUP)
        p.commit_transaction()
        p.close(timeout=5)

    def consumer() -> None:
        c = kafka.KafkaConsumer(bootstrap_servers=bootstrap, client_id="kp-consumer", group_id=GROUP,
                                isolation_level="read_committed", enable_auto_commit=False,
                                auto_offset_reset="earliest", fetch_max_wait_ms=100, heartbeat_interval_ms=200)
        try:
            # Subscribe, then learn the topic's partitions, then poll: a metadata update after `subscribe` puts the
            # topic into kafka-python's metadata snapshot before the first JoinGroup, so the leader's first
            # assignment is complete. Otherwise (polling at once, or fetching metadata *before* subscribing) the
            # leader rejoins when the snapshot changes, and kafka-python 3.0.12 drops that rejoin's assignment if a
            # poll times out while its SyncGroup is in flight (see conformance/wire/members.py).
            c.subscribe([TOPIC])
            if not c.partitions_for_topic(TOPIC):
                raise RuntimeError(f"no metadata for topic {TOPIC}")
            wait_for_assignment(lambda: c.poll(timeout_ms=200), c.assignment, "kafka-python consumer")
            for tp in sorted(c.assignment()):
                c.position(tp)  # resolves the reset offset now: ListOffsets (no committed offset in the fake)
            c.commit({TopicPartition(TOPIC, 0): OffsetAndMetadata(1, "", -1)})
            c.poll(timeout_ms=500)
        finally:
            c.close()

    def admin() -> None:
        a = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kp-admin")
        try:
            a.list_groups()
            a.describe_groups([GROUP])
            a.list_group_offsets({GROUP: None})
            a.list_transactions()
            a.describe_transactions(["tx-kp"])
            a.describe_producers([TopicPartition(TOPIC, 0)])
        finally:
            a.close()

    return {"idempotent produce": idempotent, "transactional + send_offsets": transactional,
            "classic group consumer (read_committed)": consumer, "admin groups": admin}


# --- aiokafka ------------------------------------------------------------------------------------------------


def aiokafka_flows(bootstrap: str) -> dict[str, Callable[[], None]]:
    import aiokafka
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.structs import OffsetAndMetadata, TopicPartition

    async def idempotent() -> None:
        p = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, client_id="ak-idem", enable_idempotence=True)
        await p.start()
        await p.send_and_wait(TOPIC, b"v")
        await p.stop()

    async def transactional() -> None:
        p = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, client_id="ak-txn", transactional_id="tx-ak")
        await p.start()
        async with p.transaction():
            await p.send_and_wait(TOPIC, b"v")
            await p.send_offsets_to_transaction({TopicPartition(TOPIC, 0): OffsetAndMetadata(5, "")}, GROUP)
        await p.stop()

    async def consumer() -> None:
        c = aiokafka.AIOKafkaConsumer(TOPIC, bootstrap_servers=bootstrap, client_id="ak-consumer", group_id=GROUP,
                                      isolation_level="read_committed", enable_auto_commit=False,
                                      auto_offset_reset="earliest", fetch_max_wait_ms=100)
        await c.start()
        deadline = time.monotonic() + 10
        while not c.assignment():
            if time.monotonic() > deadline:
                raise RuntimeError("aiokafka consumer: no partitions assigned after 10s")
            await c.getmany(timeout_ms=200)
        for tp in sorted(c.assignment()):
            await c.position(tp)  # resolves the reset offset: ListOffsets
        await c.getmany(timeout_ms=300)
        await c.commit({TopicPartition(TOPIC, 0): 1})
        await c.stop()

    async def admin() -> None:
        a = AIOKafkaAdminClient(bootstrap_servers=bootstrap, client_id="ak-admin")
        await a.start()
        await a.list_consumer_groups()
        await a.describe_consumer_groups([GROUP])
        await a.list_consumer_group_offsets(GROUP)
        await a.close()

    def sync(coro_fn: Callable[[], object]) -> Callable[[], None]:
        return lambda: asyncio.run(asyncio.wait_for(coro_fn(), 20))  # type: ignore[arg-type]

    return {"idempotent produce": sync(idempotent), "transactional + send_offsets": sync(transactional),
            "classic group consumer (read_committed)": sync(consumer), "admin groups": sync(admin)}


# --- confluent-kafka (librdkafka) ----------------------------------------------------------------------------


def confluent_flows(bootstrap: str) -> dict[str, Callable[[], None]]:
    import confluent_kafka as ck
    from confluent_kafka.admin import AdminClient

    base = {"bootstrap.servers": bootstrap, "broker.address.family": "v4"}

    def idempotent() -> None:
        p = ck.Producer({**base, "client.id": "ck-idem", "enable.idempotence": True})
        p.produce(TOPIC, b"v")
        p.flush(10)

    def consume(client_id: str, extra: dict[str, object], *, require_assignment: bool = True) -> ck.Consumer:
        c = ck.Consumer({**base, "client.id": client_id, "group.id": GROUP, "isolation.level": "read_committed",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest", **extra})
        c.subscribe([TOPIC])
        if require_assignment:
            wait_for_assignment(lambda: c.poll(0.2), c.assignment, f"librdkafka {client_id}")
        else:  # the fake's ConsumerGroupHeartbeat is too simple to complete KIP-848 reconciliation
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline and not c.assignment():
                c.poll(0.2)
        c.poll(0.3)
        return c

    def transactional() -> None:
        p = ck.Producer({**base, "client.id": "ck-txn", "transactional.id": "tx-ck"})
        p.init_transactions(10)
        p.begin_transaction()
        p.produce(TOPIC, b"v")
        p.flush(10)
        c = ck.Consumer({**base, "group.id": GROUP, "client.id": "ck-txn-consumer"})
        p.send_offsets_to_transaction([ck.TopicPartition(TOPIC, 0, 5)], c.consumer_group_metadata(), 10)
        p.commit_transaction(10)
        c.close()

    def classic() -> None:
        c = consume("ck-consumer", {})
        c.commit(offsets=[ck.TopicPartition(TOPIC, 0, 1)], asynchronous=False)
        c.close()

    def kip848() -> None:
        c = consume("ck-consumer-848", {"group.protocol": "consumer"}, require_assignment=False)
        with contextlib.suppress(ck.KafkaException):
            c.commit(offsets=[ck.TopicPartition(TOPIC, 0, 1)], asynchronous=False)
        c.close()

    def admin() -> None:
        a = AdminClient({**base, "client.id": "ck-admin"})
        a.list_consumer_groups(request_timeout=10).result()
        with contextlib.suppress(Exception):
            a.list_transactions(request_timeout=10).result()  # type: ignore[attr-defined]
        for f in a.describe_consumer_groups([GROUP], request_timeout=10).values():
            with contextlib.suppress(Exception):
                f.result()
        for f in a.list_consumer_group_offsets([ck.ConsumerGroupTopicPartitions(GROUP)],
                                               request_timeout=10).values():
            with contextlib.suppress(Exception):
                f.result()

    return {"idempotent produce": idempotent, "transactional + send_offsets": transactional,
            "classic group consumer (read_committed)": classic, "KIP-848 consumer (group.protocol=consumer)": kip848,
            "admin groups": admin}


CLIENTS = {"kafka-python": kafka_python_flows, "aiokafka": aiokafka_flows, "confluent-kafka": confluent_flows}


def run_all(clients: list[str], corpus: list[dict[str, object]]) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for client in clients:
        flows_of = CLIENTS[client]
        frames: dict[tuple[int, int], bytes] = {}
        with running_broker(frames) as broker:
            bootstrap = f"127.0.0.1:{broker.port}"
            for flow, run in flows_of(bootstrap).items():
                before = len(broker.seen)
                error = ""
                try:
                    run()
                except Exception as e:  # the flow may fail late against a fake; record what was sent so far
                    error = f"{type(e).__name__}: {e}"[:200]
                    traceback.print_exc()
                seen: dict[int, set[int]] = defaultdict(set)
                for _client_id, api_key, version in broker.seen[before:]:
                    seen[api_key].add(version)
                rows.append({"client": client, "flow": flow, "error": error,
                             "apis": {api_key_map[k]: sorted(v) for k, v in sorted(seen.items())}})
                print(client, "|", flow, "|", error or "ok", "|", rows[-1]["apis"], flush=True)
        corpus.extend({"client": client, "api_key": k, "api_version": v, "frame_hex": f.hex()}
                      for (k, v), f in sorted(frames.items()))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", type=Path)
    parser.add_argument("--corpus", type=Path, help="write the first captured frame of each api/version here")
    parser.add_argument("clients", nargs="*", default=list(CLIENTS))
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    corpus: list[dict[str, object]] = []
    rows = run_all(args.clients, corpus)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    if args.corpus:
        args.corpus.write_text(json.dumps(corpus, indent=0) + "\n")


if __name__ == "__main__":
    main()
