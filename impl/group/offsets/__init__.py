"""Offsets of the group coordinator (Kafka's `OffsetMetadataManager`): the store (`store`), the commit, fetch and
delete handlers (`commit`), expiration (`expiration`) and the `__consumer_offsets` side of WriteTxnMarkers
(`markers`). Offsets sit beside the group types: their handlers ask the classic and KIP-848 specs about the group.
Must not import: `kcoord.model`.
"""
