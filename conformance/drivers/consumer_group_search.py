"""Search hooks of the ConsumerGroup driver (`consumer_group.py`): the requests the path search tries in each state.

Owns `ConsumerGroupSearch` (a fixed alphabet of requests per member, built from the spec state, plus z3-chosen
requests for the group's request-validation rows), the programs in abstract steps (`Step`: `("join", "a")`,
`("ack", "a")`, ..., resolved against the spec state the previous steps left), the seed programs (`SEEDS`: deep group
structures at depth 0) and the targeted programs (`PROGRAMS`: the items the breadth-first search's budget does not
reach; then `consumer_group_classic.CLASSIC_PROGRAMS`: classic-protocol members, regular expressions).
Must not import: kcoord.cli.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kcoord.model import ir

from ..argsolver import Avoid
from ..explore import Context
from .base import Action
from .consumer_group import DYNAMIC, GROUP, MAX_SIZE, REBALANCE_MS, SESSION_MS, STATIC, heartbeat
from .consumer_group_classic import CLASSIC_PROGRAMS, CLASSIC_STEPS, Step, classic_step, race_step

#: seed programs in abstract steps (resolved against the spec state by `ConsumerGroupSearch.seeds`): deep group
#: structures the breadth-first search would need many steps to reach
SEEDS: tuple[tuple[Step, ...], ...] = (
    (("join", "a"), ("join", "b")),  # a Stable, b waiting for a's partitions: the group Reconciling
    (("join", "a"), ("join", "b"), ("ack-all", "a")),  # a must revoke: UnrevokedPartitions
    (("join", "a"), ("join", "b"), ("ack-all", "a"), ("ack", "a"), ("ack", "b")),  # two members, group Stable
    (("join", "s"),),  # a static member, Stable
    (("join", "s"), ("join", "a")),  # static member holding everything, a dynamic one waiting
    (("join", "s"), ("join", "a"), ("ack-all", "s")),  # the static member revoking
    (("join", "s"), ("join", "a"), ("ack-all", "s"), ("ack", "s"), ("ack", "a")),  # static + dynamic, group Stable
    (("join", "s"), ("static-leave", "s")),  # a static member at -2, the only member
    (("join", "s"), ("join", "a"), ("ack-all", "s"), ("ack", "s"), ("ack", "a"), ("static-leave", "s")),
    (("join", "a"), ("unknown", "b")),  # a member read back in Unknown next to a live one
    (("join", "a"), ("commit", "a"), ("subscribe", "a")),  # an offset of a topic nobody subscribes to any more
    (("join", "a"), ("join", "b"), ("join", "c")),  # a full group
)


def _concrete(step: Step, view: Mapping[str, Any]) -> Action:
    """A program step as an action: an action as it is, or (kind, member[, fields]) resolved against the member's
    spec state (`fields` override the request's)."""
    if isinstance(step, Action):
        return step
    kind, m = step[0], step[1]
    if kind == "race":
        return race_step(m, view, step[2] if len(step) > 2 else {})
    action = _step_action(kind, m, view)
    return Action(action.name, {**action.args, **step[2]}) if len(step) > 2 else action


def _step_action(kind: str, m: str, view: Mapping[str, Any]) -> Action:
    static = {"instance": dict(STATIC)[m]} if m in dict(STATIC) else {}
    epoch = int(view["member_epoch"])
    if kind == "join":
        return heartbeat(m, 0, **static)
    if kind == "ack":
        return heartbeat(m, epoch, owned=sorted(view["assigned"]), **static)
    if kind == "ack-all":
        return heartbeat(m, epoch, owned=sorted(view["held"]), **static)
    if kind == "static-leave":
        return Action("Heartbeat", {"member": m, "epoch": -2, **static})
    if kind == "unknown":
        return Action("ReplayUnknown", {"member": m})
    if kind == "commit":
        return Action("OffsetCommit", {"member": m, "epoch": epoch, "api_version": 9})
    if kind == "subscribe":
        return heartbeat(m, epoch, owned=sorted(view["assigned"]), topics=["payments"], **static)
    if kind == "leave":
        return Action("Heartbeat", {"member": m, "epoch": -1, **static})
    if kind == "txn":
        return Action("TxnOffsetCommit", {"member": m, "epoch": epoch, "topic": "payments"})
    if kind in CLASSIC_STEPS:
        return classic_step(kind, m, view, static)
    raise ValueError(f"unknown seed step {kind!r}")


def _resolve(factory: Any, refs: Mapping[str, Any], steps: Sequence[Step]) -> tuple[Action, ...]:
    """`steps` as concrete actions, each resolved against the spec state the previous ones left (on a fresh driver,
    in lockstep)."""
    from ..lockstep import Lockstep

    driver = factory()
    try:
        lock = Lockstep(driver, refs)
        program: list[Action] = []
        for step in steps:
            member = "" if isinstance(step, Action) else step[1]
            action = _concrete(step, refs["ConsumerGroupMember"].view((GROUP, member)))
            lock.step(action)
            program.append(action)
        return tuple(program)
    finally:
        driver.close()


_EXPIRE = Action("ExpireOffsets")
_STABLE_FETCH = Action("OffsetFetch", {"member": None, "epoch": -1, "require_stable": True})
#: two reconciled members a and b, the group Stable (b's leave then leaves the group Assigning until a heartbeat)
_TWO_STABLE: tuple[Step, ...] = (("join", "a"), ("join", "b"), ("ack-all", "a"), ("ack", "a"), ("ack", "b"))
_PAYMENTS: Mapping[str, Any] = {"topic": "payments"}


def _as(member: str, epoch: int, **fields: Any) -> Action:
    """A heartbeat of `member` (static: with instance i1) at `epoch`, not resolved against its state."""
    return Action("Heartbeat", {"member": member, "epoch": epoch, **fields})


#: targeted programs, each ending in items the breadth-first search's budget does not reach (an offset job in a
#: group with members, a static instance addressed by another member id, a member read back in Unknown, ...)
PROGRAMS: tuple[tuple[Step, ...], ...] = (
    # the expiration job (offsets.retention.ms 20 s, shorter than a session): an offset of a topic nobody consumes
    # expires in Stable, Reconciling, Assigning, Empty (39); kept while a transaction holds it, in every state (38);
    # a consumed topic's offset is kept (36)
    (("join", "a"), ("commit", "a", _PAYMENTS), _EXPIRE),
    (("join", "a"), ("commit", "a", _PAYMENTS), ("join", "b"), _EXPIRE),
    (*_TWO_STABLE, ("commit", "a", _PAYMENTS), ("leave", "b"), _EXPIRE),
    (("join", "a"), ("commit", "a", _PAYMENTS), ("txn", "a"), _EXPIRE),
    (("join", "a"), ("commit", "a", _PAYMENTS), ("join", "b"), ("txn", "a"), _EXPIRE),
    (*_TWO_STABLE, ("commit", "a", _PAYMENTS), ("txn", "a"), ("leave", "b"), _EXPIRE),
    (("join", "a"), ("commit", "a", _PAYMENTS), ("txn", "a"), ("leave", "a"), _EXPIRE),
    (("join", "a"), ("commit", "a"), _EXPIRE),
    (("join", "a"), ("commit", "a"), ("leave", "a"), _EXPIRE),
    # an unconsumed topic's offset is deleted in Empty and Assigning (53)
    (("join", "a"), ("commit", "a", _PAYMENTS), ("leave", "a"), Action("OffsetDelete", dict(_PAYMENTS))),
    (*_TWO_STABLE, ("commit", "a", _PAYMENTS), ("leave", "b"), Action("OffsetDelete", dict(_PAYMENTS))),
    # a read_committed fetch while a transaction holds an offset: Empty, Assigning, Reconciling, Stable (47)
    (("join", "a"), ("txn", "a", {"topic": "orders"}), _STABLE_FETCH),
    (("join", "a"), ("join", "b"), ("txn", "a", {"topic": "orders"}), _STABLE_FETCH),
    (*_TWO_STABLE, ("txn", "a", {"topic": "orders"}), ("leave", "b"), _STABLE_FETCH),
    (("join", "a"), ("txn", "a", {"topic": "orders"}), ("leave", "a"), _STABLE_FETCH),
    # a static member replaced with a new subscription while the group reconciles (29)
    (("join", "s"), ("static-leave", "s"), ("join", "r", {"topics": ["orders", "payments"]})),
    # an epoch-0 heartbeat for an id a classic group holds (15); a new member for a full Stable group (16)
    (Action("ClassicJoin"), ("join", "a")),
    (("join", "a"), ("join", "b"), ("join", "c"), ("ack-all", "a"), ("ack", "a"), ("ack", "b"), ("ack", "c"),
     ("ack", "a"), ("ack", "b"), ("ack", "c"), heartbeat("zz", 0)),
    # a retried join (previous epoch 0) whose new subscription takes partitions another member holds (6)
    (("join", "c"), ("join", "a", {"topics": ["payments"]}), ("join", "a", {"topics": ["orders"]})),
    # a member waiting for partitions (UnreleasedPartitions, c still holds one it gives up with its subscription)
    # loses some it owns when b joins (23)
    (("join", "c", {"topics": ["orders", "payments"]}), ("join", "a"), ("ack-all", "c"), ("ack", "c"), ("ack", "a"),
     ("ack", "c", {"topics": ["payments"]}), ("ack", "a"), ("join", "b"), ("ack", "a")),
    # a revoking member changes its rebalance timeout (19); its session ends before its rebalance timeout (38)
    (("join", "a"), ("join", "b"), ("ack-all", "a"), ("ack-all", "a", {"rebalance_timeout": REBALANCE_MS + 1000})),
    (("join", "a", {"rebalance_timeout": SESSION_MS * 2}), ("join", "b"), ("ack-all", "a"), Action("SessionTimeout")),
    # a static member leaves again at -2, and leaves from Unknown (37)
    (("join", "s"), ("static-leave", "s"), ("static-leave", "s")),
    (("join", "s"), Action("ReplayUnknown", {"member": "s"}), ("static-leave", "s")),
    # a member read back in Unknown after an epoch other than 0 rejoins (3)
    (("join", "a"), Action("ReplayUnknown", {"member": "b", "epoch": 1, "previous_epoch": 1}), ("join", "b")),
    # another member id sends the static instance's heartbeat (9), leave (31) or static leave (35)
    (("join", "s"), ("static-leave", "s"), _as("r", 5, instance="i1", owned=[])),
    (("join", "s"), Action("ReplayUnknown", {"member": "s"}), _as("r", 1, instance="i1", owned=[])),
    (("join", "s"), Action("ReplayUnknown", {"member": "s"}), _as("r", -1, instance="i1")),
    (("join", "s"), _as("r", -2, instance="i1")),
    (("join", "s"), ("static-leave", "s"), _as("r", -2, instance="i1")),
    (("join", "s"), Action("ReplayUnknown", {"member": "s"}), _as("r", -2, instance="i1")),
    (("join", "a"), ("join", "s"), _as("r", -2, instance="i1")),
    (("join", "s"), ("join", "a"), ("ack-all", "s"), _as("r", -2, instance="i1")),
)


class ConsumerGroupSearch:
    """A fixed alphabet of requests per member, built from the spec state (so programs replay deterministically),
    plus z3-chosen requests for the group's request-validation rows, and seed programs (`SEEDS`)."""

    def seeds(self, factory: Any, refs: Mapping[str, Any]) -> list[tuple[Action, ...]]:
        """`SEEDS` as concrete programs: each step is resolved against the spec state the previous ones left."""
        return [_resolve(factory, refs, seed) for seed in SEEDS]

    def programs(self, factory: Any, refs: Mapping[str, Any]) -> list[tuple[Action, ...]]:
        """`PROGRAMS` (targeted programs for the items the search's budget does not reach), resolved like seeds."""
        return [_resolve(factory, refs, program) for program in (*PROGRAMS, *CLASSIC_PROGRAMS)]

    def candidates(self, ctx: Context) -> list[Action]:
        group = ctx.view("ConsumerGroup", (GROUP,))
        out = self._invalid(ctx, group)
        members = {m: ctx.view("ConsumerGroupMember", (GROUP, m)) for m in (*DYNAMIC, *(s for s, _ in STATIC))}
        for m, view in members.items():
            instance = dict(STATIC).get(m)
            out += self._member_actions(m, instance, view, group)
        out += self._group_actions(group, members)
        return out

    def _invalid(self, ctx: Context, group: Mapping[str, Any]) -> list[Action]:
        out = self._requests_for(ctx, group, GROUP)
        blank = ctx.view("ConsumerGroup", ("",))  # "GroupId can't be empty": asked of the group id "" (z3 finds
        # nothing else there: every later row's guard says group_id != "")
        if blank["state"] == group["state"]:
            out += [Action(a.name, {**a.args, "group": ""}) for a in self._requests_for(ctx, blank, "")]
        return out

    def _requests_for(self, ctx: Context, group: Mapping[str, Any], group_id: str) -> list[Action]:
        out = []
        for row in ctx.rows_from("ConsumerGroup", group["state"]):
            if row.event != "Heartbeat" or not ctx.worth("ConsumerGroup", row, group["state"], (group_id,)):
                continue
            assert isinstance(row, ir.Rejection)
            size = len(group["members"])
            # a blank id is sent as " " (empty after String.trim): the solver's strings are not blank
            pins: dict[str, Any] = {"foreign_group": False, "group_size": size, "max_size": MAX_SIZE,
                                    "group_id_blank": group_id == "", "instance": Avoid(("",))}
            if row.error == "GROUP_MAX_SIZE_REACHED":
                pins["member_id"] = Avoid(("", *sorted(group["members"])))
            if row.error != "INVALID_REQUEST":
                pins.update(owned=frozenset(), topics_given=True)
            args = ctx.solve("ConsumerGroup", row, group, pins=pins,
                             prefer={"epoch": 0, "rebalance_timeout": REBALANCE_MS, "member_id": "a", "api_version": 1,
                                     "member_id_blank": False, "instance_blank": False, "rack_blank": False},
                             strings=["a", "orders"])
            if args is None:
                continue
            blank_member = args["member_id_blank"] and args["member_id"] != ""
            out.append(Action("Heartbeat", {
                "member": " " if blank_member else args["member_id"], "epoch": args["epoch"],
                "api_version": args["api_version"],
                "instance": (" " if args["instance_blank"] else args["instance"]) if args["instance_given"] else None,
                "rack": (" " if args["rack_blank"] else "r1") if args["rack_given"] else None,
                "regex": "o.*" if args["regex_given"] else None, "rebalance_timeout": args["rebalance_timeout"],
                "owned": sorted(args["owned"]) if args["owned_given"] else None,
                "topics": ["orders"] if args["topics_given"] else None,
                "assignor": ("range" if args["assignor_known"] else "bogus") if args["assignor_given"] else None}))
        return out

    def _member_actions(self, m: str, instance: str | None, view: Mapping[str, Any], group: Mapping[str, Any]
                        ) -> list[Action]:
        state = view["state"]
        static = {"instance": instance} if instance else {}
        if state == "Absent":
            slow = [heartbeat(m, 0, rebalance_timeout=SESSION_MS * 2)] if m == "c" else []  # session before rebalance
            return [heartbeat(m, 0, **static), heartbeat(m, 3), *slow,
                    Action("Heartbeat", {"member": m, "epoch": -1, **static})]
        epoch = int(view["member_epoch"])
        assigned = sorted(view["assigned"])
        held = sorted(view["held"])
        out = []
        if state == "StaticLeft":
            out += [heartbeat(m, 0, **static), heartbeat(m, 0), heartbeat(m, 5, **static, owned=[])]
            other = next(s for s, i in STATIC if i == instance and s != m)
            out.append(heartbeat(other, 0, **static))
        else:
            out += [heartbeat(m, epoch, owned=assigned, **static),
                    heartbeat(m, epoch, owned=held, **static),
                    heartbeat(m, epoch, owned=[], **static),
                    heartbeat(m, epoch, owned=None, **static),
                    heartbeat(m, epoch, owned=assigned, topics=["orders", "payments"], **static),
                    heartbeat(m, epoch, owned=assigned, rebalance_timeout=REBALANCE_MS + 1000, **static),
                    heartbeat(m, epoch + 7, owned=assigned, **static),
                    heartbeat(m, 0, **static),
                    heartbeat(m, 0)]
            if view["previous_member_epoch"] > 0 and view["previous_member_epoch"] != epoch:
                out.append(heartbeat(m, int(view["previous_member_epoch"]), owned=assigned, **static))
            if instance:
                out.append(Action("Heartbeat", {"member": m, "epoch": -2, "instance": instance}))
                other = next(s for s, i in STATIC if i == instance and s != m)
                out.append(heartbeat(other, max(epoch, 1), owned=[], instance=instance))
                out.append(Action("Heartbeat", {"member": other, "epoch": -1, "instance": instance}))
        out.append(Action("Heartbeat", {"member": m, "epoch": -1, **static}))
        out += [Action("OffsetCommit", {"member": m, "epoch": epoch, "api_version": 9}),
                Action("OffsetCommit", {"member": m, "epoch": epoch, "api_version": 8}),
                Action("OffsetCommit", {"member": m, "epoch": epoch + 1, "api_version": 9}),
                Action("TxnOffsetCommit", {"member": m, "epoch": epoch}),
                Action("TxnOffsetCommit", {"member": m, "epoch": epoch + 1}),
                Action("OffsetFetch", {"member": m, "epoch": epoch}),
                Action("OffsetFetch", {"member": m, "epoch": epoch + 1})]
        return out

    def _group_actions(self, group: Mapping[str, Any], members: Mapping[str, Mapping[str, Any]]) -> list[Action]:
        out = [Action("Delete"),
               Action("OffsetCommit", {"member": "", "epoch": -1, "api_version": 9}),
               Action("OffsetCommit", {"member": "zz", "epoch": 0, "api_version": 9}),
               Action("OffsetCommit", {"member": "zz", "epoch": 0, "api_version": 8}),
               Action("TxnOffsetCommit", {"member": "zz", "epoch": 0}),
               Action("OffsetFetch", {"member": None, "epoch": -1}),
               Action("OffsetFetch", {"member": None, "epoch": -1, "require_stable": True}),
               Action("OffsetFetch", {"member": "zz", "epoch": 0}),
               Action("OffsetDelete", {"topic": "orders"}), Action("OffsetDelete", {"topic": "payments"})]
        if group["group_epoch"] == 0:
            out.append(Action("ClassicJoin"))  # a classic group takes the id: the heartbeat finds a foreign group
        if group["group_epoch"] > 0:
            out += [Action("SessionTimeout"), Action("RebalanceTimeout"), Action("ExpireOffsets"), Action("Reload"),
                    Action("EndTxn"), Action("TxnOffsetCommit", {"member": "", "epoch": -1, "topic": "payments"})]
            absent = [m for m, v in members.items() if v["state"] == "Absent"]
            if absent:
                out.append(Action("ReplayUnknown", {"member": absent[0]}))
        return out

