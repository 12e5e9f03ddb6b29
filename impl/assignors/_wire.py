"""Kafka's classic (non-flexible) wire primitives, for the small user-data schemas the sticky assignors define.

Big-endian int16/int32, strings as int16 length + UTF-8, arrays as int32 count + items. Reading past the end
raises :class:`WireError`; trailing bytes are left alone, as Java's ``Schema.read`` leaves them.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class WireError(ValueError):
    """Malformed or truncated bytes."""


class Reader:
    __slots__ = ("_data", "_pos")

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def _take(self, n: int) -> bytes:
        end = self._pos + n
        if n < 0 or end > len(self._data):
            raise WireError(f"need {n} bytes at offset {self._pos}, have {len(self._data) - self._pos}")
        chunk = self._data[self._pos : end]
        self._pos = end
        return chunk

    def int16(self) -> int:
        value: int = _I16.unpack(self._take(2))[0]
        return value

    def int32(self) -> int:
        value: int = _I32.unpack(self._take(4))[0]
        return value

    def string(self) -> str:
        length = self.int16()
        if length < 0:
            raise WireError(f"string length {length} is negative")
        # Java's new String(bytes, UTF_8) substitutes U+FFFD for malformed input instead of failing.
        return self._take(length).decode("utf-8", errors="replace")

    def array(self, item: Callable[[Reader], T]) -> list[T]:
        count = self.int32()
        if count < 0:
            raise WireError(f"array size {count} cannot be negative")
        if count > len(self._data) - self._pos:
            raise WireError(f"array size {count} exceeds the {len(self._data) - self._pos} bytes left")
        return [item(self) for _ in range(count)]


def int16(value: int) -> bytes:
    return _I16.pack(value)


def int32(value: int) -> bytes:
    return _I32.pack(value)


def string(value: str) -> bytes:
    raw = value.encode("utf-8")
    return _I16.pack(len(raw)) + raw
