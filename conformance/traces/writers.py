"""Trace writers: rows of the spec's machines written in the on-disk layout the readers take.

Owns `write_jsonl` (`<root>/<Machine>/part-N.jsonl`) and `write_parquet` / `write_parquet_file` (the typed format v2
of `typed_schema`, or v1 of `arrow_schema`).
Must not import: pyspark, kcoord.cli.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from kcoord.impl.runtime.trace import TypedSchema, typed_table
from kcoord.model import ir
from kcoord.model.traceschema import codes, footer, v2_columns

from .readers import columns

Row = dict[str, Any]


def _jsonable(row: Row) -> dict[str, Any]:
    """Sets as sorted lists of their elements' text (the trace schema's list<string>)."""
    return {k: sorted(_text(x) for x in v) if isinstance(v, frozenset) else v for k, v in row.items()}


def _text(x: Any) -> str:
    if isinstance(x, bool):
        return "true" if x else "false"
    return str(x)


def write_jsonl(traces: Mapping[str, list[Row]], root: str, files_per_machine: int = 1) -> None:
    """`<root>/<Machine>/part-N.jsonl`, rows spread round-robin over the files."""
    for name, rows in traces.items():
        folder = os.path.join(root, name)
        os.makedirs(folder, exist_ok=True)
        handles = [open(os.path.join(folder, f"part-{i}.jsonl"), "w", encoding="utf-8")  # noqa: SIM115
                   for i in range(files_per_machine)]
        try:
            for i, r in enumerate(rows):
                handles[i % files_per_machine].write(json.dumps(_jsonable(r)) + "\n")
        finally:
            for h in handles:
                h.close()


def write_parquet(traces: Mapping[str, list[Row]], machines: Mapping[str, ir.Machine], root: str,
                  partition: str | None = None, typed: bool = True) -> None:
    """`<root>/<Machine>/part-0.parquet` (or under `<partition>/`): the typed format (v2), or v1 (`typed=False`:
    names as strings, every integer int64, sets as lists of strings; still read, for older files)."""
    for name, rows in traces.items():
        folder = os.path.join(root, name, partition) if partition else os.path.join(root, name)
        os.makedirs(folder, exist_ok=True)
        write_parquet_file(rows, machines[name], os.path.join(folder, "part-0.parquet"), typed)


def write_parquet_file(rows: list[Row], m: ir.Machine, path: str, typed: bool = True) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if typed:
        table = typed_table(rows, typed_schema(m))
    else:
        table = pa.Table.from_pylist([_jsonable(r) for r in rows], schema=arrow_schema(m))
    pq.write_table(table, path, row_group_size=ROW_GROUP_ROWS)


ROW_GROUP_ROWS = 1_000_000  # rows per row group of a Parquet file: large ones read faster


def typed_schema(m: ir.Machine) -> TypedSchema:
    """The typed (v2) file layout of a machine, from the model (also for a spec of one's own)."""
    return TypedSchema(tuple(v2_columns(m)), codes(m), footer(m))


def arrow_schema(m: ir.Machine) -> Any:
    """`traceschema.arrow_schema` (v1) with every column once (see `readers.columns`)."""
    import pyarrow as pa

    types = {"string": pa.string(), "int64": pa.int64(), "int32": pa.int32(), "bool": pa.bool_(),
             "list<string>": pa.list_(pa.string())}
    return pa.schema([pa.field(n, types[t]) for n, t in columns(m)],
                     metadata={b"kcoord.machine": m.name.encode(), b"kcoord.spec_sha256": m.source_sha256.encode()})
