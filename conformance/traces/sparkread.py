"""Trace files → the checker's typed rows on Spark, with the same validation as `readers` (same rules, same order,
same reasons), so the Spark and Python checkers quarantine the same rows.

Owns: `typed_columns` (the row the Spark checks read: every trace column but `machine`, names as their codes —
`traceschema.code` — integers as bigint or int, sets as sorted arrays of their element type), `read_machine` (one
machine folder's files → valid typed rows, the malformed rows with their reason, and a `Tally`), `read_unknown`
(rows of a folder that is not a loaded machine), `named_rows` (rows of some keys as the Python checker holds them:
names, for witnesses) and `witness_rows` (the rows around chosen violations).

Files are read in groups that share a layout: JSON Lines and v1 Parquet (names as strings) become typed rows
through one projection (a name → its code; an unknown name → -1, quarantined as `unknown`); typed (v2) Parquet files
whose footer lists the spec's own names are read as they are; a typed file with other names (an older or newer spec)
has its codes mapped to the spec's first. JSON goes through Spark's reader in PERMISSIVE mode (a bad line or a value
of the wrong type lands in the corrupt-record column: `malformed`); Parquet files whose schema does not fit, or
whose footer cannot be read (`unreadable_file`, one row each, as in `readers`), are found from their footers and
quarantined whole. A file with a sound footer whose pages break partway fails Spark's read (the run stops with
Spark's error); the Python checker keeps the rows before the break.
Must not import: kcoord.cli.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Observation, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from kcoord.model import ir
from kcoord.model import sqltree as q
from kcoord.model.spark_backend import spark_type
from kcoord.model.traceschema import codes, v2_columns

from .readers import UNREADABLE, Rule, Source, columns, file_schema_problem, parquet_footer, rules, typed_footer

CORRUPT = "_corrupt_record"
_QUARANTINE_SCHEMA = "machine string, source string, line int, reason string, raw string"
V1, TYPED = "v1", "typed"


@dataclass(frozen=True, slots=True)
class Tally:
    rows: int  # valid rows
    end: int | None  # their latest ts_ms
    malformed: int  # rows with a reason (files quarantined whole not included)


@dataclass(frozen=True, slots=True)
class Read:
    """One machine's input. `counted` is `valid` with an observation on the way (one per group of files): Spark
    computes the `tally` as a side effect of the first action that reads it, so no pass over the input exists just
    to count. `valid` is the same rows without it, for every other use."""

    valid: DataFrame
    quarantine: DataFrame  # machine, source, line, reason, raw
    bad_files: int = 0  # Parquet files quarantined whole (their schema does not fit, or they cannot be read)
    counted_rows: DataFrame | None = None  # (None: no file to read)
    observations: tuple[Observation, ...] = ()
    groups: tuple[Group, ...] = ()

    @property
    def counted(self) -> DataFrame:
        return self.valid if self.counted_rows is None else self.counted_rows

    def tally(self) -> Tally:
        """The valid rows, their latest ts_ms and the malformed rows: blocks until an action has read `counted`."""
        rows, bad, ends = 0, 0, []
        for o in self.observations:
            r = o.get
            rows, bad = rows + int(r["n"]), bad + int(r["bad"])
            ends += [int(r["end"])] if r["end"] is not None else []
        return Tally(rows, max(ends) if ends else None, bad)


@dataclass(frozen=True, slots=True)
class Group:
    """Files read together: JSON Lines, v1 Parquet, or typed Parquet with one footer (machine and names)."""

    fmt: str  # json | parquet | typed
    paths: tuple[str, ...]
    machine: str = ""
    names: tuple[tuple[str, tuple[str, ...]], ...] = ()  # typed: the file's names of each coded column

    @property
    def layout(self) -> str:
        return TYPED if self.fmt == "typed" else V1


# ---------------------------------------------------------------- the typed row


def typed_columns(m: ir.Machine) -> list[tuple[str, T.DataType]]:
    """The columns the Spark checks read, in order (`readers.columns` without `machine`)."""
    coded = codes(m)
    sets = _set_types(m)
    out: list[tuple[str, T.DataType]] = []
    for name, typ in columns(m):
        if name == "machine":
            continue
        if name in sets:
            element = sets[name].element
            out.append((name, T.ArrayType(T.LongType() if name in coded or isinstance(element, ir.IntType) else
                                          T.BooleanType() if isinstance(element, ir.BoolType) else T.StringType())))
        else:
            out.append((name, T.LongType() if name in coded else spark_type(typ)))
    return out


def _set_types(m: ir.Machine) -> dict[str, ir.SetType]:
    out: dict[str, ir.SetType] = {}
    for f in (*m.keys, *m.variables):
        if isinstance(f.type, ir.SetType):
            out.setdefault(f.name, f.type)
    for e in m.events:
        for p in e.params:
            if isinstance(p.type, ir.SetType):
                out.setdefault(f"arg_{p.name}", p.type)
    return out


def v1_schema(m: ir.Machine) -> T.StructType:
    return T.StructType([T.StructField(n, spark_type(t)) for n, t in columns(m)])


def typed_schema(m: ir.Machine) -> T.StructType:
    v1 = dict(columns(m))
    return T.StructType([T.StructField(n, spark_type(t)) for n, t in v2_columns(m) if n in v1])


# ---------------------------------------------------------------- reading


def read_machine(spark: SparkSession, m: ir.Machine, sources: Sequence[Source]) -> Read:
    groups, bad_files = _groups(spark, m, sources)
    if not groups:
        empty = spark.createDataFrame([], T.StructType([T.StructField(n, t) for n, t in typed_columns(m)]))
        return Read(empty, _empty_quarantine(spark) if not bad_files else _union(bad_files), len(bad_files))
    checked = [_with_reason(spark, m, g) for g in groups]
    ok = F.col("_reason").isNull()
    observations = tuple(Observation() for _ in groups)
    valid, counted = [], []
    for raw, g, observation in zip(checked, groups, observations, strict=True):
        observed = raw.observe(observation, F.count(F.when(ok, F.lit(1))).alias("n"),
                               F.max(F.when(ok, F.col("ts_ms"))).alias("end"), F.count(F.col("_reason")).alias("bad"))
        valid.append(_typed(m, raw.where(ok), g, keep=()))
        counted.append(_typed(m, observed.where(ok), g, keep=()))
    quarantined = [_quarantined(m, raw, g) for raw, g in zip(checked, groups, strict=True)]
    return Read(_union(valid), _union([*quarantined, *bad_files]), len(bad_files), _union(counted), observations,
                tuple(groups))


def _groups(spark: SparkSession, m: ir.Machine, sources: Sequence[Source]) -> tuple[list[Group], list[DataFrame]]:
    """The groups of files to read, and a quarantine frame for each Parquet file that cannot be."""
    groups: list[Group] = []
    json_files = tuple(s.path for s in sources if s.format == "json")
    if json_files:
        groups.append(Group("json", json_files))
    v1: list[str] = []
    typed: dict[tuple[str, str], list[str]] = {}
    bad_files: list[DataFrame] = []
    cols, v2 = columns(m), dict(v2_columns(m))
    for s in sources:
        if s.format != "parquet":
            continue
        schema, why = parquet_footer(s.path)
        if why is not None:
            bad_files.append(_unreadable(spark, m.name, s.path, why))
        elif problem := file_schema_problem(schema, cols, v2):
            raw = spark.read.parquet(s.path)
            bad_files.append(raw.select(F.lit(m.name).alias("machine"), F.lit(s.path).alias("source"),
                                        F.lit(None).cast("int").alias("line"),
                                        F.lit(f"bad_file_schema:{problem}").alias("reason"),
                                        F.to_json(F.struct(*raw.columns)).alias("raw")))
        elif (footer := typed_footer(schema)) is not None:
            typed.setdefault((footer[0], json.dumps(footer[1], sort_keys=True)), []).append(s.path)
        else:
            v1.append(s.path)
    if v1:
        groups.append(Group("parquet", tuple(v1)))
    for (machine, names), paths in sorted(typed.items()):
        decoded = json.loads(names)
        groups.append(Group("typed", tuple(paths), machine, tuple((c, tuple(v)) for c, v in sorted(decoded.items()))))
    return groups, bad_files


def _read(spark: SparkSession, m: ir.Machine, g: Group) -> DataFrame:
    if g.fmt == "json":
        schema = T.StructType([*v1_schema(m).fields, T.StructField(CORRUPT, T.StringType())])
        return spark.read.schema(schema).option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", CORRUPT) \
            .json(list(g.paths))
    if g.fmt == "parquet":
        return spark.read.schema(v1_schema(m)).parquet(*g.paths).withColumn(CORRUPT, F.lit(None).cast("string"))
    df = spark.read.schema(typed_schema(m)).parquet(*g.paths)
    return df.select(F.lit(g.machine).alias("machine"), *_remapped(m, g, df.columns),
                     F.lit(None).cast("string").alias(CORRUPT))


def _remapped(m: ir.Machine, g: Group, present: list[str]) -> list[Column]:
    """A typed group's columns, with codes of names the spec calls otherwise mapped to the spec's codes (a name the
    spec does not have, or a code past the file's names → a negative code: quarantined as unknown)."""
    spec, file_names = codes(m), dict(g.names)
    sets = _set_types(m)
    out = []
    for name in present:
        mine, theirs = spec.get(name), file_names.get(name)
        if mine is None or theirs is None or tuple(theirs) == mine:
            out.append(F.col(name))
            continue
        table = [mine.index(n) if n in mine else -1 - i for i, n in enumerate(theirs)]

        def mapped(x: q.Expr, table: list[int] = table) -> q.Expr:
            return q.coalesce(q.pick(table, x, q.BIGINT), q.binary("-", q.lit(-1000), q.Cast(x, q.BIGINT)))

        value = q.transform(q.col(name), mapped) if name in sets else q.when(
            q.IsNull(q.col(name), negated=True), mapped(q.col(name)))
        out.append(F.expr(q.sql(value)).alias(name))
    return out


def _with_reason(spark: SparkSession, m: ir.Machine, g: Group) -> DataFrame:
    raw = _read(spark, m, g)
    return raw.withColumn("_reason", F.expr(q.sql(reason(m, g.layout))))


def _typed(m: ir.Machine, raw: DataFrame, g: Group, keep: tuple[str, ...] = ("_reason",)) -> DataFrame:
    """The group's rows as typed rows (only meaningful on valid rows), and the columns in `keep`."""
    spec = codes(m)
    sets = _set_types(m)
    out = []
    for name, t in typed_columns(m):
        x = q.col(name)
        if g.layout == TYPED or (name not in spec and name not in sets):
            value: q.Expr = q.Cast(x, q.BIGINT) if isinstance(t, T.LongType) else x
            if name in sets:
                value = _as_set(q.Cast(x, q.array_of(_sql_type(t))))
        elif name in sets:
            value = q.fn("sort_array", q.fn("array_distinct", _set_of_strings(x, sets[name].element, spec.get(name))))
        else:
            value = _code_of(x, spec[name])
        out.append(F.expr(q.sql(value)).alias(name))
    return raw.select(*out, *keep)


def _as_set(x: q.Expr) -> q.Expr:
    """An array column as a set: sorted, each element once. An array of at most one element is one already: most
    rows' sets are empty, and sorting and deduplicating (a hash set allocated per row, in Spark's interpreted
    `array_distinct` for strings) was a tenth of the check's task time at 1M events (benchmarks/RESULTS.md)."""
    return q.when(q.binary("<=", q.fn("size", x), q.lit(1)), x, q.fn("sort_array", q.fn("array_distinct", x)))


def _sql_type(t: T.DataType) -> q.SqlType:
    assert isinstance(t, T.ArrayType)
    e = t.elementType
    return q.BIGINT if isinstance(e, T.LongType) else q.BOOLEAN if isinstance(e, T.BooleanType) else q.STRING


def _code_of(x: q.Expr, names: Sequence[str]) -> q.Expr:
    """A name → its code; an unknown name → -1 (quarantined as unknown before it is ever read); null stays null (an
    argument the runtime never computed, as in a typed file)."""
    return q.when(q.IsNull(x, negated=True),
                  q.case([(q.lit(n), q.lit(i)) for i, n in enumerate(names)], q.lit(-1), subject=x))


def _set_of_strings(x: q.Expr, element: ir.Type, names: Sequence[str] | None) -> q.Expr:
    """A v1 set (a list of strings) as an array of its element type (validated: every element converts)."""
    if names is not None:
        return q.transform(x, lambda v: _code_of(v, names))
    if isinstance(element, ir.IntType):
        return q.Cast(x, q.array_of(q.BIGINT))
    if isinstance(element, ir.BoolType):
        return q.transform(x, lambda v: q.eq(v, q.lit("true")))
    return x


def read_unknown(spark: SparkSession, folder: str, sources: Sequence[Source]) -> DataFrame:
    """Every row of a folder that is not a loaded machine, quarantined as `unknown_machine`."""
    frames = []
    why = f"unknown_machine:{folder or '(no machine folder)'}"
    json_files = [s.path for s in sources if s.format == "json"]
    if json_files:
        text = spark.read.text(json_files).where(F.trim("value") != "")
        frames.append(text.select(F.lit(folder).alias("machine"), F.input_file_name().alias("source"),
                                  F.lit(None).cast("int").alias("line"), F.lit(why).alias("reason"),
                                  F.col("value").alias("raw")))
    for s in sources:
        if s.format == "parquet":
            problem = parquet_footer(s.path)[1]
            if problem is not None:
                frames.append(_unreadable(spark, folder, s.path, problem))
                continue
            raw = spark.read.parquet(s.path)
            frames.append(raw.select(F.lit(folder).alias("machine"), F.lit(s.path).alias("source"),
                                     F.lit(None).cast("int").alias("line"), F.lit(why).alias("reason"),
                                     F.to_json(F.struct(*raw.columns)).alias("raw")))
    return _union(frames) if frames else _empty_quarantine(spark)


def _quarantined(m: ir.Machine, raw: DataFrame, g: Group) -> DataFrame:
    """The group's malformed rows: machine, source, line, reason, raw (the row as JSON, names decoded)."""
    df = raw.where(F.col("_reason").isNotNull())
    values = [F.col(n) for n, _ in columns(m)]
    if g.layout == TYPED:
        file_names = dict(g.names)
        values = [F.expr(q.sql(_named(q.col(n), file_names[n], n in _set_types(m)))).alias(n)
                  if n in file_names else F.col(n) for n, _ in columns(m)]
    return df.select(F.lit(m.name).alias("machine"), F.input_file_name().alias("source"),
                     F.lit(None).cast("int").alias("line"), F.col("_reason").alias("reason"),
                     F.coalesce(F.col(CORRUPT), F.to_json(F.struct(*values))).alias("raw"))


def _named(x: q.Expr, names: Sequence[str], is_set: bool) -> q.Expr:
    """A code as its name (`#<code>` past the names, as `readers.unknown_code` says)."""
    def one(v: q.Expr) -> q.Expr:
        return q.coalesce(q.pick(names, v), q.concat("#", q.text(v)))

    if is_set:
        return q.transform(x, one)
    return q.when(q.IsNull(x, negated=True), one(x))


def named_rows(spark: SparkSession, m: ir.Machine, read: Read, keys: DataFrame) -> DataFrame:
    """The valid rows (seq >= 0) of the given keys (a frame with a `key` column), as the Python checker holds them:
    every trace column, names as names, sets as sorted arrays of their elements (for witnesses)."""
    frames = []
    names = codes(m)
    sets = _set_types(m)
    for g in read.groups:
        raw = _with_reason(spark, m, g).where("_reason IS NULL AND seq >= 0").join(F.broadcast(keys), "key",
                                                                                   "left_semi")
        typed = _typed(m, raw, g, keep=("machine",))
        cols = [F.col("machine")]
        cols += [F.expr(q.sql(_named(q.col(n), names[n], n in sets))).alias(n) if n in names else F.col(n)
                 for n, _ in typed_columns(m)]
        frames.append(typed.select(*cols))
    return _union(frames)


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


def reason(m: ir.Machine, layout: str) -> q.Expr:
    """The first failing rule's reason, or null: the same rules, in the same order, as `readers.check_rules`.
    `layout` V1: names are strings; TYPED: names are codes."""
    whens: list[tuple[q.Expr, q.Expr]] = [
        (q.IsNull(q.col(CORRUPT), negated=True), q.lit("malformed")),
        (q.and_(q.IsNull(q.col("machine"), negated=True), q.ne(q.col("machine"), q.lit(m.name))),
         q.lit("wrong_machine:machine"))]
    spec = codes(m)
    whens += [(_fails(r, layout, spec.get(r.column), spec["event"]), q.lit(f"{r.code}:{r.column}")) for r in rules(m)]
    return q.case(whens)


def _fails(r: Rule, layout: str, names: tuple[str, ...] | None, events: tuple[str, ...]) -> q.Expr:
    c = q.col(r.column)
    present = q.IsNull(c, negated=True)
    coded = layout == TYPED and names is not None
    if r.kind == "missing":
        cond: q.Expr = q.IsNull(c)
    elif r.kind == "not_in" or (r.kind == "member" and not r.is_set):
        inside = _code_range(c, len(names or ())) if coded else q.in_(c, list(r.allowed))
        cond = q.and_(present, q.not_(inside))
    elif r.kind == "null_element":  # array_except drops the null: no lambda, so code generation covers it
        none = q.ArrayOf((q.NULL,), q.BIGINT if coded else q.STRING)
        size = q.fn("size", c)  # (the hash sets only for two elements or more: most sets are empty, see `_as_set`)
        first_null = q.IsNull(q.fn("try_element_at", c, q.Lit(1, q.INT)))
        cond = q.and_(present, q.case([(q.eq(size, q.lit(0)), q.FALSE), (q.eq(size, q.lit(1)), first_null)], q.binary(
            "<", q.fn("size", q.fn("array_except", c, none)), q.fn("size", q.fn("array_distinct", c)))))
    elif r.kind == "member":  # a set (no null element here: its null_element rule comes first)
        if coded:
            cond = q.and_(present, q.binary(">", q.fn("size", c), q.lit(0)), q.or_(
                q.binary("<", q.fn("array_min", c), q.lit(0)),
                q.binary(">=", q.fn("array_max", c), q.lit(len(names or ())))))
        else:
            allowed = q.ArrayOf(tuple(q.lit(v) for v in r.allowed), q.STRING)
            cond = q.and_(present, q.binary(">", q.fn("size", q.fn("array_except", c, allowed)), q.lit(0)))
    elif r.is_set and layout == V1:  # integers written as text: each must be one, in range
        cond = q.and_(present, q.exists(c, lambda x: _not_an_int_in(x, r.lo, r.hi)))
    elif r.is_set:
        cond = q.and_(present, q.binary(">", q.fn("size", c), q.lit(0)), q.or_(
            q.binary("<", q.fn("array_min", c), q.lit(r.lo)), q.binary(">", q.fn("array_max", c), q.lit(r.hi))))
    else:
        cond = q.and_(present, q.or_(q.binary("<", c, q.lit(r.lo)), q.binary(">", c, q.lit(r.hi))))
    if r.events:
        event = q.col("event")
        allowed_events = [events.index(e) for e in r.events] if layout == TYPED else list(r.events)
        cond = q.and_(q.in_(event, allowed_events), cond)
    return cond


def _not_an_int_in(x: q.Expr, lo: int, hi: int) -> q.Expr:
    n = q.Cast(x, q.BIGINT, safe=True)
    return q.or_(q.not_(q.binary("RLIKE", x, q.lit("^-?[0-9]+$"))), q.IsNull(n), q.binary("<", n, q.lit(lo)),
                 q.binary(">", n, q.lit(hi)))


def _code_range(c: q.Expr, n: int) -> q.Expr:
    return q.and_(q.binary(">=", c, q.lit(0)), q.binary("<", c, q.lit(n)))


# ---------------------------------------------------------------- witnesses


def witness_rows(spark: SparkSession, m: ir.Machine, read: Read,
                 wanted: list[tuple[str, int, int]]) -> dict[str, dict[int, dict[str, object]]]:
    """Rows of the key sequences at positions lo..hi for each (key, lo, hi): key → position → row (names as names),
    read again for these keys only."""
    if not wanted:
        return {}
    spans = spark.createDataFrame(wanted, "w_key string, lo int, hi int")
    keys = spans.select(F.col("w_key").alias("key")).distinct()
    rows = named_rows(spark, m, read, keys)
    order = [F.col("seq"), *[F.col(n) for n, _ in typed_columns(m) if n != "seq"]]
    df = rows.select("*", (F.row_number().over(Window.partitionBy("key").orderBy(*order)) - 1).alias("pos"))
    df = df.join(F.broadcast(spans), (F.col("key") == F.col("w_key")) & F.col("pos").between(F.col("lo"),
                                                                                            F.col("hi")))
    out: dict[str, dict[int, dict[str, object]]] = {}
    for r in df.drop("w_key", "lo", "hi").distinct().collect():
        d = r.asDict(recursive=True)
        pos = int(d.pop("pos"))
        out.setdefault(str(d["key"]), {})[pos] = d
    return out
