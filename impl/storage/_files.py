"""File-level helpers of the storage layer: segment names, durable renames, and streaming batch scans.

``FileScan`` reads a segment in bounded chunks (so a 100 MiB segment never sits in memory whole) and stitches
batches that straddle a chunk boundary. Must not import ``kcoord.model``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final

from .batch import BatchDecoder, BatchSpan, DecodeStop, LastValues, RecordBatch, StopReason

__all__ = [
    "DEFAULT_CHUNK_BYTES",
    "FileScan",
    "atomic_write",
    "fsync_dir",
    "fsync_file",
    "parse_segment_name",
    "segment_name",
]

DEFAULT_CHUNK_BYTES: Final = 4 << 20
_SEGMENT_SUFFIX: Final = ".log"
_OFFSET_DIGITS: Final = 20


def segment_name(base_offset: int) -> str:
    """Kafka's segment file name: the base offset zero-padded to 20 digits, ``.log``."""
    return f"{base_offset:0{_OFFSET_DIGITS}d}{_SEGMENT_SUFFIX}"


def parse_segment_name(name: str) -> int | None:
    """The base offset of a segment file name, or None for any other file (indexes, snapshots, temp files)."""
    stem, dot, suffix = name.partition(".")
    if dot and "." + suffix == _SEGMENT_SUFFIX and len(stem) == _OFFSET_DIGITS and stem.isdigit():
        return int(stem)
    return None


def fsync_dir(path: Path) -> None:
    """Make a directory's entries (created, renamed, deleted files) durable."""
    _fsync(path, os.O_RDONLY | os.O_DIRECTORY)


def fsync_file(path: Path) -> None:
    """Make a closed file's content durable."""
    _fsync(path, os.O_RDONLY)


def _fsync(path: Path, flags: int) -> None:
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes, *, tmp_suffix: str = ".tmp") -> None:
    """Replace ``path`` with ``data`` so that a crash leaves either the old or the new content, durably.

    Write ``path`` + ``tmp_suffix``, fsync it, rename it over ``path``, fsync the directory. A leftover temp file
    means the crash happened before the rename: the original is intact and the temp file can be deleted.
    """
    tmp = path.with_name(path.name + tmp_suffix)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


class FileScan:
    """Streams the batches of ``path[start:end]`` in chunks; afterwards ``stop`` says where and why it ended.

    ``end`` defaults to the file size when the scan starts, so appends made while iterating are not seen. A batch
    that straddles a chunk boundary is carried into the next chunk; one larger than a chunk grows the read.
    """

    __slots__ = ("_chunk_bytes", "_end", "_path", "_start", "_stop")

    def __init__(self, path: Path, *, start: int = 0, end: int | None = None,
                 chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> None:
        self._path = path
        self._start = start
        self._end = end
        self._chunk_bytes = chunk_bytes
        self._stop: DecodeStop | None = None

    @property
    def stop(self) -> DecodeStop:
        if self._stop is None:
            raise RuntimeError("FileScan.stop is only known after iteration has finished")
        return self._stop

    def spans(self) -> Iterator[BatchSpan]:
        """Framing/CRC-validated batch locations, without parsing records."""
        for decoder in self._decoders():
            yield from decoder.spans()

    def located(self) -> Iterator[tuple[int, int, RecordBatch]]:
        """``(position, size, batch)`` for every whole valid batch."""
        for decoder in self._decoders():
            yield from decoder.located()

    def last_values(self, into: LastValues, index: Callable[[int, int], None], index_interval_bytes: int
                    ) -> Iterator[tuple[int, int, RecordBatch]]:
        """``BatchDecoder.last_values`` over the whole file: plain batches into ``into``, the others yielded."""
        for decoder in self._decoders():
            yield from decoder.last_values(into, index, index_interval_bytes)

    def __iter__(self) -> Iterator[RecordBatch]:
        for _position, _size, batch in self.located():
            yield batch

    def _decoders(self) -> Iterator[BatchDecoder]:
        """One decoder per chunk (plus the batch carried over from the previous chunk); the caller drains each."""
        with open(self._path, "rb") as f:
            end = os.fstat(f.fileno()).st_size if self._end is None else self._end
            f.seek(self._start)
            read_pos = self._start
            carry = b""
            while True:
                want = min(max(self._chunk_bytes, 2 * len(carry)), end - read_pos)
                data = f.read(want) if want > 0 else b""
                read_pos += len(data)
                buf = carry + data if carry else data
                buf_base = read_pos - len(buf)
                decoder = BatchDecoder(buf, buf_base)
                yield decoder
                stop = decoder.stop
                if stop.reason is StopReason.CORRUPT or read_pos >= end or not data:
                    self._stop = stop
                    return
                carry = buf[stop.position - buf_base:]  # empty after END, the torn batch's prefix after TORN
