"""The reference checker's evaluation of conditions on trace rows that may hold nulls: SQL's three-valued logic.

Owns `to_python_3vl(expr)` (IR → Python source in which `None` is SQL's NULL: unknown) and `NullEvaluator`, which
compiles and caches them. The SQL checkers (the DuckDB row pass and the Spark SQL plan, both from
`kcoord.model.spark_backend`) evaluate a condition on a row with a null as SQL does, so the Python checker evaluates
it the same way (see `checks` on nulls): a comparison, arithmetic, membership, set operation or `size` with a null
operand is null; `and`/`or`/`not`/`implies` are Kleene's (`null or true` is true, `null and false` false, whatever
the order); `if c then a else b` takes `b` when `c` is null (SQL's `CASE WHEN`); `min`/`max` skip nulls (`least`,
`greatest`). Both operands are always evaluated: the answer never depends on the order of a condition's parts.
The runtime and the model keep `kcoord.model.pyexpr` (Python's own operators): a runtime value is never null.
Must not import: pyspark, z3.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kcoord.model import ir
from kcoord.model.pyexpr import to_python

Env = Mapping[str, Any]
Compiled = Callable[[Env, Env, Env], Any]


def _and(x: Any, y: Any) -> bool | None:
    if x is False or y is False:
        return False
    return None if x is None or y is None else True


def _or(x: Any, y: Any) -> bool | None:
    if x is True or y is True:
        return True
    return None if x is None or y is None else False


def _not(x: Any) -> bool | None:
    return None if x is None else not x


def _op(f: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def strict(x: Any, y: Any) -> Any:
        return None if x is None or y is None else f(x, y)
    return strict


def _ite(c: Any, then: Any, orelse: Any) -> Any:
    return then if c is True else orelse


def _size(x: Any) -> int | None:
    return None if x is None else len(x)


def _least(*xs: Any) -> Any:
    known = [x for x in xs if x is not None]
    return min(known) if known else None


def _greatest(*xs: Any) -> Any:
    known = [x for x in xs if x is not None]
    return max(known) if known else None


def _set(*items: Any) -> frozenset[Any] | None:
    return None if any(i is None for i in items) else frozenset(items)


_STRICT = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
           "ge": operator.ge, "subset": operator.le, "add": operator.add, "sub": operator.sub, "union": operator.or_,
           "inter": operator.and_, "diff": operator.sub, "in": lambda x, s: x in s}
HELPERS: dict[str, Any] = {"_and": _and, "_or": _or, "_not": _not, "_ite": _ite, "_size": _size, "_set": _set,
                           "min": _least, "max": _greatest, "frozenset": frozenset,
                           "_neg": lambda x: None if x is None else -x,
                           **{f"_{op}": _op(f) for op, f in _STRICT.items()}}


def to_python_3vl(e: ir.Expr) -> str:
    """Python source for `e` under SQL's null semantics (the helpers in `HELPERS`); leaves as `to_python`'s."""
    if isinstance(e, ir.Lit | ir.EnumLit | ir.VarRef | ir.KeyRef | ir.ParamRef | ir.StateRef | ir.PendingRef):
        return to_python(e)
    if isinstance(e, ir.SetLit):
        return f"_set({', '.join(sorted(to_python_3vl(i) for i in e.items))})"
    if isinstance(e, ir.Ite):
        return f"_ite({to_python_3vl(e.cond)}, {to_python_3vl(e.then)}, {to_python_3vl(e.orelse)})"
    if isinstance(e, ir.Call):
        if e.function == "size":
            return f"_size({to_python_3vl(e.args[0])})"
        return f"{e.function}({', '.join(to_python_3vl(a) for a in e.args)})"
    if isinstance(e, ir.Unary):
        return f"_{'not' if e.op == 'not' else 'neg'}({to_python_3vl(e.operand)})"
    assert isinstance(e, ir.Binary), e
    left, right = to_python_3vl(e.left), to_python_3vl(e.right)
    if e.op == "implies":
        return f"_or(_not({left}), {right})"
    return f"_{e.op}({left}, {right})"


@dataclass(slots=True)
class NullEvaluator:
    """`to_python_3vl` of IR expressions on rows, compiled once per expression (cached per instance): the value,
    None for unknown."""

    _cache: dict[int, tuple[ir.Expr, Compiled]] = field(default_factory=dict)

    def compile(self, e: ir.Expr) -> Compiled:
        hit = self._cache.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        fn: Compiled = eval(f"lambda s, a, n: {to_python_3vl(e)}", dict(HELPERS))
        self._cache[id(e)] = (e, fn)
        return fn

    def eval(self, e: ir.Expr, pre: Env, args: Env | None = None, post: Env | None = None) -> Any:
        return self.compile(e)(pre, args or {}, post or {})
