"""The partition side of one node: its data topics, and the requests a broker answers for them.

Owns `PartitionManager`:
- topics: `create_topic`, `describe_topics` (Metadata, with auto-creation), discovery of existing partition
  directories (`<topic>-<n>/` holding `partition.metadata`) under `data_dir` on start;
- `produce` (one partition of a Produce request): the front door (`validation.py`), KIP-890 verification or the
  Transactions V2 add (`verification.py`: the batch waits for the transaction coordinator, then is appended with the
  guard, or refused), the append (`DataPartition.produce`), and the answer once `acks` allows (-1: durable; 0 and 1:
  appended); with `deferred`, a request's batches to verify wait for `verify_deferred`, which asks once for all;
- `fetch`, `list_offsets`, `describe_producers`;
- `write_txn_markers` (`MarkerTarget`): control batches on the data partitions this node holds; any other partition
  (an unknown topic, or `__consumer_offsets`, which the group coordinator holds: see `BrokerMarkerTarget`) is
  UNKNOWN_TOPIC_OR_PARTITION here;
- time: `poll` (group commit, durability waits, producer expiration), `next_deadline_ms`, `flush`, `close`.

Answers that do not come from the spec (front-door validation and unknown partitions, as Kafka 4.0's `ReplicaManager`
does them; none appends; the translation of the transaction coordinator's answer is `verification.py`'s table):

| situation                                                                      | answer                          |
|--------------------------------------------------------------------------------|---------------------------------|
| acks not in {-1, 0, 1}                                                         | INVALID_REQUIRED_ACKS           |
| unknown topic or partition (Produce never auto-creates)                        | UNKNOWN_TOPIC_OR_PARTITION      |
| a partition not started: its log is damaged where recovery may not cut it      | KAFKA_STORAGE_ERROR             |
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re
import shutil
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from ..errors import Errors
from ..interfaces import MarkerResult, TopicPartition, TxnMarker, TxnOperation, TxnVerifier
from ..runtime.clock import Clock
from ..runtime.completion import Completion
from ..runtime.trace import Tracer
from ..statemachine import MachineTable
from ..storage._files import DamagedFileError, SyncLater, fsync_dir
from ..storage.batch import RecordBatch
from ..storage.log import Durability, FlushTicket, LogCorruptedError, PartitionLog
from .data_log import PARTITION_METADATA_FILE, create_partition_dir, read_partition_metadata
from .partition import Appended, DataPartition, Verification
from .types import (
    INTERNAL_TOPICS,
    AppendOrigin,
    FetchResult,
    IsolationLevel,
    ListOffsetsResult,
    PartitionConfig,
    PartitionMetadata,
    PartitionProducers,
    ProduceResult,
    TopicMetadata,
)
from .validation import Rejected, decode_produce_batch
from .verification import PendingWrite, Verifications

_log = logging.getLogger(__name__)
_TOPIC_NAME: Final = re.compile(r"[a-zA-Z0-9._-]+")
_MAX_TOPIC_NAME_LENGTH: Final = 249
_DIR_NAME: Final = re.compile(r"(.+)-(\d+)")
CLUSTER_METADATA_TOPIC: Final = "__cluster_metadata"  # KRaft's metadata log: Kafka refuses to create it
MAX_RECORDS_PER_USER_OP: Final = 10_000  # Kafka's controller writes at most this many records for one request


def topic_name_problem(name: str) -> str | None:
    """Kafka's `Topic.validate`: why `name` is not a legal topic name (its InvalidTopicException message), or None.
    The length is Java's: UTF-16 code units."""
    if not name:
        reason = "the empty string is not allowed"
    elif name in (".", ".."):
        reason = f"'{name}' is not allowed"
    elif len(name.encode("utf-16-le")) // 2 > _MAX_TOPIC_NAME_LENGTH:
        reason = f"the length of '{name}' is longer than the max allowed length {_MAX_TOPIC_NAME_LENGTH}"
    elif not _TOPIC_NAME.fullmatch(name):
        reason = f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    else:
        return None
    return f"Topic name is invalid: {reason}"


def _unified(name: str) -> str:
    """Kafka's `Topic.unifyCollisionChars`: '.' and '_' collide in metric names, so two topics may not differ only
    in them."""
    return name.replace(".", "_")


class PartitionManager:
    """See the module docstring. `verifier` may be set after construction (the transaction coordinator is often
    built later); `node_id` is this node's broker id in metadata answers."""

    def __init__(self, data_dir: str | Path, *, clock: Clock, tracer: Tracer | None = None,
                 verifier: TxnVerifier | None = None, config: PartitionConfig | None = None,
                 durability: Durability | None = None, node_id: int = 0,
                 topic_id_factory: Callable[[], uuid.UUID] = uuid.uuid4) -> None:
        self.data_dir = Path(data_dir)
        self.clock = clock
        self.tracer = tracer if tracer is not None else Tracer(None)
        self.config = config or PartitionConfig()
        self.verification = Verifications(clock=clock, config=self.config, verifier=verifier, leader=self.partition,
                                          answer=self._answer)
        self.durability = durability
        self.node_id = node_id
        self._topic_id_factory = topic_id_factory
        self._table = MachineTable.load("partition_producer")
        self._topics: dict[str, tuple[uuid.UUID, list[DataPartition | None]]] = {}  # None: offline
        self._open: list[DataPartition] | None = None  # `partitions()`, kept until a topic or partition changes
        #: the partitions written since their durability last caught up: `poll`, `flush` and the deadlines look at
        #: these, and at every partition only when one's producer expiration check is due
        self._touched: dict[TopicPartition, DataPartition] = {}
        #: `Durability.fsync`: a log's appends become durable only in the server's rounds (`begin_flush` ..
        #: `flushed`), so `poll` looks only at the partitions written since it last looked and those whose logs the
        #: last round covered, not at every touched partition waiting for a round still in flight
        self._rounds = durability is not None and durability.mode == "fsync"
        self._looked_at: dict[TopicPartition, DataPartition] = {}  # (with `_rounds`) what the next poll looks at
        self._in_round: list[DataPartition] = []  # (with `_rounds`) the partitions the round begun now covers
        self._expiration_due_ms: int | None = None  # the earliest expiration check of any partition (None: unknown)
        self.offline: dict[TopicPartition, str] = {}  # partitions not started (a damaged log), and why
        self._closed = False
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._discover()

    @property
    def verifier(self) -> TxnVerifier | None:
        """The transaction coordinator that verifies (or, for Transactions V2, adds) partitions; `verification`'s."""
        return self.verification.verifier

    @verifier.setter
    def verifier(self, verifier: TxnVerifier | None) -> None:
        self.verification.verifier = verifier

    # ------------------------------------------------------------------------------------------ topics

    def _discover(self) -> None:
        """Open the data topics found under `data_dir` (partition directories with a `partition.metadata`).

        A topic's size is its highest partition that has a `partition.metadata`: partitions are made last first
        and the last one is durable before any other is made, so a creation a crash cut short is completed here
        (missing partitions made, empty `partition.metadata` files written again). An empty `partition.metadata`
        with no higher partition of the topic is not a creation cut short, nor is a damaged one: the start is
        refused (`DamagedFileError`: a topic id is not guessed)."""
        found: dict[str, dict[int, tuple[Path, uuid.UUID]]] = {}
        empty: dict[str, dict[int, Path]] = {}
        for entry in sorted(self.data_dir.iterdir()):
            match = _DIR_NAME.fullmatch(entry.name)
            if match is None or not entry.is_dir() or match.group(1) in INTERNAL_TOPICS:
                continue
            topic, index = match.group(1), int(match.group(2))
            topic_id = read_partition_metadata(entry)
            if topic_id is not None:
                found.setdefault(topic, {})[index] = (entry, topic_id)
            elif (entry / PARTITION_METADATA_FILE).exists():
                empty.setdefault(topic, {})[index] = entry / PARTITION_METADATA_FILE
        for topic, files in empty.items():
            highest = max(files)
            if highest > max(found.get(topic, ()), default=-1):
                raise DamagedFileError(files[highest], "not a partition.metadata file (empty) and no higher "
                                       f"partition of topic '{topic}' has one: its topic id is unknown",
                                       f"copy partition.metadata from another partition of topic '{topic}' (a "
                                       "topic's partitions share its id), or move this folder out of the data "
                                       "directory to drop the partition")
        for topic, partitions in sorted(found.items()):
            ids = {topic_id for _, topic_id in partitions.values()}
            if len(ids) != 1:
                first = min(partitions)
                raise DamagedFileError(partitions[first][0] / PARTITION_METADATA_FILE,
                                       f"topic '{topic}': its partitions disagree on the topic id ({sorted(ids)})",
                                       "give every partition of the topic the same partition.metadata")
            self._open_topic(topic, ids.pop(), max(partitions) + 1)  # a creation cut short is completed

    def _open_topic(self, name: str, topic_id: uuid.UUID, num_partitions: int) -> None:
        """Open (making what is missing) partitions 0..num_partitions-1 of topic `name`, durably.

        A new last partition is made first and durable at once: from then on a start after a crash knows the
        topic's size and makes the missing partitions (`_discover`), so a creation is all or nothing. Every other
        partition's fsyncs wait for one sync at the end (`SyncLater`: one disk flush, not up to seven a
        partition); a crash before it may lose the new partitions' files or leave them empty, which `_discover`
        repairs, and no partition answers anything before it."""
        if self._closed:  # a topic made now would be written next to a data directory another process may own
            raise RuntimeError(f"the partition manager of {self.data_dir} is closed; topic {name!r} not created")
        partitions: list[DataPartition | None] = []
        made: list[Path] = []
        later = SyncLater(self.data_dir)
        try:
            for index in reversed(range(num_partitions)):
                tp = TopicPartition(name, index)
                directory = self.data_dir / str(tp)
                new = not directory.is_dir()
                if new:
                    made.append(directory)
                deferred = None if new and index == num_partitions - 1 else later
                if new or read_partition_metadata(directory) != topic_id:
                    create_partition_dir(directory, topic_id, deferred)
                partitions.append(self._open_partition(tp, directory, topic_id, deferred, new=new))
            later.sync()
        except BaseException:
            for partition in partitions:  # (out of file descriptors, disk full: undo, so nothing half made stays)
                if partition is not None:
                    partition.close()
            for directory in made:
                shutil.rmtree(directory, ignore_errors=True)
            if made:
                with contextlib.suppress(OSError):  # the removal is durable too: a failed creation does not come back
                    fsync_dir(self.data_dir)
            raise
        partitions.reverse()
        self._topics[name] = (topic_id, partitions)
        self._open = None
        self._expiration_due_ms = None

    def _open_partition(self, tp: TopicPartition, directory: Path, topic_id: uuid.UUID, later: SyncLater | None,
                        *, new: bool) -> DataPartition | None:
        """Open one partition; an existing one whose log is damaged where recovery may not cut it
        (`LogCorruptedError`), or whose leader-epoch-checkpoint is damaged (`DamagedFileError`), is not started:
        None, the cause in `offline` and in an ERROR line. (Kafka's broker keeps serving its other partitions when
        one log cannot be loaded; this one answers KAFKA_STORAGE_ERROR.)"""
        try:
            partition = DataPartition.open(tp, directory, topic_id=topic_id, table=self._table, tracer=self.tracer,
                                           clock=self.clock, config=self.config, durability=self.durability,
                                           later=later)
        except (LogCorruptedError, DamagedFileError) as e:
            if new:
                raise
            self.offline[tp] = str(e)
            _log.error("partition %s is not started: %s", tp, e)
            return None
        self.offline.pop(tp, None)
        return partition

    def missing(self, tp: TopicPartition) -> Errors:
        """The error for a partition this manager has no open log for: KAFKA_STORAGE_ERROR when it is offline (Kafka
        answers so for a partition on a failed log directory), else UNKNOWN_TOPIC_OR_PARTITION."""
        return Errors.KAFKA_STORAGE_ERROR if tp in self.offline else Errors.UNKNOWN_TOPIC_OR_PARTITION

    def creation_problem(self, name: str, num_partitions: int | None = None) -> tuple[str, str] | None:
        """Why Kafka's controller would not create topic `name` with `num_partitions` (None or -1: the default):
        (error, message), or None. INVALID_REQUEST for KRaft's metadata log (nobody's to create),
        TOPIC_ALREADY_EXISTS for a coordinator's topic (Kafka 4.0's controller answers so once the coordinator made
        it; kcoord's coordinators hold theirs from the first start), INVALID_TOPIC_EXCEPTION for an illegal name or
        one that collides with an existing topic's ('.' and '_' are one character to Kafka), TOPIC_ALREADY_EXISTS,
        INVALID_PARTITIONS."""
        count = self.partition_count(num_partitions)
        if name == CLUSTER_METADATA_TOPIC:
            return Errors.INVALID_REQUEST, f"Creation of internal topic {name} is prohibited."
        if name in INTERNAL_TOPICS:
            return Errors.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists."
        problem = topic_name_problem(name)
        if problem is not None:
            return Errors.INVALID_TOPIC_EXCEPTION, problem
        if name in self._topics:
            return Errors.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists."
        if "." in name or "_" in name:
            colliding = sorted(t for t in self._topics if _unified(t) == _unified(name))
            if colliding:
                return Errors.INVALID_TOPIC_EXCEPTION, f"Topic '{name}' collides with existing topic: {colliding[0]}"
        if count <= 0:
            return Errors.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value."
        return None

    def create_topic(self, name: str, num_partitions: int | None = None) -> str:
        """CreateTopics for one topic: NONE, or the error of `creation_problem`. Either every partition is made or,
        if the disk fails part way, none is left (the error is raised)."""
        problem = self.creation_problem(name, num_partitions)
        if problem is not None:
            return problem[0]
        self._open_topic(name, self._topic_id_factory(), self.partition_count(num_partitions))
        return Errors.NONE

    def partition_count(self, num_partitions: int | None) -> int:
        """The partitions a topic created with `num_partitions` gets: the broker's default for None or -1."""
        return self.config.num_partitions if num_partitions in (None, -1) else num_partitions

    def topic_names(self) -> list[str]:
        return sorted(self._topics)

    def partition(self, tp: TopicPartition) -> DataPartition | None:
        entry = self._topics.get(tp.topic)
        if entry is None or not 0 <= tp.partition < len(entry[1]):
            return None
        return entry[1][tp.partition]

    def partitions(self) -> list[DataPartition]:
        """Every open partition (offline ones are not), by topic name and partition (the list is shared: a caller
        must not change it)."""
        if self._open is None:
            self._open = [p for name in sorted(self._topics) for p in self._topics[name][1] if p is not None]
        return self._open

    def describe_topics(self, names: Sequence[str] | None = None, *,
                        allow_auto_creation: bool = False) -> list[TopicMetadata]:
        """Metadata: every data topic (`names` None), or the named ones, creating missing ones when both the
        request and `auto.create.topics.enable` allow it."""
        out = []
        for name in (self.topic_names() if names is None else names):
            if name not in self._topics:
                if name in INTERNAL_TOPICS or not (allow_auto_creation and self.config.auto_create_topics_enable):
                    out.append(TopicMetadata(Errors.UNKNOWN_TOPIC_OR_PARTITION, name))
                    continue
                error = self.create_topic(name)
                if error != Errors.NONE:
                    out.append(TopicMetadata(error, name))
                    continue
            topic_id, partitions = self._topics[name]
            out.append(TopicMetadata(Errors.NONE, name, topic_id, False, tuple(
                self._describe(index, p) for index, p in enumerate(partitions))))
        return out

    def _describe(self, index: int, part: DataPartition | None) -> PartitionMetadata:
        if part is None:  # offline: its only replica cannot lead it (Kafka: no leader, the replica offline)
            return PartitionMetadata(Errors.LEADER_NOT_AVAILABLE, index, -1, -1, (self.node_id,), ())
        return PartitionMetadata(Errors.NONE, index, self.node_id, part.leader_epoch, (self.node_id,),
                                 (self.node_id,))

    # ------------------------------------------------------------------------------------------ produce

    def produce(self, topic: str, partition: int, data: bytes | RecordBatch, *, acks: int = -1,
                transactional_id: str | None = None, origin: AppendOrigin = AppendOrigin.CLIENT,
                operation: TxnOperation = TxnOperation.DEFAULT_ERROR,
                deferred: list[PendingWrite] | None = None) -> Completion[ProduceResult]:
        """One partition of a Produce request (see the module docstring for the answers); `operation` follows from
        the request's version (`TxnOperation.for_produce`). With `deferred` (a list kept for the whole request), a
        batch to verify (not a Transactions V2 add) is put there instead of asking the coordinator at once:
        `verify_deferred` then asks once for all the request's partitions."""
        out: Completion[ProduceResult] = Completion()
        tp = TopicPartition(topic, partition)
        part = self.partition(tp)
        if acks not in (-1, 0, 1):
            out.set(ProduceResult(Errors.INVALID_REQUIRED_ACKS))
        elif part is None:
            out.set(ProduceResult(self.missing(tp)))
        else:
            batch = decode_produce_batch(data, origin, max_message_bytes=self.config.max_message_bytes)
            if isinstance(batch, Rejected):
                out.set(ProduceResult(batch.error, error_message=batch.message))
            else:
                if deferred and any(earlier.part is part for earlier in deferred):
                    self.verify_deferred(deferred, transactional_id)  # written twice: the earlier writes go first
                if self.verification.needed(part, batch, operation):
                    write = PendingWrite(part, batch, origin, acks, operation, out)
                    if deferred is None:
                        self.verification.verify_then_append(write, transactional_id)
                    else:
                        deferred.append(write)
                else:
                    self._answer(part, part.produce(batch, origin, Verification()), acks, out)
        return out

    def verify_deferred(self, deferred: list[PendingWrite], transactional_id: str | None) -> None:
        """Verify (then append or refuse) the writes `produce` deferred, in one ask of the coordinator per producer
        id and epoch; `deferred` is emptied."""
        if deferred:
            writes = deferred[:]
            deferred.clear()
            self.verification.verify_then_append_all(writes, transactional_id)

    def _answer(self, part: DataPartition, appended: Appended, acks: int, out: Completion[ProduceResult]) -> None:
        """acks=-1 waits until the append (or a duplicate's original) is durable; 0 and 1 answer at once."""
        self.touch(part)
        if acks == -1 and appended.result.error == Errors.NONE:
            part.when_durable(appended.required_offset, lambda: out.set(appended.result))
        else:
            out.set(appended.result)

    # ------------------------------------------------------------------------------------------ reads

    def fetch(self, topic: str, partition: int, offset: int, max_bytes: int = 1 << 20,
              isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED) -> FetchResult:
        tp = TopicPartition(topic, partition)
        part = self.partition(tp)
        if part is None:
            return FetchResult(self.missing(tp), isolation_level=isolation_level, fetch_offset=offset)
        return part.read(offset, max_bytes, isolation_level)

    def list_offsets(self, topic: str, partition: int, timestamp_ms: int,
                     isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED) -> ListOffsetsResult:
        tp = TopicPartition(topic, partition)
        part = self.partition(tp)
        if part is None:
            return ListOffsetsResult(self.missing(tp))
        return part.list_offset(timestamp_ms, isolation_level)

    def describe_producers(self, topic: str, partition: int) -> PartitionProducers:
        """DescribeProducers for one partition (KIP-664; Kafka's `handleDescribeProducersRequest`): the producers it
        keeps state for; an illegal topic name is INVALID_TOPIC_EXCEPTION, a partition not here
        UNKNOWN_TOPIC_OR_PARTITION (the coordinators' topics included, as in Metadata)."""
        problem = topic_name_problem(topic)
        if problem is not None:
            return PartitionProducers(Errors.INVALID_TOPIC_EXCEPTION, error_message=problem)
        tp = TopicPartition(topic, partition)
        part = self.partition(tp)
        if part is None:
            return PartitionProducers(self.missing(tp))
        return PartitionProducers(Errors.NONE, tuple(part.states.active_producers()))

    # ------------------------------------------------------------------------------------------ markers

    def write_txn_markers(self, markers: Sequence[TxnMarker]) -> Completion[list[MarkerResult]]:
        """`MarkerTarget`: each marker on each of its partitions, answered once every marker is durable. Producer ids
        and epochs are not negative (`BrokerMarkerTarget`, the broker's front door, refuses those)."""
        out: Completion[list[MarkerResult]] = Completion()
        answers: list[dict[TopicPartition, str]] = [dict.fromkeys(m.partitions, "") for m in markers]
        waiting = [1]  # one for this call, so nothing completes before every write is made

        def done() -> None:
            waiting[0] -= 1
            if waiting[0] == 0:
                out.set([dict(a) for a in answers])

        for i, marker in enumerate(markers):
            for tp in marker.partitions:
                part = self.partition(tp)
                if part is None:
                    answers[i][tp] = self.missing(tp)
                else:
                    appended = part.write_marker(marker)
                    self.touch(part)
                    answers[i][tp] = appended.result.error
                    if appended.result.error == Errors.NONE:
                        waiting[0] += 1
                        part.when_durable(appended.required_offset, done)
        done()
        return out

    # ------------------------------------------------------------------------------------------ time

    def poll(self) -> None:
        """Flush what group commit says is due, release durability waits, expire idle producers when due, ask the
        transaction coordinator again where a Transactions V2 add is due for a retry. Only the partitions written
        since their durability caught up are looked at, and every partition when one's producer expiration check
        is due; with `Durability.fsync` only those written since the last look and those whose logs the last round
        made durable (`flushed`)."""
        now_ms = self.clock.now_ms()
        due = self._expiration_due_ms
        every = due is None or now_ms >= due
        if every:
            looked = self.partitions()
        elif self._rounds:
            looked = list(self._looked_at.values())
        else:
            looked = list(self._touched.values())
        if self._rounds:
            self._looked_at = {}
        for part in looked:
            try:
                part.poll(now_ms)
            except OSError as e:
                self._take_offline(part, e)
        if every:
            self._expiration_due_ms = min((p.next_expiration_check_ms for p in self.partitions()), default=None)
        if self._rounds and not every:
            touched = self._touched
            for part in looked:  # (a partition settles only where its durability moved or its waiters went)
                if part.settled and touched.get(part.tp) is part:
                    del touched[part.tp]
        else:
            self._settle()
        self.verification.retry_due(now_ms)

    def touch(self, part: DataPartition) -> None:
        """`part` was written (or waits for its durability): `poll` and `flush` look at it until it settles."""
        self._touched[part.tp] = self._looked_at[part.tp] = part

    def _settle(self) -> None:
        """Forget the touched partitions with nothing pending (all durable, no waiter)."""
        settled = [tp for tp, part in self._touched.items() if part.settled]
        for tp in settled:
            del self._touched[tp]

    def pending_logs(self) -> list[PartitionLog]:
        """The logs holding appends not yet durable (`Cluster.flush` fsyncs them side by side)."""
        return [p.log for p in self._touched.values() if p.log.durable_offset < p.log.log_end_offset]

    def next_deadline_ms(self) -> int | None:
        if self._expiration_due_ms is None:
            self._expiration_due_ms = min((p.next_expiration_check_ms for p in self.partitions()), default=None)
        deadlines = [p.next_deadline_ms() for p in self._touched.values()]
        if self._expiration_due_ms is not None:
            deadlines.append(self._expiration_due_ms)
        retry_ms = self.verification.next_retry_ms()
        if retry_ms is not None:
            deadlines.append(retry_ms)
        return min(deadlines) if deadlines else None

    def flush(self) -> None:
        for part in list(self._touched.values()):
            try:
                part.flush()
            except OSError as e:
                self._take_offline(part, e)
        self._settle()

    def begin_flush(self, syncfs_device: int | None = None) -> list[FlushTicket]:
        """Group commit with the fsyncs on other threads: a ticket for every open partition holding appends not yet
        fsynced (`PartitionLog.begin_flush`; `syncfs_device` as there); a failed fsync takes its partition offline
        (`end_flush`)."""
        out = []
        for part in list(self._touched.values()):
            log = part.log
            if log.flushed_offset == log.log_end_offset:
                continue
            try:
                ticket = log.begin_flush(syncfs_device)
            except OSError as e:
                self._take_offline(part, e)
                continue
            if ticket is not None:
                ticket.on_error = functools.partial(self._fsync_failed, part)
                out.append(ticket)
                self._in_round.append(part)
        return out

    def flushed(self) -> None:
        """The tickets of `begin_flush` have ended (`PartitionLog.end_flush`): the next poll looks at the partitions
        whose logs they covered (their high watermarks moved: durability waits to release)."""
        for part in self._in_round:
            if self._touched.get(part.tp) is part:
                self._looked_at[part.tp] = part
        self._in_round = []

    def _fsync_failed(self, part: DataPartition, error: OSError) -> None:
        if part.tp not in self.offline:
            self._take_offline(part, error)

    def _take_offline(self, part: DataPartition, error: OSError) -> None:
        """A group commit's fsync failed: the page cache may have dropped what it held, so the partition goes
        offline (KAFKA_STORAGE_ERROR, as Kafka takes a failed log directory's partitions offline) until a restart
        reopens and recovers its log. Its waiting acks=-1 produces are never answered (clients time out)."""
        reason = f"{part.log.path}: fsync failed ({error}); the partition is offline until the server restarts"
        _log.warning("partition %s: %s", part.tp, reason)
        self.offline[part.tp] = reason
        self._touched.pop(part.tp, None)
        self._looked_at.pop(part.tp, None)
        _topic_id, partitions = self._topics[part.tp.topic]
        partitions[part.tp.partition] = None
        self._open = None
        self._expiration_due_ms = None
        part.log.abandon(reason)

    def close(self) -> None:
        """Close every partition; the manager creates no topic after this."""
        self._closed = True
        for part in self.partitions():
            part.close()
        self._topics.clear()
        self._open = None
        self._expiration_due_ms = None

