"""What DescribeConfigs (api key 32) describes: the settings kcoord applies, by Kafka's names, types and sources.

Owns: `ConfigSource`, `ConfigType` and the resource types (Kafka's `ConfigEntry.ConfigSource`, `ConfigDef.Type` and
`ConfigResource.Type` ids), `ConfigEntry`, and `topic_configs` / `broker_configs`: for a topic, the log settings its
partitions really run with (data topics: `PartitionConfig`; the coordinators' `__consumer_offsets` and
`__transaction_state`: compacted logs with the cleaner's settings), each with its broker-level synonym; for a broker,
the `ClusterConfig` settings under their Kafka names. A value equal to Kafka's default is DEFAULT_CONFIG, one set
otherwise (`kcoord serve --set`) STATIC_BROKER_CONFIG, as Kafka reports a value from server.properties. Only what kcoord
applies is listed: Kafka lists every log setting of a topic (33 on 4.0.2), most of which (remote storage, flush,
index, throttles) kcoord has nothing behind. Topic configs given to CreateTopics are not kept (README), so no entry
is ever DYNAMIC_TOPIC_CONFIG.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from enum import IntEnum
from typing import Final

from ..cluster import OFFSETS_TOPIC, TXN_TOPIC, ClusterConfig
from ..runtime.cleaner import DEFAULT_CLEANING

__all__ = ("BROKER", "TOPIC", "ConfigEntry", "ConfigSource", "ConfigType", "broker_configs", "topic_configs")

TOPIC: Final = 2  # ConfigResource.Type.TOPIC
BROKER: Final = 4  # ConfigResource.Type.BROKER
COORDINATOR_SEGMENT_BYTES: Final = 100 * 1024 * 1024  # the coordinators' logs (offsets.topic.segment.bytes)


class ConfigSource(IntEnum):
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


class ConfigType(IntEnum):
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    name: str
    value: str
    type: ConfigType
    source: ConfigSource
    synonyms: tuple[tuple[str, str, ConfigSource], ...] = ()  # (name, value, source), the entry's own first


def _text(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return ",".join(map(str, value))
    return str(value)


def topic_configs(config: ClusterConfig, topic: str) -> list[ConfigEntry]:
    """The log settings of `topic` (an existing data topic or a coordinator topic), with their broker synonyms."""
    internal = topic in (OFFSETS_TOPIC, TXN_TOPIC)
    part = config.partitions
    cleaning = config.cleaning or DEFAULT_CLEANING
    entries: list[tuple[str, object, ConfigType, str | None]] = [
        ("cleanup.policy", "compact" if internal else "delete", ConfigType.LIST, "log.cleanup.policy"),
        ("compression.type", "producer", ConfigType.STRING, "compression.type"),  # batches are kept as produced
        ("max.message.bytes", part.max_message_bytes, ConfigType.INT, "message.max.bytes"),
        ("message.timestamp.type", "CreateTime", ConfigType.STRING, "log.message.timestamp.type"),
        ("min.insync.replicas", 1, ConfigType.INT, "min.insync.replicas"),  # one replica per partition
        ("retention.bytes", -1, ConfigType.LONG, "log.retention.bytes"),
        ("retention.ms", -1, ConfigType.LONG, "log.retention.ms"),  # kcoord never deletes a data segment
        ("segment.bytes", COORDINATOR_SEGMENT_BYTES if internal else part.segment_bytes, ConfigType.INT,
         "offsets.topic.segment.bytes" if topic == OFFSETS_TOPIC else
         "transaction.state.log.segment.bytes" if topic == TXN_TOPIC else "log.segment.bytes"),
    ]
    if internal:
        entries += [("delete.retention.ms", cleaning.tombstone_retention_ms, ConfigType.LONG,
                     "log.cleaner.delete.retention.ms"),
                    ("min.cleanable.dirty.ratio", cleaning.min_dirty_ratio, ConfigType.DOUBLE,
                     "log.cleaner.min.cleanable.ratio")]
    return [ConfigEntry(name, _text(value), kind, ConfigSource.DEFAULT_CONFIG,
                        ((synonym, _text(value), ConfigSource.DEFAULT_CONFIG),) if synonym else ())
            for name, value, kind, synonym in sorted(entries)]


#: Kafka's broker setting -> (ClusterConfig section, field, type): every setting kcoord reads
_BROKER: Final[dict[str, tuple[str, str, ConfigType]]] = {
    "auto.create.topics.enable": ("partitions", "auto_create_topics_enable", ConfigType.BOOLEAN),
    "num.partitions": ("partitions", "num_partitions", ConfigType.INT),
    "message.max.bytes": ("partitions", "max_message_bytes", ConfigType.INT),
    "log.segment.bytes": ("partitions", "segment_bytes", ConfigType.INT),
    "producer.id.expiration.ms": ("partitions", "producer_id_expiration_ms", ConfigType.INT),
    "producer.id.expiration.check.interval.ms": ("partitions", "producer_id_expiration_check_interval_ms",
                                                 ConfigType.INT),
    "transaction.partition.verification.enable": ("partitions", "transaction_partition_verification_enable",
                                                  ConfigType.BOOLEAN),
    "add.partitions.to.txn.retry.backoff.ms": ("partitions", "add_partitions_retry_backoff_ms", ConfigType.INT),
    "add.partitions.to.txn.retry.backoff.max.ms": ("partitions", "add_partitions_retry_max_ms", ConfigType.INT),
    "transaction.max.timeout.ms": ("txn", "max_timeout_ms", ConfigType.INT),
    "transactional.id.expiration.ms": ("txn", "id_expiration_ms", ConfigType.INT),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": ("txn", "abort_interval_ms", ConfigType.INT),
    "transaction.remove.expired.transaction.cleanup.interval.ms": ("txn", "expiration_interval_ms", ConfigType.INT),
    "transaction.state.log.num.partitions": ("txn", "num_partitions", ConfigType.INT),
    "offsets.topic.num.partitions": ("groups", "num_partitions", ConfigType.INT),
    "group.min.session.timeout.ms": ("groups", "min_session_timeout_ms", ConfigType.INT),
    "group.max.session.timeout.ms": ("groups", "max_session_timeout_ms", ConfigType.INT),
    "group.initial.rebalance.delay.ms": ("groups", "initial_rebalance_delay_ms", ConfigType.INT),
    "group.max.size": ("groups", "max_size", ConfigType.INT),
    "offset.metadata.max.bytes": ("groups", "offset_metadata_max_bytes", ConfigType.INT),
    "offsets.retention.check.interval.ms": ("groups", "offsets_retention_check_interval_ms", ConfigType.LONG),
    "group.consumer.session.timeout.ms": ("groups", "consumer_session_timeout_ms", ConfigType.INT),
    "group.consumer.heartbeat.interval.ms": ("groups", "consumer_heartbeat_interval_ms", ConfigType.INT),
    "group.consumer.max.size": ("groups", "consumer_max_size", ConfigType.INT),
    "group.consumer.assignors": ("groups", "consumer_assignors", ConfigType.LIST),
}
_MS_PER_MINUTE: Final = 60_000


def _broker_values(config: ClusterConfig) -> Iterator[tuple[str, object, object, ConfigType]]:
    """(name, value, Kafka's default, type) of every broker setting."""
    for name, (section, field, kind) in sorted(_BROKER.items()):
        owner = getattr(config, section)
        default = {f.name: f.default for f in dataclasses.fields(owner)}[field]
        yield name, getattr(owner, field), default, kind
    yield ("offsets.retention.minutes", config.groups.offsets_retention_ms // _MS_PER_MINUTE,
           type(config.groups)().offsets_retention_ms // _MS_PER_MINUTE, ConfigType.INT)


def broker_configs(config: ClusterConfig) -> list[ConfigEntry]:
    """A node's settings (every node of a `kcoord serve` runs the same `ClusterConfig`)."""
    out = []
    for name, value, default, kind in _broker_values(config):
        source = ConfigSource.DEFAULT_CONFIG if value == default else ConfigSource.STATIC_BROKER_CONFIG
        synonyms = [(name, _text(value), source)]
        if source is ConfigSource.STATIC_BROKER_CONFIG:
            synonyms.append((name, _text(default), ConfigSource.DEFAULT_CONFIG))
        out.append(ConfigEntry(name, _text(value), kind, source, tuple(synonyms)))
    return sorted(out, key=lambda e: e.name)

