"""Compressed batches (gzip, snappy raw and xerial-framed, lz4, zstd): decoded to their records, encoded back with
the producer's compressed bytes, bad payloads and decompression bombs refused."""

from __future__ import annotations

import dataclasses
import struct

import cramjam
import pytest

from kcoord.impl.storage.batch import (
    BATCH_OVERHEAD,
    Record,
    RecordBatch,
    StopReason,
    encode_batch,
)
from kcoord.impl.storage.batch_decoder import decode_batch, decode_batches
from kcoord.impl.storage.compression import MAX_DECOMPRESSED_BYTES, DecompressionError, decompress

RECORDS = [Record(i, 1_700_000_000_000 + i, f"k{i}".encode(), b"value-%d" % i * 20, (("h", b"x"),))
           for i in range(40)]
PLAIN = RecordBatch.of(RECORDS, producer_id=5, producer_epoch=2, base_sequence=0)


def _xerial(raw: bytes, block: int = 700) -> bytes:
    """The snappy framing the Java client writes: magic, version 1, compatible 1, then length-prefixed blocks."""
    out = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    for i in range(0, len(raw), block):
        piece = bytes(cramjam.snappy.compress_raw(raw[i:i + block]))
        out += struct.pack(">i", len(piece)) + piece
    return out


COMPRESSORS = {
    "gzip": (1, lambda raw: bytes(cramjam.gzip.compress(raw))),
    "snappy (raw)": (2, lambda raw: bytes(cramjam.snappy.compress_raw(raw))),
    "snappy (xerial)": (2, _xerial),
    "lz4": (3, lambda raw: bytes(cramjam.lz4.compress(raw))),
    "zstd": (4, lambda raw: bytes(cramjam.zstd.compress(raw))),
}


def compressed(batch: RecordBatch, codec: int, compress: object) -> bytes:
    """`batch` as a producer compressing with `codec` writes it: the plain records section, compressed."""
    plain = encode_batch(batch)
    payload = compress(plain[BATCH_OVERHEAD:])  # type: ignore[operator]
    return encode_batch(dataclasses.replace(batch, compression=codec, compressed_records=payload))


@pytest.mark.parametrize("name", sorted(COMPRESSORS))
def test_a_compressed_batch_decodes_to_its_records_and_encodes_back_unchanged(name: str) -> None:
    codec, compress = COMPRESSORS[name]
    data = compressed(PLAIN, codec, compress)
    assert len(data) < len(encode_batch(PLAIN)) // 3  # really compressed
    batch = decode_batch(data)
    assert batch.records == PLAIN.records and batch.compression == codec
    assert (batch.producer_id, batch.base_sequence, batch.last_offset_delta) == (5, 0, 39)
    assert batch.compressed_records == data[BATCH_OVERHEAD:]
    assert encode_batch(batch) == data
    moved = encode_batch(dataclasses.replace(batch, base_offset=1000, partition_leader_epoch=7))
    assert moved[BATCH_OVERHEAD:] == data[BATCH_OVERHEAD:], "the compressed records are kept, not recompressed"
    assert [r.offset for r in decode_batch(moved).records] == list(range(1000, 1040))


@pytest.mark.parametrize("name", sorted(COMPRESSORS))
def test_a_damaged_compressed_payload_stops_the_decoder_as_corrupt(name: str) -> None:
    codec, compress = COMPRESSORS[name]
    good = decode_batch(compressed(PLAIN, codec, compress))
    assert good.compressed_records is not None
    cut = good.compressed_records[: len(good.compressed_records) // 2]
    decoder = decode_batches(encode_batch(dataclasses.replace(good, compressed_records=cut)))
    assert list(decoder) == []
    assert decoder.stop.reason is StopReason.CORRUPT and "compressed batch" in decoder.stop.detail


def test_records_that_do_not_parse_after_decompression_are_corrupt() -> None:
    batch = dataclasses.replace(PLAIN, compression=4, compressed_records=bytes(cramjam.zstd.compress(b"\x07junk")))
    decoder = decode_batches(encode_batch(batch))
    assert list(decoder) == [] and decoder.stop.reason is StopReason.CORRUPT
    assert "zstd records do not parse" in decoder.stop.detail


@pytest.mark.parametrize("codec", [1, 3, 4])
def test_a_decompression_bomb_is_refused_at_the_bound(codec: int) -> None:
    module = {1: cramjam.gzip, 3: cramjam.lz4, 4: cramjam.zstd}[codec]
    bomb = bytes(module.compress(bytes(1 << 20)))
    assert len(bomb) < 1 << 14
    with pytest.raises(DecompressionError, match="within 65536 bytes"):
        decompress(codec, bomb, limit=1 << 16)
    assert decompress(codec, bomb, limit=1 << 21) == bytes(1 << 20)


def test_a_snappy_block_claiming_more_than_the_bound_is_refused_before_allocating() -> None:
    claim = bytes([0x80, 0x80, 0x80, 0x80, 0x0F])  # the size it states: a varint of 15 << 28 (3.75 GiB)
    with pytest.raises(DecompressionError, match=f"more than the {MAX_DECOMPRESSED_BYTES} left"):
        decompress(2, claim + b"\x00" * 10)
    framed = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + struct.pack(">i", 50)
    with pytest.raises(DecompressionError, match="does not fit"):
        decompress(2, framed + b"\x00" * 10)
