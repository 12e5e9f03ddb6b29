"""Sticky assignment when every member subscribes to the same topics (``ConstrainedAssignmentBuilder``).

With N members and P partitions, ``min_quota = P // N``, ``max_quota = ceil(P / N)`` and exactly ``P % N``
members end with ``max_quota``. Steps:

1. Visit members in order (Java HashMap order, see :mod:`._sticky`). A member's still-valid owned partitions,
   sorted by (partition number, topic), are kept up to a cap: all of them if fewer than ``min_quota``; the first
   ``max_quota`` if it owns at least that many and members at ``max_quota`` are still wanted; otherwise the first
   ``min_quota``. What is cut off is remembered as "maybe revoked".
2. Hand the remaining partitions (topic order, then partition number) round-robin to members below
   ``min_quota`` (sorted by member id), then one each to members at exactly ``min_quota`` until ``P % N`` members
   have ``max_quota``.

Outcome: counts are ``min_quota`` or ``max_quota``; each member keeps ``min(owned, min_quota)`` of its valid owned
partitions, and ``min(owned, max_quota)`` if it is among the first ``P % N`` visited members owning that many.
Runs in O(P log P + N log N).

Also returns the partitions that changed hands between two live members ("transferring ownership"), which the
cooperative assignor withholds for one rebalance.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import IllegalStateError
from ._java import string_sort_key
from .classic import TopicPartition


def build_constrained(
    topics: Mapping[str, int],
    owned: Mapping[str, Mapping[TopicPartition, None]],
    multiply_owned: set[TopicPartition],
) -> tuple[dict[str, list[TopicPartition]], dict[TopicPartition, str]]:
    total = sum(topics.values())
    num_members = len(owned)
    min_quota, expected_over_min = divmod(total, num_members)
    max_quota = min_quota + (1 if expected_over_min else 0)

    assignment: dict[str, list[TopicPartition]] = {member: [] for member in owned}
    maybe_revoked: dict[TopicPartition, str] = {}
    under_min: list[str] = []
    exactly_min: list[str] = []
    over_min = 0
    assigned: set[TopicPartition] = set()

    for member, claims in owned.items():
        mine = sorted(
            (tp for tp in claims if tp not in multiply_owned),
            key=lambda tp: (tp.partition, string_sort_key(tp.topic)),
        )
        if len(mine) < min_quota:
            keep = len(mine)
            under_min.append(member)
        elif len(mine) >= max_quota and over_min < expected_over_min:
            keep = max_quota
            over_min += 1
            if over_min == expected_over_min:
                exactly_min.clear()
        else:
            keep = min_quota
            if over_min < expected_over_min:
                exactly_min.append(member)
        assignment[member].extend(mine[:keep])
        assigned.update(mine[:keep])
        for tp in mine[keep:]:
            maybe_revoked[tp] = member

    unassigned = [
        TopicPartition(topic, p)
        for topic in sorted(topics, key=string_sort_key)
        for p in range(topics[topic])
        if TopicPartition(topic, p) not in assigned
    ]
    under_min.sort(key=string_sort_key)
    exactly_min.sort(key=string_sort_key)

    transferring: dict[TopicPartition, str] = {}
    over_min = _round_robin(
        unassigned, assignment, under_min, exactly_min, min_quota, max_quota, over_min, expected_over_min,
        maybe_revoked, multiply_owned, transferring,
    )
    _verify_filled(assignment, under_min, min_quota, over_min, expected_over_min)
    return assignment, transferring


def _round_robin(
    unassigned: list[TopicPartition],
    assignment: dict[str, list[TopicPartition]],
    under_min: list[str],
    exactly_min: list[str],
    min_quota: int,
    max_quota: int,
    over_min: int,
    expected_over_min: int,
    maybe_revoked: Mapping[TopicPartition, str],
    multiply_owned: set[TopicPartition],
    transferring: dict[TopicPartition, str],
) -> int:
    """``assignRoundRobin``: cycle over ``under_min`` (removing members as they reach ``min_quota``), then drain
    ``exactly_min`` from its head. Returns the final number of members above ``min_quota``."""
    cursor = 0  # next position in under_min; a member reaching min_quota is deleted at cursor - 1
    next_exactly = 0  # exactly_min is only appended to after polling starts, so a head index is a FIFO
    for tp in unassigned:
        if cursor < len(under_min):
            member = under_min[cursor]
            cursor += 1
            from_under = True
        elif not under_min and next_exactly >= len(exactly_min):
            raise IllegalStateError(f"no member left below quota for {len(unassigned)} partitions")
        elif not under_min:
            member = exactly_min[next_exactly]
            next_exactly += 1
            from_under = False
        else:
            member = under_min[0]
            cursor = 1
            from_under = True

        members_partitions = assignment[member]
        members_partitions.append(tp)
        previous = maybe_revoked.get(tp)
        if (previous is not None and previous != member) or tp in multiply_owned:
            transferring[tp] = member

        count = len(members_partitions)
        if count == min_quota:
            if from_under:
                cursor -= 1
                del under_min[cursor]
            # Java removes through the under-min iterator even when the member came from exactly_min; that
            # path cannot reach min_quota here (those members already hold it), so only the append remains.
            exactly_min.append(member)
        elif count == max_quota:
            over_min += 1
    del exactly_min[:next_exactly]
    return over_min


def _verify_filled(
    assignment: Mapping[str, list[TopicPartition]],
    under_min: list[str],
    min_quota: int,
    over_min: int,
    expected_over_min: int,
) -> None:
    """``verifyUnfilledMembers``: members still listed as under-filled must in fact hold ``min_quota``."""
    if not under_min:
        return
    if over_min != expected_over_min:
        raise IllegalStateError(f"{over_min} members above min quota, expected {expected_over_min}")
    for member in under_min:
        if len(assignment[member]) != min_quota:
            raise IllegalStateError(f"member {member!r} holds {len(assignment[member])} < {min_quota}")
