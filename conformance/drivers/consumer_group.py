"""Driver for the KIP-848 machines ConsumerGroup and ConsumerGroupMember: spec events → `GroupCoordinator`'s
ConsumerGroupHeartbeat, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, DeleteGroups and offset APIs.

One group (`g1`) on a one-node `Cluster` with group.consumer.max.size 3 (so GROUP_MAX_SIZE_REACHED is reachable),
topics `orders` (3 partitions) and `payments` (2), dynamic members `a`, `b`, `c` (their own member ids) and the
static instance `i1` (member ids `s` and, for a replacement, `r`). Actions are the requests, in the spec's words:
- `Heartbeat(member, epoch, ...)`: one ConsumerGroupHeartbeat with the request's fields (`owned` as partition names,
  `topics`, `instance`, `rebalance_timeout`, and the optional fields the validation rows read: `rack`, `regex`,
  `assignor`); epoch 0 is the spec's Join, -1 Leave, -2 StaticLeave, others Heartbeat;
- `Delete`, `OffsetCommit(member, epoch, api_version)`, `TxnOffsetCommit(member, epoch)` (in a transaction of the
  driver's producer, opened on demand, left open until `EndTxn`; both for partition 0 of `orders` unless the action
  names another `topic`), `OffsetFetch(member, epoch, require_stable)`, `OffsetDelete(topic)`.
The classic protocol, for classic-protocol members of the consumer group (KIP-848 migration): `JoinGroup(member,
owned, topics, instance, session_timeout, protocol_type, protocol, api_version)` (JoinGroup v9 with a consumer-protocol
subscription of `topics`, default orders, owning `owned`; member "" for none), `SyncGroup(member, generation,
instance, protocol)`, `ClassicHeartbeat(member, generation, instance)`, `LeaveGroup(member, instance)`; their answers
are checked like a heartbeat's (the first error of the rows fired; JoinGroup's generation is the member's spec epoch,
SyncGroup's assignment its spec assignment). `Concurrent(first, then)`: two heartbeats, the second handled while the
first's write is in flight (as two clients' requests in one batch): what the first scheduled after its write (a
regular expression's resolution) runs after the second, e.g. on a group its leave left Assigning. `ClassicJoin` (no
arguments) is a classic group's first JoinGroup for the id of no consumer group (parked in its join phase).
The migration: `Migrate` (a program's first step: group.consumer.migration.policy bidirectional instead of
disabled) and `ClassicGroupStable(members)` (a live classic group made through the classic API), see
`consumer_group_migration`.
Internal events happen the way they happen in the broker: `SessionTimeout` / `RebalanceTimeout` advance the clock
to the earliest such timer of the group; `ExpireOffsets` advances past offsets.retention.ms to the expiration job
(ExpireOffset, Expire); `Reload` unloads and loads `__consumer_offsets` (Unload, then the load path);
`ReplayUnknown(member[, epoch, previous_epoch])` appends a current-assignment record with a MemberState byte this
version does not know (as a newer coordinator would write it; epochs 1 and 0 unless given) and reloads — the
member is read back in Unknown (the spec's ReplayUnknownState; the implementation installs it as a `load` row).
offsets.retention.ms is 20 s (shorter than a session), so the expiration job runs while members are still there.
The search hooks (`consumer_group_search.py`) add targeted programs (run after the breadth-first search) for the
items its budget does not reach, and the driver declares the rows the implementation never takes (`UNREACHABLE`,
each with the reason; see `coverage.declared_unreachable`).
Checked after every step, beyond the lockstep: the heartbeat's answer (the first error of the rows it fired, else
NONE with the member's new epoch and, when sent, its assignment), the offset APIs' answers, and that a step whose
rows are all rejections wrote nothing to `__consumer_offsets`, while every current-assignment record written equals
the member's spec post-state.
Must not import: kcoord.cli.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from kcoord.impl.assignors import Subscription, decode_assignment, encode_subscription
from kcoord.impl.cluster import ClusterConfig
from kcoord.impl.group.config import GroupConfig
from kcoord.impl.group.consumer.group import rebalance_key, session_key
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
from kcoord.impl.storage.log import PartitionLog, partition_dir_name
from kcoord.impl.txn.config import TxnConfig

from ..reference_model import Fired
from .base import HELD_DURABILITY, Action, ClusterDriver, Key, Outcome, Values
from .consumer_group_migration import enable_migration, stable_classic_group

GROUP = "g1"
TOPICS = (("orders", 3), ("payments", 2))
MAX_SIZE = 3
SESSION_MS = 45_000
REBALANCE_MS = 30_000
TXN_ID = "txn-cg"
MACHINES = ("ConsumerGroup", "ConsumerGroupMember")
DYNAMIC = ("a", "b", "c")
STATIC = (("s", "i1"), ("r", "i1"))
UNKNOWN_STATE_BYTE = 99  # not a MemberState id of this version: MemberState.fromValue gives UNKNOWN
CLASSIC_REQUESTS = ("JoinGroup", "SyncGroup", "ClassicHeartbeat", "LeaveGroup")
REQUESTS = ("Heartbeat", "Delete", "OffsetCommit", "TxnOffsetCommit", "OffsetFetch", "OffsetDelete", *CLASSIC_REQUESTS)
CLASSIC_SESSION_MS = 10_000
_LIVE = ("Stable", "StaticLeft", "Unknown", "UnreleasedPartitions", "UnrevokedPartitions")
_ASKED_OF_CLASSIC = ("the coordinator asks the ConsumerGroup machine only about an id a consumer group holds "
                     "(offsets.is_consumer_group; a deleted one is forgotten): requests for any other id are "
                     "answered by ClassicGroup's rows, so this instance is never asked while it does not exist")
_NO_MEMBERS_NO_SUBSCRIPTIONS = "an Empty group has no members, so no member subscribes to any topic"
_ADDRESSED_TO_HOLDER = ("a request with an instance id is addressed to the member holding that instance (an instance "
                        "nobody holds is rejected UNKNOWN_MEMBER_ID by ConsumerGroup's throwIfStaticMemberIsUnknown "
                        "first), so a live member is never asked with another instance id")
_GROUP_CHECKS_FIRST = ("ConsumerGroup's checks answer first: a heartbeat or leave naming a member id the group does "
                       "not have (without an instance) is rejected UNKNOWN_MEMBER_ID there, and an instance id is "
                       "addressed to its holder, so no Absent member is asked")
_UNRELEASED_AT_GROUP = ("ConsumerGroup's throwIfInstanceIdIsUnreleased answers a static join first: an instance held "
                        "by a member that did not leave with -2 is rejected UNRELEASED_INSTANCE_ID at the group level")
_REBALANCE_TIMER = ("a member's rebalance timer is cancelled whenever it leaves UnrevokedPartitions, replaced "
                    "whenever its epoch changes there, and cancelled with the member: it fires only for a member in "
                    "UnrevokedPartitions at the timer's epoch")
_AFTER_TARGET = ("ProtocolChanged and InstanceAdopted follow the member's row, and a heartbeat or JoinGroup that finds "
                 "the group Assigning computes its target assignment (TargetAssignmentComputed) before that row, so "
                 "the group is Reconciling or Stable by then")
_AT_MINUS_TWO = ("a member at -2 (StaticLeft) has member epoch -2, below every group epoch (at least 1 once the group "
                 "has a member), so SyncGroup and Heartbeat at its generation always find a rebalance in progress")
#: rows the implementation never takes in these states (see `coverage.declared_unreachable`)
UNREACHABLE = {
    "ConsumerGroup": (
        (29, "MemberJoined", "Reconciling", ("Empty",),
         "an Empty consumer group is new (group epoch 0: MemberJoined bumps it) or was emptied by MembersRemoved, "
         "which bumps the group epoch past the target's, and no target is computed without members"),
        (31, "SubscriptionChanged", "INVALID_REGULAR_EXPRESSION", ("Empty",),
         "SubscriptionChanged is decided for a member of the group (or the one that just replaced a static member), "
         "so the group has a member and is not Empty"),
        (35, "RegexesResolved", None, ("Empty",),
         "a resolution's result is decided only when some member still subscribes to one of its expressions "
         "(regex.regexes_resolved), and an Empty group has no members"),
        (69, "ProtocolChanged", None, ("Assigning",), _AFTER_TARGET),
        (70, "InstanceAdopted", None, ("Assigning",), _AFTER_TARGET),
        (1, "Heartbeat", "INVALID_REQUEST", ("Assigning", "Reconciling", "Stable"),
         "every heartbeat for the group id \"\" is rejected INVALID_REQUEST, so that group never has a member"),
        (18, "Heartbeat", "UNRELEASED_INSTANCE_ID", ("Empty",),
         "an Empty group has no members, and a member's removal drops its instance from static_instances"),
        (47, "Delete", "GROUP_ID_NOT_FOUND", ("Empty",), _ASKED_OF_CLASSIC),
        (57, "OffsetCommit", "NONE", ("Empty",), _ASKED_OF_CLASSIC),
        (58, "OffsetCommit", "GROUP_ID_NOT_FOUND", ("Empty",), _ASKED_OF_CLASSIC),
        (59, "OffsetCommit", "ILLEGAL_GENERATION", ("Empty",), _ASKED_OF_CLASSIC),
        (63, "OffsetDelete", "GROUP_ID_NOT_FOUND", ("Empty",), _ASKED_OF_CLASSIC),
        (65, "OffsetDeletePartition", "GROUP_ID_NOT_FOUND", ("Empty",), _ASKED_OF_CLASSIC),
        (50, "ExpireOffset", "NONE", ("Empty",), _NO_MEMBERS_NO_SUBSCRIPTIONS),
        (66, "OffsetDeletePartition", "GROUP_SUBSCRIBED_TO_TOPIC", ("Empty",), _NO_MEMBERS_NO_SUBSCRIPTIONS),
    ),
    "ConsumerGroupMember": (
        (0, "Join", "UNRELEASED_INSTANCE_ID", ("Stable", "Unknown", "UnreleasedPartitions", "UnrevokedPartitions"),
         _UNRELEASED_AT_GROUP),
        (9, "Heartbeat", "UNKNOWN_MEMBER_ID", _LIVE, _ADDRESSED_TO_HOLDER),
        (33, "Leave", "UNKNOWN_MEMBER_ID", _LIVE, _ADDRESSED_TO_HOLDER),
        (37, "StaticLeave", "UNKNOWN_MEMBER_ID", _LIVE, _ADDRESSED_TO_HOLDER),
        (12, "Heartbeat", "UNKNOWN_MEMBER_ID", ("Absent",), _GROUP_CHECKS_FIRST),
        (35, "Leave", "UNKNOWN_MEMBER_ID", ("Absent",), _GROUP_CHECKS_FIRST),
        (39, "StaticLeave", "UNKNOWN_MEMBER_ID", ("Absent",), _GROUP_CHECKS_FIRST),
        (66, "RebalanceTimeout", "NONE", ("Absent", *_LIVE), _REBALANCE_TIMER),
        (49, "ClassicSync", "NONE", ("StaticLeft",), _AT_MINUS_TWO),
        (56, "ClassicHeartbeat", "NONE", ("StaticLeft",), _AT_MINUS_TWO),
        (74, "OffsetFetch", "NONE", _LIVE,
         "an admin fetch names no member: it is asked of the member id \"\", which no member has"),
    ),
}


def group_config() -> GroupConfig:
    """group.consumer.migration.policy disabled: a classic group holding the id stays another type's, unless a
    program starts with `Migrate` (policy bidirectional: the upgrade and the downgrade, `consumer_group_migration`)."""
    return GroupConfig(num_partitions=1, consumer_max_size=MAX_SIZE, consumer_session_timeout_ms=SESSION_MS,
                       consumer_migration_policy="disabled",
                       offsets_retention_ms=20_000, offsets_retention_check_interval_ms=10_000)


def heartbeat(member: str, epoch: int, **fields: Any) -> Action:
    """A heartbeat action with the defaults of a well-formed request."""
    args: dict[str, Any] = {"member": member, "epoch": epoch}
    if epoch == 0:
        args.update(topics=["orders"], owned=[], rebalance_timeout=REBALANCE_MS)
    args.update(fields)
    return Action("Heartbeat", args)


class ConsumerGroupDriver(ClusterDriver):
    #: the classic group a consumer group is converted back into (and the one an online upgrade starts from) is
    #: checked in lockstep too, so a wrong ClassicGroup row on a downgrade is a divergence
    machines = (*MACHINES, "ClassicGroup")
    #: a classic group upgraded to a consumer group is Dead and dropped (as the ClassicGroup driver forgets it)
    forgotten: ClassVar[Mapping[str, frozenset[str]]] = {"ClassicGroup": frozenset({"Dead"})}
    main = "ConsumerGroup"
    unreachable = UNREACHABLE
    #: a consumer group converted back to a classic group (Dead) drops its members' instances (Kafka drops the group
    #: object with them; the spec's members have no event for it): the lockstep forgets them with the group
    dropped_with: ClassVar[Mapping[str, str]] = {"ConsumerGroupMember": "ConsumerGroup"}

    def __init__(self, *, workdir: Path | None = None) -> None:
        config = ClusterConfig(nodes=1, txn=TxnConfig(num_partitions=1, offsets_num_partitions=1),
                               groups=group_config(), durability=HELD_DURABILITY)
        super().__init__(config, workdir=workdir, topics=TOPICS)
        self.groups = self.node.groups
        self._log_mark = 0
        self._ids: dict[str, Any] = {}

    # ------------------------------------------------------------ reading the implementation

    @property
    def shard(self) -> Any:
        return self.groups.runtime.shards[0]

    def instances(self, machine: str) -> Mapping[Key, Values]:
        return {k: dict(v) for k, v in self.shard.instances[machine].items()}

    def search_env(self) -> dict[str, Any]:
        """What the search must tell apart beyond the spec state: whether a classic group holds the id."""
        classic = self.shard.instances.get("ClassicGroup", {}).get((GROUP,))
        return {"classic_group": bool(classic is not None and classic["exists"])}

    def topic_id(self, topic: str) -> Any:
        if topic not in self._ids:
            (meta,) = self.cluster.partitions.describe_topics([topic])
            self._ids[topic] = meta.topic_id
        return self._ids[topic]

    def _owned(self, names: Sequence[str] | None) -> tuple[tuple[Any, tuple[int, ...]], ...] | None:
        if names is None:
            return None
        by_topic: dict[str, list[int]] = {}
        for text in names:
            topic, _, p = str(text).rpartition("-")
            by_topic.setdefault(topic, []).append(int(p))
        return tuple((self.topic_id(t), tuple(sorted(ps))) for t, ps in sorted(by_topic.items()))

    # ------------------------------------------------------------ performing actions

    def perform(self, action: Action) -> Outcome:
        self._log_mark = self.shard.log.log_end_offset
        responses = self._perform(action)
        return Outcome(responses, self.take_rows())

    def _perform(self, action: Action) -> list[Any]:
        name, a = action.name, action.args
        if name in REQUESTS:
            return [self.wait(self._submit(action))]
        if name == "Concurrent":
            first = self._submit(Action.from_json(a["first"]))  # appended, not yet durable, when `then` is handled
            then = self._submit(Action.from_json(a["then"]))
            self.settle()
            return [first.result(), then.result()]
        if name in ("SessionTimeout", "RebalanceTimeout"):
            self._tick(name)
        elif name == "ExpireOffsets":
            self._expire_offsets()
        elif name == "Reload":
            self._reload()
        elif name == "ReplayUnknown":
            self._replay_unknown(str(a["member"]), int(a.get("epoch", 1)), int(a.get("previous_epoch", 0)))
            self._log_mark = self.shard.log.log_end_offset
        elif name == "EndTxn":
            self._end_txn()
        elif name == "Migrate":
            enable_migration(self)
        elif name == "ClassicGroupStable":
            stable_classic_group(self, GROUP, int(a.get("members", 2)), REBALANCE_MS)
        elif name == "ClassicJoin":
            req = JoinGroupRequest(GROUP, "", None, "consumer", (("range", b"\x00"),), 10_000, REBALANCE_MS,
                                   api_version=3)
            self.groups.join_group(req)  # parked in the join phase: the group now has a classic member
            self.settle()
        else:
            raise ValueError(f"the ConsumerGroup driver has no action {name!r}")
        return []

    def _submit(self, action: Action) -> Completion[Any]:
        a, g = action.args, self.groups
        if action.name in CLASSIC_REQUESTS:
            return self._submit_classic(action)
        if action.name == "Heartbeat":
            return g.consumer_group_heartbeat(ConsumerGroupHeartbeatRequest(
                a.get("group", GROUP), str(a["member"]), int(a["epoch"]), instance_id=a.get("instance"),
                rack_id=a.get("rack"), rebalance_timeout_ms=int(a.get("rebalance_timeout", -1)),
                subscribed_topic_names=tuple(a["topics"]) if a.get("topics") is not None else None,
                subscribed_topic_regex=a.get("regex"), server_assignor=a.get("assignor"),
                topic_partitions=self._owned(a.get("owned")), api_version=int(a.get("api_version", 1))))
        if action.name == "Delete":
            return g.delete_groups([GROUP])
        if action.name == "OffsetCommit":
            return g.offset_commit(OffsetCommitRequest(
                GROUP, ((str(a.get("topic", "orders")), (OffsetCommitPartition(0, 10),)),), str(a["member"]),
                int(a["epoch"]),
                api_version=int(a.get("api_version", 9))))
        if action.name == "TxnOffsetCommit":
            pid, epoch = self.open_offsets_txn(TXN_ID, GROUP)
            return g.txn_offset_commit(TxnOffsetCommitRequest(
                TXN_ID, pid, epoch, GROUP, ((str(a.get("topic", "orders")), (OffsetCommitPartition(0, 20),)),),
                str(a["member"]), int(a["epoch"])))
        if action.name == "OffsetFetch":
            member = a.get("member")
            return g.offset_fetch(OffsetFetchRequest(GROUP, ((str(a.get("topic", "orders")), (0,)),),
                                                     require_stable=bool(a.get("require_stable", False)),
                                                     member_id=member, member_epoch=int(a["epoch"])))
        if action.name == "OffsetDelete":
            return g.offset_delete(OffsetDeleteRequest(GROUP, ((str(a["topic"]), (0,)),)))
        raise ValueError(f"{action.name} is not a request")

    def _submit_classic(self, action: Action) -> Completion[Any]:
        """A classic-protocol request (JoinGroup v9 with a consumer-protocol subscription of `topics` owning `owned`,
        SyncGroup, Heartbeat, LeaveGroup of one member) for the consumer group."""
        a, g = action.args, self.groups
        member, instance = str(a.get("member", "")), a.get("instance")
        if action.name == "JoinGroup":
            owned = [(t, int(p)) for t, _, p in (str(n).rpartition("-") for n in a.get("owned", []))]
            metadata = encode_subscription(Subscription.of(tuple(a.get("topics", ["orders"])), owned_partitions=owned))
            return g.join_group(JoinGroupRequest(
                GROUP, member, instance, str(a.get("protocol_type", "consumer")),
                ((str(a.get("protocol", "range")), metadata),), int(a.get("session_timeout", CLASSIC_SESSION_MS)),
                REBALANCE_MS, api_version=int(a.get("api_version", 9))))
        if action.name == "SyncGroup":
            return g.sync_group(SyncGroupRequest(GROUP, member, int(a["generation"]), instance, "consumer",
                                                 str(a.get("protocol", "range"))))
        if action.name == "ClassicHeartbeat":
            return g.heartbeat(HeartbeatRequest(GROUP, member, int(a["generation"]), instance))
        return g.leave_group(LeaveGroupRequest(GROUP, (MemberIdentity(member, instance),)))

    def _deadlines(self, kind: str) -> list[int]:
        timers = self.shard.timers
        members = sorted(k[1] for k in self.shard.instances["ConsumerGroupMember"] if k[0] == GROUP)
        key = rebalance_key if kind == "RebalanceTimeout" else session_key
        return [d for d in (timers.deadline(key(GROUP, m)) for m in members) if d is not None]

    def _tick(self, kind: str) -> None:
        deadlines = self._deadlines(kind)
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

    def _reload(self) -> None:
        self.settle()
        self.groups.unload(0)
        self.groups.load(0)
        self.settle()

    def _replay_unknown(self, member: str, epoch: int = 1, previous_epoch: int = 0) -> None:
        """Append a current-assignment record for `member` with an unknown MemberState byte (at `epoch`, after
        `previous_epoch`), then reload."""
        self.settle()
        self.groups.unload(0)
        path = self.workdir / partition_dir_name("__consumer_offsets", 0)
        log = PartitionLog.open(path)
        try:
            value = schema.ConsumerGroupCurrentMemberAssignmentValue(
                member_epoch=epoch, previous_member_epoch=previous_epoch, state=UNKNOWN_STATE_BYTE,
                assigned_partitions=(), partitions_pending_revocation=())
            log.append([(schema.encode_key(schema.ConsumerGroupCurrentMemberAssignmentKey(GROUP, member)),
                         schema.encode_value(value))], timestamp_ms=self.clock.now_ms())
            log.flush()
        finally:
            log.close()
        self.groups.load(0)
        self.settle()

    def _end_txn(self) -> None:
        if self._txn is None:
            return
        pid, epoch = self._txn
        self.wait(self.node.txn.end_txn(TXN_ID, pid, epoch, "COMMIT", 4))
        self.settle(markers=True)

    # ------------------------------------------------------------ checks

    def check(self, action: Action, fired: Sequence[Fired], outcome: Outcome) -> list[str]:
        problems: list[str] = []
        if action.name == "Concurrent":
            problems += self._concurrent_problems(action, fired, outcome)
        elif action.name in REQUESTS and outcome.responses:
            problems += [f"{action.render()}: {p}" for p in self._answer_problems(action, fired,
                                                                                  outcome.responses[0])]
        problems += self._record_problems(action, fired)
        return problems

    def _concurrent_problems(self, action: Action, fired: Sequence[Fired], outcome: Outcome) -> list[str]:
        """Each of the two heartbeats' answers, against the rows from its own gate (ConsumerGroup's Heartbeat row) up
        to the next one."""
        gates = [i for i, f in enumerate(fired) if f.machine == "ConsumerGroup" and f.event == "Heartbeat"]
        if len(gates) != 2:
            return [f"{action.render()}: {len(gates)} heartbeats were decided, not 2"]
        problems = []
        parts = (fired[:gates[1]], fired[gates[1]:])
        for key, rows, response in zip(("first", "then"), parts, outcome.responses, strict=True):
            request = Action.from_json(action.args[key])
            problems += [f"{request.render()}: {p}" for p in self._answer_problems(request, rows, response)]
        return problems

    def _answer_problems(self, action: Action, fired: Sequence[Fired], response: Any) -> list[str]:
        if action.name in CLASSIC_REQUESTS:
            return self._classic_answer(action, fired, response)
        event = {"Heartbeat": "Heartbeat", "Delete": "Delete", "OffsetDelete": "OffsetDelete"}.get(action.name)
        if event is not None and not any(f.machine == "ConsumerGroup" and f.event == event for f in fired):
            return []  # another machine decided (no consumer group holds the id: the classic group's rows answer)
        if action.name == "Heartbeat":
            errors = [f.answer for f in fired if f.answer != "NONE" and not f.accepted]
            want = errors[0] if errors else "NONE"
            if response.error != want:
                return [f"answered {response.error}, the spec answers {want}"]
            if want == "NONE":
                return self._heartbeat_answer(action, fired, response)
            return []
        got = _error_of(response)
        if action.name in ("OffsetFetch", "OffsetDelete"):
            # fetchOffsets answers a group no consumer or classic group holds with -1 offsets and no error: the
            # classic group's GROUP_ID_NOT_FOUND is never seen by the client (as the ClassicGroup driver checks it)
            top = [f.answer for f in fired if f.event in ("OffsetFetch", "OffsetDelete") and f.answer != "NONE"
                   and not (f.machine == "ClassicGroup" and f.event == "OffsetFetch"
                            and f.answer == "GROUP_ID_NOT_FOUND")]
            part = [f.answer for f in fired if f.event.endswith("Partition") and f.answer != "NONE"]
            member = [f.answer for f in fired if f.machine == "ConsumerGroupMember" and f.answer != "NONE"]
            want = (top or member or part or ["NONE"])[0]
        else:
            errors = [f.answer for f in fired if f.answer != "NONE"]
            want = errors[0] if errors else "NONE"
        if action.name in ("OffsetCommit", "TxnOffsetCommit") and not any(f.event == "OffsetCommit" and
                                                                         f.machine == "ConsumerGroup" for f in fired):
            return []  # not a consumer group's commit (a classic group takes it): another machine's rows
        if got is not None and got != want:
            return [f"answered {got}, the spec answers {want}"]
        return []

    def _heartbeat_answer(self, action: Action, fired: Sequence[Fired], response: Any) -> list[str]:
        member_rows = [f for f in fired if f.machine == "ConsumerGroupMember" and f.event in
                       ("Join", "Heartbeat", "Leave", "StaticLeave")]
        if not member_rows:
            return []
        post = member_rows[-1].post
        epoch = int(action.args["epoch"])
        if epoch in (-1, -2):
            return [] if response.member_epoch == epoch else [f"left with epoch {response.member_epoch}, expected "
                                                              f"{epoch}"]
        problems = []
        if response.member_epoch != post["member_epoch"]:
            problems.append(f"answered member epoch {response.member_epoch}, the spec's is {post['member_epoch']}")
        if response.assignment is not None:
            names = {f"{self._topic_name(t)}-{p}" for t, ps in response.assignment for p in ps}
            if names != set(post["assigned"]):
                problems.append(f"answered assignment {sorted(names)}, the spec's is {sorted(post['assigned'])}")
        return problems

    def _classic_answer(self, action: Action, fired: Sequence[Fired], response: Any) -> list[str]:
        """A classic request's answer: the first error of the rows it fired (a LeaveGroup's in its member's entry),
        and for NONE the member's spec epoch as the JoinGroup's generation, its spec assignment in SyncGroup's."""
        ours = [f for f in fired if f.machine in MACHINES]
        if not ours:
            return []  # no consumer group holds the id: a classic group's rows answered
        errors = [f.answer for f in ours if f.answer != "NONE" and not f.accepted]
        want = errors[0] if errors else "NONE"
        got = response.members[0][1] if action.name == "LeaveGroup" else response.error
        if got != want:
            return [f"answered {got}, the spec answers {want}"]
        member = [f for f in ours if f.machine == "ConsumerGroupMember"]
        if want != "NONE" or not member or any(f.to_state == "Dead" for f in ours):
            return []  # refused, or no member decided, or converted to a classic group (whose rows answer the join)
        post = member[-1].post
        if action.name == "JoinGroup" and response.generation_id != post["member_epoch"]:
            return [f"answered generation {response.generation_id}, the spec's member epoch is {post['member_epoch']}"]
        if action.name == "SyncGroup":
            names = {f"{tp.topic}-{tp.partition}" for tp in decode_assignment(response.assignment).partitions}
            if names != set(post["assigned"]):
                return [f"synced assignment {sorted(names)}, the spec's is {sorted(post['assigned'])}"]
        return []

    def _topic_name(self, topic_id: Any) -> str:
        for name, tid in self._ids.items():
            if tid == topic_id:
                return name
        for name, _ in TOPICS:
            if self.topic_id(name) == topic_id:
                return name
        return str(topic_id)

    def _written(self) -> list[tuple[Any, Any]]:
        out = []
        for batch in self.shard.log.read(self._log_mark):
            if batch.is_control:
                continue
            for r in batch.records:
                if r.offset >= self._log_mark and r.key is not None:
                    out.append(schema.decode_record(r.key, r.value))
        return out

    def _record_problems(self, action: Action, fired: Sequence[Fired]) -> list[str]:
        if action.name not in (*REQUESTS, "Concurrent"):
            return []
        written = [(k, v) for k, v in self._written() if getattr(k, "group_id", getattr(k, "group", None)) == GROUP]
        ours = [f for f in fired if f.machine in MACHINES]
        others = [k for k, _ in written if not isinstance(k, schema.OffsetCommitKey)]
        if ours and all(not f.accepted for f in ours) and others:
            return [f"every row rejected, yet {len(written)} records were written to __consumer_offsets"]
        problems = []
        posts = {f.key[1]: f.post for f in fired if f.machine == "ConsumerGroupMember" and f.accepted}
        last: dict[str, Any] = {}  # a member's latest current-assignment record of the step (a static replacement
        for key, value in written:  # writes the copy at epoch 0 before the reconciled one, as Kafka does)
            if isinstance(key, schema.ConsumerGroupCurrentMemberAssignmentKey) and key.member_id in posts:
                last[key.member_id] = value
        for member_id, value in sorted(last.items()):
            post = posts[member_id]
            key = schema.ConsumerGroupCurrentMemberAssignmentKey(GROUP, member_id)
            if value is None:
                if post["state"] != "Removed":
                    problems.append(f"member {key.member_id}'s assignment was tombstoned, the spec has it "
                                    f"{post['state']}")
                continue
            if (value.member_epoch, value.previous_member_epoch) != (post["member_epoch"],
                                                                     post["previous_member_epoch"]):
                problems.append(f"member {key.member_id}'s record has epochs ({value.member_epoch}, "
                                f"{value.previous_member_epoch}), the spec ({post['member_epoch']}, "
                                f"{post['previous_member_epoch']})")
        return problems


def _error_of(response: Any) -> str | None:
    if isinstance(response, list):  # DeleteGroups
        return str(response[0][1]) if response else None
    error = getattr(response, "error", None)
    if error is not None and error != "NONE":
        return str(error)
    topics = getattr(response, "topics", None)
    if topics:
        errors = set()
        for _, parts in topics:
            for part in parts:
                errors.add(str(part[1]) if isinstance(part, tuple) else str(getattr(part, "error", "NONE")))
        return errors.pop() if len(errors) == 1 else f"mixed {sorted(errors)}"
    return None if error is None else str(error)


__all__ = ["ConsumerGroupDriver", "heartbeat"]
