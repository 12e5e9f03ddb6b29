"""Validation in DuckDB: the rows of Parquet trace files (v1, names as strings; typed v2, names as codes) that the
checkers quarantine as malformed, with the same reasons — the per-task engine's first step (issue 33).

Owns: `KeepingNulls` (the dialect), `layout` (how to read one Parquet file, from its footer alone: v1 or typed,
the machine a typed footer names, or why the file is quarantined whole: `unreadable_file`, `bad_file_schema`, as
`readers` says), `reasoned` (one file's rows as DuckDB SQL, every trace column (an absent one as nulls, which
`missing` then catches), with `_reason`: the first failing rule's reason, or null) and `quarantined` (one file's
malformed rows: machine, source, reason). The reason is not written here: it is `sparkread.reason`'s tree (the
rules of `readers.rules`, in their order), rendered in `sqltree`'s DuckDB dialect (`KeepingNulls`); this module
writes the SELECT around it. Not here: JSON Lines (the Spark and Python readers' corrupt-record rules), typed files
whose footer names differ from the spec's (`sparkread` maps their codes; `layout` refuses them), the quarantine's
`raw` column. This module builds SQL text and reads footers (pyarrow); the caller runs the SQL (a DuckDB
connection).
Must not import: duckdb (this module builds SQL text; the caller runs it), kcoord.cli.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from kcoord.model import ir
from kcoord.model import sqltree as q
from kcoord.model.traceschema import codes, v2_columns

from .readers import UNREADABLE, columns, file_schema_problem, parquet_footer, typed_footer
from .sparkread import CORRUPT, TYPED, V1, reason


class KeepingNulls(q.DuckDBDialect):
    """`sqltree.DUCKDB`, but Spark's `array_distinct` keeps one null, as Spark's does: DuckDB's `list_distinct`
    drops nulls, so the `null_element` rule (`sparkread._fails`: fewer elements without the null than distinct
    ones) never failed on a set of two elements or more with a null. (The row checks read validated rows, whose sets
    hold no null: `DUCKDB` renders `array_distinct` as `list_distinct` for them.)"""

    def _fn(self, e: q.Fn) -> str:
        if e.name == "array_distinct":
            (x,) = (self.render(a) for a in e.args)
            return f"list_concat(list_distinct({x}), list_filter({x}, lambda _e: _e IS NULL)[1:1])"
        return q.DuckDBDialect._fn(self, e)


DUCKDB = KeepingNulls(**{f.name: getattr(q.DUCKDB, f.name) for f in fields(q.DUCKDB)})


@dataclass(frozen=True, slots=True)
class Layout:
    """How one Parquet file is read: `layout` V1 or TYPED and the columns it has, or `problem`: the reason it is
    quarantined whole (one row) and why."""

    layout: str = ""
    machine: str = ""  # a typed footer's machine
    present: frozenset[str] = frozenset()
    problem: tuple[str, str] | None = None  # (reason, why)


def layout(m: ir.Machine, path: str) -> Layout:
    """`path`'s layout for `m`, from its footer (as `sparkread` and `readers` group files)."""
    schema, why = parquet_footer(path)
    if why is not None:
        return Layout(problem=(UNREADABLE, why))
    cols = columns(m)
    if problem := file_schema_problem(schema, cols, dict(v2_columns(m))):
        return Layout(problem=(f"bad_file_schema:{problem}", ""))
    present = frozenset(schema.names)
    footer = typed_footer(schema)
    if footer is None:
        return Layout(V1, "", present)
    machine, names = footer
    mine = codes(m)
    if any(tuple(v) != mine.get(c) for c, v in names.items() if c in mine):
        raise ValueError(f"{path}: its names differ from the spec's (codes to map: not done in DuckDB)")
    return Layout(TYPED, machine, present)


def reasoned(m: ir.Machine, path: str, how: Layout, relation: str | None = None, source: str | None = None) -> str:
    """Every row of the Parquet file `path` with the trace columns of its layout (an absent one as nulls), the
    file's path as `source`, and `_reason`: why the row is malformed (`sparkread.reason`), or null. `relation`: the
    file's rows (some of its row groups, read already) instead of the whole file; `source`: the name given as the
    rows' `source` (default: `path`)."""
    assert how.problem is None, how.problem
    d = DUCKDB
    if how.layout == TYPED:
        wanted = [n for n, _ in v2_columns(m) if n in dict(columns(m))]
        machine = f"{d.string(how.machine)} AS machine"
    else:
        wanted = [n for n, _ in columns(m) if n != "machine"]
        machine = "machine" if "machine" in how.present else "CAST(NULL AS VARCHAR) AS machine"
    cols = [d.quote(n) if n in how.present else f"NULL AS {d.quote(n)}" for n in wanted if n != "machine"]
    rows = f"SELECT {machine}, {', '.join(cols)}, CAST(NULL AS VARCHAR) AS {d.quote(CORRUPT)}, " \
           f"{d.string(source or path)} AS source FROM {relation or f'read_parquet({d.string(path)})'}"
    return f"SELECT *, {d.render(reason(m, how.layout))} AS _reason FROM ({rows}) r"


def quarantined(m: ir.Machine, path: str) -> str:
    """The malformed rows of one Parquet file: machine, source, reason (a file whose footer cannot be read: one row;
    whose schema does not fit: every row, as `readers` quarantines them)."""
    how = layout(m, path)
    d = DUCKDB
    if how.problem is not None:
        head = f"SELECT {d.string(m.name)} AS machine, {d.string(path)} AS source, {d.string(how.problem[0])} AS reason"
        return head if how.problem[0] == UNREADABLE else f"{head} FROM read_parquet({d.string(path)})"
    return f"SELECT {d.string(m.name)} AS machine, source, _reason AS reason FROM ({reasoned(m, path, how)}) v " \
           "WHERE _reason IS NOT NULL"
