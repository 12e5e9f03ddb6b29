"""Errors of the implementation layer.

Owns: `IllegalStateError` (our own bug: an impossible state, a move the generated table forbids, a spec that does
not cover a case) and `KafkaError` (a protocol error that maps 1:1 to a Kafka error code), and is the one place
`impl/` takes Kafka's error names from: `Errors`, generated from `kcoord.model.kafka_errors` (`kcoord gen`). User
mistakes in specs are never reported through here; they are diagnostics in `kcoord.model`.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

from ._generated.errors import Errors

__all__ = ["Errors", "IllegalStateError", "KafkaError"]


class IllegalStateError(AssertionError):
    """Something that must never happen happened; like Kafka's IllegalStateException, this is a bug in kcoord."""


class KafkaError(Exception):
    """A Kafka protocol error, named as in `org.apache.kafka.common.protocol.Errors`."""

    def __init__(self, name: str, message: str = "") -> None:
        super().__init__(f"{name}: {message}" if message else name)
        self.name = name
        self.message = message
