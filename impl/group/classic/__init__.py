"""Classic groups (Kafka's `group/classic/` and GroupMetadataManager.classicGroup*): `group` (ClassicTxn, the
rebalance mechanics and timers), `join` (JoinGroup), `sync` (SyncGroup, Heartbeat, LeaveGroup, DeleteGroups,
DescribeGroups), `protocol` (protocol selection and subscriptions). Every state-dependent answer is the ClassicGroup
spec's.
Must not import: `kcoord.model`; nothing of `kcoord.impl.group.consumer`.
"""
