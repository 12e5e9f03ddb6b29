"""The reference checker's per-key checks: one machine's rows of some keys (all of them, or one bucket), in order.

Owns `MachineChecker` (the rows of each key sorted into contexts, `Ctx`: the row, its pre-state, the previous row of
its key), one function per row check, named as in `checks.CHECKS` and in `sparkcheck` (`illegal_transition`,
`discontinuity`, `guard_false`, `effect_mismatch`, `frame_mismatch`, `reject_changed_state`, `wrong_error`,
`invariant`, `step`), `within` (the per-key trace property), and each violation's witness rows (rendered later by
`pycheck`). Values (effects, bounds) are evaluated by the model's Python evaluator (`kcoord.model.pyexpr`), the code
the runtime tables run; conditions (guards, preconditions, invariants, steps) under SQL's three-valued logic
(`nullexpr`), as the SQL checkers evaluate them on rows with nulls (see `checks`).
Must not import: pyspark, kcoord.cli.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kcoord.model import ir
from kcoord.model.pyexpr import PythonEvaluator

from . import witness as W
from .checks import TRACE_FORMS, Spec, Violation, location, row_check_location
from .nullexpr import NullEvaluator
from .readers import TraceRow, columns

Row = TraceRow  # a row is also its own post-state (`state` reads its `to_state`)
Found = tuple[str, str, str]  # check, name, message


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
        self.cond = NullEvaluator()
        self.names = [name for name, _ in columns(self.m) if name != "machine"]  # (the order: see `checks`)
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
        return (r["seq"], *(orderable(r[n]) for n in self.names))

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
        """The condition `e` is true on the row (SQL's `coalesce(e, false)`: unknown, from a null, does not hold); an
        evaluation that fails (a value of the wrong shape) counts as false."""
        try:
            return self.cond.eval(e, pre, args, post) is True
        except (TypeError, KeyError, ValueError):
            return False

    def not_false(self, e: ir.Expr, pre: Mapping[str, Any], args: Mapping[str, Any] | None = None) -> bool:
        """The condition `e` is true or unknown (SQL's `coalesce(e, true)`: a transition's precondition that reads a
        null argument is not failed); an evaluation that fails counts as false."""
        try:
            return self.cond.eval(e, pre, args) is not False
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


def orderable(v: Any) -> tuple[int, Any]:
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
    if k.holds(sr.guard, c.pre, args) and k.not_false(sr.assumes, c.pre, args):
        return []
    return [("guard_false", sr.label, f"the guard of {sr.label} is false on the pre-state")]


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
    if c.row["kind"] in ("reject", "load") or c.pre is None or k.spec_row(c.row) is None:
        return []  # (a row whose index names no spec row of its event and kind: no known step, as for its guard)
    post, args = c.row, k.args(c)
    return [("step", s.name, f"step property {s.name} is false on this row")
            for s in k.m.steps if s.event in (None, c.row["event"]) and not k.holds(s.expr, c.pre, args, post)]


# ---------------------------------------------------------------- within


def entering(k: MachineChecker, c: Ctx, states: Sequence[str]) -> bool:
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
            if not entering(k, c, prop.states_from):
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
