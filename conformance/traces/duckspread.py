"""Phase 2 of the trace properties (`duckprops.violations`) spread over Spark's tasks, DuckDB in each (issue 33: the
driver's memory flat): the staged rows never come to the driver.

Owns: `Staged` (one machine's staged rows as its tasks wrote them: a Parquet file per unit, and what stitching them
needs: `duckstage.Prepared`), `violations` (every machine's trace-property violations, `duckprops.VIOLATION_COLUMNS`,
from Spark jobs of three stages: each unit's staged rows stitched on their own (`duckstage.Prepared.rows`, with the
unit's rows of the driver's small tables) and sent, once per property that reads them, to the bucket of the
property's partition; each bucket's rows of a property checked with that property's SQL (`duckprops`); and, for
`before`, whose first half is per key and second half per K, its entering rows sent again to the bucket of their K,
where they meet the other machine's rows).

Why the buckets give what the driver's one DuckDB gives. Each property's SQL partitions its rows (window
partitions, joins) by columns whose equal values must meet: `within` and `before`'s first half by key; `monotonic`,
`exclusive`, `fenced` and `before`'s second half by the property's K (`per`; the entering row's K as before it,
`_bk_<i>_<k>`, against the other machine's K). A row goes to the bucket of a hash of those columns' text (equal
values, nulls included, equal text: one bucket; an integer K of two widths, one text), and a task may hold several
buckets: the SQL's own partitions keep them apart. Every value the SQL reads besides is on the row (the stitched
staged rows: `pos`, the timeline, the pre-state) or a constant (`within`'s trace end).

Not here: phase 1 and the stitching's SQL (`duckstage`), the properties' SQL (`duckprops`), the row checks
(`duckspark`), the outputs (`duckengine`).
Must not import: duckdb at import time, kcoord.cli. The tasks are closures of pyarrow and duckdb only (cloudpickle
ships them by value).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kcoord.model import sqltree as q

from . import duckprops
from .duckstage import Prepared, unstaged
from .sparkcheck import MachinePlan

SCHEMA = "b int, tag string, data binary"
FOUND = "found"  # the tag of violations' rows


@dataclass(frozen=True, slots=True)
class Staged:
    """One machine's staged rows: `files` (unit → its tasks' Parquet file of `duckstage.unit_staged_from`'s rows),
    `prepared` (the driver's tables for stitching them) written to `units` and `again` (Parquet files)."""

    files: dict[int, str]
    prepared: Prepared
    units: str
    again: str


#: staged rows per bucket (a task's) past the cluster's cores
BUCKET_ROWS = 500_000


#: bucket values per task: Spark hashes a bucket value again to pick its task, and many values per task spread
#: the rows over every task (two values over two tasks may well hash to one)
BUCKETS_PER_TASK = 8


def bucket_count(spark: Any, rows: int) -> int:
    """How many tasks for the second and third stages, over `rows` staged rows: the cluster's cores (Spark's default
    parallelism; over Spark Connect, this host's cores), more past `BUCKET_ROWS` rows each."""
    import os

    try:
        cores = int(spark.sparkContext.defaultParallelism)
    except Exception:  # (Spark Connect has no SparkContext)
        cores = os.cpu_count() or 1
    return max(cores, -(-rows // BUCKET_ROWS))


def _bucket(columns: list[str], buckets: int) -> str:
    if not columns:
        return "0"
    text = ", ".join(f"CAST({q.DUCKDB.quote(c)} AS VARCHAR)" for c in columns)
    return f"CAST(hash({text}) % {buckets} AS INTEGER)"


def routes(plans: Mapping[str, MachinePlan], staged: Mapping[str, Any], ends: Mapping[str, int | None],
           buckets: int) -> tuple[dict[int, dict[str, Any]], dict[str, list[tuple[str, str]]]]:
    """Every property with something to check: route id → what its tasks run (`direct`: its SQL over its machines'
    rows, tables `r<id>_<machine>`; `before`: its first half over its machine's rows, the entering rows' bucket, its
    second half over tables `r<id>_entering` and `r<id>_events`), and machine → (tag, bucket expression) of each
    route its rows are sent to."""
    out: dict[int, dict[str, Any]] = {}
    sends: dict[str, list[tuple[str, str]]] = {m: [] for m in staged}
    for name, plan in sorted(plans.items()):
        if name not in staged:
            continue
        for i, prop in enumerate(plan.m.traces):
            r = len(out)
            rel = {m: q.DUCKDB.quote(f"r{r}_{m}") for m in staged}
            if prop.form == "before":
                entering = duckprops.before_entering(plans, plan, rel, prop)
                if entering is None:
                    continue
                other = prop.subject[2]
                missing = duckprops.before_missing(plans, plan, prop, i, f"{q.DUCKDB.quote(f'r{r}_entering')} s",
                                                   q.DUCKDB.quote(f"r{r}_events"))
                out[r] = {"kind": "before", "main": name, "other": other, "entering": entering, "missing": missing,
                          "bucket": _bucket([f"_bk_{i}_{k}" for k in prop.per], buckets)}
                sends[name].append((f"{r}/key", _bucket(["key"], buckets)))
                sends[other].append((f"{r}/events", _bucket(list(prop.per), buckets)))
                continue
            sql = duckprops.property_violations(plans, plan, rel, i, ends.get(name))
            if sql is None:
                continue
            reads = list(dict.fromkeys([name, *([prop.subject[3]] if prop.form == "fenced" else [])]))
            by = ["key"] if prop.form == "within" else list(prop.per)
            out[r] = {"kind": "direct", "main": name, "reads": reads, "sql": sql}
            for m in reads:
                sends[m].append((f"{r}/{m}", _bucket(by, buckets)))
    return out, sends


def violations(spark: Any, plans: Mapping[str, MachinePlan], staged: Mapping[str, Staged],
               ends: Mapping[str, int | None], tasks: int) -> Any:
    """Every machine's trace-property violations (`duckprops.VIOLATION_COLUMNS`, an Arrow table) over `staged`
    (machine → its tasks' staged rows), in Spark's tasks (`tasks` of them in the second and third stages, over
    `BUCKETS_PER_TASK` times as many buckets): the driver receives the violations only."""
    import duckdb
    import pyarrow as pa
    import pyarrow.parquet as pq

    schemas = {}
    con = duckdb.connect(config={"threads": 1})
    try:
        for name, s in staged.items():  # (the stitched rows' schema, for a bucket that has none of a machine's rows)
            con.register("u", pq.read_schema(next(iter(s.files.values()))).empty_table())
            con.register("staged_units", s.prepared.units.slice(0, 0))
            con.register("staged_again", s.prepared.again.slice(0, 0))
            schemas[name] = con.execute(s.prepared.rows("u")).to_arrow_table().schema
    finally:
        con.close()
    todo, sends = routes(plans, staged, ends, BUCKETS_PER_TASK * tasks)
    if not todo:
        return None
    work = [(name, unit, path) for name, s in sorted(staged.items()) for unit, path in sorted(s.files.items())]
    fixes = {name: {"rows": s.prepared.rows("u"), "units": s.units, "again": s.again, "unstaged": unstaged("u"),
                    "sends": sends[name]} for name, s in staged.items()}
    df = spark.range(0, len(work), 1, len(work)).mapInArrow(_task(0, work, fixes, todo, schemas), SCHEMA)
    for stage in (1, 2):
        df = df.repartition(tasks, "b").mapInArrow(_task(stage, work, fixes, todo, schemas), SCHEMA)
    found = [pa.ipc.open_stream(pa.py_buffer(bytes(r["data"]))).read_all() for r in df.collect()]
    return pa.concat_tables(found) if found else None


def _task(stage: int, work: list[tuple[str, int, str]], fixes: Mapping[str, Any], todo: Mapping[int, Mapping[str, Any]],
          schemas: Mapping[str, Any]) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """`mapInArrow`'s function of a stage: records of `SCHEMA`, each an Arrow IPC stream of one bucket's rows of one
    tag. Stage 0 (one task per unit of `work`): the unit's staged rows stitched (with that unit's rows of the
    driver's tables) and sent to each route that reads them. Stages 1 and 2 (over buckets): each route's SQL, its
    violations sent on (tag `found`) and passed on as they are; `before`'s first half in stage 1 (its entering rows
    sent to their K's bucket, the other machine's rows passed on), its second half in stage 2. A closure of pyarrow
    and duckdb only (everything it calls is defined in it)."""
    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import duckdb
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        schema = pa.schema([("b", pa.int32()), ("tag", pa.string()), ("data", pa.binary())])

        def record(b: int, tag: str, data: bytes) -> Any:
            return pa.RecordBatch.from_pydict({"b": [b], "tag": [tag], "data": [data]}, schema=schema)

        def split(table: Any, tag: str) -> Iterator[Any]:  # (by its `_b` column; no record for no row)
            for b in pc.unique(table.column("_b")).to_pylist():
                part = table.filter(pc.equal(table.column("_b"), b)).drop_columns(["_b"])
                sink = pa.BufferOutputStream()
                with pa.ipc.new_stream(sink, part.schema) as writer:
                    writer.write_table(part)
                yield record(b, tag, sink.getvalue().to_pybytes())

        def send() -> Iterator[Any]:
            for batch in batches:
                for i in batch.column(0).to_pylist():
                    name, unit, path = work[i]
                    fix = fixes[name]
                    con.register("u", pq.read_table(path))
                    con.register("staged_units", pq.read_table(fix["units"], filters=[("_unit", "=", unit)]))
                    con.register("staged_again", pq.read_table(fix["again"], filters=[("_unit", "=", unit)]))
                    (missing,) = con.execute(fix["unstaged"]).fetchone() or (0,)
                    assert missing == 0, f"{missing} unit-first rows missing from unit {unit}'s staged rows"
                    con.execute(f"CREATE OR REPLACE TEMP TABLE f AS {fix['rows']}")
                    for tag, bucket in fix["sends"]:
                        yield from split(con.execute(f"SELECT *, {bucket} AS _b FROM f").to_arrow_table(), tag)

        def check(first: bool) -> Iterator[Any]:
            raw: dict[str, list[tuple[int, bytes]]] = {}
            for batch in batches:
                for b, tag, data in zip(*(batch.column(c).to_pylist() for c in ("b", "tag", "data")), strict=True):
                    raw.setdefault(tag, []).append((b, data))

            def rows(tag: str, schema: Any = None) -> Any:
                tables = [pa.ipc.open_stream(pa.py_buffer(data)).read_all() for _, data in raw.get(tag, [])]
                return pa.concat_tables(tables) if tables else schema.empty_table()

            def passed(tag: str) -> Iterator[Any]:
                return (record(b, tag, data) for b, data in raw.get(tag, []))

            def found(sql: str) -> Iterator[Any]:
                return split(con.execute(f"SELECT *, 0 AS _b FROM ({sql}) v").to_arrow_table(), FOUND)

            yield from passed(FOUND)
            for r, route in sorted(todo.items()):
                if first and route["kind"] == "direct" and f"{r}/{route['main']}" in raw:
                    for m in route["reads"]:
                        con.register(f"r{r}_{m}", rows(f"{r}/{m}", schemas[m]))
                    yield from found(route["sql"])
                elif first and route["kind"] == "before":
                    if f"{r}/key" in raw:
                        con.register(f"r{r}_{route['main']}", rows(f"{r}/key"))
                        yield from split(con.execute(f"SELECT *, {route['bucket']} AS _b FROM ({route['entering']}) "
                                                     "s").to_arrow_table(), f"{r}/entering")
                    yield from passed(f"{r}/events")
                elif not first and route["kind"] == "before" and f"{r}/entering" in raw:
                    con.register(f"r{r}_entering", rows(f"{r}/entering"))
                    con.register(f"r{r}_events", rows(f"{r}/events", schemas[route["other"]]))
                    yield from found(route["missing"])

        con = duckdb.connect(config={"threads": 1})
        try:
            yield from send() if stage == 0 else check(stage == 1)
        finally:
            con.close()
    return run
