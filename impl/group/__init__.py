"""The group coordinator (classic groups, KIP-848 consumer groups, offsets) on the coordinator runtime.

Entry point: `GroupCoordinator` (one per node). Requests and responses: `kcoord.impl.group.messages`; configuration:
`GroupConfig`. Every state-dependent answer comes from the ClassicGroup, ConsumerGroup, ConsumerGroupMember and
PartitionProducer specs; this package computes their parameters and writes the `__consumer_offsets` records.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

from .config import GroupConfig
from .coordinator import OFFSETS_TOPIC, GroupCoordinator

__all__ = ["OFFSETS_TOPIC", "GroupConfig", "GroupCoordinator"]
