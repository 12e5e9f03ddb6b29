"""Checks of coordinator logs that need the records themselves, not trace rows: the persisted-step relation.

Owns: `STEP_CHECK` and `StepChecker`, the Python evaluation of a machine's persisted-step relation
(`kcoord.model.persisted`, committed as `impl/_generated/<machine>_persisted.py`) on consecutive records of one key:
a record that follows its key's previous record (or the fresh instance: the key's first record in a log with nothing
removed before it, or the first after a tombstone) must satisfy every atom of some clause of the two records'
states. A pair no clause explains is one violation of `persisted_step` on the later record, named by where it is
(`__transaction_state-3@1234`), with the closest clause (fewest false atoms; the first in the relation's order on a
tie), its spec row and the first atom that fails; the witness shows both records' persisted fields. A snapshot (a
key's first surviving record after something was removed) is not checked: its history is gone.
The Spark checker computes the same (`sparklog`), so both engines report the same violations.
Must not import: pyspark, kcoord.cli.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kcoord.model import ir
from kcoord.model.pretty import render, render_value
from kcoord.model.printer import Execution, Transition, render_execution
from kcoord.model.pyexpr import PythonEvaluator
from kcoord.model.steprel import Clause, Relation

from .checks import Spec, Violation, location
from .logrecords import StateRecord

STEP_CHECK = "persisted_step"


@dataclass(slots=True)
class Verdict:
    """Why a pair is not explained: the closest clause (None: no clause joins the two states) and its false atoms."""

    closest: Clause | None
    failing: tuple[ir.Expr, ...]


@dataclass(slots=True)
class StepChecker:
    """One machine's relation, evaluated record by record."""

    spec: Spec
    relation: Relation
    ev: PythonEvaluator = field(default_factory=PythonEvaluator)
    checked: int = 0

    @property
    def machine(self) -> ir.Machine:
        return self.spec.machine

    def check(self, r: StateRecord) -> Violation | None:
        """The violation of `r` (None when a clause explains it, or it is a snapshot)."""
        if r.follows == "snapshot":
            return None
        self.checked += 1
        pre = self.before(r)
        verdict = self.verdict(pre, r)
        return None if verdict is None else self.violation(r, pre, verdict)

    def pair(self, r: StateRecord) -> dict[str, Any] | None:
        """The pair `r` makes with what it follows, as one flat row (the Spark checker's input, `sparklog`): the
        two records' persisted fields (`prev_<v>`, `next_<v>`), the key fields, the states, where they are."""
        if r.follows == "snapshot":
            return None
        pre = self.before(r)
        post = r.values or {}
        row: dict[str, Any] = {"machine": self.machine.name, "key": r.key, "seq": r.seq,
                               "seq_from": r.previous.seq if r.previous is not None else r.seq, "name": str(r.place),
                               "ts_ms": r.place.ts_ms, "source": str(pre["state"]), "target": self.target(r),
                               "tombstone": r.tombstone, "after": _after(r),
                               "row_json": json.dumps(self._witness_rows(r, pre),
                                                                                 sort_keys=True)}
        for k in self.machine.keys:
            row[k.name] = pre.get(k.name, r.key)
        for name in self.relation.fields:
            row[f"prev_{name}"] = _plain(pre.get(name))
            row[f"next_{name}"] = _plain(post.get(name)) if not r.tombstone else None
        return row

    def before(self, r: StateRecord) -> Mapping[str, Any]:
        if r.follows == "previous":
            assert r.previous is not None and r.previous.values is not None
            return r.previous.values
        fresh = dict(self.spec.defaults)
        fresh.update({k.name: r.key for k in self.machine.keys})
        fresh["state"] = self.spec.initial
        return fresh

    def target(self, r: StateRecord) -> str:
        if r.values is None:
            return sorted(self.spec.final_states)[0] if self.spec.final_states else ""
        return str(r.values["state"])

    def verdict(self, pre: Mapping[str, Any], r: StateRecord) -> Verdict | None:
        post = r.values if r.values is not None else {}
        clauses = self.relation.between(str(pre["state"]), self.target(r), r.tombstone)
        best: Verdict | None = None
        for c in clauses:
            failing = tuple(a for a in c.atoms if not self._holds(a, pre, post))
            if not failing:
                return None
            if best is None or len(failing) < len(best.failing):
                best = Verdict(c, failing)
        return best or Verdict(None, ())

    def _holds(self, atom: ir.Expr, pre: Mapping[str, Any], post: Mapping[str, Any]) -> bool:
        try:
            return self.ev.eval(atom, pre, {}, post) is True
        except (TypeError, KeyError, ValueError):
            return False

    # ------------------------------------------------------------ the violation

    def violation(self, r: StateRecord, pre: Mapping[str, Any], v: Verdict) -> Violation:
        spec = self.spec
        after = _after(r)
        source, target = str(pre["state"]), self.target(r)
        what = "tombstone" if r.tombstone else f"{self.relation.record} ({target})"
        head = f"{what} at {r.place} (ts {r.place.ts_ms}) {after} ({source}) is not a step of the spec"
        if v.closest is None:
            where = location(self.machine.persist.span) if self.machine.persist is not None else \
                location(self.machine.span)
            message = f"{head}: no path of the spec writes a record in {target} after one in {source}"
        else:
            row = spec.rows[v.closest.rows[-1]]
            where = row.location
            more = f" (and {len(v.failing) - 1} more)" if len(v.failing) > 1 else ""
            message = f"{head}: closest {v.closest.label} ({row.location}): {render(v.failing[0])} is false{more}"
        seq_from = r.previous.seq if r.previous is not None else r.seq
        rows = json.dumps(self._witness_rows(r, pre), sort_keys=True)
        return Violation(self.machine.name, r.key, STEP_CHECK, str(r.place), r.seq, seq_from, r.seq, where, message,
                         witness=witness_text(rows, message), witness_rows=rows)

    def _view(self, values: Mapping[str, Any] | None) -> dict[str, Any]:
        """The persisted fields of a record (what the log says), sets as sorted lists."""
        if values is None:
            return {"tombstone": True}
        out: dict[str, Any] = {"state": values["state"]}
        for name in self.relation.fields:
            v = values.get(name)
            out[name] = sorted(v) if isinstance(v, frozenset | set) else v
        return out

    def _witness_rows(self, r: StateRecord, pre: Mapping[str, Any]) -> dict[str, Any]:
        previous = r.previous.place if r.previous is not None else None
        return {"machine": self.machine.name, "key": r.key, "before": self._view(pre),
                "before_at": str(previous) if previous is not None else "fresh instance",
                "record": self._view(r.values), "record_at": str(r.place), "ts_ms": r.place.ts_ms}


def _after(r: StateRecord) -> str:
    return f"after {r.previous.place}" if r.previous is not None else "after the fresh instance"


def _plain(v: Any) -> Any:
    return sorted(v) if isinstance(v, frozenset | set) else v


def witness_text(record_json: str, message: str) -> str:
    """The witness of a `persisted_step` violation from its rows (what `row_json` holds), as both engines show it."""
    rows = json.loads(record_json)
    before = {k: _shown(v) for k, v in rows["before"].items()}
    after = {k: _shown(v) for k, v in rows["record"].items()}
    step = Transition("Record", {}, f"{rows['record_at']}, ts {rows['ts_ms']}, after {rows['before_at']}")
    return f"key {rows['key']}\n" + render_execution(Execution([before, after], [step])) + f"\n  => {message}"


def _shown(v: Any) -> Any:
    return frozenset(v) if isinstance(v, list) else v


def describe(values: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} = {render_value(v)}" for k, v in sorted(values.items()))
