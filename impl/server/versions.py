"""The API versions kcoord's server should advertise, derived from what real clients send (CLIENT_VERSIONS.md).

Owns: `CLIENT_VERSIONS`, per API key the (lowest, highest) version that kafka-python 3.0.12, aiokafka 0.14.0 and
confluent-kafka 2.16.1 (librdkafka) were seen to send in their normal flows when the server advertised every
version kio has, and `recommended_range(api_key)`. Data only; the coordinator glue decides what to register.
Must not import: `kcoord.model`, the dispatcher, the connection layer.

Why the hull of what was seen, not kio's whole range: a client picks min(its max, our max), so advertising exactly
this hull lets every client take the same code path it takes against Apache Kafka 4.x, while the handlers need to
implement only the versions some client actually uses. Widen a range (e.g. JoinGroup to v9 for the Java client)
only together with the handler behaviour of the added versions.
"""

from __future__ import annotations

import types
from typing import Final

from .api_versions import VersionRange

__all__ = ("CLIENT_VERSIONS", "recommended_range")

# api key: (lowest seen, highest seen). Comments name who sends which version.
CLIENT_VERSIONS: Final[types.MappingProxyType[int, VersionRange]] = types.MappingProxyType({
    0: VersionRange(7, 10),  # Produce: aiokafka 7, kafka-python 9, librdkafka 10
    1: VersionRange(11, 16),  # Fetch: aiokafka 11, kafka-python 12, librdkafka 16 (all read_committed)
    2: VersionRange(3, 11),  # ListOffsets: aiokafka 3, librdkafka 7, kafka-python 11
    3: VersionRange(5, 13),  # Metadata: aiokafka 5, kafka-python 13, librdkafka 13
    8: VersionRange(3, 9),  # OffsetCommit: aiokafka 3, kafka-python 8, librdkafka 9 (classic and KIP-848)
    9: VersionRange(3, 9),  # OffsetFetch: aiokafka 3, kafka-python 8, librdkafka 9
    10: VersionRange(1, 6),  # FindCoordinator: aiokafka 1, librdkafka 2, kafka-python 6 (batched keys)
    11: VersionRange(5, 7),  # JoinGroup: aiokafka 5, librdkafka 5, kafka-python 7
    12: VersionRange(1, 4),  # Heartbeat: aiokafka 1 (from source), librdkafka 3, kafka-python 4
    13: VersionRange(1, 5),  # LeaveGroup: aiokafka 1, librdkafka 1, kafka-python 5 (batched members)
    14: VersionRange(3, 5),  # SyncGroup: aiokafka 3, librdkafka 3, kafka-python 5
    15: VersionRange(3, 6),  # DescribeGroups: aiokafka 3, librdkafka 5, kafka-python 6
    16: VersionRange(1, 5),  # ListGroups: aiokafka 1, librdkafka 5, kafka-python 5
    18: VersionRange(0, 4),  # ApiVersions: aiokafka 0, librdkafka 3, kafka-python 4 (built in)
    22: VersionRange(0, 4),  # InitProducerId: aiokafka 0, kafka-python 4, librdkafka 4
    24: VersionRange(0, 3),  # AddPartitionsToTxn: aiokafka 0, librdkafka 0, kafka-python 3
    25: VersionRange(0, 3),  # AddOffsetsToTxn: aiokafka 0, librdkafka 0, kafka-python 3
    26: VersionRange(0, 3),  # EndTxn: aiokafka 0, librdkafka 1, kafka-python 3
    28: VersionRange(0, 3),  # TxnOffsetCommit: aiokafka 0, kafka-python 3, librdkafka 3
    61: VersionRange(0, 0),  # DescribeProducers: kafka-python admin 0
    65: VersionRange(0, 0),  # DescribeTransactions: kafka-python admin 0
    66: VersionRange(2, 2),  # ListTransactions: kafka-python admin 2
    68: VersionRange(1, 1),  # ConsumerGroupHeartbeat: librdkafka group.protocol=consumer 1
    69: VersionRange(0, 0),  # ConsumerGroupDescribe: librdkafka admin 0 (then DescribeGroups for classic groups)
})


def recommended_range(api_key: int) -> VersionRange | None:
    """The range to advertise for `api_key`, or None if no client was seen sending it."""
    return CLIENT_VERSIONS.get(api_key)
