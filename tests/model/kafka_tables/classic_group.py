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
