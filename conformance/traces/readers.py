"""Trace files → validated rows, for the Python checker (streaming) — and the validation rules the Spark reader
compiles too, so that both engines quarantine exactly the same rows for the same reason.

Owns: the on-disk layout (`discover`: a folder per machine, `<dir>/<Machine>/`, holding `*.jsonl`/`*.json` or
`*.parquet` files, possibly in partitioned sub-folders; a path may also be one machine folder or one file), the
columns of a machine's rows (`columns`: `traceschema.trace_columns` with a name given twice kept once — see below),
the ordered validation `rules`, the JSON lines (a line's rows and values are `jsonvalues.py`'s, as Spark's JSON
reader takes them; a byte order mark opening a line is skipped, and a line with bytes that are not UTF-8 is
malformed, as in Spark), `read_rows` (one machine's rows, streamed file by file, batch by batch) and
`Quarantine` (malformed rows, with the reason, to `<out>/quarantine/`). Malformed rows are counted and set aside;
they never stop a run.

A Parquet file that cannot be read at all (not Parquet, or a torn or truncated footer: what a crash mid-write leaves)
is quarantined as one row (`unreadable_file`, the reader's message as the raw value); one whose pages break partway
keeps the rows read before the break (the Python checker only: Spark fails the read, see `sparkread`).
A row is malformed, with the first reason that applies, in this order: the line is not a JSON object or a value has
the wrong type (`malformed`), the Parquet file's schema does not fit (`bad_file_schema`; what Spark's reader takes
fits: dictionary-encoded strings, integers narrower than the column's), the folder is not a loaded
machine (`unknown_machine`), `machine` differs from the folder (`wrong_machine`), a required column is null or
absent (`missing:<column>`: every common column, key field and variable, and the arguments of the row's own event),
an unknown `kind`, event or state, a set with a null element, an enum value that is not a member, an integer outside
its declared type.

A variable named like a common column (PartitionProducer's `coordinator_epoch`) gives `trace_columns` one name twice;
a row has one value per name, so the variable reads the common column (its type must agree).

Coordinator log directories (`__transaction_state-N`, `__consumer_offsets-N`) hold no trace files: `discover` finds
nothing in them, and `kcoord.conformance.traces.logs` turns their records into rows of this schema first.
Must not import: pyspark, kcoord.cli.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kcoord.model import ir
from kcoord.model.traceschema import FORMAT_V2, KINDS, arg_column, column_type, trace_columns, v2_columns

from .checks import LOAD_EVENT, Spec
from .jsonvalues import INT_BOUNDS, Malformed, parse_json_line

JSON_SUFFIXES = (".jsonl", ".json")
PARQUET_SUFFIXES = (".parquet",)


# ---------------------------------------------------------------- layout


@dataclass(frozen=True, slots=True)
class Source:
    """One data file: the machine folder it belongs to (its name) and its format."""

    machine: str
    path: str
    format: str  # "json" | "parquet"


def _data_format(name: str) -> str | None:
    if name.startswith(("_", ".")):
        return None
    if name.endswith(JSON_SUFFIXES):
        return "json"
    if name.endswith(PARQUET_SUFFIXES):
        return "parquet"
    return None


def _files_under(folder: str) -> list[str]:
    out = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(("_", ".")))
        out += [os.path.join(root, f) for f in sorted(files) if _data_format(f)]
    return out


def discover(paths: Sequence[str | Path], machines: Iterable[str], exclude: Sequence[str] = ()) -> list[Source]:
    """Every data file under `paths`, with its machine. A path is a root of machine folders, a machine folder (its
    name is a loaded machine) or a single file (its machine is its nearest ancestor named after a machine).
    Folders in `exclude` (the run's own output) are skipped."""
    found = _discover(paths, set(machines))
    skip = [os.path.abspath(e) + os.sep for e in exclude if e]
    return [s for s in found if not any(os.path.abspath(s.path).startswith(x) for x in skip)]


def _discover(paths: Sequence[str | Path], known: set[str]) -> list[Source]:
    out: list[Source] = []
    for raw in paths:
        p = os.path.normpath(str(raw))
        if os.path.isfile(p):
            fmt = _data_format(os.path.basename(p))
            if fmt:
                out.append(Source(_machine_of_file(p, known), p, fmt))
        elif os.path.basename(p) in known:
            out += [Source(os.path.basename(p), f, _data_format(f) or "") for f in _files_under(p)]
        elif os.path.isdir(p):
            for name in sorted(os.listdir(p)):
                sub = os.path.join(p, name)
                if os.path.isdir(sub) and not name.startswith(("_", ".", "quarantine")):
                    out += [Source(name, f, _data_format(f) or "") for f in _files_under(sub)]
                elif os.path.isfile(sub) and _data_format(name):
                    out.append(Source("", sub, _data_format(name) or ""))
        else:
            raise FileNotFoundError(p)
    return out


def _machine_of_file(path: str, known: set[str]) -> str:
    parts = Path(path).parts[:-1]
    return next((part for part in reversed(parts) if part in known), parts[-1] if parts else "")


# ---------------------------------------------------------------- columns and rules


def columns(m: ir.Machine) -> list[tuple[str, str]]:
    """The machine's trace columns, each name once (the first occurrence wins)."""
    seen: set[str] = set()
    out = []
    for name, typ in trace_columns(m):
        if name not in seen:
            seen.add(name)
            out.append((name, typ))
    return out


@dataclass(frozen=True, slots=True)
class Rule:
    """One validation rule: the row is malformed (reason `code:column...`) when the rule fails.

    kind: `missing` (null), `not_in` (value not among `allowed`), `null_element` (a list holds null), `member`
    (an enum value, or each element of an enum set, among `allowed`), `range` (an int, or each element of an int
    set, within lo..hi). `events`: the rule only applies to rows of these events (arguments); empty = every row.
    """

    kind: str
    column: str
    allowed: tuple[str, ...] = ()
    lo: int = 0
    hi: int = 0
    events: tuple[str, ...] = ()
    is_set: bool = False

    @property
    def code(self) -> str:
        return {"missing": "missing", "not_in": "unknown", "null_element": "null_element", "member": "unknown_member",
                "range": "out_of_range"}[self.kind]


def rules(m: ir.Machine) -> list[Rule]:
    """The ordered validation rules of a machine's rows (after the JSON/Parquet type checks)."""
    out: list[Rule] = []
    key_and_vars = [(f.name, f.type, ()) for f in (*m.keys, *m.variables)]
    args = _arg_fields(m)
    common = [name for name, _ in columns(m)[:13]]
    out += [Rule("missing", c) for c in common]
    out.append(Rule("range", "seq", lo=-1, hi=INT_BOUNDS["int64"][1]))  # -1: a row about no instance (the schema)
    out.append(Rule("not_in", "kind", KINDS))
    out.append(Rule("not_in", "event", (*(e.name for e in m.events), LOAD_EVENT)))
    states = tuple(s.name for s in m.states)
    out += [Rule("not_in", "from_state", states), Rule("not_in", "to_state", states)]
    out += [Rule("missing", name) for name, _, _ in key_and_vars if name not in common]
    # An event argument may be null: the runtime computes some arguments only when the chosen row reads them (a
    # fresh producer id is allocated only by the rows that use it) and records null for one never computed; the
    # checks treat an expression over a null argument as not evaluated (never as a violation).
    fields = [*key_and_vars, *((arg_column(n), t, evs) for n, t, evs in args)]
    out += [Rule("null_element", name, events=evs) for name, t, evs in fields if isinstance(t, ir.SetType)]
    for name, t, evs in fields:
        element = t.element if isinstance(t, ir.SetType) else t
        is_set = isinstance(t, ir.SetType)
        if isinstance(element, ir.EnumType):
            out.append(Rule("member", name, element.members, events=evs, is_set=is_set))
        elif isinstance(element, ir.IntType):
            lo, hi = INT_BOUNDS.get(column_type(element), (element.lo, element.hi))
            if (element.lo, element.hi) != (lo, hi) or is_set:
                out.append(Rule("range", name, lo=element.lo, hi=element.hi, events=evs, is_set=is_set))
    return out


def _arg_fields(m: ir.Machine) -> list[tuple[str, ir.Type, tuple[str, ...]]]:
    """(parameter, type, events declaring it with that type), grouped by type, sorted by name."""
    groups: dict[tuple[str, str], tuple[ir.Type, list[str]]] = {}
    for e in m.events:
        for p in e.params:
            groups.setdefault((p.name, str(p.type)), (p.type, []))[1].append(e.name)
    return [(name, t, tuple(evs)) for (name, _), (t, evs) in sorted(groups.items())]


def check_rules(row: dict[str, Any], rule_list: list[Rule],
                by_event: dict[Any, list[Rule]] | None = None) -> str | None:
    """The first failing rule's reason for a type-correct row, or None. `by_event` (filled on the way) keeps, per
    event, the rules that apply to it, in order, so a long file does not test every rule's event list on every row."""
    event = row.get("event")
    applicable = None if by_event is None else by_event.get(event)
    if applicable is None:
        applicable = [r for r in rule_list if not r.events or event in r.events]
        if by_event is not None and len(by_event) < 1024:  # unknown event names in a bad file stay uncached
            by_event[event] = applicable
    for r in applicable:
        reason = _rule_failure(r, row.get(r.column))
        if reason:
            return reason
    return None


def _rule_failure(r: Rule, value: Any) -> str | None:
    if r.kind == "missing":
        return f"missing:{r.column}" if value is None else None
    if value is None:
        return None
    if r.kind == "not_in":
        return None if value in r.allowed else f"unknown:{r.column}"
    if r.kind == "null_element":
        return f"null_element:{r.column}" if any(x is None for x in value) else None
    items = value if r.is_set else [value]
    if r.kind == "member":
        return None if all(x in r.allowed for x in items) else f"unknown_member:{r.column}"
    ok = all(_int_text(x) is not None and r.lo <= int(x) <= r.hi for x in items)
    return None if ok else f"out_of_range:{r.column}"


def _int_text(x: Any) -> int | None:
    if isinstance(x, int) and not isinstance(x, bool):
        return x
    return int(x) if isinstance(x, str) and re.fullmatch(r"-?[0-9]+", x) else None


# ---------------------------------------------------------------- typed rows


class TraceRow(dict[str, Any]):
    """A validated row, as the Python checker holds it. Read as a state, ``state`` is its ``to_state`` (the row is
    its own post-state: the variables and keys are its columns), so the checker needs no copy of it per row."""

    __slots__ = ()

    def __missing__(self, name: str) -> Any:
        if name == "state":
            return self["to_state"]
        raise KeyError(name)


_SHARE_PROBE = 4_096  # rows after which a column whose values are mostly distinct (a timestamp) is no longer shared
_SHARE_MAX = 1 << 20  # distinct values kept per shared column


@dataclass(slots=True)
class RowShape:
    """How a validated row's values become the Python checker's values: sets become frozensets of their element
    type, and equal strings, ints and sets are one object shared by every row holding them (a state name, a key or
    a producer id repeats over many rows; without sharing each row would hold copies, ~40 % of its memory)."""

    sets: dict[str, ir.Type] = field(default_factory=dict)
    _shared: dict[str, dict[Any, Any]] = field(default_factory=dict)  # column → value → the one object
    _unshared: set[str] = field(default_factory=set)
    _rows: int = 0

    @classmethod
    def of(cls, m: ir.Machine) -> RowShape:
        fields: list[tuple[str, ir.Type]] = [(f.name, f.type) for f in (*m.keys, *m.variables)]
        fields += [(arg_column(p.name), p.type) for e in m.events for p in e.params]
        return cls({name: t.element for name, t in fields if isinstance(t, ir.SetType)})

    def typed(self, row: dict[str, Any]) -> TraceRow:
        self._rows += 1
        if self._rows == _SHARE_PROBE:  # stop sharing the columns whose values rarely repeat
            for name in [n for n, values in self._shared.items() if len(values) > _SHARE_PROBE // 2]:
                del self._shared[name]
                self._unshared.add(name)
        out = TraceRow()
        for name, value in row.items():
            if value is not None and name in self.sets:
                value = frozenset(_element(x, self.sets[name]) for x in value)
            kind = type(value)
            if (kind is str or kind is int or kind is frozenset) and name not in self._unshared:
                values = self._shared.setdefault(name, {})
                same = values.get(value)
                if same is not None:
                    value = same
                elif len(values) < _SHARE_MAX:
                    values[value] = value
            out[name] = value
        return out


def _element(x: Any, t: ir.Type) -> Any:
    if isinstance(t, ir.IntType):
        return int(x)
    if isinstance(t, ir.BoolType):
        return x in (True, "true")
    return x


# ---------------------------------------------------------------- quarantine


@dataclass(slots=True)
class Quarantine:
    """Malformed rows: counted per reason code, and written as JSON lines to `<out>/quarantine/part-python.jsonl`."""

    out_dir: str | None = None
    counts: dict[str, int] = field(default_factory=dict)
    _file: Any = None

    def add(self, machine: str, source: str, line: int | None, reason: str, raw: str) -> None:
        code = reason.split(":", 1)[0]
        self.counts[code] = self.counts.get(code, 0) + 1
        if self.out_dir is None:
            return
        if self._file is None:
            folder = os.path.join(self.out_dir, "quarantine")
            os.makedirs(folder, exist_ok=True)
            self._file = open(os.path.join(folder, "part-python.jsonl"), "w", encoding="utf-8")  # noqa: SIM115
        record = {"machine": machine, "source": source, "line": line, "reason": reason, "raw": raw}
        self._file.write(json.dumps(record, ensure_ascii=False) + "\n")

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


# ---------------------------------------------------------------- reading


def read_rows(spec: Spec | None, machine: str, sources: Iterable[Source], quarantine: Quarantine,
              batch_rows: int = 65_536) -> Iterator[TraceRow]:
    """Validated rows of one machine folder, file by file (Parquet batch by batch); the rest to `quarantine`.

    `spec` is None when the folder is not a loaded machine: every row is quarantined (`unknown_machine`).
    """
    if spec is None:
        unknown = f"unknown_machine:{machine or '(no machine folder)'}"
        for src in sources:
            for line, raw, unreadable in _raw_records(src):
                quarantine.add(machine, src.path, line, unreadable or unknown, raw)
        return
    cols = columns(spec.machine)
    typed = dict(v2_columns(spec.machine))
    rule_list = rules(spec.machine)
    by_event: dict[Any, list[Rule]] = {}
    shape = RowShape.of(spec.machine)
    for src in sources:
        records = _json_rows(src, cols) if src.format == "json" else _parquet_rows(src, cols, batch_rows, typed)
        for line, row, raw, reason in records:
            if reason is None:
                assert row is not None
                reason = _row_reason(row, machine, rule_list, by_event)
            if reason is not None:
                quarantine.add(machine, src.path, line, reason, raw())
                continue
            assert row is not None
            yield shape.typed(row)


def _row_reason(row: dict[str, Any], machine: str, rule_list: list[Rule],
                by_event: dict[Any, list[Rule]]) -> str | None:
    if row.get("machine") is not None and row["machine"] != machine:
        return "wrong_machine:machine"
    return check_rules(row, rule_list, by_event)


Record = tuple[int | None, dict[str, Any] | None, Any, str | None]  # line, row, raw() thunk, reason
UNREADABLE = "unreadable_file"


def _json_rows(src: Source, cols: list[tuple[str, str]]) -> Iterator[Record]:
    # bytes that are not UTF-8 come through as lone surrogates (surrogateescape): such a line is malformed, as in
    # Spark's JSON reader, never a row with replacement characters in its values
    with open(src.path, encoding="utf-8", errors="surrogateescape") as f:
        for n, line in enumerate(f, 1):
            text = line.rstrip("\n").removeprefix("\ufeff")  # a byte order mark opening a line: Jackson skips it
            if not text.strip():
                continue
            if _NOT_UTF8.search(text):
                yield n, None, (lambda t=text: _replaced(t)), "malformed"
                continue
            try:
                rows = parse_json_line(text, cols)
            except (ValueError, Malformed):
                yield n, None, (lambda t=text: t), "malformed"
                continue
            for row in rows:
                yield n, row, (lambda t=text: t), None


_NOT_UTF8 = re.compile("[\udc80-\udcff]")  # what surrogateescape makes of a byte that is not UTF-8


def _replaced(text: str) -> str:
    """A line with bytes that are not UTF-8, those bytes as U+FFFD (for the quarantine, which is UTF-8 JSON)."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _parquet_rows(src: Source, cols: list[tuple[str, str]], batch_rows: int,
                  typed: dict[str, str]) -> Iterator[Record]:
    n = 0
    for batch in _parquet_batches(src.path, batch_rows):
        if isinstance(batch, str):
            yield None, None, (lambda why=batch: why), UNREADABLE
            return
        schema, records = batch
        problem = file_schema_problem(schema, cols, typed)
        footer = typed_footer(schema)
        if footer is not None and not problem:
            records = decoded(records, *footer)
        for record in records:
            n += 1
            if problem:
                yield n, None, (lambda r=record: json.dumps(r, default=str)), f"bad_file_schema:{problem}"
                continue
            row = {name: record.get(name) for name, _ in cols}
            yield n, row, (lambda r=row: json.dumps(r, default=str)), None


def _parquet_batches(path: str, batch_rows: int = 65_536) -> Iterator[tuple[Any, list[dict[str, Any]]] | str]:
    """(the file's Arrow schema, a batch of its records), batch by batch (a row group at a time, so a break keeps
    the groups before it); where the file cannot be read from on, the reader's message instead, and nothing after."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
        for group in range(pf.num_row_groups):
            for batch in pf.iter_batches(batch_size=batch_rows, row_groups=[group]):
                yield pf.schema_arrow, batch.to_pylist()
    except (OSError, pa.ArrowException) as e:
        yield _unreadable_reason(e)


def parquet_footer(path: str) -> tuple[Any, str | None]:
    """(a Parquet file's Arrow schema, None), or (None, why the footer cannot be read) — the same message as the
    Python checker's `unreadable_file` rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.read_schema(path), None
    except (OSError, pa.ArrowException) as e:
        return None, _unreadable_reason(e)


def _unreadable_reason(e: Exception) -> str:
    return f"{type(e).__name__}: {e}"


def typed_footer(schema: Any) -> tuple[str, dict[str, list[str]]] | None:
    """(machine, coded column -> names) of a typed (v2) file, from its footer; None for a v1 file."""
    meta = schema.metadata or {}
    if meta.get(b"kcoord.format") != FORMAT_V2.encode():
        return None
    try:
        names = json.loads(meta.get(b"kcoord.codes", b"{}"))
    except ValueError:
        names = {}
    return meta.get(b"kcoord.machine", b"").decode("utf-8", "replace"), names if isinstance(names, dict) else {}


def unknown_code(code: int) -> str:
    """What a code the file's footer has no name for reads as: not a name, so the row is quarantined (`unknown`,
    `unknown_member`) with the code in its raw text; the Spark reader says the same."""
    return f"#{code}"


def decoded(records: list[dict[str, Any]], machine: str, names: dict[str, list[str]]) -> list[dict[str, Any]]:
    """Rows of a typed file as rows of names: codes decoded with the file's own names, `machine` from the footer."""
    def name(column: list[str], code: Any) -> Any:
        if code is None:
            return None
        return column[code] if 0 <= code < len(column) else unknown_code(code)

    for r in records:
        r["machine"] = machine
        for column, values in names.items():
            v = r.get(column)
            if isinstance(v, list):
                r[column] = [name(values, x) for x in v]
            elif v is not None:
                r[column] = name(values, v)
    return records


def file_schema_problem(schema: Any, cols: list[tuple[str, str]],
                        typed: dict[str, str] | None = None) -> str | None:
    """Why a Parquet file's schema does not fit the machine's columns (an absent column is fine: its rows are then
    `missing`), or None. A typed (v2) file fits when its coded columns and integers are integers, its lists lists of
    their element's type (codes and integers of any width)."""
    import pyarrow as pa

    if typed_footer(schema) is not None:
        return _typed_schema_problem(schema, typed or {})
    strings = (pa.string(), pa.large_string())
    small = (pa.int8(), pa.int16(), pa.uint8(), pa.uint16())  # narrower integers Spark's reader widens, as we do
    accepted = {"string": strings, "int64": (pa.int64(), pa.int32(), pa.uint32(), *small),
                "int32": (pa.int32(), *small),
                "bool": (pa.bool_(),), "list<string>": (pa.list_(pa.string()), pa.large_list(pa.string()))}
    for name, typ in cols:
        idx = schema.get_field_index(name)
        if idx < 0:
            continue
        found = schema.field(idx).type
        if typ == "string" and pa.types.is_dictionary(found):  # dictionary-encoded strings (low-cardinality
            found = found.value_type  # columns: kind, event, states) are strings to Spark's reader too
        if found not in accepted[typ]:
            return name
    return None


def _typed_schema_problem(schema: Any, typed: dict[str, str]) -> str | None:
    """The first column of a typed file whose type does not fit its v2 type (`traceschema.v2_columns`)."""
    import pyarrow as pa

    def fits(found: Any, typ: str) -> bool:
        if typ.startswith("list<"):
            return bool(pa.types.is_list(found) or pa.types.is_large_list(found)) and fits(found.value_type, typ[5:-1])
        if typ.startswith("int"):
            return bool(pa.types.is_integer(found))
        if typ == "string":
            return found in (pa.string(), pa.large_string()) or (
                pa.types.is_dictionary(found) and found.value_type in (pa.string(), pa.large_string()))
        return bool(found == pa.bool_())

    for name, typ in typed.items():
        idx = schema.get_field_index(name)
        if idx >= 0 and not fits(schema.field(idx).type, typ):
            return name
    return None


def _raw_records(src: Source) -> Iterator[tuple[int | None, str, str | None]]:
    """(line, raw text, `unreadable_file` or None) of every record of a file, checked or not."""
    if src.format == "json":
        with open(src.path, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                if line.strip():
                    yield n, line.rstrip("\n"), None
        return
    n = 0
    for batch in _parquet_batches(src.path):
        if isinstance(batch, str):
            yield None, batch, UNREADABLE
            return
        for record in batch[1]:
            n += 1
            yield n, json.dumps(record, default=str), None
