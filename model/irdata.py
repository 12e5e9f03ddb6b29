"""IR expressions ↔ plain data (nested tuples of strings, integers and booleans), so that a generated module can
carry an expression the model derived and a backend can compile it again without the model re-deriving it.

Owns: `to_data(expr)` and `from_data(data, machine)` — exact inverses on the expressions the derivations produce
(names are resolved against the machine, so the types come back from its declarations). The data is a Python
literal: `("var", "producer_epoch", True)`, `("bin", "add", ..., ...)`, `("lit", 32766)`, ...
Must not import: lark, z3, pyspark.
"""

from __future__ import annotations

from typing import Any

from . import ir

Data = tuple[Any, ...]
_COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge", "in", "subset", "and", "or", "implies")


def to_data(e: ir.Expr) -> Data:
    if isinstance(e, ir.Lit):
        value = e.value
        if isinstance(value, frozenset):
            return ("set", tuple(("lit", v) for v in sorted(value, key=repr)))
        return ("lit", value)
    if isinstance(e, ir.EnumLit):
        return ("enum", e.member)
    if isinstance(e, ir.VarRef):
        return ("var", e.name, e.primed)
    if isinstance(e, ir.KeyRef):
        return ("key", e.name)
    if isinstance(e, ir.StateRef):
        return ("state", e.primed)
    if isinstance(e, ir.SetLit):
        return ("set", tuple(to_data(i) for i in e.items))
    if isinstance(e, ir.Ite):
        return ("ite", to_data(e.cond), to_data(e.then), to_data(e.orelse))
    if isinstance(e, ir.Unary):
        return (e.op, to_data(e.operand))
    if isinstance(e, ir.Binary):
        return ("bin", e.op, to_data(e.left), to_data(e.right))
    if isinstance(e, ir.Call):
        return ("call", e.function, tuple(to_data(a) for a in e.args))
    raise ValueError(f"not a derived expression: {e!r} (parameters and `pending` have no data form)")


def from_data(data: Data, m: ir.Machine) -> ir.Expr:
    tag = data[0]
    if tag == "lit":
        value = data[1]
        t: ir.Type = ir.BOOL if isinstance(value, bool) else ir.INT_ANY if isinstance(value, int) else ir.STRING
        return ir.Lit(value, t)
    if tag == "enum":
        return ir.EnumLit(data[1], _enum_type(m, data[1]))
    if tag == "var":
        return ir.VarRef(data[1], data[2], m.variable(data[1]).type)
    if tag == "key":
        return ir.KeyRef(data[1], next(k.type for k in m.keys if k.name == data[1]))
    if tag == "state":
        return ir.StateRef(data[1], m.state_type)
    if tag == "set":
        items = tuple(from_data(i, m) for i in data[1])
        return ir.SetLit(items, ir.SetType(items[0].type) if items else ir.EmptySetType())
    if tag == "ite":
        then, orelse = from_data(data[2], m), from_data(data[3], m)
        return ir.Ite(from_data(data[1], m), then, orelse, then.type)
    if tag in ("not", "neg"):
        operand = from_data(data[1], m)
        return ir.Unary(tag, operand, ir.BOOL if tag == "not" else ir.INT_ANY)
    if tag == "bin":
        op, left, right = data[1], from_data(data[2], m), from_data(data[3], m)
        return ir.Binary(op, left, right, _binary_type(op, left, right))
    if tag == "call":
        return ir.Call(data[1], tuple(from_data(a, m) for a in data[2]), ir.INT_ANY)
    raise ValueError(f"unknown expression data {data!r}")


def _binary_type(op: str, left: ir.Expr, right: ir.Expr) -> ir.Type:
    if op in _COMPARISONS:
        return ir.BOOL
    if op in ("union", "inter", "diff"):
        return left.type if isinstance(left.type, ir.SetType) else right.type
    return ir.INT_ANY


def _enum_type(m: ir.Machine, member: str) -> ir.EnumType | ir.StateType:
    if member in {s.name for s in m.states}:
        return m.state_type
    for e in m.enums:
        if member in e.members:
            return e
    raise ValueError(f"{m.name} has no state or enum member {member!r}")
