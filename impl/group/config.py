"""The group coordinator's configuration: Kafka's `GroupCoordinatorConfig` defaults (kafka-reference.md §2.12).

Owns: `GroupConfig`, a frozen value passed to the coordinator (no module-level mutable state, no environment reads).
Must not import: `kcoord.model`.
"""

from __future__ import annotations

from dataclasses import dataclass

INT32_MAX = 2_147_483_647
MIGRATION_POLICIES = ("disabled", "upgrade", "downgrade", "bidirectional")  # ConsumerGroupMigrationPolicy


@dataclass(frozen=True, slots=True)
class GroupConfig:
    """Every knob the coordinator reads; the defaults are Kafka 4.0's."""

    num_partitions: int = 50  # offsets.topic.num.partitions
    # classic groups
    min_session_timeout_ms: int = 6_000  # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1_800_000  # group.max.session.timeout.ms
    initial_rebalance_delay_ms: int = 3_000  # group.initial.rebalance.delay.ms
    max_size: int = INT32_MAX  # group.max.size
    new_member_join_timeout_ms: int = 300_000  # classicGroupNewMemberJoinTimeoutMs
    # offsets
    offset_metadata_max_bytes: int = 4_096  # offset.metadata.max.bytes (counted in UTF-16 units)
    offsets_retention_ms: int = 7 * 24 * 60 * 60 * 1000  # offsets.retention.minutes = 10080
    offsets_retention_check_interval_ms: int = 600_000  # offsets.retention.check.interval.ms
    # KIP-848 consumer groups
    consumer_session_timeout_ms: int = 45_000  # group.consumer.session.timeout.ms
    consumer_heartbeat_interval_ms: int = 5_000  # group.consumer.heartbeat.interval.ms
    consumer_max_size: int = INT32_MAX  # group.consumer.max.size
    consumer_assignors: tuple[str, ...] = ("uniform", "range")  # group.consumer.assignors; the first is the default
    consumer_metadata_refresh_interval_ms: int = INT32_MAX  # consumerGroupMetadataRefreshIntervalMs
    # group.consumer.migration.policy: disabled, upgrade (classic -> consumer), downgrade, bidirectional (both);
    # converting an Empty group is always allowed
    consumer_migration_policy: str = "bidirectional"

    @property
    def upgrade_enabled(self) -> bool:
        return self.consumer_migration_policy.lower() in ("upgrade", "bidirectional")

    @property
    def downgrade_enabled(self) -> bool:
        return self.consumer_migration_policy.lower() in ("downgrade", "bidirectional")

    def __post_init__(self) -> None:
        if self.consumer_migration_policy.lower() not in MIGRATION_POLICIES:
            raise ValueError(f"group.consumer.migration.policy must be one of {', '.join(MIGRATION_POLICIES)}, got "
                             f"{self.consumer_migration_policy!r}")
        if self.num_partitions < 1:
            raise ValueError(f"num_partitions must be >= 1, got {self.num_partitions}")
        if not self.consumer_assignors:
            raise ValueError("consumer_assignors needs at least one assignor (the first is the default)")
        if self.min_session_timeout_ms > self.max_session_timeout_ms:
            raise ValueError(f"min_session_timeout_ms {self.min_session_timeout_ms} > max_session_timeout_ms "
                             f"{self.max_session_timeout_ms}")
