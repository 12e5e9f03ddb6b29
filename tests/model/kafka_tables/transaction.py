"""Kafka's TransactionState.validPreviousStates, [L] column of kafka-reference.md §1.1 (Transactions V2 included)."""

MACHINE = "Transaction"
SOURCE = "kafka-reference.md §1.1 TransactionState, column 'valid previous states [L]'"

VALID_PREVIOUS: dict[str, frozenset[str]] = {
    "Empty": frozenset({"Empty", "CompleteCommit", "CompleteAbort"}),
    "Ongoing": frozenset({"Ongoing", "Empty", "CompleteCommit", "CompleteAbort"}),
    "PrepareCommit": frozenset({"Ongoing"}),
    "PrepareAbort": frozenset({"Ongoing", "PrepareEpochFence", "Empty", "CompleteCommit", "CompleteAbort"}),
    "CompleteCommit": frozenset({"PrepareCommit"}),
    "CompleteAbort": frozenset({"PrepareAbort"}),
    "Dead": frozenset({"Empty", "CompleteAbort", "CompleteCommit"}),
    "PrepareEpochFence": frozenset({"Ongoing"}),
}
