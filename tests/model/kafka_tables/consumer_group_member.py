"""The member-state edges of Kafka's KIP-848 reconciliation (CurrentAssignmentBuilder), kafka-reference.md §3.6.

Kafka's `MemberState` has no validPreviousStates table, so this one is derived from the code: for each of the four
states, the states `CurrentAssignmentBuilder.build` can return a member in when it starts from it. Only those four
states are compared (`EXACT = False`): the spec's lifecycle states (Absent, StaticLeft, Removed) have no Kafka
counterpart.
"""

MACHINE = "ConsumerGroupMember"
SOURCE = (
    "kafka-reference.md §3.6, checked against apache/kafka@1eb7644349cb07139d6a3c1ad1986979647cac99, "
    "group-coordinator/src/main/java/org/apache/kafka/coordinator/group/modern/consumer/CurrentAssignmentBuilder.java. "
    "build(), lines 131-192: STABLE computes the next assignment only when memberEpoch != targetEpoch; "
    "UNREVOKED_PARTITIONS only once the owned partitions no longer include a pending revocation, at memberEpoch + 1; "
    "UNRELEASED_PARTITIONS always; UNKNOWN throws FencedMemberEpochException unless owned is non-null and empty, then "
    "computes at the target epoch. computeNextAssignment(), lines 227-320: UNREVOKED_PARTITIONS when a partition to "
    "revoke is still owned (impossible from UNKNOWN, whose owned list is empty), otherwise UNRELEASED_PARTITIONS or "
    "STABLE at the target epoch. Nothing moves a member into UNKNOWN: it only comes from MemberState.fromValue on an "
    "unknown byte (modern/MemberState.java). CurrentAssignmentBuilderTest.java has a test for every edge "
    "(testStableToStable, testStableToUnrevokedPartitions, testStableToUnreleasedPartitions, "
    "testUnrevokedPartitionsToStable, testUnrevokedPartitionsToUnrevokedPartitions, "
    "testUnrevokedPartitionsToUnreleasedPartitions, testUnreleasedPartitionsToStable, "
    "testUnreleasedPartitionsToUnrevokedPartitions, testUnknownState) except UNRELEASED -> UNRELEASED (its test only "
    "shows the no-change case; the edge exists when the epoch, the previous epoch or the assignment moves while a "
    "partition stays unreleased) and UNKNOWN -> UNRELEASED (the UNKNOWN -> STABLE path with an unreleased partition)."
)
EXACT = False

VALID_PREVIOUS: dict[str, frozenset[str]] = {
    "Stable": frozenset({"Stable", "UnrevokedPartitions", "UnreleasedPartitions", "Unknown"}),
    "UnrevokedPartitions": frozenset({"Stable", "UnrevokedPartitions", "UnreleasedPartitions"}),
    "UnreleasedPartitions": frozenset({"Stable", "UnrevokedPartitions", "UnreleasedPartitions", "Unknown"}),
    "Unknown": frozenset(),
}
