"""The persisted-step relation on Spark: the record pairs the log reader wrote (`logcheck.StepChecker.pair`), checked
against each machine's relation — the same verdicts, names, locations and messages as the Python checker
(`logcheck`), so both engines report the same violations.

Owns: `persisted_step_violations` (the pairs' folder → a DataFrame of raw violations, the columns
`sparkcheck.MachinePlan.row_violations` gives: machine, key, check, name, seq, seq_from, seq_to, location, message,
pos, row_json). The job (`job.run_spark`) unions it with every machine's row checks and trace properties and writes
them in one job. Every atom is compiled once by the Spark backend (`SparkCompiler`, the previous record read from
`prev_<v>` and `source`, the next one from `next_<v>` and `target`) into a `sqltree` expression; per pair and clause
the number of false atoms is summed, a pair is explained when a clause of its states has none, and otherwise the
closest clause is the one with the fewest (the first in the relation's order on a tie), as in Python.
Must not import: kcoord.cli.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from kcoord.model import ir
from kcoord.model import sqltree as q
from kcoord.model.pretty import render
from kcoord.model.spark_backend import Columns, SparkCompiler, spark_type
from kcoord.model.steprel import Clause, Relation
from kcoord.model.traceschema import column_type

from .checks import Spec, location
from .logcheck import STEP_CHECK
from .sparkcheck import BOUNDARY

_BIG = 10**9  # fails * _BIG + clause index orders (fewest false atoms, then relation order)
#: the record pairs' columns: the previous record in `prev_<v>` and `source`, the next one in `next_<v>`, `target`
PAIR = Columns(pre_var=lambda v: f"prev_{v}", post_var=lambda v: f"next_{v}", pre_state="source",
               post_state="target")


def _schema(m: ir.Machine, relation: Relation) -> Any:
    from pyspark.sql import types as T

    fields = [T.StructField(n, t) for n, t in (
        ("machine", T.StringType()), ("key", T.StringType()), ("seq", T.LongType()), ("seq_from", T.LongType()),
        ("name", T.StringType()), ("ts_ms", T.LongType()), ("source", T.StringType()), ("target", T.StringType()),
        ("tombstone", T.BooleanType()), ("after", T.StringType()), ("row_json", T.StringType()))]
    fields += [T.StructField(k.name, spark_type(column_type(k.type))) for k in m.keys]
    for name in relation.fields:
        typ = spark_type(column_type(m.variable(name).type))
        fields += [T.StructField(f"prev_{name}", typ), T.StructField(f"next_{name}", typ)]
    return T.StructType(fields)


def persisted_step_violations(spark: Any, pairs_root: str, machines: Mapping[str, ir.Machine],
                              relations: Mapping[str, Relation]) -> list[Any]:
    """The raw violations of the pairs under `<pairs_root>/<Machine>/`, one DataFrame per machine with pairs."""
    out = []
    for name, relation in sorted(relations.items()):
        folder = os.path.join(pairs_root, name)
        if os.path.isdir(folder):
            pairs = spark.read.schema(_schema(machines[name], relation)).json(folder)
            out.append(_machine_violations(pairs, Spec.of(machines[name]), relation))
    return out


def _applies(relation: Relation, c: Clause) -> q.Expr:
    """The pair's states are the clause's."""
    states = [q.eq(q.col("tombstone"), q.lit(c.tombstone))]
    if relation.state:
        states.append(q.eq(q.col("source"), q.lit(c.source)))
        if not c.tombstone:
            states.append(q.eq(q.col("target"), q.lit(c.target)))
    return q.and_(*states)


def _fails(held: list[q.Expr]) -> q.Expr:
    """How many of the atoms are false."""
    terms = [q.when(h, q.lit(0), q.lit(1)) for h in held]
    return q.Op("+", tuple(terms)) if len(terms) > 1 else terms[0] if terms else q.lit(0)


def _message(spec: Spec, c: Clause, held: list[q.Expr]) -> q.Expr:
    """Why the closest clause does not explain the pair: its first false atom (and how many more)."""
    first_false = q.case([(q.not_(h), q.lit(render(a))) for h, a in zip(held, c.atoms, strict=True)], q.lit(""))
    fails = q.col("fails")
    more = q.when(q.binary(">", fails, q.lit(1)), q.concat(" (and ", q.text(q.binary("-", fails, q.lit(1))),
                                                                " more)"), q.lit(""))
    return q.concat(": closest ", q.lit(c.label), " (", q.lit(spec.rows[c.rows[-1]].location), "): ", first_false,
                    " is false", more)


def _machine_violations(pairs: Any, spec: Spec, relation: Relation) -> Any:
    from pyspark.sql import functions as F

    m = spec.machine
    compiler = SparkCompiler(PAIR)
    codes, messages = [], []
    for i, c in enumerate(relation.clauses):
        applies = _applies(relation, c)
        held = [compiler.holds(a) for a in c.atoms]
        fails = _fails(held)
        codes.append(q.when(applies, q.binary("+", q.binary("*", q.Cast(fails, q.BIGINT), q.lit(_BIG)), q.lit(i))))
        messages.append((q.lit(i), _message(spec, c, held)))
    code = q.fn("least", *codes) if len(codes) > 1 else codes[0] if codes else q.null(q.BIGINT)
    unknown = q.IsNull(q.col("code"))
    closest = q.col("closest")
    none_message = q.concat(": no path of the spec writes a record in ", q.col("target"), " after one in ",
                            q.col("source"))
    persist_at = location(m.persist.span) if m.persist is not None else location(m.span)
    where = q.case([(unknown, q.lit(persist_at))], q.case(
        [(q.lit(i), q.lit(spec.rows[c.rows[-1]].location)) for i, c in enumerate(relation.clauses)], subject=closest))
    what = q.when(q.col("tombstone"), q.lit("tombstone"), q.concat(q.lit(relation.record), " (", q.col("target"), ")"))
    head = q.concat(what, " at ", q.col("name"), " (ts ", q.text(q.col("ts_ms")), ") ", q.col("after"), " (",
                    q.col("source"), ")", " is not a step of the spec")
    tail = q.case([(unknown, none_message)], q.case(messages, subject=closest))
    # Both projections that evaluate the relation (the code of the closest clause, then the location and message of
    # the pairs left) are kept out of whole-stage code generation, as `sparkcheck.BOUNDARY` keeps the row checks:
    # compiled on their own, Spark splits their code into methods under the JVM's 64 KB limit, where one stage's
    # method did not compile ("Code grows beyond 64 KB", a relation the size of Transaction's). A pair's seq is its
    # record's number in the folder (never negative), so neither boundary's branch is ever taken.
    df = pairs.selectExpr("*", q.sql(q.Aliased(code, "code")), BOUNDARY)
    # a pair is explained when a clause of its states has no false atom, i.e. its least code is a clause's index
    df = df.where(q.sql(q.or_(q.IsNull(q.col("code")), q.binary(">=", q.col("code"), q.lit(_BIG)),
                              q.IsNull(q.col("_boundary"), negated=True))))
    df = df.selectExpr("*", q.sql(q.Aliased(q.Cast(q.binary("%", q.col("code"), q.lit(_BIG)), q.INT), "closest")),
                       q.sql(q.Aliased(q.Cast(q.binary("DIV", q.col("code"), q.lit(_BIG)), q.INT), "fails")))
    return df.select(
        F.lit(m.name).alias("machine"), "key", F.lit(STEP_CHECK).alias("check"), "name", "seq", "seq_from",
        F.col("seq").alias("seq_to"), F.expr(q.sql(_outside_codegen(where))).alias("location"),
        F.expr(q.sql(q.concat(head, tail))).alias("message"), F.lit(-1).alias("pos"), "row_json")


def _outside_codegen(e: q.Expr) -> q.Expr:
    """`e` (a string), in a form whole-stage code generation cannot take, so that the projection it is in is compiled
    on its own (`sparkcheck.BOUNDARY`; a pair's seq is never negative: the value is always `e`'s)."""
    return q.when(q.binary("<", q.col("seq"), q.lit(-1)),
                  q.fn("java_method", q.lit("java.lang.String"), q.lit("valueOf"), q.col("seq")), e)
