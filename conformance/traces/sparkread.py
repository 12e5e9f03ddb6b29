"""Trace files → validated Spark DataFrames, with the same validation as `readers` (same rules, same order, same
reasons), so the Spark and Python checkers quarantine the same rows.

Owns: `read_machine` (one machine folder's JSON Lines and Parquet files → valid rows with normalised sets, and the
malformed rows with their reason) and `read_unknown` (rows of a folder that is not a loaded machine). JSON goes through
Spark's reader in PERMISSIVE mode (a bad line or a value of the wrong type lands in the corrupt-record column:
`malformed`); Parquet files whose schema does not fit, or whose footer cannot be read (`unreadable_file`, one row
each, as in `readers`), are found from their footers and quarantined whole. A file with a sound footer whose pages
break partway fails Spark's read (the run stops with Spark's error); the Python checker keeps the rows before the break.
Must not import: kcoord.cli.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from kcoord.model import ir
from kcoord.model.spark_backend import quote, spark_type, string_literal

from .readers import UNREADABLE, Rule, Source, columns, file_schema_problem, parquet_footer, rules

CORRUPT = "_corrupt_record"
SOURCE = "_source"
_QUARANTINE_SCHEMA = "machine string, source string, line int, reason string, raw string"


@dataclass(frozen=True, slots=True)
class Tally:
    rows: int  # valid rows
    end: int | None  # their latest ts_ms
    malformed: int  # rows with a reason (files quarantined whole not included)


@dataclass(frozen=True, slots=True)
class Read:
    """One machine's input. `counted` is `valid` again with an observation on the way: Spark computes the `tally`
    as a side effect of the first action that reads it, so no pass over the input exists just to count. `valid` is
    the same rows without it, for every other use."""

    valid: DataFrame
    quarantine: DataFrame  # machine, source, line, reason, raw
    bad_files: int = 0  # Parquet files quarantined whole (their schema does not fit, or they cannot be read)
    observed: tuple[DataFrame, Observation] | None = None  # (None: no file to read)

    @property
    def counted(self) -> DataFrame:
        return self.valid if self.observed is None else self.observed[0]

    def tally(self) -> Tally:
        """The valid rows, their latest ts_ms and the malformed rows: blocks until an action has read `counted`
        (the quarantine needs writing only if some row or file is bad)."""
        if self.observed is None:
            return Tally(0, None, 0)
        r = self.observed[1].get
        return Tally(int(r["n"]), None if r["end"] is None else int(r["end"]), int(r["bad"]))


def schema_of(m: ir.Machine) -> T.StructType:
    return T.StructType([T.StructField(n, spark_type(t)) for n, t in columns(m)])


def read_machine(spark: SparkSession, m: ir.Machine, sources: Sequence[Source]) -> Read:
    schema = schema_of(m)
    frames: list[DataFrame] = []
    bad_files: list[DataFrame] = []
    json_files = [s.path for s in sources if s.format == "json"]
    parquet_files = [s.path for s in sources if s.format == "parquet"]
    if json_files:
        with_corrupt = T.StructType([*schema.fields, T.StructField(CORRUPT, T.StringType())])
        df = (spark.read.schema(with_corrupt).option("mode", "PERMISSIVE")
              .option("columnNameOfCorruptRecord", CORRUPT).json(json_files))
        frames.append(df.withColumn(SOURCE, F.input_file_name()))
    good, bad, unreadable = _split_parquet(parquet_files, m)
    if good:
        df = spark.read.schema(schema).parquet(*good)
        frames.append(df.withColumn(CORRUPT, F.lit(None).cast("string")).withColumn(SOURCE, F.input_file_name()))
    for path, column in bad:
        raw = spark.read.parquet(path)
        bad_files.append(raw.select(F.lit(m.name).alias("machine"), F.lit(path).alias("source"),
                                    F.lit(None).cast("int").alias("line"),
                                    F.lit(f"bad_file_schema:{column}").alias("reason"),
                                    F.to_json(F.struct(*raw.columns)).alias("raw")))
    bad_files += [_unreadable(spark, m.name, path, why) for path, why in unreadable]
    if not frames:
        empty = spark.createDataFrame([], schema)
        return Read(empty, _empty_quarantine(spark) if not bad_files else _union(bad_files), len(bad_files))
    df = _union(frames)
    df = df.withColumn("_reason", reason_column(m))
    observation = Observation()
    observed = df.observe(observation, F.count(F.when(F.col("_reason").isNull(), F.lit(1))).alias("n"),
                          F.max(F.when(F.col("_reason").isNull(), F.col("ts_ms"))).alias("end"),
                          F.count(F.col("_reason")).alias("bad"))
    valid, counted = (d.where(F.col("_reason").isNull()).select(*[normalised(m, n) for n, _ in columns(m)])
                      for d in (df, observed))
    quarantined = df.where(F.col("_reason").isNotNull()).select(
        F.lit(m.name).alias("machine"), F.col(SOURCE).alias("source"), F.lit(None).cast("int").alias("line"),
        F.col("_reason").alias("reason"),
        F.coalesce(F.col(CORRUPT), F.to_json(F.struct(*[F.col(n) for n, _ in columns(m)]))).alias("raw"))
    return Read(valid, _union([quarantined, *bad_files]), len(bad_files), (counted, observation))


def read_unknown(spark: SparkSession, folder: str, sources: Sequence[Source]) -> DataFrame:
    """Every row of a folder that is not a loaded machine, quarantined as `unknown_machine`."""
    frames = []
    reason = f"unknown_machine:{folder or '(no machine folder)'}"
    json_files = [s.path for s in sources if s.format == "json"]
    if json_files:
        text = spark.read.text(json_files).where(F.trim("value") != "")
        frames.append(text.select(F.lit(folder).alias("machine"), F.input_file_name().alias("source"),
                                  F.lit(None).cast("int").alias("line"), F.lit(reason).alias("reason"),
                                  F.col("value").alias("raw")))
    for s in sources:
        if s.format == "parquet":
            why = parquet_footer(s.path)[1]
            if why is not None:
                frames.append(_unreadable(spark, folder, s.path, why))
                continue
            raw = spark.read.parquet(s.path)
            frames.append(raw.select(F.lit(folder).alias("machine"), F.lit(s.path).alias("source"),
                                     F.lit(None).cast("int").alias("line"), F.lit(reason).alias("reason"),
                                     F.to_json(F.struct(*raw.columns)).alias("raw")))
    return _union(frames) if frames else _empty_quarantine(spark)


def _split_parquet(paths: list[str], m: ir.Machine
                   ) -> tuple[list[str], list[tuple[str, str]], list[tuple[str, str]]]:
    """(files whose schema fits, [(file, first column that does not)], [(file, why its footer cannot be read)]),
    from the Parquet footers."""
    good, bad, unreadable = [], [], []
    cols = columns(m)
    for p in paths:
        schema, why = parquet_footer(p)
        if why is not None:
            unreadable.append((p, why))
        elif problem := file_schema_problem(schema, cols):
            bad.append((p, problem))
        else:
            good.append(p)
    return good, bad, unreadable


def _unreadable(spark: SparkSession, machine: str, path: str, why: str) -> DataFrame:
    """The one quarantine row of a Parquet file that cannot be read."""
    return spark.createDataFrame([(machine, path, None, UNREADABLE, why)], _QUARANTINE_SCHEMA)


def _union(frames: list[DataFrame]) -> DataFrame:
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out


def _empty_quarantine(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame([], _QUARANTINE_SCHEMA)


# ---------------------------------------------------------------- validation as SQL


def reason_column(m: ir.Machine) -> Column:
    """The first failing rule's reason, or null: the same rules, in the same order, as `readers.check_rules`."""
    cases = [f"WHEN {quote(CORRUPT)} IS NOT NULL THEN 'malformed'",
             f"WHEN `machine` IS NOT NULL AND `machine` <> {string_literal(m.name)} THEN 'wrong_machine:machine'"]
    cases += [f"WHEN {_fails(r)} THEN {string_literal(_reason(r))}" for r in rules(m)]
    return F.expr("CASE " + " ".join(cases) + " END")


def _reason(r: Rule) -> str:
    return f"{r.code}:{r.column}"


def _in_list(values: Sequence[str], item: str) -> str:
    return f"{item} IN ({', '.join(string_literal(v) for v in values)})" if values else "false"


def _fails(r: Rule) -> str:
    c = quote(r.column)
    if r.kind == "missing":
        cond = f"{c} IS NULL"
    elif r.kind == "not_in":
        cond = f"{c} IS NOT NULL AND NOT ({_in_list(r.allowed, c)})"
    elif r.kind == "null_element":  # array_except(c, [null]) drops the null: no lambda, so code generation covers it
        cond = f"{c} IS NOT NULL AND size(array_except({c}, array(CAST(NULL AS STRING)))) < size(array_distinct({c}))"
    elif r.kind == "member":  # (a set has no null element here: its null_element rule comes first)
        allowed = f"array({', '.join(string_literal(v) for v in r.allowed)})" if r.allowed else "CAST(array() AS " \
            "ARRAY<STRING>)"
        cond = f"{c} IS NOT NULL AND " + (f"size(array_except({c}, {allowed})) > 0" if r.is_set
                                          else f"NOT ({_in_list(r.allowed, c)})")
    else:
        if r.is_set:
            n = "try_cast(x AS BIGINT)"
            cond = f"{c} IS NOT NULL AND exists({c}, x -> NOT (x RLIKE '^-?[0-9]+$') OR {n} IS NULL OR {n} < {r.lo} " \
                   f"OR {n} > {r.hi})"
        else:
            cond = f"{c} IS NOT NULL AND ({c} < {r.lo} OR {c} > {r.hi})"
    if r.events:
        cond = f"`event` IN ({', '.join(string_literal(e) for e in r.events)}) AND {cond}"
    return f"({cond})"


def normalised(m: ir.Machine, name: str) -> Column:
    """A validated column as the checks read it: sets sorted, without duplicates, of their element type."""
    t = _set_type(m, name)
    if t is None:
        return F.col(name)
    c = quote(name)
    if isinstance(t.element, ir.IntType):  # (validated: every element is an integer in range)
        return F.expr(f"array_sort(array_distinct(CAST({c} AS ARRAY<BIGINT>)))").alias(name)
    if isinstance(t.element, ir.BoolType):
        return F.expr(f"array_sort(array_distinct(transform({c}, x -> x = 'true')))").alias(name)
    return F.expr(f"array_sort(array_distinct({c}))").alias(name)


def _set_type(m: ir.Machine, name: str) -> ir.SetType | None:
    for f in (*m.keys, *m.variables):
        if f.name == name and isinstance(f.type, ir.SetType):
            return f.type
    for e in m.events:
        for p in e.params:
            if f"arg_{p.name}" == name and isinstance(p.type, ir.SetType):
                return p.type
    return None
