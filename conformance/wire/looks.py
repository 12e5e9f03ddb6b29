"""What the scenarios look at on the broker between their steps, for their observations: a group as its coordinator
describes it (DescribeGroups, ConsumerGroupDescribe), a transaction as its coordinator describes it, and the
members' own view (assignment balance and exclusivity, generation).

Owns: `coordinator` (FindCoordinator, retried while the broker answers COORDINATOR_NOT_AVAILABLE or
COORDINATOR_LOAD_IN_PROGRESS, as every client does: Kafka answers COORDINATOR_NOT_AVAILABLE while it creates and
loads `__consumer_offsets` or `__transaction_state` on first use), `look_classic_group`, `look_consumer_group`,
`look_transaction` (each records what it saw in the scenario's `Observations`).
Must not import: `kcoord.impl` beyond the wire codec.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Sequence
from typing import Any

from kio.schema.types import GroupId

from .members import Member
from .observe import Observations
from .ownership import OwnershipLog
from .raw import RawConnection, find_coordinator, split_bootstrap
from .target import ScenarioFailed, Target

COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
RETRIED = frozenset({COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE})


def coordinator(target: Target, key: str, key_type: int, via: tuple[str, int] | None = None) -> int:
    """The node id coordinating `key` (key type 0: group, 1: transaction), asking `via` (default: the first
    bootstrap server that accepts a connection: a scenario may have stopped one) until it answers without a
    retriable error."""
    deadline = time.monotonic() + target.timeout_s
    while True:
        error, node = find_coordinator(via or _live_bootstrap(target), key, key_type)
        if error == 0:
            return node
        if error not in RETRIED or time.monotonic() > deadline:
            raise ScenarioFailed(f"FindCoordinator({key_type}, {key}) answered error {error}")
        time.sleep(0.2)


def _live_bootstrap(target: Target) -> tuple[str, int]:
    addresses = split_bootstrap(target.bootstrap)
    for address in addresses:
        with contextlib.suppress(OSError), socket.create_connection(address, timeout=2.0):
            return address
    raise ScenarioFailed(f"no bootstrap server accepts a connection: {target.bootstrap}")


def _ask_coordinator(target: Target, key: str, key_type: int, body: Any) -> Any:
    node = coordinator(target, key, key_type)
    with RawConnection(target.addresses()[node]) as conn:
        return conn.request(body)


def classic_group(target: Target, group: str) -> tuple[int, str, int]:
    """(error code, state, member count) of `group` as its coordinator describes it (DescribeGroups v5)."""
    from kio.schema.describe_groups.v5.request import DescribeGroupsRequest

    response = _ask_coordinator(target, group, 0, DescribeGroupsRequest(groups=(GroupId(group),),
                                                                      include_authorized_operations=False))
    (described,) = response.groups
    return int(described.error_code.value), described.group_state, len(described.members)


def generation(member: Member) -> int | None:
    """The generation a classic member's client is in, where the library shows it (kafka-python and aiokafka keep it
    on their coordinator object; librdkafka does not expose it)."""
    coordinator_: Any = getattr(member.client, "_coordinator", None)
    with contextlib.suppress(AttributeError, TypeError, ValueError):
        if hasattr(coordinator_, "_generation"):
            return int(coordinator_._generation.generation_id)
        if hasattr(coordinator_, "generation"):
            return int(coordinator_.generation)
    return None


def look_assignment(obs: Observations, label: str, members: Sequence[Member], log: OwnershipLog) -> None:
    """The members' assignment balance (how many partitions each owns, sorted) and exclusivity (no partition ever
    owned by two members at once, from the clients' own callbacks)."""
    obs.exact(f"{label}: partitions per member", sorted(len(m.assignment()) for m in members))
    obs.exact(f"{label}: ownership violations", len(log.violations()))


def look_classic_group(obs: Observations, target: Target, label: str, group: str, members: Sequence[Member],
                       log: OwnershipLog) -> None:
    """A settled classic group: its state and size from the coordinator, the members' balance and exclusivity, and
    each member's generation (where its client shows it) as it progresses."""
    error, state, size = _settled_classic(target, group, len(members))
    obs.exact(f"{label}: DescribeGroups", (error, state, size))
    look_assignment(obs, label, members, log)
    for member in members:
        gen = generation(member)
        if gen is not None:
            obs.progress(f"{label}: generation of {member.name.rsplit('-', 1)[-1]}", member.name, gen)


def _settled_classic(target: Target, group: str, size: int) -> tuple[int, str, int]:
    """DescribeGroups once the group is Stable with `size` members (the clients report their assignment as soon as
    SyncGroup answers; the coordinator may still be completing the generation for a moment)."""
    seen = classic_group(target, group)
    deadline = time.monotonic() + min(target.timeout_s, 10.0)
    while seen[1:] != ("Stable", size) and time.monotonic() < deadline:
        time.sleep(0.1)
        seen = classic_group(target, group)
    return seen


def consumer_group(target: Target, group: str) -> Any:
    """The ConsumerGroupDescribe v0 entry of a KIP-848 group, from its coordinator."""
    from kio.schema.consumer_group_describe.v0.request import ConsumerGroupDescribeRequest

    response = _ask_coordinator(target, group, 0, ConsumerGroupDescribeRequest(group_ids=(GroupId(group),),
                                                                              include_authorized_operations=False))
    (described,) = response.groups
    return described


def look_consumer_group(obs: Observations, target: Target, label: str, group: str, members: Sequence[Member],
                        log: OwnershipLog) -> None:
    """A settled KIP-848 group: its state, its group epoch as it progresses, whether the assignment epoch and every
    member's epoch caught up with it, how many members it has and how the partitions are spread."""
    described = _settled_consumer_group(target, group, len(members))
    obs.exact(f"{label}: ConsumerGroupDescribe", (int(described.error_code.value), described.group_state,
                                                  len(described.members)))
    obs.progress(f"{label}: group epoch", "group epoch", int(described.group_epoch))
    obs.exact(f"{label}: assignment epoch == group epoch",
              int(described.assignment_epoch) == int(described.group_epoch))
    obs.exact(f"{label}: member epochs == group epoch",
              all(int(m.member_epoch) == int(described.group_epoch) for m in described.members))
    look_assignment(obs, label, members, log)


def _settled_consumer_group(target: Target, group: str, size: int) -> Any:
    def done(d: Any) -> bool:
        return (d.group_state == "Stable" and len(d.members) == size
                and all(int(m.member_epoch) == int(d.group_epoch) for m in d.members))

    described = consumer_group(target, group)
    deadline = time.monotonic() + min(target.timeout_s, 10.0)
    while not done(described) and time.monotonic() < deadline:
        time.sleep(0.1)
        described = consumer_group(target, group)
    return described


def look_transaction(obs: Observations, target: Target, label: str, transactional_id: str) -> None:
    """The transaction's state, partition count and producer epoch (as it progresses) from DescribeTransactions
    (kafka-python's admin client: kio cannot decode the -1 start time of a transaction that is not open), once the
    transaction is settled (its markers written)."""
    settled = {"Empty", "CompleteCommit", "CompleteAbort"}
    deadline = time.monotonic() + min(target.timeout_s, 10.0)
    while True:
        described = target.admin().describe_transactions([transactional_id])[transactional_id]
        state = getattr(described.state, "value", str(described.state))
        if state in settled or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    obs.exact(f"{label}: DescribeTransactions", (state, len(described.topic_partitions)))
    obs.progress(f"{label}: producer epoch", f"epoch {transactional_id}", int(described.producer_epoch))
    obs.shape(f"{label}: producer id", int(described.producer_id))
