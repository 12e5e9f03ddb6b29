"""Explicit-state checking: exhaustive enumeration of small instances with the Python evaluator.

Owns: small finite domains for each type (short integer ranges taken whole, a few values otherwise; sets over a
two-element pool; every enum member), and `explore`, which enumerates every pre-state that satisfies the invariants,
every argument, and fires every transition — reporting which (invariant, row), (step, row) and (variable, row)
obligations it saw violated. The verifier's results must agree with it on small specs: z3 "holds" means no violation
here, and every violation here is a z3 "fails". Used by the test suite as an independent check on the z3 backend.
Must not import: lark, z3, pyspark.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from . import ir
from .pyexpr import PythonEvaluator

SMALL_RANGE = 12  # integer types with at most this many values are enumerated whole
FEW_INTS = (-1, 0, 1, 2, 3)
STRINGS = ("", "a", "b")
SET_POOL = ("a", "b")


def domain(t: ir.Type) -> list[Any]:
    if isinstance(t, ir.BoolType):
        return [False, True]
    if isinstance(t, ir.IntType):
        if t.hi - t.lo < SMALL_RANGE:
            return list(range(t.lo, t.hi + 1))
        return [v for v in FEW_INTS if t.lo <= v <= t.hi]
    if isinstance(t, ir.StringType):
        return list(STRINGS)
    if isinstance(t, ir.EnumType | ir.StateType):
        return list(t.members)
    element = t.element if isinstance(t, ir.SetType) else ir.STRING
    pool = SET_POOL if isinstance(element, ir.StringType) else domain(element)
    return [frozenset(c) for r in range(len(pool) + 1) for c in itertools.combinations(pool, r)]


@dataclass(slots=True)
class Exploration:
    consecution: set[tuple[str, int]] = field(default_factory=set)  # (invariant, row index)
    steps: set[tuple[str, int]] = field(default_factory=set)  # (step property, row index)
    bounds: set[tuple[str, int]] = field(default_factory=set)  # (variable, row index)
    states: int = 0
    firings: int = 0


def _product(fields: list[ir.Field]) -> Iterator[dict[str, Any]]:
    names = [f.name for f in fields]
    for values in itertools.product(*(domain(f.type) for f in fields)):
        yield dict(zip(names, values, strict=True))


def explore(m: ir.Machine, limit: int = 2_000_000) -> Exploration:
    """Enumerate every small pre-state (satisfying the invariants) × event arguments; fire every enabled row."""
    ev = PythonEvaluator()
    out = Exploration()
    keys = {k.name: domain(k.type)[0] for k in m.keys}
    for values in _product(list(m.variables)):
        for st in m.states:
            if st.final:
                continue
            pre = {**values, **keys, "state": st.name}
            if not all(ev.holds(i.expr, pre) for i in m.invariants):
                continue
            out.states += 1
            for t in m.transitions:
                if st.name in t.sources:
                    _fire_all(m, ev, t, pre, out)
            if out.firings > limit:
                raise ValueError(f"{m.name}: too many states to enumerate (> {limit} firings)")
    return out


def _fire_all(m: ir.Machine, ev: PythonEvaluator, t: ir.Transition, pre: dict[str, Any], out: Exploration) -> None:
    event = m.event(t.event)
    pendings = [True] if m.state(pre["state"]).pending else [False, True]
    for args in _product(list(event.params)):
        for pending in pendings:
            env = {**args, "pending": pending}
            if not (ev.holds(t.assumes, pre, env) and ev.holds(t.guard, pre, env)):
                continue
            out.firings += 1
            post = ev.fire(t, pre, env)
            out_of_bounds = [v.name for v in m.variables if isinstance(v.type, ir.IntType)
                             and not v.type.contains(post[v.name])]
            out.bounds |= {(name, t.index) for name in out_of_bounds}
            if out_of_bounds:
                continue  # the post-state is not a state of the machine; only the bounds obligation fails
            out.consecution |= {(i.name, t.index) for i in m.invariants if not ev.holds(i.expr, post)}
            out.steps |= {(s.name, t.index) for s in m.steps
                          if s.applies_to(t) and not ev.holds(s.expr, pre, env, post)}
