"""Differential check of `impl/server/lengths.check_body` against kio's own decoder, for every served API/version.

`check_body` walks a request body before kio decodes it and rejects impossible lengths (see lengths.py for why). Two
properties, on request bodies hypothesis builds from kio's schemas and kio encodes:
  * a valid body is accepted by `check_body`, and kio decodes it back to the same entity, reading every byte;
  * a body cut short anywhere is refused: by `check_body` with `LengthError` (always, for a schema with an array,
    since the walk reads every length and fixed-size field) or, for a schema `check_body` does not walk, by kio.
And for bodies whose lengths are lies (a length or count replaced by a huge value), `check_body` refuses them before
kio could allocate what they claim. On all of these bodies, valid, cut short or lying, the compiled check
(`lengths._compiled`, what `check_body` runs first) accepts exactly what the walk accepts, with the same long
durations.
"""

from __future__ import annotations

import io
import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.index import load_request_schema
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import Records

from kcoord.impl.server import CLIENT_VERSIONS
from kcoord.impl.server.lengths import LengthError, _compiled, _has_array, _layout, _Walk, check_body, compiled_verdict

# kio's phantom `Records` has no strategy of its own; a record set is opaque bytes to the request schema
st.register_type_strategy(Records, st.binary(max_size=40).map(Records))

SERVED = sorted((key, version) for key, served in CLIENT_VERSIONS.items()
                for version in range(served.min_version, served.max_version + 1))
PREFIX = b"\x00\x07junk\x00"  # bytes before the body (a header's worth), so offsets other than 0 are exercised
FAST = settings(max_examples=8, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


class _FieldByField(_Walk):
    """The walk before runs of fixed-width fields became one step (`lengths._plan`): every field on its own."""

    __slots__ = ()

    def entity(self, entity_type: type[Any], pos: int) -> int:
        flexible = bool(getattr(entity_type, "__flexible__", False))
        regular, tagged = _layout(entity_type)
        for field in regular:
            pos = self.field(field, flexible, pos)
        return self.tags(tagged, pos) if flexible else pos


def _walk_accepts(schema: type[Any], frame: bytes) -> list[int] | None:
    walk = _Walk(frame, len(frame))
    try:
        walk.entity(schema, len(PREFIX))
    except LengthError:
        return None
    return walk.long_durations


def _compiled_accepts(schema: type[Any], frame: bytes) -> list[int] | None:
    check = _compiled(schema)
    assert check is not None
    return compiled_verdict(check, frame, len(PREFIX))


def _same_verdicts(schema: type[Any], frame: bytes) -> None:
    if _has_array(schema):
        assert _compiled_accepts(schema, frame) == _walk_accepts(schema, frame), frame.hex()


def _encode(schema: type[Any], entity: Any) -> bytes:
    buffer = io.BytesIO()
    buffer.write(PREFIX)
    entity_writer(schema)(buffer, entity)
    return buffer.getvalue()


def _kio_decodes(schema: type[Any], frame: bytes) -> tuple[Any, int] | None:
    try:
        return entity_reader(schema)(frame, len(PREFIX))
    except Exception:  # kio raises assorted errors on short input (struct, its own, Unicode); any refusal counts
        return None


def test_every_served_api_version_is_covered() -> None:
    assert len(SERVED) >= 90, SERVED  # ~25 APIs at the versions the three clients send
    assert sum(_has_array(load_request_schema(k, v)) for k, v in SERVED) > len(SERVED) // 2


@pytest.mark.parametrize(("api_key", "version"), SERVED, ids=[f"api{k}v{v}" for k, v in SERVED])
@FAST
@given(data=st.data())
def test_check_body_agrees_with_kio(api_key: int, version: int, data: st.DataObject) -> None:
    schema = load_request_schema(api_key, version)
    entity = data.draw(st.from_type(schema), label="request")
    frame = _encode(schema, entity)

    check_body(schema, frame, len(PREFIX))  # a valid body: accepted
    _same_verdicts(schema, frame)
    decoded = _kio_decodes(schema, frame)
    assert decoded is not None, "kio cannot decode what it encoded"
    assert decoded == (entity, len(frame) - len(PREFIX)), "kio did not read the body back exactly"

    if len(frame) == len(PREFIX):
        return  # an empty body (ListGroups v1, ApiVersions v0-2): nothing to cut
    cut = data.draw(st.integers(len(PREFIX), len(frame) - 1), label="cut at")
    short = frame[:cut]
    _same_verdicts(schema, short)
    if _has_array(schema):
        with pytest.raises(LengthError) as refused:
            check_body(schema, short, len(PREFIX))
        with pytest.raises(LengthError) as by_field:  # runs of fixed-width fields are one step: the same error
            _FieldByField(short, len(short)).entity(schema, len(PREFIX))
        assert str(refused.value) == str(by_field.value)
    else:
        check_body(schema, short, len(PREFIX))  # no walk for array-free schemas: kio's own checks refuse it
    assert _kio_decodes(schema, short) is None, f"kio decoded a body cut at byte {cut} of {len(frame)}"


@pytest.mark.parametrize(("api_key", "version"), [(k, v) for k, v in SERVED if _has_array(load_request_schema(k, v))],
                         ids=[f"api{k}v{v}" for k, v in SERVED if _has_array(load_request_schema(k, v))])
@FAST
@given(data=st.data())
def test_a_lying_length_is_refused_or_harmless(api_key: int, version: int, data: st.DataObject) -> None:
    """Overwrite 4 bytes of a valid body with a huge big-endian count (what a non-flexible length looks like, and a
    run of varint continuation bytes in a flexible one): either the walk refuses the body, or every length it read
    still fits in the bytes there are — so kio's allocation stays bounded by the body's size."""
    schema = load_request_schema(api_key, version)
    entity = data.draw(st.from_type(schema), label="request")
    frame = bytearray(_encode(schema, entity))
    if len(frame) - len(PREFIX) < 4:
        return
    at = data.draw(st.integers(len(PREFIX), len(frame) - 4), label="lie at")
    struct.pack_into(">I", frame, at, data.draw(st.sampled_from([0x7FFF_FFFF, 0xFFFF_FFFE, 0x0FFF_FFFF]), label="n"))
    _same_verdicts(schema, bytes(frame))
    try:
        check_body(schema, bytes(frame), len(PREFIX))
    except LengthError:
        return
    # accepted: then the walk found every claimed length within the body, and kio either decodes or refuses it
    # without trying a huge allocation (a MemoryError or an abort would end this test run)
    _kio_decodes(schema, bytes(frame))
