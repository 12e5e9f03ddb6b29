"""Driver for the ClassicGroup machine: spec events → `GroupCoordinator`'s classic-group and offset APIs.

One group (`s1`) on a one-node `Cluster` with group.max.size 3 (so capacity rows are reachable), topics `topic-a`
and `topic-b` (two partitions each), member ids generated as `<client>-<n>` with a counter (deterministic). The
request events are the APIs: JoinGroup (a new dynamic member, a new static member, or a known member id —
`JoinNewDynamicMember`, `JoinNewStaticMember`, `JoinKnownMember` in the action's name, the request built from the
spec's intent: v3 or v4, the protocols, the same metadata or a new one), SyncGroup (the leader sends an assignment
for every member), Heartbeat, LeaveGroup (one member identity), OffsetCommit, TxnOffsetCommit (in a transaction of
the driver's own producer, opened on demand; both for partition 0 of `topic-a` unless the action names another
`topic`), OffsetFetch and OffsetDelete (one partition, so one OffsetFetchPartition / OffsetDeletePartition row),
DeleteGroups. Parked JoinGroup and SyncGroup requests stay parked across actions; their answers are checked when
they come (a request the coordinator drops — a member's JoinGroup replaced by its newer one — leaves the list).
A member's later JoinGroup with `same_metadata` repeats the protocols it last sent, including those of its first
JoinGroup, sent before it had an id.

Internal events happen the way they happen in the broker: `Tick` advances the clock to the group's next timer
(a member's session, the join phase's rebalance timeout or initial delay, the pending-sync timer) — MemberExpired,
CompleteJoin, ExtendInitialDelay, PendingSyncExpired follow; `ExpireOffsets` advances past offsets.retention.ms to
the next run of the expiration job (ExpireOffset, ExpireGroup); `AssignmentWriteFailed` fails the leader's
SyncGroup append; `Reload` unloads and loads `__consumer_offsets` (Unload, then the load path);
`RebalanceOverCapacity` reloads with group.max.size lowered to 1; `UpgradeToConsumerGroup` sends a
ConsumerGroupHeartbeat with member epoch 0 for the group id; `EndTxn` commits or aborts the driver's transaction.

The search hooks (`classic_group_search.py`) add targeted programs (run after the breadth-first search) for the
items its budget does not reach, and the driver declares the rows the implementation never takes (`UNREACHABLE`,
each with the reason; see `coverage.declared_unreachable`).

Spec discrepancy handled here (reported, see `FORGOTTEN`): the implementation forgets a group the moment it is
Dead (deleted, expired, upgraded, or unloaded with its partition) — the spec's own doc says so — but the spec does
not declare Dead `final`, so a trace continues the key from Empty after Dead. The reference model is told to forget
such instances too.
Must not import: kcoord.cli.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kcoord.impl.assignors import Subscription, encode_subscription
from kcoord.impl.cluster import ClusterConfig
from kcoord.impl.group.classic.group import hb_key, join_key, sync_key
from kcoord.impl.group.config import GroupConfig
from kcoord.impl.group.coordinator import EXPIRATION_KEY
from kcoord.impl.group.messages import (
    ConsumerGroupHeartbeatRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    MemberIdentity,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
    TxnOffsetCommitRequest,
)
from kcoord.impl.runtime.completion import Completion
from kcoord.impl.storage import group_log_schema as schema
from kcoord.impl.txn.config import TxnConfig

from ..reference_model import Fired
from .base import HELD_DURABILITY, Action, ClusterDriver, Key, Outcome, Values
from .partitions import partition_producer_instances

GROUP = "s1"
MACHINE = "ClassicGroup"
CLIENT = "m"
TOPICS = (("topic-a", 2), ("topic-b", 2))
PROTOCOL_TYPE = "consumer"
TXN_ID = "txn-offsets"
MAX_SIZE = 3
SESSION_MS = 10_000
REBALANCE_MS = 15_000
#: states in which the implementation forgets the instance (see the module docstring)
FORGOTTEN = {"ClassicGroup": frozenset({"Dead"})}
_TIMER_CANCELLED = ("a member's heartbeat timer is cancelled whenever the member (or pending id) is removed "
                    "(ClassicTxn.remove_member), so it never fires for an id the group no longer has")
_SYNC_TIMER = ("the pending-sync timer is cancelled whenever the group prepares a rebalance (after_prepare) and "
               "replaced at each new generation, and Empty is entered only from PreparingRebalance, so it fires "
               "only in CompletingRebalance or Stable of its own generation, where it finds pending ids (every "
               "synced follower leaves the leader, who moves the group to Stable) or in Stable")
_WRITE_IN_STEP = ("the coordinator decides the leader's assignment write (AssignmentWritten) in the leader's own "
                  "SyncGroup step, and a failed write is decided again at once on the same state "
                  "(classic.sync._sync_write_failed): the group can never have moved on while the write is in "
                  "flight")
_GROUP_CHECKED_FIRST = ("deleteOffsets answers the group-level OffsetDelete first and asks about each partition "
                        "only when it answered NONE (offsets.commit.offset_delete), so the partition row's repeated "
                        "group checks never reject")
_EMPTY_KNOWS_SUBSCRIPTIONS = ("in Empty `subscribed` never holds: a consumer-protocol group without members knows "
                              "its subscriptions are empty (computeSubscribedTopics, on join completion and on load), "
                              "and any other group does not use the consumer protocol")
_NO_ONLINE_UPGRADE = ("the driver runs with group.consumer.migration.policy disabled (`group_config`): "
                      "UpgradeToConsumerGroup carries online_upgrade=false, so a live group is never converted here")
_NO_CONSUMER_GROUP = ("the driver has no consumer-protocol members: no consumer group is converted back into this id "
                      "(the migration tests and the wire scenario migration[...] do it)")
#: rows the implementation never takes in these states (see `coverage.declared_unreachable`)
UNREACHABLE = {"ClassicGroup": (
    (138, "UpgradeToConsumerGroup", "UNKNOWN_SERVER_ERROR", ("PreparingRebalance",), _NO_ONLINE_UPGRADE),
    (139, "UpgradeToConsumerGroup", "Dead", ("PreparingRebalance", "CompletingRebalance", "Stable"),
     _NO_ONLINE_UPGRADE),
    (140, "ConvertedFromConsumer", "PreparingRebalance", ("Empty",), _NO_CONSUMER_GROUP),
    (141, "ConvertedFromConsumer", "Stable", ("Empty",), _NO_CONSUMER_GROUP),
    (101, "OffsetDeletePartition", "GROUP_ID_NOT_FOUND", ("Empty",), _GROUP_CHECKED_FIRST),
    (103, "OffsetDeletePartition", "NON_EMPTY_GROUP", ("PreparingRebalance", "CompletingRebalance", "Stable"),
     _GROUP_CHECKED_FIRST),
    (104, "OffsetDeletePartition", "GROUP_SUBSCRIBED_TO_TOPIC", ("Empty",), _EMPTY_KNOWS_SUBSCRIPTIONS),
    (131, "ExpireOffset", "NONE", ("Empty",), _EMPTY_KNOWS_SUBSCRIPTIONS),
    (117, "MemberExpired", "NONE", ("PreparingRebalance", "CompletingRebalance", "Stable"), _TIMER_CANCELLED),
    (122, "PendingSyncExpired", "NONE", ("Empty", "PreparingRebalance", "CompletingRebalance"), _SYNC_TIMER),
    (124, "AssignmentWritten", "NONE", ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable"),
     _WRITE_IN_STEP),
    (126, "AssignmentWriteFailed", "NONE", ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable"),
     _WRITE_IN_STEP),
)}
#: declared-unreachable rows probed (see `coverage.declared_unreachable`): in each state the row is declared unreachable
#: in, a generated case sends the action and checks, in lockstep with the spec, that the row does not fire there —
#: the claim "never taken here" becomes a tested fact (and a mutant that makes the row fire there is killed)
PROBES = {"ClassicGroup": {138: Action("UpgradeToConsumerGroup"), 139: Action("UpgradeToConsumerGroup")}}
REQUESTS = ("JoinNewDynamicMember", "JoinNewStaticMember", "JoinKnownMember", "SyncGroup", "Heartbeat",
            "LeaveGroupMember", "OffsetCommit", "TxnOffsetCommit", "OffsetFetch", "OffsetDelete", "DeleteGroup")
#: rows whose post-state the coordinator writes as the group's GroupMetadata record (or tombstone)
_WRITING_EVENTS = {"CompleteJoin": {"Empty"}, "AssignmentWritten": {"Stable"}, "DeleteGroup": {"Dead"},
                   "ExpireGroup": {"Dead"}}


def group_config(max_size: int = MAX_SIZE) -> GroupConfig:
    """group.consumer.migration.policy disabled: this driver explores the classic group alone; converting it (and
    back) is the migration tests' (tests/impl/group/test_consumer_migration.py) and the wire scenario's."""
    return GroupConfig(num_partitions=1, max_size=max_size, offsets_retention_ms=60_000,
                       offsets_retention_check_interval_ms=10_000, consumer_migration_policy="disabled")


def metadata(tag: str, topics: Sequence[str] = ("topic-a",)) -> bytes:
    """A consumer subscription (parseable, so the coordinator knows the topics) whose user data is `tag`."""
    return encode_subscription(Subscription(tuple(topics), tag.encode()))


class ClassicGroupDriver(ClusterDriver):
    machines = ("ClassicGroup", "PartitionProducer")
    main = MACHINE
    forgotten = FORGOTTEN
    unreachable = UNREACHABLE
    probes = PROBES

    def __init__(self, *, workdir: Path | None = None) -> None:
        config = ClusterConfig(nodes=1, txn=TxnConfig(num_partitions=1, offsets_num_partitions=1),
                               groups=group_config(), durability=HELD_DURABILITY)
        super().__init__(config, workdir=workdir, topics=TOPICS)
        self.groups = self.node.groups
        self.parked: list[tuple[Action, Completion[Any]]] = []
        self.sent: dict[str, tuple[tuple[str, bytes], ...]] = {}  # member id -> protocols it last sent
        self._joins: list[tuple[Completion[Any], tuple[tuple[str, bytes], ...]]] = []  # joins not answered yet
        self._tags = iter(range(1, 1_000_000))
        self._log_mark = 0
        self._fresh = 0  # answers of the current step's own requests (the rest are parked ones answered late)

    # ------------------------------------------------------------ reading the implementation

    @property
    def shard(self) -> Any:
        return self.groups.runtime.shards[0]

    def instances(self, machine: str) -> Mapping[Key, Values]:
        if machine == "PartitionProducer":
            return partition_producer_instances(self.cluster)
        return {k: dict(v) for k, v in self.shard.instances[machine].items()}

    def data(self) -> Any:
        return self.shard.spec.classic.get(GROUP)

    def search_env(self) -> dict[str, Any]:
        """What the search needs beyond the spec state: the instance ids, the members in the coordinator's order."""
        data = self.data()
        members = list(data.members) if data is not None else []
        instances = {m.instance_id: m.member_id for m in data.members.values() if m.instance_id} if data else {}
        return {"members": members, "instances": instances}

    # ------------------------------------------------------------ performing actions

    def perform(self, action: Action) -> Outcome:
        self._log_mark = self.shard.log.log_end_offset if 0 in self.groups.runtime.shards else 0
        done = self._perform(action)
        late = [(a, c.result()) for a, c in self.parked if c.done]
        held = self._waiting()
        self.parked = [(a, c) for a, c in self.parked if not c.done and id(c) in held]
        self._fresh = len(done)
        self._note_joined()
        return Outcome([*done, *late], self.take_rows())

    def _waiting(self) -> set[int]:
        """The requests the coordinator still holds (members' parked JoinGroup and SyncGroup). A member's newer
        JoinGroup replaces its parked one, which is then never answered (Kafka overwrites the awaiting-join future
        the same way): such a request leaves the driver's parked list."""
        data = self.data()
        if data is None:
            return set()
        return {id(w) for m in data.members.values() for w in (m.join_waiter, m.sync_waiter) if w is not None}

    def _note_joined(self) -> None:
        """A member that joined without an id sent its protocols under the id it was given: a later rejoin with
        `same_metadata` repeats them."""
        for c, protocols in self._joins:
            if c.done:
                response = c.result()
                if response.error == "NONE" and response.member_id:
                    self.sent.setdefault(response.member_id, protocols)
        self._joins = [(c, p) for c, p in self._joins if not c.done]

    def _perform(self, action: Action) -> list[tuple[Action, Any]]:
        name, a = action.name, action.args
        if name in REQUESTS:
            return self._request(action)
        if name == "Tick":
            self._tick()
        elif name == "ExpireOffsets":
            self._expire_offsets()
        elif name == "AssignmentWriteFailed":  # the leader's SyncGroup, whose assignment append fails
            self.shard.log.fail_next_append()
            return [(action, response) for _, response in self._request(Action("SyncGroup", a))]
        elif name == "Reload":
            self._reload()
        elif name == "RebalanceOverCapacity":
            self._reload(max_size=1)
        elif name == "UpgradeToConsumerGroup":
            req = ConsumerGroupHeartbeatRequest(GROUP, "upgrader", 0, rebalance_timeout_ms=REBALANCE_MS,
                                                subscribed_topic_names=("topic-a",), topic_partitions=())
            answer = self.wait(self.groups.consumer_group_heartbeat(req))
            if answer.error == "NONE":  # the consumer member leaves at once: the id's consumer group is Empty, so a
                # later JoinGroup replaces it with a classic group again (this driver explores classic groups only)
                self.wait(self.groups.consumer_group_heartbeat(ConsumerGroupHeartbeatRequest(GROUP, "upgrader", -1)))
            return [(action, answer)]
        elif name == "EndTxn":
            self._end_txn(str(a.get("result", "COMMIT")))
        else:
            raise ValueError(f"the ClassicGroup driver has no action {name!r}")
        return []

    def _request(self, action: Action) -> list[tuple[Action, Any]]:
        done = self._submit(action)
        self.settle()
        if done.done:
            return [(action, done.result())]
        self.parked.append((action, done))
        return []

    def _submit(self, action: Action) -> Completion[Any]:
        a, g = action.args, self.groups
        group = str(a.get("group", GROUP))  # "" for the INVALID_GROUP_ID rows
        instance = a.get("instance") or None
        if action.name.startswith("Join"):
            request = self._join(action)
            joined = g.join_group(request)
            self._joins.append((joined, request.protocols))
            return joined
        if action.name == "SyncGroup":
            member = str(a["member"])
            data = self.data()
            assignments = tuple((m, f"assignment-of-{m}".encode()) for m in (data.members if data else ()))
            return g.sync_group(SyncGroupRequest(group, member, int(a["generation"]), instance,
                                                 a.get("protocol_type") or None, a.get("protocol") or None,
                                                 assignments))
        if action.name == "Heartbeat":
            return g.heartbeat(HeartbeatRequest(group, str(a["member"]), int(a["generation"]), instance))
        if action.name == "LeaveGroupMember":
            return g.leave_group(LeaveGroupRequest(group, (MemberIdentity(str(a["member"]), instance),)))
        if action.name == "OffsetCommit":
            return g.offset_commit(OffsetCommitRequest(
                group, ((str(a.get("topic", "topic-a")), (OffsetCommitPartition(int(a.get("partition", 0)), 10),)),),
                str(a["member"]),
                int(a["generation"]), instance, api_version=int(a["api_version"])))
        if action.name == "TxnOffsetCommit":
            pid, epoch = self.open_offsets_txn(TXN_ID, GROUP)
            return g.txn_offset_commit(TxnOffsetCommitRequest(
                TXN_ID, pid, epoch, group,
                ((str(a.get("topic", "topic-a")), (OffsetCommitPartition(int(a.get("partition", 0)), 20),)),),
                str(a["member"]), int(a["generation"]), instance))
        if action.name == "OffsetFetch":
            return g.offset_fetch(OffsetFetchRequest(GROUP, ((str(a["topic"]), (int(a["partition"]),)),),
                                                     require_stable=bool(a["require_stable"])))
        if action.name == "OffsetDelete":
            return g.offset_delete(OffsetDeleteRequest(GROUP, ((str(a["topic"]), (int(a["partition"]),)),)))
        if action.name == "DeleteGroup":
            return g.delete_groups([GROUP])
        raise ValueError(f"{action.name} is not a request")

    def _join(self, action: Action) -> JoinGroupRequest:
        a = action.args
        member = str(a.get("member", ""))
        names = [str(n) for n in a.get("protocols", [])]
        if a.get("same_metadata") and member in self.sent:
            protocols = self.sent[member]
        else:
            tag = f"{member or 'new'}-{next(self._tags)}"
            protocols = tuple((n, metadata(tag)) for n in names)
        if member:
            self.sent[member] = protocols
        return JoinGroupRequest(str(a.get("group", GROUP)), member, a.get("instance") or None,
                                str(a.get("protocol_type", "")),
                                protocols, int(a.get("session_timeout_ms", SESSION_MS)), REBALANCE_MS,
                                client_id=CLIENT, api_version=int(a.get("version", 3)))

    def _timers(self) -> list[int]:
        timers = self.shard.timers
        inst = self.shard.instances["ClassicGroup"].get((GROUP,))
        ids = set(inst["members"] | inst["pending_members"]) if inst is not None else set()
        data = self.data()
        ids |= set(data.members) if data is not None else set()
        keys = [hb_key(GROUP, m) for m in sorted(ids)] + [join_key(GROUP), sync_key(GROUP)]
        return [d for d in (timers.deadline(k) for k in keys) if d is not None]

    def _tick(self) -> None:
        deadlines = self._timers()
        if not deadlines:
            return
        self.clock.advance(max(min(deadlines) - self.clock.now_ms(), 0))
        self.settle()

    def _expire_offsets(self) -> None:
        retention = self.config.groups.offsets_retention_ms
        self.advance(retention, step_ms=self.config.groups.offsets_retention_check_interval_ms)
        job = self.shard.timers.deadline(EXPIRATION_KEY)
        if job is not None:
            self.clock.advance(max(job - self.clock.now_ms(), 0))
            self.settle()

    def _reload(self, max_size: int | None = None) -> None:
        self.settle()
        self.groups.unload(0)
        for (action, c) in self.parked:  # answered NOT_COORDINATOR by the unload
            assert c.done, f"{action.render()} is still parked after the unload"
        if max_size is not None:
            self.groups.ctx.config = dataclasses.replace(self.groups.ctx.config, max_size=max_size)
        self.groups.load(0)
        self.settle()

    def _end_txn(self, result: str) -> None:
        if self._txn is None:
            return
        pid, epoch = self._txn
        self.wait(self.node.txn.end_txn(TXN_ID, pid, epoch, "COMMIT" if result == "COMMIT" else "ABORT", 4))
        self.settle(markers=True)

    # ------------------------------------------------------------ checks

    def check(self, action: Action, fired: Sequence[Fired], outcome: Outcome) -> list[str]:
        rows = [f for f in fired if f.machine == MACHINE]
        problems = []
        # only the answers to this step's own requests: a parked request answered now (a late JoinGroup or
        # SyncGroup) was decided by an earlier step's rows, not by this step's
        for request, response in outcome.responses[:self._fresh]:
            problems += [f"{request.render()}: {p}" for p in self._answer_problems(request, rows, response)]
        for request, response in outcome.responses[self._fresh:]:  # a completed join phase answers parked joins
            if request.name.startswith("Join") and _error_of(request, response) == "NONE" and rows:
                problems += [f"{request.render()} (answered late): {p}"
                             for p in self._join_answer_problems(response, rows)]
        problems += self._check_args(action, rows)
        problems += self._check_records(rows)
        return problems

    def _decision(self, request: Action, rows: Sequence[Fired]) -> Fired | None:
        event = {"UpgradeToConsumerGroup": "UpgradeToConsumerGroup", "OffsetFetch": "OffsetFetch",
                 "OffsetDelete": "OffsetDelete", "AssignmentWriteFailed": "SyncGroup"}.get(request.name, request.name)
        member = request.args.get("member")
        for f in rows:
            if f.event == event and (member is None or f.args.get("member_id", member) == member):
                return f
        return None

    def _answer_problems(self, request: Action, rows: Sequence[Fired], response: Any) -> list[str]:
        d = self._decision(request, rows)
        if d is None:
            return []  # a late answer (the decision was checked when it was made) or a request with no row
        got = _error_of(request, response)
        if request.name == "AssignmentWriteFailed":
            want = "NOT_COORDINATOR"  # appendGroupMetadataErrorToResponseError(KAFKA_STORAGE_ERROR)
        elif request.name == "OffsetFetch" and d.answer == "GROUP_ID_NOT_FOUND":
            want = "NONE"  # fetchOffsets answers an unknown group with -1 offsets and no error
        elif request.name in ("OffsetFetch", "OffsetDelete"):
            part = next((f for f in rows if f.event == f"{request.name}Partition"), None)
            want = d.answer if d.answer != "NONE" or part is None else part.answer
        else:
            want = d.answer
        if got is not None and got != want:
            return [f"answered {got}, the spec answers {want}"]
        if request.name.startswith("Join") and got == "NONE" and d.answer == "NONE" and rows:
            return self._join_answer_problems(response, rows)
        return []

    def _join_answer_problems(self, response: Any, rows: Sequence[Fired]) -> list[str]:
        last = rows[-1].post
        if last["state"] not in ("CompletingRebalance", "Stable"):
            return []
        seen = (response.generation_id, response.leader, response.protocol_name or "")
        want = (last["generation"], last["leader"], last["protocol"])
        return [] if seen == want else [f"JoinGroup answered (generation, leader, protocol) {seen}, the spec has "
                                        f"{want}"]

    def _check_args(self, action: Action, rows: Sequence[Fired]) -> list[str]:
        """The request's own fields and the coordinator's limits, as the decision rows carry them."""
        cfg = self.groups.ctx.config
        problems = []
        for f in rows:
            a = f.args
            if "min_session_timeout_ms" in a and (a["min_session_timeout_ms"], a["max_session_timeout_ms"]) != \
                    (cfg.min_session_timeout_ms, cfg.max_session_timeout_ms):
                problems.append(f"{f.event} carried session limits {a['min_session_timeout_ms']}.."
                                f"{a['max_session_timeout_ms']}")
            if "join_phase_full" in a and a["join_phase_full"] != (len(f.pre["awaiting_join"]) >= cfg.max_size):
                problems.append(f"{f.event} carried join_phase_full={a['join_phase_full']} with "
                                f"{len(f.pre['awaiting_join'])} members awaiting join and group.max.size "
                                f"{cfg.max_size}")
            if "group_full" in a and a["group_full"] != (len(f.pre["members"]) >= cfg.max_size):
                problems.append(f"{f.event} carried group_full={a['group_full']} with {len(f.pre['members'])} "
                                f"members")
        if action.name in REQUESTS and action.name not in ("OffsetFetch", "OffsetDelete", "DeleteGroup"):
            d = self._decision(action, rows)
            if d is not None:
                for field, arg in (("member", "member_id"), ("instance", "instance_id"),
                                   ("generation", "generation_id"), ("api_version", "api_version")):
                    sent = action.args.get(field)
                    if field == "instance":
                        sent = sent or ""
                    if field in action.args and arg in d.args and d.args[arg] != sent:
                        problems.append(f"{d.event} carried {arg}={d.args[arg]!r}, the request sent "
                                        f"{action.args[field]!r}")
        return problems

    def _check_records(self, rows: Sequence[Fired]) -> list[str]:
        """Every GroupMetadata record written describes a spec post-state of the step; the rows that write the
        group (entering Empty by the join phase, the stored assignment, deletion) did write it."""
        if 0 not in self.groups.runtime.shards:
            return []
        written = []
        for batch in self.shard.log.read(self._log_mark):
            if batch.is_control:
                continue
            for r in batch.records:
                if r.offset < self._log_mark or r.key is None:
                    continue
                key, value = schema.decode_record(r.key, r.value)
                if isinstance(key, schema.GroupMetadataKey) and key.group == GROUP:
                    written.append(value)
        posts = [f.post for f in rows if f.accepted]
        created = any(f.accepted and not f.pre["exists"] and f.post["exists"] for f in rows)
        problems = []
        for value in written:
            if value is None:
                if not any(p["state"] == "Dead" for p in posts):
                    problems.append("a GroupMetadata tombstone was written, but the group did not become Dead")
                continue
            assert isinstance(value, schema.GroupMetadataValue)
            seen = (value.generation, value.protocol_type, value.protocol or "", value.leader or "",
                    frozenset(m.member_id for m in value.members))
            if created and seen == (0, "", "", "", frozenset()):
                continue  # newEmptyGroupMetadataRecord: a JoinGroup that creates the group writes it as created
            if not any(seen == (p["generation"], p["protocol_type"], p["protocol"], p["leader"], p["members"])
                       for p in posts):
                problems.append(f"a GroupMetadata record says (generation, protocol type, protocol, leader, "
                                f"members) {seen}, which is no post-state of the step")
        for f in rows:
            if f.accepted and f.to_state in _WRITING_EVENTS.get(f.event, ()) and not written:
                problems.append(f"{f.event} moved the group to {f.to_state} but no GroupMetadata record was written")
        return problems


def _error_of(request: Action, response: Any) -> str | None:
    """The answer's error: the top-level one, else the one partition's (OffsetFetch and OffsetDelete carry a
    partition's error in the partition, under a top-level NONE)."""
    if isinstance(response, list):  # DeleteGroups
        return str(response[0][1]) if response else None
    if hasattr(response, "error"):
        error = str(response.error)
        if request.name == "LeaveGroupMember" and error == "NONE" and response.members:
            return str(response.members[0][1])
        if error != "NONE" or not getattr(response, "topics", None):
            return error
    topics = getattr(response, "topics", None)
    if topics:
        errors = {str(p.error) if hasattr(p, "error") else str(p[1]) for _, parts in topics for p in parts}
        return errors.pop() if len(errors) == 1 else None
    return None
