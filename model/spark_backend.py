"""The Spark backend of the expression language: IR expressions → Spark SQL → `pyspark.sql.Column`, no Python UDFs.

Owns: `SparkCompiler` (the one translation to Spark: `sql(e)` renders Spark SQL text from the IR, `column(e)` is that
text as a `Column`), `Columns` (which column a name reads: the pre-state, the
post-state or the arguments — callers choose the naming), the Spark types of a machine's trace rows
(`spark_schema`, from `kcoord.model.traceschema`) and `unsupported` (the constructs this backend cannot express;
none today — the type checker rewrites `size` to emptiness tests before any backend sees it).

Meaning, value by value (it must equal the Python evaluator's and z3's; `tests/model/test_spark_backend.py` checks it
on random states):

- bool, strings, enum members and state names are Spark booleans and strings (`EnumLit` → its name as a literal).
- Integers are `bigint`. Python and z3 integers are unbounded, Spark's overflow, so every arithmetic node whose value
  range (computed from the declared types of its leaves: an `int16` plus 1 cannot overflow) may leave int64 is
  computed in `decimal(38,0)` instead; comparisons between the two widen to decimal.
- Sets are arrays without duplicates. `x in s` → `array_contains`; `|`, `&`, `-` → `array_union`,
  `array_intersect`, `array_except`; `a subset b` → `size(array_except(a, b)) == 0`; `a == b` on sets compares
  `array_sort(array_distinct(...))` of both sides (trace columns are read normalised, so plain column references are
  not re-sorted). Set literals are arrays of their items, `{}` an empty array of the other operand's element type.
- `if c then a else b` → `when(c, a).otherwise(b)`; `a -> b` → `not a or b`; `min`/`max` → `least`/`greatest`.

Nulls: the trace readers guarantee that every column an expression may read is non-null for the rows it is
evaluated on (variables, keys, `pending`, and the arguments of the row's own event; the argument columns of other
events are null, and the checks only evaluate a row's guard and effects on rows of that row's event). If a null still
reached an expression, Spark's three-valued logic would make the result null, and the checkers count a null
predicate as *not holding* (`holds`), i.e. as a violation, never as a pass.
Must not import: lark, z3.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from . import ir
from .traceschema import trace_columns

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
DECIMAL = T.DecimalType(38, 0)

_SPARK_TYPES: dict[str, T.DataType] = {"string": T.StringType(), "int64": T.LongType(), "int32": T.IntegerType(),
                                       "bool": T.BooleanType(), "list<string>": T.ArrayType(T.StringType())}


def spark_type(column_type: str) -> T.DataType:
    """The Spark type of a trace column type (as `kcoord.model.traceschema.column_type` names it)."""
    return _SPARK_TYPES[column_type]


def spark_schema(m: ir.Machine) -> T.StructType:
    """The Spark schema of the machine's trace rows (the same columns as `traceschema.arrow_schema`)."""
    return T.StructType([T.StructField(name, spark_type(typ)) for name, typ in trace_columns(m)])


def element_type(t: ir.Type) -> T.DataType:
    """The Spark type of the elements of a set of `t`s (or of a value of type `t`)."""
    if isinstance(t, ir.BoolType):
        return T.BooleanType()
    if isinstance(t, ir.IntType):
        return T.LongType()
    return T.StringType()


def value_type(t: ir.Type) -> T.DataType:
    """The Spark type of an expression value of IR type `t`."""
    if isinstance(t, ir.SetType):
        return T.ArrayType(element_type(t.element))
    if isinstance(t, ir.EmptySetType):
        return T.ArrayType(T.StringType())
    return element_type(t)


def unsupported(e: ir.Expr) -> list[tuple[ir.Expr, str]]:
    """The nodes of `e` this backend cannot translate, with the reason (checked at spec-check time).

    Only `size` other than an emptiness test could qualify, and the type checker already rejects it (z3 has no
    cardinality either); everything else in the language has a Spark translation.
    """
    return [(n, "size() is only an emptiness test") for n in ir.walk(e)
            if isinstance(n, ir.Call) and n.function == "size"]


@dataclass(frozen=True, slots=True)
class Columns:
    """Which column each name of an expression reads. The defaults are the trace checker's: the pre-state in
    `pre_<var>` / `pre_state`, the post-state in `<var>` / `to_state`, arguments in `arg_<p>`, key fields under
    their own names, `pending` in `pending`."""

    pre_var: Callable[[str], str] = field(default=lambda v: f"pre_{v}")
    post_var: Callable[[str], str] = field(default=lambda v: v)
    pre_state: str = "pre_state"
    post_state: str = "to_state"
    arg: Callable[[str], str] = field(default=lambda p: f"arg_{p}")
    key: Callable[[str], str] = field(default=lambda k: k)
    pending: str = "pending"

    def on_post(self) -> Columns:
        """The same naming, but unprimed names read the post-state (for invariants and `within` bounds)."""
        return Columns(self.post_var, self.post_var, self.post_state, self.post_state, self.arg, self.key,
                       self.pending)


class SparkCompiler:
    """Compiles IR expressions to Spark SQL text under one column naming, and to columns built from that text.

    Rendering text and handing Spark one `F.expr` per expression is the translation's design, not a shortcut: a
    `Column` built call by call costs one Python→JVM round trip per node (tens of seconds for a large machine), the
    text is parsed once inside the JVM. The text is produced only here, from the IR, never by concatenating user input:
    names are quoted, string literals escaped.
    """

    def __init__(self, columns: Columns | None = None) -> None:
        self.cols = columns or Columns()

    # ------------------------------------------------------------ entry points

    def column(self, e: ir.Expr) -> Column:
        """`e` as a Spark column (ints may come out as decimal(38,0) where int64 could overflow)."""
        return F.expr(self.sql(e))

    def holds(self, e: ir.Expr) -> Column:
        """A boolean expression as a non-null column: null (a missing value) counts as false."""
        return F.expr(self.holds_sql(e))

    def holds_sql(self, e: ir.Expr) -> str:
        return f"coalesce({self.sql(e)}, false)"

    def equal_sql(self, value: ir.Expr, column: str, t: ir.Type) -> str:
        """SQL for: the (normalised) trace column `column` of type `t` equals `value`; never null."""
        left = self.sql(value)
        if ir.is_set(t):
            left = _normalised(left, value)
        return f"coalesce(({left}) = {quote(column)}, false)"

    # ------------------------------------------------------------ translation

    def sql(self, e: ir.Expr) -> str:
        """`e` as Spark SQL text, fully parenthesised."""
        if isinstance(e, ir.Lit):
            return _literal(e.value, e.type)
        if isinstance(e, ir.EnumLit):
            return string_literal(e.member)
        if isinstance(e, ir.VarRef):
            return quote(self.cols.post_var(e.name) if e.primed else self.cols.pre_var(e.name))
        if isinstance(e, ir.KeyRef):
            return quote(self.cols.key(e.name))
        if isinstance(e, ir.ParamRef):
            return quote(self.cols.arg(e.name))
        if isinstance(e, ir.StateRef):
            return quote(self.cols.post_state if e.primed else self.cols.pre_state)
        if isinstance(e, ir.PendingRef):
            return quote(self.cols.pending)
        if isinstance(e, ir.SetLit):
            return self._set_literal(e)
        if isinstance(e, ir.Ite):
            then, orelse = self._int_operands(e, (e.then, e.orelse))
            return f"(CASE WHEN {self.sql(e.cond)} THEN {then} ELSE {orelse} END)"
        if isinstance(e, ir.Unary):
            if e.op == "not":
                return f"(NOT {self.sql(e.operand)})"
            (operand,) = self._int_operands(e, (e.operand,))
            return f"(- {operand})"
        if isinstance(e, ir.Call):
            return self._call(e)
        return self._binary(e)

    def _set_literal(self, e: ir.SetLit) -> str:
        elements = element_type(e.type.element) if isinstance(e.type, ir.SetType) else T.StringType()
        if not e.items:
            return _empty_array(elements)
        if all(isinstance(i, ir.Lit | ir.EnumLit) for i in e.items):  # constant: sorted and distinct already
            values = sorted({_constant_value(i) for i in e.items})  # type: ignore[type-var]
            return _array_literal(values, elements)
        return f"array_distinct(array({', '.join(self.sql(i) for i in e.items)}))"

    def _call(self, e: ir.Call) -> str:
        if e.function == "size":
            return f"CAST(size({self.sql(e.args[0])}) AS BIGINT)"
        args = self._int_operands(e, e.args)
        return f"{'least' if e.function == 'min' else 'greatest'}({', '.join(args)})"

    def _binary(self, e: ir.Binary) -> str:
        op = e.op
        if op in ("implies", "and", "or"):
            a, b = self.sql(e.left), self.sql(e.right)
            return f"((NOT {a}) OR {b})" if op == "implies" else f"({a} {op.upper()} {b})"
        if op == "in":
            return self._member(e.left, e.right)
        if op in ("union", "inter", "diff") or (op == "sub" and ir.is_set(e.type)):
            a, b = self._set_operand(e.left, e.right), self._set_operand(e.right, e.left)
            fn = {"union": "array_union", "inter": "array_intersect"}.get(op, "array_except")
            return f"{fn}({a}, {b})"
        if op == "subset":
            a, b = self._set_operand(e.left, e.right), self._set_operand(e.right, e.left)
            return f"(size(array_except({a}, {b})) = 0)"
        if op in ("eq", "ne") and (ir.is_set(e.left.type) or ir.is_set(e.right.type)):
            a = _normalised(self._set_operand(e.left, e.right), e.left)
            b = _normalised(self._set_operand(e.right, e.left), e.right)
            return f"({a} {'=' if op == 'eq' else '<>'} {b})"
        if op in ("add", "sub"):
            a, b = self._int_operands(e, (e.left, e.right))
            return f"({a} {'+' if op == 'add' else '-'} {b})"
        a, b = self._comparands(e.left, e.right)
        return f"({a} {_COMPARISONS[op]} {b})"

    def _member(self, x: ir.Expr, s: ir.Expr) -> str:
        item = self.sql(x)
        if isinstance(s, ir.SetLit) and all(isinstance(i, ir.Lit | ir.EnumLit) for i in s.items):
            if not s.items:
                return "false"
            values = sorted({_constant_value(i) for i in s.items})  # type: ignore[type-var]
            return f"({item} IN ({', '.join(_scalar(v) for v in values)}))"
        return f"array_contains({self.sql(s)}, {item})"

    def _set_operand(self, e: ir.Expr, other: ir.Expr) -> str:
        """An empty set literal takes its element type from the other operand."""
        if _is_empty_literal(e) and isinstance(other.type, ir.SetType):
            return _empty_array(element_type(other.type.element))
        return self.sql(e)

    def _comparands(self, a: ir.Expr, b: ir.Expr) -> tuple[str, str]:
        left, right = self.sql(a), self.sql(b)
        if ir.is_int(a.type) and ir.is_int(b.type) and (_needs_decimal(a) or _needs_decimal(b)):
            return _decimal(left), _decimal(right)
        return left, right

    def _int_operands(self, parent: ir.Expr, operands: tuple[ir.Expr, ...]) -> list[str]:
        """Operands of an integer node, as decimal when the node's range leaves int64 (else as they are)."""
        texts = [self.sql(o) for o in operands]
        if ir.is_int(parent.type) and (_needs_decimal(parent) or any(_needs_decimal(o) for o in operands)):
            return [_decimal(t) for t in texts]
        return texts


_COMPARISONS = {"eq": "=", "ne": "<>", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


# ---------------------------------------------------------------- value ranges (overflow)


def int_range(e: ir.Expr) -> tuple[int, int]:
    """Bounds of the values an integer expression can take, from the declared types of its leaves."""
    if isinstance(e, ir.Lit) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value, e.value
    if isinstance(e, ir.Ite):
        (a, b), (c, d) = int_range(e.then), int_range(e.orelse)
        return min(a, c), max(b, d)
    if isinstance(e, ir.Unary) and e.op == "neg":
        lo, hi = int_range(e.operand)
        return -hi, -lo
    if isinstance(e, ir.Binary) and e.op in ("add", "sub") and ir.is_int(e.type):
        (a, b), (c, d) = int_range(e.left), int_range(e.right)
        return (a + c, b + d) if e.op == "add" else (a - d, b - c)
    if isinstance(e, ir.Call) and e.function in ("min", "max"):
        ranges = [int_range(x) for x in e.args]
        pick = min if e.function == "min" else max
        return pick(r[0] for r in ranges), pick(r[1] for r in ranges)
    if isinstance(e, ir.Call) and e.function == "size":
        return 0, INT64_MAX
    if isinstance(e.type, ir.IntType):
        return e.type.lo, e.type.hi
    return INT64_MIN, INT64_MAX


def _needs_decimal(e: ir.Expr) -> bool:
    if not ir.is_int(e.type):
        return False
    lo, hi = int_range(e)
    return lo < INT64_MIN or hi > INT64_MAX


# ---------------------------------------------------------------- SQL text


def quote(name: str) -> str:
    """A column name as a Spark SQL identifier."""
    return "`" + name.replace("`", "``") + "`"


def string_literal(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _scalar(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if INT64_MIN <= value <= INT64_MAX:
            return f"CAST({value} AS BIGINT)"
        return f"CAST({value} AS DECIMAL(38,0))"
    return string_literal(str(value))


def _spark_type_sql(t: T.DataType) -> str:
    return t.simpleString().upper()


def _empty_array(elements: T.DataType) -> str:
    return f"CAST(array() AS ARRAY<{_spark_type_sql(elements)}>)"


def _array_literal(values: list[object], elements: T.DataType) -> str:
    if not values:
        return _empty_array(elements)
    return f"CAST(array({', '.join(_scalar(v) for v in values)}) AS ARRAY<{_spark_type_sql(elements)}>)"


def _decimal(text: str) -> str:
    return f"CAST({text} AS DECIMAL(38,0))"


def _normalised(text: str, e: ir.Expr) -> str:
    """A set value sorted and without duplicates; trace columns and constant literals already are."""
    if isinstance(e, ir.VarRef | ir.KeyRef | ir.ParamRef | ir.Lit) or (
            isinstance(e, ir.SetLit) and all(isinstance(i, ir.Lit | ir.EnumLit) for i in e.items)):
        return text
    # `array_sort`, not `sort_array` (which sorts the same way when there is no null): Spark evaluates it without
    # generated code, which ends whole-stage code generation at the projection using it. The trace checker relies
    # on that boundary: with `sort_array`, its row checks fuse with the join and the window into one generated
    # method over the JVM's 64 KB limit, and Spark logs a compile error and runs that stage slower without
    # generated code (benchmarks/RESULTS.md, 2026-11-26).
    return f"array_sort(array_distinct({text}))"


def _is_empty_literal(e: ir.Expr) -> bool:
    return (isinstance(e, ir.SetLit) and not e.items) or (
        isinstance(e, ir.Lit) and isinstance(e.value, frozenset) and not e.value)


def _constant_value(e: ir.Expr) -> object:
    if isinstance(e, ir.EnumLit):
        return e.member
    assert isinstance(e, ir.Lit), e
    return e.value


def _literal(value: ir.PyValue, t: ir.Type) -> str:
    if isinstance(value, frozenset):
        elements = element_type(t.element) if isinstance(t, ir.SetType) else T.StringType()
        return _array_literal(sorted(value), elements)  # type: ignore[type-var]
    return _scalar(value)


def conjunction(parts: list[str]) -> str:
    """SQL `a AND b AND ...`; true for none."""
    return "(" + " AND ".join(parts) + ")" if parts else "true"


def disjunction(parts: list[str]) -> str:
    """SQL `a OR b OR ...`; false for none."""
    return "(" + " OR ".join(parts) + ")" if parts else "false"
