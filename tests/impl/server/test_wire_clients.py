"""Real clients (kafka-python, aiokafka, librdkafka) bootstrap against the wire server.

Only ApiVersions (built in) and the test fixture's minimal Metadata are served. With our ApiVersions capped at v2,
each client that opens with a newer ApiVersions must take the v0 UNSUPPORTED_VERSION fallback and retry.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

import pytest
from fake_broker import FakeBroker, minimal_metadata_handler
from wire_testkit import ThreadedServer, threaded_server

from kcoord.impl.server import Dispatcher, HandlerRegistry, VersionRange
from kcoord.impl.server.dispatch import ConnectionInfo, Outcome

pytestmark = [
    pytest.mark.wire,
    # kafka-python 3.0.12 loads its schemas with deprecated importlib.resources calls.
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning"),
]


class ApiVersionsSpy:
    """Wraps a Dispatcher; remembers the version of every ApiVersions request."""

    def __init__(self, inner: Dispatcher) -> None:
        self.inner = inner
        self.api_versions_seen: list[int] = []

    async def dispatch(self, frame: bytes, connection: ConnectionInfo) -> Outcome:
        if frame[:2] == b"\x00\x12":
            self.api_versions_seen.append(int.from_bytes(frame[2:4], "big"))
        return await self.inner.dispatch(frame, connection)


@contextlib.contextmanager
def bootstrap_server(api_versions_max: int) -> Iterator[tuple[ThreadedServer, ApiVersionsSpy]]:
    broker = FakeBroker(host="127.0.0.1", port=0, topics={"t1": 2})
    registry = HandlerRegistry()
    registry.register(3, minimal_metadata_handler(broker), VersionRange(0, 13))
    spy = ApiVersionsSpy(Dispatcher(registry, api_versions_range=VersionRange(0, api_versions_max)))
    with threaded_server(spy) as server:
        broker.port = server.address[1]
        yield server, spy


def check_fallback(spy: ApiVersionsSpy, api_versions_max: int) -> None:
    assert spy.api_versions_seen, "client sent no ApiVersions"
    if spy.api_versions_seen[0] > api_versions_max:
        assert any(v <= api_versions_max for v in spy.api_versions_seen[1:]), spy.api_versions_seen


@pytest.mark.parametrize("api_versions_max", [4, 2])
def test_kafka_python_bootstrap(api_versions_max: int) -> None:
    import kafka

    with bootstrap_server(api_versions_max) as (server, spy):
        consumer = kafka.KafkaConsumer(bootstrap_servers=server.bootstrap, request_timeout_ms=5000)
        try:
            assert consumer.topics() == {"t1"}
            assert consumer.partitions_for_topic("t1") == {0, 1}
        finally:
            consumer.close()
    check_fallback(spy, api_versions_max)


@pytest.mark.parametrize("api_versions_max", [4, 2])
def test_aiokafka_bootstrap(api_versions_max: int) -> None:
    import aiokafka

    async def run(bootstrap: str) -> set[str]:
        consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=bootstrap, request_timeout_ms=5000)
        await consumer.start()
        try:
            return set(await consumer.topics())
        finally:
            await consumer.stop()

    with bootstrap_server(api_versions_max) as (server, spy):
        assert asyncio.run(asyncio.wait_for(run(server.bootstrap), 20)) == {"t1"}
    check_fallback(spy, api_versions_max)


@pytest.mark.parametrize("api_versions_max", [4, 2])
def test_confluent_kafka_bootstrap(api_versions_max: int) -> None:
    from confluent_kafka.admin import AdminClient

    with bootstrap_server(api_versions_max) as (server, spy):
        admin = AdminClient({"bootstrap.servers": server.bootstrap, "broker.address.family": "v4"})
        metadata = admin.list_topics(topic="t1", timeout=10)
        assert sorted(metadata.topics["t1"].partitions) == [0, 1]
        assert [(b.id, b.host, b.port) for b in metadata.brokers.values()] == [(0, *server.address)]
    check_fallback(spy, api_versions_max)
    assert spy.api_versions_seen[0] == 3  # librdkafka opens with ApiVersions v3
