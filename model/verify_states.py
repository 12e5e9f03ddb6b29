"""`kcoord verify`'s obligations about each state: deadlock, overlap and totality (see `verify`).

Owns `StateObligations`: in every non-final state allowed by the invariants some transition can fire (deadlock);
no state × event × condition is answered by two rows, unless both are transitions marked `choice` (overlap); every
request event is answered in every non-final state (totality: an error for coordinator machines, a warning for the
others). Failures come with a counterexample from `Counterexamples`.
Must not import: lark, pyspark.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Literal

import z3

from . import ir
from .printer import Execution
from .verify_counterexamples import Counterexamples
from .verify_result import Result, VerifierBug
from .z3backend import Frame, frame_values

#: the incremental solver's first try at a quantified deadlock goal (ms), before a fresh solver gets the full timeout
QUICK_DEADLOCK_MS = 1_000

#: decides a goal on a solver without changing it: (z3's verdict, milliseconds) — `MachineVerifier._check`
Check = Callable[[z3.Solver, list[z3.BoolRef]], tuple[z3.CheckSatResult, float]]


class StateObligations:
    """For one machine's verifier: `solver` holds the pre-state's bounds and the invariants (and what other checks
    asserted and retracted), `invariants` their conjunction, `pre` the pre-state frame."""

    def __init__(self, cx: Counterexamples, pre: Frame, invariants: z3.BoolRef, solver: z3.Solver, check: Check, *,
                 timeout_ms: int) -> None:
        self.cx = cx
        self.m = cx.m
        self.enc = cx.enc
        self.pre = pre
        self.invariants = invariants
        self.solver = solver
        self.check = check
        self.timeout_ms = timeout_ms

    def deadlock(self, st: ir.State) -> Result:
        """In `st` (under the invariants), for every argument of every event, no transition is enabled?"""
        enabled = []
        bound: list[z3.ExprRef] = []
        for t in self.m.transitions:
            if st.name not in t.sources:
                continue
            event = self.m.event(t.event)
            f = Frame(self.pre.state, self.pre.variables, self.pre.keys)
            self.enc.bind_event(f, event, f"#dl{t.index}")
            assert f.pending is not None
            bound += [*f.params.values(), f.pending]
            enabled.append(z3.And(*self.enc.row_facts(f, event, t), self.enc.expr(t.guard, f)))
        here = self.pre.state == self.enc.state_values[st.name]
        title = f"state {st.name} is not a deadlock"
        if not enabled:
            return self._deadlock_result(st, title, [here], 0.0)
        goal = [here, z3.ForAll(bound, z3.Not(z3.Or(enabled)))] if bound else [here, z3.Not(z3.Or(enabled))]
        # Quantifier instantiation depends on what the incremental solver learnt from the obligations before: it
        # usually decides at once, but after some of them it spends any time it is given (ConsumerGroupMember's
        # Absent: the whole 10 s, where a fresh solver decides in ~0.4 s). So it gets a short time first, then a
        # fresh solver the full time, then itself the full time.
        solver = self.solver
        verdict, elapsed = self._check_within(solver, goal, min(QUICK_DEADLOCK_MS, self.timeout_ms))
        if verdict == z3.unknown:
            solver = self._fresh_solver()
            verdict, more = self.check(solver, goal)
            elapsed += more
        if verdict == z3.unknown and self.timeout_ms > QUICK_DEADLOCK_MS:
            solver = self.solver
            verdict, more = self.check(solver, goal)
            elapsed += more
        if verdict == z3.unsat:
            return Result(self.m.name, "deadlock", title, "holds", st.span, (), elapsed)
        if verdict == z3.unknown:
            return Result(self.m.name, "deadlock", title, "unknown", st.span, (), elapsed,
                          detail=f"z3: {solver.reason_unknown()}")
        return self._deadlock_result(st, title, [here], elapsed, quantified=goal)

    def _check_within(self, solver: z3.Solver, goal: list[z3.BoolRef], timeout_ms: int) -> tuple[
            z3.CheckSatResult, float]:
        solver.set("timeout", timeout_ms)
        try:
            return self.check(solver, goal)
        finally:
            solver.set("timeout", self.timeout_ms)

    def _fresh_solver(self) -> z3.Solver:
        """A solver holding only the pre-state's bounds and the invariants (nothing learnt from other checks)."""
        solver = z3.Solver(ctx=self.enc.ctx)
        solver.set("timeout", self.timeout_ms)
        solver.add(self.enc.bounds(self.pre))
        solver.add(self.invariants)
        return solver

    def _deadlock_result(self, st: ir.State, title: str, here: list[z3.BoolRef], elapsed: float,
                         quantified: list[z3.BoolRef] | None = None) -> Result:
        verdict, _ = self.check(self.solver, here)
        if verdict == z3.unsat:  # the invariants exclude this state altogether: nothing to deadlock
            return Result(self.m.name, "deadlock", title, "holds", st.span, (), elapsed,
                          detail="no instance satisfying the invariants is in this state")
        model = self.cx.model(quantified or here, self.pre, None)
        state, _ = frame_values(self.enc, model, self.pre)
        self.cx.recheck_pre(state, {}, None)
        return Result(self.m.name, "deadlock", title, "fails", st.span, (), elapsed,
                      detail=f"no transition can fire in {st.name} from this state",
                      counterexample=Execution([state], (), (f"no transition can fire in {st.name}",),
                                               self.cx.hidden()))

    # ------------------------------------------------------------ overlap and totality

    def overlaps_and_totality(self) -> list[Result]:
        results = []
        for event in self.m.events:
            f = self.cx.frames[event.name]
            base = self.enc.event_facts(f, event)
            for st in self.m.states:
                if st.final:
                    continue
                rows = self.m.rows_for(st.name, event.name)
                here = [*base, f.state == self.enc.state_values[st.name]]
                guards = [self.enc.expr(r.guard, f) for r in rows]
                results += self._overlaps(event, st, rows, here, guards)
                if not event.internal:
                    results.append(self._totality(event, st, rows, here, guards))
        return results

    def _overlaps(self, event: ir.Event, st: ir.State, rows: tuple[ir.Row, ...], here: list[z3.BoolRef],
                  guards: list[z3.BoolRef]) -> list[Result]:
        if len(rows) < 2:
            return []
        title = f"{event.name} in {st.name}: at most one row answers"
        span = self.m.event(event.name).span
        pairs = [(i, j) for i in range(len(rows)) for j in range(i + 1, len(rows))
                 if not (_is_choice(rows[i]) and _is_choice(rows[j]))]
        start = time.perf_counter()
        verdict, _ = self.check(self.solver, [*here, z3.Or([z3.And(guards[i], guards[j]) for i, j in pairs])]) \
            if pairs else (z3.unsat, 0.0)
        if verdict == z3.unsat:
            return [Result(self.m.name, "overlap", title, "holds", span, (), (time.perf_counter() - start) * 1000)]
        out = []
        for i, j in pairs:
            goal = [*here, guards[i], guards[j]]
            verdict, elapsed = self.check(self.solver, goal)
            if verdict == z3.unsat:
                continue
            a, b = rows[i], rows[j]
            if verdict == z3.unknown:
                out.append(Result(self.m.name, "overlap", title, "unknown", b.span, (a.span,), elapsed))
                continue
            out.append(self._overlap_result(event, st, a, b, goal, elapsed))
        return out

    def _overlap_result(self, event: ir.Event, st: ir.State, a: ir.Row, b: ir.Row, goal: list[z3.BoolRef],
                        elapsed: float) -> Result:
        f = self.cx.frames[event.name]
        model = self.cx.model(goal, f, event)
        pre, args = frame_values(self.enc, model, f, event)
        self.cx.recheck_pre(pre, args, event)
        if not (self.cx.py.holds(a.guard, pre, args) and self.cx.py.holds(b.guard, pre, args)):
            raise VerifierBug(f"z3 says rows {a.index} and {b.index} overlap; the Python evaluator disagrees")
        what = _overlap_kind(a, b)
        note = f"{what}: {_describe(a)} (line {a.span.line}) and {_describe(b)} (line {b.span.line}) both match"
        return Result(self.m.name, "overlap", f"{event.name} in {st.name}: {what}", "fails", b.span, (a.span,),
                      elapsed, detail=note, counterexample=Execution(
                          [pre], (), (f"event {event.name}({_args(args)})", note), self.cx.hidden()))

    def _totality(self, event: ir.Event, st: ir.State, rows: tuple[ir.Row, ...], here: list[z3.BoolRef],
                  guards: list[z3.BoolRef]) -> Result:
        severity: Literal["error", "warning"] = "error" if self.m.kind == "coordinator" else "warning"
        title = f"{event.name} is answered in {st.name}"
        goal = [*here, z3.Not(z3.Or(guards))] if guards else here
        verdict, elapsed = self.check(self.solver, goal)
        span = self.m.event(event.name).span
        if verdict == z3.unsat:
            return Result(self.m.name, "totality", title, "holds", span, (), elapsed, severity=severity)
        if verdict == z3.unknown:
            return Result(self.m.name, "totality", title, "unknown", span, (), elapsed, severity=severity)
        f = self.cx.frames[event.name]
        model = self.cx.model(goal, f, event)
        pre, args = frame_values(self.enc, model, f, event)
        self.cx.recheck_pre(pre, args, event)
        if any(self.cx.py.holds(r.guard, pre, args) for r in rows):
            raise VerifierBug(f"z3 says no row of {event.name} answers in {st.name}; the Python evaluator finds one")
        note = f"no row of {event.name} answers in {st.name}" + ("" if rows else " (the event has no row there)")
        return Result(self.m.name, "totality", title, "fails", span, (), elapsed, detail=note, severity=severity,
                      counterexample=Execution([pre], (), (f"event {event.name}({_args(args)})", note),
                                               self.cx.hidden()))


def _is_choice(row: ir.Row) -> bool:
    return isinstance(row, ir.Transition) and row.choice


def _describe(row: ir.Row) -> str:
    if isinstance(row, ir.Transition):
        return f"{row.event} -> {row.target or 'stay'}"
    return f"{row.event} with {row.error}"


def _overlap_kind(a: ir.Row, b: ir.Row) -> str:
    if isinstance(a, ir.Transition) and isinstance(b, ir.Transition):
        return "two transitions can fire (nondeterministic; mark both `choice` if intended)"
    if isinstance(a, ir.Rejection) and isinstance(b, ir.Rejection):
        return "two rejections answer"
    return "both allowed and rejected"


def _args(args: dict[str, Any]) -> str:
    from .printer import render_args

    return render_args(args)
