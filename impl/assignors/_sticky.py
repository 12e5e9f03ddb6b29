"""The engine behind ``sticky`` and ``cooperative-sticky`` (``AbstractStickyAssignor.assignPartitions``).

Step 1, here: read each member's previously owned partitions and generation (:class:`MemberData`, which the two
assignors obtain differently), settle conflicting claims, and decide which builder runs:

* a partition claimed by two members of the same generation is taken from both and reassigned from scratch;
* a partition claimed by members of different generations stays with the higher generation;
* claims on topics that are not being assigned are dropped.

Step 2: when every member subscribes to the same topics the *constrained* builder runs
(:mod:`._sticky_constrained`, linear time, exact quotas); otherwise the *general* builder
(:mod:`._sticky_general`, iterative balancing).

Members are visited in the iteration order of Java's ``HashMap<String, Subscription>`` (see :mod:`._java`), because
that order decides ties in both steps (which claim is seen first; which members keep ``maxQuota``), with the
caller's mapping order standing in for the JoinGroup order Java inserts in.

Deviations from ``AbstractStickyAssignor`` (each only reachable with inputs a real consumer does not send, or
where Java fails):

* Subscriptions are compared as sets. Java skips the comparison for the first member it visits when that member
  subscribes to nothing, and then hands that member partitions of topics it does not subscribe to.
* A member's topic list and claims are de-duplicated, and claims on partition numbers beyond the topic's current
  partition count are dropped (Java keeps them, and its unassigned-partition scan then assigns partitions twice).
* ``maxGeneration`` is computed per call. Java keeps it in a field of the leader's assignor instance across
  rebalances; it only differs when generations go backwards (a deleted and re-created group).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ._java import string_hash_map_order
from ._sticky_constrained import build_constrained
from ._sticky_general import build_general
from .classic import DEFAULT_GENERATION, Subscription, TopicPartition


@dataclass(frozen=True, slots=True)
class MemberData:
    """What a sticky assignor knows about a member's previous assignment (``AbstractStickyAssignor.MemberData``)."""

    partitions: tuple[TopicPartition, ...]
    generation: int | None  # None: the member did not say (Java's Optional.empty())


@dataclass(frozen=True, slots=True)
class StickyOutcome:
    assignment: dict[str, list[TopicPartition]]
    # Partitions the constrained builder moved between two live members (None after the general builder, whose
    # caller must derive them from owned vs. assigned partitions, as CooperativeStickyAssignor does).
    transferring: dict[TopicPartition, str] | None


@dataclass(slots=True)
class _Claims:
    owned: dict[str, dict[TopicPartition, None]]  # per member, in visiting order; dicts as ordered sets
    multiply_owned: set[TopicPartition]
    member_data: dict[str, MemberData]
    max_generation: int


def sticky_assign(
    topics: Mapping[str, int],
    subscriptions: Mapping[str, Subscription],
    member_data: Callable[[Subscription], MemberData],
) -> StickyOutcome:
    """Run the sticky algorithm over ``topics`` (already filtered to assignable topics, see ``classic``)."""
    order = string_hash_map_order(subscriptions)
    ordered = {member: subscriptions[member] for member in order}
    claims = _settle_claims(topics, ordered, member_data)
    topic_sets = {frozenset(s.topics) for s in ordered.values()}
    if len(topic_sets) <= 1:
        assignment, transferring = build_constrained(topics, claims.owned, claims.multiply_owned)
        return StickyOutcome(assignment, transferring)
    subscribed = {member: tuple(dict.fromkeys(s.topics)) for member, s in ordered.items()}
    prev = _previous_owners(claims)
    return StickyOutcome(build_general(topics, subscribed, claims.owned, prev), None)


def _settle_claims(
    topics: Mapping[str, int],
    subscriptions: Mapping[str, Subscription],
    member_data: Callable[[Subscription], MemberData],
) -> _Claims:
    """``allSubscriptionsEqual`` minus the equality test: resolve who keeps each claimed partition."""
    owned: dict[str, dict[TopicPartition, None]] = {}
    multiply_owned: set[TopicPartition] = set()
    previous_owner: dict[TopicPartition, str] = {}
    data: dict[str, MemberData] = {}
    max_generation = DEFAULT_GENERATION
    for member, subscription in subscriptions.items():
        md = member_data(subscription)
        data[member] = md
        generation = DEFAULT_GENERATION if md.generation is None else md.generation
        max_generation = max(max_generation, generation)
        mine: dict[TopicPartition, None] = {}
        owned[member] = mine
        for tp in dict.fromkeys(md.partitions):
            if not 0 <= tp.partition < topics.get(tp.topic, 0):
                continue
            other = previous_owner.get(tp)
            if other is None:
                mine[tp] = None
                previous_owner[tp] = member
                continue
            # Java compares against the other member's *subscription* generation, not its member data.
            other_generation = subscriptions[other].generation_id
            other_generation = other_generation if other_generation >= 0 else DEFAULT_GENERATION
            if generation == other_generation:
                multiply_owned.add(tp)
                owned[other].pop(tp, None)
                previous_owner[tp] = member
            elif generation > other_generation:
                mine[tp] = None
                owned[other].pop(tp, None)
                previous_owner[tp] = member
    return _Claims(owned, multiply_owned, data, max_generation)


def _previous_owners(claims: _Claims) -> dict[TopicPartition, tuple[str, int]]:
    """``prepopulateCurrentAssignments``: for each partition, the newest owner from an older generation."""
    prev: dict[TopicPartition, tuple[str, int]] = {}
    for member, md in claims.member_data.items():
        if md.generation is not None and md.generation < claims.max_generation:
            generation = md.generation
        elif md.generation is None and claims.max_generation > DEFAULT_GENERATION:
            generation = DEFAULT_GENERATION
        else:
            continue
        for tp in md.partitions:
            known = prev.get(tp)
            if known is None or generation > known[1]:
                prev[tp] = (member, generation)
    return prev
