"""The model IR: what a checked spec means, as frozen data.

Owns: semantic types, typed expressions and the `Machine` declaration (states, variables, events, transition and
rejection rows, invariants, step and trace properties). Every node carries the span it came from. The checker
(`kcoord.model.check`) is the only producer; generators and the three expression backends (Python, z3, Spark) read
it and keep their own caches elsewhere.

Rows are already *lowered*: an event's ordered `check` clauses have been turned into rejection rows, and their
conditions conjoined into every later row, so for each (state, event) the rows' guards are meant to be disjoint
(the verifier proves it) and the order in which they are tried does not matter.
Must not import: lark, z3, pyspark.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from .diagnostics import NO_SPAN, Span

# ---------------------------------------------------------------- types


@dataclass(frozen=True, slots=True)
class BoolType:
    def __str__(self) -> str:
        return "bool"


@dataclass(frozen=True, slots=True)
class IntType:
    """A bounded integer; `name` is how the spec wrote it (`int16`, `0..2`, or `int` for computed values)."""

    name: str
    lo: int
    hi: int

    def __str__(self) -> str:
        return self.name

    def contains(self, value: int) -> bool:
        return self.lo <= value <= self.hi


@dataclass(frozen=True, slots=True)
class StringType:
    """Strings; `name` is `string` or a documented alias such as `partition` (same values, clearer intent)."""

    name: str = "string"

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class EnumType:
    name: str
    members: tuple[str, ...]

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class StateType:
    """The machine's own states, as a type (the type of `state`)."""

    machine: str
    members: tuple[str, ...]

    def __str__(self) -> str:
        return "state"


@dataclass(frozen=True, slots=True)
class SetType:
    element: Type

    def __str__(self) -> str:
        return f"set[{self.element}]"


@dataclass(frozen=True, slots=True)
class EmptySetType:
    """The type of `{}` before context says what it holds; compatible with every set type."""

    def __str__(self) -> str:
        return "set[?]"


Type = BoolType | IntType | StringType | EnumType | StateType | SetType | EmptySetType

BOOL = BoolType()
STRING = StringType()
INT_ANY = IntType("int", -(2**63), 2**63 - 1)

BUILTIN_INT_TYPES: dict[str, IntType] = {
    "int8": IntType("int8", -(2**7), 2**7 - 1),
    "int16": IntType("int16", -(2**15), 2**15 - 1),
    "int32": IntType("int32", -(2**31), 2**31 - 1),
    "int64": IntType("int64", -(2**63), 2**63 - 1),
}
STRING_ALIASES = ("string", "partition", "member", "topic")


def is_int(t: Type) -> bool:
    return isinstance(t, IntType)


def is_set(t: Type) -> bool:
    return isinstance(t, SetType | EmptySetType)


def compatible(a: Type, b: Type) -> bool:
    """Whether values of `a` and `b` may be compared or assigned to each other."""
    if isinstance(a, IntType) and isinstance(b, IntType):
        return True
    if isinstance(a, StringType) and isinstance(b, StringType):
        return True
    if isinstance(a, EmptySetType) or isinstance(b, EmptySetType):
        return is_set(a) and is_set(b)
    if isinstance(a, SetType) and isinstance(b, SetType):
        return compatible(a.element, b.element)
    return a == b


PyValue = bool | int | str | frozenset[object]

# ---------------------------------------------------------------- expressions


@dataclass(frozen=True, slots=True)
class Lit:
    value: PyValue
    type: Type
    span: Span = NO_SPAN


@dataclass(frozen=True, slots=True)
class EnumLit:
    """A member of a declared enum, or a state name used as a value (then `type` is the StateType)."""

    member: str
    type: EnumType | StateType
    span: Span = NO_SPAN


@dataclass(frozen=True, slots=True)
class VarRef:
    name: str
    primed: bool
    type: Type
    span: Span = NO_SPAN


@dataclass(frozen=True, slots=True)
class KeyRef:
    name: str
    type: Type
    span: Span = NO_SPAN


@dataclass(frozen=True, slots=True)
class ParamRef:
    name: str
    type: Type
    span: Span = NO_SPAN


@dataclass(frozen=True, slots=True)
class StateRef:
    primed: bool
    type: StateType
    span: Span = NO_SPAN


@dataclass(frozen=True, slots=True)
class PendingRef:
    """True while a write for this entity is in flight (supplied by the runtime with each event)."""

    type: BoolType = BOOL
    span: Span = NO_SPAN


@dataclass(frozen=True, slots=True)
class SetLit:
    items: tuple[Expr, ...]
    type: SetType | EmptySetType
    span: Span = NO_SPAN


@dataclass(frozen=True, slots=True)
class Ite:
    cond: Expr
    then: Expr
    orelse: Expr
    type: Type
    span: Span = NO_SPAN


UnaryOp = Literal["not", "neg"]
BinaryOp = Literal[
    "implies", "or", "and", "eq", "ne", "lt", "le", "gt", "ge", "in", "subset", "add", "sub", "union", "inter",
    "diff",
]


@dataclass(frozen=True, slots=True)
class Unary:
    op: UnaryOp
    operand: Expr
    type: Type
    span: Span = NO_SPAN


@dataclass(frozen=True, slots=True)
class Binary:
    op: BinaryOp
    left: Expr
    right: Expr
    type: Type
    span: Span = NO_SPAN


CallFn = Literal["size", "min", "max"]


@dataclass(frozen=True, slots=True)
class Call:
    function: CallFn
    args: tuple[Expr, ...]
    type: Type
    span: Span = NO_SPAN


Expr = Lit | EnumLit | VarRef | KeyRef | ParamRef | StateRef | PendingRef | SetLit | Ite | Unary | Binary | Call

TRUE = Lit(True, BOOL)
FALSE = Lit(False, BOOL)


def conj(parts: list[Expr] | tuple[Expr, ...]) -> Expr:
    """`a and b and ...`, dropping literal `true`s; `true` for no parts."""
    kept = [p for p in parts if not (isinstance(p, Lit) and p.value is True)]
    if not kept:
        return TRUE
    out = kept[0]
    for p in kept[1:]:
        out = Binary("and", out, p, BOOL, out.span)
    return out


def negate(e: Expr) -> Expr:
    if isinstance(e, Unary) and e.op == "not":
        return e.operand
    if isinstance(e, Lit) and isinstance(e.value, bool):
        return Lit(not e.value, BOOL, e.span)
    return Unary("not", e, BOOL, e.span)


def walk(e: Expr) -> Iterator[Expr]:
    """Every node of `e`, parents before children."""
    yield e
    if isinstance(e, SetLit):
        for item in e.items:
            yield from walk(item)
    elif isinstance(e, Ite):
        yield from walk(e.cond)
        yield from walk(e.then)
        yield from walk(e.orelse)
    elif isinstance(e, Unary):
        yield from walk(e.operand)
    elif isinstance(e, Binary):
        yield from walk(e.left)
        yield from walk(e.right)
    elif isinstance(e, Call):
        for a in e.args:
            yield from walk(a)


def conjuncts(e: Expr) -> list[Expr]:
    """The top-level `and`-ed parts of `e` (so each precondition part can go to the rows it concerns)."""
    if isinstance(e, Binary) and e.op == "and":
        return [*conjuncts(e.left), *conjuncts(e.right)]
    return [e]


def params_of(e: Expr) -> frozenset[str]:
    return frozenset(n.name for n in walk(e) if isinstance(n, ParamRef))


def uses_primes(e: Expr) -> bool:
    return any(isinstance(n, VarRef | StateRef) and n.primed for n in walk(e))


# ---------------------------------------------------------------- declarations

MachineKind = Literal["coordinator", "partition", "client", "task"]
MACHINE_KINDS: tuple[MachineKind, ...] = ("coordinator", "partition", "client", "task")


@dataclass(frozen=True, slots=True)
class Field:
    """A key field, an event parameter or a state variable."""

    name: str
    type: Type
    span: Span = NO_SPAN
    default: PyValue | None = None
    doc: str = ""


@dataclass(frozen=True, slots=True)
class State:
    name: str
    initial: bool = False
    final: bool = False
    pending: bool = False
    expirable: bool = False
    doc: str = ""
    span: Span = NO_SPAN

    @property
    def flags(self) -> tuple[str, ...]:
        names = ("initial", "final", "pending", "expirable")
        return tuple(n for n, on in zip(names, (self.initial, self.final, self.pending, self.expirable), strict=True)
                     if on)


@dataclass(frozen=True, slots=True)
class Event:
    """An event. `requires` is the conjunction of its preconditions. Each top-level conjunct of a precondition that
    mentions parameters only constrains the rows that use one of those parameters (an argument a row never reads is
    never computed: the runtime supplies some arguments lazily, e.g. a fresh producer id); each row's share is its
    `assumes`."""

    name: str
    params: tuple[Field, ...]
    doc: str = ""
    requires: Expr = TRUE
    span: Span = NO_SPAN
    internal: bool = False  # fired by the coordinator itself (timers, marker completion), exempt from totality

    def param(self, name: str) -> Field:
        return next(p for p in self.params if p.name == name)


@dataclass(frozen=True, slots=True)
class Effect:
    """`var' == value`, evaluated on the pre-state."""

    var: str
    value: Expr
    span: Span = NO_SPAN


@dataclass(frozen=True, slots=True)
class Transition:
    index: int  # position among the machine's rows (transitions and rejections share one numbering)
    event: str
    sources: tuple[str, ...]
    target: str | None  # None: `stay` — the instance keeps its state; the row updates variables, it is not an edge
    guard: Expr  # full guard: the event's checks passed and the transition's own `when`s
    local_guard: Expr  # only what was written on the transition (for diagrams and tables)
    effects: tuple[Effect, ...]
    choice: bool = False
    doc: str = ""
    span: Span = NO_SPAN
    answer: str = "NONE"  # the error the request is answered with when this transition is taken
    answer_code: int = 0
    condition_text: str = "true"  # the `when` clauses as written in the spec (definitions not inlined)
    assumes: Expr = TRUE  # the event's `requires` clauses that concern this row (see `Event.requires`)
    writes: bool = False  # `writes`: the transition writes the instance's record (a tombstone into a final state)

    @property
    def label(self) -> str:
        return f"{self.event}#{self.index}"

    @property
    def is_stay(self) -> bool:
        return self.target is None

    def target_from(self, source: str) -> str:
        return source if self.target is None else self.target


RowOrigin = Literal["check", "reject"]


@dataclass(frozen=True, slots=True)
class Rejection:
    index: int
    event: str
    sources: tuple[str, ...]
    guard: Expr  # full condition under which this row answers
    local_guard: Expr
    error: str  # Kafka error name; NONE means "answered, nothing changes"
    error_code: int
    origin: RowOrigin = "reject"
    doc: str = ""
    span: Span = NO_SPAN
    condition_text: str = "true"  # the condition as written in the spec (for a check: `not (COND)`)
    assumes: Expr = TRUE  # the event's `requires` clauses that concern this row (see `Event.requires`)

    @property
    def label(self) -> str:
        return f"{self.event}!{self.error}#{self.index}"


Row = Transition | Rejection


@dataclass(frozen=True, slots=True)
class Invariant:
    name: str
    expr: Expr
    doc: str = ""
    span: Span = NO_SPAN


@dataclass(frozen=True, slots=True)
class StepProperty:
    """A two-state property of every transition — or, with `event`, of that event's transitions only (it may then
    read the event's parameters)."""

    name: str
    expr: Expr
    doc: str = ""
    span: Span = NO_SPAN
    event: str | None = None

    def applies_to(self, t: Transition) -> bool:
        return self.event is None or self.event == t.event


TraceForm = Literal["exclusive", "monotonic", "within", "before", "fenced"]


@dataclass(frozen=True, slots=True)
class TraceProperty:
    """A property of whole traces (across keys, machines or time); checked on traces, not by z3.

    - exclusive V per K...: no element of set variable V is held by two keys with equal K... at the same time.
    - monotonic V per K...: V never decreases along the rows of equal K..., in trace order, across keys.
    - within A... -> B... by BOUND: after entering a state in A, a state in B follows within BOUND ms.
    - before M.S requires N.E on K...: a row of this machine entering S needs an earlier row of machine N with
      event E, matched on fields K... (the KAFKA-17507 ordering).
    - fenced M.E by N.V on K...: an accepted event E of machine M never carries an epoch below the latest value of
      N.V for the same K... (no write from a fenced epoch).
    """

    name: str
    form: TraceForm
    subject: tuple[str, ...]
    per: tuple[str, ...]
    states_from: tuple[str, ...] = ()
    states_to: tuple[str, ...] = ()
    bound: Expr | None = None
    doc: str = ""
    span: Span = NO_SPAN


@dataclass(frozen=True, slots=True)
class Persist:
    """`persist RECORD: fields`: an instance is stored as one record (`record` names Kafka's record) carrying these
    variables — and its state when `state` is true; the transitions marked `writes` write it (see spec/README.md,
    persistence). Everything else about the instance lives only in memory."""

    record: str
    fields: tuple[str, ...]  # variable names, in declaration order
    state: bool
    doc: str = ""
    span: Span = NO_SPAN


@dataclass(frozen=True, slots=True)
class Machine:
    name: str
    kind: MachineKind
    doc: str
    path: str
    source_sha256: str
    keys: tuple[Field, ...]
    enums: tuple[EnumType, ...]
    variables: tuple[Field, ...]
    states: tuple[State, ...]
    events: tuple[Event, ...]
    transitions: tuple[Transition, ...]
    rejections: tuple[Rejection, ...]
    invariants: tuple[Invariant, ...]
    steps: tuple[StepProperty, ...]
    traces: tuple[TraceProperty, ...]
    span: Span = NO_SPAN
    persist: Persist | None = None

    # -- lookups
    @property
    def state_type(self) -> StateType:
        return StateType(self.name, tuple(s.name for s in self.states))

    @property
    def initial(self) -> State:
        return next(s for s in self.states if s.initial)

    def state(self, name: str) -> State:
        return next(s for s in self.states if s.name == name)

    def variable(self, name: str) -> Field:
        return next(v for v in self.variables if v.name == name)

    def event(self, name: str) -> Event:
        return next(e for e in self.events if e.name == name)

    @property
    def rows(self) -> tuple[Row, ...]:
        return tuple(sorted((*self.transitions, *self.rejections), key=lambda r: r.index))

    def rows_for(self, state: str, event: str) -> tuple[Row, ...]:
        return tuple(r for r in self.rows if r.event == event and state in r.sources)

    def valid_previous(self, target: str) -> frozenset[str]:
        """Kafka's `validPreviousStates`: every state with a transition into `target`."""
        return frozenset(s for t in self.transitions if t.target == target for s in t.sources)  # stays: not edges

    @property
    def edges(self) -> frozenset[tuple[str, str]]:
        return frozenset((s, t.target) for t in self.transitions if t.target is not None for s in t.sources)

    def initial_values(self) -> dict[str, PyValue]:
        values: dict[str, PyValue] = {v.name: v.default for v in self.variables if v.default is not None}
        values["state"] = self.initial.name
        return values
