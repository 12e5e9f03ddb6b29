"""The row checks' violations in DuckDB: for each row the row pass flagged, the violation rows the Spark plan's
`MachinePlan.row_violations` gives (machine, key, check, name, seq, seq_from, seq_to, location, message, pos,
row_json) — issue 33's DuckDB-in-Spark engine, computed only on the flagged rows (in a task, and on the driver for
the unit-first rows judged again against their predecessor in another unit: `duckspark.stitch`).

Owns: `violation_rows` (one row per flag of a relation of `duckcheck.flag_rows`' rows, with the count it is of and
the row's position in its unit's window partition) and `read_columns` (the pass's columns, besides the typed ones,
that those rows read: what `flag_rows` must keep). Nothing is written here but the SELECT around the trees: names,
messages and locations are `MachinePlan.found` and `MachinePlan.location`, rendered in `sqltree`'s DuckDB dialect;
`pos` is the unit's (`_rn - 1`): the caller offsets it by the rows of the key in the units before.
Must not import: duckdb (the caller runs the SQL), kcoord.cli.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields

from kcoord.model import ir
from kcoord.model import sqltree as q

from .duckcheck import count_names, expression_plan
from .sparkcheck import VIOLATION_COLUMNS
from .sparkread import typed_columns

DUCKDB = q.DUCKDB
#: `violation_rows`' columns: the Spark plan's, then the count the violation is of and the row's place in its unit
COLUMNS = (*VIOLATION_COLUMNS, "_count", "_rn")


def _trees(m: ir.Machine) -> list[tuple[str, str, q.Struct]]:
    """Per count (`duckcheck.count_names`' order): (check, count name, the violation's columns as one struct tree)."""
    plan = expression_plan(m)
    found = plan.found()
    names = count_names(m)
    assert len(found) == len(names), (len(found), names)
    seq, p_seq = q.col("seq"), q.col("p_seq")
    pos = q.when(q.binary(">=", seq, q.lit(0)), q.binary("-", q.col("_rn"), q.lit(1)), q.lit(-1))
    out = []
    for (_, check, name, message), count in zip(found, names, strict=True):
        seq_from = q.coalesce(p_seq, seq) if check == "discontinuity" else seq
        out.append((check, count, q.Struct((
            ("name", name), ("seq_from", seq_from), ("location", plan.location(q.lit(check), name)),
            ("message", message), ("pos", pos), ("row_json", q.when(q.binary("<", seq, q.lit(0)), plan.row_json()))))))
    return out


def read_columns(m: ir.Machine) -> list[str]:
    """The pass's columns `violation_rows` reads besides the typed ones and `_rn`, sorted."""
    typed = {n for n, _ in typed_columns(m)}
    return sorted(_columns([t for _, _, t in _trees(m)]) - typed - {"_rn"})


def violation_rows(m: ir.Machine, source: str, carry: Sequence[str] = ()) -> str:
    """One row per flag (`_f_<count>`) of `source` (`duckcheck.flag_rows`' rows, keeping `read_columns`):
    `COLUMNS`, `pos` the row's position in `source`'s window partition (`_rn - 1`; -1 for a negative seq), then the
    SQL items `carry` (e.g. which unit the row is of)."""
    d = DUCKDB
    more = "".join(f", {c}" for c in carry)
    parts = []
    for check, count, tree in _trees(m):
        items = {"machine": d.string(m.name), "key": "key", "check": d.string(check), "seq": "seq",
                 "seq_to": "seq", "_count": d.string(count), "_rn": "_rn", **{n: d.render(v) for n, v in tree.fields}}
        cols = ", ".join(f"{items[c]} AS {d.quote(c)}" for c in COLUMNS)
        parts.append(f"SELECT {cols}{more} FROM {source} WHERE {d.quote('_f_' + count)}")
    return " UNION ALL ".join(parts)


def _columns(trees: Sequence[q.Expr]) -> set[str]:
    """The names of the columns `trees` read."""
    out: set[str] = set()
    todo: list[object] = list(trees)
    while todo:
        t = todo.pop()
        if isinstance(t, q.Col):
            out.add(t.name.split("\0")[0])
        elif isinstance(t, tuple):
            todo.extend(t)
        elif isinstance(t, q.Expr):
            todo.extend(getattr(t, f.name) for f in fields(t))  # type: ignore[arg-type]
    return out
