"""The trace schema of a machine, from the IR: one row per decision the coordinator applies or answers.

Owns: the column list (`trace_columns`), its mapping to pyarrow (`arrow_schema`) and the column types the Spark
backend uses. A row is

    machine, key, <key fields>, seq, ts_ms, node, coordinator_epoch,
    kind ("transition" | "stay" | "reject" | "load"), event, row (spec row index, -1 for load),
    error (the answer: NONE for an accepted change), from_state, to_state, pending,
    arg_<parameter>... (union over the machine's events; null where the event has no such parameter),
    <variable>...      (every spec variable after the row; unchanged by a rejection)

Two formats hold these rows. **v1** (JSON Lines, and Parquet files without `kcoord.format`): bool → bool, integers →
int64 (bounds are the spec's), strings, enums and names → string, sets → list of strings (sorted). **v2**, the typed
Parquet format every kcoord writer produces (`v2_columns`, `codes`, `arrow_schema_v2`; files say
`kcoord.format: 2` in their footer): no `machine` column (the footer names the machine); `kind`, `event`, the states
and every enum value (sets of them too) as small integer **codes** — a name's position among its type's names,
sorted (`code`), so codes order as names do — with each coded column's names in the footer (`kcoord.codes`, JSON);
integers at their declared width (`int16`, `0..2` as int8); sets as lists of their element type; `error` and other
strings as strings (Parquet dictionary-encodes them). Readers of either format produce the same rows.

`seq` is strictly increasing per (machine, key); rows of one `coordinator_epoch` are dense per key (a gap is a lost
row). Rows about an instance that does not exist (a rejection on a fresh key) have seq -1.
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


# ---------------------------------------------------------------- v2: the typed format

FORMAT_V2 = "2"
INT_WIDTHS = (("int8", 8), ("int16", 16), ("int32", 32), ("int64", 64))


def names_of(t: ir.EnumType | ir.StateType) -> tuple[str, ...]:
    """The names a coded value of `t` can hold, in code order (sorted)."""
    return tuple(sorted(t.members))


def code(t: ir.Type, name: str) -> int:
    """The code of an enum member or state name."""
    assert isinstance(t, ir.EnumType | ir.StateType), t
    return names_of(t).index(name)


def int_width(t: ir.IntType) -> str:
    """The narrowest of int8..int64 that holds every value of `t`."""
    return next(w for w, bits in INT_WIDTHS if -(2 ** (bits - 1)) <= t.lo and t.hi < 2 ** (bits - 1))


def v2_type(t: ir.Type) -> str:
    if isinstance(t, ir.SetType):
        return f"list<{v2_type(t.element)}>"
    if isinstance(t, ir.EmptySetType):
        return "list<string>"
    if isinstance(t, ir.BoolType):
        return "bool"
    if isinstance(t, ir.IntType):
        return int_width(t)
    if isinstance(t, ir.EnumType | ir.StateType):
        return "int8" if len(t.members) <= 127 else "int16"
    return "string"


def typed_fields(m: ir.Machine) -> list[tuple[str, ir.Type]]:
    """(column, IR type) of every column after the common ones, each name once (first occurrence wins)."""
    out: dict[str, ir.Type] = {}
    for k in m.keys:
        out.setdefault(k.name, k.type)
    for e in m.events:
        for p in e.params:
            out.setdefault(arg_column(p.name), p.type)
    for v in m.variables:
        out.setdefault(v.name, v.type)
    common = {name for name, _ in COMMON}
    order = {n: i for i, (n, _) in enumerate(trace_columns(m))}  # (once: the sort's key reads it per item)
    return [(n, t) for n, t in sorted(out.items(), key=lambda kv: order[kv[0]]) if n not in common]


def codes(m: ir.Machine) -> dict[str, tuple[str, ...]]:
    """The names of every coded column, in code order."""
    out: dict[str, tuple[str, ...]] = {"kind": tuple(sorted(KINDS)),
                                       "event": tuple(sorted({*(e.name for e in m.events), "Load"})),
                                       "from_state": names_of(m.state_type), "to_state": names_of(m.state_type)}
    for name, t in typed_fields(m):
        element = t.element if isinstance(t, ir.SetType) else t
        if isinstance(element, ir.EnumType | ir.StateType):
            out[name] = names_of(element)
    return out


def v2_columns(m: ir.Machine) -> list[tuple[str, str]]:
    """(name, v2 type) of every column of a v2 file, in order."""
    state = v2_type(m.state_type)
    common = {"seq": "int64", "ts_ms": "int64", "node": "int32", "coordinator_epoch": "int32", "row": "int16",
              "error": "string", "pending": "bool", "key": "string", "kind": "int8",
              "event": "int8" if len(codes(m)["event"]) <= 127 else "int16", "from_state": state, "to_state": state}
    out = [(name, common[name]) for name, _ in COMMON if name != "machine"]
    return out + [(name, v2_type(t)) for name, t in typed_fields(m)]


def arrow_type(typ: str) -> object:
    import pyarrow as pa

    if typ.startswith("list<"):
        return pa.list_(arrow_type(typ[5:-1]))
    return {"string": pa.string(), "int64": pa.int64(), "int32": pa.int32(), "int16": pa.int16(),
            "int8": pa.int8(), "bool": pa.bool_()}[typ]


def footer(m: ir.Machine) -> dict[bytes, bytes]:
    """The key-value metadata of a v2 file of `m`."""
    import json

    return {b"kcoord.format": FORMAT_V2.encode(), b"kcoord.machine": m.name.encode(),
            b"kcoord.spec_sha256": m.source_sha256.encode(),
            b"kcoord.codes": json.dumps(codes(m), separators=(",", ":")).encode()}


def arrow_schema_v2(m: ir.Machine) -> object:
    """The pyarrow schema of a v2 file of `m`, with its footer."""
    import pyarrow as pa

    return pa.schema([pa.field(n, arrow_type(t)) for n, t in v2_columns(m)], metadata=footer(m))


def arrow_schema(m: ir.Machine) -> object:
    """The pyarrow schema of the machine's trace rows."""
    import pyarrow as pa

    types = {"string": pa.string(), "int64": pa.int64(), "int32": pa.int32(), "bool": pa.bool_(),
             "list<string>": pa.list_(pa.string())}
    return pa.schema([pa.field(name, types[typ]) for name, typ in trace_columns(m)],
                     metadata={b"kcoord.machine": m.name.encode(), b"kcoord.spec_sha256": m.source_sha256.encode()})
