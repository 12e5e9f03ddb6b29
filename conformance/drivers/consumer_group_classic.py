"""Targeted programs of the ConsumerGroup driver for the KIP-848 migration rows and regular-expression subscriptions:
classic-protocol members in a consumer group (JoinGroup, SyncGroup, Heartbeat, LeaveGroup; ConsumerGroup.ClassicJoin,
ConsumerGroupMember's ClassicSync, ClassicHeartbeat and Heartbeat with classic_join), the static take-over by a
JoinGroup without a member id (Replaced, ClassicTakeOver) and of a classic-protocol holder by an epoch-0
ConsumerGroupHeartbeat (Join), the protocol changes and adopted instances
(ProtocolChanged, InstanceAdopted) and the regular expressions' validation, epoch bumps and resolution
(MemberJoined, SubscriptionChanged, RegexesResolved).

Owns `CLASSIC_PROGRAMS` (in the abstract steps of `consumer_group_search`) and `classic_step` (the classic steps
`cjoin`, `cjoin-all`, `csync`, `chb`, `cleave` and `fetch`, resolved against the member's spec state). The member
ids: `k` is a dynamic classic-protocol member (JoinGroup with its id: the consumer group creates it), `1` the id the
coordinator generates for the first JoinGroup without one (the driver's member ids are counter-based), which takes
over the static instance `i1` of `s`. The programs run after the breadth-first search, unexpanded, while items are
left (see `explore`).
Must not import: kcoord.cli.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import Action
from .consumer_group import SESSION_MS, heartbeat

#: a program step: an action, or (kind, member) or (kind, member, fields) resolved against the member's spec state
Step = Action | tuple[str, str] | tuple[str, str, Mapping[str, Any]]
CLASSIC_STEPS = ("cjoin", "cjoin-all", "csync", "chb", "cleave", "fetch")
_ALL = ["orders-0", "orders-1", "orders-2"]


def classic_step(kind: str, m: str, view: Mapping[str, Any], static: Mapping[str, Any]) -> Action:
    """A classic-protocol request of member `m` as its client would send it: JoinGroup owning its assignment
    (`cjoin`) or everything it holds (`cjoin-all`), SyncGroup and Heartbeat at its epoch as generation, LeaveGroup;
    `fetch` is an OffsetFetch at another epoch than the member's."""
    epoch = int(view["member_epoch"])
    if kind in ("cjoin", "cjoin-all"):
        owned = sorted(view["assigned"] if kind == "cjoin" else view["held"])
        return Action("JoinGroup", {"member": m, "owned": owned, **static})
    if kind == "csync":
        return Action("SyncGroup", {"member": m, "generation": epoch, **static})
    if kind == "chb":
        return Action("ClassicHeartbeat", {"member": m, "generation": epoch, **static})
    if kind == "fetch":
        return Action("OffsetFetch", {"member": m, "epoch": epoch + 5})
    return Action("LeaveGroup", {"member": m, **static})


def race_step(m: str, view: Mapping[str, Any], fields: Mapping[str, Any]) -> Action:
    """`Concurrent`: member `m`'s heartbeat at its epoch, owning its assignment, with the `fields` given except
    `leaver`, then, while its write is in flight, the leave of member `leaver`."""
    first = {k: v for k, v in fields.items() if k != "leaver"}
    hb = heartbeat(m, int(view["member_epoch"]), owned=sorted(view["assigned"]), **first)
    leave = Action("Heartbeat", {"member": str(fields["leaver"]), "epoch": -1})
    return Action("Concurrent", {"first": hb.to_json(), "then": leave.to_json()})


def _probes(m: str, instance: str | None = None) -> tuple[Step, ...]:
    """The SyncGroup and Heartbeat answers of member `m` in its state: a wrong generation, another protocol name, an
    instance nobody holds, `m`'s instance from another member id, its own request, an OffsetFetch at another epoch.
    None of them changes a member."""
    own: dict[str, Any] = {"instance": instance} if instance else {}
    fenced: tuple[Step, ...] = (("csync", m, {**own, "member": "zz"}), ("chb", m, {**own, "member": "zz"})) \
        if instance else ()
    return (("csync", m, {**own, "generation": 99}), ("chb", m, {**own, "generation": 99}),
            ("csync", m, {**own, "protocol": "other"}), ("csync", m, {"instance": "i9"}),
            ("chb", m, {"instance": "i9"}), *fenced, ("fetch", m), ("csync", m, own), ("chb", m, own))


def _join(m: str, **fields: Any) -> Action:
    return Action("JoinGroup", {"member": m, "owned": [], **fields})


def _gate(m: str) -> tuple[Step, ...]:
    """The group checks of a JoinGroup (ClassicJoin), each refused, then one let through for `m`."""
    return (_join("x", session_timeout=1), _join("x", protocol_type="connect"), _join(""),
            _join("x", instance="i9"), _join(m))


def _regex(m: str, regex: str, **fields: Any) -> Action:
    """An epoch-0 heartbeat of `m` subscribing to `regex` only."""
    return heartbeat(m, 0, topics=None, regex=regex, **fields)


_STABLE_K: tuple[Step, ...] = (("join", "a"), ("cjoin", "k"), ("ack-all", "a"), ("ack", "a"), ("cjoin", "k"))
_TWO_STABLE: tuple[Step, ...] = (("join", "a"), ("join", "b"), ("ack-all", "a"), ("ack", "a"), ("ack", "b"))
_REGEX_A: Mapping[str, Any] = {"regex": "o.*"}
_PAYMENTS: Mapping[str, Any] = {"topics": ["payments"]}
_BOTH: Mapping[str, Any] = {"topics": ["orders", "payments"]}
#: a classic group of one member (client-1: the classic coordinator's generated id, owning orders) under the
#: bidirectional migration policy
_UPGRADED: tuple[Step, ...] = (Action("Migrate"), Action("ClassicGroupStable", {"members": 1}))

CLASSIC_PROGRAMS: tuple[tuple[Step, ...], ...] = (
    # a classic member k probed (ClassicSync, ClassicHeartbeat, OffsetFetch), then a group bump and the probes
    # again: UnreleasedPartitions (12), Stable (13), Unknown (a classic member revoking is the take-over's, below)
    (("join", "a"), ("cjoin", "k"), *_probes("k"), ("join", "b"), *_probes("k"), ("cleave", "k")),
    (("join", "a", {"topics": ["payments"]}), ("cjoin", "k"), *_probes("k"), ("join", "b"), *_probes("k")),
    (*_STABLE_K, *_probes("k"), ("join", "b"), *_probes("k"), ("cjoin-all", "k"), *_probes("k")),
    (*_STABLE_K, Action("ReplayUnknown", {"member": "k", "epoch": 2, "previous_epoch": 2}), *_probes("k"),
     ("join", "b"), *_probes("k")),
    # a static member that joined with JoinGroup (ProtocolChanged), then left with -2: StaticLeft, classic
    (("join", "s"), ("cjoin", "s"), *_probes("s", "i1"), ("static-leave", "s"), *_probes("s", "i1")),
    # consumer-protocol members probed with SyncGroup and Heartbeat in each state (UNKNOWN_MEMBER_ID: not classic)
    (("join", "a"), ("join", "b"), *_probes("b"), ("ack-all", "a"), *_probes("a"), ("unknown", "c"), *_probes("c"),
     *_probes("a"), ("csync", "zz"), ("chb", "zz")),
    (("join", "s"), *_probes("s", "i1"), ("static-leave", "s"), *_probes("s", "i1")),
    (("join", "a"), ("join", "s"), *_probes("s", "i1")),
    (("join", "s"), ("join", "a"), ("ack-all", "s"), *_probes("s", "i1")),
    (("join", "s"), Action("ReplayUnknown", {"member": "s"}), *_probes("s", "i1")),
    # the group checks of JoinGroup in Stable, Reconciling, Assigning; a full group (GROUP_MAX_SIZE_REACHED)
    (("join", "a"), *_gate("k")),
    (("join", "a"), ("join", "b"), *_gate("k")),
    (*_TWO_STABLE, ("leave", "b"), *_gate("k")),
    (("join", "a"), ("join", "b"), ("join", "c"), _join("x"), ("ack-all", "a"), ("ack", "a"), ("ack", "b"),
     ("ack", "c"), ("ack", "a"), ("ack", "b"), ("ack", "c"), _join("x"), ("cjoin", "c"), ("cleave", "c")),
    # a full group whose regular expression's resolution bumps the epoch: Assigning with every member
    (("join", "a"), ("join", "b"), ("join", "c", _REGEX_A), _join("x"), heartbeat("zz", 0)),
    # the static take-over by a JoinGroup without a member id, the holder in each state (Replaced, ClassicTakeOver)
    (("join", "s"), _join("", instance="i1"), *_probes("1", "i1")),
    (("join", "s"), ("join", "a"), _join("", instance="i1", owned=_ALL), *_probes("1", "i1")),
    (("join", "s"), ("join", "a"), ("ack-all", "s"), _join("", instance="i1", owned=_ALL), *_probes("1", "i1")),
    (("join", "s"), ("join", "a"), ("ack-all", "s"), _join("", instance="i1")),
    (("join", "a"), ("join", "s"), _join("", instance="i1")),
    (("join", "s"), ("static-leave", "s"), _join("", instance="i1")),
    (("join", "s"), Action("ReplayUnknown", {"member": "s"}), _join("", instance="i1", owned=["orders-0"])),
    (("join", "s"), Action("ReplayUnknown", {"member": "s"}), _join("", instance="i1")),
    # an epoch-0 heartbeat with the instance of a live classic-protocol holder (1, after its take-over) replaces it,
    # under another member id or its own (Join's classic_holder rows), the holder Stable, revoking, unreleased, Unknown
    *((*before, heartbeat(m, 0, instance="i1")) for m in ("r", "1") for before in (
        (("join", "s"), _join("", instance="i1")),
        (("join", "s"), ("join", "a"), _join("", instance="i1", owned=_ALL)),
        (("join", "a"), ("join", "s"), _join("", instance="i1")),
        (("join", "s"), _join("", instance="i1"), Action("ReplayUnknown", {"member": "1"})))),
    # ... under its own id while it revokes orders for payments, which a holds: UnrevokedPartitions -> Unreleased
    (("join", "a", _BOTH), ("join", "s"), _join("", instance="i1"), ("ack-all", "a"), ("ack", "a"), ("cjoin", "1"),
     ("cjoin", "1", _PAYMENTS), heartbeat("1", 0, instance="i1", topics=["payments"])),
    # a classic member back on the consumer protocol (ProtocolChanged) in Reconciling and Assigning
    (("join", "a"), ("cjoin", "k"), ("ack", "k")),
    (*_TWO_STABLE, ("cjoin", "a"), ("leave", "b"), ("ack", "a")),
    # instances adopted by a dynamic member's epoch-0 heartbeat (InstanceAdopted) in Stable and Assigning
    (("join", "a"), heartbeat("a", 0, instance="i1")),
    (*_TWO_STABLE, ("leave", "b"), heartbeat("a", 0, instance="i1")),
    # regular expressions: a new member with only a new one joins without a bump (Empty, Assigning, Stable), is
    # resolved (a bump when its topics changed, none when it matches nothing); a refused one (join, change)
    (("join", "a"), ("leave", "a"), _regex("x", "("), _regex("x", "o.*")),
    (*_TWO_STABLE, ("leave", "b"), _regex("x", "("), _regex("x", "zz.*"), _regex("c", "o.*")),
    (("join", "a"), _regex("x", "("), _regex("x", "zz.*"), ("ack", "a", {"regex": "("}), ("ack", "a", _REGEX_A)),
    (("join", "a"), ("join", "b"), _regex("x", "("), _regex("x", "zz.*"), ("ack", "a", {"regex": "("}),
     ("ack", "a", _REGEX_A)),
    (*_TWO_STABLE, ("leave", "b"), ("ack", "a", {"regex": "("}), ("ack", "a", _REGEX_A)),
    (*_TWO_STABLE, ("leave", "b"), ("ack", "a", {"regex": "zz.*"})),
    (("join", "a"), ("join", "b"), ("ack", "a", {"regex": "zz.*"})),
    (("join", "a", {"rebalance_timeout": SESSION_MS}), ("ack", "a", {"regex": "zz.*"})),
    # the migration (`Migrate`: policy bidirectional): a live classic group upgraded by a member's heartbeat
    # (ConvertedFromClassic), converted back when its last consumer-protocol member leaves (MembersRemoved -> Dead) or
    # is taken over by a JoinGroup without a member id (StaticMemberReplaced -> Dead), in Reconciling, Stable, Assigning
    (*_UPGRADED, ("join", "a"), ("leave", "a")),
    (*_UPGRADED, ("join", "a", _PAYMENTS), ("cjoin", "client-1"), ("leave", "a")),
    (*_UPGRADED, ("join", "a", _PAYMENTS), ("join", "b", _PAYMENTS), ("leave", "b"), ("leave", "a")),
    (*_UPGRADED, ("join", "s"), _join("", instance="i1")),
    (*_UPGRADED, ("join", "s", _PAYMENTS), ("cjoin", "client-1"), _join("", instance="i1")),
    (*_UPGRADED, ("join", "s", _PAYMENTS), ("join", "b", _PAYMENTS), ("leave", "b"), _join("", instance="i1")),
    # a resolution that finds the group Assigning: another member's leave was handled while the write of the
    # heartbeat that scheduled it was in flight (a bump when the topics changed, none when it matches nothing)
    (*_TWO_STABLE, ("race", "a", {"regex": "o.*", "leaver": "b"})),
    (*_TWO_STABLE, ("race", "a", {"regex": "zz.*", "leaver": "b"})),
)
