"""Kafka's TransactionManager.State.isTransitionValid, kafka-reference.md §6.1 ([S]), as valid-previous sets.

FATAL_ERROR is listed with every other state as its previous state. Kafka's code also returns true for
FATAL_ERROR -> FATAL_ERROR (a late fatal response re-enters it), but the reference says FATAL_ERROR is never a source
and our FatalError is final, so that self-edge is not part of the table.
"""

MACHINE = "ProducerClient"
SOURCE = "kafka-reference.md §6.1 TransactionManager (clients), column 'allowed from'"

VALID_PREVIOUS: dict[str, frozenset[str]] = {
    "Uninitialized": frozenset({"Ready", "AbortableError"}),
    "Initializing": frozenset({"Uninitialized", "AbortingTransaction"}),
    "Ready": frozenset({"Initializing", "CommittingTransaction", "AbortingTransaction"}),
    "InTransaction": frozenset({"Ready"}),
    "CommittingTransaction": frozenset({"InTransaction"}),
    "AbortingTransaction": frozenset({"InTransaction", "AbortableError"}),
    "AbortableError": frozenset({"InTransaction", "CommittingTransaction", "AbortableError", "Initializing"}),
    "FatalError": frozenset({
        "Uninitialized", "Initializing", "Ready", "InTransaction", "CommittingTransaction", "AbortingTransaction",
        "AbortableError",
    }),
}
