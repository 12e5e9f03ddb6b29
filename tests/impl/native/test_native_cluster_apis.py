"""The compiled server answers a client's first requests, ApiVersions and Metadata, as `kcoord serve` does: the same
requests sent to both, the answers compared field by field, but for what differs by construction — the port, each
topic's random id (each server's own, checked against its `partition.metadata`), the finalized features epoch (each
server's start time in ms) — and for ApiVersions' api list: the compiled server lists what it serves, derived here
from `SERVED` in its source (per api key, the range with the newest version), not kcoord serve's list.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import re
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import Any

import pytest
from kio.schema.api_versions import v0 as api_versions_v0
from kio.schema.api_versions import v1 as api_versions_v1
from kio.schema.api_versions import v2 as api_versions_v2
from kio.schema.api_versions import v3 as api_versions_v3
from kio.schema.api_versions import v4 as api_versions_v4
from kio.schema.errors import ErrorCode
from kio.schema.metadata import v1 as metadata_v1
from kio.schema.metadata import v9 as metadata_v9
from kio.schema.metadata import v12 as metadata_v12
from kio.schema.metadata import v13 as metadata_v13
from kio.schema.types import TopicName

from benchmarks.bench_clients import INPUT_TOPIC, PARTITIONS, TOPIC, Connection, create_topics
from benchmarks.bench_server import start_kcoord
from kcoord.impl.server.codec import decode_response

from .test_native_recovery import serving

WIRE_RS = Path(__file__).resolve().parents[3] / "impl" / "native" / "server" / "src" / "wire.rs"
#: differ by construction: where the server listens, the random topic ids, the features epoch (the start's time)
IGNORED = {"port", "topic_id", "finalized_features_epoch"}
#: (what was asked, the request, the version to send it as when not its own: an ApiVersions version not served)
Asked = tuple[str, Any, int | None]


def _plain(value: Any, ignored: set[str]) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name), ignored) for f in dataclasses.fields(value)
                if f.name not in ignored}
    if isinstance(value, tuple):
        return tuple(_plain(v, ignored) for v in value)
    return getattr(value, "value", value)


def served_ranges() -> list[tuple[int, int, int]]:
    """What the compiled server's ApiVersions must list: per api key of `SERVED` (wire.rs), its newest range."""
    source = WIRE_RS.read_text()
    table = source[source.index("const SERVED:"):]
    table = table[:table.index("];")]
    newest: dict[int, tuple[int, int]] = {}
    for key, low, high in re.findall(r"\((\d+), (\d+)\.\.=(\d+)\)", table):
        if int(key) not in newest or newest[int(key)][1] < int(high):
            newest[int(key)] = (int(low), int(high))
    assert newest, f"no SERVED table found in {WIRE_RS}"
    return [(key, low, high) for key, (low, high) in sorted(newest.items())]


def _requests() -> list[Asked]:
    software = {"client_software_name": "kcoord-test", "client_software_version": "1.0"}
    topics12 = tuple(metadata_v12.request.MetadataRequestTopic(topic_id=None, name=TopicName(n))
                     for n in (INPUT_TOPIC, "no-such-topic", "__transaction_state", TOPIC))
    return [
        ("ApiVersions v0", api_versions_v0.ApiVersionsRequest(), None),
        ("ApiVersions v1", api_versions_v1.ApiVersionsRequest(), None),
        ("ApiVersions v2", api_versions_v2.ApiVersionsRequest(), None),
        ("ApiVersions v3", api_versions_v3.ApiVersionsRequest(**software), None),
        ("ApiVersions v4", api_versions_v4.ApiVersionsRequest(**software), None),
        ("ApiVersions v4, a client software name Kafka refuses", api_versions_v4.ApiVersionsRequest(
            client_software_name="-kcoord", client_software_version="1.0"), None),
        ("ApiVersions v5 (not served: the v0 fallback)", api_versions_v4.ApiVersionsRequest(**software), 5),
        ("Metadata v1, every topic", metadata_v1.MetadataRequest(topics=None), None),
        ("Metadata v1, one topic", metadata_v1.MetadataRequest(
            topics=(metadata_v1.request.MetadataRequestTopic(name=TopicName(TOPIC)),)), None),
        ("Metadata v9, every topic", metadata_v9.MetadataRequest(
            topics=None, allow_auto_topic_creation=False, include_cluster_authorized_operations=False,
            include_topic_authorized_operations=False), None),
        ("Metadata v12, named topics (one unknown, one internal)", metadata_v12.MetadataRequest(
            topics=topics12, allow_auto_topic_creation=False, include_topic_authorized_operations=False), None),
        ("Metadata v13, every topic", metadata_v13.MetadataRequest(
            topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False), None),
    ]


async def _ask(bootstrap: str) -> list[tuple[str, int, Any]]:
    """Each request's answer (the version it is read as, the body), in order; then Metadata v12 asked for the topics
    by the ids the last answer gave."""
    await create_topics(bootstrap)
    conn = await Connection.open(bootstrap)
    answers: list[tuple[str, int, Any]] = []
    try:
        for what, body, version in _requests():
            frame = conn.frame(body)
            if version is not None:  # the version in the header, after the size and the api key
                frame = frame[:6] + version.to_bytes(2, "big") + frame[8:]
            read_as = 0 if version is not None else int(body.__version__)  # the fallback is a v0 answer
            answers.append((what, read_as, decode_response(int(body.__api_key__), read_as, await conn.raw(frame))[1]))
        ids = tuple(metadata_v12.request.MetadataRequestTopic(topic_id=t.topic_id, name=None)
                    for t in answers[-1][2].topics)
        by_id = metadata_v12.MetadataRequest(topics=ids, allow_auto_topic_creation=False,
                                             include_topic_authorized_operations=False)
        answers.append(("Metadata v12, the topics by id", 12, await conn.request(by_id)))
    finally:
        await conn.close()
    return answers


def _topic_ids(data_dir: Path) -> dict[str, uuid.UUID]:
    """Each topic's id, as its partition 0's `partition.metadata` says."""
    ids = {}
    for name in (TOPIC, INPUT_TOPIC):
        text = (data_dir / f"{name}-0" / "partition.metadata").read_text()
        encoded = re.search(r"topic_id: (\S+)", text)
        assert encoded is not None, text
        ids[name] = uuid.UUID(bytes=base64.urlsafe_b64decode(encoded.group(1) + "=="))
    return ids


def _check_topic_ids(answer: Any, ids: dict[str, uuid.UUID], who: str) -> None:
    for topic in getattr(answer, "topics", ()):
        if hasattr(topic, "topic_id") and topic.error_code == ErrorCode.none:
            assert topic.topic_id == ids[topic.name], f"{who}: topic {topic.name} answered id {topic.topic_id}, " \
                                                      f"its partition.metadata says {ids[topic.name]}"


def _both(binary: Path, tmp: Path) -> tuple[list[tuple[str, int, Any]], list[tuple[str, int, Any]]]:
    native = subprocess.Popen([str(binary), str(tmp / "native"), "os"], stdout=subprocess.PIPE, text=True)
    assert native.stdout is not None
    try:
        theirs = asyncio.run(_ask(native.stdout.readline().strip()))
    finally:
        native.terminate()
        native.wait()
        native.stdout.close()
    server = start_kcoord(tmp / "kcoord", "os")
    try:
        ours = asyncio.run(_ask(server.bootstrap))
    finally:
        server.stop()
    return ours, theirs


@pytest.mark.wire
def test_api_versions_and_metadata_answered_as_kcoord_serve(native_release: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="kcoord-cluster-apis-") as tmp:
        ours, theirs = _both(native_release / "kcoord-native", Path(tmp))
        native_ids, kcoord_ids = _topic_ids(Path(tmp) / "native"), _topic_ids(Path(tmp) / "kcoord")
    assert len(ours) == len(theirs) == 13
    advertised = served_ranges()
    for (what, _, expected), (_, _, got) in zip(ours, theirs, strict=True):
        ignored = IGNORED | ({"api_keys"} if hasattr(got, "api_keys") else set())
        assert _plain(got, ignored) == _plain(expected, ignored), f"{what}: the compiled server answered {got}, " \
                                                                 f"kcoord serve {expected}"
        if hasattr(got, "api_keys"):
            listed = [(int(k.api_key), int(k.min_version), int(k.max_version)) for k in got.api_keys]
            assert listed == ([] if expected.api_keys == () else advertised), f"{what}: listed {listed}"
        if getattr(got, "finalized_features", ()):  # an epoch of its start's time, as kcoord serve's
            assert int(got.finalized_features_epoch) > 0 and int(expected.finalized_features_epoch) > 0, what
        elif hasattr(got, "finalized_features_epoch"):
            assert int(got.finalized_features_epoch) == int(expected.finalized_features_epoch) == -1, what
        _check_topic_ids(got, native_ids, f"{what} (the compiled server)")
        _check_topic_ids(expected, kcoord_ids, f"{what} (kcoord serve)")


async def _metadata(bootstrap: str) -> Any:
    conn = await Connection.open(bootstrap)
    try:
        return await conn.request(metadata_v12.MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                                               include_topic_authorized_operations=False))
    finally:
        await conn.close()


@pytest.mark.wire
def test_a_restart_keeps_each_topics_id(native_release: Path, tmp_path: Path) -> None:
    """The compiled server restarted on its folder answers Metadata with the topics' ids it gave (read back from
    their `partition.metadata`), and so does kcoord serve started on a copy of that folder."""
    binary, data = native_release / "kcoord-native", tmp_path / "native"
    with serving(binary, data) as native:
        asyncio.run(create_topics(native.bootstrap))
        before = asyncio.run(_metadata(native.bootstrap))
        native.kill()
    assert {t.name for t in before.topics} == {TOPIC, INPUT_TOPIC}
    _check_topic_ids(before, _topic_ids(data), "the compiled server")
    with serving(binary, data) as native:
        after = asyncio.run(_metadata(native.bootstrap))
    assert _plain(after, {"port"}) == _plain(before, {"port"})
    shutil.copytree(data, tmp_path / "copy")
    server = start_kcoord(tmp_path / "copy", "os")
    try:
        kcoord = asyncio.run(_metadata(server.bootstrap))
    finally:
        server.stop()
    assert _plain(kcoord, {"port"}) == _plain(before, {"port"})


@pytest.mark.wire
def test_real_clients_read_the_topics(native_release: Path, tmp_path: Path) -> None:
    """confluent-kafka (librdkafka, whose Metadata v13 has 3 bytes after its body), kafka-python and aiokafka
    bootstrap from the compiled server (ApiVersions, then Metadata) and see its topics, their partitions led by it."""
    from aiokafka import AIOKafkaConsumer
    from confluent_kafka.admin import AdminClient
    from kafka import KafkaConsumer

    async def aiokafka_topics(bootstrap: str) -> set[str]:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
        await consumer.start()
        try:
            return set(await consumer.topics())
        finally:
            await consumer.stop()

    with serving(native_release / "kcoord-native", tmp_path) as native:
        asyncio.run(create_topics(native.bootstrap))
        port = int(native.bootstrap.rpartition(":")[2])
        described = AdminClient({"bootstrap.servers": native.bootstrap}).list_topics(timeout=10)
        assert described.cluster_id == "kcoord"
        assert [(b.id, b.port) for b in described.brokers.values()] == [(0, port)]
        assert {name: (len(t.partitions), t.error) for name, t in described.topics.items()} == {
            TOPIC: (PARTITIONS, None), INPUT_TOPIC: (PARTITIONS, None)}
        assert {p.leader for t in described.topics.values() for p in t.partitions.values()} == {0}
        consumer = KafkaConsumer(bootstrap_servers=native.bootstrap)
        try:
            assert consumer.topics() == {TOPIC, INPUT_TOPIC}
            assert consumer.partitions_for_topic(TOPIC) == set(range(PARTITIONS))
        finally:
            consumer.close()
        assert asyncio.run(aiokafka_topics(native.bootstrap)) == {TOPIC, INPUT_TOPIC}
