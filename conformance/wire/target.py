"""Where the wire scenarios run, and the client-side helpers every scenario needs.

Owns: `Target` (bootstrap servers, a run id that prefixes every topic, group and transactional id so runs never
collide, timeouts, the client tuning, two optional hooks the broker's operator can provide: `restart` the whole
broker, `stop_node` one broker; and the `Observations` of the scenario running now), `ScenarioFailed`/
`ScenarioSkipped`, `wait_until`, and helpers built on kafka-python (topic creation, producing, reading a topic to its
end at an isolation level, a group's committed offsets).
Must not import: `kcoord.impl` (the broker is reached only through Kafka clients).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from .observe import Observations

if TYPE_CHECKING:
    import confluent_kafka

_log = logging.getLogger(__name__)

Record = tuple[int, int, bytes]  # (partition, offset, value)


class ScenarioFailed(AssertionError):
    """The broker did something a Kafka broker must not (or the clients could not make progress)."""


class ScenarioSkipped(Exception):
    """The scenario cannot run here (a client library is missing, a hook is not provided, one broker only)."""


def consumed(message: confluent_kafka.Message) -> Record:
    """A message confluent-kafka delivered without an error, as a `Record`.

    Its types leave partition, offset and value optional, for the error events `consume` also returns.
    """
    partition, offset, value = message.partition(), message.offset(), message.value()
    if partition is None or offset is None or value is None:
        raise ScenarioFailed(f"consumed a message without a partition, offset or value: {message!r}")
    return partition, offset, value


def wait_until(predicate: Callable[[], bool], timeout_s: float, what: str, interval_s: float = 0.05) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise ScenarioFailed(f"timed out after {timeout_s:.0f}s waiting until {what}")
        time.sleep(interval_s)


@dataclass(frozen=True, slots=True)
class Tuning:
    """Client settings that make rebalances quick; the broker's own limits still apply."""

    heartbeat_interval_ms: int = 200
    session_timeout_ms: int = 6_000  # Kafka's default group.min.session.timeout.ms
    max_poll_interval_ms: int = 30_000  # the rebalance timeout: how long a join waits for a silent member
    request_timeout_ms: int = 15_000


@dataclass(slots=True)
class Target:
    bootstrap: str
    run_id: str = field(default_factory=lambda: f"kc{uuid.uuid4().hex[:8]}")
    timeout_s: float = 60.0
    tuning: Tuning = field(default_factory=Tuning)
    restart: Callable[[], None] | None = None  # restart the broker; returns once it answers again
    stop_node: Callable[[int], None] | None = None  # stop one broker (node id), for failover scenarios
    #: what the scenario running now observed (the runner gives each scenario a fresh one)
    observations: Observations = field(default_factory=Observations)
    _admin: Any = None
    _admin_lock: threading.Lock = field(default_factory=threading.Lock)

    def name(self, *parts: str) -> str:
        return "-".join((self.run_id, *parts))

    # ------------------------------------------------------------------ admin

    def admin(self) -> Any:
        from kafka.admin import KafkaAdminClient

        with self._admin_lock:
            if self._admin is None:
                self._admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, client_id=self.name("admin"),
                                               request_timeout_ms=self.tuning.request_timeout_ms)
            return self._admin

    def reset_admin(self) -> None:
        """Forget the admin client (after a broker restart its connections are stale)."""
        with self._admin_lock:
            if self._admin is not None:
                with contextlib.suppress(Exception):
                    self._admin.close()
            self._admin = None

    def close(self) -> None:
        self.reset_admin()

    def tuned(self, **changes: int) -> Target:
        """The same target with other client settings (`Tuning`'s fields) and an admin client of its own, which
        `close` (or leaving `with target.tuned(...) as t:`) closes. A plain `dataclasses.replace` would share the
        admin client slot's value at the time of the copy and leave the copy's own admin client open: its IO thread
        then ran for the rest of the test session."""
        return replace(self, tuning=replace(self.tuning, **changes), _admin=None, _admin_lock=threading.Lock())

    def __enter__(self) -> Target:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def create_topic(self, name: str, partitions: int, replication_factor: int = 1) -> None:
        from kafka.admin import NewTopic
        from kafka.errors import TopicAlreadyExistsError

        with contextlib.suppress(TopicAlreadyExistsError):
            self.admin().create_topics([NewTopic(name, partitions, replication_factor)])
        wait_until(lambda: len(self.partitions_of(name)) == partitions, self.timeout_s,
                   f"topic {name} shows {partitions} partitions in Metadata")

    def partitions_of(self, topic: str) -> set[int]:
        meta = self.admin().describe_topics([topic])
        return {p["partition_index"] for t in meta if t["name"] == topic and not t["error_code"]
                for p in t["partitions"]}

    def addresses(self) -> dict[int, tuple[str, int]]:
        """node id -> (host, port) of every broker, as the cluster describes itself."""
        return {b["broker_id"]: (b["host"], b["port"]) for b in self.admin().describe_cluster()["brokers"]}

    def brokers(self) -> list[int]:
        return sorted(self.addresses())

    def committed(self, group: str, topic: str) -> dict[int, int]:
        """The group's committed offset per partition of `topic` (partitions without one are left out)."""
        from kafka.structs import TopicPartition

        parts = sorted(self.partitions_of(topic))
        found = self.admin().list_group_offsets({group: [TopicPartition(topic, p) for p in parts]}).get(group, {})
        return {tp.partition: om.offset for tp, om in found.items() if om.offset >= 0}

    # ------------------------------------------------------------------ data

    def produce(self, topic: str, items: Iterable[tuple[int, bytes]]) -> None:
        """Write each (partition, value) with an idempotent producer, acks=all; raise if any write fails."""
        import kafka

        producer = kafka.KafkaProducer(bootstrap_servers=self.bootstrap, client_id=self.name("setup-producer"),
                                       acks="all", enable_idempotence=True, linger_ms=5,
                                       request_timeout_ms=self.tuning.request_timeout_ms)
        try:
            futures = [producer.send(topic, value, partition=p) for p, value in items]
            for f in futures:
                f.get(timeout=self.timeout_s)
        finally:
            producer.close(timeout=10)

    def read(self, topic: str, isolation: str = "read_committed") -> list[Record]:
        """Every record of `topic` up to its end (the LSO under read_committed), without a group."""
        import kafka
        from kafka.structs import TopicPartition

        consumer = kafka.KafkaConsumer(bootstrap_servers=self.bootstrap, client_id=self.name("reader"),
                                       isolation_level=isolation, enable_auto_commit=False,
                                       request_timeout_ms=self.tuning.request_timeout_ms, fetch_max_wait_ms=100)
        try:
            tps = [TopicPartition(topic, p) for p in sorted(self.partitions_of(topic))]
            consumer.assign(tps)
            consumer.seek_to_beginning(*tps)
            deadline = time.monotonic() + self.timeout_s
            end = self._end_offsets(consumer, tps, deadline)
            out: list[Record] = []
            while any(consumer.position(tp) < end[tp] for tp in tps):
                if time.monotonic() > deadline:
                    raise ScenarioFailed(f"could not read {topic} to its end {end} in {self.timeout_s:.0f}s")
                for tp, records in consumer.poll(timeout_ms=200).items():
                    out.extend((tp.partition, r.offset, r.value) for r in records)
            return sorted(out)
        finally:
            consumer.close()

    @staticmethod
    def _end_offsets(consumer: Any, tps: list[Any], deadline: float) -> dict[Any, int]:
        """The partitions' end offsets, asked again while the broker cannot tell them yet: a loaded Kafka answered
        ListOffsets with a retriable error for longer than one request timeout right after a restart."""
        import kafka

        while True:
            try:
                return dict(consumer.end_offsets(tps))
            except kafka.errors.KafkaTimeoutError:
                if time.monotonic() > deadline:
                    raise
