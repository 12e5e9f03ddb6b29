"""IR expressions and values → text in the spec's own syntax.

Owns: `render(expr)` (minimal parentheses by precedence, emptiness tests shown as `s == {}` / `s != {}`) and
`render_value(v)`. Used by diagrams, `kcoord show`, diagnostics and the one counterexample/violation printer, so an
expression reads the same everywhere. Deterministic: set literals and set values print sorted.
Must not import: lark, z3, pyspark.
"""

from __future__ import annotations

from . import ir

_SYMBOL = {
    "implies": "->", "or": "or", "and": "and", "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
    "in": "in", "subset": "subset", "add": "+", "sub": "-", "union": "|", "inter": "&", "diff": "-",
}
# Higher binds tighter; mirrors spec.lark.
_PRECEDENCE = {
    "implies": 1, "or": 2, "and": 3, "not": 4, "eq": 5, "ne": 5, "lt": 5, "le": 5, "gt": 5, "ge": 5, "in": 5,
    "subset": 5, "add": 6, "sub": 6, "union": 6, "diff": 6, "inter": 7, "neg": 8,
}
_ATOM = 9


def render_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, frozenset | set):
        return "{" + ", ".join(render_value(x) for x in sorted(v, key=_sort_key)) + "}"
    if isinstance(v, str):
        return _quote(v)
    if isinstance(v, list | tuple):
        return "[" + ", ".join(render_value(x) for x in v) + "]"
    return str(v)


def _sort_key(v: object) -> tuple[str, str]:
    return (type(v).__name__, f"{v:>24}" if isinstance(v, int) else str(v))


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render(e: ir.Expr) -> str:
    return _render(e)[0]


def _render(e: ir.Expr) -> tuple[str, int]:
    if isinstance(e, ir.Lit):
        if isinstance(e.type, ir.EnumType | ir.StateType):
            return str(e.value), _ATOM
        return render_value(e.value), _ATOM
    if isinstance(e, ir.EnumLit):
        return e.member, _ATOM
    if isinstance(e, ir.VarRef):
        return e.name + ("'" if e.primed else ""), _ATOM
    if isinstance(e, ir.KeyRef | ir.ParamRef):
        return e.name, _ATOM
    if isinstance(e, ir.StateRef):
        return "state'" if e.primed else "state", _ATOM
    if isinstance(e, ir.PendingRef):
        return "pending", _ATOM
    if isinstance(e, ir.SetLit):
        items = sorted(render(i) for i in e.items)
        return "{" + ", ".join(items) + "}", _ATOM
    if isinstance(e, ir.Call):
        return f"{e.function}(" + ", ".join(render(a) for a in e.args) + ")", _ATOM
    if isinstance(e, ir.Ite):
        return f"if {render(e.cond)} then {render(e.then)} else {render(e.orelse)}", 0
    if isinstance(e, ir.Unary):
        return _unary(e)
    return _binary(e)


def _unary(e: ir.Unary) -> tuple[str, int]:
    if e.op == "neg":
        return "-" + _wrap(e.operand, _PRECEDENCE["neg"]), _PRECEDENCE["neg"]
    inner = e.operand
    if isinstance(inner, ir.Binary) and inner.op == "eq":
        return _binary(ir.Binary("ne", inner.left, inner.right, ir.BOOL, inner.span))
    if isinstance(inner, ir.Binary) and inner.op == "in":
        prec = _PRECEDENCE["in"]
        return f"{_wrap(inner.left, prec + 1)} not in {_wrap(inner.right, prec + 1)}", prec
    return "not " + _wrap(inner, _PRECEDENCE["not"]), _PRECEDENCE["not"]


def _binary(e: ir.Binary) -> tuple[str, int]:
    prec = _PRECEDENCE[e.op]
    if e.op == "implies":  # right-associative
        return f"{_wrap(e.left, prec + 1)} -> {_wrap(e.right, prec)}", prec
    comparison = prec == 5
    left = _wrap(e.left, prec + 1 if comparison else prec)
    right = _wrap(e.right, prec + 1)
    return f"{left} {_SYMBOL[e.op]} {right}", prec


def _wrap(e: ir.Expr, needed: int) -> str:
    text, prec = _render(e)
    return f"({text})" if prec < needed else text
