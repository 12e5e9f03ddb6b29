"""Search hooks of the ClassicGroup driver (`classic_group.py`): how the path search turns a spec row into an action.

Owns `ClassicGroupSearch` (for every row worth visiting from the group's state, z3 solves the row's guard with the
driver's pins and preferences, and `action_for` turns the arguments into the driver's action; the rows that answer
only the group id "" are asked of that id's fresh instance), the seed programs (`SEEDS`: deep group structures at
depth 0) and the targeted programs (`PROGRAMS`: the items the breadth-first search's budget does not reach).
Must not import: kcoord.cli.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kcoord.model import ir

from ..argsolver import Lookup
from ..explore import Context
from .base import Action, Key
from .classic_group import GROUP, MACHINE, PROTOCOL_TYPE, SESSION_MS, group_config


class ClassicGroupSearch:
    machine = MACHINE
    key: Key = (GROUP,)

    def candidates(self, ctx: Context) -> list[Action]:
        pre = ctx.view(MACHINE, self.key)
        env = ctx.env
        out = []
        for row in ctx.rows_from(MACHINE, pre["state"]):
            if not ctx.worth(MACHINE, row, pre["state"], self.key):
                continue
            args = ctx.solve(MACHINE, row, pre, pins=self.pins(row.event, pre, env), prefer=self.prefer(row.event, pre),
                             strings=self.strings(pre, env))
            if args is None:
                continue
            action = self.action_for(row, args, pre, env)
            if action is not None:
                out.append(action)
        return out + self._blank_group(ctx, pre) + self.extra_actions(pre)

    def _blank_group(self, ctx: Context, pre: Mapping[str, Any]) -> list[Action]:
        """The rows that answer only the group id "" (INVALID_GROUP_ID), asked of the fresh instance of that id:
        the same (row, state) items, reached with the request naming group ""."""
        blank = ctx.view(MACHINE, ("",))
        if pre["state"] != blank["state"]:
            return []
        out = []
        for row in ctx.rows_from(MACHINE, blank["state"]):
            if not isinstance(row, ir.Rejection) or row.error != "INVALID_GROUP_ID" or \
                    not ctx.worth(MACHINE, row, blank["state"], ("",)):
                continue
            args = ctx.solve(MACHINE, row, blank, pins=self.pins(row.event, blank, {}),
                             prefer=self.prefer(row.event, blank), strings=[PROTOCOL_TYPE, "range", "m-1"])
            action = self.action_for(row, args, blank, {}) if args is not None else None
            if action is not None:
                out.append(Action(action.name, {**action.args, "group": ""}))
        return out

    def seeds(self, factory: Any, refs: Mapping[str, Any]) -> list[tuple[Action, ...]]:
        """Programs that put a full group, a stable group with offsets, a static member, ... at depth 0."""
        return [tuple(p) for p in SEEDS]

    def programs(self, factory: Any, refs: Mapping[str, Any]) -> list[tuple[Action, ...]]:
        """Targeted programs for the items the search's budget does not reach (see `PROGRAMS`)."""
        return [tuple(p) for p in PROGRAMS]

    def strings(self, pre: Mapping[str, Any], env: Mapping[str, Any]) -> list[str]:
        return [PROTOCOL_TYPE, "range", "roundrobin", *env.get("instances", {}), "m-99", "s9"]

    def pins(self, event: str, pre: Mapping[str, Any], env: Mapping[str, Any]) -> dict[str, Any]:
        cfg = group_config()
        pins: dict[str, Any] = {}
        if event.startswith("Join"):
            pins.update(min_session_timeout_ms=cfg.min_session_timeout_ms,
                        max_session_timeout_ms=cfg.max_session_timeout_ms,
                        join_phase_full=len(pre["awaiting_join"]) >= cfg.max_size,
                        group_full=len(pre["members"]) >= cfg.max_size)
        instances = dict(env.get("instances", {}))
        if event in ("JoinNewStaticMember", "JoinKnownMember", "SyncGroup", "Heartbeat", "LeaveGroupMember",
                     "OffsetCommit", "TxnOffsetCommit"):
            pins["mapped_member"] = Lookup("instance_id", instances, "")
        return pins

    def prefer(self, event: str, pre: Mapping[str, Any]) -> dict[str, Any]:
        common = {"req_protocol_type": PROTOCOL_TYPE, "common_protocol": True, "session_timeout_ms": SESSION_MS,
                  "instance_id": "", "pending": False}
        generation = {"generation_id": pre["generation"]}
        return {"JoinNewDynamicMember": {**common, "requires_known_member_id": False},
                "JoinNewStaticMember": {**common, "instance_id": "s2", "protocol_unchanged": True},
                "JoinKnownMember": {**common, "same_metadata": True},
                "SyncGroup": {**generation, "instance_id": "", "req_protocol_type": PROTOCOL_TYPE,
                              "req_protocol": pre["protocol"]},
                "Heartbeat": {**generation, "instance_id": ""},
                "LeaveGroupMember": {"instance_id": ""},
                "OffsetCommit": {**generation, "instance_id": "", "api_version": 9},
                "TxnOffsetCommit": {**generation, "instance_id": ""},
                "OffsetFetchPartition": {"topic": "topic-a", "partition": 0},
                "OffsetDeletePartition": {"topic": "topic-a", "partition": 0}}.get(event, {})

    def action_for(self, row: ir.Row, args: Mapping[str, Any], pre: Mapping[str, Any], env: Mapping[str, Any]
                   ) -> Action | None:
        e = row.event
        if e == "JoinNewDynamicMember":
            return Action(e, {"version": 4 if args["requires_known_member_id"] else 3,
                              "protocol_type": args["req_protocol_type"],
                              "protocols": _protocols(args["common_protocol"], pre), "session_timeout_ms":
                              args["session_timeout_ms"]})
        if e == "JoinNewStaticMember":
            protocols = _protocols(args["common_protocol"], pre)
            if not args["protocol_unchanged"] and protocols:
                protocols = ["roundrobin", "range"]
            return Action(e, {"instance": args["instance_id"], "version": 9, "protocol_type": args["req_protocol_type"],
                              "protocols": protocols, "session_timeout_ms": args["session_timeout_ms"]})
        if e == "JoinKnownMember":
            return Action(e, {"member": args["member_id"], "instance": args["instance_id"], "version": 9,
                              "protocol_type": args["req_protocol_type"],
                              "protocols": _protocols(args["common_protocol"], pre),
                              "same_metadata": args["same_metadata"], "session_timeout_ms": args["session_timeout_ms"]})
        if e == "SyncGroup":
            return Action(e, {"member": args["member_id"], "instance": args["instance_id"],
                              "generation": args["generation_id"], "protocol_type": args["req_protocol_type"],
                              "protocol": args["req_protocol"]})
        if e == "Heartbeat":
            return Action(e, {"member": args["member_id"], "instance": args["instance_id"],
                              "generation": args["generation_id"]})
        if e == "LeaveGroupMember":
            return Action(e, {"member": args["member_id"], "instance": args["instance_id"]})
        if e in ("OffsetCommit", "TxnOffsetCommit"):
            extra = {"api_version": args["api_version"]} if e == "OffsetCommit" else {}
            return Action(e, {"member": args["member_id"], "instance": args["instance_id"],
                              "generation": args["generation_id"], **extra})
        if e in ("OffsetFetch", "OffsetFetchPartition"):
            return Action("OffsetFetch", {"topic": args.get("topic", "topic-a"), "partition": args.get("partition", 0),
                                          "require_stable": args.get("require_stable", False)})
        if e in ("OffsetDelete", "OffsetDeletePartition"):
            topic = args.get("topic", "topic-a")
            if e == "OffsetDeletePartition" and not args["in_subscriptions"] and args["subscriptions_known"]:
                topic = "topic-b"
            return Action("OffsetDelete", {"topic": topic, "partition": args.get("partition", 0)})
        if e == "DeleteGroup":
            return Action(e)
        if e in ("CompleteJoin", "ExtendInitialDelay", "MemberExpired", "PendingSyncExpired"):
            return Action("Tick")
        if e in ("ExpireOffset", "ExpireGroup"):
            return Action("ExpireOffsets")
        if e == "AssignmentWriteFailed" and pre["leader"]:
            return Action(e, {"member": pre["leader"], "generation": pre["generation"],
                              "protocol_type": pre["protocol_type"], "protocol": pre["protocol"]})
        if e in ("RebalanceOverCapacity", "UpgradeToConsumerGroup"):
            return Action(e)
        if e == "Unload":
            return Action("Reload")
        return None  # AssignmentWritten: part of the leader's SyncGroup

    def extra_actions(self, pre: Mapping[str, Any]) -> list[Action]:
        out = [Action("EndTxn", {"result": "COMMIT"})] if pre["exists"] else []
        if pre["state"] == "CompletingRebalance" and pre["leader"]:
            # the leader's SyncGroup whose write fails: its row's guard reads the SyncGroup's own effect (the leader
            # parked in awaiting_sync), so no argument enables it in the pre-state the solver sees
            out.append(Action("AssignmentWriteFailed", {"member": pre["leader"], "generation": pre["generation"],
                                                        "protocol_type": pre["protocol_type"],
                                                        "protocol": pre["protocol"]}))
        return out


def _join(version: int = 3) -> Action:
    return Action("JoinNewDynamicMember", {"version": version, "protocol_type": PROTOCOL_TYPE, "protocols": ["range"],
                                           "session_timeout_ms": SESSION_MS})


def _sync(member: str, generation: int) -> Action:
    return Action("SyncGroup", {"member": member, "instance": "", "generation": generation,
                                "protocol_type": PROTOCOL_TYPE, "protocol": "range"})


_STATIC = Action("JoinNewStaticMember", {"instance": "s2", "version": 9, "protocol_type": PROTOCOL_TYPE,
                                         "protocols": ["range"], "session_timeout_ms": SESSION_MS})
_COMMIT = Action("OffsetCommit", {"member": "m-1", "instance": "", "generation": 1, "api_version": 9})
#: seed programs (member ids are deterministic: `m-<n>` in join order): deep group structures at depth 0
SEEDS: tuple[tuple[Action, ...], ...] = (
    (_join(), _join(), _join()),  # a full join phase (group.max.size 3)
    (_join(), Action("Tick")),  # CompletingRebalance, generation 1
    (_join(), Action("Tick"), _sync("m-1", 1)),  # Stable
    (_join(), Action("Tick"), _sync("m-1", 1), _COMMIT),  # Stable with a committed offset
    (_join(), _join(), Action("Tick"), Action("Tick"), _sync("m-1", 1)),  # Stable, m-2 still to sync
    (_join(), _join(), _join(), Action("Tick"), Action("Tick"), _sync("m-1", 1)),  # a full Stable group
    (_join(), _join(), _join(), Action("Tick"), Action("Tick")),  # a full group, CompletingRebalance
    (_STATIC, Action("Tick"), _sync("s2-1", 1)),  # a static member, Stable
    (_join(), Action("Tick"), _sync("m-1", 1), _COMMIT, Action("LeaveGroupMember", {"member": "m-1",
                                                                                     "instance": ""})),
)


def _joined(*, version: int = 3, session_ms: int = SESSION_MS, protocol_type: str = PROTOCOL_TYPE) -> Action:
    return Action("JoinNewDynamicMember", {"version": version, "protocol_type": protocol_type,
                                           "protocols": ["range"], "session_timeout_ms": session_ms})


def _rejoin(member: str, *, same_metadata: bool) -> Action:
    return Action("JoinKnownMember", {"member": member, "instance": "", "version": 9, "protocol_type": PROTOCOL_TYPE,
                                      "protocols": ["range"], "same_metadata": same_metadata,
                                      "session_timeout_ms": SESSION_MS})


def _commit(member: str, generation: int, topic: str) -> Action:
    return Action("OffsetCommit", {"member": member, "instance": "", "generation": generation, "api_version": 9,
                                   "topic": topic})


def _delete(topic: str) -> Action:
    return Action("OffsetDelete", {"topic": topic, "partition": 0})


_TICK = Action("Tick")
_LONG_MS = 300_000  # a session longer than ExpireOffsets' advance (retention + a check interval)
_SLOW_MS = 30_000  # a session longer than the rebalance timeout: the join or pending-sync timer fires first
#: a Stable group of one long-lived member m-1 subscribed to topic-a
_STABLE_LONG = (_joined(session_ms=_LONG_MS), _TICK, _sync("m-1", 1))
_CONNECT_SYNC = Action("SyncGroup", {"member": "m-1", "instance": "", "generation": 1, "protocol_type": "connect",
                                     "protocol": "range"})
#: targeted programs, each ending in the items the breadth-first search's budget does not reach
PROGRAMS: tuple[tuple[Action, ...], ...] = (
    # a follower rejoining Stable with its metadata unchanged gets the current generation (row 38)
    (_join(), _join(), _TICK, _TICK, _sync("m-1", 1), _sync("m-2", 1), _rejoin("m-2", same_metadata=True)),
    # the offset of a topic the members do not consume is deleted, in Stable, PreparingRebalance,
    # CompletingRebalance (105); nothing stored for it in PreparingRebalance (106)
    (*_STABLE_LONG, _commit("m-1", 1, "topic-b"), _delete("topic-b")),
    (*_STABLE_LONG, _commit("m-1", 1, "topic-b"), _join(), _delete("topic-b")),
    (*_STABLE_LONG, _commit("m-1", 1, "topic-b"), _join(), _TICK, _delete("topic-b")),
    (*_STABLE_LONG, _join(), _delete("topic-b")),
    # a group that does not use the consumer protocol keeps its offsets while it has members (99)
    (_joined(protocol_type="connect"), _delete("topic-a"), _TICK, _delete("topic-a"), _CONNECT_SYNC,
     _delete("topic-a")),
    # the expiration job in Stable: the unconsumed topic's offset is not due, then due (132, 134); kept while a
    # transaction holds a pending offset for it (133); a group without the consumer protocol expires nothing (130)
    (*_STABLE_LONG, _commit("m-1", 1, "topic-b"), Action("ExpireOffsets")),
    (*_STABLE_LONG, _commit("m-1", 1, "topic-b"), Action("TxnOffsetCommit", {
        "member": "m-1", "instance": "", "generation": 1, "topic": "topic-b"}), Action("ExpireOffsets")),
    (_joined(protocol_type="connect", session_ms=_LONG_MS), _TICK, _CONNECT_SYNC, _commit("m-1", 1, "topic-a"),
     Action("ExpireOffsets")),
    # the pending-sync timer fires before the sessions end: in Stable, in CompletingRebalance (123); in Stable after
    # everyone synced (122)
    (_joined(session_ms=_SLOW_MS), _joined(session_ms=_SLOW_MS), _TICK, _TICK, _sync("m-1", 1), _TICK),
    (_joined(session_ms=_SLOW_MS), _joined(session_ms=_SLOW_MS), _TICK, _TICK, _TICK),
    (_joined(session_ms=_SLOW_MS), _TICK, _sync("m-1", 1), _TICK),
    # a member parked in SyncGroup, or in JoinGroup, outlives its session (118)
    (_joined(session_ms=_SLOW_MS), _join(), _TICK, _TICK, _sync("m-2", 1), _TICK),
    (_joined(session_ms=_SLOW_MS), _join(), _TICK, _TICK, _sync("m-1", 1), _sync("m-2", 1),
     _rejoin("m-2", same_metadata=False), _TICK),
    # nobody rejoins but a static member remains: another rebalance timeout (113)
    (Action("JoinNewStaticMember", {"instance": "s2", "version": 9, "protocol_type": PROTOCOL_TYPE,
                                    "protocols": ["range"], "session_timeout_ms": _SLOW_MS}),
     _joined(session_ms=_SLOW_MS), _TICK, _TICK, _sync("s2-1", 1), _sync("m-2", 1),
     Action("LeaveGroupMember", {"member": "m-2", "instance": ""}), _TICK),
    # group.max.size lowered under a loaded group: a member that has not rejoined is kicked out of the full join
    # phase (25)
    (_join(), _join(), _join(), _TICK, _TICK, _sync("m-1", 1), Action("RebalanceOverCapacity"),
     _rejoin("m-1", same_metadata=True), _rejoin("m-2", same_metadata=True)),
    # a pending id (MEMBER_ID_REQUIRED) comes back to a full group: PreparingRebalance, CompletingRebalance, Stable
    # (26)
    (_join(), _join(4), _join(), _join(), _rejoin("m-2", same_metadata=True)),
    (_join(), _join(4), _join(), _join(), _TICK, _TICK, _rejoin("m-2", same_metadata=True)),
    (_join(), _join(4), _join(), _join(), _TICK, _TICK, _sync("m-1", 1), _rejoin("m-2", same_metadata=True)),
)


def _protocols(common: bool, pre: Mapping[str, Any]) -> list[str]:
    """The protocols a JoinGroup lists for the spec's `common_protocol` (members of this driver all support
    `range`): `range`, none at all (a group without members has nothing in common with an empty list), or one no
    member supports."""
    if common:
        return ["range"]
    return [] if not pre["members"] else ["roundrobin"]
