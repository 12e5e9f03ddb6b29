"""KIP-848 consumer groups (Kafka's `group/modern/consumer/` and GroupMetadataManager.consumerGroup*): `group`
(ConsumerTxn: subscription metadata, target assignment, member removal, the member timers) and `heartbeat`
(ConsumerGroupHeartbeat, DeleteGroups, ConsumerGroupDescribe). Every state-dependent answer is the ConsumerGroup and
ConsumerGroupMember specs'.
Must not import: `kcoord.model`; nothing of `kcoord.impl.group.classic`.
"""
