"""`GroupCoordinator`: one node's group coordinator — classic groups, KIP-848 consumer groups and offsets — on a
`CoordinatorRuntime` for `__consumer_offsets` (`when_pending="wait"`: a request for a group runs once no write for
that group is in flight, so every handler sees the group as its last durable write left it).

Owns: the public API (one method per Kafka API, each returning a `Completion` of its response), routing
(`partition_for`, Kafka's hash), load/unload of `__consumer_offsets` partitions (parked requests are answered
NOT_COORDINATOR on unload), the timers restarted after a load, the offsets-expiration job, and the
`MarkerTarget` side of WriteTxnMarkers for `__consumer_offsets` partitions.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from .._generated.classic_group import Event as ClassicGroupEvent
from .._generated.classic_group import State as ClassicGroupState
from .._generated.consumer_group import Event as ConsumerGroupEvent
from .._generated.consumer_group_member import State as MemberState
from ..errors import Errors, KafkaError
from ..interfaces import MarkerResult, TopicPartition, TxnMarker, TxnOperation, TxnVerifier
from ..runtime.cleaner import DEFAULT_CLEANING, Cleaning
from ..runtime.clock import Clock
from ..runtime.completion import Completion
from ..runtime.runtime import CoordinatorRuntime
from ..runtime.shard import Change, Plan, Shard
from ..runtime.trace import Tracer
from ..seeded import NO_BUGS, SeededBug
from ..storage.log import Durability
from . import migration, seeded
from .classic import sync as classic_sync
from .classic.group import ClassicTxn, after_load_over_capacity
from .classic.join import join_group
from .config import GroupConfig
from .consumer import classic_members
from .consumer.group import ConsumerTxn
from .consumer.heartbeat import (
    consumer_heartbeat,
    delete_consumer_group,
    delete_empty_consumer_group,
    describe_consumer_group,
)
from .context import Context, MaterializeHook, Migration, Tables, TopicDescriber, TopicLister, describer_of, lister_of
from .messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DescribedConsumerGroup,
    DescribedGroup,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListedGroup,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from .offsets import commit as offsets
from .offsets.expiration import expire_group_offsets
from .offsets.markers import complete_transaction
from .planning import raise_bugs, settle
from .shard_state import GroupShardState

R = TypeVar("R")
OFFSETS_TOPIC = "__consumer_offsets"
EXPIRATION_KEY = ("offsets-expiration",)
# errors a coordinator answers that a partition leader reports as NOT_LEADER_OR_FOLLOWER (KafkaApis, §1.10)
_MARKER_ERRORS: dict[str, str] = dict.fromkeys((Errors.NOT_COORDINATOR, Errors.COORDINATOR_LOAD_IN_PROGRESS,
                                Errors.COORDINATOR_NOT_AVAILABLE), Errors.NOT_LEADER_OR_FOLLOWER)


class GroupCoordinator:
    def __init__(self, *, data_dir: Path, clock: Clock, topics: TopicDescriber | Mapping[str, Any],
                 config: GroupConfig | None = None, tracer: Tracer | None = None, node_id: int = 0,
                 durability: Durability | None = None, verifier: TxnVerifier | None = None,
                 materialize_hook: MaterializeHook | None = None, new_uuid: Callable[[], str] | None = None,
                 segment_bytes: int = 100 * 1024 * 1024, cleaning: Cleaning | None = DEFAULT_CLEANING,
                 seeded_bugs: frozenset[SeededBug] = NO_BUGS, topic_names: TopicLister | None = None,
                 check_records: bool = True) -> None:
        config = config or GroupConfig()
        self.ctx = Context(config=config, clock=clock, tables=seeded.tables(Tables.load(), seeded_bugs),
                           topics=describer_of(topics), verifier=verifier, materialize_hook=materialize_hook,
                           offsets_topic=OFFSETS_TOPIC, topic_names=lister_of(topics, topic_names),
                           migration=Migration(migration.online_upgrade, migration.upgrade, migration.downgrade,
                                               migration.downgrade_replacing))
        self._marker_order = seeded.marker_order(seeded_bugs)
        if new_uuid is not None:
            self.ctx.new_uuid = new_uuid
        self.runtime = CoordinatorRuntime(topic=OFFSETS_TOPIC, data_dir=data_dir, clock=clock, tracer=tracer,
                                    num_partitions=config.num_partitions, durability=durability, node_id=node_id,
                                    spec_factory=lambda p: GroupShardState(self.ctx, p, self._on_loaded),
                                    segment_bytes=segment_bytes, cleaning=cleaning, check_records=check_records)

    # ------------------------------------------------------------ routing, load, the loop

    def partition_for(self, group_id: str) -> int:
        """FindCoordinator's key → `__consumer_offsets` partition (Utils.abs(hash) % partitions, §2.11)."""
        return self.runtime.partition_for(group_id)

    def load(self, partition: int, *, wait: bool = True) -> Shard:
        return self.runtime.load(partition, wait=wait)

    def load_all(self) -> None:
        for partition in range(self.ctx.config.num_partitions):
            self.runtime.load(partition)

    def unload(self, partition: int) -> None:
        """onUnloaded: every group goes Dead here; parked JoinGroup/SyncGroup requests get NOT_COORDINATOR."""
        shard = self.runtime.shards.get(partition)
        if shard is not None and partition not in self.runtime.loading:
            _unload_groups(self.ctx, shard)
        self.runtime.unload(partition)

    def poll(self) -> int:
        return self.runtime.poll()

    def flush(self) -> int:
        return self.runtime.flush()

    def close(self) -> None:
        for partition in list(self.runtime.shards):
            self.unload(partition)
        self.runtime.close()

    def topics_changed(self) -> None:
        """Topics were created (kcoord deletes none): a new metadata version that brings new topics, so the groups'
        regular expressions are resolved again on a member's next heartbeat, and every consumer group refreshes its
        subscription metadata on its next heartbeat (onNewMetadataImage)."""
        self.ctx.metadata_version += 1
        self.ctx.new_topics_version = self.ctx.metadata_version
        for shard in self.runtime.shards.values():
            for data in shard.spec.consumer.values():  # type: ignore[attr-defined]
                data.metadata_refresh_deadline_ms = 0

    # ------------------------------------------------------------ classic groups

    def join_group(self, req: JoinGroupRequest) -> Completion[JoinGroupResponse]:
        return self._group_request(req.group_id, req, _join_handler, lambda e: JoinGroupResponse(e))

    def sync_group(self, req: SyncGroupRequest) -> Completion[SyncGroupResponse]:
        return self._group_request(req.group_id, req, _by_group_type(classic_sync.sync_group,
                                                                     classic_members.sync_group),
                                   lambda e: SyncGroupResponse(e))

    def heartbeat(self, req: HeartbeatRequest) -> Completion[HeartbeatResponse]:
        return self._group_request(req.group_id, req, _by_group_type(classic_sync.heartbeat, classic_members.heartbeat),
                                   lambda e: HeartbeatResponse(e))

    def leave_group(self, req: LeaveGroupRequest) -> Completion[LeaveGroupResponse]:
        return self._group_request(req.group_id, req, _by_group_type(classic_sync.leave_group,
                                                                     classic_members.leave_group),
                                   lambda e: LeaveGroupResponse(e))

    def describe_groups(self, group_ids: Sequence[str]) -> list[DescribedGroup]:
        out = []
        for group_id in group_ids:
            try:
                shard = self.runtime.shard_for(group_id)
            except KafkaError as e:
                out.append(DescribedGroup(group_id, e.name))
                continue
            out.append(classic_sync.describe_classic_group(
                shard.spec, shard.get("ClassicGroup", (group_id,)), group_id,  # type: ignore[arg-type]
                consumer_group=shard.get("ConsumerGroup", (group_id,)) is not None))
        return out

    def list_groups(self, states: Sequence[str] = (), types: Sequence[str] = ()) -> list[ListedGroup]:
        wanted_states = {s.strip().lower() for s in states}
        wanted_types = {t.lower() for t in types}
        out = []
        for partition in sorted(self.runtime.shards):
            if partition in self.runtime.loading:
                continue
            shard = self.runtime.shards[partition]
            for (group_id,), inst in sorted(shard.instances["ClassicGroup"].items()):
                if inst["exists"] and inst["state"] != ClassicGroupState.Dead:
                    out.append(ListedGroup(group_id, inst["protocol_type"], inst["state"], "classic"))
            for (group_id,), inst in sorted(shard.instances["ConsumerGroup"].items()):
                out.append(ListedGroup(group_id, "consumer", inst["state"], "consumer"))
        return [g for g in out if (not wanted_states or g.state.lower() in wanted_states)
                and (not wanted_types or g.group_type in wanted_types)]

    def delete_groups(self, group_ids: Sequence[str]) -> Completion[list[tuple[str, str]]]:
        """DeleteGroups: per group, the spec's answer (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, NONE)."""
        answers: list[Completion[str]] = [
            self._group_request(g, g, _delete_handler, lambda e: e) for g in group_ids]
        return _gather(answers, lambda values: list(zip(group_ids, values, strict=True)))

    # ------------------------------------------------------------ KIP-848

    def consumer_group_heartbeat(self, req: ConsumerGroupHeartbeatRequest
                                 ) -> Completion[ConsumerGroupHeartbeatResponse]:
        return self._group_request(req.group_id, req, consumer_heartbeat,
                                   lambda e: ConsumerGroupHeartbeatResponse(e))

    def consumer_group_describe(self, group_ids: Sequence[str]) -> list[DescribedConsumerGroup]:
        out = []
        for group_id in group_ids:
            try:
                shard = self.runtime.shard_for(group_id)
            except KafkaError as e:
                out.append(DescribedConsumerGroup(group_id, e.name))
                continue
            out.append(describe_consumer_group(self.ctx, shard, shard.spec, group_id))  # type: ignore[arg-type]
        return out

    # ------------------------------------------------------------ offsets

    def offset_commit(self, req: OffsetCommitRequest) -> Completion[OffsetCommitResponse]:
        return self._group_request(req.group_id, req, offsets.offset_commit,
                                   lambda e: OffsetCommitResponse(offsets.all_partitions(req.topics, e)))

    def offset_fetch(self, req: OffsetFetchRequest) -> Completion[OffsetFetchResponse]:
        return self._group_request(req.group_id, req, offsets.offset_fetch, lambda e: OffsetFetchResponse(e))

    def offset_delete(self, req: OffsetDeleteRequest) -> Completion[OffsetDeleteResponse]:
        return self._group_request(req.group_id, req, offsets.offset_delete, lambda e: OffsetDeleteResponse(e))

    def txn_offset_commit(self, req: TxnOffsetCommitRequest) -> Completion[TxnOffsetCommitResponse]:
        """Verify the `__consumer_offsets` partition with the transaction coordinator first (a transactional write,
        §1.9) — or, for a Transactions V2 client (v5+), have it added to the transaction —, then validate and append
        the offsets as a transactional batch. The coordinator's error is answered as Kafka 4.0 answers it
        (`_txn_write_error`)."""
        out: Completion[TxnOffsetCommitResponse] = Completion()
        operation = TxnOperation.for_txn_offset_commit(req.api_version)
        tp = TopicPartition(OFFSETS_TOPIC, self.partition_for(req.group_id))
        verifier = self.ctx.verifier
        verified: Completion[str]
        if verifier is None:
            verified = Completion.of(Errors.NONE)
        else:
            ask = verifier.add_partition if operation is TxnOperation.ADD_PARTITION else verifier.verify_partition
            verified = ask(req.transactional_id, req.producer_id, req.producer_epoch, tp)

        def on_verified(c: Completion[str]) -> None:
            try:
                error = c.result()
            except KafkaError as e:
                error = e.name
            if error != Errors.NONE:
                out.set(TxnOffsetCommitResponse(offsets.all_partitions(req.topics, _txn_write_error(error,
                                                                                                     operation))))
            else:
                self._txn_offset_commit(req, out)

        verified.then(on_verified)
        return out

    def _txn_offset_commit(self, req: TxnOffsetCommitRequest, out: Completion[TxnOffsetCommitResponse]) -> None:
        try:
            shard = self.runtime.shard_for(req.group_id)
        except KafkaError as e:
            out.set(TxnOffsetCommitResponse(offsets.all_partitions(req.topics, e.name)))
            return
        state: GroupShardState = shard.spec  # type: ignore[assignment]
        settling = state.materializing.get(req.producer_id)
        if settling is not None:
            # the previous transaction's offsets are still being settled: this one waits (KAFKA-17507)
            settling.then(lambda _: self._txn_offset_commit(req, out))
            return
        keys = [*_group_keys(req.group_id), ("PartitionProducer", (state.topic_partition, req.producer_id))]
        done = shard.submit(keys, lambda: offsets.txn_offset_commit(self.ctx, shard, state, req, out),
                            when_pending="wait")
        done.then(lambda c: _settle_failure(c, out, lambda e: TxnOffsetCommitResponse(
            offsets.all_partitions(req.topics, e))))

    # ------------------------------------------------------------ MarkerTarget

    def write_txn_markers(self, markers: Sequence[TxnMarker]) -> Completion[list[MarkerResult]]:
        """WriteTxnMarkers for `__consumer_offsets` partitions: each partition answers once its marker is durable
        and the producer's offsets there are materialised (COMMIT) or dropped (ABORT)."""
        results: list[dict[TopicPartition, str]] = [{} for _ in markers]
        parts: list[Completion[str]] = []
        for i, marker in enumerate(markers):
            for tp in marker.partitions:
                answer = self._write_marker(marker, tp)
                answer.then(lambda c, i=i, tp=tp: results[i].__setitem__(tp, c.result()))  # type: ignore[misc]
                parts.append(answer)
        return _gather(parts, lambda _: list(results))

    def _write_marker(self, marker: TxnMarker, tp: TopicPartition) -> Completion[str]:
        out: Completion[str] = Completion()
        if tp.topic != OFFSETS_TOPIC:
            out.set(Errors.UNKNOWN_TOPIC_OR_PARTITION)
            return out
        try:
            shard = self.runtime.shard(tp.partition)
        except KafkaError as e:
            out.set(_MARKER_ERRORS.get(e.name, e.name))
            return out
        state: GroupShardState = shard.spec  # type: ignore[assignment]
        settling = state.materializing.get(marker.producer_id)
        if settling is not None:
            settling.then(lambda _: _chain(self._write_marker(marker, tp), out))
            return out
        done = shard.submit([("PartitionProducer", (state.topic_partition, marker.producer_id))],
                            lambda: complete_transaction(self.ctx, shard, state, marker, self._marker_order),
                            when_pending="wait")

        def on_done(c: Completion[Any]) -> None:
            try:
                inner = c.result()
            except KafkaError as e:
                out.set(_MARKER_ERRORS.get(e.name, e.name))
                return
            _chain(inner, out)

        done.then(on_done)
        return out

    # ------------------------------------------------------------ inspection (tests, failover checks)

    def snapshot(self, partition: int) -> dict[str, Any]:
        """The partition's whole in-memory state as plain values: spec instances, side data, offsets."""
        shard = self.runtime.shard(partition)
        state: GroupShardState = shard.spec  # type: ignore[assignment]
        instances = {name: {k: dict(v) for k, v in sorted(by_key.items())} for name, by_key in shard.instances.items()}
        classic = {g: {"members": {m: (c.instance_id, c.client_id, c.client_host, c.rebalance_timeout_ms,
                                       c.session_timeout_ms, c.protocol_type, c.protocols, c.assignment)
                                   for m, c in d.members.items()},
                       "state_timestamp_ms": d.state_timestamp_ms, "subscribed_topics": d.subscribed_topics}
                   for g, d in sorted(state.classic.items())}
        consumer_groups = {g: {"members": dict(sorted(d.members.items())),
                               "target": {m: t for m, t in sorted(d.target.items()) if t},
                               "subscription_metadata": dict(sorted(d.subscription_metadata.items())),
                               "owners": dict(sorted(d.owners.items()))}
                           for g, d in sorted(state.consumer.items())}
        return {"instances": instances, "classic": classic, "consumer": consumer_groups,
                "offsets": state.offsets.snapshot()}

    # ------------------------------------------------------------ plumbing

    def _group_request(self, group_id: str, req: Any, handler: Callable[..., Plan],
                       error: Callable[[str], R]) -> Completion[R]:
        out: Completion[R] = Completion()
        try:
            shard = self.runtime.shard_for(group_id)
        except KafkaError as e:
            out.set(error(e.name))
            return out
        state = shard.spec
        done = shard.submit(_group_keys(group_id), lambda: handler(self.ctx, shard, state, req, out),
                            when_pending="wait")
        done.then(lambda c: _settle_failure(c, out, error))
        return out

    def _on_loaded(self, shard: Shard, state: GroupShardState) -> None:
        """onLoaded: session timers for every member, rebalance timers for revoking members, a rebalance for a
        classic group over group.max.size, and the offsets-expiration job."""
        ctx = self.ctx
        for group_id, data in sorted(state.classic.items()):
            t = ClassicTxn(ctx, shard, state, group_id)
            for member_id, member in data.members.items():
                t.schedule_heartbeat(member_id, member.session_timeout_ms)
            _run_effects(t.plan())  # timers only: nothing to write
            if len(data.members) > ctx.config.max_size:
                after_load_over_capacity(ctx, shard, state, group_id)
        for group_id, cdata in sorted(state.consumer.items()):
            c = ConsumerTxn(ctx, shard, state, group_id)
            for member_id in cdata.members:
                m = shard.get("ConsumerGroupMember", (group_id, member_id))
                c.schedule_session(member_id)
                if m is not None and m["state"] == MemberState.UnrevokedPartitions:
                    c.schedule_rebalance(member_id, m["member_epoch"], m["rebalance_timeout_ms"])
            _run_effects(c.plan())
        self._schedule_expiration(shard, state)

    def _schedule_expiration(self, shard: Shard, state: GroupShardState) -> None:
        ctx = self.ctx

        def run() -> None:
            groups = sorted({g for (g,) in shard.instances["ClassicGroup"]} | {g for (g,) in
                                                                              shard.instances["ConsumerGroup"]})
            for group_id in groups:
                done = shard.submit(_group_keys(group_id),
                                    lambda g=group_id: expire_group_offsets(ctx, shard, state, g),  # type: ignore[misc]
                                    when_pending="wait")
                done.then(raise_bugs)
            self._schedule_expiration(shard, state)

        shard.schedule(EXPIRATION_KEY, ctx.now_ms() + ctx.config.offsets_retention_check_interval_ms, run)


# ---------------------------------------------------------------------------------------------- handlers by group type


def _group_keys(group_id: str) -> tuple[tuple[str, tuple[str]], ...]:
    key = (group_id,)
    return (("ClassicGroup", key), ("ConsumerGroup", key))


def _by_group_type(classic: Callable[..., Plan], consumer: Callable[..., Plan]) -> Callable[..., Plan]:
    """SyncGroup, Heartbeat and LeaveGroup for a consumer group's id are its classic-protocol members'
    (classicGroup*ToConsumerGroup, §3.9); a classic group's (or an unknown id's) go to the classic group."""
    def handler(ctx: Context, shard: Shard, state: GroupShardState, req: Any, out: Completion[Any]) -> Plan:
        is_consumer = shard.get("ConsumerGroup", (req.group_id,)) is not None
        return (consumer if is_consumer else classic)(ctx, shard, state, req, out)
    return handler


def _join_handler(ctx: Context, shard: Shard, state: GroupShardState, req: JoinGroupRequest,
                  out: Completion[JoinGroupResponse]) -> Plan:
    group = shard.get("ConsumerGroup", (req.group_id,))
    if group is not None and group["members"]:
        # a classic-protocol member joins a consumer group (KIP-848 migration, §3.9)
        return classic_members.join_group(ctx, shard, state, req, out)
    t = ClassicTxn(ctx, shard, state, req.group_id)
    if group is not None:  # an Empty consumer group is deleted and replaced (maybeDeleteEmptyConsumerGroup)
        delete_empty_consumer_group(ctx, shard, state, t.b, req.group_id)
    return join_group(ctx, shard, state, req, out, t)


def _delete_handler(ctx: Context, shard: Shard, state: GroupShardState, group_id: str, out: Completion[str]) -> Plan:
    if shard.get("ConsumerGroup", (group_id,)) is not None:
        c = ConsumerTxn(ctx, shard, state, group_id)
        error = delete_consumer_group(c)
        c.then(lambda: settle(out, error))
        return c.plan()
    t = ClassicTxn(ctx, shard, state, group_id)
    error = classic_sync.delete_classic_group(t)
    t.then(lambda: settle(out, error))
    return t.plan()


def _unload_groups(ctx: Context, shard: Shard) -> None:
    """Each group's Unload decision is applied at once (the partition is leaving: nothing can be written)."""
    state: GroupShardState = shard.spec  # type: ignore[assignment]
    tables = ctx.tables
    for (group_id,), inst in sorted(shard.instances["ClassicGroup"].items()):
        if inst["exists"]:
            d = tables.classic.decide(inst, ClassicGroupEvent.Unload, {})
            shard.apply(Change(tables.classic, (group_id,), d, {}))
        data = state.classic.get(group_id)
        for member in (data.members.values() if data is not None else ()):
            if member.join_waiter is not None and not member.join_waiter.done:
                member.join_waiter.set(JoinGroupResponse(Errors.NOT_COORDINATOR, member_id=member.member_id))
            if member.sync_waiter is not None and not member.sync_waiter.done:
                member.sync_waiter.set(SyncGroupResponse(Errors.NOT_COORDINATOR))
    for (group_id,), inst in sorted(shard.instances["ConsumerGroup"].items()):
        d = tables.consumer.decide(inst, ConsumerGroupEvent.Unload, {})
        shard.apply(Change(tables.consumer, (group_id,), d, {}))
    for materializing in list(state.materializing.values()):
        if not materializing.done:
            materializing.set(Errors.NOT_LEADER_OR_FOLLOWER)


# ---------------------------------------------------------------------------------------------- completions


def _run_effects(plan: Plan) -> None:
    assert not plan.records and not plan.changes, "load-time scheduling writes and decides nothing"
    if plan.after_apply is not None:
        plan.after_apply()


def _settle_failure(done: Completion[Any], out: Completion[Any], error: Callable[[str], Any]) -> None:
    """A handler that failed: a protocol error becomes the response; our own bug fails the request loudly."""
    try:
        done.result()
    except KafkaError as e:
        settle(out, error(e.name))
    except BaseException as e:
        if not out.done:
            out.fail(e)
        raise


def _chain(inner: Completion[str], out: Completion[str]) -> None:
    def forward(c: Completion[str]) -> None:
        try:
            value = c.result()
        except KafkaError as e:
            value = _MARKER_ERRORS.get(e.name, e.name)
        settle(out, value)
    inner.then(forward)


def _gather(parts: Sequence[Completion[Any]], build: Callable[[list[Any]], Any]) -> Completion[Any]:
    out: Completion[Any] = Completion()
    remaining = [len(parts)]

    def one(_: Completion[Any]) -> None:
        remaining[0] -= 1
        if remaining[0] == 0:
            out.set(build([p.result() for p in parts]))

    if not parts:
        out.set(build([]))
    for part in parts:
        part.then(one)
    return out


__all__ = ["OFFSETS_TOPIC", "GroupCoordinator"]


#: CoordinatorOperationExceptionHelper.handleOperationException: a transactional write's failure as the group
#: coordinator answers it
_OPERATION_ERRORS: dict[str, str] = {Errors.NETWORK_EXCEPTION: Errors.COORDINATOR_LOAD_IN_PROGRESS,
                                     Errors.NOT_ENOUGH_REPLICAS: Errors.COORDINATOR_NOT_AVAILABLE,
                                     Errors.UNKNOWN_TOPIC_OR_PARTITION: Errors.COORDINATOR_NOT_AVAILABLE,
                                     Errors.REQUEST_TIMED_OUT: Errors.COORDINATOR_NOT_AVAILABLE,
                                     Errors.NOT_LEADER_OR_FOLLOWER: Errors.NOT_COORDINATOR,
                                     Errors.KAFKA_STORAGE_ERROR: Errors.NOT_COORDINATOR}


def _txn_write_error(error: str, operation: TxnOperation) -> str:
    """The TxnOffsetCommit answer for the transaction coordinator's `error` (not NONE): AddPartitionsToTxnManager's
    translation (PRODUCER_FENCED → INVALID_PRODUCER_EPOCH; TRANSACTION_ABORTABLE → INVALID_TXN_STATE for a client
    before v4), then the group coordinator's for failed operations."""
    if error == Errors.PRODUCER_FENCED:
        error = Errors.INVALID_PRODUCER_EPOCH
    elif error == Errors.TRANSACTION_ABORTABLE and operation is TxnOperation.DEFAULT_ERROR:
        error = Errors.INVALID_TXN_STATE
    return _OPERATION_ERRORS.get(error, error)
