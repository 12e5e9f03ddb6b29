"""The Spark backend agrees with the Python evaluator and with z3 on every expression of every bundled machine.

Random states (hypothesis) go through the three evaluators: Python (`PythonEvaluator`), z3 (the state asserted as
equalities, each expression evaluated in the one model they have) and Spark (one DataFrame per batch of states, one
column per expression). Every guard, precondition share, effect, invariant, step property and `within` bound must give
identical values.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
import z3
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from kcoord.model import ir
from kcoord.model import z3backend as zb
from kcoord.model.loader import bundled_machines
from kcoord.model.pyexpr import PythonEvaluator

from .helpers import machine

pytestmark = pytest.mark.spark
MACHINES = sorted(bundled_machines())


# ---------------------------------------------------------------- what to evaluate


def expressions(m: ir.Machine) -> list[tuple[str, ir.Expr, ir.Type]]:
    """(name, expression, type of its value) for everything the trace checker evaluates."""
    out: list[tuple[str, ir.Expr, ir.Type]] = []
    for r in m.rows:
        out.append((f"guard {r.label}", r.guard, ir.BOOL))
        out.append((f"assumes {r.label}", r.assumes, ir.BOOL))
        if isinstance(r, ir.Transition):
            out += [(f"effect {r.label} {ef.var}", ef.value, m.variable(ef.var).type) for ef in r.effects]
    out += [(f"requires {e.name}", e.requires, ir.BOOL) for e in m.events]
    out += [(f"invariant {i.name}", i.expr, ir.BOOL) for i in m.invariants]
    out += [(f"step {s.name}", s.expr, ir.BOOL) for s in m.steps]
    out += [(f"bound {t.name}", t.bound, ir.INT_ANY) for t in m.traces if t.bound is not None]
    return out


def params(m: ir.Machine) -> dict[str, ir.Type]:
    """Every parameter name with its narrowest declared type (one column per name, as in the trace schema)."""
    out: dict[str, ir.Type] = {}
    for e in m.events:
        for p in e.params:
            old = out.get(p.name)
            if isinstance(old, ir.IntType) and isinstance(p.type, ir.IntType):
                out[p.name] = ir.IntType(old.name, max(old.lo, p.type.lo), min(old.hi, p.type.hi))
            else:
                out.setdefault(p.name, p.type)
    return out


def int_constants(m: ir.Machine) -> set[int]:
    exprs = [e for _, e, _ in expressions(m)]
    lits = {n.value for e in exprs for n in ir.walk(e)
            if isinstance(n, ir.Lit) and isinstance(n.value, int) and not isinstance(n.value, bool)}
    return {v + d for v in lits for d in (-1, 0, 1)}


def string_constants(m: ir.Machine) -> set[str]:
    exprs = [e for _, e, _ in expressions(m)]
    return {n.value for e in exprs for n in ir.walk(e) if isinstance(n, ir.Lit) and isinstance(n.value, str)}


# ---------------------------------------------------------------- random states


def value_of(t: ir.Type, ints: list[int], strings: list[str]) -> st.SearchStrategy[Any]:
    if isinstance(t, ir.BoolType):
        return st.booleans()
    if isinstance(t, ir.IntType):
        near = sorted({v for v in (*ints, t.lo, t.hi, t.lo + 1, t.hi - 1) if t.lo <= v <= t.hi})
        return st.one_of(st.sampled_from(near), st.integers(t.lo, t.hi))
    if isinstance(t, ir.EnumType | ir.StateType):
        return st.sampled_from(t.members)
    if isinstance(t, ir.SetType):
        return st.frozensets(value_of(t.element, ints, strings), max_size=3)
    pool = sorted({*zb.POOL.get(t.name if isinstance(t, ir.StringType) else "string", zb.POOL["string"]),
                   *strings})
    return st.sampled_from(pool)


def environment(m: ir.Machine) -> st.SearchStrategy[dict[str, Any]]:
    """One random row: pre-state, post-state, keys, every argument and `pending` (flat, as the checker names it)."""
    ints, strings = sorted(int_constants(m)), sorted(string_constants(m))
    fields: dict[str, st.SearchStrategy[Any]] = {"pre_state": st.sampled_from(m.state_type.members),
                                                 "to_state": st.sampled_from(m.state_type.members),
                                                 "pending": st.booleans()}
    for v in m.variables:
        fields[f"pre_{v.name}"] = value_of(v.type, ints, strings)
        fields[v.name] = value_of(v.type, ints, strings)
    for k in m.keys:
        fields[k.name] = value_of(k.type, ints, strings)
    for name, t in params(m).items():
        fields[f"arg_{name}"] = value_of(t, ints, strings)
    return st.fixed_dictionaries(fields)


# ---------------------------------------------------------------- the three evaluators


def python_values(m: ir.Machine, exprs: list[tuple[str, ir.Expr, ir.Type]], row: dict[str, Any],
                  ev: PythonEvaluator | None = None) -> list[Any]:
    ev = ev or PythonEvaluator()
    pre: dict[str, Any] = {v.name: row[f"pre_{v.name}"] for v in m.variables}
    post: dict[str, Any] = {v.name: row[v.name] for v in m.variables}
    for k in m.keys:
        pre[k.name] = post[k.name] = row[k.name]
    pre["state"], post["state"] = row["pre_state"], row["to_state"]
    args = {name: row[f"arg_{name}"] for name in params(m)} | {"pending": row["pending"]}
    return [ev.eval(e, pre, args, post) for _, e, _ in exprs]


class Z3Values:
    """The z3 evaluator: frames built once per machine, one model per state."""

    def __init__(self, m: ir.Machine) -> None:
        self.m = m
        self.enc = zb.Encoder(m)
        self.pre = self.enc.frame("_pre")
        self.post = self.enc.frame("_post", keys=self.pre.keys)
        self.types = params(m)
        self.pre.params = {n: self.enc.const(f"arg.{n}", t) for n, t in self.types.items()}
        self.pre.pending = z3.Bool("pending", ctx=self.enc.ctx)
        self.candidates: set[Any] = set()

    def values(self, exprs: list[tuple[str, ir.Expr, ir.Type]], row: dict[str, Any],
               expected: list[Any]) -> list[Any]:
        solver = self._solver(row)
        assert solver.check() == z3.sat
        model = solver.model()
        return [self._value(solver, model, e, t, want) for (_, e, t), want in zip(exprs, expected, strict=True)]

    def _solver(self, row: dict[str, Any]) -> z3.Solver:
        enc, s = self.enc, z3.Solver(ctx=self.enc.ctx)
        for v in self.m.variables:
            s.add(self.pre.variables[v.name] == enc.literal(row[f"pre_{v.name}"], v.type))
            s.add(self.post.variables[v.name] == enc.literal(row[v.name], v.type))
        for k in self.m.keys:
            s.add(self.pre.keys[k.name] == enc.literal(row[k.name], k.type))
        for n, t in self.types.items():
            s.add(self.pre.params[n] == enc.literal(row[f"arg_{n}"], t))
        s.add(self.pre.state == enc.state_values[row["pre_state"]])
        s.add(self.post.state == enc.state_values[row["to_state"]])
        s.add(self.pre.pending == z3.BoolVal(row["pending"], ctx=self.enc.ctx))
        return s

    def _value(self, solver: z3.Solver, model: z3.ModelRef, e: ir.Expr, t: ir.Type, want: Any) -> Any:
        term = self.enc.expr(e, self.pre, self.post)
        if isinstance(t, ir.SetType):  # membership of every candidate: the value can only hold what its inputs hold
            candidates = {*want, *_strings_in(self, e)}
            return frozenset(c for c in candidates if z3.is_true(model.eval(
                z3.IsMember(self.enc.literal(c, t.element), term), model_completion=True)))
        v = model.eval(term, model_completion=True)
        if isinstance(t, ir.BoolType):
            if z3.is_true(v) or z3.is_false(v):
                return z3.is_true(v)
            return _entailed(solver, term)  # e.g. set equalities, which model evaluation leaves unreduced
        return self.enc.value(model, term, t)


def _entailed(solver: z3.Solver, term: z3.ExprRef) -> bool:
    """The value of a closed boolean term under the solver's equalities (they fix every constant)."""
    solver.push()
    solver.add(z3.Not(term))
    holds = solver.check() == z3.unsat
    solver.pop()
    return holds


def _strings_in(z: Z3Values, e: ir.Expr) -> set[Any]:
    """Candidate set members: every set value of the state and arguments, and every literal of `e`."""
    out: set[Any] = set()
    for n in ir.walk(e):
        if isinstance(n, ir.Lit) and isinstance(n.value, str):
            out.add(n.value)
    return out | z.candidates


def spark_values(spark: Any, m: ir.Machine, exprs: list[tuple[str, ir.Expr, ir.Type]],
                 rows: list[dict[str, Any]]) -> list[list[Any]]:
    from pyspark.sql import types as T

    from kcoord.model.spark_backend import SparkCompiler, value_type

    fields = [T.StructField("pre_state", T.StringType()), T.StructField("to_state", T.StringType()),
              T.StructField("pending", T.BooleanType())]
    fields += [T.StructField(f"pre_{v.name}", value_type(v.type)) for v in m.variables]
    fields += [T.StructField(v.name, value_type(v.type)) for v in m.variables]
    fields += [T.StructField(k.name, value_type(k.type)) for k in m.keys]
    fields += [T.StructField(f"arg_{n}", value_type(t)) for n, t in params(m).items()]
    schema = T.StructType(fields)
    data = [tuple(sorted(row[f.name]) if isinstance(row[f.name], frozenset) else row[f.name] for f in fields)
            for row in rows]
    df = spark.createDataFrame(data, schema).cache()
    compiler = SparkCompiler()
    out: list[list[Any]] = [[] for _ in rows]
    for start in range(0, len(exprs), 200):  # keep each generated projection a reasonable size
        chunk = exprs[start:start + 200]
        got = df.select(*[compiler.column(e).alias(f"c{i}") for i, (_, e, _) in enumerate(chunk)]).collect()
        for i, r in enumerate(got):
            out[i] += [_from_spark(v) for v in r]
    df.unpersist()
    return out


def _from_spark(v: Any) -> Any:
    if isinstance(v, list):
        return frozenset(v)
    if isinstance(v, Decimal):
        return int(v)
    return v


# ---------------------------------------------------------------- the tests


@pytest.mark.parametrize("name", MACHINES)
def test_three_evaluators_agree_on_every_expression(spark: Any, name: str) -> None:
    m = bundled_machines()[name]
    exprs = expressions(m)
    z = Z3Values(m)
    ev = PythonEvaluator()

    @settings(max_examples=2, deadline=None, derandomize=True, phases=(Phase.explicit, Phase.generate),
              suppress_health_check=list(HealthCheck))
    @given(st.lists(environment(m), min_size=12, max_size=12))
    def check(rows: list[dict[str, Any]]) -> None:
        spark_rows = spark_values(spark, m, exprs, rows)
        for row, from_spark in zip(rows, spark_rows, strict=True):
            expected = python_values(m, exprs, row, ev)
            z.candidates = {x for v in row.values() if isinstance(v, frozenset) for x in v}
            from_z3 = z.values(exprs, row, expected)
            for (label, _, _), py, sp, z3v in zip(exprs, expected, from_spark, from_z3, strict=True):
                assert py == sp == z3v, f"{name} {label}: python {py!r}, spark {sp!r}, z3 {z3v!r} on {row}"

    check()


OVERFLOW = machine("""
machine Demo
  key id: string
  var a: int64 = 0
  var b: int64 = 0
  var s: set[string] = {}
  initial state A "a"
  event E(x: int64) "e"
    from A -> A ensures a' == a + x - b, s' == (s | {"p"}) - {"q"}
  invariant no_wrap: a + b > a - 1 or b < 0
  invariant sets: (s & {"p"}) == {} or "p" in s
""")


def test_arithmetic_that_leaves_int64_is_exact(spark: Any) -> None:
    """int64 + int64 overflows a Spark bigint; the compiler computes it in decimal(38,0) and agrees with Python."""
    big = 2**63 - 1
    rows = [{"pre_state": "A", "to_state": "A", "pending": False, "pre_a": big, "a": 0, "pre_b": big, "b": 0,
             "pre_s": frozenset({"q"}), "s": frozenset(), "id": "k", "arg_x": big}]
    exprs = expressions(OVERFLOW)
    assert spark_values(spark, OVERFLOW, exprs, rows)[0] == python_values(OVERFLOW, exprs, rows[0])


def test_nothing_in_the_bundled_specs_is_beyond_spark() -> None:
    from kcoord.model.spark_backend import unsupported

    for m in bundled_machines().values():
        assert [label for label, e, _ in expressions(m) if unsupported(e)] == []
