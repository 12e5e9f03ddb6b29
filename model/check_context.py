"""What the checker's passes share (`kcoord.model.check` runs them): one machine's syntax and source text, the
diagnostics, the symbol table, what the passes have found so far, and the lookups several of them make.

Owns: `Checking` (that shared state, and `declare`, `type_of`, `constant`, `state_list`, `error_name`, `text`),
`Rows` (the rows lowered so far, numbered in order), and the small pure helpers (`fold`, `range_text`, `members`,
`first_declarations`, `snake_case`).
Must not import: lark, z3, pyspark.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TypeVar

from . import ir
from . import syntax as s
from .diagnostics import Diagnostics, Span, unknown_name_message
from .kafka_errors import KAFKA_ERRORS
from .traceschema import COMMON
from .typecheck import ExprChecker, Scope, Symbols

T = TypeVar("T")
#: the columns every trace row has: no key field or variable may take one of these names
TRACE_COLUMNS = frozenset(name for name, _ in COMMON)


@dataclass(slots=True)
class Rows:
    transitions: list[ir.Transition] = field(default_factory=list)
    rejections: list[ir.Rejection] = field(default_factory=list)
    next_index: int = 0

    def index(self) -> int:
        self.next_index += 1
        return self.next_index - 1


class Checking:
    """One machine being checked. The passes read and extend it in order: declarations (names, types, states,
    variables), event lowering (events and rows), properties, structure."""

    def __init__(self, syntax: s.MachineSyntax, diags: Diagnostics, text: str, *, structure: bool = True) -> None:
        self.syn = syntax
        self.lines = text.split("\n")
        self.structure = structure  # False when declarations were lost to syntax errors
        self.diags = diags
        self.sym = Symbols(syntax.name.text, lost=set(syntax.lost_names))
        self.exprs = ExprChecker(self.sym, diags)
        self.first_declared = first_declarations(syntax.members)
        self.names: dict[str, Span] = {}  # every value-level name, for duplicate detection
        self.kind: ir.MachineKind = "coordinator"
        self.keys: list[ir.Field] = []
        self.variables: list[ir.Field] = []
        self.states: list[ir.State] = []
        self.events: list[ir.Event] = []
        self.rows = Rows()
        self.rows_incomplete = False  # a row failed to check: structural checks would only repeat that error
        self.writes_spans: list[Span] = []  # every `writes` clause (they need a `persist` declaration)

    def text(self, span: Span) -> str:
        """The source text of `span`, whitespace folded (for showing a condition as the user wrote it)."""
        if span.line <= 0:
            return ""
        if span.line == span.end_line:
            piece = self.lines[span.line - 1][span.col - 1: span.end_col - 1]
        else:
            first = self.lines[span.line - 1][span.col - 1:]
            middle = self.lines[span.line: span.end_line - 1]
            last = self.lines[span.end_line - 1][: span.end_col - 1]
            piece = " ".join([first, *middle, last])
        return " ".join(piece.split())

    def declare(self, ident: s.Ident, what: str = "name") -> bool:
        if ident.text in ("state", "pending"):
            self.diags.error(ident.span, f"'{ident.text}' is a reserved word")
            return False
        first = self.first_declared.get(ident.text, ident.span)
        if ident.text in self.names or first != ident.span:
            self.diags.error(ident.span, f"duplicate {what} '{ident.text}' (first declared at {first})")
            return False
        self.names[ident.text] = ident.span
        return True

    def unique(self, idents: list[s.Ident], what: str) -> None:
        seen: dict[str, Span] = {}
        for ident in idents:
            if ident.text in seen:
                self.diags.error(ident.span, f"duplicate {what} '{ident.text}' (first declared at {seen[ident.text]})")
            else:
                seen[ident.text] = ident.span

    def type_of(self, t: s.TypeSyntax) -> ir.Type | None:
        if isinstance(t, s.RangeTypeSyntax):
            if t.lo > t.hi:
                self.diags.error(t.span, f"empty range {t.lo}..{t.hi}: the lower bound must not exceed the upper")
                return None
            return ir.IntType(f"{t.lo}..{t.hi}", t.lo, t.hi)
        if isinstance(t, s.SetTypeSyntax):
            element = self.type_of(t.element)
            if element is None:
                return None
            if isinstance(element, ir.SetType):
                self.diags.error(t.span, "sets of sets are not supported")
                return None
            return ir.SetType(element)
        name = t.name.text
        if name == "bool":
            return ir.BOOL
        if name in ir.BUILTIN_INT_TYPES:
            return ir.BUILTIN_INT_TYPES[name]
        if name in ir.STRING_ALIASES:
            return ir.StringType(name)
        if name in self.sym.enums:
            return self.sym.enums[name]
        if name in self.sym.lost:
            return None  # an enum whose declaration failed to parse
        known = ["bool", *ir.BUILTIN_INT_TYPES, *ir.STRING_ALIASES, *self.sym.enums]
        message, _ = unknown_name_message("type", name, known)
        self.diags.error(t.name.span, message)
        return None

    def constant(self, e: s.ExprSyntax, typ: ir.Type, what: str) -> ir.Lit | None:
        expr = self.exprs.check(e, Scope(f"{what} (a constant)", variables=False))
        if expr is None:
            return None
        value = fold(expr)
        if value is None:
            self.diags.error(e.span, f"{what} must be a constant (a literal or a `const`)")
            return None
        if not ir.compatible(value.type, typ) and not (isinstance(expr, ir.EnumLit) and expr.type == typ):
            self.diags.error(e.span, f"{what} has type {value.type}, expected {typ}")
            return None
        if isinstance(typ, ir.IntType) and isinstance(value.value, int) and not typ.contains(value.value):
            self.diags.error(e.span, f"{what} {value.value} is outside {range_text(typ)}")
            return None
        return ir.Lit(value.value, typ, value.span)

    def state_list(self, sl: s.StateList | None) -> tuple[str, ...]:
        live = tuple(st.name for st in self.states if not st.final)
        if sl is None or sl.every:
            return live
        out: list[str] = []
        for ident in sl.names:
            if ident.text in self.sym.lost and ident.text not in self.sym.states:
                continue
            if ident.text not in self.sym.states:
                message, _ = unknown_name_message("state", ident.text, self.sym.states)
                self.diags.error(ident.span, message)
            elif ident.text in out:
                self.diags.error(ident.span, f"state '{ident.text}' listed twice")
            else:
                out.append(ident.text)
        order = {name: i for i, name in enumerate(self.sym.states)}
        return tuple(sorted(out, key=order.__getitem__))

    def error_name(self, ident: s.Ident) -> int | None:
        """The code of a Kafka error name; for client and task machines also a Java exception the client throws
        (`IllegalStateException`: no wire code, -1)."""
        if self.kind in ("client", "task") and re.fullmatch(r"[A-Z][A-Za-z]*Exception", ident.text):
            return -1
        if ident.text not in KAFKA_ERRORS:
            message, _ = unknown_name_message("Kafka error", ident.text, KAFKA_ERRORS)
            self.diags.error(ident.span, message)
            return None
        return KAFKA_ERRORS[ident.text][0]

    def state_named(self, name: str) -> ir.State:
        return next(st for st in self.states if st.name == name)


def snake_case(name: str) -> str:
    """The file stem of machine `name` (`TransactionCoordinator` lives in `transaction_coordinator.sm`)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def members(syntax: tuple[s.MemberDecl, ...], cls: type[T]) -> list[T]:
    """The declarations of one kind, in source order."""
    return [m for m in syntax if isinstance(m, cls)]


def first_declarations(syntax: tuple[s.MemberDecl, ...]) -> dict[str, Span]:
    """Where each value-level name is first declared, in source order (for 'first declared at' in duplicates)."""
    first: dict[str, Span] = {}
    for m in syntax:
        idents: list[s.Ident] = []
        if isinstance(m, s.KeyDecl):
            idents = [f.name for f in m.fields]
        elif isinstance(m, s.EnumDecl):
            idents = list(m.members)
        elif isinstance(m, s.ConstDecl | s.DefDecl | s.VarDecl | s.StateDecl):
            idents = [m.name]
        for ident in idents:
            first.setdefault(ident.text, ident.span)
    return first


def range_text(t: ir.IntType) -> str:
    return t.name if ".." in t.name else f"{t.name} ({t.lo}..{t.hi})"


def fold(e: ir.Expr) -> ir.Lit | None:
    """Evaluate a constant expression (literals, negation, set literals, + and -), or None if it is not constant."""
    if isinstance(e, ir.Lit):
        return e
    if isinstance(e, ir.EnumLit):
        return ir.Lit(e.member, e.type, e.span)
    if isinstance(e, ir.Unary) and e.op == "neg":
        inner = fold(e.operand)
        return ir.Lit(-inner.value, ir.INT_ANY, e.span) if inner is not None and isinstance(inner.value, int) else None
    if isinstance(e, ir.SetLit):
        items = [fold(i) for i in e.items]
        if any(i is None for i in items):
            return None
        return ir.Lit(frozenset(i.value for i in items if i is not None), e.type, e.span)
    if isinstance(e, ir.Binary) and e.op in ("add", "sub"):
        left, right = fold(e.left), fold(e.right)
        if left is None or right is None or not isinstance(left.value, int) or not isinstance(right.value, int):
            return None
        value = left.value + right.value if e.op == "add" else left.value - right.value
        return ir.Lit(value, ir.INT_ANY, e.span)
    return None
