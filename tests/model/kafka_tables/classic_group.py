"""Kafka's ClassicGroupState.validPreviousStates, column 'valid previous states' of kafka-reference.md §2.1."""

MACHINE = "ClassicGroup"
SOURCE = "kafka-reference.md §2.1 ClassicGroupState, column 'valid previous states'"

VALID_PREVIOUS: dict[str, frozenset[str]] = {
    "Empty": frozenset({"PreparingRebalance"}),
    "PreparingRebalance": frozenset({"Stable", "CompletingRebalance", "Empty"}),
    "CompletingRebalance": frozenset({"PreparingRebalance"}),
    "Stable": frozenset({"CompletingRebalance"}),
    "Dead": frozenset({"Stable", "PreparingRebalance", "CompletingRebalance", "Empty", "Dead"}),
}

#: spec edges that are no Kafka transition: a classic group created in a state (target -> the spec's sources).
#: ConvertedFromConsumer's Empty -> Stable (guard `not exists`) is ClassicGroup.fromConsumerGroup's constructor
#: building the group in STABLE, kept so when a static member's take-over downgrades a consumer group without a
#: rebalance (never `transitionTo`, so Kafka's validPreviousStates do not list it)
CREATED: dict[str, frozenset[str]] = {"Stable": frozenset({"Empty"})}
