"""Classic ``cooperative-sticky`` assignor (``CooperativeStickyAssignor``, KIP-429 incremental rebalancing).

Same placement algorithm as ``sticky`` (:mod:`._sticky`), but members keep their partitions across JoinGroup and
report them in the subscription's ``owned_partitions`` (protocol v1+) and generation (``generation_id``, v2+; older
members put it in 4 bytes of user data). The incremental rule: a partition whose owner changes between two
members of the group is **left out of every assignment** in this rebalance. Its old owner sees it missing,
revokes it and rejoins; in the follow-up rebalance nobody owns it and it goes to its new owner.

Guarantees:

* Safety: an assignment never gives a member a partition that another member of this rebalance reported owning
  (for consistent reports: no partition claimed by two members).
* Each rebalance's assignment is the ``sticky`` target minus the partitions in transit, so each member receives a
  subset of its ``sticky`` target and every partition not in transit is assigned exactly once.
* Convergence: with unchanged membership and subscriptions, the follow-up rebalance assigns what was in transit
  and the assignment is then a fixed point of ``sticky``, with the balance guarantees stated there. With identical
  subscriptions that follow-up never revokes anything (every member's claims are within its quota and at most
  ``P % N`` of them hold ``P // N + 1``), so two rebalances always suffice; with different subscriptions the
  general builder usually settles in two as well, which is tested but not proven.

Not promised: that every partition is assigned in every rebalance (those in transit are not), or that a member's
count is within one of the others' before convergence.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence

from ._sticky import MemberData, sticky_assign
from .classic import (
    DEFAULT_GENERATION,
    Assignment,
    RebalanceProtocol,
    Subscription,
    TopicPartition,
    assignable_topics,
    to_assignments,
)

_GENERATION = struct.Struct(">i")


def encode_user_data(generation: int) -> bytes:
    """``CooperativeStickyAssignor.subscriptionUserData``: schema v0, one int32 ``generation``."""
    return _GENERATION.pack(generation)


def member_data(subscription: Subscription) -> MemberData:
    """``CooperativeStickyAssignor.memberData``: the v2+ generation field wins; else the user data's int32."""
    owned = subscription.owned_partitions
    if subscription.generation_id >= 0:
        return MemberData(owned, subscription.generation_id)
    data = subscription.user_data
    if data is None:
        return MemberData(owned, None)
    if len(data) < _GENERATION.size:
        return MemberData(owned, DEFAULT_GENERATION)
    return MemberData(owned, _GENERATION.unpack_from(data)[0])


def transferring_partitions(
    subscriptions: Mapping[str, Subscription], assignment: Mapping[str, list[TopicPartition]]
) -> dict[TopicPartition, str]:
    """``computePartitionsTransferringOwnership``: partitions some member gains while another member loses them."""
    added: dict[TopicPartition, str] = {}
    revoked: set[TopicPartition] = set()
    for member, assigned in assignment.items():
        owned = subscriptions[member].owned_partitions
        owned_set = set(owned)
        assigned_set = set(assigned)
        for tp in assigned:
            if tp not in owned_set:
                added[tp] = member
        revoked.update(tp for tp in owned if tp not in assigned_set)
    return {tp: member for tp, member in added.items() if tp in revoked}


class CooperativeStickyAssignor:
    name = "cooperative-sticky"
    supported_protocols = (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        if not subscriptions:
            return {}
        topics = assignable_topics(partitions_per_topic, subscriptions)
        outcome = sticky_assign(topics, subscriptions, member_data)
        assignment = outcome.assignment
        transferring = outcome.transferring
        if transferring is None:
            transferring = transferring_partitions(subscriptions, assignment)
        withheld: dict[str, set[TopicPartition]] = {}
        for tp, member in transferring.items():
            withheld.setdefault(member, set()).add(tp)
        return to_assignments(
            {member: [tp for tp in parts if tp not in withheld.get(member, ())] for member, parts in assignment.items()}
        )

    def subscription_user_data(self, assigned: Sequence[TopicPartition] | None, generation_id: int) -> bytes | None:
        return encode_user_data(generation_id)
