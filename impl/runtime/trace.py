"""Trace rows: one per decision the runtime applies or answers, in the schema generated from the spec.

Owns: `TraceRow` construction from a `Decision` (columns from the generated table's `TRACE_COLUMNS`: see
`kcoord.model.traceschema` for their meaning), the typed Parquet format (`TypedSchema`, `typed_table`: trace format
v2, whose columns and codes the generated table's `TRACE_SCHEMA` and `TRACE_CODES` give) and the sinks —
`MemorySink`, `JsonlSink`, `ParquetSink` (v2) — each writing one folder per machine
(`<dir>/<Machine>/part-<node>-<n>.<ext>`). Tracing is off when the `Tracer` has no sink; the hot path then does
nothing but one attribute check.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

from ..errors import Errors
from ..statemachine import Decision, MachineTable
from ..storage._files import fsync_file

Row = dict[str, Any]

#: the event of a row that reads a state back from a coordinator log: no machine event (kind `load`)
LOAD_EVENT: Final = "Load"


class TraceSink(Protocol):
    def write(self, machine: str, row: Row) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class _Layout:
    """Per machine: which trace columns are arguments, variables (and which of those are sets), keys."""

    args: tuple[tuple[str, str, bool], ...]  # (column, parameter, is_set)
    variables: tuple[tuple[str, bool], ...]  # (variable, is_set)
    keys: tuple[str, ...]


def _layout(table: MachineTable) -> _Layout:
    columns = dict(table.module.TRACE_COLUMNS)
    args = tuple((c, c[len("arg_"):], t == "list<string>") for c, t in table.module.TRACE_COLUMNS
                 if c.startswith("arg_"))
    variables = tuple((v.name, columns[v.name] == "list<string>") for v in table.variables)
    return _Layout(args, variables, tuple(k for k, _ in table.keys))


def _plain(value: Any, is_set: bool) -> Any:
    if is_set:
        return sorted(value) if value is not None else None
    return value


@dataclass(slots=True)
class Tracer:
    """Builds rows and hands them to a sink; `sink=None` turns tracing off."""

    sink: TraceSink | None = None
    node: int = 0
    _layouts: dict[str, _Layout] = field(default_factory=dict)

    @property
    def enabled(self) -> bool:
        return self.sink is not None

    def wants(self, machine: str, kind: str) -> bool:
        """Whether a decision of `machine` of this row kind reaches the sink at all: a caller may skip the work of
        `decision`'s arguments (its key text, its sequence number) when not. Always, with a trace file."""
        sink = self.sink
        if sink is None:
            return False
        if isinstance(sink, TapSink) and sink.inner is None:
            return sink.watches(machine) and (kind != "reject" or sink.watches_rejections)
        return True

    def wants_decision(self, machine: str, decision: Decision) -> bool:
        """`wants`, told the whole decision: a tap with no trace file behind it may want only some of a machine's
        rows (the server's metrics count only completed transactions and rebalances), and `decision` builds no row
        and takes no sequence number for the others. Always, with a trace file."""
        sink = self.sink
        if sink is None:
            return False
        if isinstance(sink, TapSink) and sink.inner is None:
            return sink.watches_decision(machine, decision)
        return True

    def decision(self, table: MachineTable, decision: Decision, *, key: str, seq: int, ts_ms: int,
                 coordinator_epoch: int, args: Mapping[str, Any], pending: bool) -> None:
        """A row for a transition, stay or rejection (the variables are the post-state; a rejection changes none)."""
        sink = self.sink
        if sink is None:
            return
        if isinstance(sink, TapSink) and sink.inner is None:
            # a tap with no trace file behind it (the server's metrics): it sees what it watches, no row is built
            if sink.watches_decision(table.name, decision):
                sink.observe(table.name, {"kind": decision.row.kind, "event": decision.event, "key": key,
                                          "ts_ms": ts_ms, "from_state": decision.from_state,
                                          "to_state": decision.to_state})
            return
        after = decision.post if decision.post is not None else decision.pre
        self._emit(table, after, key=key, seq=seq, ts_ms=ts_ms, coordinator_epoch=coordinator_epoch,
                   kind=decision.row.kind, event=decision.event, row=decision.row.index, error=decision.error,
                   from_state=decision.from_state, to_state=decision.to_state, pending=pending, args=args)

    def load(self, table: MachineTable, before: Mapping[str, Any], after: Mapping[str, Any], *, key: str, seq: int,
             ts_ms: int, coordinator_epoch: int) -> None:
        """A row for a state read back from a coordinator log (no event: kind `load`)."""
        sink = self.sink
        if sink is None:
            return
        if isinstance(sink, TapSink) and sink.inner is None:
            if sink.watches_loads and sink.watches(table.name):
                sink.observe(table.name, {"kind": "load", "event": LOAD_EVENT, "key": key, "ts_ms": ts_ms,
                                          "from_state": str(before["state"]), "to_state": str(after["state"])})
            return
        self._emit(table, after, key=key, seq=seq, ts_ms=ts_ms, coordinator_epoch=coordinator_epoch, kind="load",
                   event=LOAD_EVENT, row=-1, error=Errors.NONE, from_state=str(before["state"]),
                   to_state=str(after["state"]), pending=False, args={})

    def _emit(self, table: MachineTable, after: Mapping[str, Any], *, key: str, seq: int, ts_ms: int,
              coordinator_epoch: int, kind: str, event: str, row: int, error: str, from_state: str, to_state: str,
              pending: bool, args: Mapping[str, Any]) -> None:
        assert self.sink is not None
        layout = self._layouts.get(table.name)
        if layout is None:
            layout = self._layouts[table.name] = _layout(table)
        out: Row = {"machine": table.name, "key": key, "seq": seq, "ts_ms": ts_ms, "node": self.node,
                    "coordinator_epoch": coordinator_epoch, "kind": kind, "event": event, "row": row, "error": error,
                    "from_state": from_state, "to_state": to_state, "pending": pending}
        for k in layout.keys:
            out[k] = after[k]
        for column, param, is_set in layout.args:
            value = args.get(param)
            out[column] = None if callable(value) else _plain(value, is_set)  # a lazy argument never computed
        for name, is_set in layout.variables:
            out[name] = _plain(after[name], is_set)
        self.sink.write(table.name, out)

    def flush(self) -> None:
        if self.sink is not None:
            self.sink.flush()

    def close(self) -> None:
        if self.sink is not None:
            self.sink.close()


class TapSink:
    """A sink that shows every row to `observe` (a subclass: counters, metrics), then hands it to `inner`, if any.

    With no `inner`, the `Tracer` builds no rows for it: `observe` gets, for the machines it `watches` only, a row of
    the columns kind, event, key, ts_ms, from_state and to_state (the rest of a row costs more to build than the whole
    decision), no load rows unless `watches_loads`, and no rejections unless `watches_rejections`."""

    watches_loads = False
    watches_rejections = True

    def __init__(self, inner: TraceSink | None) -> None:
        self.inner = inner

    def observe(self, machine: str, row: Row) -> None:
        raise NotImplementedError

    def watches(self, machine: str) -> bool:
        """Whether `observe` wants the rows of `machine` (when nothing else does)."""
        return True

    def watches_decision(self, machine: str, decision: Decision) -> bool:
        """Whether `observe` wants the row of this decision (when nothing else does): by default every row of a
        machine it `watches`, rejections only if it `watches_rejections`. A narrower override must still want every
        row its `observe` acts on."""
        return self.watches(machine) and (decision.row.kind != "reject" or self.watches_rejections)

    def write(self, machine: str, row: Row) -> None:
        self.observe(machine, row)
        if self.inner is not None:
            self.inner.write(machine, row)

    def flush(self) -> None:
        if self.inner is not None:
            self.inner.flush()

    def close(self) -> None:
        if self.inner is not None:
            self.inner.close()


class MemorySink:
    """Rows kept in memory, per machine and in the order they were written (tests, small simulations)."""

    def __init__(self) -> None:
        self.rows: dict[str, list[Row]] = {}
        self._order: list[Row] = []

    def write(self, machine: str, row: Row) -> None:
        self.rows.setdefault(machine, []).append(row)
        self._order.append(row)

    def all_rows(self) -> list[Row]:
        """Every row, in the order written (across machines: the happens-before order of one process)."""
        return list(self._order)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


class _FolderSink:
    """Shared by the file sinks: part files per machine, the next free `part-<node>-<n>` created on first use."""

    extension = ""

    def __init__(self, directory: Path, node: int = 0) -> None:
        self.directory = directory
        self.node = node
        self.directory.mkdir(parents=True, exist_ok=True)
        self._next: dict[str, int] = {}  # machine -> the n to try next (files of earlier runs are kept)

    def _path(self, machine: str) -> Path:
        folder = self.directory / machine
        folder.mkdir(parents=True, exist_ok=True)
        n = self._next.get(machine, 0)
        while (folder / f"part-{self.node}-{n}.{self.extension}").exists():
            n += 1
        self._next[machine] = n + 1
        return folder / f"part-{self.node}-{n}.{self.extension}"


class JsonlSink(_FolderSink):
    """JSON Lines, one object per row, buffered; `flush` writes through to the OS."""

    extension = "jsonl"

    def __init__(self, directory: Path, node: int = 0, buffer_rows: int = 1024) -> None:
        super().__init__(directory, node)
        self.buffer_rows = buffer_rows
        self._files: dict[str, Any] = {}
        self._buffers: dict[str, list[str]] = {}

    def write(self, machine: str, row: Row) -> None:
        buffer = self._buffers.setdefault(machine, [])
        buffer.append(json.dumps(row, separators=(",", ":")))
        if len(buffer) >= self.buffer_rows:
            self._drain(machine)

    def _drain(self, machine: str) -> None:
        buffer = self._buffers.get(machine)
        if not buffer:
            return
        handle = self._files.get(machine)
        if handle is None:
            handle = self._files[machine] = open(self._path(machine), "a", encoding="utf-8")  # noqa: SIM115
        handle.write("\n".join(buffer) + "\n")
        buffer.clear()

    def flush(self) -> None:
        for machine in list(self._buffers):
            self._drain(machine)
        for handle in self._files.values():
            handle.flush()
            os.fsync(handle.fileno())

    def close(self) -> None:
        self.flush()
        for handle in self._files.values():
            handle.close()
        self._files.clear()


@dataclass(frozen=True, slots=True)
class TypedSchema:
    """The columns of a machine's typed (v2) Parquet files, their coded columns' names (in code order) and the
    footer. Built from a generated table (`of_table`), or from the model for a spec of one's own."""

    columns: tuple[tuple[str, str], ...]  # (column, type): string, bool, int8..int64, list<...>
    codes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    metadata: Mapping[bytes, bytes] = field(default_factory=dict)

    @classmethod
    def of_table(cls, table: MachineTable) -> TypedSchema:
        module = table.module
        meta = {b"kcoord.format": b"2", b"kcoord.machine": table.name.encode(),
                b"kcoord.spec_sha256": table.spec_sha256.encode(),
                b"kcoord.codes": json.dumps(module.TRACE_CODES, separators=(",", ":")).encode()}
        return cls(tuple(module.TRACE_SCHEMA), dict(module.TRACE_CODES), meta)

    def arrow(self) -> Any:
        import pyarrow as pa

        return pa.schema([pa.field(n, _arrow_type(t)) for n, t in self.columns], metadata=dict(self.metadata))


def _arrow_type(typ: str) -> Any:
    import pyarrow as pa

    if typ.startswith("list<"):
        return pa.list_(_arrow_type(typ[5:-1]))
    return {"string": pa.string(), "int64": pa.int64(), "int32": pa.int32(), "int16": pa.int16(),
            "int8": pa.int8(), "bool": pa.bool_()}[typ]


def typed_table(rows: Sequence[Row], schema: TypedSchema, sort: bool = True) -> Any:
    """Rows (names, sets as sets or lists) as one Arrow table of the typed format: names as their codes, sets as
    sorted lists; sorted by (key, seq) unless `sort` is false (a stable sort: rows of one key keep their order).
    A name its column has no code for is a ValueError (the writer's bug, not the reader's)."""
    import pyarrow as pa

    arrays = []
    for name, typ in schema.columns:
        values = [r.get(name) for r in rows]
        names = schema.codes.get(name)
        if names is not None:
            values = _encoded(name, values, {n: i for i, n in enumerate(names)})
        elif typ.startswith("list<"):
            values = [None if v is None else sorted(v) for v in values]
        arrays.append(pa.array(values, _arrow_type(typ)))
    table = pa.Table.from_arrays(arrays, schema=schema.arrow())
    if sort and table.num_rows > 1 and "key" in table.column_names and "seq" in table.column_names:
        table = table.sort_by(_BY_KEY)
    return table


_BY_KEY = [("key", "ascending"), ("seq", "ascending")]  # (Arrow's sort is stable)


def _encoded(column: str, values: list[Any], index: Mapping[Any, int]) -> list[Any]:
    try:
        return [None if v is None else sorted(index[x] for x in v) if isinstance(v, list | set | frozenset | tuple)
                else index[v] for v in values]
    except KeyError as e:
        raise ValueError(f"column {column}: {e.args[0]!r} has no code ({', '.join(index)})") from None


class ParquetSink(_FolderSink):
    """Parquet files of the typed format (v2) through pyarrow; the schema comes from the generated table.

    Rows wait in one buffer per machine; at most `batch_rows` rows wait in all of them together (then the largest
    buffer becomes an Arrow batch of the typed format, ~100 bytes a row), so memory stays bounded however many
    machines write and however slowly some of them fill a row group. A machine's batches become one row group of up
    to `row_group_rows` rows, sorted by (key, seq), so that a reader finds each key's rows together. A Parquet file
    can be read only once its footer is written, so `flush` seals: it writes what waits and closes the files written
    so far (footer, fsync), and later rows go to new part files. A process killed after a flush leaves complete files
    with every row flushed, as the JSON Lines sink does; flushing rarely keeps files few and row groups large."""

    extension = "parquet"

    def __init__(self, directory: Path, schemas: Mapping[str, TypedSchema], node: int = 0,
                 batch_rows: int = 50_000, row_group_rows: int = 1_000_000) -> None:
        super().__init__(directory, node)
        self.schemas = schemas
        self.batch_rows = batch_rows
        self.row_group_rows = row_group_rows
        self._buffers: dict[str, list[Row]] = {}
        self._buffered = 0  # rows in all buffers
        self._tables: dict[str, list[Any]] = {}  # machine -> typed tables waiting to be one row group
        self._writers: dict[str, tuple[Any, Path]] = {}  # machine -> (open ParquetWriter, its file)

    def write(self, machine: str, row: Row) -> None:
        buffer = self._buffers.get(machine)
        if buffer is None:
            buffer = self._buffers[machine] = []
        buffer.append(row)
        self._buffered += 1
        if self._buffered >= self.batch_rows:
            self._drain(max(self._buffers, key=lambda m: len(self._buffers[m])))

    def _drain(self, machine: str) -> None:
        buffer = self._buffers.get(machine)
        if not buffer:
            return
        waiting = self._tables.setdefault(machine, [])
        waiting.append(typed_table(buffer, self.schemas[machine], sort=False))
        self._buffered -= len(buffer)
        buffer.clear()
        if sum(t.num_rows for t in waiting) >= self.row_group_rows:
            self._write_group(machine)

    def _write_group(self, machine: str) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        waiting = self._tables.pop(machine, [])
        if not waiting:
            return
        table = pa.concat_tables(waiting)
        table = table.sort_by(_BY_KEY)
        open_file = self._writers.get(machine)
        if open_file is None:
            path = self._path(machine)
            open_file = self._writers[machine] = (pq.ParquetWriter(path, table.schema), path)
        open_file[0].write_table(table, row_group_size=max(1, table.num_rows))

    def flush(self) -> None:
        """Write every buffered row, then seal the open files (see the class)."""
        for machine in list(self._buffers):
            self._drain(machine)
        for machine in list(self._tables):
            self._write_group(machine)
        for writer, path in self._writers.values():
            writer.close()
            fsync_file(path)
        self._writers.clear()

    def close(self) -> None:
        self.flush()
