"""Kafka's valid-previous-state tables, transcribed as data from kafka-reference.md (one module per machine).

Each module defines `MACHINE` (the spec machine's name), `SOURCE` (where in the reference the table is) and
`VALID_PREVIOUS: dict[str, frozenset[str]]` (target state -> the states Kafka allows before it). The diff test
compares them with the generated tables, so a spec edge that differs from Kafka fails it.
"""
