"""The ConsumerGroup and ConsumerGroupMember specs (KIP-848): they load clean, are documented, match Kafka's
reconciliation edges, and walk Kafka's flows with the Python evaluator — exactly one row per step, invariants and
step properties re-checked after every transition.

The scenarios drive both machines the way the coordinator will (`Coordinator` below): the group-level checks first,
then the member's event with the target computed by a toy assignor, then the group events that outcome implies. A
seeded random simulation of many clients (lost responses, slow revocations, leaves, static restarts, timeouts) checks
after every request that the two machines agree with each other (the group's members, unreconciled set and static
instances are what the members say) and that no partition is held by two members of the group (the `exclusive`
trace properties).
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest

from kcoord.model import ir
from kcoord.model.loader import load_files, spec_dir
from kcoord.model.pyexpr import PythonEvaluator, initial_state
from tests.model.kafka_tables import consumer_group_member as member_table

EV = PythonEvaluator()
GROUP = "orders"
PARTITIONS = ("t-0", "t-1", "t-2", "t-3", "t-4", "t-5")
LIVE = ("Stable", "UnrevokedPartitions", "UnreleasedPartitions", "Unknown")

State = dict[str, Any]


@pytest.fixture(scope="module")
def machines() -> dict[str, ir.Machine]:
    loaded, diags = load_files([spec_dir() / "consumer_group.sm", spec_dir() / "consumer_group_member.sm"])
    assert len(diags) == 0, diags.render()
    return {m.name: m for m in loaded}


@pytest.fixture(scope="module")
def cg(machines: dict[str, ir.Machine]) -> ir.Machine:
    return machines["ConsumerGroup"]


@pytest.fixture(scope="module")
def cm(machines: dict[str, ir.Machine]) -> ir.Machine:
    return machines["ConsumerGroupMember"]


# ---------------------------------------------------------------- stepping helpers


def step(machine: ir.Machine, pre: State, event: str, /, **args: Any) -> tuple[ir.Row, State]:
    """Fire `event`: exactly one row must match; returns it and the post-state (the pre-state for a rejection)."""
    full = {**args, "pending": False}
    assert set(args) == {p.name for p in machine.event(event).params}, f"arguments of {event}: {sorted(args)}"
    assert EV.holds(machine.event(event).requires, pre, full), f"{event}{args} violates its `requires` in {pre}"
    rows = EV.enabled_rows(machine, pre, event, full)
    assert len(rows) == 1, f"{event}{args} in {pre['state']}: {[r.label for r in rows]} match, expected exactly one"
    row = rows[0]
    post = EV.fire(row, pre, full) if isinstance(row, ir.Transition) else dict(pre)
    for inv in machine.invariants:
        assert EV.holds(inv.expr, post), f"invariant {inv.name} broken after {row.label}: {post}"
    if isinstance(row, ir.Transition):
        for prop in machine.steps:
            assert EV.holds(prop.expr, pre, full, post), f"step property {prop.name} broken by {row.label}"
    return row, post


def accept(machine: ir.Machine, pre: State, event: str, to: str, /, **args: Any) -> State:
    row, post = step(machine, pre, event, **args)
    assert isinstance(row, ir.Transition), f"{event} was rejected with {getattr(row, 'error', '?')}"
    assert post["state"] == to, f"{event} went to {post['state']}, expected {to}"
    return post


def reject(machine: ir.Machine, pre: State, event: str, error: str, /, **args: Any) -> None:
    row, post = step(machine, pre, event, **args)
    assert isinstance(row, ir.Rejection), f"{event} was accepted by {row.label}"
    assert row.error == error, f"{event} answered {row.error}, expected {error}"
    assert post == pre


def parts(*numbers: int) -> frozenset[str]:
    return frozenset(f"t-{n}" for n in numbers)


# ---------------------------------------------------------------- argument builders (one request's fields)


def gate_args(member_id: str, epoch: int, *, instance: str = "", owned: Iterable[str] | None = (),
              topics: Iterable[str] | None = ("t",), rebalance_timeout: int = 30_000, group_size: int = 0,
              max_size: int = 100, foreign_group: bool = False, rack: str | None = None, regex: str | None = None,
              assignor: str | None = None, group_id: str = GROUP, api_version: int = 1,
              holder: str = "") -> dict[str, Any]:
    """ConsumerGroup.Heartbeat's arguments for one ConsumerGroupHeartbeat request (`None` = the field is null;
    `holder`: the member holding `instance`, "" for none)."""
    return {"member_id": member_id, "epoch": epoch, "api_version": api_version,
            "member_id_blank": not member_id.strip(), "group_id_blank": not group_id.strip(),
            "instance": instance, "instance_given": instance != "", "instance_blank": False,
            "rack_given": rack is not None, "rack_blank": rack is not None and not rack.strip(),
            "rebalance_timeout": rebalance_timeout, "owned": frozenset(owned or ()), "owned_given": owned is not None,
            "topics_given": topics is not None, "regex_given": regex is not None,
            "assignor_given": assignor is not None, "assignor_known": assignor in (None, "uniform", "range"),
            "foreign_group": foreign_group, "group_size": group_size, "max_size": max_size, "holder": holder}


def join_args(sender: str, target: Iterable[str], target_epoch: int, *, instance: str = "",
              held_in_group: Iterable[str] = (), inherited: Iterable[str] = (), metadata_changed: bool = True,
              rebalance_timeout: int = 30_000) -> dict[str, Any]:
    return {"sender": sender, "instance": instance, "rebalance_timeout": rebalance_timeout,
            "metadata_changed": metadata_changed, "inherited": frozenset(inherited), "target": frozenset(target),
            "target_epoch": target_epoch, "held_in_group": frozenset(held_in_group)}


def hb_args(sender: str, epoch: int, owned: Iterable[str] | None, target: Iterable[str], target_epoch: int, *,
            instance: str = "", held_in_group: Iterable[str] = (), metadata_changed: bool = False,
            rebalance_timeout: int = -1, classic_join: bool = False) -> dict[str, Any]:
    return {"sender": sender, "instance": instance, "epoch": epoch, "owned": frozenset(owned or ()),
            "owned_given": owned is not None, "rebalance_timeout": rebalance_timeout,
            "metadata_changed": metadata_changed, "target": frozenset(target), "target_epoch": target_epoch,
            "held_in_group": frozenset(held_in_group), "classic_join": classic_join}


def joined(m: str, instance: str = "", **overrides: Any) -> dict[str, Any]:
    """MemberJoined's arguments for a consumer-protocol member subscribing to topic names."""
    return {"m": m, "instance": instance, "names_changed": True, "regex": "", "regex_valid": True,
            "metadata_changed": False, "classic": False, **overrides}


def removed(m: str, instance: str = "", **overrides: Any) -> dict[str, Any]:
    """MembersRemoved's arguments for one member without a regular expression; no downgrade."""
    return {"ms": frozenset({m}), "instances": frozenset({instance} - {""}), "dropped": frozenset(),
            "downgrade_allowed": True, "classic_fits": True, **overrides}


# ---------------------------------------------------------------- a tiny coordinator driving both machines


def round_robin(members: Iterable[str]) -> dict[str, frozenset[str]]:
    """A deliberately non-sticky assignor: partition i goes to the i-th member (sorted), so joins move partitions."""
    ordered = sorted(members)
    out: dict[str, set[str]] = {m: set() for m in ordered}
    for i, p in enumerate(PARTITIONS):
        if ordered:
            out[ordered[i % len(ordered)]].add(p)
    return {m: frozenset(ps) for m, ps in out.items()}


@dataclass
class Coordinator:
    """Handles ConsumerGroupHeartbeat like Kafka's GroupMetadataManager, one decision per machine and event.

    A request is decided on copies first (the group events its outcome implies, then the member's event); nothing is
    committed when any row answers an error, as Kafka's handlers write no record when they throw.
    """

    cg: ir.Machine
    cm: ir.Machine
    group: State = field(default_factory=dict)
    members: dict[str, State] = field(default_factory=dict)  # every member the group has, by member id
    targets: dict[str, frozenset[str]] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)  # "event -> state" for the member and group events fired

    def __post_init__(self) -> None:
        self.group = initial_state(self.cg, {"group_id": GROUP})

    # -- lookups the handler makes (computation, passed to the spec as arguments)

    def fresh(self, member_id: str) -> State:
        return initial_state(self.cm, {"group_id": GROUP, "member_id": member_id})

    def entity(self, member_id: str, instance: str) -> State:
        """The member a request is addressed to: the instance's holder for a static request, else the member id."""
        if instance:
            holder = [s for s in self.members.values() if s["instance_id"] == instance]
            if holder:
                return holder[0]
        return self.members.get(member_id) or self.fresh(member_id)

    def held_in_group(self) -> frozenset[str]:
        return frozenset().union(*(s["held"] for s in self.members.values()))

    def _group(self, group: State, event: str, **args: Any) -> State:
        row, post = step(self.cg, group, event, **args)
        assert isinstance(row, ir.Transition), f"group {event} answered {getattr(row, 'error', '?')}"
        return post

    def _gate(self, member_id: str, epoch: int, instance: str, **request: Any) -> str:
        holder = next((m for m, s in self.members.items() if instance and s["instance_id"] == instance
                       and m in self.group["members"]), "")
        args = gate_args(member_id, epoch, instance=instance, group_size=len(self.group["members"]), holder=holder,
                         **request)
        row, _ = step(self.cg, self.group, "Heartbeat", **args)
        assert isinstance(row, ir.Rejection)
        return row.error

    def _with_target(self, group: State, targets: dict[str, frozenset[str]]) -> tuple[State, dict[str, frozenset[str]]]:
        if group["group_epoch"] > group["assignment_epoch"]:
            group = self._group(group, "TargetAssignmentComputed")
            targets = round_robin(group["members"])
        return group, targets

    def _commit(self, group: State, targets: dict[str, frozenset[str]], *entities: State) -> None:
        """Apply the decided group state and member post-states, then MemberReconciled if the member got there."""
        self.group, self.targets = group, targets
        for s in entities:
            if s["state"] == "Removed":
                self.members.pop(s["member_id"], None)
            else:
                self.members[s["member_id"]] = s
        s = entities[-1]
        if s["state"] == "Stable" and s["member_epoch"] == group["assignment_epoch"] \
                and s["member_id"] in group["unreconciled"]:
            self.group = self._group(self.group, "MemberReconciled", m=s["member_id"])

    # -- requests

    def join(self, member_id: str, instance: str = "", metadata_changed: bool = True) -> tuple[str, State | None]:
        """ConsumerGroupHeartbeat(MemberEpoch 0): the error, and the member after the request."""
        error = self._gate(member_id, 0, instance)
        if error != "NONE":
            return error, None
        old = self.entity(member_id, instance)
        group, targets = self.group, self.targets
        entities: list[State] = []
        inherited: frozenset[str] = frozenset()
        if old["state"] == "Absent":
            group = self._group(group, "MemberJoined", **joined(member_id, instance))
        elif old["state"] == "StaticLeft" and instance:
            group = self._group(group, "StaticMemberReplaced", old_member=old["member_id"], new_member=member_id,
                                instance=instance, classic=False, downgrade_allowed=False, classic_fits=True)
            targets = {(member_id if m == old["member_id"] else m): t for m, t in targets.items()}
        group, targets = self._with_target(group, targets)
        args = join_args(member_id, targets.get(member_id, frozenset()), group["assignment_epoch"], instance=instance,
                         held_in_group=self.held_in_group(), metadata_changed=metadata_changed)
        if old["state"] == "StaticLeft" and instance and old["member_id"] != member_id:
            row, gone = step(self.cm, old, "Join", **args)  # the holder at -2 is replaced first
            assert isinstance(row, ir.Transition) and gone["state"] == "Removed"
            entities.append(gone)
            inherited, old = old["assigned"], self.fresh(member_id)
        row, post = step(self.cm, old, "Join", **{**args, "inherited": inherited})
        if isinstance(row, ir.Rejection) and row.error != "NONE":
            return row.error, None
        self._commit(group, targets, *entities, post)
        self.log.append(f"Join -> {post['state']}")
        return "NONE", post

    def heartbeat(self, member_id: str, epoch: int, owned: Iterable[str] | None, instance: str = "",
                  subscription_changed: bool = False) -> tuple[str, State | None]:
        """ConsumerGroupHeartbeat(MemberEpoch > 0)."""
        error = self._gate(member_id, epoch, instance, owned=owned, topics=None, rebalance_timeout=-1)
        if error != "NONE":
            return error, None
        entity = self.entity(member_id, instance)
        group, targets = self.group, self.targets
        if subscription_changed and entity["state"] != "Absent":
            group = self._group(group, "SubscriptionChanged", old_regex="", new_regex="", old_regex_last=False,
                                new_regex_valid=True, names_changed=True, metadata_changed=False, classic=False)
        group, targets = self._with_target(group, targets)
        args = hb_args(member_id, epoch, owned, targets.get(entity["member_id"], frozenset()),
                       group["assignment_epoch"], instance=instance, held_in_group=self.held_in_group(),
                       metadata_changed=subscription_changed)
        row, post = step(self.cm, entity, "Heartbeat", **args)
        if isinstance(row, ir.Rejection) and row.error != "NONE":
            return row.error, None
        self._commit(group, targets, post)
        self.log.append(f"Heartbeat -> {post['state']}")
        return "NONE", post

    def leave(self, member_id: str, instance: str = "", epoch: int = -1) -> str:
        """ConsumerGroupHeartbeat(MemberEpoch -1 or -2)."""
        error = self._gate(member_id, epoch, instance, owned=None, topics=None)
        if error != "NONE":
            return error
        entity = self.entity(member_id, instance)
        event = "Leave" if epoch == -1 else "StaticLeave"
        row, post = step(self.cm, entity, event, sender=member_id, instance=instance)
        if isinstance(row, ir.Rejection):
            return row.error
        if post["state"] == "Removed":
            group = self._group(self.group, "MembersRemoved", **removed(entity["member_id"], entity["instance_id"]))
        else:
            group = self._group(self.group, "StaticMemberLeft", m=entity["member_id"], instance=instance)
        self._commit(group, self.targets, post)
        self.log.append(f"{event} -> {post['state']}")
        return "NONE"

    def timeout(self, member_id: str, event: str, **args: Any) -> str:
        """SessionTimeout or RebalanceTimeout(epoch) for a member; returns the member's state afterwards."""
        entity = self.members.get(member_id) or self.fresh(member_id)
        _, post = step(self.cm, entity, event, **args)
        if post["state"] == "Removed":
            group = self._group(self.group, "MembersRemoved", **removed(member_id, entity["instance_id"]))
            self._commit(group, self.targets, post)
        return post["state"]

    # -- what must hold between requests

    def check_consistency(self) -> None:
        g, ms = self.group, self.members
        assert g["members"] == frozenset(ms), (g["members"], sorted(ms))
        reconciled = {m for m, s in ms.items() if s["state"] == "Stable" and s["member_epoch"] == g["assignment_epoch"]}
        assert g["unreconciled"] == frozenset(ms) - reconciled
        assert g["static_instances"] == frozenset(s["instance_id"] for s in ms.values() if s["instance_id"])
        assert g["static_left"] == frozenset(s["instance_id"] for s in ms.values() if s["state"] == "StaticLeft")
        seen: dict[str, str] = {}
        for m, s in sorted(ms.items()):
            assert s["state"] in (*LIVE, "StaticLeft")
            assert s["member_epoch"] <= g["assignment_epoch"]
            for p in s["held"]:
                assert p not in seen, f"{p} held by {seen[p]} and {m} at once"
                seen[p] = m


@pytest.fixture
def coordinator(cg: ir.Machine, cm: ir.Machine) -> Coordinator:
    return Coordinator(cg, cm)


# ---------------------------------------------------------------- loading, docs, Kafka's table


def test_specs_load_clean_with_their_keys(cg: ir.Machine, cm: ir.Machine) -> None:
    assert (cg.kind, [k.name for k in cg.keys]) == ("coordinator", ["group_id"])
    assert (cm.kind, [k.name for k in cm.keys]) == ("coordinator", ["group_id", "member_id"])


@pytest.mark.parametrize("name", ["ConsumerGroup", "ConsumerGroupMember"])
def test_every_state_event_and_variable_is_documented(machines: dict[str, ir.Machine], name: str) -> None:
    m = machines[name]
    assert m.doc.strip()
    assert [s.name for s in m.states if not s.doc.strip()] == []
    assert [e.name for e in m.events if not e.doc.strip()] == []
    assert [v.name for v in m.variables if not v.doc.strip()] == []


def test_state_names_are_kafkas(cg: ir.Machine, cm: ir.Machine) -> None:
    assert [s.name for s in cg.states] == ["Empty", "Assigning", "Reconciling", "Stable", "Dead"]
    assert cg.initial.name == "Empty" and cg.state("Dead").final
    assert {"Stable", "UnrevokedPartitions", "UnreleasedPartitions", "Unknown"} <= {s.name for s in cm.states}
    assert cm.initial.name == "Absent" and cm.state("Removed").final


def test_reconciliation_edges_equal_kafkas(cm: ir.Machine) -> None:
    kafka = member_table.VALID_PREVIOUS
    ours = {target: cm.valid_previous(target) & set(kafka) for target in kafka}
    assert ours == kafka, member_table.SOURCE


def test_every_section_3_6_rule_is_a_row(cm: ir.Machine) -> None:
    """The §3.6 table, state by state: the Heartbeat rows out of each MemberState and where they go."""
    def targets(state: str) -> set[str]:
        """Where the rows after the epoch checks lead: a state, or !ERROR for a rejection."""
        out = set()
        for r in cm.rows_for(state, "Heartbeat"):
            if isinstance(r, ir.Transition):
                out.add(r.target)
            elif r.origin != "check":
                out.add(f"!{r.error}")
        return out
    assert targets("Stable") == {"!NONE", "Stable", "UnrevokedPartitions", "UnreleasedPartitions"}
    assert targets("UnrevokedPartitions") == {"!NONE", "UnrevokedPartitions", "UnreleasedPartitions", "Stable"}
    assert targets("UnreleasedPartitions") == {"!NONE", "UnrevokedPartitions", "UnreleasedPartitions", "Stable"}
    assert targets("Unknown") == {"!FENCED_MEMBER_EPOCH", "UnreleasedPartitions", "Stable"}


def test_trace_properties_declare_exclusive_ownership(cm: ir.Machine) -> None:
    props = {p.name: (p.form, p.subject, p.per) for p in cm.traces}
    assert props["exclusive_assignment"] == ("exclusive", ("assigned",), ("group_id",))
    assert props["exclusive_partition_epochs"] == ("exclusive", ("held",), ("group_id",))


# ---------------------------------------------------------------- the group's derived state, event by event


def test_first_member_joins_then_reconciles(coordinator: Coordinator) -> None:
    c = coordinator
    g = c.group
    reject(c.cg, g, "Heartbeat", "NONE", **gate_args("a", 0))
    g = accept(c.cg, g, "MemberJoined", "Assigning", **joined("a"))
    assert (g["group_epoch"], g["assignment_epoch"], g["unreconciled"]) == (1, 0, {"a"})
    g = accept(c.cg, g, "TargetAssignmentComputed", "Reconciling")
    assert g["assignment_epoch"] == 1
    a = accept(c.cm, c.fresh("a"), "Join", "Stable", **join_args("a", parts(0, 1, 2), 1))
    assert (a["member_epoch"], a["previous_member_epoch"], a["assigned"]) == (1, 0, parts(0, 1, 2))
    g = accept(c.cg, g, "MemberReconciled", "Stable", m="a")
    assert g["unreconciled"] == frozenset()


def test_second_member_joins_revoke_before_assign(coordinator: Coordinator) -> None:
    c = coordinator
    assert c.join("a") == ("NONE", c.members["a"])
    assert c.group["state"] == "Stable" and c.members["a"]["assigned"] == frozenset(PARTITIONS)
    # b joins: epoch 2, b's half of the partitions is still a's, so b waits for them at the new epoch
    error, b = c.join("b")
    assert error == "NONE" and b is not None
    assert (b["state"], b["member_epoch"], b["assigned"]) == ("UnreleasedPartitions", 2, frozenset())
    assert (c.group["state"], c.group["group_epoch"], c.group["assignment_epoch"]) == ("Reconciling", 2, 2)
    # a heartbeats still owning everything: it must revoke b's half and keeps epoch 1 meanwhile
    error, a = c.heartbeat("a", 1, PARTITIONS)
    assert error == "NONE" and a is not None
    assert (a["state"], a["member_epoch"], a["assigned"], a["pending_revocation"]) == \
        ("UnrevokedPartitions", 1, parts(0, 2, 4), parts(1, 3, 5))
    # b cannot get them yet; its first heartbeat still writes a record (computeNextAssignment sets the previous
    # epoch to the current one), the next ones write nothing
    error, b = c.heartbeat("b", 2, ())
    assert b is not None and (b["state"], b["member_epoch"], b["previous_member_epoch"]) == \
        ("UnreleasedPartitions", 2, 2)
    assert c.heartbeat("b", 2, ()) == ("NONE", b)
    # a still reports a partition to revoke: unchanged
    assert c.heartbeat("a", 1, parts(0, 1, 2, 4)) == ("NONE", a)
    # a has revoked: it moves to epoch 2, Stable
    error, a = c.heartbeat("a", 1, parts(0, 2, 4))
    assert a is not None and (a["state"], a["member_epoch"], a["previous_member_epoch"]) == ("Stable", 2, 1)
    assert c.group["state"] == "Reconciling"
    # now b gets the released partitions
    error, b = c.heartbeat("b", 2, ())
    assert b is not None and (b["state"], b["member_epoch"], b["assigned"]) == ("Stable", 2, parts(1, 3, 5))
    assert c.group["state"] == "Stable"
    c.check_consistency()


def test_member_epoch_validation(coordinator: Coordinator, cm: ir.Machine) -> None:
    c = coordinator
    c.join("a")
    c.join("b")
    c.heartbeat("a", 1, PARTITIONS)
    c.heartbeat("a", 1, parts(0, 2, 4))
    a = c.members["a"]
    assert (a["member_epoch"], a["previous_member_epoch"], a["assigned"]) == (2, 1, parts(0, 2, 4))
    target: dict[str, Any] = dict(target=parts(0, 2, 4), target_epoch=2, held_in_group=c.held_in_group())
    # too new
    reject(cm, a, "Heartbeat", "FENCED_MEMBER_EPOCH", **hb_args("a", 3, parts(0, 2, 4), **target))
    # the previous epoch, but owning a partition that is no longer assigned
    reject(cm, a, "Heartbeat", "FENCED_MEMBER_EPOCH", **hb_args("a", 1, parts(0, 1), **target))
    # the previous epoch with owned partitions not sent (null) is never a subset
    reject(cm, a, "Heartbeat", "FENCED_MEMBER_EPOCH", **hb_args("a", 1, None, **target))
    # an older epoch than the previous one
    reject(cm, {**a, "member_epoch": 5, "previous_member_epoch": 4}, "Heartbeat", "FENCED_MEMBER_EPOCH",
           **hb_args("a", 3, (), **{**target, "target_epoch": 5}))
    # the previous epoch with owned ⊆ assigned: a lost response, tolerated (nothing to do: already reconciled)
    reject(cm, a, "Heartbeat", "NONE", **hb_args("a", 1, parts(0, 2), **target))
    # the same through the coordinator
    assert c.heartbeat("a", 1, parts(0, 2, 4)) == ("NONE", a)
    assert c.heartbeat("a", 3, parts(0, 2, 4)) == ("FENCED_MEMBER_EPOCH", None)


def test_unknown_member_and_group(coordinator: Coordinator, cg: ir.Machine) -> None:
    c = coordinator
    assert c.heartbeat("ghost", 3, ()) == ("GROUP_ID_NOT_FOUND", None)
    assert c.leave("ghost") == "GROUP_ID_NOT_FOUND"
    c.join("a")
    assert c.heartbeat("ghost", 3, ()) == ("UNKNOWN_MEMBER_ID", None)
    assert c.leave("ghost") == "UNKNOWN_MEMBER_ID"
    assert c.heartbeat("ghost", 3, (), instance="nobody") == ("UNKNOWN_MEMBER_ID", None)
    reject(cg, c.group, "Heartbeat", "GROUP_MAX_SIZE_REACHED", **gate_args("b", 0, group_size=1, max_size=1))
    reject(cg, c.group, "Heartbeat", "NONE", **gate_args("a", 1, group_size=1, max_size=1))
    reject(cg, initial_state(cg, {"group_id": GROUP}), "Heartbeat", "GROUP_ID_NOT_FOUND",
           **gate_args("a", 0, foreign_group=True))


def test_rejoin_with_epoch_zero(coordinator: Coordinator, cm: ir.Machine) -> None:
    """A join retried after a lost response is tolerated (previous epoch 0); any later epoch-0 rejoin of a member
    the coordinator still has is fenced (Kafka [S]), until the session timeout removes it."""
    c = coordinator
    c.join("a")
    assert c.join("a", metadata_changed=False) == ("NONE", c.members["a"])  # the retried join: nothing written
    c.join("b")
    c.heartbeat("a", 1, PARTITIONS)
    c.heartbeat("a", 1, parts(0, 2, 4))  # a: epoch 2, previous 1
    assert c.join("a") == ("FENCED_MEMBER_EPOCH", None)
    assert c.timeout("a", "SessionTimeout") == "Removed"
    error, a = c.join("a")
    assert error == "NONE" and a is not None and a["previous_member_epoch"] == 0
    c.check_consistency()


def test_leave_bumps_the_group_epoch_but_a_static_leave_does_not(coordinator: Coordinator) -> None:
    c = coordinator
    c.join("a", instance="host-1")
    c.join("b")
    c.heartbeat("a", 1, PARTITIONS, instance="host-1")
    c.heartbeat("a", 1, parts(0, 2, 4), instance="host-1")
    c.heartbeat("b", 2, ())
    assert c.group["state"] == "Stable"
    epoch = c.group["group_epoch"]
    assert c.leave("a", instance="host-1", epoch=-2) == "NONE"
    a = c.members["a"]
    assert (a["state"], a["member_epoch"], a["assigned"]) == ("StaticLeft", -2, parts(0, 2, 4))
    assert (c.group["group_epoch"], c.group["state"], c.group["members"]) == (epoch, "Reconciling", {"a", "b"})
    assert c.leave("b") == "NONE"
    assert "b" not in c.members
    assert (c.group["group_epoch"], c.group["state"]) == (epoch + 1, "Assigning")
    c.check_consistency()


def test_static_member_restarts_and_is_replaced(coordinator: Coordinator) -> None:
    c = coordinator
    c.join("a", instance="host-1")
    c.join("b")
    c.heartbeat("a", 1, PARTITIONS, instance="host-1")
    c.heartbeat("a", 1, parts(0, 2, 4), instance="host-1")
    c.heartbeat("b", 2, ())
    # a new process with the same instance id while the old one is live
    assert c.join("a2", instance="host-1") == ("UNRELEASED_INSTANCE_ID", None)
    # the old process's member id heartbeating with another process's instance id
    assert c.heartbeat("b", 2, (), instance="host-1") == ("FENCED_INSTANCE_ID", None)
    assert c.leave("a", instance="host-1", epoch=-2) == "NONE"
    assert c.heartbeat("a", 2, (), instance="host-1") == ("FENCED_MEMBER_EPOCH", None)
    epoch = c.group["group_epoch"]
    error, a2 = c.join("a2", instance="host-1")
    assert error == "NONE" and a2 is not None
    assert (a2["state"], a2["member_epoch"], a2["previous_member_epoch"], a2["assigned"]) == \
        ("Stable", 2, 0, parts(0, 2, 4))
    assert "a" not in c.members and c.group["group_epoch"] == epoch and c.group["state"] == "Stable"
    c.check_consistency()


def test_static_replacement_is_refused_when_the_group_is_full(coordinator: Coordinator, cg: ir.Machine) -> None:
    """Kafka checks the group size before it looks at the instance: a restarting static member with a new member id
    cannot take its own place in a full group."""
    c = coordinator
    c.join("a", instance="host-1")
    c.leave("a", instance="host-1", epoch=-2)
    reject(cg, c.group, "Heartbeat", "GROUP_MAX_SIZE_REACHED",
           **gate_args("a2", 0, instance="host-1", group_size=1, max_size=1, holder="a"))


def test_timeouts_fence_the_member(coordinator: Coordinator) -> None:
    c = coordinator
    c.join("a")
    c.join("b")
    c.heartbeat("a", 1, PARTITIONS)
    assert c.members["a"]["state"] == "UnrevokedPartitions"
    assert c.timeout("a", "RebalanceTimeout", epoch=0) == "UnrevokedPartitions"  # another epoch's timer: ignored
    assert c.timeout("a", "RebalanceTimeout", epoch=1) == "Removed"
    assert (c.group["state"], c.group["members"]) == ("Assigning", {"b"})
    assert c.timeout("a", "SessionTimeout") == "Absent"  # already gone: ignored
    assert c.heartbeat("a", 1, ()) == ("UNKNOWN_MEMBER_ID", None)
    _, b = c.heartbeat("b", 2, ())  # the next heartbeat computes the new target: b gets everything
    assert b is not None and (b["state"], b["member_epoch"], b["assigned"]) == ("Stable", 3, frozenset(PARTITIONS))
    assert c.timeout("b", "SessionTimeout") == "Removed"
    assert c.group["state"] == "Empty"
    c.check_consistency()


def test_unknown_member_state_is_fenced_until_it_owns_nothing(cm: ir.Machine) -> None:
    s = initial_state(cm, {"group_id": GROUP, "member_id": "a"})
    s = accept(cm, s, "ReplayUnknownState", "Unknown", epoch=11, previous_epoch=11, record_assigned=parts(3),
               record_pending=parts(2), instance="", rebalance_timeout=5000)
    target: dict[str, Any] = dict(target=parts(3, 4), target_epoch=12, held_in_group=parts(2, 3))
    reject(cm, s, "Heartbeat", "FENCED_MEMBER_EPOCH", **hb_args("a", 11, parts(3), **target))
    reject(cm, s, "Heartbeat", "FENCED_MEMBER_EPOCH", **hb_args("a", 11, None, **target))
    s = accept(cm, s, "Heartbeat", "Stable", **hb_args("a", 11, (), **target))
    assert (s["member_epoch"], s["previous_member_epoch"], s["assigned"], s["pending_revocation"]) == \
        (12, 11, parts(3, 4), frozenset())


def test_a_member_at_minus_two_adopting_another_instance_is_reconciled_from_minus_two(cg: ir.Machine,
                                                                                      cm: ir.Machine) -> None:
    """Kafka 4.0.2: an epoch-0 heartbeat under the member's own id with an instance nobody holds reaches the member
    at -2 (getOrMaybeCreateMember, no replaceMember); it is reconciled from epoch -2 towards the target Kafka looks
    up by the new instance (EMPTY), and the group maps the new instance to it (no longer one that left)."""
    s = {**initial_state(cm, {"group_id": GROUP, "member_id": "a"}), "state": "StaticLeft", "member_epoch": -2,
         "previous_member_epoch": 1, "assigned": parts(0, 1, 2), "held": parts(0, 1, 2), "instance_id": "host-1",
         "rebalance_timeout_ms": 30_000}
    post = accept(cm, s, "Join", "Stable", **join_args("a", (), 1, instance="host-2", held_in_group=parts(0, 1, 2)))
    assert (post["member_epoch"], post["previous_member_epoch"], post["assigned"], post["held"],
            post["instance_id"]) == (1, -2, frozenset(), frozenset(), "host-2")
    same = accept(cm, s, "Join", "Stable", **join_args("a", parts(0, 1, 2), 1, instance="host-1",
                                                      held_in_group=parts(0, 1, 2)))
    assert same["previous_member_epoch"] == 0, "its own instance: the take-over's copy at epoch 0 (replaceMember)"
    g = {**initial_state(cg, {"group_id": GROUP}), "state": "Reconciling", "group_epoch": 1, "assignment_epoch": 1,
         "members": frozenset({"a"}), "unreconciled": frozenset({"a"}), "static_instances": frozenset({"host-1"}),
         "static_left": frozenset({"host-1"})}
    g = accept(cg, g, "InstanceAdopted", "Reconciling", m="a", old_instance="host-1", instance="host-2")
    assert (g["static_instances"], g["static_left"]) == (frozenset({"host-2"}), frozenset())
    assert accept(cg, g, "MemberReconciled", "Stable", m="a")["unreconciled"] == frozenset()


def test_unrevoked_member_moves_one_epoch_when_the_target_moves_again(cm: ir.Machine) -> None:
    """CurrentAssignmentBuilderTest.testUnrevokedPartitionsToUnrevokedPartitions: epoch 10 → 11, not 12."""
    s = {**initial_state(cm, {"group_id": GROUP, "member_id": "a"}), "state": "UnrevokedPartitions",
         "member_epoch": 10, "previous_member_epoch": 10, "assigned": parts(2, 3, 5, 6),
         "pending_revocation": parts(1, 4), "held": parts(1, 2, 3, 4, 5, 6), "rebalance_timeout_ms": 5000}
    s = accept(cm, s, "Heartbeat", "UnrevokedPartitions",
               **hb_args("a", 10, parts(2, 3, 5, 6), parts(3, 6), 12, held_in_group=parts(1, 2, 3, 4, 5, 6)))
    assert (s["member_epoch"], s["previous_member_epoch"], s["assigned"], s["pending_revocation"]) == \
        (11, 10, parts(3, 6), parts(2, 5))


def test_request_validation_order(cg: ir.Machine) -> None:
    g = initial_state(cg, {"group_id": GROUP})
    reject(cg, {**g, "group_id": ""}, "Heartbeat", "INVALID_REQUEST", **gate_args("a", 0, group_id=""))
    reject(cg, g, "Heartbeat", "INVALID_REQUEST", **gate_args("a", 0, rack=" "))
    reject(cg, g, "Heartbeat", "INVALID_REQUEST", **gate_args("", 0))
    reject(cg, g, "Heartbeat", "NONE", **gate_args("", 0, api_version=0))
    reject(cg, g, "Heartbeat", "INVALID_REQUEST", **gate_args("a", -3))
    reject(cg, g, "Heartbeat", "INVALID_REQUEST", **gate_args("", 4))
    reject(cg, g, "Heartbeat", "INVALID_REQUEST", **gate_args("a", 0, rebalance_timeout=-1))
    reject(cg, g, "Heartbeat", "INVALID_REQUEST", **gate_args("a", 0, owned=parts(1)))
    reject(cg, g, "Heartbeat", "INVALID_REQUEST", **gate_args("a", 0, owned=None))
    reject(cg, g, "Heartbeat", "INVALID_REQUEST", **gate_args("a", 0, topics=None))
    reject(cg, g, "Heartbeat", "NONE", **gate_args("a", 0, topics=()))
    reject(cg, g, "Heartbeat", "NONE", **gate_args("a", 0, topics=None, regex=""))
    reject(cg, g, "Heartbeat", "INVALID_REQUEST", **gate_args("a", -2))
    reject(cg, g, "Heartbeat", "UNSUPPORTED_ASSIGNOR", **gate_args("a", 0, assignor="sticky"))
    # validation comes before the group lookup
    reject(cg, g, "Heartbeat", "INVALID_REQUEST", **gate_args("a", 4, group_id=" "))
    reject(cg, g, "Heartbeat", "GROUP_ID_NOT_FOUND", **gate_args("a", 4))
    reject(cg, g, "Heartbeat", "NONE", **gate_args("a", 0))


def test_delete_and_expire(coordinator: Coordinator, cg: ir.Machine) -> None:
    c = coordinator
    reject(cg, c.group, "Delete", "GROUP_ID_NOT_FOUND")
    c.join("a")
    reject(cg, c.group, "Delete", "NON_EMPTY_GROUP")
    c.leave("a")
    assert (c.group["state"], c.group["group_epoch"]) == ("Empty", 2)
    reject(cg, c.group, "Expire", "NONE", all_offsets_expired=True, open_transactions=True)
    accept(cg, c.group, "Expire", "Dead", all_offsets_expired=True, open_transactions=False)
    accept(cg, c.group, "Delete", "Dead")


def test_offset_commit_checks(coordinator: Coordinator, cg: ir.Machine, cm: ir.Machine) -> None:
    c = coordinator
    g = c.group
    reject(cg, g, "OffsetCommit", "NONE", epoch=-1, transactional=False, api_version=9)  # a simple group is created
    reject(cg, g, "OffsetCommit", "GROUP_ID_NOT_FOUND", epoch=3, transactional=False, api_version=9)
    reject(cg, g, "OffsetCommit", "ILLEGAL_GENERATION", epoch=3, transactional=False, api_version=8)
    reject(cg, g, "OffsetCommit", "ILLEGAL_GENERATION", epoch=3, transactional=True, api_version=4)
    c.join("a")
    reject(cg, c.group, "OffsetCommit", "NONE", epoch=1, transactional=False, api_version=9)
    a, ghost = c.members["a"], c.fresh("ghost")
    reject(cm, a, "OffsetCommit", "NONE", epoch=1, transactional=False, api_version=9, group_has_members=True)
    reject(cm, a, "OffsetCommit", "UNSUPPORTED_VERSION", epoch=1, transactional=False, api_version=8,
           group_has_members=True)
    reject(cm, a, "OffsetCommit", "STALE_MEMBER_EPOCH", epoch=0, transactional=False, api_version=9,
           group_has_members=True)
    reject(cm, a, "OffsetCommit", "ILLEGAL_GENERATION", epoch=0, transactional=True, api_version=3,
           group_has_members=True)
    reject(cm, a, "OffsetCommit", "NONE", epoch=1, transactional=True, api_version=3, group_has_members=True)
    reject(cm, ghost, "OffsetCommit", "UNKNOWN_MEMBER_ID", epoch=-1, transactional=False, api_version=9,
           group_has_members=True)
    reject(cm, ghost, "OffsetCommit", "NONE", epoch=-1, transactional=False, api_version=9, group_has_members=False)
    reject(cm, ghost, "OffsetFetch", "NONE", epoch=-1, member_given=False)
    reject(cm, ghost, "OffsetFetch", "UNKNOWN_MEMBER_ID", epoch=-1, member_given=True)
    reject(cm, a, "OffsetFetch", "STALE_MEMBER_EPOCH", epoch=2, member_given=True)


def test_offset_fetch_and_delete_partitions(coordinator: Coordinator, cg: ir.Machine) -> None:
    """fetchOffsets' UNSTABLE_OFFSET_COMMIT and deleteOffsets' per-partition answers; a deleted offset is a `stay`
    (its tombstone is written, the group does not change)."""
    c = coordinator
    where = {"topic": "t", "partition": 0}
    reject(cg, c.group, "OffsetDelete", "GROUP_ID_NOT_FOUND")
    reject(cg, c.group, "OffsetDeletePartition", "GROUP_ID_NOT_FOUND", **where, subscribed=False, has_offset=True)
    c.join("a")
    live = [c.group]
    c.join("b")
    live.append(c.group)
    assert [g["state"] for g in live] == ["Stable", "Reconciling"]
    for group in live:
        reject(cg, group, "OffsetFetchPartition", "UNSTABLE_OFFSET_COMMIT", **where, require_stable=True,
               pending_offset=True)
        reject(cg, group, "OffsetFetchPartition", "NONE", **where, require_stable=True, pending_offset=False)
        reject(cg, group, "OffsetFetchPartition", "NONE", **where, require_stable=False, pending_offset=True)
        reject(cg, group, "OffsetDelete", "NONE")
        reject(cg, group, "OffsetDeletePartition", "GROUP_SUBSCRIBED_TO_TOPIC", **where, subscribed=True,
               has_offset=True)
        reject(cg, group, "OffsetDeletePartition", "NONE", **where, subscribed=False, has_offset=False)
        row, post = step(cg, group, "OffsetDeletePartition", **where, subscribed=False, has_offset=True)
        assert isinstance(row, ir.Transition) and row.answer == "NONE" and post == group


def test_offset_expiration_counts_from_the_commit(coordinator: Coordinator, cg: ir.Machine) -> None:
    """ConsumerGroup.offsetExpirationCondition: always by commit time, for the topics nobody subscribes to."""
    c = coordinator
    c.join("a")

    def expires(*, commit_ms: int = 0, expire_ms: int = -1, subscribed: bool = False, pending: bool = False) -> bool:
        row, post = step(cg, c.group, "ExpireOffset", topic="t", partition=0, now_ms=10_000, retention_ms=1_000,
                         commit_timestamp_ms=commit_ms, expire_timestamp_ms=expire_ms, subscribed=subscribed,
                         pending_offset=pending)
        assert post == c.group and (isinstance(row, ir.Transition) or row.error == "NONE")
        return isinstance(row, ir.Transition)

    assert c.group["state"] == "Stable"
    assert expires(commit_ms=0) and not expires(commit_ms=9_500)
    assert not expires(commit_ms=0, subscribed=True), "a member consumes the topic"
    assert not expires(commit_ms=0, pending=True), "a pending transactional offset keeps it"
    assert expires(commit_ms=9_500, expire_ms=5_000) and not expires(commit_ms=0, expire_ms=20_000)
    c.leave("a")
    assert c.group["state"] == "Empty" and expires(commit_ms=0)
    reject(cg, c.group, "Expire", "NONE", all_offsets_expired=False, open_transactions=False)


# ---------------------------------------------------------------- many clients at random


@dataclass
class Client:
    member_id: str
    instance: str = ""
    epoch: int = 0  # 0: must (re)join
    owned: frozenset[str] = frozenset()


def _client_heartbeat(c: Coordinator, client: Client, rng: random.Random) -> None:
    if client.epoch == 0:
        error, member = c.join(client.member_id, client.instance)
        client.owned = frozenset()
    else:
        if rng.random() < 0.5:  # the client finished revoking what it no longer has
            server = c.members.get(client.member_id)
            if server is not None:
                client.owned &= server["assigned"]
        error, member = c.heartbeat(client.member_id, client.epoch, client.owned, client.instance,
                                    subscription_changed=rng.random() < 0.05)
    if error in ("FENCED_MEMBER_EPOCH", "UNKNOWN_MEMBER_ID"):
        client.epoch, client.owned = 0, frozenset()
    elif error == "NONE" and member is not None and rng.random() < 0.85:  # else the response is lost
        client.epoch = member["member_epoch"]
        client.owned = (client.owned & member["pending_revocation"]) | member["assigned"]


def _random_action(c: Coordinator, clients: list[Client], rng: random.Random) -> None:
    client = rng.choice(clients)
    roll = rng.random()
    if roll < 0.75:
        _client_heartbeat(c, client, rng)
    elif roll < 0.82 and client.epoch != 0:
        c.leave(client.member_id, client.instance)
        client.epoch, client.owned = 0, frozenset()
    elif roll < 0.88 and client.instance and client.epoch != 0:
        c.leave(client.member_id, client.instance, epoch=-2)
        client.epoch, client.owned = 0, frozenset()
        client.member_id = f"{client.member_id.split('.')[0]}.{rng.randrange(1000)}"  # the restart has a new id
    elif roll < 0.94:
        c.timeout(client.member_id, "SessionTimeout")
    else:
        server = c.members.get(client.member_id)
        epoch = server["member_epoch"] if server is not None and rng.random() < 0.7 else rng.randrange(0, 4)
        c.timeout(client.member_id, "RebalanceTimeout", epoch=epoch)


@pytest.mark.parametrize("seed", range(12))
def test_random_clients_keep_both_machines_consistent(cg: ir.Machine, cm: ir.Machine, seed: int) -> None:
    print(f"seed={seed}")
    rng = random.Random(seed)
    c = Coordinator(cg, cm)
    clients = [Client("d1"), Client("d2"), Client("d3"), Client("s1", "host-1"), Client("s2", "host-2")]
    for _ in range(400):
        _random_action(c, clients, rng)
        c.check_consistency()
    reached = {entry.split(" -> ")[1] for entry in c.log}
    assert {"Stable", "UnrevokedPartitions", "UnreleasedPartitions"} <= reached, sorted(reached)


# ---------------------------------------------------------------- the z3 proofs


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ConsumerGroup", "ConsumerGroupMember"])
def test_z3_proves_every_obligation(machines: dict[str, ir.Machine], name: str) -> None:
    verify = pytest.importorskip("kcoord.model.verify")
    failed = [f"{r.kind}: {r.title}: {r.detail}" for r in verify.verify_machine(machines[name])
              if r.status in ("fails", "unknown")]
    assert failed == []
