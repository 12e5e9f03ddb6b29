"""The pure-Python reference checker: every check of `checks` on small traces, the oracle for the Spark checker.

Owns: `check_paths` (files → violations, quarantine counts) and one function per check, named as in `checks.CHECKS`
and in `sparkcheck` (which computes the same things with Spark SQL): `illegal_transition`, `discontinuity`,
`guard_false`, `effect_mismatch`, `frame_mismatch`, `reject_changed_state`, `wrong_error`, `invariant`, `step`, and
`within` for the per-key trace property; the cross-key ones (`exclusive`, `monotonic`, `before`, `fenced`) are
`_<form>_local` / `_<form>_reduce` pairs in `_CROSS_KEY`. Expressions are evaluated by the model's Python evaluator
(`kcoord.model.pyexpr`), the code the runtime tables run.

Memory: readers stream rows file by file; a machine of up to `Options.max_rows_in_memory` rows is checked in
memory (~1.2 KB per Transaction row: equal values are shared between rows, and a row is its own post-state). A larger
one is spilled to `Options.buckets` files by key (`_Rows`) and checked a bucket at a time: a key's rows are all in one
bucket, so the row checks and `within` run per bucket; the cross-key properties (`exclusive`, `monotonic`, `before`,
`fenced`) are map/reduce pairs — the map emits small tuples per group, spilled by group, the reduce reads one group
bucket at a time — and the violations they find get their witness from their key's bucket, read again. A bucket
that itself holds more than `max_rows_in_memory` rows is split again by key. Peak memory is then about
`max_rows_in_memory` rows whatever the trace's size (unless one key alone has more). A `before` or `fenced`
property re-reads the other machine's files and keeps only the projection it needs.
Must not import: pyspark, kcoord.cli.
"""

from __future__ import annotations

import gc
import json
import os
import pickle
import shutil
import tempfile
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from kcoord.model import ir
from kcoord.model.pyexpr import PythonEvaluator

from . import MAX_ROWS_IN_MEMORY
from . import witness as W
from .checks import ACCEPTED_KINDS, CHECKS, NEVER, TRACE_FORMS, Spec, Violation, location, row_check_location
from .readers import Quarantine, Source, TraceRow, columns, discover, read_rows

Row = TraceRow  # a row is also its own post-state (`state` reads its `to_state`)
Found = tuple[str, str, str]  # check, name, message


@dataclass(slots=True)
class Options:
    max_witnesses: int = 1000  # violations beyond this many (per run) get no witness
    max_rows_in_memory: int = MAX_ROWS_IN_MEMORY  # a machine with more is spilled to disk, checked bucket by bucket
    buckets: int = 64  # spill files per machine (and for the cross-key properties' tuples)
    spill_dir: str | None = None  # where spill files go (a temporary folder in it); None: the system's


@dataclass(slots=True)
class Result:
    violations: list[Violation] = field(default_factory=list)
    rows_read: dict[str, int] = field(default_factory=dict)
    quarantine: Quarantine = field(default_factory=Quarantine)
    not_checked: list[str] = field(default_factory=list)
    spilled: dict[str, int] = field(default_factory=dict)  # machine → buckets it was checked in, if from disk


# ---------------------------------------------------------------- entry point


def check_paths(paths: Sequence[str], machines: Mapping[str, ir.Machine], out_dir: str | None = None,
                options: Options | None = None, progress: Callable[[str], None] | None = None) -> Result:
    """Check every trace file under `paths` against `machines`; malformed rows go to `<out_dir>/quarantine/`."""
    options = options or Options()
    sources = discover(paths, machines, [out_dir or ""])
    by_machine: dict[str, list[Source]] = defaultdict(list)
    for s in sources:
        by_machine[s.machine].append(s)
    result = Result(quarantine=Quarantine(out_dir))
    specs = {name: Spec.of(m) for name, m in machines.items()}
    collecting = gc.isenabled()
    gc.disable()  # millions of rows, no cycles among them: the cyclic collector would rescan them ~15 % of the time
    try:
        for name in sorted(by_machine):
            if progress:
                progress(name)
            spec = specs.get(name)
            rows = read_rows(spec, name, by_machine[name], result.quarantine)
            if spec is None:
                for _ in rows:  # every row is quarantined
                    pass
                continue
            with _Rows(options, [name for name, _ in columns(spec.machine)]) as held:
                for r in rows:
                    held.add(r)
                result.rows_read[name] = held.count
                violations, not_checked = _check_machine(spec, held, _OtherRows(specs, by_machine))
                if held.spilled:
                    result.spilled[name] = len(held.parts())
            result.violations += violations
            result.not_checked += not_checked
    finally:
        result.quarantine.close()
        if collecting:
            gc.enable()
    result.violations.sort(key=sort_key)
    _attach_witnesses(result.violations, options.max_witnesses, specs)
    return result


def _check_machine(spec: Spec, held: _Rows, other: _OtherRows) -> tuple[list[Violation], list[str]]:
    """Row checks and `within` bucket by bucket; the cross-key properties mapped from every bucket, then reduced;
    their findings resolved against their key's bucket (the one in memory, or read again)."""
    cross = _CrossKey(spec, other, held.new_spill())
    violations: list[Violation] = []
    checker = None
    for part in held.parts():
        checker = None  # the previous bucket's rows go before the next bucket's come in
        checker = MachineChecker(spec, held.rows(part), held.trace_end)
        checker.run()
        violations += checker.violations()
        cross.map(checker)
    cross.map_other()
    pending: dict[Part, list[tuple[str, int, Found]]] = defaultdict(list)
    for key, pos, found in cross.reduce():
        pending[held.part_of(key)].append((key, pos, found))
    for part, items in sorted(pending.items()):
        if held.spilled or checker is None:
            checker = None
            checker = MachineChecker(spec, held.rows(part), held.trace_end)
        violations += [checker.violation(checker.ctx[key][pos], found) for key, pos, found in items]
    return violations, cross.not_checked


def sort_key(v: Violation) -> tuple[str, int, str, int, str]:
    return v.machine, _CHECK_ORDER[v.check], v.key, v.seq, v.name


_CHECK_ORDER = {c: i for i, c in enumerate(CHECKS)}


@dataclass(slots=True)
class _OtherRows:
    """Another machine's rows, re-read on demand (for `before` and `fenced`)."""

    specs: dict[str, Spec]
    sources: dict[str, list[Source]]

    def has(self, machine: str) -> bool:
        return machine in self.sources and machine in self.specs

    def rows(self, machine: str) -> Iterator[Row] | None:
        if not self.has(machine):
            return None
        return read_rows(self.specs[machine], machine, self.sources[machine], Quarantine())


# ---------------------------------------------------------------- rows in memory, or spilled by key


class _Spill:
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


class _Rows:
    """One machine's validated rows: a list until there are more than `max_rows_in_memory`, then spilled by key to
    `buckets` files in a temporary folder (removed on exit), each row as the tuple of its values in column order
    (`names`: every validated row has exactly these columns). A bucket itself holding more than `max_rows_in_memory`
    rows (a very large trace) is split again by key into sub-buckets of about half that, before any is read, so one
    part's rows always fit (unless a single key has more). Also the trace's last `ts_ms`."""

    def __init__(self, options: Options, names: list[str]) -> None:
        self.options = options
        self.names = names
        self.count = 0
        self.trace_end: int | None = None
        self._list: list[Row] | None = []
        self._folder: str | None = None
        self._rows: _Spill | None = None
        self._counts = [0] * options.buckets
        self._split: dict[int, _Spill] = {}
        self._parts: list[Part] | None = None
        self._spills: list[_Spill] = []

    def __enter__(self) -> _Rows:
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
        sub = self._open_spill(min(_Spill.MAX_FILES, -(-rows // max(1, self.options.max_rows_in_memory // 2))))
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

    def new_spill(self) -> _Spill | None:
        """More bucket files in this machine's spill folder (for the cross-key tuples), or None in memory."""
        return self._open_spill(self.options.buckets) if self.spilled else None

    def _open_spill(self, n: int) -> _Spill:
        if self._folder is None:
            self._folder = tempfile.mkdtemp(prefix="kcoord-pycheck-", dir=self.options.spill_dir)
        folder = os.path.join(self._folder, str(len(self._spills)))
        os.mkdir(folder)
        spill = _Spill(folder, n)
        self._spills.append(spill)
        return spill

    def rows(self, part: Part) -> list[Row]:
        if self._rows is None:
            assert self._list is not None
            return self._list
        source = self._rows if len(part) == 1 else self._split[part[0]]
        names = self.names  # (pickling keeps equal values shared within a chunk of rows: no need to share them again)
        return [TraceRow(zip(names, values, strict=True)) for values in source.read(part[-1])]


# ---------------------------------------------------------------- per-machine state


@dataclass(slots=True)
class Ctx:
    """One row with what the checks need: its pre-state (None when unknown), the previous row of its key."""

    row: Row
    pre: Mapping[str, Any] | None
    prev: Row | None
    fresh: bool
    pos: int  # position in the key's sequence (-1 for seq -1 rows)

    @property
    def pre_state(self) -> str | None:
        return None if self.pre is None else str(self.pre["state"])


class MachineChecker:
    """The rows of some keys of one machine (all of them, or one bucket): their row checks and `within`."""

    def __init__(self, spec: Spec, rows: Iterable[Row], trace_end: int | None) -> None:
        self.spec = spec
        self.m = spec.machine
        self.ev = PythonEvaluator()
        self.names = [name for name, _ in columns(self.m)]
        self.ir_rows = {x.index: x for x in self.m.rows}  # `Machine.rows` sorts on every call
        sequences: dict[str, list[Row]] = defaultdict(list)
        self.orphans: list[Row] = []
        for r in rows:
            (self.orphans if r["seq"] == -1 else sequences[r["key"]]).append(r)
        self.ctx: dict[str, list[Ctx]] = {}
        for key in sorted(sequences):
            seq = sequences[key]
            _sort_by_seq(seq, self._order)
            self.ctx[key] = self._contexts(seq)
        self.trace_end = trace_end
        self.found: list[tuple[Ctx, Found]] = []

    def _order(self, r: Row) -> tuple[Any, ...]:
        return (r["seq"], *(_orderable(r[n]) for n in self.names))

    def run(self) -> None:
        for cs in self.ctx.values():
            for c in cs:
                self._row_checks(c)
        for r in self.orphans:
            self._row_checks(Ctx(r, self._fresh(r), None, True, -1))
        for prop in self.m.traces:
            if prop.form == "within":
                self.found += within(self, prop)

    def violations(self) -> list[Violation]:
        return [self.violation(c, f) for c, f in self.found]

    def _contexts(self, seq: list[Row]) -> list[Ctx]:
        out = []
        prev: Row | None = None
        for i, r in enumerate(seq):
            fresh = self.starts_fresh(prev, r)
            if fresh:
                pre = None if r["kind"] == "load" else self._fresh(r)
            else:
                assert prev is not None
                pre = prev  # the previous row is the post-state it left
            out.append(Ctx(r, pre, prev, fresh, i))
            prev = r
        return out

    def starts_fresh(self, prev: Row | None, r: Row) -> bool:
        """The row starts a new instance: the first row, the first after a final state, or a row from the initial
        state after a terminal one (see `checks`)."""
        if prev is None or prev["to_state"] in self.spec.final_states:
            return True
        return prev["to_state"] in self.spec.terminal_states and r["from_state"] == self.spec.initial

    def _fresh(self, r: Row) -> dict[str, Any]:
        pre = dict(self.spec.defaults)
        pre.update({k.name: r[k.name] for k in self.m.keys})
        pre["state"] = self.spec.initial
        return pre

    def args(self, c: Ctx) -> dict[str, Any]:
        r = c.row
        out = {p.name: r[f"arg_{p.name}"] for p in self.spec.event_params(r["event"])}
        out["pending"] = bool(r["pending"]) or c.pre_state in self.spec.pending_states
        return out

    def holds(self, e: ir.Expr, pre: Mapping[str, Any], args: Mapping[str, Any] | None = None,
              post: Mapping[str, Any] | None = None) -> bool:
        """`e` on concrete values; an evaluation that fails (a value of the wrong shape) counts as false."""
        try:
            return self.ev.eval(e, pre, args, post) is True
        except (TypeError, KeyError, ValueError):
            return False

    def value(self, e: ir.Expr, pre: Mapping[str, Any], args: Mapping[str, Any]) -> Any:
        try:
            return self.ev.eval(e, pre, args)
        except (TypeError, KeyError, ValueError):
            return _NO_VALUE

    def spec_row(self, r: Row) -> ir.Row | None:
        """The spec row the row's index names, when it has the row's event and kind."""
        sr = self.spec.rows.get(r["row"])
        if sr is None or sr.event != r["event"] or sr.kind != r["kind"]:
            return None
        return self.ir_rows[sr.index]

    def _row_checks(self, c: Ctx) -> None:
        orphan = c.row["seq"] == -1
        for check in (illegal_transition, discontinuity, guard_false, effect_mismatch, frame_mismatch,
                      reject_changed_state, wrong_error, invariant, step):
            if orphan and check.__name__ not in ORPHAN_CHECKS:
                continue
            self.found += [(c, f) for f in check(self, c)]

    def violation(self, c: Ctx, f: Found) -> Violation:
        check, name, message = f
        r = c.row
        if check in TRACE_FORMS:
            prop = next(p for p in self.m.traces if p.name == name)
            where = location(prop.span)
        elif check in ("invariant", "step"):
            spans = {x.name: x.span for x in self.m.invariants} | {x.name: x.span for x in self.m.steps}
            where = location(spans[name])
        else:
            where = row_check_location(self.spec, check, r["row"], r["event"])
        seq_from = c.prev["seq"] if (c.prev is not None and check == "discontinuity") else r["seq"]
        return Violation(self.m.name, r["key"], check, name, r["seq"], seq_from, r["seq"], where, message,
                         witness_rows=_segments_ref(self, c, check, name))


_NO_VALUE = object()
ORPHAN_CHECKS = ("illegal_transition", "discontinuity", "reject_changed_state", "wrong_error")


def _sort_by_seq(seq: list[Row], order: Callable[[Row], tuple[Any, ...]]) -> None:
    """Sort a key's rows by `order` (seq, then every column): by seq alone, then the runs of an equal seq (rare: only
    in a broken trace) by the whole key — the same order, without building the whole key for every row."""
    seq.sort(key=lambda r: r["seq"])
    i = 0
    while i < len(seq) - 1:
        j = i + 1
        while j < len(seq) and seq[j]["seq"] == seq[i]["seq"]:
            j += 1
        if j - i > 1:
            seq[i:j] = sorted(seq[i:j], key=order)
        i = j


def _orderable(v: Any) -> tuple[int, Any]:
    """Spark's ascending order: nulls first; sets as their sorted elements."""
    if v is None:
        return (0, 0)
    if isinstance(v, frozenset):
        return (1, sorted(v))
    return (1, v)


# ---------------------------------------------------------------- row checks


def illegal_transition(k: MachineChecker, c: Ctx) -> list[Found]:
    r = c.row
    if (r["from_state"], r["event"], r["to_state"], r["row"], r["kind"]) in k.spec.table:
        return []
    return [("illegal_transition", "", f"{r['from_state']} --{r['event']}#{r['row']} ({r['kind']})--> "
                                       f"{r['to_state']} is not in the table")]


def discontinuity(k: MachineChecker, c: Ctx) -> list[Found]:
    r, prev, reasons = c.row, c.prev, []
    if r["seq"] == -1:
        if r["kind"] != "reject" or r["from_state"] != k.spec.initial:
            reasons.append(f"a seq -1 row must be a rejection from {k.spec.initial}")
    else:
        snapshot_from_scratch = r["kind"] == "load" and r["from_state"] == k.spec.initial
        if prev is not None and not c.fresh and r["from_state"] != prev["to_state"] and not snapshot_from_scratch:
            reasons.append(f"from_state {r['from_state']} but the previous row ended in {prev['to_state']}")
        if c.fresh and r["kind"] != "load" and r["from_state"] != k.spec.initial:
            reasons.append(f"a first row starts from {r['from_state']}, not {k.spec.initial}")
        if prev is not None and prev["coordinator_epoch"] == r["coordinator_epoch"] and r["seq"] != prev["seq"] + 1:
            reasons.append(f"seq {r['seq']} follows {prev['seq']} in coordinator epoch {r['coordinator_epoch']}")
    return [("discontinuity", "", "; ".join(reasons))] if reasons else []


def guard_false(k: MachineChecker, c: Ctx) -> list[Found]:
    sr = k.spec_row(c.row)
    if not isinstance(sr, ir.Transition) or c.pre is None:
        return []
    args = k.args(c)
    assumed = k.holds(sr.assumes, c.pre, args) or _unevaluated(k, sr.assumes, c.pre, args)
    if k.holds(sr.guard, c.pre, args) and assumed:
        return []
    return [("guard_false", sr.label, f"the guard of {sr.label} is false on the pre-state")]


def _unevaluated(k: MachineChecker, e: ir.Expr, pre: Mapping[str, Any], args: Mapping[str, Any]) -> bool:
    """A precondition that reads an argument the runtime never computed (null in the row: it is computed only when
    the chosen row reads it) is not evaluated, as the runtime does not evaluate it: it cannot fail."""
    if not any(v is None for v in args.values()):
        return False
    try:
        k.ev.eval(e, pre, {n: v for n, v in args.items() if v is not None}, None)
    except (TypeError, KeyError, ValueError):
        return True
    return False


def _changed(k: MachineChecker, c: Ctx, names: Iterable[str], expected: Callable[[str], Any]) -> list[str]:
    return [n for n in names if expected(n) is _NO_VALUE or expected(n) != c.row[n]]


def effect_mismatch(k: MachineChecker, c: Ctx) -> list[Found]:
    sr = k.spec_row(c.row)
    if not isinstance(sr, ir.Transition) or c.pre is None:
        return []
    pre, args = c.pre, k.args(c)
    effects = {ef.var: ef.value for ef in sr.effects}
    values = {v: k.value(e, pre, args) for v, e in effects.items()}
    bad = _changed(k, c, [v.name for v in k.m.variables if v.name in effects], values.__getitem__)
    return [("effect_mismatch", ",".join(bad), f"{sr.label} assigns {', '.join(bad)} otherwise")] if bad else []


def frame_mismatch(k: MachineChecker, c: Ctx) -> list[Found]:
    sr = k.spec_row(c.row)
    if not isinstance(sr, ir.Transition) or c.pre is None:
        return []
    assigned = {ef.var for ef in sr.effects}
    pre = c.pre
    bad = _changed(k, c, [v.name for v in k.m.variables if v.name not in assigned], pre.__getitem__)
    return [("frame_mismatch", ",".join(bad), f"{sr.label} does not assign {', '.join(bad)}, yet they changed")] \
        if bad else []


def reject_changed_state(k: MachineChecker, c: Ctx) -> list[Found]:
    if c.row["kind"] != "reject" or c.pre is None:
        return []
    pre = c.pre
    bad = _changed(k, c, [v.name for v in k.m.variables], pre.__getitem__)
    return [("reject_changed_state", ",".join(bad), f"a rejection changed {', '.join(bad)}")] if bad else []


def wrong_error(k: MachineChecker, c: Ctx) -> list[Found]:
    sr = k.spec_row(c.row)
    if sr is None or c.pre is None:
        return []
    expected = sr.error if isinstance(sr, ir.Rejection) else sr.answer
    reasons = []
    if c.row["error"] != expected:
        reasons.append(f"error {c.row['error']}, but {sr.label} answers {expected}")
    if isinstance(sr, ir.Rejection) and not (k.holds(sr.guard, c.pre, k.args(c))
                                             and k.holds(sr.assumes, c.pre, k.args(c))):
        reasons.append(f"the condition of {sr.label} is false on the pre-state")
    return [("wrong_error", sr.label, "; ".join(reasons))] if reasons else []


def invariant(k: MachineChecker, c: Ctx) -> list[Found]:
    post = c.row
    return [("invariant", i.name, f"invariant {i.name} is false after the row")
            for i in k.m.invariants if not k.holds(i.expr, post)]


def step(k: MachineChecker, c: Ctx) -> list[Found]:
    if c.row["kind"] in ("reject", "load") or c.pre is None:
        return []
    post, args = c.row, k.args(c)
    return [("step", s.name, f"step property {s.name} is false on this row")
            for s in k.m.steps if s.event in (None, c.row["event"]) and not k.holds(s.expr, c.pre, args, post)]


# ---------------------------------------------------------------- trace properties


def _fields(r: Mapping[str, Any], names: Sequence[str]) -> tuple[Any, ...]:
    return tuple(_orderable(r[n]) for n in names)


def _running_max(values: list[int]) -> list[int]:
    out, top = [], None
    for v in values:
        top = v if top is None else max(top, v)
        out.append(top)
    return out


def _entering(k: MachineChecker, c: Ctx, states: Sequence[str]) -> bool:
    return c.row["to_state"] in states and (c.pre is None or c.pre_state not in states)


def within(k: MachineChecker, prop: ir.TraceProperty) -> list[tuple[Ctx, Found]]:
    """Per key: entering `states_from`, the key reaches `states_to` by the bound (or the trace ends before it)."""
    assert prop.bound is not None
    out = []
    for cs in k.ctx.values():
        next_b: list[tuple[int, int] | None] = [None] * len(cs)
        following: tuple[int, int] | None = None
        for i in range(len(cs) - 1, -1, -1):
            if cs[i].row["to_state"] in prop.states_to:
                following = (cs[i].row["ts_ms"], cs[i].row["seq"])
            next_b[i] = following
        for i, c in enumerate(cs):
            if not _entering(k, c, prop.states_from):
                continue
            bound = k.value(prop.bound, c.row, {})
            deadline = c.row["ts_ms"] + bound if isinstance(bound, int) else None
            reached = next_b[i]
            if deadline is None:
                message = "the bound cannot be evaluated"
            elif reached is not None and reached[0] > deadline:
                message = f"entered {c.row['to_state']} at ts {c.row['ts_ms']}, deadline {deadline}, reached " \
                          f"{', '.join(prop.states_to)} at {reached[0]}"
            elif reached is None and k.trace_end is not None and k.trace_end > deadline:
                message = f"entered {c.row['to_state']} at ts {c.row['ts_ms']}, deadline {deadline}, not reached " \
                          f"by the end of the trace ({k.trace_end})"
            else:
                continue
            out.append((c, ("within", prop.name, message)))
    return out


# The cross-key properties, each a map/reduce pair over tuples (the same code in memory and from spill files):
# `local` maps a checker's keys to (group, item) pairs, `remote` maps the other machine's rows (`before`, `fenced`),
# `reduce` takes one group's items and yields (key, pos, payload) for the rows that break the property, and `finish`
# turns all the hits of one property into findings (key, pos, Found). Items sort on their whole tuple, the position in
# the key's sequence last, so ties between equal rows resolve the same way whatever order the buckets came in.

Group = tuple[Any, ...]
Item = tuple[Any, ...]
Hit = tuple[str, int, Any]  # key, position in the key's sequence, payload


def _exclusive_local(k: MachineChecker, prop: ir.TraceProperty) -> Iterator[tuple[Group, Item]]:
    (var,) = prop.subject
    for key, cs in k.ctx.items():
        starts = _running_max([c.row["ts_ms"] for c in cs])
        for i, c in enumerate(cs):
            end = starts[i + 1] if i + 1 < len(cs) else NEVER
            if c.row["to_state"] in k.spec.final_states or end <= starts[i]:
                continue
            for x in c.row[var]:
                yield (*_fields(c.row, prop.per), x), (starts[i], key, c.row["seq"], end, i)


def _exclusive_reduce(prop: ir.TraceProperty, group: Group, items: list[Item]) -> Iterator[Hit]:
    items.sort()
    latest = -1
    for start, key, _, end, pos in items:
        if start < latest:
            yield key, pos, group[-1]
        latest = max(latest, end)


def _exclusive_finish(prop: ir.TraceProperty, hits: list[Hit]) -> list[tuple[str, int, Found]]:
    """One finding per row: the least element it shares."""
    (var,) = prop.subject
    least: dict[tuple[str, int], Any] = {}
    for key, pos, x in hits:
        least[(key, pos)] = min(least[(key, pos)], x) if (key, pos) in least else x
    per = ", ".join(prop.per)
    return [(key, pos, ("exclusive", prop.name, f"{var} element {x} is also held by another instance with equal "
                                                f"{per}")) for (key, pos), x in least.items()]


def _monotonic_local(k: MachineChecker, prop: ir.TraceProperty) -> Iterator[tuple[Group, Item]]:
    (var,) = prop.subject
    for key, cs in k.ctx.items():
        for c in cs:
            if c.row["kind"] != "reject":  # a rejection changes nothing (see checks.py)
                yield _fields(c.row, prop.per), (c.row["ts_ms"], c.row["seq"], key, c.row[var], c.pos,
                                                 c.row["kind"] == "load")


def _monotonic_reduce(prop: ir.TraceProperty, group: Group, items: list[Item]) -> Iterator[Hit]:
    (var,) = prop.subject
    items.sort()
    top = None
    own: dict[str, Any] = {}  # the maximum of each key's own rows so far (a load is compared with these only)
    for _, _, key, v, pos, load in items:
        seen = own.get(key) if load else top
        if seen is not None and v < seen:
            where = "held before by this instance (a load)" if load else f"seen before for equal {', '.join(prop.per)}"
            yield key, pos, ("monotonic", prop.name, f"{var} = {v} is below {seen}, {where}")
        top = v if top is None else max(top, v)
        own[key] = v if key not in own else max(own[key], v)


def _before_times(rows: Iterable[Mapping[str, Any]], prop: ir.TraceProperty) -> Iterator[tuple[Group, Item]]:
    _, _, _, event = prop.subject
    for r in rows:
        if r["event"] == event and r["kind"] in ACCEPTED_KINDS and r["seq"] != -1:
            yield _fields(r, prop.per), (0, r["ts_ms"])


def _before_local(k: MachineChecker, prop: ir.TraceProperty) -> Iterator[tuple[Group, Item]]:
    _, state, other, _ = prop.subject
    for key, cs in k.ctx.items():
        if other == k.m.name:
            yield from _before_times((c.row for c in cs), prop)
        entered = _state_entered(cs)
        for i, c in enumerate(cs):
            if _entering(k, c, (state,)):
                since = entered[i - 1] if i > 0 else None
                yield _fields(c.pre if c.pre is not None else c.row, prop.per), (1, since, c.row["ts_ms"], key, i)


def _before_reduce(prop: ir.TraceProperty, group: Group, items: list[Item]) -> Iterator[Hit]:
    _, state, other, event = prop.subject
    times = sorted(t[1] for t in items if t[0] == 0)
    for item in items:
        if item[0] != 1:
            continue
        _, since, ts, key, pos = item
        j = bisect_left(times, since) if since is not None else 0
        if j >= len(times) or times[j] > ts:
            window = f"since ts {since}" if since is not None else "before it"
            yield key, pos, ("before", prop.name, f"entered {state} at ts {ts} without a {other}.{event} on "
                                                  f"{', '.join(prop.per)} {window}")


def _state_entered(cs: list[Ctx]) -> list[int]:
    """Per row of a key's sequence: the `ts_ms` of the row that entered its `to_state` (the first row of the run of
    consecutive rows ending in that state)."""
    out: list[int] = []
    for i, c in enumerate(cs):
        same = i > 0 and cs[i - 1].row["to_state"] == c.row["to_state"]
        out.append(out[-1] if same else c.row["ts_ms"])
    return out


def _fenced_latest(rows: Iterable[Mapping[str, Any]], prop: ir.TraceProperty) -> Iterator[tuple[Group, Item]]:
    var = prop.subject[4]
    for r in rows:
        if r["seq"] != -1:
            yield _fields(r, prop.per), (r["ts_ms"], 1, r["seq"], r["key"], r[var], -1)


def _fenced_local(k: MachineChecker, prop: ir.TraceProperty) -> Iterator[tuple[Group, Item]]:
    _, event, param, other, _ = prop.subject
    for key, cs in k.ctx.items():
        if other == k.m.name:
            yield from _fenced_latest((c.row for c in cs), prop)
        for c in cs:
            r = c.row
            if r["event"] == event and r["kind"] in ACCEPTED_KINDS:
                yield _fields(r, prop.per), (r["ts_ms"], 0, r["seq"], key, r[f"arg_{param}"], c.pos)


def _fenced_reduce(prop: ir.TraceProperty, group: Group, items: list[Item]) -> Iterator[Hit]:
    _, event, param, other, var = prop.subject
    items.sort()
    latest = None
    for _, flag, _, key, value, pos in items:
        if flag == 1:
            latest = value
        elif latest is not None and value < latest:
            yield key, pos, ("fenced", prop.name, f"{event}.{param} = {value} is below the latest {other}.{var} = "
                                                  f"{latest}")


@dataclass(frozen=True, slots=True)
class _Form:
    local: Callable[[MachineChecker, ir.TraceProperty], Iterator[tuple[Group, Item]]]
    reduce: Callable[[ir.TraceProperty, Group, list[Item]], Iterator[Hit]]
    remote: Callable[[Iterable[Mapping[str, Any]], ir.TraceProperty], Iterator[tuple[Group, Item]]] | None = None
    other_at: int | None = None  # where the other machine's name is in the property's subject
    finish: Callable[[ir.TraceProperty, list[Hit]], list[tuple[str, int, Found]]] = lambda _, hits: hits


_CROSS_KEY = {
    "exclusive": _Form(_exclusive_local, _exclusive_reduce, finish=_exclusive_finish),
    "monotonic": _Form(_monotonic_local, _monotonic_reduce),
    "before": _Form(_before_local, _before_reduce, _before_times, 2),
    "fenced": _Form(_fenced_local, _fenced_reduce, _fenced_latest, 3),
}


class _CrossKey:
    """One machine's cross-key properties: tuples mapped from each bucket's checker and from the other machine's rows,
    kept per group (in memory, or in `spill`'s files by the group's hash), then reduced a bucket of groups at a time."""

    def __init__(self, spec: Spec, other: _OtherRows, spill: _Spill | None) -> None:
        self.name = spec.machine.name
        self.other = other
        self.spill = spill
        self.groups: dict[tuple[int, Group], list[Item]] = defaultdict(list)
        self.not_checked: list[str] = []
        self.props: dict[int, ir.TraceProperty] = {}
        for i, prop in enumerate(spec.machine.traces):
            form = _CROSS_KEY.get(prop.form)
            if form is None:
                continue
            theirs = self._other(prop)
            if theirs is not None and theirs != self.name and not other.has(theirs):
                self.not_checked.append(f"{self.name}.{prop.name}: no {theirs} rows in the input")
                continue
            self.props[i] = prop

    def _other(self, prop: ir.TraceProperty) -> str | None:
        at = _CROSS_KEY[prop.form].other_at
        return None if at is None else str(prop.subject[at])

    def _add(self, i: int, pairs: Iterable[tuple[Group, Item]]) -> None:
        if self.spill is None:
            for group, item in pairs:
                self.groups[(i, group)].append(item)
        else:
            for group, item in pairs:
                self.spill.add(hash((i, group)) % self.spill.n, (i, group, item))

    def map(self, k: MachineChecker) -> None:
        for i, prop in self.props.items():
            self._add(i, _CROSS_KEY[prop.form].local(k, prop))

    def map_other(self) -> None:
        for i, prop in self.props.items():
            theirs, remote = self._other(prop), _CROSS_KEY[prop.form].remote
            if theirs is not None and theirs != self.name and remote is not None:
                rows = self.other.rows(theirs)
                assert rows is not None
                self._add(i, remote(rows, prop))

    def _bucketed(self) -> Iterator[dict[tuple[int, Group], list[Item]]]:
        if self.spill is None:
            yield self.groups
            return
        for b in range(self.spill.n):
            groups: dict[tuple[int, Group], list[Item]] = defaultdict(list)
            for i, group, item in self.spill.read(b):
                groups[(i, group)].append(item)
            yield groups

    def reduce(self) -> list[tuple[str, int, Found]]:
        """Every property's findings, in property order, then by key and position."""
        hits: dict[int, list[Hit]] = defaultdict(list)
        for groups in self._bucketed():
            for (i, group), items in groups.items():
                hits[i] += _CROSS_KEY[self.props[i].form].reduce(self.props[i], group, items)
        out = []
        for i in sorted(hits):
            found = _CROSS_KEY[self.props[i].form].finish(self.props[i], hits[i])
            out += sorted(found, key=lambda t: (t[0], t[1]))
        return out


# ---------------------------------------------------------------- witnesses


def _segments_ref(k: MachineChecker, c: Ctx, check: str, name: str) -> str:
    """The witness as JSON (rendered later, for the violations that get one)."""
    spec = k.spec
    if c.pos < 0:
        segments = [W.Segment(c.row["key"], c.row["seq"], None, (c.row,))]
    else:
        rows = [x.row for x in k.ctx[c.row["key"]]]
        row_before, shown = W.window(rows, c.pos)
        segments = [W.Segment(c.row["key"], c.row["seq"], W.base_state(spec, row_before), tuple(shown))]
    return W.to_json(spec.name, segments)


def _attach_witnesses(violations: list[Violation], limit: int, specs: Mapping[str, Spec]) -> None:
    """Render the witness of the first `limit` violations; the others keep neither text nor rows."""
    for i, v in enumerate(violations):
        if i >= limit:
            violations[i] = replace(v, witness_rows="")
        else:
            violations[i] = replace(v, witness=render_witness_json(v.witness_rows, v.message, specs))


def render_witness_json(doc: str, message: str, specs: Mapping[str, Spec]) -> str:
    data = json.loads(doc)
    spec = specs[data["machine"]]
    segments = [W.Segment(s["key"], s["at"], s["base"], tuple(s["rows"])) for s in data["segments"]]
    return W.render(spec, segments, message)
