"""The persisted-step relation on Spark: the record pairs the log reader wrote (`logcheck.StepChecker.pair`), checked
against each machine's relation in Spark SQL — the same verdicts, names, locations and messages as the Python
checker (`logcheck`), so both engines report the same violations.

Owns: `persisted_step_violations` (the pairs' folder → a DataFrame of raw violations, the columns
`sparkcheck.MachinePlan.violations` gives: machine, key, check, name, seq, seq_from, seq_to, location, message, pos,
row_json). Every atom is compiled once by the Spark backend (`kcoord.model.spark_backend.SparkCompiler`, the previous
record read from `prev_<v>` and `source`, the next one from `next_<v>` and `target`); per pair and clause the number
of false atoms is summed, a pair is explained when a clause of its states has none, and otherwise the closest clause
is the one with the fewest (the first in the relation's order on a tie), as in Python.
Kept on its own: the Spark checker is being restructured (issue 33); this plan only needs the backend's compiler.
Must not import: kcoord.cli.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from kcoord.model import ir
from kcoord.model.pretty import render
from kcoord.model.spark_backend import Columns, SparkCompiler, spark_type, string_literal
from kcoord.model.steprel import Relation
from kcoord.model.traceschema import column_type

from .checks import Spec, location
from .logcheck import STEP_CHECK

_BIG = 10**9  # fails * _BIG + clause index orders (fewest false atoms, then relation order)


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
                              relations: Mapping[str, Relation]) -> Any | None:
    out = None
    for name, relation in sorted(relations.items()):
        folder = os.path.join(pairs_root, name)
        if not os.path.isdir(folder):
            continue
        pairs = spark.read.schema(_schema(machines[name], relation)).json(folder)
        found = _machine_violations(pairs, Spec.of(machines[name]), relation)
        out = found if out is None else out.unionByName(found)
    return out


def _machine_violations(pairs: Any, spec: Spec, relation: Relation) -> Any:
    from pyspark.sql import functions as F

    m = spec.machine
    sql = SparkCompiler(Columns(pre_var=lambda v: f"prev_{v}", post_var=lambda v: f"next_{v}", pre_state="source",
                                post_state="target"))
    codes, explained, messages = [], [], []
    for i, c in enumerate(relation.clauses):
        states = [f"tombstone = {'true' if c.tombstone else 'false'}"]
        if relation.state:
            states.append(f"source = {string_literal(c.source)}")
            if not c.tombstone:
                states.append(f"target = {string_literal(c.target)}")
        applies = " AND ".join(states)
        held = [f"coalesce({sql.holds_sql(a)}, false)" for a in c.atoms]
        fails = " + ".join(f"(CASE WHEN {h} THEN 0 ELSE 1 END)" for h in held) or "0"
        codes.append(f"CASE WHEN {applies} THEN CAST({fails} AS BIGINT) * {_BIG} + {i} END")
        explained.append(f"({applies} AND ({fails}) = 0)")
        first = " ".join(f"WHEN NOT {h} THEN {string_literal(render(a))}" for h, a in zip(held, c.atoms, strict=True))
        first_false = f"CASE {first} ELSE '' END" if first else "''"  # (a clause without atoms is never closest)
        row = spec.rows[c.rows[-1]]
        messages.append(f"WHEN {i} THEN concat(': closest ', {string_literal(c.label)}, ' (', "
                        f"{string_literal(row.location)}, '): ', {first_false}, ' is false', "
                        f"CASE WHEN fails > 1 THEN concat(' (and ', CAST(fails - 1 AS STRING), ' more)') ELSE '' "
                        f"END)")
    none_message = ("concat(': no path of the spec writes a record in ', target, ' after one in ', source)")
    where_cases = " ".join(f"WHEN {i} THEN {string_literal(spec.rows[c.rows[-1]].location)}"
                           for i, c in enumerate(relation.clauses))
    persist_at = location(m.persist.span) if m.persist is not None else location(m.span)
    df = pairs.where(f"NOT ({' OR '.join(explained) or 'false'})")
    df = df.withColumn("code", F.expr(f"least({', '.join(codes)})") if len(codes) > 1 else
                       F.expr(codes[0]) if codes else F.lit(None).cast("long"))
    df = df.withColumn("closest", F.expr(f"CAST(code % {_BIG} AS INT)")) \
        .withColumn("fails", F.expr(f"CAST(code DIV {_BIG} AS INT)"))
    what = f"CASE WHEN tombstone THEN 'tombstone' ELSE concat({string_literal(relation.record)}, ' (', target, ')') END"
    head = f"concat({what}, ' at ', name, ' (ts ', CAST(ts_ms AS STRING), ') ', after, ' (', source, ')', " \
           f"' is not a step of the spec')"
    tail = f"CASE WHEN code IS NULL THEN {none_message} ELSE CASE closest {' '.join(messages)} END END"
    return df.select(
        F.lit(m.name).alias("machine"), "key", F.lit(STEP_CHECK).alias("check"), "name", "seq", "seq_from",
        F.col("seq").alias("seq_to"),
        F.expr(f"CASE WHEN code IS NULL THEN {string_literal(persist_at)} ELSE CASE closest {where_cases} END END")
        .alias("location"),
        F.expr(f"concat({head}, {tail})").alias("message"), F.lit(-1).alias("pos"), "row_json")
