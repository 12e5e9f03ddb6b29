"""The Python backend of the expression language: IR expressions → Python source, and an evaluator built on it.

Owns: `to_python(expr)` (the one translation to Python), `PythonEvaluator` (compiles and caches those sources for the
reference checker, the explicit-state explorer and counterexample re-checking) and the helpers that fire a transition
on a concrete state. The table generator writes the very same source text into `impl/_generated/`, so the runtime's
guards and the model's evaluator cannot disagree.

Conventions of the compiled code: `s` is the pre-state (a dict: every variable, every key field, and `state`), `n` the
post-state (for primed names), `a` the event's arguments plus `pending`.
Must not import: lark, z3, pyspark.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from . import ir

Env = Mapping[str, Any]
Compiled = Callable[[Env, Env, Env], Any]


def to_python(e: ir.Expr) -> str:
    """Python source for `e`; deterministic (set literals sorted) and fully parenthesised."""
    if isinstance(e, ir.Lit):
        return _literal(e.value)
    if isinstance(e, ir.EnumLit):
        return repr(e.member)
    if isinstance(e, ir.VarRef):
        return f"{'n' if e.primed else 's'}[{e.name!r}]"
    if isinstance(e, ir.KeyRef):
        return f"s[{e.name!r}]"
    if isinstance(e, ir.ParamRef):
        return f"a[{e.name!r}]"
    if isinstance(e, ir.StateRef):
        return "n['state']" if e.primed else "s['state']"
    if isinstance(e, ir.PendingRef):
        return "a['pending']"
    if isinstance(e, ir.SetLit):
        if not e.items:
            return "frozenset()"
        return "frozenset((" + ", ".join(sorted(to_python(i) for i in e.items)) + ",))"
    if isinstance(e, ir.Ite):
        return f"({to_python(e.then)} if {to_python(e.cond)} else {to_python(e.orelse)})"
    if isinstance(e, ir.Call):
        if e.function == "size":
            return f"len({to_python(e.args[0])})"
        return f"{e.function}({', '.join(to_python(a) for a in e.args)})"
    if isinstance(e, ir.Unary):
        return f"(not {to_python(e.operand)})" if e.op == "not" else f"(-{to_python(e.operand)})"
    return _binary(e)


_INFIX = {"or": "or", "and": "and", "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
          "subset": "<=", "add": "+", "sub": "-", "union": "|", "inter": "&", "diff": "-"}


def _binary(e: ir.Binary) -> str:
    left = to_python(e.left)
    if e.op == "implies":
        return f"(not {left} or {to_python(e.right)})"
    if e.op == "in":
        if isinstance(e.right, ir.SetLit) and e.right.items and all(_constant(i) for i in e.right.items):
            # CPython folds `x in {consts}` into a frozenset constant: no allocation per call.
            return f"({left} in {{{', '.join(sorted(to_python(i) for i in e.right.items))}}})"
        return f"({left} in {to_python(e.right)})"
    return f"({left} {_INFIX[e.op]} {to_python(e.right)})"


def _constant(e: ir.Expr) -> bool:
    return isinstance(e, ir.Lit | ir.EnumLit)


def _literal(value: object) -> str:
    if isinstance(value, frozenset):
        if not value:
            return "frozenset()"
        return "frozenset((" + ", ".join(sorted(repr(v) for v in value)) + ",))"
    return repr(value)


def effects_to_python(effects: tuple[ir.Effect, ...]) -> str:
    """A dict display of the new values: `{'epoch': (s['epoch'] + 1)}` (variables not named keep their value)."""
    return "{" + ", ".join(f"{ef.var!r}: {to_python(ef.value)}" for ef in effects) + "}"


@dataclass(slots=True)
class PythonEvaluator:
    """Evaluates IR expressions on concrete states by compiling them once (cached per evaluator instance)."""

    _cache: dict[int, tuple[ir.Expr, Compiled]] = field(default_factory=dict)

    def compile(self, e: ir.Expr) -> Compiled:
        hit = self._cache.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        fn: Compiled = eval(f"lambda s, a, n: {to_python(e)}", {"frozenset": frozenset, "len": len, "min": min,
                                                                  "max": max})
        self._cache[id(e)] = (e, fn)
        return fn

    def eval(self, e: ir.Expr, pre: Env, args: Env | None = None, post: Env | None = None) -> Any:
        return self.compile(e)(pre, args or {}, post or {})

    def holds(self, e: ir.Expr, pre: Env, args: Env | None = None, post: Env | None = None) -> bool:
        value = self.eval(e, pre, args, post)
        assert isinstance(value, bool), f"expected a bool from {e}, got {value!r}"
        return value

    # -- firing rows on concrete states

    def enabled_rows(self, machine: ir.Machine, pre: Env, event: str, args: Env) -> list[ir.Row]:
        return [r for r in machine.rows_for(pre["state"], event) if self.holds(r.guard, pre, args)]

    def fire(self, t: ir.Transition, pre: Env, args: Env) -> dict[str, Any]:
        """The post-state of transition `t` from `pre` (frame rule: unassigned variables keep their value)."""
        post = dict(pre)
        post.update({ef.var: self.eval(ef.value, pre, args) for ef in t.effects})
        post["state"] = t.target_from(pre["state"])
        return post


def initial_state(machine: ir.Machine, key: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A fresh instance: the initial state, every variable at its default, and the given key fields."""
    state: dict[str, Any] = dict(machine.initial_values())
    for k in machine.keys:
        state[k.name] = (key or {}).get(k.name, "" if isinstance(k.type, ir.StringType) else 0)
    return state
