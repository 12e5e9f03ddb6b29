"""`ProduceAnswers` (a Produce answer from its shape's template, the offsets written in place) against kio's encoding
of the same answer, for every Produce version kio has: byte for byte, whatever the offsets, errors and shapes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kcoord.impl.partition.types import ProduceResult
from kcoord.impl.server.answers import ProduceAnswers, Results
from kcoord.impl.server.codec import EncodedBody, HeaderStart, encode_body, encode_response
from kcoord.impl.server.handlers_data import PRODUCE_FLEXIBLE_FROM, produce_response

VERSIONS = range(3, 14)
Shape = list[tuple[str, list[tuple[int, ProduceResult]]]]
_OFFSETS = st.one_of(st.sampled_from([-1, 0, 1, 255, 2**31, 2**63 - 1, -(2**63)]),
                     st.integers(-(2**63), 2**63 - 1))
_ERRORS = st.sampled_from(["NONE", "NONE", "NOT_LEADER_OR_FOLLOWER", "INVALID_TXN_STATE", "KAFKA_STORAGE_ERROR"])
_RESULT = st.builds(ProduceResult, _ERRORS, _OFFSETS, st.just(-1), _OFFSETS)
_TOPIC = st.tuples(st.text(alphabet="abc._-Z9", min_size=1, max_size=12),
                   st.lists(st.tuples(st.integers(0, 2**31 - 1), _RESULT), max_size=4))


def _kio(version: int, results: Results) -> bytes:
    return encode_body(produce_response(version, results))


@settings(max_examples=300, deadline=None)
@given(version=st.sampled_from(VERSIONS), shape=st.lists(_TOPIC, max_size=3), again=st.lists(_OFFSETS, max_size=16))
def test_an_answer_is_kios_encoding_byte_for_byte(version: int, shape: Shape, again: list[int]) -> None:
    answers = ProduceAnswers(produce_response, PRODUCE_FLEXIBLE_FROM)
    first = answers.body(version, shape)
    data = first.data if isinstance(first, EncodedBody) else encode_body(first)
    assert data == _kio(version, shape)
    # the same shape with other offsets: from the template (when there is one)
    offsets = iter(again * 8 + [7] * 64)
    moved = [(name, [(index, ProduceResult(r.error, next(offsets), -1, next(offsets))) for index, r in parts])
             for name, parts in shape]
    second = answers.body(version, moved)
    if any(parts for _, parts in shape):
        assert isinstance(second, EncodedBody)
        assert (second.api_key, second.version, second.flexible) == (0, version, version >= 9)
    data = second.data if isinstance(second, EncodedBody) else encode_body(second)
    assert data == _kio(version, moved)


def test_a_commits_produce_answer_comes_from_the_template_with_its_header() -> None:
    answers = ProduceAnswers(produce_response, PRODUCE_FLEXIBLE_FROM)
    for version in VERSIONS:
        for base in (0, 10, 2**40):
            results = [("bench-out", [(0, ProduceResult("NONE", base, -1, 0)), (1, ProduceResult("NONE", base + 3))])]
            body = answers.body(version, results)
            assert isinstance(body, EncodedBody)
            header = HeaderStart(0, version, 77)
            assert encode_response(header, body) == encode_response(header, produce_response(version, results))


def test_an_answer_with_a_message_or_an_append_time_is_kios_own() -> None:
    answers = ProduceAnswers(produce_response, PRODUCE_FLEXIBLE_FROM)
    for result in (ProduceResult("INVALID_RECORD", error_message="no records"), ProduceResult("NONE", 5, 1_700, 0)):
        body = answers.body(12, [("t", [(0, result)])])
        assert not isinstance(body, EncodedBody)
        assert encode_body(body) == _kio(12, [("t", [(0, result)])])
