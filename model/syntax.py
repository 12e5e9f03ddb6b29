"""Parse-layer syntax nodes: what the user wrote, with a span on every node, before any name is resolved.

Owns: the syntax dataclasses produced by `kcoord.model.parser` and consumed by `kcoord.model.check`. These carry no
types and no resolved references; the semantic IR (`kcoord.model.ir`) is a separate set of classes.
Must not import: lark (the parser converts), z3, pyspark.
"""

from __future__ import annotations

from dataclasses import dataclass

from .diagnostics import Span


@dataclass(frozen=True, slots=True)
class Ident:
    text: str
    span: Span


# ---------------------------------------------------------------- types


@dataclass(frozen=True, slots=True)
class NamedTypeSyntax:
    name: Ident
    span: Span


@dataclass(frozen=True, slots=True)
class SetTypeSyntax:
    element: TypeSyntax
    span: Span


@dataclass(frozen=True, slots=True)
class RangeTypeSyntax:
    lo: int
    hi: int
    span: Span


TypeSyntax = NamedTypeSyntax | SetTypeSyntax | RangeTypeSyntax


# ---------------------------------------------------------------- expressions


@dataclass(frozen=True, slots=True)
class IntSyntax:
    value: int
    span: Span


@dataclass(frozen=True, slots=True)
class BoolSyntax:
    value: bool
    span: Span


@dataclass(frozen=True, slots=True)
class StringSyntax:
    value: str
    span: Span


@dataclass(frozen=True, slots=True)
class NameSyntax:
    name: str
    span: Span


@dataclass(frozen=True, slots=True)
class PrimedSyntax:
    """`name'`: the value of a variable (or of `state`) after the transition."""

    name: str
    span: Span


@dataclass(frozen=True, slots=True)
class StateSyntax:
    span: Span


@dataclass(frozen=True, slots=True)
class PendingSyntax:
    span: Span


@dataclass(frozen=True, slots=True)
class SetLitSyntax:
    items: tuple[ExprSyntax, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class CallSyntax:
    function: Ident
    args: tuple[ExprSyntax, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class IteSyntax:
    cond: ExprSyntax
    then: ExprSyntax
    orelse: ExprSyntax
    span: Span


@dataclass(frozen=True, slots=True)
class UnarySyntax:
    op: str  # "not" | "neg"
    operand: ExprSyntax
    span: Span


@dataclass(frozen=True, slots=True)
class BinarySyntax:
    op: str  # "->" "or" "and" "==" "!=" "<" "<=" ">" ">=" "in" "not in" "subset" "+" "-" "|" "&"
    left: ExprSyntax
    right: ExprSyntax
    span: Span
    op_span: Span


ExprSyntax = (
    IntSyntax
    | BoolSyntax
    | StringSyntax
    | NameSyntax
    | PrimedSyntax
    | StateSyntax
    | PendingSyntax
    | SetLitSyntax
    | CallSyntax
    | IteSyntax
    | UnarySyntax
    | BinarySyntax
)


# ---------------------------------------------------------------- declarations


@dataclass(frozen=True, slots=True)
class TypedName:
    name: Ident
    type: TypeSyntax
    span: Span


@dataclass(frozen=True, slots=True)
class KeyDecl:
    fields: tuple[TypedName, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class KindDecl:
    kind: Ident
    span: Span


@dataclass(frozen=True, slots=True)
class EnumDecl:
    name: Ident
    members: tuple[Ident, ...]
    doc: str
    span: Span


@dataclass(frozen=True, slots=True)
class ConstDecl:
    name: Ident
    type: TypeSyntax
    value: ExprSyntax
    doc: str
    span: Span


@dataclass(frozen=True, slots=True)
class DefDecl:
    name: Ident
    value: ExprSyntax
    doc: str
    span: Span


@dataclass(frozen=True, slots=True)
class VarDecl:
    name: Ident
    type: TypeSyntax
    default: ExprSyntax
    doc: str
    span: Span


@dataclass(frozen=True, slots=True)
class StateDecl:
    name: Ident
    flags: tuple[Ident, ...]
    doc: str
    span: Span


@dataclass(frozen=True, slots=True)
class LetClause:
    name: Ident
    value: ExprSyntax
    span: Span


@dataclass(frozen=True, slots=True)
class RequiresClause:
    cond: ExprSyntax
    span: Span
    doc: str = ""


@dataclass(frozen=True, slots=True)
class CheckClause:
    cond: ExprSyntax
    error: Ident
    doc: str
    span: Span


@dataclass(frozen=True, slots=True)
class StateList:
    """`*` (every state) or explicit names."""

    names: tuple[Ident, ...]
    every: bool
    span: Span


@dataclass(frozen=True, slots=True)
class RejectClause:
    states: StateList | None  # None: every state
    cond: ExprSyntax | None
    error: Ident
    doc: str
    span: Span


@dataclass(frozen=True, slots=True)
class TransitionClause:
    sources: StateList
    target: Ident  # text "" for `stay`: the row keeps each source state and is not an edge
    guards: tuple[ExprSyntax, ...]
    ensures: tuple[ExprSyntax, ...]
    choice: bool
    doc: str
    span: Span
    answers: tuple[Ident, ...] = ()  # `answer ERROR`: the response error when this transition is taken (default NONE)
    writes: tuple[Span, ...] = ()  # each `writes` clause: the transition writes the instance's persisted record


EventClause = LetClause | RequiresClause | CheckClause | RejectClause | TransitionClause


@dataclass(frozen=True, slots=True)
class EventDecl:
    name: Ident
    params: tuple[TypedName, ...]
    doc: str
    clauses: tuple[EventClause, ...]
    span: Span
    internal: bool = False  # fired by the coordinator itself (timers, marker completion), not by a request


@dataclass(frozen=True, slots=True)
class InvariantDecl:
    name: Ident
    doc: str
    expr: ExprSyntax
    span: Span


@dataclass(frozen=True, slots=True)
class StepDecl:
    name: Ident
    doc: str
    expr: ExprSyntax
    span: Span
    event: Ident | None = None  # `step NAME on EVENT`: only that event's transitions, which may read its parameters


@dataclass(frozen=True, slots=True)
class PersistDecl:
    """`persist RECORD [doc]: field, ...`: the record an instance is written as, and the variables (and `state`) it
    carries."""

    record: Ident
    doc: str
    fields: tuple[Ident, ...]  # `state` is the Ident "state"
    span: Span


@dataclass(frozen=True, slots=True)
class TraceDecl:
    """A trace-level property. `form` picks the template; `args` are its names, `states` and `bound` as needed."""

    name: Ident
    doc: str
    form: str  # exclusive | monotonic | within | before | fenced
    subject: tuple[Ident, ...]
    per: tuple[Ident, ...]
    states_from: StateList | None
    states_to: StateList | None
    bound: ExprSyntax | None
    span: Span


MemberDecl = (
    KeyDecl
    | KindDecl
    | EnumDecl
    | ConstDecl
    | DefDecl
    | VarDecl
    | StateDecl
    | EventDecl
    | InvariantDecl
    | StepDecl
    | TraceDecl
    | PersistDecl
)


@dataclass(frozen=True, slots=True)
class MachineSyntax:
    name: Ident
    doc: str
    members: tuple[MemberDecl, ...]
    path: str
    span: Span
    lost_names: frozenset[str] = frozenset()  # names declared by declarations that failed to parse
