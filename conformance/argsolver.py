"""Arguments that make a given spec row answer an event, from a concrete state: the verifier's enabling-argument
search (`MachineVerifier._enabling_args`, which its concolic reachability search uses), extended for test paths.

Owns: `ArgSolver.enabling(row, pre, pins=..., prefer=...)` — z3 picks the event's arguments (and `pending`) under
which `row` (a transition, a stay or a rejection) answers in the concrete state `pre`, with some arguments pinned to
what the environment fixes (the coordinator's limits, the clock) and others preferred when possible (a test reads
better with the current producer id than with an arbitrary one). Strings and set elements come from the verifier's
readable pool plus the strings the state already holds (so a member id the implementation generated can be named);
integers not pinned or preferred are kept small when that works, as in the verifier's counterexamples. Every answer
is re-checked by the Python evaluator.
Must not import: kcoord.cli, kcoord.impl.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import z3

from kcoord.model import ir
from kcoord.model.pyexpr import PythonEvaluator
from kcoord.model.verify import MachineVerifier, Options
from kcoord.model.z3backend import POOL, Frame

_SMALL = (-2, 10)


@dataclass(frozen=True, slots=True)
class Avoid:
    """A pin that excludes values instead of fixing one (e.g. an empty name the API cannot carry)."""

    values: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Lookup:
    """A pin that ties an argument to another one through a table the environment holds (e.g. the member id a
    group instance id maps to): `name == table.get(other, default)`."""

    other: str
    table: Mapping[Any, Any]
    default: Any


@dataclass(frozen=True, slots=True)
class NonEmpty:
    """A preference for a set argument with at least one element (an API that cannot carry an empty request)."""


NONEMPTY = NonEmpty()


@dataclass(frozen=True, slots=True)
class AtLeast:
    """A pin that bounds an integer argument from below (e.g. a time that cannot go back)."""

    value: int


class ArgSolver(MachineVerifier):
    """One machine's enabling-argument search (a `MachineVerifier` for its encoder, frames and equality)."""

    def __init__(self, machine: ir.Machine, options: Options | None = None) -> None:
        # a fixed sort name: z3's models depend on the names, and the cases `kcoord conformance-gen` writes must not
        # depend on how many encoders the process made before (a `kcoord verify` in the same process)
        super().__init__(machine, options or Options(timeout_ms=4_000), tag="args")
        self.py = PythonEvaluator()
        self._row_solvers: dict[int, z3.Solver] = {}

    def enabling(self, row: ir.Row, pre: Mapping[str, Any], *, pins: Mapping[str, Any] | None = None,
                 prefer: Mapping[str, Any] | None = None, strings: Iterable[str] = ()) -> dict[str, Any] | None:
        """Arguments under which `row` answers its event in `pre`, or None when there are none."""
        event = self.m.event(row.event)
        if pre["state"] not in row.sources:
            return None
        f = self.frames[row.event]
        solver = self._solver_for(row, f, event)
        pool = self._pool(pre, event, strings)
        names = {p.name for p in event.params} | {"pending"}
        pins = {k: v for k, v in (pins or {}).items() if k in names}
        prefer = {k: v for k, v in (prefer or {}).items() if k in names and k not in pins}
        solver.push()
        depth = 1
        try:
            solver.add(self._equals(f, dict(pre)))
            solver.add(*self._pool_constraints(f, event, pool))
            for name, value in pins.items():
                solver.add(self._param_is(f, event, name, value))
            if solver.check() != z3.sat:
                return None
            wishes = [self._param_is(f, event, name, value) for name, value in prefer.items()]
            small = [c for p in event.params if isinstance(p.type, ir.IntType) and p.name not in pins
                     and p.name not in prefer for c in (f.params[p.name] >= _SMALL[0], f.params[p.name] <= _SMALL[1])]
            for group in (wishes, small):  # all at once (usually works), else one by one
                if group and not self._try(solver, group):
                    for wish in group:
                        depth += self._try(solver, [wish])
                elif group:
                    depth += 1
            verdict = solver.check()
            assert verdict == z3.sat, "a satisfiable query became unsatisfiable while preferring values"
            model = solver.model()
            empty = [z3.Not(self._present(p.name, i)) for p in event.params if isinstance(p.type, ir.SetType)
                     and p.name not in pins and not (p.name in prefer and not isinstance(prefer[p.name], NonEmpty))
                     for i, _ in enumerate(pool[p.name])
                     if z3.is_true(model.eval(self._present(p.name, i), model_completion=True))]
            if empty and not self._try(solver, empty):  # fewest set elements: drop what can go
                for wish in empty:
                    depth += self._try(solver, [wish])
            elif empty:
                depth += 1
            verdict = solver.check()
            assert verdict == z3.sat, "a satisfiable query became unsatisfiable while preferring values"
            args = self._read(solver.model(), f, event, pool)
        finally:
            for _ in range(depth):
                solver.pop()
        if not (self.py.holds(row.guard, pre, args) and self.py.holds(row.assumes, pre, args)):
            raise AssertionError(f"z3 enabled {row.label} with {args} from {dict(pre)}, the Python evaluator does not")
        return args

    # ------------------------------------------------------------ the query

    def _solver_for(self, row: ir.Row, f: Frame, event: ir.Event) -> z3.Solver:
        solver = self._row_solvers.get(row.index)
        if solver is None:
            solver = self._row_solvers[row.index] = z3.Solver(ctx=self.enc.ctx)
            solver.set("timeout", self.opts.timeout_ms)
            solver.add(*self.enc.row_facts(f, event, row), self.enc.expr(row.guard, f))
        return solver

    def _pool(self, pre: Mapping[str, Any], event: ir.Event, extra: Iterable[str]) -> dict[str, list[str]]:
        """Per parameter: the names it may take — the readable pool of its alias, the strings of that alias the
        state holds, and the caller's extras (each once, in a stable order)."""
        held: dict[str, dict[str, None]] = {}
        for v in (*self.m.variables, *self.m.keys):
            alias = _alias(v.type)
            if alias is None:
                continue
            value = pre[v.name]
            items = sorted(value) if isinstance(value, frozenset) else [value]
            held.setdefault(alias, {}).update((x, None) for x in items if isinstance(x, str) and x)
        extras = list(extra)
        out: dict[str, list[str]] = {}
        for p in event.params:
            alias = _alias(p.type)
            if alias is None:
                continue
            names: dict[str, None] = {x: None for x in POOL.get(alias, POOL["string"]) if x}
            names.update(held.get(alias, {}))
            names.update((x, None) for x in extras if x)
            out[p.name] = list(names)
        return out

    def _pool_constraints(self, f: Frame, event: ir.Event, pool: Mapping[str, list[str]]) -> list[z3.BoolRef]:
        out = []
        ctx = self.enc.ctx
        for p in event.params:
            term = f.params[p.name]
            if isinstance(p.type, ir.StringType):
                out.append(z3.Or([term == z3.StringVal(x, ctx=ctx) for x in ["", *pool[p.name]]]))
            elif isinstance(p.type, ir.SetType) and isinstance(p.type.element, ir.StringType):
                value = z3.EmptySet(z3.StringSort(ctx=ctx))
                for i, x in enumerate(pool[p.name]):
                    value = z3.Store(value, z3.StringVal(x, ctx=ctx), self._present(p.name, i))
                out.append(term == value)
        return out

    def _present(self, param: str, i: int) -> z3.BoolRef:
        return z3.Bool(f"__in_{param}_{i}", ctx=self.enc.ctx)

    def _param_is(self, f: Frame, event: ir.Event, name: str, value: Any) -> z3.BoolRef:
        if name == "pending":
            assert f.pending is not None
            return f.pending == z3.BoolVal(bool(value), ctx=self.enc.ctx)
        p = event.param(name)
        if isinstance(value, Avoid):
            return z3.And([f.params[name] != self.enc.literal(v, p.type) for v in value.values])
        if isinstance(value, AtLeast):
            return f.params[name] >= value.value
        if isinstance(value, Lookup):
            other = event.param(value.other)
            term = self.enc.literal(value.default, p.type)
            for k, v in sorted(value.table.items(), key=repr):
                same = f.params[value.other] == self.enc.literal(k, other.type)
                term = z3.If(same, self.enc.literal(v, p.type), term)
            return f.params[name] == term
        if isinstance(value, NonEmpty):
            return f.params[name] != self.enc.literal(frozenset(), p.type)
        return f.params[name] == self.enc.literal(frozenset(value) if isinstance(p.type, ir.SetType) else value,
                                                  p.type)

    @staticmethod
    def _try(solver: z3.Solver, wish: list[z3.BoolRef]) -> int:
        """Keep `wish` if it is satisfiable with what is asserted; returns the solver levels it left pushed."""
        solver.push()
        solver.add(*wish)
        if solver.check() != z3.sat:
            solver.pop()
            return 0
        return 1

    def _read(self, model: z3.ModelRef, f: Frame, event: ir.Event, pool: Mapping[str, list[str]]) -> dict[str, Any]:
        args: dict[str, Any] = {}
        for p in event.params:
            if isinstance(p.type, ir.SetType) and isinstance(p.type.element, ir.StringType):
                args[p.name] = frozenset(x for i, x in enumerate(pool[p.name])
                                         if z3.is_true(model.eval(self._present(p.name, i), model_completion=True)))
            else:
                args[p.name] = self.enc.value(model, f.params[p.name], p.type)
        assert f.pending is not None
        args["pending"] = z3.is_true(model.eval(f.pending, model_completion=True))
        return args


def _alias(t: ir.Type) -> str | None:
    """The string alias of a string or set-of-strings type (`partition`, `member`, ...), else None."""
    if isinstance(t, ir.SetType):
        t = t.element
    return t.name if isinstance(t, ir.StringType) else None
