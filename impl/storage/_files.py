"""File-level helpers of the storage layer: segment names, durable renames, fsyncs put off to one point
(``SyncLater``), and streaming batch scans.

``FileScan`` reads a segment in bounded chunks (so a 100 MiB segment never sits in memory whole) and stitches
batches that straddle a chunk boundary. Must not import ``kcoord.model``.
"""

from __future__ import annotations

import ctypes
import functools
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final

from .batch import BatchSpan, DecodeStop, LastValues, RecordBatch, StopReason
from .batch_decoder import BatchDecoder

__all__ = [
    "DEFAULT_CHUNK_BYTES",
    "DamagedFileError",
    "FileScan",
    "SyncLater",
    "WriteNotDone",
    "atomic_write",
    "fsync_dir",
    "fsync_file",
    "parse_segment_name",
    "quoted_content",
    "segment_name",
]

DEFAULT_CHUNK_BYTES: Final = 4 << 20
_SEGMENT_SUFFIX: Final = ".log"
_OFFSET_DIGITS: Final = 20


class DamagedFileError(Exception):
    """A small metadata file (an epoch, a checkpoint, a topic id) that does not hold what it must. The message is one
    line: the file, what is wrong, and what the operator may do."""

    def __init__(self, path: Path, problem: str, remedy: str) -> None:
        super().__init__(f"{path}: {problem}; {remedy}")
        self.path = path


def quoted_content(data: bytes) -> str:
    """A file's content for a one-line message: its first 40 bytes as a bytes literal shows them, or 'empty'."""
    if not data:
        return "empty"
    return repr(data[:40])[1:] + ("..." if len(data) > 40 else "")


def segment_name(base_offset: int) -> str:
    """Kafka's segment file name: the base offset zero-padded to 20 digits, ``.log``."""
    return f"{base_offset:0{_OFFSET_DIGITS}d}{_SEGMENT_SUFFIX}"


def parse_segment_name(name: str) -> int | None:
    """The base offset of a segment file name, or None for any other file (indexes, snapshots, temp files)."""
    stem, dot, suffix = name.partition(".")
    if dot and "." + suffix == _SEGMENT_SUFFIX and len(stem) == _OFFSET_DIGITS and stem.isdigit():
        return int(stem)
    return None


def fsync_dir(path: Path, later: SyncLater | None = None) -> None:
    """Make a directory's entries (created, renamed, deleted files) durable: now, or at ``later.sync()``."""
    if later is None:
        _fsync(path, os.O_RDONLY | os.O_DIRECTORY)
    else:
        later.directory(path)


def fsync_file(path: Path, later: SyncLater | None = None) -> None:
    """Make a closed file's content (and its entry in its directory, with ``later``) durable: now, or at
    ``later.sync()``."""
    if later is None:
        _fsync(path, os.O_RDONLY)
    else:
        later.file(path)


def _fsync(path: Path, flags: int) -> None:
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes, *, tmp_suffix: str = ".tmp", later: SyncLater | None = None) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves either the old or the new content, durably.

    Write ``path`` + ``tmp_suffix``, fsync it, rename it over ``path``, fsync the directory (with ``later``: at
    ``later.sync()``; until then a crash may leave the old content). A leftover temp file means the crash happened
    before the rename: the original is intact and the temp file can be deleted.

    A failure before the rename (a full disk while writing) removes the temp file and raises ``WriteNotDone``:
    ``path`` is as it was.
    """
    tmp = path.with_name(path.name + tmp_suffix)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise WriteNotDone(e.errno, e.strerror, str(path)) from e
    fsync_dir(path.parent, later)


class WriteNotDone(OSError):
    """``atomic_write`` failed before its rename: the file keeps its old content (the temp file is removed)."""


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class SyncLater:
    """fsyncs put off to one ``sync()`` for many files: opening a topic's partitions, where an fsync each would
    cost a disk flush each. Nothing that depends on the noted files may be acknowledged before ``sync()`` returns.

    A file that ``atomic_write(..., later=)`` replaces keeps its guarantee (after a crash: the old content or the
    new, never a mix); only the rename's directory fsync waits. A file noted with ``file`` (an existing one whose
    content may still be only in the page cache, or a new one) is durable only at ``sync()``; a new file
    (``write_new``) that a crash comes before may be lost or left empty (its directory entry can reach the disk
    before its data), so only files a restart repairs when they are missing or empty may be made this way.

    ``sync()`` is one syncfs(2) of the file system holding ``anchor`` (every noted path must be on it): one journal
    commit and disk flush for all of them. Where syncfs is not available, each noted file and then each noted
    directory is fsynced. A failed sync raises ``OSError`` (before Linux 5.8 syncfs does not report errors of the
    page cache's write-back; fsync does).
    """

    __slots__ = ("_anchor", "_directories", "_files")

    def __init__(self, anchor: Path) -> None:
        self._anchor = anchor
        self._files: list[Path] = []
        self._directories: dict[Path, None] = {}  # ordered and without repeats: one fsync each in the fallback

    def write_new(self, path: Path, data: bytes) -> None:
        """Create (or empty) ``path`` and write ``data``; durable at ``sync()``."""
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
        self.file(path)

    def file(self, path: Path) -> None:
        """``path``'s content and its entry in its directory become durable at ``sync()`` (not before)."""
        self._files.append(path)
        self.directory(path.parent)

    def directory(self, path: Path) -> None:
        """The entries of directory ``path`` (files made, renamed, removed) become durable at ``sync()``."""
        self._directories[path] = None

    def sync(self) -> None:
        syncfs = _syncfs()
        if syncfs is None:
            for path in self._files:
                fsync_file(path)
            for path in self._directories:
                fsync_dir(path)
        elif self._files or self._directories:
            fd = os.open(self._anchor, os.O_RDONLY | os.O_DIRECTORY)
            try:
                if syncfs(fd) != 0:
                    code = ctypes.get_errno()
                    raise OSError(code, f"syncfs of {self._anchor}: {os.strerror(code)}")
            finally:
                os.close(fd)
        self._files.clear()
        self._directories.clear()


@functools.cache
def _syncfs() -> Callable[[int], int] | None:
    """Linux's syncfs(2) from the C library, or None where there is none."""
    try:
        found = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None
    found.argtypes = [ctypes.c_int]
    found.restype = ctypes.c_int
    syncfs: Callable[[int], int] = found
    return syncfs


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
