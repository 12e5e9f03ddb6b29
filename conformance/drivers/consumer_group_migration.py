"""The ConsumerGroup driver's environment steps for the KIP-848 migration (the online upgrade of a classic group to a
consumer group and the downgrade back, group.consumer.migration.policy):

- `enable_migration`: the coordinator runs with the policy `bidirectional` (the driver's default is `disabled`). The
  policy is read from the coordinator's `GroupConfig` at each request, so setting it before any group exists is the
  same as starting the coordinator with it: the step is refused anywhere but first.
- `stable_classic_group`: a classic group of `n` members at generation 1, made through the classic API as clients do
  (JoinGroup without a member id, MEMBER_ID_REQUIRED, JoinGroup with the id; the join phase ends after
  group.initial.rebalance.delay.ms, extended while members join; the leader's SyncGroup carries a consumer-protocol
  assignment of `orders` split by partition number modulo n). The member ids are the coordinator's (the client id and
  the driver's counter-based ids: "client-1", "client-2", ...).

Must not import: kcoord.cli.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kcoord.impl.assignors import Assignment, Subscription, encode_assignment, encode_subscription
from kcoord.impl.assignors.classic import TopicPartition
from kcoord.impl.group.messages import JoinGroupRequest, SyncGroupRequest

ORDERS_PARTITIONS = 3


def enable_migration(driver: Any) -> None:
    """group.consumer.migration.policy bidirectional, before any group exists."""
    instances = driver.shard.instances
    if any(instances.get(m) for m in ("ClassicGroup", "ConsumerGroup", "ConsumerGroupMember")):
        raise ValueError("Migrate is a program's first step: groups exist already")
    ctx = driver.groups.ctx
    ctx.config = dataclasses.replace(ctx.config, consumer_migration_policy="bidirectional")


def stable_classic_group(driver: Any, group: str, n: int, rebalance_ms: int) -> list[str]:
    """A classic group of `n` members, Stable at generation 1; their member ids, the leader's first."""
    groups = driver.groups
    metadata = encode_subscription(Subscription.of(("orders",)))

    def join(member_id: str) -> Any:
        return groups.join_group(JoinGroupRequest(group, member_id, None, "consumer", (("range", metadata),), 10_000,
                                                  rebalance_ms))

    parked = []
    for _ in range(n):
        first = driver.wait(join(""))
        if first.error != "MEMBER_ID_REQUIRED":
            raise ValueError(f"a classic JoinGroup for {group} was answered {first.error}")
        parked.append(join(first.member_id))
    step = driver.config.groups.initial_rebalance_delay_ms
    for _ in range(rebalance_ms // step + 1):  # each delay may be extended by one more (up to the rebalance timeout)
        if all(p.done for p in parked):
            break
        driver.advance(step + 100)
    answers = [driver.wait(p) for p in parked]
    ids = [a.member_id for a in answers]
    if any(a.error != "NONE" for a in answers):
        raise ValueError(f"the classic group's join phase ended with {[a.error for a in answers]}")
    leader = answers[0].leader
    split = tuple((m, encode_assignment(Assignment(tuple(TopicPartition("orders", p)
                                                         for p in range(ORDERS_PARTITIONS) if p % n == i))))
                  for i, m in enumerate(ids))
    for m in sorted(ids, key=lambda m: m != leader):
        synced = driver.wait(groups.sync_group(SyncGroupRequest(group, m, 1, None, "consumer", "range",
                                                                split if m == leader else ())))
        if synced.error != "NONE":
            raise ValueError(f"the classic group's SyncGroup was answered {synced.error}")
    return sorted(ids, key=lambda m: m != leader)
