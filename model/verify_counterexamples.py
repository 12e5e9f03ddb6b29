"""Counterexamples of `kcoord verify`'s obligations: minimal, readable, and re-checked by the Python evaluator.

Owns `Counterexamples`: a small model of a failed obligation's goal (finite sets of the fewest elements, strings from
a readable pool, small integers), the transition counterexample built from it (pre-state, arguments, post-state
fired by the Python evaluator), and the re-checks that turn a disagreement between z3 and the Python evaluator into
a `VerifierBug` rather than a report.
Must not import: lark, pyspark.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import z3

from . import ir
from .printer import Execution, Transition
from .pyexpr import PythonEvaluator
from .verify_result import VerifierBug
from .z3backend import POOL, Encoder, Frame, finite_sets, frame_values, readable_strings, set_terms, string_terms


class Counterexamples:
    """For one machine's verifier: its encoder, its frames per event, and the solver holding its base assumptions
    (the pre-state's bounds and the invariants), which every counterexample satisfies."""

    def __init__(self, machine: ir.Machine, enc: Encoder, base: z3.Solver, frames: Mapping[str, Frame],
                 py: PythonEvaluator, *, timeout_ms: int, set_width: int, minimize: bool) -> None:
        self.m = machine
        self.enc = enc
        self.base = base
        self.frames = frames
        self.py = py
        self.timeout_ms = timeout_ms
        self.set_width = set_width
        self.minimize = minimize

    def model(self, goal: list[z3.BoolRef], f: Frame, event: ir.Event | None) -> z3.ModelRef:
        """A small, readable model of the base assumptions + `goal`.

        Sets get the fewest elements that work (at most `set_width`), strings come from a readable pool, and then,
        greedily, every integer is pinned to a small value (-2..10) whenever that keeps the goal satisfiable.
        """
        solver = z3.Solver(ctx=self.enc.ctx)
        solver.set("timeout", self.timeout_ms)
        solver.add(self.base.assertions())
        solver.add(goal)
        solver.add(readable_strings(self.enc, string_terms(self.enc, f, event)))
        for width in range(0, self.set_width + 1):
            solver.push()
            solver.add(finite_sets(self.enc, set_terms(self.enc, f, event), width)[0])
            if solver.check() == z3.sat:
                break
            solver.pop()
        else:
            raise VerifierBug("no finite counterexample with small sets; the failure needs sets larger than "
                              f"{self.set_width} elements")
        if self.minimize:
            for term, t in string_terms(self.enc, f, event):  # prefer the first real name, then any real name
                names = [x for x in POOL.get(str(t), POOL["string"]) if x]
                for wish in (term == z3.StringVal(names[0], ctx=self.enc.ctx),
                             term != z3.StringVal("", ctx=self.enc.ctx)):
                    solver.push()
                    solver.add(wish)
                    if solver.check() == z3.sat:
                        break
                    solver.pop()
            for term in self._int_terms(f, event):
                solver.push()
                solver.add(term >= -2, term <= 10)
                if solver.check() != z3.sat:
                    solver.pop()
        verdict = solver.check()
        assert verdict == z3.sat, "a satisfiable goal became unsatisfiable while shrinking its model"
        return solver.model()

    def _int_terms(self, f: Frame, event: ir.Event | None) -> list[z3.ExprRef]:
        out = [f.variables[v.name] for v in self.m.variables if isinstance(v.type, ir.IntType)]
        if event is not None:
            out += [f.params[p.name] for p in event.params if isinstance(p.type, ir.IntType)]
        return out

    def transition(self, t: ir.Transition, event: ir.Event, goal: list[z3.BoolRef],
                       violated: Callable[[dict[str, Any], dict[str, Any], dict[str, Any]], bool],
                       what: str) -> Execution:
        f = self.frames[t.event]
        model = self.model(goal, f, event)
        pre, args = frame_values(self.enc, model, f, event)
        self.recheck_pre(pre, args, event, t.assumes)
        if not self.py.holds(t.guard, pre, args):
            raise VerifierBug(f"z3 fired {t.label} but its guard is false in the Python evaluator: {pre} {args}")
        post = self.py.fire(t, pre, args)
        if not violated(pre, args, post):
            raise VerifierBug(f"z3 found a counterexample for {t.label} that the Python evaluator does not confirm: "
                              f"{pre} {args} -> {post}")
        label = f"row {t.index}, {t.span.path}:{t.span.line}"
        return Execution([pre, post], [Transition(t.event, args, label)], (what,), self.hidden())

    def recheck_pre(self, pre: dict[str, Any], args: dict[str, Any], event: ir.Event | None,
                     assumes: ir.Expr | None = None) -> None:
        broken = [i.name for i in self.m.invariants if not self.py.holds(i.expr, pre)]
        if broken:
            raise VerifierBug(f"z3 picked a pre-state that violates {broken} in the Python evaluator: {pre}")
        precondition = assumes if assumes is not None else event.requires if event is not None else None
        if precondition is not None and not self.py.holds(precondition, pre, args):
            name = event.name if event is not None else "the event"
            raise VerifierBug(f"z3 picked arguments that violate the precondition of {name}: {args}")

    def hidden(self) -> frozenset[str]:
        return frozenset(k.name for k in self.m.keys)
