"""Kafka's length-prefixed framing: a signed big-endian int32 size, then exactly that many bytes.

Owns: reading one frame from an asyncio stream with a size limit, writing the prefix, and an incremental
(sans-IO) splitter for byte streams. Knows nothing of headers or APIs.
Must not import: `kcoord.model`, the codec or the dispatcher.

Kafka's `NetworkReceive` rejects a negative size and a size above `socket.request.max.bytes` (default 100 MiB) by
closing the connection; a size of zero is a valid frame that then fails to parse as a request.
"""

from __future__ import annotations

import asyncio
import struct
from typing import Final

from .errors import FrameTooLarge, FrameTruncated, InvalidFrameLength

__all__ = (
    "DEFAULT_MAX_FRAME_BYTES",
    "SIZE_PREFIX_BYTES",
    "FrameSplitter",
    "check_frame_size",
    "encode_frame",
    "read_frame",
)

SIZE_PREFIX_BYTES: Final = 4
DEFAULT_MAX_FRAME_BYTES: Final = 104_857_600  # Kafka's socket.request.max.bytes default
_SIZE: Final = struct.Struct(">i")


def encode_frame(payload: bytes) -> bytes:
    """Prefix `payload` with its size."""
    return _SIZE.pack(len(payload)) + payload


def check_frame_size(size_bytes: int, max_frame_bytes: int) -> None:
    """Raise if a declared frame size must close the connection."""
    if size_bytes < 0:
        raise InvalidFrameLength(f"frame size prefix is {size_bytes}, expected 0..{max_frame_bytes}")
    if size_bytes > max_frame_bytes:
        raise FrameTooLarge(
            f"frame size prefix is {size_bytes} bytes, above the limit of {max_frame_bytes} (max_frame_bytes)"
        )


async def read_frame(reader: asyncio.StreamReader, max_frame_bytes: int) -> bytes | None:
    """Read one frame's payload; None on a clean end of stream between frames.

    Raises `FrameTruncated` when the stream ends inside a frame, `InvalidFrameLength`/`FrameTooLarge` on a bad
    prefix (before reading, so an oversize claim never allocates).
    """
    try:
        prefix = await reader.readexactly(SIZE_PREFIX_BYTES)
    except asyncio.IncompleteReadError as e:
        if not e.partial:
            return None
        raise FrameTruncated(f"stream ended after {len(e.partial)} of 4 size-prefix bytes") from None
    (size_bytes,) = _SIZE.unpack(prefix)
    check_frame_size(size_bytes, max_frame_bytes)
    try:
        return await reader.readexactly(size_bytes)
    except asyncio.IncompleteReadError as e:
        raise FrameTruncated(f"stream ended after {len(e.partial)} of {size_bytes} frame bytes") from None


class FrameSplitter:
    """Incremental splitter: feed bytes as they arrive, get back every complete frame's payload.

    Used by test clients and tools that read a stream of responses; the server itself uses `read_frame`.
    """

    __slots__ = ("_buffer", "_max_frame_bytes")

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self._buffer = bytearray()
        self._max_frame_bytes = max_frame_bytes

    def feed(self, data: bytes) -> list[bytes]:
        self._buffer += data
        frames: list[bytes] = []
        while len(self._buffer) >= SIZE_PREFIX_BYTES:
            (size_bytes,) = _SIZE.unpack_from(self._buffer, 0)
            check_frame_size(size_bytes, self._max_frame_bytes)
            end = SIZE_PREFIX_BYTES + size_bytes
            if len(self._buffer) < end:
                break
            frames.append(bytes(self._buffer[SIZE_PREFIX_BYTES:end]))
            del self._buffer[:end]
        return frames

    @property
    def pending_bytes(self) -> int:
        return len(self._buffer)
