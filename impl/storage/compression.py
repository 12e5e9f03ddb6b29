"""Decompressing the records of a compressed v2 batch: Kafka's gzip, snappy, lz4 and zstd codecs.

Owns `decompress(codec, payload)`: the records section of a batch whose attributes name a codec (bits 0-2), as the
producer wrote it, turned back into plain record bytes. kcoord never compresses: a compressed batch is stored and
fetched with the producer's bytes, as Kafka does for a topic with `compression.type=producer` (its default), so
only reading is needed (to validate a produced batch and to rebuild producer state from the log).

The codecs, restated from Kafka's `CompressionType` and the clients' writers: gzip is one gzip stream
(`GZIPOutputStream`); snappy is either the xerial framing that the Java client writes (an 8-byte magic
`\\x82SNAPPY\\x00`, two int32s of version, then blocks of an int32 length and a raw snappy block) or one raw snappy
block, which librdkafka and the Python clients may write and the Java reader accepts too; lz4 is the LZ4 frame
format; zstd is a zstd frame. `cramjam` (one wheel with all four, Rust) does the work.

A batch may not expand beyond `MAX_DECOMPRESSED_BYTES`: a few kilobytes of zstd can claim gigabytes, and the
server must refuse such a batch rather than allocate it. Decompression goes into buffers that grow to that bound.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

from typing import Final

import cramjam

from ._varint import VarintError, read_uvarint

__all__ = ("CODEC_NAMES", "MAX_DECOMPRESSED_BYTES", "DecompressionError", "decompress")

#: codec id (attributes bits 0-2) -> Kafka's name for it
CODEC_NAMES: Final = {1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
#: the most bytes one batch's records may decompress to (64 MiB: 64 times Kafka's default message.max.bytes)
MAX_DECOMPRESSED_BYTES: Final = 64 << 20

_XERIAL_MAGIC: Final = b"\x82SNAPPY\x00"
_XERIAL_HEADER: Final = len(_XERIAL_MAGIC) + 8  # magic, version, compatible version
_FIRST_GUESS: Final = 8  # times the compressed size, for the first output buffer
_STREAMING: Final = {1: cramjam.gzip, 3: cramjam.lz4, 4: cramjam.zstd}


class DecompressionError(ValueError):
    """The payload does not decompress with its codec, or would expand beyond `MAX_DECOMPRESSED_BYTES`."""


def decompress(codec: int, payload: bytes, limit: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """The plain records of a batch compressed with `codec` (1-4; the caller rejects others)."""
    if codec == 2:
        return _snappy(payload, limit)
    module = _STREAMING[codec]
    size = min(limit, max(len(payload) * _FIRST_GUESS, 1 << 16))
    while True:
        out = bytearray(size)
        try:
            written = module.decompress_into(payload, out)
        except cramjam.DecompressionError as e:
            # cramjam says the same for a buffer too small and for bad data: grow until the bound, then give up
            if size >= limit:
                raise DecompressionError(f"{CODEC_NAMES[codec]} data that does not decompress within {limit} "
                                         f"bytes: {e}") from None
            size = min(limit, size * 4)
            continue
        return bytes(memoryview(out)[:written])


def _snappy(payload: bytes, limit: int) -> bytes:
    if not payload.startswith(_XERIAL_MAGIC):
        return _snappy_block(payload, 0, len(payload), limit)
    parts: list[bytes] = []
    pos, total = _XERIAL_HEADER, 0
    while pos < len(payload):
        if pos + 4 > len(payload):
            raise DecompressionError(f"snappy (xerial framing) cut off in a block length at byte {pos}")
        length = int.from_bytes(payload[pos:pos + 4], "big", signed=True)
        pos += 4
        if length < 0 or pos + length > len(payload):
            raise DecompressionError(f"snappy (xerial framing) block of {length} bytes at byte {pos - 4} does not "
                                     f"fit the {len(payload)}-byte payload")
        block = _snappy_block(payload, pos, pos + length, limit - total)
        parts.append(block)
        total += len(block)
        pos += length
    return b"".join(parts)


def _snappy_block(payload: bytes, start: int, end: int, limit: int) -> bytes:
    """One raw snappy block, whose varint prefix states its decompressed size: checked against `limit` first."""
    try:
        size, _ = read_uvarint(payload, start)
    except (VarintError, IndexError):
        raise DecompressionError(f"snappy block at byte {start} has no valid length prefix") from None
    if size > limit:
        raise DecompressionError(f"snappy block at byte {start} claims {size} bytes, more than the {limit} left")
    out = bytearray(size)
    try:
        written = cramjam.snappy.decompress_raw_into(payload[start:end], out)
    except cramjam.DecompressionError as e:
        raise DecompressionError(f"snappy block at byte {start}: {e}") from None
    if written != size:
        raise DecompressionError(f"snappy block at byte {start} gave {written} bytes, its prefix says {size}")
    return bytes(out)
