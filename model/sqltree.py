"""A small SQL expression tree, rendered to one dialect's text in one place (soda-core's `sql_ast` + dialect is the
model).

Owns: the nodes (`Col`, `Lit`, `Cast`, `Fn`, `Op`, `Not`, `Neg`, `In`, `IsNull`, `Case`, `ArrayOf`, `Struct`,
`Field`), small constructors that keep trees flat and constant-folded (`and_`, `or_`, `not_`, `case`, `in_`, ...),
the SQL types the trees name (`SqlType`) and the dialects (`SPARK`, `DUCKDB`) that render a tree to text. Nothing
else in kcoord writes SQL expressions: the trace checker builds trees from the IR and from its plan, and hands Spark the
rendered text (`F.expr`, `selectExpr`), which the JVM parses once per expression; `duckcheck` writes only the
SELECT/WINDOW plumbing around the rendered trees.

Rendering is total for Spark. DuckDB renders what the trace checker's row checks use (`duckcheck`'s row pass: its
test holds every bundled machine's flagged rows to the Python checker's): `Dialect.functions` maps the names that
differ, a function without a mapping renders as is, and `DuckDBDialect` rewrites Spark's array functions DuckDB lacks
and the shift it refuses on negative numbers. Names are quoted, strings escaped, integers typed: no text from data
ever reaches SQL unquoted.
Must not import: pyspark, lark, z3.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

# ---------------------------------------------------------------- types


@dataclass(frozen=True, slots=True)
class SqlType:
    """A SQL type: `name` is BIGINT, INT, SMALLINT, TINYINT, BOOLEAN, STRING, DECIMAL, ARRAY or STRUCT."""

    name: str
    element: SqlType | None = None  # ARRAY's element
    precision: tuple[int, int] | None = None  # DECIMAL's (precision, scale)


BIGINT = SqlType("BIGINT")
INT = SqlType("INT")
SMALLINT = SqlType("SMALLINT")
TINYINT = SqlType("TINYINT")
BOOLEAN = SqlType("BOOLEAN")
STRING = SqlType("STRING")
DECIMAL38 = SqlType("DECIMAL", precision=(38, 0))


def array_of(element: SqlType) -> SqlType:
    return SqlType("ARRAY", element)


# ---------------------------------------------------------------- nodes


class Expr:
    """A node. Subclasses are frozen dataclasses; trees are values (hashable, comparable)."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Col(Expr):
    name: str


@dataclass(frozen=True, slots=True)
class Lit(Expr):
    """None, a bool, an int (rendered as BIGINT, or DECIMAL(38,0) beyond int64) or a string."""

    value: bool | int | str | None
    type: SqlType | None = None  # only for a typed NULL


@dataclass(frozen=True, slots=True)
class Cast(Expr):
    """`CAST(expr AS type)`; `safe`: `TRY_CAST`, null where the value does not convert (Spark's ANSI mode makes a
    plain cast of bad text an error)."""

    expr: Expr
    type: SqlType
    safe: bool = False


@dataclass(frozen=True, slots=True)
class Fn(Expr):
    """A function call, by its Spark name (dialects rename the few that differ)."""

    name: str
    args: tuple[Expr, ...] = ()


@dataclass(frozen=True, slots=True)
class Op(Expr):
    """An infix operator over two or more operands: AND, OR, =, <>, <, <=, >, >=, <=>, +, -, &, |."""

    op: str
    items: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Not(Expr):
    expr: Expr


@dataclass(frozen=True, slots=True)
class Neg(Expr):
    expr: Expr


@dataclass(frozen=True, slots=True)
class In(Expr):
    expr: Expr
    values: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class IsNull(Expr):
    expr: Expr
    negated: bool = False


@dataclass(frozen=True, slots=True)
class Case(Expr):
    """`CASE WHEN c THEN v ... ELSE e END`, or with a `subject`: `CASE s WHEN x THEN v ... END`."""

    whens: tuple[tuple[Expr, Expr], ...]
    otherwise: Expr | None = None
    subject: Expr | None = None


@dataclass(frozen=True, slots=True)
class ArrayOf(Expr):
    """An array of the items, of `element` type (so that an empty one is typed too)."""

    items: tuple[Expr, ...]
    element: SqlType


@dataclass(frozen=True, slots=True)
class Struct(Expr):
    fields: tuple[tuple[str, Expr], ...]


@dataclass(frozen=True, slots=True)
class Field(Expr):
    expr: Expr
    name: str


@dataclass(frozen=True, slots=True)
class Var(Expr):
    """A lambda's variable (unquoted)."""

    name: str


@dataclass(frozen=True, slots=True)
class Lambda(Expr):
    """`x -> body`, the argument of a higher-order function (`transform`, `exists`)."""

    var: Var
    body: Expr


@dataclass(frozen=True, slots=True)
class Aliased:
    """A select-list item: `expr AS name`."""

    expr: Expr
    name: str


TRUE = Lit(True)
FALSE = Lit(False)
NULL = Lit(None)


# ---------------------------------------------------------------- constructors (flat, folded)


def col(name: str) -> Col:
    return Col(name)


def lit(value: bool | int | str | None) -> Lit:
    return Lit(value)


def null(t: SqlType) -> Lit:
    return Lit(None, t)


def fn(name: str, *args: Expr) -> Fn:
    return Fn(name, args)


def _flat(op: str, items: Iterable[Expr], unit: Lit, zero: Lit) -> Expr:
    out: list[Expr] = []
    for e in items:
        if e == unit:
            continue
        if e == zero:
            return zero
        out += list(e.items) if isinstance(e, Op) and e.op == op else [e]
    if not out:
        return unit
    return out[0] if len(out) == 1 else Op(op, tuple(out))


def and_(*items: Expr) -> Expr:
    """`a AND b ...`; true for none; a literal false makes it false."""
    return _flat("AND", items, TRUE, FALSE)


def or_(*items: Expr) -> Expr:
    """`a OR b ...`; false for none; a literal true makes it true."""
    return _flat("OR", items, FALSE, TRUE)


def not_(e: Expr) -> Expr:
    if e in (TRUE, FALSE):
        return FALSE if e == TRUE else TRUE
    return e.expr if isinstance(e, Not) else Not(e)


def binary(op: str, a: Expr, b: Expr) -> Op:
    return Op(op, (a, b))


def shift_left(e: Expr, bits: int) -> Expr:
    """`e << bits` (no overflow check, unlike `*` in ANSI mode)."""
    return Op("<<", (e, Lit(bits, INT))) if bits else e


def eq(a: Expr, b: Expr) -> Op:
    return Op("=", (a, b))


def ne(a: Expr, b: Expr) -> Op:
    return Op("<>", (a, b))


def same(a: Expr, b: Expr) -> Op:
    """Null-safe equality (`<=>`: two nulls are equal)."""
    return Op("<=>", (a, b))


def implies(a: Expr, b: Expr) -> Expr:
    return or_(not_(a), b)


def coalesce(*items: Expr) -> Fn:
    return Fn("coalesce", items)


def holds(e: Expr) -> Expr:
    """A boolean that is false where `e` is null."""
    return e if e in (TRUE, FALSE) else coalesce(e, FALSE)


def in_(e: Expr, values: Sequence[bool | int | str | None]) -> Expr:
    """`e IN (v, ...)` over literals; false for none."""
    if not values:
        return FALSE
    return In(e, tuple(Lit(v) for v in values))


def case(whens: Iterable[tuple[Expr, Expr]], otherwise: Expr | None = None, subject: Expr | None = None) -> Expr:
    pairs = tuple(whens)
    if not pairs:
        return otherwise if otherwise is not None else NULL
    return Case(pairs, otherwise, subject)


def when(cond: Expr, value: Expr, otherwise: Expr | None = None) -> Expr:
    return case([(cond, value)], otherwise)


def struct(**fields: Expr) -> Struct:
    return Struct(tuple(fields.items()))


def concat(*items: Expr | str) -> Fn:
    """`concat` of expressions and literal text."""
    return Fn("concat", tuple(Lit(i) if isinstance(i, str) else i for i in items))


def text(e: Expr) -> Cast:
    return Cast(e, STRING)


def pick(values: Sequence[str | int | None], index: Expr, element: SqlType = STRING) -> Expr:
    """The `index`-th (0-based) of a constant list, null outside it (`index` an integer of any width)."""
    inside = and_(Op(">=", (index, Lit(0))), Op("<", (index, Lit(len(values)))))
    item = Fn("try_element_at", (ArrayOf(tuple(Lit(v) for v in values), element),
                                 Op("+", (Cast(index, INT), Lit(1, INT)))))
    return when(inside, item)


# ---------------------------------------------------------------- dialects


@dataclass(frozen=True)
class Dialect:
    """How a tree becomes text in one SQL dialect."""

    name: str
    quote_char: str = "`"
    string_escapes: tuple[tuple[str, str], ...] = (("\\", "\\\\"), ("'", "\\'"))
    functions: dict[str, str] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)

    def quote(self, name: str) -> str:
        q = self.quote_char
        return q + name.replace(q, q + q) + q

    def string(self, value: str) -> str:
        for a, b in self.string_escapes:
            value = value.replace(a, b)
        return f"'{value}'"

    def type(self, t: SqlType) -> str:
        if t.name == "ARRAY":
            assert t.element is not None
            return self.array_type(self.type(t.element))
        if t.name == "DECIMAL":
            p, s = t.precision or (38, 0)
            return f"DECIMAL({p},{s})"
        return self.types.get(t.name, t.name)

    def array_type(self, element: str) -> str:
        return f"ARRAY<{element}>"

    def literal(self, value: bool | int | str | None, t: SqlType | None) -> str:
        if value is None:
            return "NULL" if t is None else f"CAST(NULL AS {self.type(t)})"
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int):
            return self.integer(value, t)
        return self.string(value)

    def integer(self, value: int, t: SqlType | None) -> str:
        """Spark: `5L` is a BIGINT literal, `5` an INT one."""
        if t == INT:
            return str(value)
        if t is None and -(2**63) <= value < 2**63:
            return f"{value}L"
        return f"CAST({value} AS {self.type(t or DECIMAL38)})"

    def render(self, e: Expr | Aliased) -> str:
        """The tree as text, with the parentheses precedence needs and no more (Spark's parser slows down sharply
        with nesting, and a machine's checks nest deeply)."""
        if isinstance(e, Aliased):
            return f"{self.render(e.expr)} AS {self.quote(e.name)}"
        method = getattr(self, "_" + type(e).__name__.lower())
        return str(method(e))

    def operand(self, e: Expr, level: int) -> str:
        """`e` as the operand of an operator that needs its operands to bind at least as tightly as `level`."""
        text = self.render(e)
        return f"({text})" if precedence(e) < level else text

    def _col(self, e: Col) -> str:
        return ".".join(self.quote(part) for part in e.name.split("\0"))

    def _lit(self, e: Lit) -> str:
        return self.literal(e.value, e.type)

    def _cast(self, e: Cast) -> str:
        return f"{'TRY_CAST' if e.safe else 'CAST'}({self.render(e.expr)} AS {self.type(e.type)})"

    def _fn(self, e: Fn) -> str:
        return f"{self.functions.get(e.name, e.name)}({', '.join(self.render(a) for a in e.args)})"

    def _op(self, e: Op) -> str:
        level = _LEVELS[e.op]
        first, *rest = e.items
        # left-associative: the first operand may be the same operator, the others must bind tighter (a - (b - c));
        # AND and OR are associative, comparisons never chain
        others = level if e.op in ("AND", "OR", "+", "&", "|") else level + 1
        first_level = level + 1 if level == _COMPARISON else level
        return f" {e.op} ".join([self.operand(first, first_level), *(self.operand(i, others) for i in rest)])

    def _not(self, e: Not) -> str:
        return f"NOT {self.operand(e.expr, _NOT)}"

    def _neg(self, e: Neg) -> str:
        return f"- {self.operand(e.expr, _UNARY)}"

    def _in(self, e: In) -> str:
        return f"{self.operand(e.expr, _COMPARISON + 1)} IN ({', '.join(self.render(v) for v in e.values)})"

    def _isnull(self, e: IsNull) -> str:
        return f"{self.operand(e.expr, _COMPARISON + 1)} IS {'NOT ' if e.negated else ''}NULL"

    def _case(self, e: Case) -> str:
        head = "CASE" if e.subject is None else f"CASE {self.render(e.subject)}"
        parts = [f"WHEN {self.render(c)} THEN {self.render(v)}" for c, v in e.whens]
        tail = "" if e.otherwise is None else f" ELSE {self.render(e.otherwise)}"
        return f"{head} {' '.join(parts)}{tail} END"

    def _arrayof(self, e: ArrayOf) -> str:
        return f"CAST(array({', '.join(self.render(i) for i in e.items)}) AS {self.type(array_of(e.element))})"

    def _struct(self, e: Struct) -> str:
        return "named_struct(" + ", ".join(f"{self.string(n)}, {self.render(v)}" for n, v in e.fields) + ")"

    def _field(self, e: Field) -> str:
        return f"{self.operand(e.expr, _ATOM)}.{self.quote(e.name)}"

    def _var(self, e: Var) -> str:
        return e.name

    def _lambda(self, e: Lambda) -> str:
        return f"{e.var.name} -> {self.render(e.body)}"


_OR, _AND, _NOT, _COMPARISON, _UNARY, _ATOM = 1, 2, 3, 4, 10, 11
_LEVELS = {"OR": _OR, "AND": _AND, "=": _COMPARISON, "<>": _COMPARISON, "<": _COMPARISON, "<=": _COMPARISON,
           ">": _COMPARISON, ">=": _COMPARISON, "<=>": _COMPARISON, "RLIKE": _COMPARISON, "|": 5, "&": 6, "<<": 7,
           "+": 8, "-": 8, "*": 9, "/": 9, "%": 9, "DIV": 9}


def precedence(e: Expr) -> int:
    """How tightly a node binds, in Spark SQL's grammar (higher: tighter)."""
    if isinstance(e, Op):
        return _LEVELS[e.op]
    if isinstance(e, Not):
        return _NOT
    if isinstance(e, In | IsNull):
        return _COMPARISON
    if isinstance(e, Neg) or (isinstance(e, Lit) and isinstance(e.value, int) and not isinstance(e.value, bool)
                              and e.value < 0):
        return _UNARY
    if isinstance(e, Lambda):
        return 0
    return _ATOM


class DuckDBDialect(Dialect):
    def array_type(self, element: str) -> str:
        return f"{element}[]"

    def integer(self, value: int, t: SqlType | None) -> str:
        return f"CAST({value} AS {self.type(t or (BIGINT if -(2**63) <= value < 2**63 else DECIMAL38))})"

    def _arrayof(self, e: ArrayOf) -> str:
        return f"CAST([{', '.join(self.render(i) for i in e.items)}] AS {self.type(array_of(e.element))})"

    def _struct(self, e: Struct) -> str:
        return "{" + ", ".join(f"{self.string(n)}: {self.render(v)}" for n, v in e.fields) + "}"

    def _fn(self, e: Fn) -> str:
        """Spark's array functions DuckDB lacks, rewritten over its lists. Sets are arrays without nulls (the
        reader's validation), so `list_distinct` dropping nulls changes nothing; Spark's `array_union`,
        `array_except` and `array_intersect` keep the first array's order and drop duplicates, as these do."""
        args = [self.render(a) for a in e.args]
        if e.name == "array":
            return f"list_value({', '.join(args)})"
        if e.name == "array_union":
            return f"list_distinct(list_concat({args[0]}, {args[1]}))"
        if e.name == "array_except":
            return f"list_filter(list_distinct({args[0]}), lambda _e: NOT list_contains({args[1]}, _e))"
        if e.name == "array_intersect":
            return f"list_filter(list_distinct({args[0]}), lambda _e: list_contains({args[1]}, _e))"
        if e.name == "to_json":  # (`json_of`: DuckDB writes null fields as Spark does with its option)
            return f"to_json({args[0]})"
        return Dialect._fn(self, e)

    def _op(self, e: Op) -> str:
        if e.op == "<=>":
            return " IS NOT DISTINCT FROM ".join(self.operand(i, _COMPARISON + 1) for i in e.items)
        if e.op == "<<":  # (DuckDB refuses to shift a negative number, which Spark shifts: a row of no spec row
            a, b = (self.render(i) for i in e.items)  # packs -1, and the row check's other conjunct decides. The
            return f"(({a}) * (CAST(1 AS INTEGER) << ({b})))"  # packed fields fit 31 bits: the product cannot overflow)
        if e.op in ("|", "&"):  # (DuckDB gives these one precedence, left to right: always parenthesised)
            return f"({Dialect._op(self, e)})"
        return Dialect._op(self, e)

    def _lambda(self, e: Lambda) -> str:
        return f"lambda {e.var.name}: {self.render(e.body)}"


SPARK = Dialect("spark")
DUCKDB = DuckDBDialect("duckdb", quote_char='"', string_escapes=(("'", "''"),),
                       functions={"array_contains": "list_contains", "size": "len", "try_element_at": "list_extract",
                                  "sort_array": "list_sort", "array_distinct": "list_distinct",
                                  "transform": "list_transform"},
                       types={"STRING": "VARCHAR", "INT": "INTEGER"})


def sql(e: Expr | Aliased, dialect: Dialect = SPARK) -> str:
    """The Spark SQL text of a tree (the one place trees become text)."""
    return dialect.render(e)


def json_of(value: Expr) -> Fn:
    """`value` (a struct) as a JSON object with every field, null ones written as null (Spark's `to_json` leaves them
    out unless told otherwise; DuckDB's writes them)."""
    return Fn("to_json", (value, Fn("map", (Lit("ignoreNullFields"), Lit("false")))))


def transform(array: Expr, body: Callable[[Var], Expr]) -> Fn:
    """`transform(array, x -> body(x))`."""
    x = Var("x")
    return Fn("transform", (array, Lambda(x, body(x))))


def exists(array: Expr, body: Callable[[Var], Expr]) -> Fn:
    """`exists(array, x -> body(x))`."""
    x = Var("x")
    return Fn("exists", (array, Lambda(x, body(x))))


def nested(*parts: str) -> Col:
    """A column inside a struct column (`prev`.`seq`)."""
    return Col("\0".join(parts))
