"""Consumer-group members of each client library, polling in the background, reporting ownership and records.

Owns: `Member` (start, stop, what it owns, what it consumed, what went wrong) and one implementation per library:
kafka-python and confluent-kafka members each poll in their own thread (the clients are not thread-safe, so every
client call — poll, commit, close — happens in that thread); aiokafka members are tasks on one shared event loop
thread (`AioLoop`). Each member commits the offsets it consumed after every non-empty poll (commit failures during
a rebalance are expected and only counted), reports every assignment and revocation to the `OwnershipLog`, and on
stop reports the revocation of everything it still owns *before* closing the client.
`group_protocol="consumer"` (confluent-kafka only) selects KIP-848's protocol.
Must not import: `kcoord.impl`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from .ownership import OwnershipLog
from .raw import api_versions, split_bootstrap
from .target import Record, ScenarioFailed, ScenarioSkipped, Target, consumed, wait_until

_log = logging.getLogger(__name__)
CLIENTS = ("kafka-python", "aiokafka", "confluent-kafka")


class Member:
    """One group member. Subclasses implement `_run` (the client loop, on its own thread) or, for asyncio clients,
    override `start` and run `_run_async` as a task."""

    def __init__(self, target: Target, name: str, group: str, topic: str, log: OwnershipLog, *,
                 instance_id: str | None = None, group_protocol: str = "classic") -> None:
        self.target = target
        self.name = name
        self.group = group
        self.topic = topic
        self.log = log
        self.instance_id = instance_id
        self.group_protocol = group_protocol
        self.records: list[Record] = []
        self.owned: set[int] = set()
        self.errors: list[str] = []
        self.client: Any = None  # the library's consumer, once made (for its generation: `looks.generation`)
        self.commit_failures = 0
        self.transient_errors = 0  # retriable errors a poll raised (the member polls again)
        self.started = threading.Event()
        self.stopped = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()

    # --- what the scenarios read (thread-safe) ---

    def assignment(self) -> frozenset[int]:
        with self._lock:
            return frozenset(self.owned)

    def consumed(self) -> list[Record]:
        with self._lock:
            return list(self.records)

    # --- called from the client's thread or task ---

    def _assigned(self, partitions: Iterable[int]) -> None:
        parts = set(partitions)
        with self._lock:
            self.owned |= parts
        self.log.record(self.name, "assign", parts)

    def _revoked(self, partitions: Iterable[int]) -> None:
        parts = set(partitions)
        self.log.record(self.name, "revoke", parts)
        with self._lock:
            self.owned -= parts

    def _got(self, records: Iterable[Record]) -> None:
        with self._lock:
            self.records.extend(records)

    def _before_close(self) -> None:
        self._revoked(self.assignment())

    # --- lifecycle ---

    def start(self) -> Member:
        """Run the client (`_run`) on a thread of its own; a failure is kept for `stop` to report."""
        threading.Thread(target=self._thread, name=self.name, daemon=True).start()
        return self

    def _thread(self) -> None:
        try:
            self._run()
        except Exception as e:
            self._failed(e)
        finally:
            self.stopped.set()

    def _run(self) -> None:
        raise NotImplementedError

    def _failed(self, e: Exception) -> None:
        _log.exception("member %s failed", self.name)
        self.errors.append(f"{type(e).__name__}: {e}")

    def stop(self, timeout_s: float | None = None) -> None:
        self._stop.set()
        if not self.stopped.wait(timeout_s or self.target.timeout_s):
            raise ScenarioFailed(f"member {self.name} did not stop")
        if self.errors:
            raise ScenarioFailed(f"member {self.name} failed: {self.errors[0]}")


# ---------------------------------------------------------------------------------------------- kafka-python


class KafkaPythonMember(Member):
    def _run(self) -> None:
        import kafka
        from kafka import ConsumerRebalanceListener

        member = self
        tuning = self.target.tuning

        class Listener(ConsumerRebalanceListener):  # type: ignore[misc]  # kafka-python has no types
            def on_partitions_revoked(self, revoked: Any) -> None:
                member._revoked(tp.partition for tp in revoked)

            def on_partitions_assigned(self, assigned: Any) -> None:
                member._assigned(tp.partition for tp in assigned)

        consumer = kafka.KafkaConsumer(
            bootstrap_servers=self.target.bootstrap, client_id=self.name, group_id=self.group,
            group_instance_id=self.instance_id, enable_auto_commit=False, auto_offset_reset="earliest",
            isolation_level="read_committed", heartbeat_interval_ms=tuning.heartbeat_interval_ms,
            session_timeout_ms=tuning.session_timeout_ms, max_poll_interval_ms=tuning.max_poll_interval_ms,
            request_timeout_ms=tuning.request_timeout_ms, fetch_max_wait_ms=100, retry_backoff_ms=50)
        self.client = consumer
        try:
            consumer.subscribe([self.topic], listener=Listener())
            self._await_topic_metadata(consumer)
            self.started.set()
            while not self._stop.is_set():
                try:
                    batch = consumer.poll(timeout_ms=100)
                except kafka.errors.KafkaError as e:
                    # kafka-python 3 raises a retriable error (e.g. the connection refused while the broker
                    # restarts) out of poll; an application polls again, as the other clients do internally.
                    if not e.retriable:
                        raise
                    self.transient_errors += 1
                    time.sleep(0.1)
                    continue
                if batch:
                    self._got((tp.partition, r.offset, r.value) for tp, rs in batch.items() for r in rs)
                    try:
                        consumer.commit()
                    except kafka.errors.KafkaError:
                        self.commit_failures += 1
        finally:
            self._before_close()
            consumer.close()

    def _await_topic_metadata(self, consumer: Any) -> None:
        await_topic_metadata(consumer, self.topic, self.target.timeout_s)


def await_topic_metadata(consumer: Any, topic: str, timeout_s: float) -> None:
    """For a kafka-python consumer just subscribed to `topic`: fetch the topic's metadata before the first poll —
    subscribe, then this, then poll is the order that avoids a kafka-python 3.0.12 bug (/work/notes/findings.md,
    issue 8 serve2).

    The bug: a leader that assigned without the topic's partitions (metadata not fetched yet) rejoins once a metadata
    update changes its `_metadata_snapshot`. That rejoin is not recorded in `rejoin_needed`; the join task sets
    `_assignment_snapshot` when it assigns, so `need_rejoin()` turns False while SyncGroup is still in flight. If
    `poll(timeout_ms)` expires in that window, the next poll sees no rejoin needed and never awaits the join task
    again: its assignment is dropped, heartbeats stay disabled, and the member owns nothing forever. A metadata
    update *after* `subscribe` puts the topic into the snapshot before the first JoinGroup, so the first assignment
    is complete and no snapshot-triggered rejoin follows. (Fetching before `subscribe` does the opposite: the
    snapshot stays empty until the next refresh, so every leader takes the buggy rejoin.)"""
    deadline = time.monotonic() + timeout_s
    # a fresh consumer knows no topics (its bootstrap Metadata asks for none), so this always fetches
    while not consumer.partitions_for_topic(topic):
        if time.monotonic() > deadline:
            raise ScenarioFailed(f"no partition metadata for {topic} after {timeout_s:g}s")
        time.sleep(0.05)


# ---------------------------------------------------------------------------------------------- confluent-kafka


class ConfluentMember(Member):
    def _config(self) -> dict[str, Any]:
        tuning = self.target.tuning
        config: dict[str, Any] = {
            "bootstrap.servers": self.target.bootstrap, "client.id": self.name, "group.id": self.group,
            "enable.auto.commit": False, "auto.offset.reset": "earliest", "isolation.level": "read_committed",
            "broker.address.family": "v4", "fetch.wait.max.ms": 100, "topic.metadata.refresh.interval.ms": 2000,
            "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500}
        if self.group_protocol == "consumer":
            config["group.protocol"] = "consumer"
        else:
            config.update({"heartbeat.interval.ms": tuning.heartbeat_interval_ms,
                           "session.timeout.ms": tuning.session_timeout_ms,
                           "max.poll.interval.ms": tuning.max_poll_interval_ms})
        if self.instance_id is not None:
            config["group.instance.id"] = self.instance_id
        return config

    def _run(self) -> None:
        import confluent_kafka as ck

        consumer = ck.Consumer(self._config())
        self.client = consumer
        try:
            consumer.subscribe([self.topic], on_assign=lambda c, ps: self._assigned(p.partition for p in ps),
                               on_revoke=lambda c, ps: self._revoked(p.partition for p in ps),
                               on_lost=lambda c, ps: self._revoked(p.partition for p in ps))
            self.started.set()
            while not self._stop.is_set():
                messages = consumer.consume(num_messages=500, timeout=0.1)
                good = [m for m in messages if m.error() is None]
                for m in messages:
                    error = m.error()
                    if error is not None and error.fatal():
                        raise ScenarioFailed(f"fatal consumer error: {error}")
                if good:
                    self._got(consumed(m) for m in good)
                    try:
                        consumer.commit(asynchronous=False)
                    except ck.KafkaException:
                        self.commit_failures += 1
        finally:
            self._before_close()
            consumer.close()


# ---------------------------------------------------------------------------------------------- aiokafka


class AioLoop:
    """One event loop in a thread for all aiokafka members (and producers) of a scenario."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="aiokafka-loop", daemon=True)
        self.thread.start()

    def run(self, coroutine: Any, timeout_s: float = 60.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout_s)

    def spawn(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        with contextlib.suppress(RuntimeError):
            self.loop.close()


class AiokafkaMember(Member):
    loop: AioLoop | None = None  # set by `make_member`

    def start(self) -> Member:
        assert self.loop is not None, "aiokafka members need an AioLoop"
        self.loop.spawn(self._task())
        return self

    async def _task(self) -> None:
        try:
            await self._run_async()
        except Exception as e:
            self._failed(e)
        finally:
            self.stopped.set()

    async def _run_async(self) -> None:
        import aiokafka
        from aiokafka.errors import KafkaError

        member = self
        tuning = self.target.tuning

        class Listener(aiokafka.ConsumerRebalanceListener):  # type: ignore[misc]
            async def on_partitions_revoked(self, revoked: Any) -> None:
                member._revoked(tp.partition for tp in revoked)

            async def on_partitions_assigned(self, assigned: Any) -> None:
                member._assigned(tp.partition for tp in assigned)

        consumer = aiokafka.AIOKafkaConsumer(
            bootstrap_servers=self.target.bootstrap, client_id=self.name, group_id=self.group,
            enable_auto_commit=False, auto_offset_reset="earliest", isolation_level="read_committed",
            heartbeat_interval_ms=tuning.heartbeat_interval_ms, session_timeout_ms=tuning.session_timeout_ms,
            max_poll_interval_ms=tuning.max_poll_interval_ms, request_timeout_ms=tuning.request_timeout_ms,
            fetch_max_wait_ms=100, retry_backoff_ms=50)
        self.client = consumer
        consumer.subscribe([self.topic], listener=Listener())
        await consumer.start()
        try:
            self.started.set()
            while not self._stop.is_set():
                batch = await consumer.getmany(timeout_ms=100)
                if batch:
                    self._got((tp.partition, r.offset, r.value) for tp, rs in batch.items() for r in rs)
                    try:
                        await consumer.commit()
                    except KafkaError:
                        self.commit_failures += 1
        finally:
            self._before_close()
            await consumer.stop()


# ---------------------------------------------------------------------------------------------- factory


def client_available(client: str) -> bool:
    module = {"kafka-python": "kafka", "aiokafka": "aiokafka", "confluent-kafka": "confluent_kafka"}[client]
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def require(client: str) -> None:
    if not client_available(client):
        raise ScenarioSkipped(f"{client} is not installed")


def require_consumer_protocol(target: Target) -> None:
    """Skips the scenario unless the target's first broker advertises ConsumerGroupHeartbeat (KIP-848)."""
    from kio.schema.consumer_group_heartbeat.v0 import ConsumerGroupHeartbeatRequest

    if int(ConsumerGroupHeartbeatRequest.__api_key__) not in api_versions(split_bootstrap(target.bootstrap)[0]):
        raise ScenarioSkipped("the broker does not advertise ConsumerGroupHeartbeat (KIP-848)")


class MemberFactory:
    """Makes members of one client library; owns the aiokafka loop when one is needed. Use as a context manager:
    leaving it stops every member still running."""

    def __init__(self, client: str, target: Target, log: OwnershipLog) -> None:
        require(client)
        self.client = client
        self.target = target
        self.log = log
        self.members: list[Member] = []
        self.loop = AioLoop() if client == "aiokafka" else None

    def make(self, name: str, group: str, topic: str, **options: Any) -> Member:
        kind: Callable[..., Member] = {"kafka-python": KafkaPythonMember, "aiokafka": AiokafkaMember,
                                       "confluent-kafka": ConfluentMember}[self.client]
        member = kind(self.target, self.target.name(name), group, topic, self.log, **options)
        if isinstance(member, AiokafkaMember):
            member.loop = self.loop
        self.members.append(member)
        return member.start()

    def __enter__(self) -> MemberFactory:
        return self

    def __exit__(self, *exc: object) -> None:
        for member in self.members:
            if not member.stopped.is_set():
                with contextlib.suppress(Exception):
                    member.stop(15)
        if self.loop is not None:
            self.loop.close()


def wait_settled(members: list[Member], partitions: set[int], timeout_s: float, log: OwnershipLog) -> None:
    """Until the members' assignments are disjoint, cover `partitions`, and each member owns at least one."""
    def settled() -> bool:
        sets = [m.assignment() for m in members]
        union: set[int] = set().union(*sets)
        return (sum(len(s) for s in sets) == len(union) and union == partitions
                and all(sets if len(members) <= len(partitions) else [True]))

    names = [m.name for m in members]
    try:
        wait_until(settled, timeout_s, f"{names} split partitions {sorted(partitions)} between them")
    except ScenarioFailed as e:
        raise ScenarioFailed(f"{e}; assignments now {[sorted(m.assignment()) for m in members]}, errors "
                             f"{[m.errors for m in members if m.errors]}") from None
    problems = log.violations()
    if problems:
        raise ScenarioFailed(f"ownership violated: {problems[:3]}")


def drain_queue(q: queue.Queue[Any]) -> list[Any]:
    out = []
    while True:
        try:
            out.append(q.get_nowait())
        except queue.Empty:
            return out
