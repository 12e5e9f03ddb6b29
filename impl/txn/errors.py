"""Error translation for the transaction coordinator (reference §1.4).

Owns: how a failed `__transaction_state` append becomes the error a client sees (`appendTransactionToLog`'s table),
what a local storage failure counts as, and the old-client downgrade of PRODUCER_FENCED to INVALID_PRODUCER_EPOCH.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import errno
from collections.abc import Mapping
from typing import Final

from ..errors import Errors, KafkaError

__all__ = ["LogAppendError", "append_error_name", "downgrade_fenced", "translate_append_error"]

#: `TransactionStateManager.appendTransactionToLog`: the replica manager's error → the coordinator's answer
_APPEND_TRANSLATION: Final[Mapping[str, str]] = {
    Errors.UNKNOWN_TOPIC_OR_PARTITION: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.REQUEST_TIMED_OUT: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_LEADER_OR_FOLLOWER: Errors.NOT_COORDINATOR,
    Errors.KAFKA_STORAGE_ERROR: Errors.NOT_COORDINATOR,
    Errors.MESSAGE_TOO_LARGE: Errors.UNKNOWN_SERVER_ERROR,
    Errors.RECORD_LIST_TOO_LARGE: Errors.UNKNOWN_SERVER_ERROR,
}

#: API → the first request version that understands PRODUCER_FENCED (KafkaApis downgrades below it)
_FENCED_SINCE_VERSION: Final = {"InitProducerId": 4, "AddPartitionsToTxn": 2, "AddOffsetsToTxn": 2, "EndTxn": 2}


class LogAppendError(OSError):
    """An append failure that names the Kafka error the replica manager would have reported (a replicated log, or
    a fault injected by a test or the simulator). A plain `OSError` from the local disk counts as
    KAFKA_STORAGE_ERROR."""

    def __init__(self, kafka_error: str, message: str = "") -> None:
        super().__init__(errno.EIO, message or kafka_error)
        self.kafka_error = kafka_error


def append_error_name(error: BaseException) -> str:
    """The Kafka error name of a failed append (before translation)."""
    if isinstance(error, KafkaError):
        return error.name
    if isinstance(error, LogAppendError):
        return error.kafka_error
    if isinstance(error, OSError):
        return Errors.KAFKA_STORAGE_ERROR
    return Errors.UNKNOWN_SERVER_ERROR


def translate_append_error(name: str) -> str:
    """`appendTransactionToLog`'s mapping; errors not in the table pass through unchanged."""
    return _APPEND_TRANSLATION.get(name, name)


def downgrade_fenced(error: str, api: str, request_version: int | None) -> str:
    """PRODUCER_FENCED → INVALID_PRODUCER_EPOCH for clients too old to know it (None: the newest version)."""
    if request_version is not None and request_version < _FENCED_SINCE_VERSION[api] and error == Errors.PRODUCER_FENCED:
        return Errors.INVALID_PRODUCER_EPOCH
    return error
