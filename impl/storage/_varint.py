"""Variable-length integers shared by the record format and the coordinator-record schemas.

Kafka uses two encodings: unsigned varints (LEB128, 7 bits per byte, low group first) for compact lengths and
tagged fields in flexible messages, and zigzag-signed varints/varlongs inside v2 records. Both live here so the
batch codec and the schema codec agree byte for byte. Must not import ``kcoord.model``.
"""

from __future__ import annotations

__all__ = [
    "VarintError",
    "read_uvarint",
    "read_zigzag",
    "uvarint",
    "zigzag",
    "zigzag_varint",
]

_MAX_VARINT_BYTES = 10  # enough for a 64-bit value (Kafka's varlong); varints use at most 5


class VarintError(ValueError):
    """A varint ran past the end of the buffer or used more than 10 bytes."""


def uvarint(value: int) -> bytes:
    """Unsigned LEB128 encoding of a non-negative ``value``."""
    if value < 0:
        raise ValueError(f"unsigned varint must be >= 0, got {value}")
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def zigzag(value: int) -> int:
    """Map a signed int64 to an unsigned one so that small magnitudes stay small (0,-1,1,-2 → 0,1,2,3)."""
    return (value << 1) ^ (value >> 63)


def zigzag_varint(value: int) -> bytes:
    """Kafka's ``ByteUtils.writeVarint``/``writeVarlong``: zigzag then unsigned LEB128."""
    return uvarint(zigzag(value))


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    """Read an unsigned varint at ``pos``; return ``(value, position after it)``.

    Raises ``VarintError`` when the buffer ends inside the varint or it is longer than 10 bytes.
    """
    value = 0
    shift = 0
    end = len(buf)
    for i in range(_MAX_VARINT_BYTES):
        if pos + i >= end:
            raise VarintError(f"varint at position {pos} runs past the end of the buffer ({end} bytes)")
        b = buf[pos + i]
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos + i + 1
        shift += 7
    raise VarintError(f"varint at position {pos} is longer than {_MAX_VARINT_BYTES} bytes")


def read_zigzag(buf: bytes, pos: int) -> tuple[int, int]:
    """Read a zigzag-signed varint/varlong at ``pos``; return ``(value, position after it)``."""
    raw, pos = read_uvarint(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos
