"""The Spark backend of the expression language: IR expressions → Spark SQL → `pyspark.sql.Column`, no Python UDFs.

Owns: `SparkCompiler` (the one translation to Spark: `tree(e)` is the IR as a `kcoord.model.sqltree` expression,
`sql(e)` its Spark SQL text, `column(e)` that text as a `Column`), `Columns` (which column a name reads: the
pre-state, the post-state or the arguments — callers choose the naming, and whether states and enum members are
read as their names or as their codes: `Columns.coded`), the Spark types of a machine's trace rows (`spark_schema`,
from `kcoord.model.traceschema`) and `unsupported` (the constructs this backend cannot express; none today — the
type checker rewrites `size` to emptiness tests before any backend sees it).

Meaning, value by value (it must equal the Python evaluator's and z3's; `tests/model/test_spark_backend.py` checks it
on random states):

- bool and strings are Spark booleans and strings. Enum members and state names are their names as strings, or, with
  `Columns.coded`, their codes (`traceschema.code`: the position of the name among its type's names, sorted): the
  typed trace format stores them so, and the checker reads every input so.
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
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from . import ir
from . import sqltree as q
from .traceschema import code, trace_columns

if TYPE_CHECKING:
    from pyspark.sql import Column
    from pyspark.sql import types as T

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def spark_type(column_type: str) -> T.DataType:
    """The Spark type of a trace column type (as `kcoord.model.traceschema` names them)."""
    from pyspark.sql import types as T

    if column_type.startswith("list<"):
        return T.ArrayType(spark_type(column_type[5:-1]))
    return {"string": T.StringType(), "int64": T.LongType(), "int32": T.IntegerType(), "int16": T.ShortType(),
            "int8": T.ByteType(), "bool": T.BooleanType()}[column_type]


def spark_schema(m: ir.Machine) -> T.StructType:
    """The Spark schema of the machine's trace rows (the same columns as `traceschema.arrow_schema`)."""
    from pyspark.sql import types as T

    return T.StructType([T.StructField(name, spark_type(typ)) for name, typ in trace_columns(m)])


def sql_element_type(t: ir.Type, coded: bool = False) -> q.SqlType:
    """The SQL type of the elements of a set of `t`s (or of a value of type `t`)."""
    if isinstance(t, ir.BoolType):
        return q.BOOLEAN
    if isinstance(t, ir.IntType) or (coded and isinstance(t, ir.EnumType | ir.StateType)):
        return q.BIGINT
    return q.STRING


def value_type(t: ir.Type, coded: bool = False) -> T.DataType:
    """The Spark type of an expression value of IR type `t`."""
    from pyspark.sql import types as T

    def element(e: ir.Type) -> T.DataType:
        sql = sql_element_type(e, coded)
        return T.BooleanType() if sql == q.BOOLEAN else T.LongType() if sql == q.BIGINT else T.StringType()

    if isinstance(t, ir.SetType):
        return T.ArrayType(element(t.element))
    if isinstance(t, ir.EmptySetType):
        return T.ArrayType(T.StringType())
    return element(t)


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
    their own names, `pending` in `pending`. `coded`: states and enum members are read as codes."""

    pre_var: Callable[[str], str] = field(default=lambda v: f"pre_{v}")
    post_var: Callable[[str], str] = field(default=lambda v: v)
    pre_state: str = "pre_state"
    post_state: str = "to_state"
    arg: Callable[[str], str] = field(default=lambda p: f"arg_{p}")
    key: Callable[[str], str] = field(default=lambda k: k)
    pending: str = "pending"
    coded: bool = False

    def on_post(self) -> Columns:
        """The same naming, but unprimed names read the post-state (for invariants and `within` bounds)."""
        return replace(self, pre_var=self.post_var, pre_state=self.post_state)


class SparkCompiler:
    """Compiles IR expressions to `sqltree` expressions under one column naming, to Spark SQL text, and to columns
    built from that text.

    Rendering text and handing Spark one `F.expr` per expression is the translation's design, not a shortcut: a
    `Column` built call by call costs one Python→JVM round trip per node (tens of seconds for a large machine), the
    text is parsed once inside the JVM. The text is produced only by `sqltree`'s dialect, from the tree: names are
    quoted, string literals escaped.
    """

    def __init__(self, columns: Columns | None = None) -> None:
        self.cols = columns or Columns()

    # ------------------------------------------------------------ entry points

    def sql(self, e: ir.Expr) -> str:
        """`e` as Spark SQL text, fully parenthesised."""
        return q.sql(self.tree(e))

    def column(self, e: ir.Expr) -> Column:
        """`e` as a Spark column (ints may come out as decimal(38,0) where int64 could overflow)."""
        from pyspark.sql import functions as F

        return F.expr(self.sql(e))

    def holds(self, e: ir.Expr) -> q.Expr:
        """A boolean expression that is never null: null (a missing value) counts as false."""
        return q.holds(self.tree(e))

    def equal(self, value: ir.Expr, column: str, t: ir.Type) -> q.Expr:
        """The (normalised) trace column `column` of type `t` equals `value`; never null."""
        left = self.tree(value)
        if ir.is_set(t):
            left = _normalised(left, value)
        return q.holds(q.eq(left, q.col(column)))

    # ------------------------------------------------------------ translation

    def tree(self, e: ir.Expr) -> q.Expr:
        """`e` as a SQL expression tree."""
        if isinstance(e, ir.Lit):
            return self._literal(e.value, e.type)
        if isinstance(e, ir.EnumLit):
            return self.member(e.member, e.type)
        if isinstance(e, ir.VarRef):
            return q.col(self.cols.post_var(e.name) if e.primed else self.cols.pre_var(e.name))
        if isinstance(e, ir.KeyRef):
            return q.col(self.cols.key(e.name))
        if isinstance(e, ir.ParamRef):
            return q.col(self.cols.arg(e.name))
        if isinstance(e, ir.StateRef):
            return q.col(self.cols.post_state if e.primed else self.cols.pre_state)
        if isinstance(e, ir.PendingRef):
            return q.col(self.cols.pending)
        if isinstance(e, ir.SetLit):
            return self._set_literal(e)
        if isinstance(e, ir.Ite):
            then, orelse = self._int_operands(e, (e.then, e.orelse))
            return q.when(self.tree(e.cond), then, orelse)
        if isinstance(e, ir.Unary):
            if e.op == "not":
                return q.Not(self.tree(e.operand))
            (operand,) = self._int_operands(e, (e.operand,))
            return q.Neg(operand)
        if isinstance(e, ir.Call):
            return self._call(e)
        return self._binary(e)

    def member(self, name: str, t: ir.EnumType | ir.StateType) -> q.Expr:
        """An enum member or state: its name, or its code."""
        return q.lit(code(t, name) if self.cols.coded else name)

    def _constant(self, e: ir.Expr) -> object:
        if isinstance(e, ir.EnumLit):
            return code(e.type, e.member) if self.cols.coded else e.member
        assert isinstance(e, ir.Lit), e
        return e.value

    def _literal(self, value: ir.PyValue, t: ir.Type) -> q.Expr:
        if isinstance(value, frozenset):
            element = t.element if isinstance(t, ir.SetType) else ir.STRING
            items: list[bool | int | str] = [v for v in value if isinstance(v, bool | int | str)]
            assert len(items) == len(value), value  # (sets hold scalars)
            if self.cols.coded and isinstance(element, ir.EnumType | ir.StateType):
                items = [code(element, str(v)) for v in items]
            return q.ArrayOf(tuple(q.lit(v) for v in sorted(items)), sql_element_type(element, self.cols.coded))
        if self.cols.coded and isinstance(t, ir.EnumType | ir.StateType) and isinstance(value, str):
            return q.lit(code(t, value))  # (a variable's default of an enum type)
        return q.lit(value)

    def _set_literal(self, e: ir.SetLit) -> q.Expr:
        element = e.type.element if isinstance(e.type, ir.SetType) else ir.STRING
        sql_element = sql_element_type(element, self.cols.coded)
        if not e.items:
            return q.ArrayOf((), sql_element)
        if _constant_set(e):  # sorted and distinct already
            values = sorted({self._constant(i) for i in e.items})  # type: ignore[type-var]
            return q.ArrayOf(tuple(q.lit(v) for v in values), sql_element)  # type: ignore[arg-type]
        return q.fn("array_distinct", q.fn("array", *(self.tree(i) for i in e.items)))

    def _call(self, e: ir.Call) -> q.Expr:
        if e.function == "size":
            return q.Cast(q.fn("size", self.tree(e.args[0])), q.BIGINT)
        args = self._int_operands(e, e.args)
        return q.fn("least" if e.function == "min" else "greatest", *args)

    def _binary(self, e: ir.Binary) -> q.Expr:
        op = e.op
        if op in ("implies", "and", "or"):
            a, b = self.tree(e.left), self.tree(e.right)
            return q.Op("OR", (q.Not(a), b)) if op == "implies" else q.Op(op.upper(), (a, b))
        if op == "in":
            return self._member(e.left, e.right)
        if op in ("union", "inter", "diff") or (op == "sub" and ir.is_set(e.type)):
            a, b = self._set_operand(e.left, e.right), self._set_operand(e.right, e.left)
            return q.fn({"union": "array_union", "inter": "array_intersect"}.get(op, "array_except"), a, b)
        if op == "subset":
            a, b = self._set_operand(e.left, e.right), self._set_operand(e.right, e.left)
            return q.eq(q.fn("size", q.fn("array_except", a, b)), q.Lit(0))
        if op in ("eq", "ne") and (ir.is_set(e.left.type) or ir.is_set(e.right.type)):
            a = _normalised(self._set_operand(e.left, e.right), e.left)
            b = _normalised(self._set_operand(e.right, e.left), e.right)
            return q.eq(a, b) if op == "eq" else q.ne(a, b)
        if op in ("add", "sub"):
            a, b = self._int_operands(e, (e.left, e.right))
            return q.binary("+" if op == "add" else "-", a, b)
        a, b = self._comparands(e.left, e.right)
        return q.binary(_COMPARISONS[op], a, b)

    def _member(self, x: ir.Expr, s: ir.Expr) -> q.Expr:
        item = self.tree(x)
        if isinstance(s, ir.SetLit) and _constant_set(s):
            values = sorted({self._constant(i) for i in s.items})  # type: ignore[type-var]
            return q.in_(item, values)  # type: ignore[arg-type]
        return q.fn("array_contains", self.tree(s), item)

    def _set_operand(self, e: ir.Expr, other: ir.Expr) -> q.Expr:
        """An empty set literal takes its element type from the other operand."""
        if _is_empty_literal(e) and isinstance(other.type, ir.SetType):
            return q.ArrayOf((), sql_element_type(other.type.element, self.cols.coded))
        return self.tree(e)

    def _comparands(self, a: ir.Expr, b: ir.Expr) -> tuple[q.Expr, q.Expr]:
        left, right = self.tree(a), self.tree(b)
        if ir.is_int(a.type) and ir.is_int(b.type) and (_needs_decimal(a) or _needs_decimal(b)):
            return q.Cast(left, q.DECIMAL38), q.Cast(right, q.DECIMAL38)
        return left, right

    def _int_operands(self, parent: ir.Expr, operands: tuple[ir.Expr, ...]) -> list[q.Expr]:
        """Operands of an integer node, as decimal when the node's range leaves int64 (else as they are)."""
        trees = [self.tree(o) for o in operands]
        if ir.is_int(parent.type) and (_needs_decimal(parent) or any(_needs_decimal(o) for o in operands)):
            return [q.Cast(t, q.DECIMAL38) for t in trees]
        return trees


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


# ---------------------------------------------------------------- sets


def _constant_set(e: ir.SetLit) -> bool:
    return all(isinstance(i, ir.Lit | ir.EnumLit) for i in e.items)


def _normalised(tree: q.Expr, e: ir.Expr) -> q.Expr:
    """A set value sorted and without duplicates; trace columns and constant literals already are."""
    if isinstance(e, ir.VarRef | ir.KeyRef | ir.ParamRef | ir.Lit) or (isinstance(e, ir.SetLit) and _constant_set(e)):
        return tree
    # `sort_array`, not `array_sort`: the same order for a set (no nulls), and Spark generates code for it, where
    # `array_sort` is a higher-order function it interprets
    return q.fn("sort_array", q.fn("array_distinct", tree))


def _is_empty_literal(e: ir.Expr) -> bool:
    return (isinstance(e, ir.SetLit) and not e.items) or (
        isinstance(e, ir.Lit) and isinstance(e.value, frozenset) and not e.value)
