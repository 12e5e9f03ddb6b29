"""The trace schema of a machine, from the IR: one row per decision the coordinator applies or answers.

Owns: the column list (`trace_columns`), its mapping to pyarrow (`arrow_schema`) and the column types the Spark
backend uses. A row is

    machine, key, <key fields>, seq, ts_ms, node, coordinator_epoch,
    kind ("transition" | "stay" | "reject" | "load"), event, row (spec row index, -1 for load),
    error (the answer: NONE for an accepted change), from_state, to_state, pending,
    arg_<parameter>... (union over the machine's events; null where the event has no such parameter),
    <variable>...      (every spec variable after the row; unchanged by a rejection)

Types: bool → bool, integers → int64 (bounds are the spec's), strings and enums → string, sets → list of strings
(sorted). `seq` is strictly increasing per (machine, key); rows of one `coordinator_epoch` are dense per key (a gap is
a lost row). Rows about an instance that does not exist (a rejection on a fresh key) have seq -1.
Must not import: lark, z3, pyspark (the Spark types are built in the Spark backend from `trace_columns`).
"""

from __future__ import annotations

from . import ir

#: columns every machine's trace has, before its own
COMMON = (
    ("machine", "string"), ("key", "string"), ("seq", "int64"), ("ts_ms", "int64"), ("node", "int32"),
    ("coordinator_epoch", "int32"), ("kind", "string"), ("event", "string"), ("row", "int32"), ("error", "string"),
    ("from_state", "string"), ("to_state", "string"), ("pending", "bool"),
)
KINDS = ("transition", "stay", "reject", "load")


def column_type(t: ir.Type) -> str:
    if isinstance(t, ir.BoolType):
        return "bool"
    if isinstance(t, ir.IntType):
        return "int64"
    if isinstance(t, ir.SetType | ir.EmptySetType):
        return "list<string>"
    return "string"


def arg_column(name: str) -> str:
    return f"arg_{name}"


def trace_columns(m: ir.Machine) -> list[tuple[str, str]]:
    """(name, type) of every column, in order; raises ValueError if two events give one parameter two types."""
    cols = list(COMMON)
    cols += [(k.name, column_type(k.type)) for k in m.keys]
    params: dict[str, str] = {}
    for e in m.events:
        for p in e.params:
            typ = column_type(p.type)
            if params.setdefault(p.name, typ) != typ:
                raise ValueError(f"{m.name}: parameter '{p.name}' has type {params[p.name]} in one event and {typ} in "
                                 f"{e.name}; trace columns need one type per name")
    cols += [(arg_column(name), typ) for name, typ in sorted(params.items())]
    cols += [(v.name, column_type(v.type)) for v in m.variables]
    return cols


def arrow_schema(m: ir.Machine) -> object:
    """The pyarrow schema of the machine's trace rows."""
    import pyarrow as pa

    types = {"string": pa.string(), "int64": pa.int64(), "int32": pa.int32(), "bool": pa.bool_(),
             "list<string>": pa.list_(pa.string())}
    return pa.schema([pa.field(name, types[typ]) for name, typ in trace_columns(m)],
                     metadata={b"kcoord.machine": m.name.encode(), b"kcoord.spec_sha256": m.source_sha256.encode()})
