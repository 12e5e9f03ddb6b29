"""Name resolution and type checking of expressions: syntax expressions → typed IR expressions.

Owns: `Symbols` (what names a machine declares), `Scope` (what an expression may refer to where it stands: a default,
an invariant, a guard, an effect, a step property), and `ExprChecker`, which reports every unknown name and type error
as a diagnostic and returns `None` for an expression it could not type. `def`s and event `let`s are inlined here, so
backends never see them. Constructs a backend cannot express are rejected here (e.g. `size(s)` other than compared
with 0 or 1: z3 has no set cardinality).
Must not import: lark, z3, pyspark.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import ir
from . import syntax as s
from .diagnostics import Diagnostics, Span, unknown_name_message


@dataclass(slots=True)
class Symbols:
    """Every name a machine declares, by category (the checker guarantees they are disjoint)."""

    machine: str
    keys: dict[str, ir.Field] = field(default_factory=dict)
    variables: dict[str, ir.Field] = field(default_factory=dict)
    consts: dict[str, ir.Lit] = field(default_factory=dict)
    defs: dict[str, s.DefDecl] = field(default_factory=dict)
    enums: dict[str, ir.EnumType] = field(default_factory=dict)
    enum_members: dict[str, ir.EnumType] = field(default_factory=dict)
    states: tuple[str, ...] = ()
    checked_defs: dict[str, ir.Expr | None] = field(default_factory=dict)
    lost: set[str] = field(default_factory=set)  # declared by declarations that failed: uses are not reported again
    defs_in_progress: dict[str, None] = field(default_factory=dict)  # ordered: the cycle, for messages

    @property
    def state_type(self) -> ir.StateType:
        return ir.StateType(self.machine, self.states)

    def value_names(self) -> list[str]:
        return [*self.keys, *self.variables, *self.consts, *self.defs, *self.enum_members, *self.states]


@dataclass(frozen=True, slots=True)
class Scope:
    """Where an expression stands and what it may therefore mention."""

    what: str  # used in messages: "a guard", "an invariant", ...
    variables: bool = True
    primes: bool = False
    pending: bool = False
    params: tuple[ir.Field, ...] = ()
    lets: tuple[tuple[str, ir.Expr], ...] = ()

    def with_let(self, name: str, value: ir.Expr) -> Scope:
        return Scope(self.what, self.variables, self.primes, self.pending, self.params, (*self.lets, (name, value)))


CONSTANT = Scope("a constant", variables=False)
DEF = Scope("a definition")
INVARIANT = Scope("an invariant")
STEP = Scope("a step property", primes=True)

_COMPARE = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}


class ExprChecker:
    def __init__(self, symbols: Symbols, diags: Diagnostics) -> None:
        self.sym = symbols
        self.diags = diags

    # ------------------------------------------------------------ entry points

    def check(self, e: s.ExprSyntax, scope: Scope, expect: ir.Type | None = None) -> ir.Expr | None:
        """Type `e` in `scope`; when `expect` is given, also require that type. Reports and returns None on error."""
        out = self._expr(e, scope)
        if out is None:
            return None
        for node in ir.walk(out):
            if isinstance(node, ir.Call) and node.function == "size":
                self.diags.error(node.span, "size() may only test emptiness: `size(s) == 0`, `!= 0`, `> 0`, `>= 1`, "
                                 "`< 1` or `<= 0` (the z3 backend has no set cardinality); or write `s == {}` / "
                                 "`s != {}`")
                return None
        if expect is not None and not ir.compatible(out.type, expect):
            self.diags.error(e.span, f"{scope.what} must be {expect}, not {out.type}")
            return None
        return out

    def check_bool(self, e: s.ExprSyntax, scope: Scope) -> ir.Expr | None:
        return self.check(e, scope, ir.BOOL)

    # ------------------------------------------------------------ dispatch

    def _expr(self, e: s.ExprSyntax, scope: Scope) -> ir.Expr | None:
        if isinstance(e, s.IntSyntax):
            return ir.Lit(e.value, ir.IntType("int", e.value, e.value), e.span)
        if isinstance(e, s.BoolSyntax):
            return ir.Lit(e.value, ir.BOOL, e.span)
        if isinstance(e, s.StringSyntax):
            return ir.Lit(e.value, ir.STRING, e.span)
        if isinstance(e, s.NameSyntax):
            return self._name(e, scope)
        if isinstance(e, s.PrimedSyntax):
            return self._primed(e, scope)
        if isinstance(e, s.StateSyntax):
            if not scope.variables:
                return self._error(e.span, f"`state` cannot be used in {scope.what}")
            return ir.StateRef(False, self.sym.state_type, e.span)
        if isinstance(e, s.PendingSyntax):
            if not scope.pending:
                return self._error(e.span, f"`pending` is only known while an event is handled, not in {scope.what}")
            return ir.PendingRef(ir.BOOL, e.span)
        if isinstance(e, s.SetLitSyntax):
            return self._set_lit(e, scope)
        if isinstance(e, s.CallSyntax):
            return self._call(e, scope)
        if isinstance(e, s.IteSyntax):
            return self._ite(e, scope)
        if isinstance(e, s.UnarySyntax):
            return self._unary(e, scope)
        return self._binary(e, scope)

    def _error(self, span: Span, message: str) -> ir.Expr | None:
        """Report a problem with the expression at `span`; the expression has no type (None)."""
        self.diags.error(span, message)
        return None

    # ------------------------------------------------------------ names

    def _name(self, e: s.NameSyntax, scope: Scope) -> ir.Expr | None:
        name = e.name
        for let_name, value in reversed(scope.lets):
            if let_name == name:
                return value
        for p in scope.params:
            if p.name == name:
                return ir.ParamRef(name, p.type, e.span)
        if name in self.sym.variables or name in self.sym.keys:
            if not scope.variables:
                return self._error(e.span, f"{scope.what} cannot refer to the variable '{name}'")
            if name in self.sym.keys:
                return ir.KeyRef(name, self.sym.keys[name].type, e.span)
            return ir.VarRef(name, False, self.sym.variables[name].type, e.span)
        if name in self.sym.consts:
            lit = self.sym.consts[name]
            return ir.Lit(lit.value, lit.type, e.span)
        if name in self.sym.defs:
            return self._def(name, e.span, scope)
        if name in self.sym.enum_members:
            return ir.EnumLit(name, self.sym.enum_members[name], e.span)
        if name in self.sym.states:
            return ir.EnumLit(name, self.sym.state_type, e.span)
        if name in self.sym.lost:
            return None  # its declaration already has an error
        known = [*self.sym.value_names(), *(p.name for p in scope.params), *(n for n, _ in scope.lets)]
        if not scope.variables:
            known = [n for n in known if n not in self.sym.variables and n not in self.sym.keys]
        message, _ = unknown_name_message("name", name, known)
        return self._error(e.span, message)

    def _def(self, name: str, use: Span, scope: Scope) -> ir.Expr | None:
        if not scope.variables:
            return self._error(use, f"{scope.what} cannot use the definition '{name}' (definitions may read variables)")
        if name in self.sym.checked_defs:
            return self.sym.checked_defs[name]
        if name in self.sym.defs_in_progress:
            cycle = [*self.sym.defs_in_progress]
            if len(cycle) <= 1:
                return self._error(use, f"definition '{name}' refers to itself")
            return self._error(use, "definitions refer to each other in a cycle: " + " -> ".join([*cycle, name]))
        self.sym.defs_in_progress[name] = None
        value = self._expr(self.sym.defs[name].value, DEF)
        self.sym.defs_in_progress.pop(name, None)
        self.sym.checked_defs[name] = value
        return value

    def _primed(self, e: s.PrimedSyntax, scope: Scope) -> ir.Expr | None:
        if not scope.primes:
            return self._error(e.span, f"primed name {e.name}' is not allowed in {scope.what}; primes name the next "
                                       "state, only on the left of `ensures` and in `step` properties")
        if e.name == "state":
            return ir.StateRef(True, self.sym.state_type, e.span)
        if e.name in self.sym.variables:
            return ir.VarRef(e.name, True, self.sym.variables[e.name].type, e.span)
        if e.name in self.sym.lost:
            return None
        if e.name in self.sym.keys or e.name in self.sym.consts or any(p.name == e.name for p in scope.params):
            return self._error(e.span, f"'{e.name}' cannot be primed: only variables and `state` change")
        message, _ = unknown_name_message("variable", e.name, self.sym.variables)
        return self._error(e.span, message)

    # ------------------------------------------------------------ compound forms

    def _set_lit(self, e: s.SetLitSyntax, scope: Scope) -> ir.Expr | None:
        items = [self._expr(i, scope) for i in e.items]
        if any(i is None for i in items):
            return None
        typed = [i for i in items if i is not None]
        if not typed:
            return ir.SetLit((), ir.EmptySetType(), e.span)
        element = _widen(typed[0].type)
        for item in typed[1:]:
            if not ir.compatible(item.type, element):
                return self._error(item.span, f"set elements must have one type: {element} and {item.type}")
        if isinstance(element, ir.SetType | ir.EmptySetType):
            return self._error(e.span, "sets of sets are not supported")
        return ir.SetLit(tuple(typed), ir.SetType(element), e.span)

    def _call(self, e: s.CallSyntax, scope: Scope) -> ir.Expr | None:
        fn = e.function.text
        args = [self._expr(a, scope) for a in e.args]
        if any(a is None for a in args):
            return None
        typed = [a for a in args if a is not None]
        if fn == "size":
            if len(typed) != 1 or not ir.is_set(typed[0].type):
                return self._error(e.span, "size() takes one set")
            return ir.Call("size", tuple(typed), ir.INT_ANY, e.span)
        if fn in ("min", "max"):
            if len(typed) != 2 or not all(ir.is_int(a.type) for a in typed):
                return self._error(e.span, f"{fn}() takes two integers")
            return ir.Call(fn, tuple(typed), ir.INT_ANY, e.span)  # type: ignore[arg-type]
        return self._error(e.function.span, f"unknown function '{fn}' (the functions are size, min and max)")

    def _ite(self, e: s.IteSyntax, scope: Scope) -> ir.Expr | None:
        cond = self._expr(e.cond, scope)
        then = self._expr(e.then, scope)
        orelse = self._expr(e.orelse, scope)
        if cond is None or then is None or orelse is None:
            return None
        if cond.type != ir.BOOL:
            return self._error(e.cond.span, f"the condition of `if` must be bool, not {cond.type}")
        if not ir.compatible(then.type, orelse.type):
            return self._error(e.span, f"both branches of `if` must have one type: {then.type} and {orelse.type}")
        return ir.Ite(cond, then, orelse, _join(then.type, orelse.type), e.span)

    def _unary(self, e: s.UnarySyntax, scope: Scope) -> ir.Expr | None:
        operand = self._expr(e.operand, scope)
        if operand is None:
            return None
        if e.op == "not":
            if operand.type != ir.BOOL:
                return self._error(e.operand.span, f"`not` needs a bool, not {operand.type}")
            return ir.Unary("not", operand, ir.BOOL, e.span)
        if not ir.is_int(operand.type):
            return self._error(e.operand.span, f"unary '-' needs an integer, not {operand.type}")
        return ir.Unary("neg", operand, ir.INT_ANY, e.span)

    def _binary(self, e: s.BinarySyntax, scope: Scope) -> ir.Expr | None:
        left = self._expr(e.left, scope)
        right = self._expr(e.right, scope)
        if left is None or right is None:
            return None
        op = e.op
        if op in ("->", "or", "and"):
            for side, node in ((left, e.left), (right, e.right)):
                if side.type != ir.BOOL:
                    return self._error(node.span, f"'{op}' needs bool operands, not {side.type}")
            return ir.Binary({"->": "implies", "or": "or", "and": "and"}[op], left, right, ir.BOOL, e.span)  # type: ignore[arg-type]
        if op in _COMPARE:
            return self._compare(e, _COMPARE[op], left, right)
        if op in ("in", "not in"):
            return self._membership(e, left, right)
        if op == "subset":
            if not (ir.is_set(left.type) and ir.is_set(right.type) and ir.compatible(left.type, right.type)):
                return self._error(e.op_span, f"'subset' needs two sets of one type, not {left.type} and {right.type}")
            return ir.Binary("subset", left, right, ir.BOOL, e.span)
        return self._arith(e, left, right)

    def _compare(self, e: s.BinarySyntax, op: str, left: ir.Expr, right: ir.Expr) -> ir.Expr | None:
        emptiness = _size_test(op, left, right)
        if emptiness is not None:
            return emptiness
        if op in ("eq", "ne"):
            if not ir.compatible(left.type, right.type):
                return self._error(e.op_span, f"cannot compare {left.type} with {right.type}")
        elif not (ir.is_int(left.type) and ir.is_int(right.type)):
            hint = "; for sets, use `subset`" if ir.is_set(left.type) and ir.is_set(right.type) else ""
            return self._error(e.op_span, f"'{e.op}' needs integers, not {left.type} and {right.type}{hint}")
        for side in (left, right):  # a literal compared with a variable must fit the variable's type
            other = right if side is left else left
            if isinstance(side, ir.Lit) and isinstance(side.value, int) and not isinstance(side.value, bool) \
                    and isinstance(other.type, ir.IntType) and other.type.name != "int" \
                    and not other.type.contains(side.value) and op in ("eq", "ne"):
                bounds = f"{other.type.lo}..{other.type.hi}"
                return self._error(side.span, f"{side.value} is outside {other.type} ({bounds})")
        return ir.Binary(op, left, right, ir.BOOL, e.span)  # type: ignore[arg-type]

    def _membership(self, e: s.BinarySyntax, left: ir.Expr, right: ir.Expr) -> ir.Expr | None:
        if not ir.is_set(right.type):
            return self._error(e.right.span, f"'{e.op}' needs a set on the right, not {right.type}")
        if isinstance(right.type, ir.SetType) and not ir.compatible(left.type, right.type.element):
            return self._error(e.op_span, f"cannot look for a {left.type} in a {right.type}")
        test = ir.Binary("in", left, right, ir.BOOL, e.span)
        return test if e.op == "in" else ir.Unary("not", test, ir.BOOL, e.span)

    def _arith(self, e: s.BinarySyntax, left: ir.Expr, right: ir.Expr) -> ir.Expr | None:
        op = e.op
        if ir.is_int(left.type) and ir.is_int(right.type) and op in ("+", "-"):
            return ir.Binary("add" if op == "+" else "sub", left, right, ir.INT_ANY, e.span)
        if ir.is_set(left.type) and ir.is_set(right.type) and op in ("|", "&", "-"):
            if not ir.compatible(left.type, right.type):
                return self._error(e.op_span, f"cannot combine {left.type} with {right.type}")
            kind = {"|": "union", "&": "inter", "-": "diff"}[op]
            return ir.Binary(kind, left, right, _join(left.type, right.type), e.span)  # type: ignore[arg-type]
        what = "integers" if op in ("+",) else "two integers or two sets" if op == "-" else "two sets"
        hint = "; the union of two sets is `|`" if op == "+" and ir.is_set(left.type) and ir.is_set(right.type) else ""
        return self._error(e.op_span, f"'{op}' needs {what}, not {left.type} and {right.type}{hint}")


def _widen(t: ir.Type) -> ir.Type:
    return ir.INT_ANY if isinstance(t, ir.IntType) else t


def _join(a: ir.Type, b: ir.Type) -> ir.Type:
    if isinstance(a, ir.EmptySetType):
        return b
    if isinstance(b, ir.EmptySetType):
        return a
    if isinstance(a, ir.IntType) and isinstance(b, ir.IntType):
        return a if a == b else ir.INT_ANY
    return a


def _size_test(op: str, left: ir.Expr, right: ir.Expr) -> ir.Expr | None:
    """Rewrite `size(s) OP k` (k ∈ {0, 1}, either side) into an emptiness test that every backend can express."""
    if isinstance(right, ir.Call) and right.function == "size":
        flipped = {"lt": "gt", "gt": "lt", "le": "ge", "ge": "le", "eq": "eq", "ne": "ne"}[op]
        return _size_test(flipped, right, left)
    if not (isinstance(left, ir.Call) and left.function == "size" and isinstance(right, ir.Lit)):
        return None
    k = right.value
    empty_when = {("eq", 0), ("le", 0), ("lt", 1)}
    nonempty_when = {("ne", 0), ("gt", 0), ("ge", 1)}
    the_set = left.args[0]
    empty = ir.Binary("eq", the_set, ir.SetLit((), ir.EmptySetType(), right.span), ir.BOOL, left.span)
    if (op, k) in empty_when:
        return empty
    if (op, k) in nonempty_when:
        return ir.Unary("not", empty, ir.BOOL, left.span)
    return None
