"""z3 terms → IR expressions: the way back from a z3 formula (a quantifier elimination's result) to the spec's own
expression language, so that the Python evaluator, the Spark compiler and the printer can take it.

Owns: `Reader` (named z3 constants → the IR names they stand for; `expr(term)` translates), `ReadError` (a term the
spec language cannot say: a product of two variables, a coefficient that is not an integer, a divisibility test, a
quantifier left over, an uninterpreted function) and the normalisation of linear arithmetic, so that
`x + -1*y <= 0` reads `x <= y` and `Or(x <= -2, x >= 0)` reads `x != -1`.
Must not import: lark, pyspark.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction

import z3

from . import ir


class ReadError(ValueError):
    """A z3 term with no counterpart in the spec language."""


Linear = dict[str, Fraction]  # constant name -> coefficient; "" is the constant term

_COMPARE: dict[int, ir.BinaryOp] = {z3.Z3_OP_LE: "le", z3.Z3_OP_LT: "lt", z3.Z3_OP_GE: "ge", z3.Z3_OP_GT: "gt",
                                    z3.Z3_OP_EQ: "eq"}
_FLIP: dict[ir.BinaryOp, ir.BinaryOp] = {"le": "ge", "lt": "gt", "ge": "le", "gt": "lt", "eq": "eq", "ne": "ne"}


@dataclass(slots=True)
class Reader:
    """Translates terms over the named constants in `names` (z3 name → the IR leaf it stands for)."""

    names: Mapping[str, ir.Expr]
    machine: ir.Machine
    _enum_of: dict[str, ir.EnumType | ir.StateType] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for e in self.machine.enums:
            for member in e.members:
                self._enum_of[member] = e
        for st in self.machine.states:
            self._enum_of[st.name] = self.machine.state_type

    # ------------------------------------------------------------ booleans

    def expr(self, t: z3.ExprRef) -> ir.Expr:
        if z3.is_true(t):
            return ir.TRUE
        if z3.is_false(t):
            return ir.FALSE
        if z3.is_quantifier(t):
            raise ReadError(f"a quantifier is left in {t}")
        if z3.is_and(t):
            return ir.conj([self.expr(c) for c in t.children()])
        if z3.is_or(t):
            return self._or(t)
        if z3.is_not(t):
            inner = t.arg(0)
            if z3.is_eq(inner) or z3.is_distinct(inner) or (z3.is_app(inner) and inner.decl().kind() in _COMPARE):
                return _negated(self.expr(inner))
            return ir.negate(self.expr(inner))
        if z3.is_implies(t):
            return ir.Binary("implies", self.expr(t.arg(0)), self.expr(t.arg(1)), ir.BOOL)
        if z3.is_distinct(t) and t.num_args() == 2:
            return _negated(self._equality(t.arg(0), t.arg(1)))
        if z3.is_eq(t):
            return self._equality(t.arg(0), t.arg(1))
        if t.decl().kind() in _COMPARE:
            return self._compare(_COMPARE[t.decl().kind()], t.arg(0), t.arg(1))
        if z3.is_select(t) and z3.is_bool(t):
            return ir.Binary("in", self.value(t.arg(1)), self.value(t.arg(0)), ir.BOOL)
        if z3.is_app_of(t, z3.Z3_OP_SET_SUBSET):
            return ir.Binary("subset", self.value(t.arg(0)), self.value(t.arg(1)), ir.BOOL)
        if z3.is_const(t) and z3.is_bool(t):
            return self.value(t)
        if z3.is_app_of(t, z3.Z3_OP_ITE):
            return ir.Ite(self.expr(t.arg(0)), self.expr(t.arg(1)), self.expr(t.arg(2)), ir.BOOL)
        raise ReadError(f"no spec expression for {t}")

    def _or(self, t: z3.ExprRef) -> ir.Expr:
        parts = list(t.children())
        if len(parts) == 2:
            ne = self.not_equal(parts[0], parts[1])
            if ne is not None:
                return ne
        out = self.expr(parts[0])
        for p in parts[1:]:
            out = ir.Binary("or", out, self.expr(p), ir.BOOL)
        return out

    def not_equal(self, a: z3.ExprRef, b: z3.ExprRef) -> ir.Expr | None:
        """`Or(L <= c - 1, L >= c + 1)` over one linear form L (either way round) is `L != c`."""
        bounds = []
        for x in (a, b):
            kind = x.decl().kind() if z3.is_app(x) else None
            if kind not in (z3.Z3_OP_LE, z3.Z3_OP_GE) or not z3.is_int(x.arg(0)):
                return None
            form = _subtract(self.linear(x.arg(0)), self.linear(x.arg(1)))  # form op 0
            if kind == z3.Z3_OP_GE:
                form = {k: -v for k, v in form.items()}  # -form <= 0
            bounds.append(form)
        lo, hi = bounds  # each: form <= 0
        if set(lo) - {""} != set(hi) - {""} or any(lo[k] != -hi[k] for k in lo if k):
            return None
        # lo: L - (c - 1) <= 0 and hi: -(L - (c + 1)) <= 0 (or swapped): the constants differ by 2
        if lo.get("", Fraction(0)) + hi.get("", Fraction(0)) != 2:
            return None
        form = {k: v for k, v in lo.items() if k}
        c = 1 - lo.get("", Fraction(0))
        return self._render_compare("ne", {**form, "": -c})

    def _equality(self, a: z3.ExprRef, b: z3.ExprRef) -> ir.Expr:
        if z3.is_int(a):
            return self._compare("eq", a, b)
        if z3.is_bool(a):
            left, right = self.expr(a), self.expr(b)
        else:
            left, right = self.value(a), self.value(b)
        if (_is_leaf(right) and not _is_leaf(left)) or isinstance(left, ir.Lit | ir.EnumLit | ir.SetLit):
            left, right = right, left
        return ir.Binary("eq", left, right, ir.BOOL)

    def _compare(self, op: ir.BinaryOp, a: z3.ExprRef, b: z3.ExprRef) -> ir.Expr:
        if _has_ite(a) or _has_ite(b):  # `x' == if c then x else x + 1`: the sides as they are
            left, right = self.value(a), self.value(b)
            if _is_leaf(right) and not _is_leaf(left):
                left, right, op = right, left, _FLIP[op]
            return ir.Binary(op, left, right, ir.BOOL)
        return self._render_compare(op, _subtract(self.linear(a), self.linear(b)))

    def _render_compare(self, op: ir.BinaryOp, form: Linear) -> ir.Expr:
        """`form op 0`, written with positive coefficients on each side: the primed (post) names on the left when
        there are any, then the variables, the constant on the side that keeps it positive."""
        terms = {k: v for k, v in form.items() if k and v != 0}
        if any(v.denominator != 1 for v in form.values()):
            raise ReadError(f"a coefficient that is not an integer in {form}")
        constant = int(form.get("", Fraction(0)))
        if not terms:
            value = {"le": constant <= 0, "lt": constant < 0, "ge": constant >= 0, "gt": constant > 0,
                     "eq": constant == 0, "ne": constant != 0}[op]
            return ir.TRUE if value else ir.FALSE
        leading = min(terms, key=self._order)
        if terms[leading] < 0:  # keep the leading name positive on the left
            terms = {k: -v for k, v in terms.items()}
            constant = -constant
            op = _FLIP[op]
        left = self._sum(sorted(((k, int(v)) for k, v in terms.items() if v > 0), key=lambda kv: self._order(kv[0])))
        right_terms = sorted(((k, int(-v)) for k, v in terms.items() if v < 0), key=lambda kv: self._order(kv[0]))
        summed = self._sum(right_terms)
        right = _plus_constant(summed, -constant) if summed is not None else ir.Lit(-constant, ir.INT_ANY)
        assert left is not None
        return ir.Binary(op, left, right, ir.BOOL)

    def _order(self, name: str) -> tuple[int, str]:
        leaf = self.names.get(name)
        primed = isinstance(leaf, ir.VarRef | ir.StateRef) and leaf.primed
        return (0 if primed else 1, name)

    def _sum(self, terms: list[tuple[str, int]]) -> ir.Expr | None:
        """`a + b + ...` (a coefficient n repeats its name n times: the language has no product); None for none."""
        parts: list[ir.Expr] = []
        for name, times in terms:
            if times > 4:
                raise ReadError(f"coefficient {times} of {name}: the spec language has no multiplication")
            parts += [self._leaf(name)] * times
        return _add_all(parts) if parts else None

    def _leaf(self, name: str) -> ir.Expr:
        if name not in self.names:
            raise ReadError(f"unknown constant {name}")
        return self.names[name]

    # ------------------------------------------------------------ arithmetic

    def linear(self, t: z3.ExprRef) -> Linear:
        if z3.is_int_value(t):
            return {"": Fraction(t.as_long())}
        if z3.is_const(t):
            return {str(t): Fraction(1)}
        if z3.is_add(t):
            out: Linear = {}
            for c in t.children():
                out = _plus(out, self.linear(c))
            return out
        if z3.is_sub(t):
            first, *rest = t.children()
            out = self.linear(first)
            for c in rest:
                out = _subtract(out, self.linear(c))
            return out
        if z3.is_app(t) and t.decl().kind() == z3.Z3_OP_UMINUS:
            return {k: -v for k, v in self.linear(t.arg(0)).items()}
        if z3.is_mul(t):
            scalar, rest = Fraction(1), []
            for c in t.children():
                if z3.is_int_value(c):
                    scalar *= c.as_long()
                else:
                    rest.append(c)
            if len(rest) != 1:
                raise ReadError(f"a product of variables in {t}: not linear")
            return {k: scalar * v for k, v in self.linear(rest[0]).items()}
        if z3.is_app_of(t, z3.Z3_OP_ITE):
            raise ReadError(f"an integer `if` inside arithmetic in {t}")
        raise ReadError(f"no spec expression for the integer {t}")

    # ------------------------------------------------------------ other values

    def value(self, t: z3.ExprRef) -> ir.Expr:
        """A non-integer, non-boolean value (strings, enums, states, sets), or a bool/int leaf."""
        if z3.is_const(t) and str(t) in self.names:
            return self.names[str(t)]
        if z3.is_app_of(t, z3.Z3_OP_ITE):
            then, orelse = self.value(t.arg(1)), self.value(t.arg(2))
            return ir.Ite(self.expr(t.arg(0)), then, orelse, then.type)
        if z3.is_int(t):
            if _has_ite(t):
                raise ReadError(f"an integer `if` inside arithmetic in {t}")
            return self._render_value(self.linear(t))
        if z3.is_bool(t):
            return self.expr(t)
        if z3.is_string_value(t):
            return ir.Lit(t.as_string(), ir.STRING)
        if z3.is_const(t) and str(t) in self._enum_of:
            return ir.EnumLit(str(t), self._enum_of[str(t)])
        if z3.is_K(t):
            if not z3.is_false(t.arg(0)):
                raise ReadError(f"a full set in {t}")
            return ir.SetLit((), ir.EmptySetType())
        if z3.is_store(t):
            base, item, present = t.arg(0), t.arg(1), t.arg(2)
            if not z3.is_true(present):
                raise ReadError(f"a set with an element removed in {t}")
            single = ir.SetLit((self.value(item),), ir.EmptySetType())
            inner = self.value(base)
            if isinstance(inner, ir.SetLit):
                return ir.SetLit((*inner.items, *single.items), ir.EmptySetType())
            return ir.Binary("union", inner, single, inner.type)
        if z3.is_map(t):
            return self._set_map(t)
        raise ReadError(f"no spec expression for the value {t}")

    def _set_map(self, t: z3.ExprRef) -> ir.Expr:
        f = z3.get_map_func(t)
        args = [t.arg(i) for i in range(t.num_args())]
        if f.kind() == z3.Z3_OP_OR:
            return self._fold("union", args)
        if f.kind() == z3.Z3_OP_AND:
            negated = [a for a in args if z3.is_map(a) and z3.get_map_func(a).kind() == z3.Z3_OP_NOT]
            if len(args) == 2 and len(negated) == 1:
                kept = next(a for a in args if a is not negated[0])
                left = self.value(kept)
                return ir.Binary("diff", left, self.value(negated[0].arg(0)), left.type)
            return self._fold("inter", args)
        raise ReadError(f"no spec expression for the set operation in {t}")

    def _fold(self, op: ir.BinaryOp, args: list[z3.ExprRef]) -> ir.Expr:
        out = self.value(args[0])
        for a in args[1:]:
            out = ir.Binary(op, out, self.value(a), out.type)
        return out

    def _render_value(self, form: Linear) -> ir.Expr:
        terms = sorted(((k, v) for k, v in form.items() if k and v != 0), key=lambda kv: self._order(kv[0]))
        constant = int(form.get("", Fraction(0)))
        out = self._sum([(k, int(v)) for k, v in terms if v > 0])
        for name, v in terms:
            for _ in range(int(-v) if v < 0 else 0):
                out = ir.Binary("sub", out if out is not None else ir.Lit(0, ir.INT_ANY), self._leaf(name),
                                ir.INT_ANY)
        return _plus_constant(out, constant) if out is not None else ir.Lit(constant, ir.INT_ANY)


def _add_all(parts: list[ir.Expr]) -> ir.Expr:
    out = parts[0]
    for p in parts[1:]:
        out = ir.Binary("add", out, p, ir.INT_ANY)
    return out


def _plus_constant(e: ir.Expr, constant: int) -> ir.Expr:
    if constant > 0:
        return ir.Binary("add", e, ir.Lit(constant, ir.INT_ANY), ir.INT_ANY)
    if constant < 0:
        return ir.Binary("sub", e, ir.Lit(-constant, ir.INT_ANY), ir.INT_ANY)
    return e


def _plus(a: Linear, b: Linear) -> Linear:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, Fraction(0)) + v
    return {k: v for k, v in out.items() if v != 0 or k == ""}


def _subtract(a: Linear, b: Linear) -> Linear:
    return _plus(a, {k: -v for k, v in b.items()})


def _has_ite(t: z3.ExprRef) -> bool:
    return z3.is_app_of(t, z3.Z3_OP_ITE) or any(_has_ite(c) for c in t.children())


def _is_leaf(e: ir.Expr) -> bool:
    return isinstance(e, ir.VarRef | ir.KeyRef | ir.StateRef)


_OPPOSITE: dict[ir.BinaryOp, ir.BinaryOp] = {"eq": "ne", "ne": "eq", "lt": "ge", "ge": "lt", "gt": "le", "le": "gt"}


def _negated(e: ir.Expr) -> ir.Expr:
    if isinstance(e, ir.Binary) and e.op in _OPPOSITE:
        return ir.Binary(_OPPOSITE[e.op], e.left, e.right, ir.BOOL)
    if isinstance(e, ir.Lit) and isinstance(e.value, bool):
        return ir.Lit(not e.value, ir.BOOL)
    return ir.negate(e)



def tidy(atoms: list[ir.Expr]) -> list[ir.Expr]:
    """Atoms as a person would write them: `a <= b` with `a >= b` is `a == b`; `s' == s | s'` is `s subset s'`."""
    out = [_subset(a) for a in atoms]
    bounds: dict[tuple[ir.Expr, ir.Expr], set[str]] = {}
    for a in out:
        if isinstance(a, ir.Binary) and a.op in ("le", "ge"):
            bounds.setdefault((a.left, a.right), set()).add(a.op)
    merged: list[ir.Expr] = []
    for a in out:
        if isinstance(a, ir.Binary) and a.op in ("le", "ge") and bounds.get((a.left, a.right)) == {"le", "ge"}:
            if a.op == "le":
                merged.append(ir.Binary("eq", a.left, a.right, ir.BOOL))
            continue
        merged.append(a)
    return merged


def _subset(a: ir.Expr) -> ir.Expr:
    if isinstance(a, ir.Binary) and a.op == "eq" and isinstance(a.right, ir.Binary) and a.right.op == "union":
        x, (u1, u2) = a.left, (a.right.left, a.right.right)
        if u2 == x:
            return ir.Binary("subset", u1, x, ir.BOOL)
        if u1 == x:
            return ir.Binary("subset", u2, x, ir.BOOL)
    return a
