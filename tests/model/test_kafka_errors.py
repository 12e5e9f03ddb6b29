"""model/kafka_errors.py restates Kafka's Errors table; it must agree with kio's generated ErrorCode."""

from kio.schema.errors import ErrorCode

from kcoord.model.kafka_errors import KAFKA_ERRORS


def test_error_table_matches_kio() -> None:
    kio = {e.name.upper(): (int(e.value), bool(e.retriable)) for e in ErrorCode}
    assert kio == KAFKA_ERRORS


def test_well_known_codes() -> None:
    assert KAFKA_ERRORS["CONCURRENT_TRANSACTIONS"] == (51, True)
    assert KAFKA_ERRORS["PRODUCER_FENCED"][0] == 90
    assert KAFKA_ERRORS["NONE"] == (0, False)
