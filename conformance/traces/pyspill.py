"""The reference checker's rows of one machine: in memory, or spilled to files by key and read back a part at a time.

Owns `MachineRows` (a machine's validated rows: a list up to `max_rows_in_memory`, then spilled to `buckets` files by
key; a bucket still too large split again by key before any is read) and `Spill` (objects appended to bucket files,
pickled in chunks, read back a bucket at a time; also the cross-key properties' tuples, `pycrosskey`).
Must not import: pyspark, kcoord.cli.
"""

from __future__ import annotations

import os
import pickle
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any, Protocol

from .readers import TraceRow

Row = TraceRow


class SpillOptions(Protocol):
    """What `MachineRows` reads of the checker's options (`pycheck.Options`)."""

    max_rows_in_memory: int  # a machine with more rows is spilled to disk
    buckets: int  # spill files per machine
    spill_dir: str | None  # where spill files go (a temporary folder in it); None: the system's


class Spill:
    """Objects appended to `n` bucket files (pickled in chunks) and read back a bucket at a time, in the order they
    were added."""

    CHUNK = 4_096

    MAX_FILES = 512  # open at once per spill

    def __init__(self, folder: str, n: int) -> None:
        self.n = n
        self._paths = [os.path.join(folder, f"{i:04d}.pickle") for i in range(n)]
        self._files = [open(p, "wb") for p in self._paths]  # noqa: SIM115 (closed by close())
        self._chunks: list[list[Any]] = [[] for _ in range(n)]

    def add(self, bucket: int, obj: Any) -> None:
        chunk = self._chunks[bucket]
        chunk.append(obj)
        if len(chunk) >= self.CHUNK:
            self._flush(bucket)

    def _flush(self, bucket: int) -> None:
        if self._chunks[bucket]:
            pickle.dump(self._chunks[bucket], self._files[bucket], protocol=pickle.HIGHEST_PROTOCOL)
            self._chunks[bucket] = []

    def read(self, bucket: int) -> Iterator[Any]:
        self._flush(bucket)
        self._files[bucket].flush()
        with open(self._paths[bucket], "rb") as f:
            while True:
                try:
                    chunk = pickle.load(f)
                except EOFError:
                    return
                yield from chunk

    def close(self) -> None:
        for f in self._files:
            f.close()


Part = tuple[int, ...]  # which of a machine's rows: (bucket,), or (bucket, sub-bucket) for a bucket split again


class MachineRows:
    """One machine's validated rows: a list until there are more than `max_rows_in_memory`, then spilled by key to
    `buckets` files in a temporary folder (removed on exit), each row as the tuple of its values in column order
    (`names`: every validated row has exactly these columns). A bucket itself holding more than `max_rows_in_memory`
    rows (a very large trace) is split again by key into sub-buckets of about half that, before any is read, so one
    part's rows always fit (unless a single key has more). Also the trace's last `ts_ms`."""

    def __init__(self, options: SpillOptions, names: list[str]) -> None:
        self.options = options
        self.names = names
        self.count = 0
        self.trace_end: int | None = None
        self._list: list[Row] | None = []
        self._folder: str | None = None
        self._rows: Spill | None = None
        self._counts = [0] * options.buckets
        self._split: dict[int, Spill] = {}
        self._parts: list[Part] | None = None
        self._spills: list[Spill] = []

    def __enter__(self) -> MachineRows:
        return self

    def __exit__(self, *_: object) -> None:
        for s in self._spills:
            s.close()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)

    @property
    def spilled(self) -> bool:
        return self._rows is not None

    def _bucket_of(self, key: str) -> int:
        return hash(key) % self.options.buckets

    def part_of(self, key: str) -> Part:
        if not self.spilled:
            return (0,)
        b = self._bucket_of(key)
        sub = self._split.get(b)
        return (b,) if sub is None else (b, hash((b, key)) % sub.n)  # salted: not the bucket's own hash

    def parts(self) -> list[Part]:
        """Every part, in order; splits the buckets that are too large the first time it is asked."""
        if self._parts is None:
            if not self.spilled:
                self._parts = [(0,)]
            else:
                self._parts = []
                for b, n in enumerate(self._counts):
                    if n > self.options.max_rows_in_memory:
                        self._split_bucket(b, n)
                        self._parts += [(b, s) for s in range(self._split[b].n)]
                    else:
                        self._parts.append((b,))
        return self._parts

    def _split_bucket(self, b: int, rows: int) -> None:
        assert self._rows is not None
        sub = self._open_spill(min(Spill.MAX_FILES, -(-rows // max(1, self.options.max_rows_in_memory // 2))))
        at = self.names.index("key")
        for values in self._rows.read(b):
            sub.add(hash((b, values[at])) % sub.n, values)
        self._split[b] = sub

    def add(self, r: Row) -> None:
        self.count += 1
        ts = r["ts_ms"]
        if self.trace_end is None or ts > self.trace_end:
            self.trace_end = ts
        if self._rows is not None:
            self._spill(r)
            return
        assert self._list is not None
        self._list.append(r)
        if len(self._list) > self.options.max_rows_in_memory:
            self._rows = self._open_spill(self.options.buckets)
            for x in self._list:
                self._spill(x)
            self._list = None

    def _spill(self, r: Row) -> None:
        assert self._rows is not None
        b = self._bucket_of(r["key"])
        self._counts[b] += 1
        self._rows.add(b, tuple(r.values()))

    def new_spill(self) -> Spill | None:
        """More bucket files in this machine's spill folder (for the cross-key tuples), or None in memory."""
        return self._open_spill(self.options.buckets) if self.spilled else None

    def _open_spill(self, n: int) -> Spill:
        if self._folder is None:
            self._folder = tempfile.mkdtemp(prefix="kcoord-pycheck-", dir=self.options.spill_dir)
        folder = os.path.join(self._folder, str(len(self._spills)))
        os.mkdir(folder)
        spill = Spill(folder, n)
        self._spills.append(spill)
        return spill

    def rows(self, part: Part) -> list[Row]:
        if self._rows is None:
            assert self._list is not None
            return self._list
        source = self._rows if len(part) == 1 else self._split[part[0]]
        names = self.names  # (pickling keeps equal values shared within a chunk of rows: no need to share them again)
        return [TraceRow(zip(names, values, strict=True)) for values in source.read(part[-1])]
