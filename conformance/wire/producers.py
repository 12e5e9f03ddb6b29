"""Transactional consume-transform-produce of each client library behind one blocking interface.

Owns: `TxnClient` (init, begin, produce and wait for the ack, consume from the input topic as a subscribed group
member, send the consumed positions to the transaction, commit, abort, rewind, close) and one implementation per
library. Client errors become `Fenced` (the client reports that a newer producer with the same transactional id
fenced it) or `TxnFailed` (anything else), so scenarios read the same for every client.
kafka-python and confluent-kafka are driven from the caller's thread; aiokafka's coroutines run on an `AioLoop`.
Must not import: `kcoord.impl`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from .members import AioLoop, await_topic_metadata, require
from .target import Record, Target, consumed

_FENCED_WORDS = ("fenced", "producerfenced", "invalid_producer_epoch", "invalidproducerepoch")


class Fenced(Exception):
    """A newer producer with the same transactional id took over."""


class TxnFailed(Exception):
    """Any other transactional failure."""


def _translate(e: BaseException) -> Exception:
    """`Fenced` when `e`, or an exception it was raised from, says the producer was fenced; else `TxnFailed`.

    The causes count: confluent-kafka may call a delivery callback while its fatal "fenced" KafkaException is
    already set, and CPython then raises a SystemError from that exception."""
    chain: list[BaseException] = []
    cause: BaseException | None = e
    while cause is not None and cause not in chain:
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__
    for item in chain:
        text = f"{type(item).__name__}: {item}".lower().replace(" ", "")
        if any(word in text for word in _FENCED_WORDS):
            return Fenced(f"{type(item).__name__}: {item}")
    return TxnFailed(f"{type(e).__name__}: {e}")


class TxnClient:
    """A transactional producer, plus (when `input_topic` is given) a read_committed consumer in `group`."""

    def __init__(self, target: Target, transactional_id: str, input_topic: str | None = None,
                 group: str | None = None) -> None:
        self.target = target
        self.transactional_id = transactional_id
        self.input_topic = input_topic
        self.group = group
        self._closed = False

    def _call(self, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except (Fenced, TxnFailed):
            raise
        except Exception as e:
            raise _translate(e) from e

    # the interface; each implementation overrides the underscored versions
    def init(self) -> None:
        self._call(self._init)

    def begin(self) -> None:
        self._call(self._begin)

    def produce(self, topic: str, value: bytes, partition: int = 0) -> None:
        self._call(lambda: self._produce(topic, value, partition))

    def consume(self, count: int, timeout_s: float | None = None) -> list[Record]:
        """At least `count` input records (or fewer once `timeout_s` passed)."""
        deadline = time.monotonic() + (timeout_s or self.target.timeout_s)
        out: list[Record] = []
        while len(out) < count and time.monotonic() < deadline:
            out.extend(self._call(self._poll))
        return out

    @property
    def input(self) -> str:
        """The input topic (only a client made with one consumes, sends offsets or rewinds)."""
        assert self.input_topic is not None, "this client was made without an input topic"
        return self.input_topic

    def send_offsets(self, offsets: dict[int, int]) -> None:
        assert self.input_topic is not None and self.group is not None
        self._call(lambda: self._send_offsets(offsets))

    def commit(self) -> None:
        self._call(self._commit)

    def abort(self) -> None:
        self._call(self._abort)

    def rewind(self, offsets: dict[int, int]) -> None:
        self._call(lambda: self._rewind(offsets))

    def close(self) -> None:
        """Close the client (once; later calls do nothing)."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):  # closing a fenced or broken client may fail; nothing to do about it
            self._close()

    def _init(self) -> None: raise NotImplementedError
    def _begin(self) -> None: raise NotImplementedError
    def _produce(self, topic: str, value: bytes, partition: int) -> None: raise NotImplementedError
    def _poll(self) -> list[Record]: raise NotImplementedError
    def _send_offsets(self, offsets: dict[int, int]) -> None: raise NotImplementedError
    def _commit(self) -> None: raise NotImplementedError
    def _abort(self) -> None: raise NotImplementedError
    def _rewind(self, offsets: dict[int, int]) -> None: raise NotImplementedError
    def _close(self) -> None: raise NotImplementedError


def _close_kafka_python(producer: Any, timeout_s: float) -> None:
    """Close a kafka-python producer even when records are still pending for a broker that is gone: its
    `close(timeout)` flushes first, and a flush that times out raises before the sender thread is force-closed,
    leaving that thread to retry for the rest of the process (and the producer's `__del__` to fail again)."""
    import kafka.errors

    try:
        producer.close(timeout=timeout_s)
    except kafka.errors.KafkaTimeoutError:
        sender = getattr(producer, "_sender", None)
        if sender is not None:
            sender.force_close()
            sender.join(timeout_s)
        producer._closed = True  # what close() sets once done: its __del__ does not try again


class KafkaPythonTxn(TxnClient):
    def __init__(self, target: Target, transactional_id: str, input_topic: str | None = None,
                 group: str | None = None) -> None:
        super().__init__(target, transactional_id, input_topic, group)
        require("kafka-python")
        import kafka

        t = target.tuning
        self.producer = kafka.KafkaProducer(bootstrap_servers=target.bootstrap, transactional_id=transactional_id,
                                            client_id=transactional_id, request_timeout_ms=t.request_timeout_ms,
                                            retry_backoff_ms=50, transaction_timeout_ms=60_000)
        self.consumer = None
        if input_topic is not None:
            self.consumer = kafka.KafkaConsumer(
                input_topic, bootstrap_servers=target.bootstrap, group_id=group, client_id=f"{transactional_id}-in",
                enable_auto_commit=False, auto_offset_reset="earliest", isolation_level="read_committed",
                heartbeat_interval_ms=t.heartbeat_interval_ms, session_timeout_ms=t.session_timeout_ms,
                max_poll_interval_ms=t.max_poll_interval_ms, fetch_max_wait_ms=100, retry_backoff_ms=50)
            await_topic_metadata(self.consumer, input_topic, target.timeout_s)

    def _init(self) -> None:
        self.producer.init_transactions()

    def _begin(self) -> None:
        self.producer.begin_transaction()

    def _produce(self, topic: str, value: bytes, partition: int) -> None:
        # A bounded wait for the delivery, as an application sets delivery.timeout.ms: kafka-python 3.0.12 can lose
        # an AddPartitionsToTxn whose coordinator went away (connection refused → FindCoordinator → the new
        # coordinator is found, but the request is never sent again), and the record then waits forever. The
        # timeout turns that into TxnFailed, and the caller starts a new producer, which fences and aborts.
        delivery_timeout_s = min(self.target.timeout_s, 1.5 * self.target.tuning.request_timeout_ms / 1000)
        self.producer.send(topic, value, partition=partition).get(timeout=delivery_timeout_s)

    def _poll(self) -> list[Record]:
        assert self.consumer is not None
        batch = self.consumer.poll(timeout_ms=200)
        return [(tp.partition, r.offset, r.value) for tp, rs in batch.items() for r in rs]

    def _send_offsets(self, offsets: dict[int, int]) -> None:
        from kafka.structs import OffsetAndMetadata, TopicPartition

        assert self.consumer is not None
        self.producer.send_offsets_to_transaction(
            {TopicPartition(self.input_topic, p): OffsetAndMetadata(o, "", -1) for p, o in offsets.items()},
            self.consumer.group_metadata())

    def _commit(self) -> None:
        self.producer.commit_transaction()

    def _abort(self) -> None:
        self.producer.abort_transaction()

    def _rewind(self, offsets: dict[int, int]) -> None:
        from kafka.structs import TopicPartition

        assert self.consumer is not None
        for p, o in offsets.items():
            self.consumer.seek(TopicPartition(self.input_topic, p), o)

    def _close(self) -> None:
        try:
            if self.consumer is not None:
                self.consumer.close()
        finally:
            _close_kafka_python(self.producer, 5)


class ConfluentTxn(TxnClient):
    def __init__(self, target: Target, transactional_id: str, input_topic: str | None = None,
                 group: str | None = None) -> None:
        super().__init__(target, transactional_id, input_topic, group)
        require("confluent-kafka")
        import confluent_kafka as ck

        t = target.tuning
        base = {"bootstrap.servers": target.bootstrap, "broker.address.family": "v4", "reconnect.backoff.ms": 50,
                "reconnect.backoff.max.ms": 500}
        self.producer = ck.Producer({**base, "transactional.id": transactional_id, "client.id": transactional_id,
                                     "transaction.timeout.ms": 60_000, "linger.ms": 0})
        self.consumer = ck.Consumer({**base, "group.id": group or f"{transactional_id}-unused",
                                     "client.id": f"{transactional_id}-in", "enable.auto.commit": False,
                                     "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                                     "heartbeat.interval.ms": t.heartbeat_interval_ms,
                                     "session.timeout.ms": t.session_timeout_ms, "fetch.wait.max.ms": 100})
        if input_topic is not None:
            self.consumer.subscribe([input_topic])
        self.timeout_s = target.timeout_s

    def _init(self) -> None:
        self.producer.init_transactions(self.timeout_s)

    def _begin(self) -> None:
        self.producer.begin_transaction()

    def _produce(self, topic: str, value: bytes, partition: int) -> None:
        errors: list[Any] = []
        self.producer.produce(topic, value, partition=partition,
                              on_delivery=lambda err, msg: errors.append(err) if err is not None else None)
        left = self.producer.flush(self.timeout_s)
        if left or errors:
            raise TxnFailed(f"produce to {topic}-{partition} not acknowledged: {errors or 'timeout'}")

    def _poll(self) -> list[Record]:
        out = []
        for m in self.consumer.consume(num_messages=500, timeout=0.2):
            error = m.error()
            if error is None:
                out.append(consumed(m))
            elif error.fatal():
                raise TxnFailed(str(error))
        return out

    def _send_offsets(self, offsets: dict[int, int]) -> None:
        import confluent_kafka as ck

        self.producer.send_offsets_to_transaction([ck.TopicPartition(self.input, p, o)
                                                   for p, o in offsets.items()],
                                                  self.consumer.consumer_group_metadata(), self.timeout_s)

    def _commit(self) -> None:
        self.producer.commit_transaction(self.timeout_s)

    def _abort(self) -> None:
        self.producer.abort_transaction(self.timeout_s)

    def _rewind(self, offsets: dict[int, int]) -> None:
        import confluent_kafka as ck

        for p, o in offsets.items():
            self.consumer.seek(ck.TopicPartition(self.input, p, o))

    def _close(self) -> None:
        try:
            self.consumer.close()
        finally:
            self.producer.flush(1)


class AiokafkaTxn(TxnClient):
    def __init__(self, target: Target, transactional_id: str, input_topic: str | None = None,
                 group: str | None = None, loop: AioLoop | None = None) -> None:
        super().__init__(target, transactional_id, input_topic, group)
        require("aiokafka")
        self.loop = loop or AioLoop()
        self._own_loop = loop is None
        self.producer: Any = None
        self.consumer: Any = None
        self.loop.run(self._open())

    async def _open(self) -> None:
        import aiokafka

        t = self.target.tuning
        self.producer = aiokafka.AIOKafkaProducer(bootstrap_servers=self.target.bootstrap,
                                                  transactional_id=self.transactional_id,
                                                  client_id=self.transactional_id,
                                                  request_timeout_ms=t.request_timeout_ms, retry_backoff_ms=50)
        if self.input_topic is not None:
            self.consumer = aiokafka.AIOKafkaConsumer(
                self.input_topic, bootstrap_servers=self.target.bootstrap, group_id=self.group,
                client_id=f"{self.transactional_id}-in", enable_auto_commit=False, auto_offset_reset="earliest",
                isolation_level="read_committed", heartbeat_interval_ms=t.heartbeat_interval_ms,
                session_timeout_ms=t.session_timeout_ms, fetch_max_wait_ms=100, retry_backoff_ms=50)
            await self.consumer.start()

    def _run(self, coroutine: Any) -> Any:
        return self.loop.run(coroutine, self.target.timeout_s)

    def _init(self) -> None:
        self._run(self.producer.start())  # aiokafka's start() is InitProducerId

    def _begin(self) -> None:
        self._run(self.producer.begin_transaction())

    def _produce(self, topic: str, value: bytes, partition: int) -> None:
        self._run(self.producer.send_and_wait(topic, value, partition=partition))

    def _poll(self) -> list[Record]:
        async def poll() -> Any:
            return await self.consumer.getmany(timeout_ms=200)

        batch = self._run(poll())
        return [(tp.partition, r.offset, r.value) for tp, rs in batch.items() for r in rs]

    def _send_offsets(self, offsets: dict[int, int]) -> None:
        from aiokafka.structs import OffsetAndMetadata, TopicPartition

        self._run(self.producer.send_offsets_to_transaction(
            {TopicPartition(self.input_topic, p): OffsetAndMetadata(o, "") for p, o in offsets.items()},
            self.group))

    def _commit(self) -> None:
        self._run(self.producer.commit_transaction())

    def _abort(self) -> None:
        self._run(self.producer.abort_transaction())

    def _rewind(self, offsets: dict[int, int]) -> None:
        from aiokafka.structs import TopicPartition

        async def seek() -> None:
            for p, o in offsets.items():
                self.consumer.seek(TopicPartition(self.input_topic, p), o)

        self._run(seek())

    def _close(self) -> None:
        async def close() -> None:
            try:
                if self.consumer is not None:
                    await self.consumer.stop()
            finally:
                await self.producer.stop()

        try:
            self._run(close())
        finally:
            if self._own_loop:
                self.loop.close()


TXN_CLIENTS: dict[str, type[TxnClient]] = {"kafka-python": KafkaPythonTxn, "aiokafka": AiokafkaTxn,
                                           "confluent-kafka": ConfluentTxn}


def make_txn_client(client: str, target: Target, transactional_id: str, input_topic: str | None = None,
                    group: str | None = None) -> TxnClient:
    require(client)
    return TXN_CLIENTS[client](target, transactional_id, input_topic, group)
