"""A bounds pre-check of a request body: no array may claim more elements than there are bytes left.

Why: kio's native reader allocates an array's storage from the length the peer claims before reading a single
element. A 9-byte request whose compact array claims 4,294,967,294 elements makes it ask for 34 GB, which the Rust
allocator cannot satisfy — and a failed allocation aborts the whole process (found by `kcoord conformance`'s
bad-input scenario against `kcoord serve`). Every element takes at least one byte, so `length <= remaining bytes`
is a sound bound, and after this walk accepts a body, kio never allocates more than 8 bytes per body byte.

Owns: `check_body(schema, frame, offset)`, a walk of the body driven by kio's schema (field order, `kafka_type`,
flexible encodings, tagged fields) that reads only lengths and skips content. It raises `LengthError` on the first
impossible length or overrun; it does not otherwise judge the body (kio's decoding still does that). It also returns
where an int64 millisecond duration (`timedelta_i64`: OffsetCommit v2-v4's retention time, the only one a served
request has) lies beyond what kio reads into a timedelta (about ±292,000 years: microseconds in an int64): Kafka
takes any int64 there, so the codec reads it as the nearest duration that can be held (see `clamp_durations`).
Schemas without any array skip the walk. The walk runs as one straight-line function per schema (`_compiled`,
generated once from the same plan), which only accepts: what it does not accept, the walk decides and says why (a
V1 transaction's bodies cost ~0.13 M instructions walked, ~0.02 M compiled). Must not import: `kcoord.model`, the
dispatcher, the connection layer.
"""

from __future__ import annotations

import dataclasses
import struct
import types
import typing
from typing import Any, Final

from .kio_build import class_cache

__all__ = ("MAX_DURATION_MS", "LengthError", "check_body", "clamp_durations")

_FIXED_BYTES: Final = {"bool": 1, "int8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4, "int64": 8,
                       "uint64": 8, "float64": 8, "uuid": 16, "error_code": 2, "timedelta_i32": 4,
                       "timedelta_i64": 8, "datetime_i64": 8}
_INT16: Final = struct.Struct(">h")
_INT32: Final = struct.Struct(">i")
_INT64: Final = struct.Struct(">q")
#: the most milliseconds kio's reader turns into a timedelta (it counts microseconds in an int64)
MAX_DURATION_MS: Final = ((1 << 63) - 1) // 1000


class LengthError(ValueError):
    """A length in the body is negative (other than null), or larger than the bytes that remain."""


@dataclasses.dataclass(frozen=True, slots=True)
class _Field:
    name: str
    kafka_type: str | None  # None: a struct
    entity: type[Any] | None  # the struct type (of the field or of the array's elements)
    is_array: bool
    nullable: bool


def _is_nullable(field_type: object) -> bool:
    return isinstance(field_type, types.UnionType) and type(None) in typing.get_args(field_type)


def _describe(field: dataclasses.Field[Any]) -> _Field:
    kafka_type = field.metadata.get("kafka_type")
    entity, is_array = None, False
    for candidate in (field.type, *typing.get_args(field.type)):
        if typing.get_origin(candidate) is tuple:
            is_array = True
            element = typing.get_args(candidate)[0]
            if isinstance(element, type) and dataclasses.is_dataclass(element):
                entity = element
        elif isinstance(candidate, type) and dataclasses.is_dataclass(candidate):
            entity = candidate
    return _Field(field.name, kafka_type, entity, is_array, _is_nullable(field.type))


@class_cache
def _layout(entity_type: type[Any]) -> tuple[tuple[_Field, ...], dict[int, _Field]]:
    """(regular fields in wire order, tagged fields by tag)."""
    regular, tagged = [], {}
    for field in dataclasses.fields(entity_type):
        described = _describe(field)
        if "tag" in field.metadata:
            tagged[int(field.metadata["tag"])] = described
        else:
            regular.append(described)
    return tuple(regular), tagged


@class_cache
def _plan(entity_type: type[Any]) -> tuple[bool, tuple[tuple[int, tuple[_Field, ...], _Field | None], ...],
                                         dict[int, _Field]]:
    """(flexible, the regular fields as steps, tagged fields by tag) for `_Walk.entity`: each run of consecutive
    fixed-width fields (int64 durations apart, which are looked at) one step `(bytes, the run's fields, None)`, every
    other field a step `(0, (), field)`. A body walks the same bytes either way: the run is checked in one `need`, and
    only when it overruns are its fields walked one by one, for the same `LengthError` as field by field."""
    regular, tagged = _layout(entity_type)
    steps: list[tuple[int, tuple[_Field, ...], _Field | None]] = []
    for field in regular:
        fixed = None if field.is_array or field.entity is not None else _FIXED_BYTES.get(field.kafka_type or "")
        if fixed is None or field.kafka_type == "timedelta_i64":
            steps.append((0, (), field))
        elif steps and steps[-1][2] is None:
            size, run, _ = steps[-1]
            steps[-1] = (size + fixed, (*run, field), None)
        else:
            steps.append((fixed, (field,), None))
    return bool(getattr(entity_type, "__flexible__", False)), tuple(steps), tagged


@class_cache
def _has_array(entity_type: type[Any]) -> bool:
    regular, tagged = _layout(entity_type)
    return any(f.is_array or (f.entity is not None and _has_array(f.entity)) for f in (*regular, *tagged.values()))


def check_body(schema: type[Any], frame: bytes, offset: int) -> list[int]:
    """Raise `LengthError` if the body of `schema` at `frame[offset:]` claims an impossible length; return the
    positions of the int64 durations too long for a timedelta (usually none).

    The schema's compiled check (`_compiled`) accepts a sound body; whatever it does not accept, the walk (`_Walk`)
    decides, and says why."""
    check = _compiled(schema)
    if check is None:
        return []
    accepted = compiled_verdict(check, frame, offset)
    if accepted is not None:
        return accepted
    walk = _Walk(frame, len(frame))
    walk.entity(schema, offset)
    return walk.long_durations  # (the compiled check refused what the walk accepts: a bug; the walk decides)


def compiled_verdict(check: _Check, frame: bytes, offset: int) -> list[int] | None:
    """What `check` (a schema's `_compiled` check) says of the body at `frame[offset:]`: the positions of its long
    durations if it accepts the body, None if it does not (then the walk decides)."""
    end = len(frame)
    long_durations: list[int] = []
    try:
        if check(frame, offset, end, long_durations) <= end:
            return long_durations
    except (_Refer, LengthError, IndexError, struct.error):
        pass
    return None


def clamp_durations(frame: bytes, positions: list[int]) -> bytes:
    """`frame` with the int64 durations at `positions` replaced by the nearest one a timedelta holds."""
    out = bytearray(frame)
    for pos in positions:
        value = _INT64.unpack_from(out, pos)[0]
        _INT64.pack_into(out, pos, MAX_DURATION_MS if value > 0 else -MAX_DURATION_MS)
    return bytes(out)


class _Walk:
    __slots__ = ("buf", "end", "long_durations")

    def __init__(self, buf: bytes, end: int) -> None:
        self.buf = buf
        self.end = end
        self.long_durations: list[int] = []

    def need(self, pos: int, size: int) -> int:
        if size < 0 or pos + size > self.end:
            raise LengthError(f"{size} bytes claimed at byte {pos}, {self.end - pos} left")
        return pos + size

    def uvarint(self, pos: int) -> tuple[int, int]:
        value, shift = 0, 0
        while True:
            self.need(pos, 1)
            byte = self.buf[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value, pos
            shift += 7
            if shift > 35:
                raise LengthError(f"unsigned varint longer than 5 bytes at byte {pos}")

    def length(self, pos: int, flexible: bool, legacy: struct.Struct) -> tuple[int, int]:
        """(length, next position); -1 is null."""
        if flexible:
            raw, pos = self.uvarint(pos)
            return raw - 1, pos
        self.need(pos, legacy.size)
        return legacy.unpack_from(self.buf, pos)[0], pos + legacy.size

    def entity(self, entity_type: type[Any], pos: int) -> int:
        flexible, steps, tagged = _plan(entity_type)
        for size, run, field in steps:
            if field is not None:
                pos = self.field(field, flexible, pos)
            elif pos + size <= self.end:
                pos += size
            else:  # the run overruns: field by field, for the error of the field that does
                for fixed in run:
                    pos = self.value(fixed, flexible, pos)
        if flexible:
            pos = self.tags(tagged, pos)
        return pos

    def tags(self, tagged: dict[int, _Field], pos: int) -> int:
        count, pos = self.uvarint(pos)
        for _ in range(count):
            tag, pos = self.uvarint(pos)
            size, pos = self.uvarint(pos)
            end = self.need(pos, size)
            known = tagged.get(tag)
            if known is not None:
                inner = _Walk(self.buf, end)
                inner.field(known, True, pos)
                self.long_durations += inner.long_durations
            pos = end
        return pos

    def field(self, field: _Field, flexible: bool, pos: int) -> int:
        if not field.is_array:
            return self.value(field, flexible, pos)
        count, pos = self.length(pos, flexible, _INT32)
        if count < -1 or count > self.end - pos:
            raise LengthError(f"array {field.name} claims {count} elements with {self.end - pos} bytes left")
        for _ in range(max(count, 0)):
            pos = self.value(field, flexible, pos)
        return pos

    def value(self, field: _Field, flexible: bool, pos: int) -> int:
        if field.entity is not None:
            if field.nullable and not field.is_array:
                self.need(pos, 1)
                if self.buf[pos] == 0xFF:  # int8 -1: a null struct
                    return pos + 1
                pos += 1
            return self.entity(field.entity, pos)
        kafka_type = field.kafka_type or ""
        fixed = _FIXED_BYTES.get(kafka_type)
        if fixed is not None:
            end = self.need(pos, fixed)
            if kafka_type == "timedelta_i64" and abs(_INT64.unpack_from(self.buf, pos)[0]) > MAX_DURATION_MS:
                self.long_durations.append(pos)
            return end
        legacy = _INT16 if kafka_type == "string" else _INT32  # string: int16; bytes and records: int32
        size, pos = self.length(pos, flexible, legacy)
        if size < -1:
            raise LengthError(f"{field.name}: length {size} at byte {pos}")
        return self.need(pos, max(size, 0))


# ---------------------------------------------------------------------------------------------- the compiled check
#
# What `_Walk.entity` does for one schema, as straight-line Python generated from the same `_plan` (one function per
# entity type, exec'd once per schema): the same lengths and counts read at the same places, the same refusals of
# negative lengths and of counts larger than the bytes left. It only accepts: an overrun is noticed late (every
# position only grows, so a body that overran ends past `end`), and anything it does not accept goes to the walk,
# whose error says where. tests/impl/server/test_lengths_differential.py checks it accepts exactly what the walk does.

_Check = typing.Callable[[bytes, int, int, list[int]], int]


class _Refer(Exception):
    """The compiled check does not accept the body: the walk decides."""


def _uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    """A varint of more than one byte (the compiled check reads a one-byte one itself)."""
    return _Walk(buf, len(buf)).uvarint(pos)


def _tags(buf: bytes, pos: int, end: int, long_durations: list[int], tagged: dict[int, _Field]) -> int:
    walk = _Walk(buf, end)
    walk.long_durations = long_durations
    return walk.tags(tagged, pos)


@class_cache
def _compiled(schema: type[Any]) -> _Check | None:
    """The compiled check of `schema`'s bodies (None: no array, nothing to check)."""
    if not _has_array(schema):
        return None
    namespace: dict[str, Any] = {"_Refer": _Refer, "_uvarint": _uvarint, "_tags": _tags, "_I16": _INT16.unpack_from,
                                 "_I32": _INT32.unpack_from, "_I64": _INT64.unpack_from, "_MAX": MAX_DURATION_MS}
    names: dict[type[Any], str] = {}
    sources: list[str] = []
    first = _compile_entity(schema, names, sources, namespace)
    exec(compile("\n".join(sources), f"<length check {schema.__name__}>", "exec"), namespace)
    check: _Check = namespace[first]
    return check


def _compile_entity(entity_type: type[Any], names: dict[type[Any], str], sources: list[str],
                    namespace: dict[str, Any]) -> str:
    name = names.get(entity_type)
    if name is not None:
        return name
    name = names[entity_type] = f"_check_{len(names)}"
    flexible, steps, tagged = _plan(entity_type)
    lines = [f"def {name}(b, p, e, long):"]
    for size, _, field in steps:
        if field is None:
            lines.append(f"    p += {size}")
        else:
            lines += _compile_field(field, flexible, names, sources, namespace, "    ")
    if flexible:
        namespace[f"{name}_tagged"] = tagged
        lines += ["    if b[p]:", f"        p = _tags(b, p, e, long, {name}_tagged)", "    else:", "        p += 1"]
    lines.append("    return p")
    sources.append("\n".join(lines))
    return name


def _compile_length(flexible: bool, legacy: struct.Struct, target: str, indent: str) -> list[str]:
    """Lines reading a length into `target` as `_Walk.length` does (-1: null)."""
    if flexible:
        return [f"{indent}{target} = b[p]", f"{indent}if {target} < 0x80:", f"{indent}    p += 1",
                f"{indent}else:", f"{indent}    {target}, p = _uvarint(b, p)", f"{indent}{target} -= 1"]
    return [f"{indent}{target} = _I{legacy.size * 8}(b, p)[0]", f"{indent}p += {legacy.size}"]


def _compile_field(field: _Field, flexible: bool, names: dict[type[Any], str], sources: list[str],
                   namespace: dict[str, Any], indent: str) -> list[str]:
    if not field.is_array:
        return _compile_value(field, flexible, names, sources, namespace, indent)
    lines = _compile_length(flexible, _INT32, "c", indent)
    lines += [f"{indent}if c < -1 or c > e - p:", f"{indent}    raise _Refer"]
    fixed = None if field.entity is not None else _FIXED_BYTES.get(field.kafka_type or "")
    if fixed is not None and field.kafka_type != "timedelta_i64":
        return [*lines, f"{indent}if c > 0:", f"{indent}    p += c * {fixed}"]
    return [*lines, f"{indent}for _ in range(c):",
            *_compile_value(field, flexible, names, sources, namespace, indent + "    ")]


def _compile_value(field: _Field, flexible: bool, names: dict[type[Any], str], sources: list[str],
                   namespace: dict[str, Any], indent: str) -> list[str]:
    if field.entity is not None:
        nested = _compile_entity(field.entity, names, sources, namespace)
        if field.nullable and not field.is_array:
            return [f"{indent}if b[p] == 0xFF:", f"{indent}    p += 1", f"{indent}else:",
                    f"{indent}    p = {nested}(b, p + 1, e, long)"]
        return [f"{indent}p = {nested}(b, p, e, long)"]
    kafka_type = field.kafka_type or ""
    fixed = _FIXED_BYTES.get(kafka_type)
    if kafka_type == "timedelta_i64":
        return [f"{indent}if p + 8 > e:", f"{indent}    raise _Refer", f"{indent}if abs(_I64(b, p)[0]) > _MAX:",
                f"{indent}    long.append(p)", f"{indent}p += 8"]
    if fixed is not None:
        return [f"{indent}p += {fixed}"]
    lines = _compile_length(flexible, _INT16 if kafka_type == "string" else _INT32, "n", indent)
    return [*lines, f"{indent}if n < -1:", f"{indent}    raise _Refer", f"{indent}if n > 0:", f"{indent}    p += n"]
