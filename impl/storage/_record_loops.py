"""The record loops of the v2 batch decoder: one record's parse, written once, expanded into the three loops that need
it when this module is imported.

Owns: `_VARINT` (one varint decode: one- and two-byte varints inline, longer ones through `read_uvarint`), `_RECORD`
(one record: length, attributes, timestamp delta, offset delta, key, value, headers; a record that does not parse, or
does not end where its length says, raises `Malformed`), the loops built from them — `parse_records` (a batch's
records as `Record`s: `BatchDecoder.located`), `plain_record` and `plain_records` (a batch's last value per key:
`BatchDecoder.last_values`, which takes only records with a key and no headers, else `NotPlain`) — and the fast
construction of frozen records (`unchecked_builder`).

Why a template and not a function per varint or per record: this is the hot loop of a log load, and a Python call
costs more than the decode it would wrap (five varints a record). The template is plain text with macros standing
alone on their lines, `VARINT(name)`, `BYTES(name)`, `RECORD` and `PLAIN_RECORD` (a record whose timestamp is
skipped: a last-value load does not keep it); `_expand` replaces them, indentation kept, and the result is compiled
once. The differential tests (`tests/impl/storage/test_last_values.py`, `test_batch.py`) hold the loops to the
careful decode; `loop_sources()` shows the expanded code.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import fields, make_dataclass
from typing import Any

from ._varint import read_uvarint, read_zigzag
from .batch import Header, Record

__all__ = ["Malformed", "NotPlain", "decode_headers", "loop_sources", "parse_records", "plain_record", "plain_records",
           "unchecked_builder"]


class Malformed(Exception):
    """A CRC-valid batch whose records do not parse (reported as ``StopReason.CORRUPT``)."""


class NotPlain(Exception):
    """``BatchDecoder.last_values``: this batch is for the careful path (it decodes it, or says why it is bad)."""


def unchecked_builder(cls: type[Any]) -> type[Any]:
    """A mutable class with exactly ``cls``'s slots, used to build instances of the frozen dataclass ``cls`` fast.

    A frozen dataclass sets every field through ``object.__setattr__``; for ``Record`` that costs ~1.4 µs on the
    reference machine, more than parsing the record. Decoding builds this twin instead (~0.4 µs) and relabels it
    with ``obj.__class__ = cls``, which CPython permits because the slot layouts are identical. The twin never
    escapes the decoder: callers only ever see ``cls`` instances, immutable as usual.
    """
    twin = make_dataclass(f"_{cls.__name__}Builder", [(f.name, Any) for f in fields(cls)], slots=True)
    assert getattr(twin, "__slots__", None) == cls.__slots__, f"slot layouts differ for {cls.__name__}"
    return twin


def decode_headers(buf: bytes, pos: int) -> tuple[tuple[Header, ...], int]:
    count, pos = read_zigzag(buf, pos)
    if count < 0:
        raise Malformed(f"negative header count {count}")
    headers = []
    for _ in range(count):
        n, pos = read_zigzag(buf, pos)
        if n < 0:
            raise Malformed("null header key")
        key = buf[pos:pos + n].decode("utf-8")
        pos += n
        n, pos = read_zigzag(buf, pos)
        value = None if n < 0 else buf[pos:pos + n]
        pos += max(n, 0)
        headers.append((key, value))
    return tuple(headers), pos


# ---------------------------------------------------------------------------------------------- the template

#: an unsigned varint at `buf[p]` into NAME, `p` moved past it (zigzag values are decoded by their users); the
#: name `_` skips it (its value is not kept)
_VARINT = """\
NAME = buf[p]
if NAME < 0x80:
    p += 1
elif buf[p + 1] < 0x80:
    NAME = (NAME & 0x7F) | (buf[p + 1] << 7)
    p += 2
else:
    NAME, p = read_uvarint(buf, p)
"""
_SKIP = """\
if buf[p] < 0x80:
    p += 1
elif buf[p + 1] < 0x80:
    p += 2
else:
    p = read_uvarint(buf, p)[1]
"""

#: a length-prefixed byte string at `buf[p]` into NAME (None for length -1)
_BYTES = """\
VARINT(b)
if b & 1:
    if b != 1:
        raise Malformed(f"negative NAME length {(b >> 1) ^ -1} at {at + p}")
    NAME = None
else:
    NAME = buf[p:p + (b >> 1)]
    p += b >> 1
"""

#: one record at `buf[p]`, which must end by `end`: into record_end, t (timestamp delta) and o (offset delta), both
#: zigzag, key, value and headers; `at` is the file position of buf[0], for the messages. KEY and HEADERS are what
#: the record's kind makes of them (`_KINDS`)
_RECORD = """\
VARINT(b)
record_end = p + (b >> 1)
if b & 1 or record_end > end:
    raise Malformed(f"record length {(b >> 1) ^ -(b & 1)} at {at + p} does not fit the batch")
p += 1  # the unused attributes byte
VARINT(t)
VARINT(o)
KEY
BYTES(value)
HEADERS
if p != record_end:
    raise Malformed(f"record ends at {at + p}, its length prefix says {at + record_end}")
"""

#: a full record (`RECORD`: any key, any headers) and a plain one (`PLAIN_RECORD`, a last-value load's: its timestamp
#: skipped, a key and no headers, else NotPlain)
_KINDS = {
    "full": {"KEY": "BYTES(key)", "HEADERS": """\
if buf[p] == 0:
    headers = ()
    p += 1
else:
    headers, p = decode_headers(buf, p)
"""},
    "plain": {"KEY": """\
VARINT(b)
if b & 1:
    raise NotPlain
key = buf[p:p + (b >> 1)]
p += b >> 1
""", "HEADERS": """\
if buf[p]:
    raise NotPlain
p += 1
"""},
}

_LOOPS = '''\
def parse_records(buf, p, end, count, base_offset, base_ts, fixed_ts, at, builder=RecordBuilder, record_type=Record):
    """The `count` records of the batch ending at `end` whose records start at `p`, as Records (`fixed_ts`: the
    timestamp of every record of a LOG_APPEND_TIME batch, else None); Malformed unless they fill it exactly.
    (`builder` and `record_type` are bound once, as defaults, to be read as locals.)"""
    records = []
    append = records.append
    for _ in range(count):
        RECORD
        record = builder(base_offset + ((o >> 1) ^ -(o & 1)),
                         base_ts + ((t >> 1) ^ -(t & 1)) if fixed_ts is None else fixed_ts, key, value, headers)
        record.__class__ = record_type
        append(record)
    if p != end:
        raise Malformed(f"{end - p} bytes left over after {count} records")
    return records


def plain_record(buf, p, end, base_offset, latest):
    """The one record of a batch, which must fill it, have a key and no headers, into `latest` (else NotPlain or
    Malformed, and nothing stored)."""
    at = 0
    PLAIN_RECORD
    if record_end != end:
        raise NotPlain
    latest[key] = (value, base_offset + ((o >> 1) ^ -(o & 1)))


def plain_records(buf, p, end, count, base_offset, latest):
    """`plain_record` for a batch of `count` records: stored only once all of them parsed and filled the batch."""
    at = 0
    staged = {}
    for _ in range(count):
        PLAIN_RECORD
        staged[key] = (value, base_offset + ((o >> 1) ^ -(o & 1)))
    if p != end:
        raise NotPlain
    latest.update(staged)
'''

_MACRO = re.compile(r"^( *)(VARINT|BYTES|RECORD|PLAIN_RECORD|KEY|HEADERS)(?:\((\w+)\))?$", re.MULTILINE)


def _expand(template: str, kind: str = "full") -> str:
    """Every macro line replaced by its text, at its indentation: `VARINT(name)` by `_VARINT` (by `_SKIP` for a plain
    record's timestamp `t`), `BYTES(name)` by `_BYTES`, `RECORD` and `PLAIN_RECORD` by `_RECORD` of that kind, and
    its `KEY` and `HEADERS` as `_KINDS` says."""
    def replace(m: re.Match[str]) -> str:
        indent, macro, name = m.groups()
        if macro == "VARINT":
            text = _SKIP if (kind, name) == ("plain", "t") else _VARINT.replace("NAME", name)
        elif macro == "BYTES":
            text = _expand(_BYTES.replace("NAME", name), kind)
        elif macro in ("RECORD", "PLAIN_RECORD"):
            text = _expand(_RECORD, "plain" if macro == "PLAIN_RECORD" else "full")
        else:
            text = _expand(_KINDS[kind][macro], kind)
        return "".join(indent + line if line.strip() else line for line in text.splitlines(keepends=True)).rstrip("\n")
    return _MACRO.sub(replace, template)


def loop_sources() -> str:
    """The loops as compiled (for reading, and for the test that no macro is left)."""
    return _expand(_LOOPS)


RecordBuilder = unchecked_builder(Record)
_namespace: dict[str, Any] = {"read_uvarint": read_uvarint, "decode_headers": decode_headers, "Malformed": Malformed,
                              "NotPlain": NotPlain, "RecordBuilder": RecordBuilder, "Record": Record}
exec(compile(loop_sources(), "<kcoord.impl.storage._record_loops>", "exec"), _namespace)
parse_records: Callable[[bytes, int, int, int, int, int, int | None, int], list[Record]] = _namespace["parse_records"]
plain_record: Callable[[bytes, int, int, int, dict[bytes, tuple[bytes | None, int]]], None] = _namespace["plain_record"]
plain_records: Callable[[bytes, int, int, int, int, dict[bytes, tuple[bytes | None, int]]], None] = \
    _namespace["plain_records"]
