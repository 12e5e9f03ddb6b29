"""Kafka Streams Task.State, kafka-reference.md §6.2, turned from "valid next states" into valid-previous sets.

Valid next (the reference): CREATED -> RESTORING, SUSPENDED; RESTORING -> RUNNING, SUSPENDED; RUNNING -> SUSPENDED;
SUSPENDED -> RESTORING, CLOSED; CLOSED -> CREATED.
"""

MACHINE = "StreamsTask"
SOURCE = "kafka-reference.md §6.2 Task.State, column 'valid next states', inverted"

VALID_PREVIOUS: dict[str, frozenset[str]] = {
    "Created": frozenset({"Closed"}),
    "Restoring": frozenset({"Created", "Suspended"}),
    "Running": frozenset({"Restoring"}),
    "Suspended": frozenset({"Created", "Restoring", "Running"}),
    "Closed": frozenset({"Suspended"}),
}
