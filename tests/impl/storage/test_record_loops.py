"""The record loops are one template: the varint decode and the record parse are written once (`_record_loops`) and
expanded into the loops of `located` and `last_values`; the expansion leaves no macro behind, and every varint
length (one, two, three bytes) takes the same path in both loops."""

from __future__ import annotations

import re
from pathlib import Path

from kcoord.impl.storage import _record_loops
from kcoord.impl.storage.batch import LastValues, Record, RecordBatch, encode_batch
from kcoord.impl.storage.batch_decoder import BatchDecoder, decode_batch

STORAGE = Path(_record_loops.__file__).parent
#: the two-byte step of an inline varint decode: `(b & 0x7F) | (buf[p + 1] << 7)`
_TWO_BYTE_STEP = re.compile(r"\[p \+ 1\] << 7\)")


def inline_varint_decodes(source: str) -> int:
    return len(_TWO_BYTE_STEP.findall(source))


def test_the_varint_decode_is_written_once() -> None:
    assert inline_varint_decodes((STORAGE / "_record_loops.py").read_text()) == 1
    assert inline_varint_decodes((STORAGE / "batch_decoder.py").read_text()) == 0
    assert inline_varint_decodes((STORAGE / "batch.py").read_text()) == 0


def test_the_count_can_fail() -> None:
    """batch.py before the template had thirteen copies in located and last_values (two of them here)."""
    copy = "b = (b & 0x7F) | (body[p + 1] << 7)\n    o = (o & 0x7F) | (buf[p + 1] << 7)\n"
    assert inline_varint_decodes(copy) == 2


def test_the_expanded_loops_hold_no_macro() -> None:
    source = _record_loops.loop_sources()
    assert not re.search(r"^\s*(VARINT\(\w+\)|RECORD|PLAIN_RECORD)\s*$", source, re.MULTILINE)
    assert source.count("def ") == 3
    assert inline_varint_decodes(source) == 5 + 2 * 4  # a record: 5 varints, a plain one 4 (its timestamp skipped)


def test_one_two_and_three_byte_varints_in_both_loops() -> None:
    """Keys and values of 10, 100 and 10,000 bytes: length varints of one, two and three bytes (zigzag)."""
    records = tuple(Record(1000 + i, 5_000 + i * 70, bytes([65 + i]) * size, b"v" * size)
                    for i, size in enumerate((10, 100, 10_000)))
    data = encode_batch(RecordBatch(base_offset=1000, records=records, last_offset_delta=2, base_timestamp_ms=5_000,
                                    max_timestamp_ms=5_140))
    assert decode_batch(data).records == records
    into = LastValues()
    assert list(BatchDecoder(data).last_values(into, lambda offset, position: None, 4096)) == []
    assert into.latest == {r.key: (r.value, r.offset) for r in records}
