"""Partition assignors, restated from Kafka's Java sources.

Classic (client-side, run by the group leader during SyncGroup; :mod:`.classic` has the types):
``range`` (:mod:`.range`), ``roundrobin`` (:mod:`.roundrobin`), ``sticky`` (:mod:`.sticky`) and
``cooperative-sticky`` (:mod:`.cooperative_sticky`), plus the consumer-protocol bytes they travel in
(:mod:`.consumer_protocol`).

KIP-848 (server-side, run by the group coordinator; :mod:`.server` has the types): ``uniform``
(:mod:`.uniform`, :mod:`.uniform_heterogeneous`) and ``range`` (:mod:`.server_range`).

Each assignor module's docstring states what it guarantees about balance and stickiness, and what it does not.
Tie-breaks follow Java (string order by UTF-16 code unit, ``HashMap`` iteration order where Java's loops depend on
it): see :mod:`._java`.

Must not import ``kcoord.model`` (nothing under ``impl`` may).
"""

from __future__ import annotations

from .classic import (
    DEFAULT_GENERATION,
    Assignment,
    ClassicAssignor,
    RebalanceProtocol,
    Subscription,
    TopicPartition,
)
from .consumer_protocol import (
    ConsumerProtocolError,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from .cooperative_sticky import CooperativeStickyAssignor
from .range import RangeAssignor
from .roundrobin import RoundRobinAssignor
from .server import (
    GroupSpec,
    MemberSpec,
    PartitionAssignorError,
    ServerAssignor,
    SubscribedTopicDescriber,
    SubscriptionType,
    TargetAssignment,
    TopicMetadata,
)
from .server_range import ServerRangeAssignor
from .sticky import StickyAssignor
from .uniform import UniformAssignor


def classic_assignor(name: str) -> ClassicAssignor:
    """The classic assignor a consumer names in its JoinGroup protocols (``partition.assignment.strategy``)."""
    factories: dict[str, type[ClassicAssignor]] = {
        RangeAssignor.name: RangeAssignor,
        RoundRobinAssignor.name: RoundRobinAssignor,
        StickyAssignor.name: StickyAssignor,
        CooperativeStickyAssignor.name: CooperativeStickyAssignor,
    }
    try:
        return factories[name]()
    except KeyError:
        raise ValueError(f"unknown classic assignor {name!r}; known: {sorted(factories)}") from None


def server_assignor(name: str) -> ServerAssignor:
    """The server-side assignor named by ``group.consumer.assignors`` / the heartbeat's ``ServerAssignor``."""
    factories: dict[str, type[ServerAssignor]] = {
        UniformAssignor.name: UniformAssignor,
        ServerRangeAssignor.name: ServerRangeAssignor,
    }
    try:
        return factories[name]()
    except KeyError:
        raise ValueError(f"unknown server assignor {name!r}; known: {sorted(factories)}") from None


__all__ = [
    "DEFAULT_GENERATION",
    "Assignment",
    "ClassicAssignor",
    "ConsumerProtocolError",
    "CooperativeStickyAssignor",
    "GroupSpec",
    "MemberSpec",
    "PartitionAssignorError",
    "RangeAssignor",
    "RebalanceProtocol",
    "RoundRobinAssignor",
    "ServerAssignor",
    "ServerRangeAssignor",
    "StickyAssignor",
    "SubscribedTopicDescriber",
    "Subscription",
    "SubscriptionType",
    "TargetAssignment",
    "TopicMetadata",
    "TopicPartition",
    "UniformAssignor",
    "classic_assignor",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
    "server_assignor",
]
