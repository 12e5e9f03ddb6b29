"""The one codec for Kafka's generated-message encoding, used by both coordinator-record schema modules.

Covers what ``__transaction_state`` and ``__consumer_offsets`` records use: fixed-width integers, uuids, strings and
bytes and arrays in their classic (int16/int32 length) and compact (unsigned varint length + 1) forms, and the
tagged-field section that ends every struct in a flexible version. Readers raise ``SchemaError`` naming the field;
they never guess. Must not import ``kcoord.model``.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Sequence
from typing import TypeVar

from ._varint import VarintError, read_uvarint, uvarint

__all__ = ["Reader", "SchemaError", "Writer"]

T = TypeVar("T")

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class SchemaError(ValueError):
    """Bytes that do not decode as the expected record, or a value that cannot be encoded at a version."""


class Writer:
    """Appends encoded fields; ``flexible`` selects compact lengths (KIP-482) over classic ones."""

    __slots__ = ("_parts", "flexible")

    def __init__(self, *, flexible: bool) -> None:
        self._parts: list[bytes] = []
        self.flexible = flexible

    def getvalue(self) -> bytes:
        return b"".join(self._parts)

    def raw(self, data: bytes) -> None:
        self._parts.append(data)

    def int8(self, value: int) -> None:
        self._pack(_I8, value, "int8")

    def int16(self, value: int) -> None:
        self._pack(_I16, value, "int16")

    def int32(self, value: int) -> None:
        self._pack(_I32, value, "int32")

    def int64(self, value: int) -> None:
        self._pack(_I64, value, "int64")

    def _pack(self, fmt: struct.Struct, value: int, type_name: str) -> None:
        try:
            self._parts.append(fmt.pack(value))
        except struct.error as e:
            raise SchemaError(f"{value} does not fit {type_name}") from e

    def uuid(self, value: uuid.UUID) -> None:
        self._parts.append(value.bytes)

    def string(self, value: str | None, *, nullable: bool = False) -> None:
        if value is None and not nullable:
            raise SchemaError("non-nullable string field is None")
        self._length_prefixed(None if value is None else value.encode("utf-8"), classic_width=_I16)

    def bytes_(self, value: bytes | None, *, nullable: bool = False) -> None:
        if value is None and not nullable:
            raise SchemaError("non-nullable bytes field is None")
        self._length_prefixed(value, classic_width=_I32)

    def _length_prefixed(self, data: bytes | None, *, classic_width: struct.Struct) -> None:
        if self.flexible:
            self._parts.append(uvarint(0 if data is None else len(data) + 1))
        else:
            self._pack(classic_width, -1 if data is None else len(data), "length")
        if data:
            self._parts.append(data)

    def array(self, items: Sequence[T] | None, write_item: Callable[[T], None], *, nullable: bool = False) -> None:
        if items is None and not nullable:
            raise SchemaError("non-nullable array field is None")
        if self.flexible:
            self._parts.append(uvarint(0 if items is None else len(items) + 1))
        else:
            self._pack(_I32, -1 if items is None else len(items), "array length")
        for item in items or ():
            write_item(item)

    def tagged_fields(self, fields: Sequence[tuple[int, bytes]]) -> None:
        """The tagged-field section of a flexible struct: ``fields`` are (tag, encoded value), in tag order."""
        assert self.flexible, "tagged fields exist only in flexible versions"
        tags = [tag for tag, _ in fields]
        assert tags == sorted(set(tags)), f"tags must be unique and ascending: {tags}"
        self._parts.append(uvarint(len(fields)))
        for tag, data in fields:
            self._parts.append(uvarint(tag))
            self._parts.append(uvarint(len(data)))
            self._parts.append(data)


class Reader:
    """Reads fields in order from ``buf``; ``what`` names the record in error messages."""

    __slots__ = ("_buf", "_pos", "flexible", "what")

    def __init__(self, buf: bytes, *, flexible: bool, what: str, pos: int = 0) -> None:
        self._buf = buf
        self._pos = pos
        self.flexible = flexible
        self.what = what

    @property
    def remaining(self) -> int:
        return len(self._buf) - self._pos

    def _take(self, n: int, field: str) -> bytes:
        end = self._pos + n
        if n < 0 or end > len(self._buf):
            raise SchemaError(f"{self.what}: field {field!r} needs {n} bytes at position {self._pos}, "
                              f"only {len(self._buf) - self._pos} remain")
        data = self._buf[self._pos:end]
        self._pos = end
        return data

    def _unpack(self, fmt: struct.Struct, field: str) -> int:
        if self._pos + fmt.size > len(self._buf):
            raise SchemaError(f"{self.what}: buffer ends inside field {field!r} at position {self._pos}")
        (value,) = fmt.unpack_from(self._buf, self._pos)
        self._pos += fmt.size
        return int(value)

    def int8(self, field: str) -> int:
        return self._unpack(_I8, field)

    def int16(self, field: str) -> int:
        return self._unpack(_I16, field)

    def int32(self, field: str) -> int:
        return self._unpack(_I32, field)

    def int64(self, field: str) -> int:
        return self._unpack(_I64, field)

    def uvarint(self, field: str) -> int:
        try:
            value, self._pos = read_uvarint(self._buf, self._pos)
        except VarintError as e:
            raise SchemaError(f"{self.what}: field {field!r}: {e}") from e
        return value

    def uuid(self, field: str) -> uuid.UUID:
        return uuid.UUID(bytes=self._take(16, field))

    def _length(self, field: str, classic: struct.Struct) -> int:
        """Length of a string/bytes/array, -1 for null."""
        if self.flexible:
            return self.uvarint(field) - 1
        return self._unpack(classic, field)

    def string(self, field: str) -> str:
        value = self.nullable_string(field)
        if value is None:
            raise SchemaError(f"{self.what}: non-nullable field {field!r} was serialized as null")
        return value

    def nullable_string(self, field: str) -> str | None:
        n = self._length(field, _I16)
        if n < -1:
            raise SchemaError(f"{self.what}: field {field!r} has invalid length {n}")
        if n == -1:
            return None
        try:
            return self._take(n, field).decode("utf-8")
        except UnicodeDecodeError as e:
            raise SchemaError(f"{self.what}: field {field!r} is not valid UTF-8: {e}") from e

    def bytes_(self, field: str) -> bytes:
        value = self.nullable_bytes(field)
        if value is None:
            raise SchemaError(f"{self.what}: non-nullable field {field!r} was serialized as null")
        return value

    def nullable_bytes(self, field: str) -> bytes | None:
        n = self._length(field, _I32)
        if n < -1:
            raise SchemaError(f"{self.what}: field {field!r} has invalid length {n}")
        return None if n == -1 else self._take(n, field)

    def array(self, field: str, read_item: Callable[[], T]) -> tuple[T, ...]:
        items = self.nullable_array(field, read_item)
        if items is None:
            raise SchemaError(f"{self.what}: non-nullable field {field!r} was serialized as null")
        return items

    def nullable_array(self, field: str, read_item: Callable[[], T]) -> tuple[T, ...] | None:
        n = self._length(field, _I32)
        if n < -1 or n > self.remaining:  # every element takes at least one byte
            raise SchemaError(f"{self.what}: field {field!r} has invalid element count {n}")
        if n == -1:
            return None
        return tuple(read_item() for _ in range(n))

    def tagged_fields(self) -> dict[int, bytes]:
        """The tagged-field section: {tag: raw bytes}. Unknown tags are returned too; callers ignore them."""
        fields: dict[int, bytes] = {}
        previous = -1
        for _ in range(self.uvarint("tagged field count")):
            tag = self.uvarint("tag")
            if tag <= previous:
                raise SchemaError(f"{self.what}: tagged fields out of order ({tag} after {previous})")
            previous = tag
            fields[tag] = self._take(self.uvarint("tagged field size"), f"tag {tag}")
        return fields

    def sub_reader(self, data: bytes, what: str) -> Reader:
        """A reader over a tagged field's bytes (same flexibility)."""
        return Reader(data, flexible=self.flexible, what=f"{self.what}.{what}")

    def expect_end(self) -> None:
        if self._pos != len(self._buf):
            raise SchemaError(f"{self.what}: {len(self._buf) - self._pos} unexpected trailing bytes")
