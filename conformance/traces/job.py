"""The trace-checking job: trace files → violations table, summary and report, on Spark or in pure Python.

Owns: `Config`, `run` (both engines, the same outputs), the Spark run (`run_spark`: DuckDB in Spark's tasks when every
input is typed Parquet and duckdb imports (`duckengine`; else, or when its answer cannot be trusted, said in one
line and checked as follows), one plan per machine, whose pass
over the rows also counts the malformed ones, so the quarantine is written after it only if there are any; the
violations materialised once under `<out>/violations_raw/`, witnesses for the first ones, the final table under
`<out>/violations/`) and `main`, so that the module is the job `spark-submit` runs:

    spark-submit conformance/traces/job.py PATH... [--out DIR] [--format text|json|junit]

Exit status: 0 no violation, 1 violations, 2 usage error or a run that cannot go on (`CannotCheck`: no input at all,
no Spark on the master asked for, an input file Spark cannot read). Progress goes to the `progress` callback (the CLI
draws a bar from it). The run never stops on a malformed row: those are counted and written to `<out>/quarantine/`,
and so are files that cannot be opened at all. A Parquet file with a sound footer whose pages break partway is the
one input that stops a Spark run (`UnreadableInput`, naming the file and Spark's reason); the Python engine keeps
such a file's rows before the break.
Must not import: kcoord.cli.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shutil
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kcoord.conformance.traces import MAX_ROWS_IN_MEMORY, output, sparkcds, under_spark_submit
from kcoord.conformance.traces import witness as W
from kcoord.conformance.traces.checks import CHECKS, Spec, Violation
from kcoord.conformance.traces.output import Summary
from kcoord.conformance.traces.readers import Source, discover
from kcoord.model import ir

Progress = Callable[[str, int, int], None]  # stage, done, total


class CannotCheck(Exception):
    """The run cannot go on, for a reason the user can act on (said in one line; exit status 2)."""


class NoTraces(CannotCheck):
    """The paths hold no trace file and no coordinator log folder: nothing to check is not a clean result."""


class SparkUnavailable(CannotCheck):
    """No SparkSession could be started on the master asked for."""


class UnreadableInput(CannotCheck):
    """Spark failed to read an input file partway (the message names the file and the reader's reason)."""


def unreadable_input(error: Exception) -> UnreadableInput | None:
    """Spark's read failure (`FAILED_READ_FILE`) as an `UnreadableInput`, or None for any other error."""
    text = str(error)
    found = re.search(r"FAILED_READ_FILE[.\w]*\] Encountered error while reading file (\S+?)\.?\s", text)
    if found is None:
        return None
    causes = re.findall(r"^Caused by: (.+)$", text, re.MULTILINE)
    path = urllib.parse.unquote(found.group(1).removeprefix("file://"))  # (Spark names files by URI)
    reason = causes[0] if causes else "unknown reason"  # the outermost cause: the reader says what it read
    return UnreadableInput(f"Spark cannot read {path}: {reason} (a Parquet file whose pages break partway; "
                           f"--engine python checks its rows before the break and quarantines the rest)")


@dataclass(slots=True)
class Config:
    paths: list[str]
    out: str | None = None
    engine: str = "auto"  # auto | spark | python
    master: str | None = "local[*]"  # None: the master `spark-submit` was given
    fmt: str = "text"
    max_witnesses: int = 1000
    max_rows_in_memory: int = MAX_ROWS_IN_MEMORY  # python engine: a machine with more is checked from spill files
    shuffle_partitions: int | None = None
    spec_files: list[str] = field(default_factory=list)
    remote: str | None = None  # a Spark Connect server (sc://HOST:PORT) instead of a master
    #: where a local driver JVM finds its class-data archive (`sparkcds`; None: it starts without one)
    spark_archive: str | None = field(default_factory=lambda: str(sparkcds.default_folder()))
    duckdb_tasks: bool = True  # spark engine: DuckDB in Spark's tasks when every input allows (`duckengine`)
    duckdb_tasks_max_rows: int | None = None  # ... and has at most this many rows (None: `DUCKDB_TASKS_MAX_ROWS`)
    unit_rows: int = 500_000  # ... in work units of about this many rows (a file's consecutive row groups)
    phase2_driver_max_rows: int | None = None  # ... trace properties over more staged rows in tasks (None: default)
    phase2_tasks: int | None = None  # ... in this many tasks (None: `duckspread.bucket_count`)


@dataclass(slots=True)
class Outcome:
    summary: Summary
    shown: list[Violation]  # the first violations, with witnesses
    report: str

    @property
    def exit_code(self) -> int:
        """1 when something is violated; 2 when rows were read but none could be checked; else 0."""
        return 1 if self.summary.violations_total else 2 if self.summary.nothing_checked else 0


def load_machines(spec_files: Sequence[str]) -> dict[str, ir.Machine]:
    from kcoord.model.loader import bundled_machines, load

    if spec_files:
        return {m.name: m for m in load([Path(p) for p in spec_files])}
    return dict(bundled_machines())


#: `--engine auto` checks inputs of up to this many rows with the Python checker, larger ones on Spark: about where
#: both take the same time on a 2-core machine, Spark's start-up included (benchmarks/RESULTS.md, issue 33)
AUTO_PYTHON_ROWS = 200_000


#: the Spark engine checks inputs of up to this many rows with DuckDB in its tasks, larger ones with the Spark SQL
#: plan; None: every size with DuckDB. None since issue 33's twelfth session (benchmarks/RESULTS.md): at 50M rows, the
#: largest measured, the DuckDB path took 0.80x the plan's CPU and 0.52-0.54x its driver memory (JVM + Python; two
#: pairs), at 10M 0.51x and 0.64x; from 10M to 50M each further event cost both ~5.2-5.4 CPU-µs, so the plan, dearer
#: by its fixed cost, is not seen catching up (past 50M not measured; 15M until then, a crossover estimated from the
#: ninth session's curves)
DUCKDB_TASKS_MAX_ROWS: int | None = None


def choose_engine(config: Config, sources: Sequence[Source], spark: Any = None) -> tuple[str, str]:
    """(engine, why) for `--engine auto`: Spark when a session is given or running (`spark-submit`), else by the
    input's size (rows from Parquet footers, lines of JSON Lines files; counting stops past the threshold)."""
    if config.engine != "auto":
        return config.engine, f"--engine {config.engine}"
    if spark is not None or _running_session():
        return "spark", "a Spark session is running"
    if config.remote is not None:
        return "spark", f"--remote {config.remote}"
    if config.master is None or not config.master.startswith("local"):
        return "spark", f"--master {config.master or '(from spark-submit)'}"
    rows = estimated_rows(sources, AUTO_PYTHON_ROWS + 1)
    if rows > AUTO_PYTHON_ROWS:
        return "spark", f"more than {AUTO_PYTHON_ROWS:,} rows: Spark is faster above that"
    return "python", f"{rows:,} rows, at most {AUTO_PYTHON_ROWS:,}: the Python checker is faster below that"


def _running_session() -> bool:
    if "pyspark" not in sys.modules:  # (no import of Spark just to ask)
        return False
    from kcoord.conformance.traces.session import active_session

    return active_session() is not None


def estimated_rows(sources: Sequence[Source], stop: int) -> int:
    """The input's rows: Parquet footers' counts and JSON lines (a file that cannot be read counts none)."""
    from kcoord.conformance.traces.readers import parquet_footer

    total = 0
    for s in sources:
        if total >= stop:
            break
        if s.format == "parquet":
            import pyarrow.parquet as pq

            try:
                total += pq.read_metadata(s.path).num_rows if parquet_footer(s.path)[1] is None else 0
            except OSError:
                continue
            continue
        with open(s.path, "rb") as f:
            while total < stop and (chunk := f.read(1 << 20)):
                total += chunk.count(b"\n")
    return total


def run(config: Config, machines: Mapping[str, ir.Machine] | None = None, progress: Progress | None = None,
        spark: Any = None, say: Callable[[str], None] | None = None) -> Outcome:
    """Check the traces under `config.paths`; `say` hears which engine `--engine auto` chose, and why."""
    machines = machines if machines is not None else load_machines(config.spec_files)
    started = time.monotonic()
    if config.out:
        shutil.rmtree(os.path.join(config.out, "quarantine"), ignore_errors=True)
    converted, scratch = _convert_logs(config, machines)
    try:
        sources = discover(config.paths, machines, [config.out or ""])
        if not sources:  # (the logs' rows, if any, are among the sources)
            if converted is not None:  # nothing could be read from them: no trace at all, not a clean one
                raise NoTraces(converted.nothing_read())
            raise NoTraces(f"no trace files (*.jsonl, *.json, *.parquet) and no coordinator log folders "
                           f"(__transaction_state-N, __consumer_offsets-N) under {', '.join(config.paths)}")
        engine, why = choose_engine(config, sources, spark)
        if say is not None and config.engine == "auto":
            say(f"engine: {engine} ({why})")
        found = converted.checks.violations if converted is not None else []
        if engine == "python":
            summary, shown = run_python(config, machines, sources, progress, found)
        else:
            pairs = converted.checks.pairs_root if converted is not None else None
            try:
                summary, shown = run_spark(config, machines, sources, progress, spark, pairs, say)
            except Exception as e:
                unreadable = unreadable_input(e)
                if unreadable is None:
                    raise
                raise unreadable from None
    finally:
        config.paths = [p for p in config.paths if p != (converted.root if converted else None)]
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    if converted is not None:
        for code, n in converted.bad.items():
            summary.quarantined[code] = summary.quarantined.get(code, 0) + n
        summary.not_checked += converted.notes()
    summary.seconds = time.monotonic() - started
    if config.out:
        output.write_summary(summary, config.out)
    report = output.render(config.fmt, summary, shown[:output.SHOWN])
    if config.out:
        suffix = {"text": "txt", "json": "json", "junit": "xml"}[config.fmt]
        with open(os.path.join(config.out, f"report.{suffix}"), "w", encoding="utf-8") as f:
            f.write(report + "\n")
    return Outcome(summary, shown, report)


def _convert_logs(config: Config, machines: Mapping[str, ir.Machine]) -> tuple[Any, str | None]:
    """Coordinator log folders among the paths → a typed Parquet trace folder (in a scratch folder, added to the paths
    for the run); bad records go to `<out>/quarantine/part-logs.jsonl`."""
    from kcoord.conformance.traces.logs import convert, find_log_dirs

    log_dirs = find_log_dirs(config.paths)
    if not log_dirs:
        return None, None
    scratch = tempfile.mkdtemp(prefix="kcoord-logs-")
    quarantine = os.path.join(config.out, "quarantine") if config.out else None
    pairs = os.path.join(scratch, "pairs") if config.engine != "python" else None  # for Spark's step checks
    converted = convert(log_dirs, machines, os.path.join(scratch, "traces"), quarantine, pairs)
    if converted.rows:
        config.paths = [*config.paths, converted.root]
    return converted, scratch


# ---------------------------------------------------------------- pure Python


def run_python(config: Config, machines: Mapping[str, ir.Machine], sources: Sequence[Source],
               progress: Progress | None, found: Sequence[Violation] = ()) -> tuple[Summary, list[Violation]]:
    """Every check of the rows, plus `found` (what the log checks found while the logs were read)."""
    from kcoord.conformance.traces.pycheck import Options, check_paths

    names = sorted({s.machine for s in sources})
    done = [0]

    def step(name: str) -> None:
        if progress:
            progress(f"checking {name}", done[0], len(names))
        done[0] += 1

    if config.out:  # spill files go beside the output (the system's temporary folder may be in memory)
        os.makedirs(config.out, exist_ok=True)
    options = Options(config.max_witnesses, config.max_rows_in_memory, spill_dir=config.out)
    result = check_paths(config.paths, machines, config.out, options, step)
    if found:
        from kcoord.conformance.traces.pycheck import sort_key

        result.violations = sorted([*result.violations, *found], key=sort_key)
        result.violations = [v if i < config.max_witnesses else dataclasses.replace(v, witness="", witness_rows="")
                             for i, v in enumerate(result.violations)]  # as the row checks' witnesses: the first only
    if progress:
        progress("writing", len(names), len(names))
    if config.out:
        output.write_violations(result.violations, config.out)
    summary = Summary("python", result.rows_read, dict(result.quarantine.counts), output.count(result.violations),
                      result.not_checked, spilled=result.spilled)
    return summary, result.violations[:config.max_witnesses]


# ---------------------------------------------------------------- Spark


def run_spark(config: Config, machines: Mapping[str, ir.Machine], sources: Sequence[Source],
              progress: Progress | None, spark: Any = None, pairs: str | None = None,
              say: Callable[[str], None] | None = None) -> tuple[Summary, list[Violation]]:
    """DuckDB in Spark's tasks when every input allows it (`duckengine`), else (said in one line, to `say`) every
    machine in one plan each: one job per machine runs its pass (reading, validating, checking the rows,
    keeping what the trace properties read: `MachinePlan.staged`), one writes every violation (the row checks, the
    trace properties and the persisted-step checks of the record pairs in `pairs`, `sparklog`), then the
    witnesses."""
    from kcoord.conformance.traces.session import tasks_class_loader

    spark = _session(config, spark, sources)
    with tasks_class_loader(spark):  # (in the threads of `_side_by_side` too: each whole-stage code compiled once)
        if config.duckdb_tasks:
            done = _check_with_duckdb(config, machines, sources, progress, spark, pairs)
            if not isinstance(done, str):
                return done
            if say is not None:
                say(f"engine: the Spark SQL plan, not DuckDB in Spark's tasks: {done}")
        return _check_on_spark(config, machines, sources, progress, spark, pairs)


def past_duckdb_limit(config: Config, sources: Sequence[Source]) -> str | None:
    """Why the input has too many rows for DuckDB in Spark's tasks (one line), or None: more than
    `config.duckdb_tasks_max_rows` (None: `DUCKDB_TASKS_MAX_ROWS`, itself None: no limit)."""
    most = config.duckdb_tasks_max_rows if config.duckdb_tasks_max_rows is not None else DUCKDB_TASKS_MAX_ROWS
    if most is not None and estimated_rows(sources, most + 1) > most:
        return f"more than {most:,} rows (the limit of DuckDB in Spark's tasks, duckdb_tasks_max_rows)"
    return None


def _check_with_duckdb(config: Config, machines: Mapping[str, ir.Machine], sources: Sequence[Source],
                       progress: Progress | None, spark: Any,
                       pairs: str | None) -> tuple[Summary, list[Violation]] | str:
    """`duckengine`'s path: the outputs, or why the run must take the Spark SQL plan (one line)."""
    from kcoord.conformance.traces import duckengine

    why = duckengine.why_not(machines, sources, pairs)
    if why is not None:
        return why
    too_large = past_duckdb_limit(config, sources)
    if too_large is not None:
        return too_large
    tick = _ticker(progress, 3)
    tick("checking")
    out = config.out or tempfile.mkdtemp(prefix="kcoord-traces-")
    driver = config.phase2_driver_max_rows
    result = duckengine.check(spark, machines, sources, out, config.unit_rows,
                              duckengine.PHASE2_DRIVER_MAX_ROWS if driver is None else driver, config.max_witnesses,
                              config.phase2_tasks)
    if isinstance(result, duckengine.Fallback):
        return result.reason
    tick("writing")
    first = result.first
    shown = _with_witnesses(result.fetch, {n: Spec.of(machines[n]) for n in {r["machine"] for r in first}}, first)
    if result.found is not None:
        duckengine.write_violations(result.found, {v.id: (v.witness, v.witness_rows) for v in shown}, out)
    if not config.out:
        shutil.rmtree(out, ignore_errors=True)
    return result.summary, shown


def _check_on_spark(config: Config, machines: Mapping[str, ir.Machine], sources: Sequence[Source],
                    progress: Progress | None, spark: Any, pairs: str | None) -> tuple[Summary, list[Violation]]:
    from kcoord.conformance.traces import sparkprops
    from kcoord.conformance.traces.sparkcheck import MachinePlan
    from kcoord.conformance.traces.sparkread import read_machine, read_unknown

    out = config.out or tempfile.mkdtemp(prefix="kcoord-traces-")
    folders = sorted({s.machine for s in sources})
    summary = Summary("spark")
    tick = _ticker(progress, 5)
    tick("reading")
    quarantine_dir = os.path.join(out, "quarantine")
    for name in folders:
        if name not in machines:
            _count_quarantine(read_unknown(spark, name, [s for s in sources if s.machine == name]), quarantine_dir,
                              summary)
    known = [name for name in folders if name in machines]

    def plan_of(name: str) -> MachinePlan:
        mine = [s for s in sources if s.machine == name]
        return MachinePlan(spark, Spec.of(machines[name]), read_machine(spark, machines[name], mine))

    plans: dict[str, MachinePlan] = dict(zip(known, _side_by_side(plan_of, known, spark), strict=True))
    for name, need in sparkprops.needs(plans).items():
        plans[name].needs = need
    raw_dir = os.path.join(out, "violations_raw")
    shutil.rmtree(raw_dir, ignore_errors=True)
    try:
        tick("checking")
        _side_by_side(lambda plan: plan.staged(), list(plans.values()), spark)
        for name, plan in sorted(plans.items()):
            tally = plan.read.tally()
            summary.rows_read[name] = tally.rows
            if tally.malformed or plan.read.bad_files:  # (counted by the pass: written only if there are any)
                _count_quarantine(plan.read.quarantine, quarantine_dir, summary)
            summary.not_checked += sparkprops.not_checked(plan, plans)
        tick("properties")
        found = [df for plan in plans.values()
                 for df in ([plan.row_violations()] if plan.flagged() else []) + sparkprops.violations(plans, plan)]
        found += _log_violations(spark, pairs, machines)
        if found:
            _union(found).write.mode("overwrite").parquet(raw_dir)
        tick("writing")
        specs = {n: p.spec for n, p in plans.items()}
        shown = _finish(spark, plans, specs, raw_dir, out, config.max_witnesses, summary)
    finally:
        for plan in plans.values():
            plan.release()
    if not config.out:
        shutil.rmtree(out, ignore_errors=True)
    return summary, shown


def _side_by_side(work: Callable[[Any], Any], items: Sequence[Any], spark: Any) -> list[Any]:
    """`work` on each item, on as many driver threads as the machine has cores (results in order), each with the
    tasks' class loader (`session.tasks_class_loader`): the machines' plans are analysed, and their passes
    submitted, side by side (Catalyst's analysis of a machine's checks runs on the calling thread and is most of a
    small input's time)."""
    from concurrent.futures import ThreadPoolExecutor

    from kcoord.conformance.traces.session import tasks_class_loader

    def on_thread(item: Any) -> Any:
        with tasks_class_loader(spark):
            return work(item)

    if len(items) < 2:
        return [work(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(len(items), os.cpu_count() or 1)) as pool:
        return list(pool.map(on_thread, items))


def _session(config: Config, spark: Any, sources: Sequence[Source]) -> Any:
    """The caller's session, else a Spark Connect one (`--remote`), the running one or a new local one; tuned for
    this input's size (`tune`)."""
    from kcoord.conformance.traces import session

    rows = estimated_rows(sources, max(session.SMALL_INPUT_ROWS, session.INTERPRETED_ROWS) + 1)
    try:
        if spark is None and config.remote is not None:
            spark = session.remote_session(config.remote)
        spark = spark or session.active_session() or session.local_session(
            config.master, shuffle_partitions=config.shuffle_partitions, rows=rows,
            archive_folder=Path(config.spark_archive) if config.spark_archive else None)
    except Exception as e:  # py4j's error carries the JVM's whole stack: its first line says what failed
        first = next((line for line in str(e).splitlines() if line.strip()), type(e).__name__)
        where = f"--remote {config.remote}" if config.remote is not None else f"--master {config.master}"
        raise SparkUnavailable(f"cannot start Spark on {where}: {first.strip()}") from None
    session.tune(spark, rows)
    return spark


def _union(frames: list[Any]) -> Any:
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out


def _log_violations(spark: Any, pairs: str | None, machines: Mapping[str, ir.Machine]) -> list[Any]:
    """The persisted-step checks of the record pairs the log reader wrote (none without logs)."""
    if pairs is None or not os.path.isdir(pairs):
        return []
    from kcoord.conformance.traces.sparklog import persisted_step_violations
    from kcoord.conformance.traces.steps import relation_for

    relations = {n: r for n, m in machines.items() if (r := relation_for(m)) is not None}
    return persisted_step_violations(spark, pairs, machines, relations)


def _ticker(progress: Progress | None, total: int) -> Callable[[str], None]:
    done = [0]

    def tick(stage: str) -> None:
        if progress:
            progress(stage, done[0], total)
        done[0] += 1

    return tick


def _count_quarantine(df: Any, folder: str, summary: Summary) -> None:
    """Write the quarantined rows (JSON lines) and add their counts per reason code to the summary."""
    from pyspark.sql import functions as F

    cached = df.cache()
    cached.write.mode("append").json(folder)
    for r in cached.groupBy(F.split("reason", ":").getItem(0).alias("code")).count().collect():
        summary.quarantined[r["code"]] = summary.quarantined.get(r["code"], 0) + int(r["count"])
    cached.unpersist()


def _finish(spark: Any, plans: Mapping[str, Any], specs: Mapping[str, Spec], raw_dir: str, out: str,
            max_witnesses: int, summary: Summary) -> list[Violation]:
    """Counts per check, witnesses for the first violations, the final violations table."""
    from pyspark.sql import functions as F

    from kcoord.model import sqltree as q

    if not os.path.isdir(raw_dir):
        return []
    raw = spark.read.parquet(raw_dir)
    for r in raw.groupBy("machine", "check").count().collect():
        summary.violations.setdefault(r["machine"], {})[r["check"]] = int(r["count"])
    summary.violations = {m: dict(sorted(c.items(), key=lambda kv: CHECKS.index(kv[0])))
                          for m, c in sorted(summary.violations.items())}
    order = F.expr(q.sql(q.fn("array_position", q.ArrayOf(tuple(q.lit(c) for c in CHECKS), q.STRING),
                              q.col("check"))))
    first = raw.orderBy("machine", order, "key", "seq", "name").limit(max_witnesses).collect()
    from kcoord.conformance.traces.sparkread import witness_rows

    def fetch(machine: str, spans: list[tuple[str, int, int]]) -> dict[str, dict[int, dict[str, Any]]]:
        return witness_rows(spark, plans[machine].m, plans[machine].read, spans)

    shown = _with_witnesses(fetch, specs, [r.asDict() for r in first])
    ids = spark.createDataFrame([(v.id, v.witness, v.witness_rows) for v in shown],
                                "id string, witness string, witness_rows string")
    vid = F.substring(F.sha1(F.concat_ws("|", "machine", "key", "check", "name", F.col("seq").cast("string"))), 1, 12)
    final = raw.withColumn("id", vid).join(F.broadcast(ids), "id", "left")
    final = final.select(*[F.col(n) for n, _ in output.VIOLATION_FIELDS])
    final.write.mode("overwrite").parquet(os.path.join(out, "violations"))
    shutil.rmtree(raw_dir, ignore_errors=True)
    return shown


def _with_witnesses(fetch: Callable[[str, list[tuple[str, int, int]]], dict[str, dict[int, dict[str, Any]]]],
                    specs: Mapping[str, Spec], records: list[dict[str, Any]]) -> list[Violation]:
    """The violations with their witness (JSON and text), built from the rows around them (`fetch`: machine, [(key,
    first position, last)] → key → position → row), as `pycheck` does."""
    import json

    from kcoord.conformance.traces.logcheck import STEP_CHECK, witness_text

    wanted: dict[str, list[tuple[str, int, int]]] = {}
    for r in records:
        if r["pos"] >= 0 and r["check"] != STEP_CHECK:
            wanted.setdefault(r["machine"], []).append((r["key"], r["pos"] - W.BEFORE - 1, r["pos"] + W.AFTER))
    fetched = {m: fetch(m, spans) for m, spans in wanted.items()}
    out = []
    for r in records:
        spec = specs[r["machine"]]
        if r["check"] == STEP_CHECK:  # a pair of records, not rows: the log checker's witness
            rows = json.dumps(json.loads(r["row_json"]), sort_keys=True)
            out.append(Violation(r["machine"], r["key"], r["check"], r["name"], int(r["seq"]), int(r["seq_from"]),
                                 int(r["seq_to"]), r["location"], r["message"], witness_text(rows, r["message"]),
                                 rows))
            continue
        if r["pos"] < 0:
            row = json.loads(r["row_json"])
            segments = [W.Segment(r["key"], r["seq"], None, (row,))]
        else:
            by_pos = fetched[r["machine"]][r["key"]]
            p = r["pos"]
            lo = max(0, p - W.BEFORE)
            shown = tuple(by_pos[i] for i in range(lo, p + W.AFTER + 1) if i in by_pos)
            segments = [W.Segment(r["key"], r["seq"], W.base_state(spec, by_pos.get(lo - 1) if lo > 0 else None),
                                  shown)]
        doc = W.to_json(spec.name, segments)
        v = Violation(r["machine"], r["key"], r["check"], r["name"], int(r["seq"]), int(r["seq_from"]),
                      int(r["seq_to"]), r["location"], r["message"], W.render(spec, segments, r["message"]), doc)
        out.append(v)
    return out


# ---------------------------------------------------------------- spark-submit


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kcoord-check-traces", description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--out")
    parser.add_argument("--format", default="text", choices=output.FORMATS)
    parser.add_argument("--master", default=None, help="default: the one spark-submit was given, else local[*]")
    parser.add_argument("--engine", default="auto", choices=("auto", "spark", "python"))
    parser.add_argument("--spec", action="append", default=[])
    parser.add_argument("--max-rows-in-memory", type=int, default=MAX_ROWS_IN_MEMORY,
                        help="python engine: a machine with more rows is spilled to disk by key and checked a bucket "
                             "at a time")
    args = parser.parse_args(argv)
    master = args.master if args.master is not None or under_spark_submit() else "local[*]"
    try:
        outcome = run(Config(args.paths, args.out, args.engine, master, args.format, spec_files=args.spec,
                             max_rows_in_memory=args.max_rows_in_memory),
                      say=lambda choice: print(choice, file=sys.stderr))
    except FileNotFoundError as e:
        print(f"kcoord-check-traces: no such path: {e}", file=sys.stderr)
        return 2
    except CannotCheck as e:
        print(f"kcoord-check-traces: {e}", file=sys.stderr)
        return 2
    print(outcome.report)
    return outcome.exit_code


if __name__ == "__main__":
    sys.exit(main())
