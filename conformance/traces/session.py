"""Starting the SparkSession the trace checker runs on: embedded and local by default, any master or a Spark Connect
server on request.

Owns: the session settings the checker relies on (UI off for local runs, few shuffle partitions for small inputs, the
local JVM's JIT by input size (`jit_options`), generated or interpreted code by input size (`tune`), adaptive
execution on, broadcast joins for the small spec tables, the driver's log level) and, in a local session, the class
loader the driver compiles generated code in (`tasks_class_loader`); a driver JVM it starts maps the class-data
archive of `sparkcds` when one was built (`make setup`), else starts as it always did. It reads no argv and one
environment variable, the one `spark-submit` sets for the driver it starts (so that the master is then the one given
to `spark-submit`); the CLI passes the master in. A local session sets PYSPARK_PYTHON to this interpreter unless it
is set (the interpreter of Python workers, should a job start any), and forks them from `sparkdaemon` (pyspark's
daemon after the DuckDB tasks' imports) when that interpreter finds it (`preloading_daemon`).
Must not import: kcoord.cli.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pyspark import SparkContext
from pyspark.sql import SparkSession

from . import sparkcds, under_spark_submit

APP_NAME = "kcoord check-traces"

#: where `local_session` looks for the driver's class-data archive by default (`sparkcds.default_folder`)
ARCHIVE_FOLDER = sparkcds.default_folder()

LOG = logging.getLogger(__name__)


#: inputs of at most this many rows start their JVM with C1 only (see `jit_options`); measured on both sides
#: (benchmarks/RESULTS.md, issue 33): C1 cheaper in CPU and wall time at 1M and 2M Transaction events, dearer in both
#: at 10M; at 3M even in CPU until the map side's per-row work was cut (fourth session), since then 42.4 against
#: 53.9 CPU-s with the same wall time
SMALL_INPUT_ROWS = 3_000_000

#: inputs of at most this many rows are checked with Spark's interpreted expressions, no generated code (see `tune`),
#: in a JVM with the serial collector (see `jit_options`)
INTERPRETED_ROWS = 50_000


#: the thread stack of the JVMs that run the checks (a local driver, whose tasks run in it, or a cluster's executors):
#: Catalyst and Janino recurse over the depth of an expression, and the checks' expressions are deep (every guard of a
#: machine in one CASE); a StackOverflowError in a task thread is fatal to Spark's executor, which exits (code 50) —
#: in local mode that is the driver, the whole check lost. HotSpot's default is 1 MB; interpreted frames (a cold or
#: loaded JVM whose JIT has not compiled the recursion yet) are several times larger than compiled ones.
THREAD_STACK = "-Xss16m"

#: the code cache of a JVM that runs the checks with C1 only (`jit_options`): HotSpot then sizes it as a client VM's,
#: 48 MB instead of the tiered 240 MB, and a long-lived session (a test session, a Spark Connect server) that keeps
#: compiling new generated stages fills it; the JVM then dies on the next method handle it links
#: (`VirtualMachineError: Out of space in CodeCache for method handle intrinsic`, in a task thread: exit code 50,
#: the whole check lost). Reserved address space, committed only as it fills.
C1_CODE_CACHE = "-XX:ReservedCodeCacheSize=240m"


def local_session(master: str | None = "local[*]", *, shuffle_partitions: int | None = None,
                  app_name: str = APP_NAME, driver_memory: str | None = None, rows: int | None = None,
                  archive_folder: Path | None = ARCHIVE_FOLDER, extra_java_options: str = "") -> SparkSession:
    """A SparkSession on `master` (`local[*]`, `spark://…`, `yarn`; None: the one `spark-submit` was given, else
    `local[*]`); reuses a running one. `rows`: the input's size, when known (it chooses the JIT of the JVMs that run
    the checks: the local driver, or a cluster's executors). A driver JVM it starts maps the class-data archive
    built in `archive_folder` (None: none) for this JDK and these jars, if there is a whole one (`driver_archive`);
    `extra_java_options`: more options of that JVM."""
    builder = SparkSession.builder.appName(app_name)
    if master is None and not under_spark_submit():
        master = "local[*]"
    if master is not None:
        builder = builder.master(master)
    driver_options = extra_java_options
    if master is not None and master.startswith("local"):
        # Python workers (if any are ever started) must be this interpreter (our venv), not `python3` on PATH. The
        # SparkContext takes their interpreter from PYSPARK_PYTHON when it starts (`spark.pyspark.python` is read only
        # by spark-submit's launcher: set here, the workers ran the python3 on PATH); a user's own choice is kept.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = builder.config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
        if SparkContext._active_spark_context is None and preloading_daemon(os.environ["PYSPARK_PYTHON"]):
            builder = builder.config("spark.python.daemon.module", DAEMON_MODULE)
        driver_options = f"{jit_options(rows)} {THREAD_STACK} {extra_java_options}".strip()
    elif master is not None:  # a cluster's executors run the checks: the same JIT (benchmarks/bench_cluster.py)
        builder = builder.config("spark.executor.extraJavaOptions", f"{jit_options(rows)} {THREAD_STACK}")
    if driver_memory:
        builder = builder.config("spark.driver.memory", driver_memory)
    if shuffle_partitions is not None:
        builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    builder = (builder.config("spark.sql.adaptive.enabled", "true")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.autoBroadcastJoinThreshold", str(64 * 1024 * 1024)))
    starts_jvm = master is not None and SparkContext._gateway is None  # (pyspark keeps its JVM once started)
    session = _start(builder, driver_options, driver_archive(archive_folder, driver_memory) if starts_jvm else None)
    session.sparkContext.setLogLevel("ERROR")
    tune(session)
    return session


#: Spark's Python daemon in a local session (`sparkdaemon`: pyspark's, after the DuckDB tasks' imports)
DAEMON_MODULE = "kcoord.conformance.traces.sparkdaemon"


def preloading_daemon(python: str) -> bool:
    """Whether the Python workers of a local session started now can be forked from `sparkdaemon`: they run
    `python` (PYSPARK_PYTHON) in this directory and environment, as a child started here does — it is asked whether
    it finds the module (a few hundredths of a CPU-second; a script run from another folder, or another interpreter,
    may not: then pyspark's own daemon, which needs nothing of kcoord)."""
    probe = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({DAEMON_MODULE!r}) is None)"
    try:
        done = subprocess.run([python, "-c", probe], capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        LOG.info("Spark's Python workers start from pyspark's own daemon: %s cannot be run (%s)", python, e)
        return False
    if done.returncode != 0:
        LOG.info("Spark's Python workers start from pyspark's own daemon: %s does not find %s", python, DAEMON_MODULE)
    return done.returncode == 0


def driver_archive(folder: Path | None, driver_memory: str | None = None) -> sparkcds.Archive | None:
    """The class-data archive a driver JVM started now would map (None: none; why, in the log: at INFO when there is
    none, at WARNING when it is damaged)."""
    if folder is None or not sparkcds.fits(driver_memory):
        return None
    try:
        archive = sparkcds.locate(folder)
    except OSError as e:  # (an unreadable JDK or Spark folder: Spark's own start will say more)
        LOG.info("Spark starts without a class-data archive: %s", e)
        return None
    why = sparkcds.unusable(archive) if archive is not None else "no Java found"
    if why is None:
        return archive
    (LOG.warning if archive is not None and archive.jsa.exists() else LOG.info)(
        "Spark starts without its class-data archive: %s", why)
    return None


def _start(builder: Any, driver_options: str, archive: sparkcds.Archive | None) -> SparkSession:
    """`builder.getOrCreate()`, the driver JVM mapping `archive` if there is one; if that JVM says it did not
    map it (one line in the log, at WARNING), or did not start with it, the session runs without it."""
    if archive is None:
        if driver_options:
            builder = builder.config("spark.driver.extraJavaOptions", driver_options)
        return builder.getOrCreate()  # type: ignore[no-any-return]
    folder = Path(tempfile.mkdtemp(prefix="kcoord-spark-cds-"))  # (a file the JVM creates: it would rotate one)
    log = folder / "cds.log"
    try:
        options = f"{driver_options} {sparkcds.driver_options(archive, log)}".strip()
        try:
            session: SparkSession = builder.config("spark.driver.extraJavaOptions", options).getOrCreate()
        except Exception as e:  # (pyspark's "Java gateway process exited": retried without the archive)
            first = next((line for line in str(e).splitlines() if line.strip()), type(e).__name__)
            LOG.warning("Spark's JVM did not start with the class-data archive %s (%s): starting it without",
                        archive.jsa, first.strip())
            # (the builder keeps its options: the archive's are replaced, even by none)
            return _start(builder.config("spark.driver.extraJavaOptions", driver_options), driver_options, None)
        why = sparkcds.refused(log)
        if why is not None:
            LOG.warning("Spark's JVM did not use the class-data archive %s: %s", archive.jsa, why)
        return session
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def remote_session(url: str, app_name: str = APP_NAME) -> SparkSession:
    """A Spark Connect session on the server at `url` (`sc://HOST:PORT[/;param=value...]`): the plan is sent to the
    server, which reads the traces and writes the output, so the paths are the server's. Every setting `tune` makes
    is a runtime SQL setting, which Spark Connect lets a client set."""
    return SparkSession.builder.remote(url).appName(app_name).getOrCreate()


def jit_options(rows: int | None) -> str:
    """The JIT of the JVMs that run the checks (a local driver, a cluster's executors). The generated code of a
    machine's checks has methods over HotSpot's 8000-byte limit for JIT compilation; without
    -XX:-DontCompileHugeMethods they would run in the bytecode interpreter. C2 spends most of a 1M-event check
    compiling those methods (a JFR recording: ~135 of 146 CPU-s), so a small input runs with C1 only
    (-XX:TieredStopAtLevel=1): 1.6x faster at 300k events, 25.8 against 39.4 JVM CPU-s at 1M, 37.7 against 45.9
    at 2M (and 22.4 against 24.4 s), on a 10k-row simulator trace 39.5 JVM CPU-s against 58.4 (issue 33), 42.4
    against 53.9 at 3M (`SMALL_INPUT_ROWS`); at 10M C2's faster code wins (102.7 against 149 CPU-s). On a
    standalone cluster at 1M events the executors took 29 CPU-s with these options against 54 with HotSpot's
    defaults (benchmarks/bench_cluster.py). The smallest inputs (`INTERPRETED_ROWS`) also run with the serial
    collector: G1's collector threads cost ~1 CPU-s of a 10k-row check that collects little (16.7 against 15.5 JVM
    CPU-s). C1 compiles huge methods too: the map side's method of a machine with a large table (its `IN` a
    `switch`: `sparkcheck.packed`) passes 8000 bytes, and interpreted it took 43 % of a 1M check's task samples.
    With C1 only, the code cache keeps the tiered size (`C1_CODE_CACHE`)."""
    if rows is not None and rows <= INTERPRETED_ROWS:
        return f"-XX:TieredStopAtLevel=1 {C1_CODE_CACHE} -XX:+UseSerialGC"
    if rows is not None and rows <= SMALL_INPUT_ROWS:
        return f"-XX:TieredStopAtLevel=1 {C1_CODE_CACHE} -XX:-DontCompileHugeMethods"
    return "-XX:-DontCompileHugeMethods"


#: Catalyst rules that copy alias definitions into every use (collapsing projections, pushing filters below them).
#: The checks compute a few large expressions once per row (all guards of a machine in one CASE) and read them
#: several times; with these rules on, the optimiser inlines each copy and planning a large machine takes minutes.
EXCLUDED_RULES = ("org.apache.spark.sql.catalyst.optimizer.CollapseProject",
                  "org.apache.spark.sql.catalyst.optimizer.PushPredicateThroughNonJoin",
                  "org.apache.spark.sql.catalyst.optimizer.PushDownPredicates")


#: Adaptive-execution rules the checker turns off (see `tune`).
AQE_EXCLUDED_RULES = ("org.apache.spark.sql.execution.adaptive.AQEPropagateEmptyRelation",)


def tune(session: SparkSession, rows: int | None = None) -> None:
    """Runtime settings the checker needs on any session (also one `spark-submit` started): generated code by the
    input's size (`rows`, when known), no alias inlining (the large expressions are computed once and read several
    times), no per-row shuffle checksums.

    Generated code: whole-stage code generation on (the row checks are a few large projections; `local_session` lets
    the JIT compile their large generated methods), except for inputs of at most `INTERPRETED_ROWS` rows, which are
    evaluated by Spark's interpreted expressions: generating and compiling (Janino) the code of every machine's
    projections costs a fixed ~5 CPU-s, more than interpreting them over a small input. Simulator traces through the
    CLI (issue 33): 10k rows 24.2 CPU-s interpreted against 29.0 generated, 200k rows 41.0 against 33.0; both cost
    the same near 80k rows."""
    _exclude(session, "spark.sql.optimizer.excludedRules", EXCLUDED_RULES)
    interpreted = rows is not None and rows <= INTERPRETED_ROWS
    session.conf.set("spark.sql.codegen.wholeStage", "false" if interpreted else "true")
    session.conf.set("spark.sql.codegen.factoryMode", "NO_CODEGEN" if interpreted else "FALLBACK")
    # the optimiser infers, through every projection, the constraints a filter implies on the columns: over the
    # checks' large expressions that set grows past gigabytes of driver heap and minutes of planning (a 10M-event
    # run spent 250 CPU-s there before its first task); the checks filter once, on their own flags, and gain nothing
    session.conf.set("spark.sql.constraintPropagation.enabled", "false")
    # over Spark Connect the staged rows are a persisted frame (`sparkcheck.MachinePlan.staged`): let adaptive
    # execution coalesce its shuffle partitions too (by default it leaves a persisted plan at
    # spark.sql.shuffle.partitions tasks, 200 tiny ones), and store it uncompressed (the rows are read back a few
    # times and dropped: building the columnar cache's dictionaries and run lengths cost more than they save)
    session.conf.set("spark.sql.optimizer.canChangeCachedPlanOutputPartitioning", "true")
    session.conf.set("spark.sql.inMemoryColumnarStorage.compressed", "false")
    # a checksum of every shuffled row, only used to detect non-deterministic stage retries (none in a check run)
    session.conf.set("spark.sql.shuffle.orderIndependentChecksum.enabled", "false")
    # the rows are counted by an observation on the pass (`sparkread.Read.counted`); when no row is valid, adaptive
    # execution replaces that pass by an empty relation, the observation's operator leaves the final plan and Spark
    # never fills in its result (`Observation.get` fails: SPARK-54620)
    _exclude(session, "spark.sql.adaptive.optimizer.excludedRules", AQE_EXCLUDED_RULES)


def _exclude(session: SparkSession, setting: str, rules: tuple[str, ...]) -> None:
    """Add `rules` to a list of excluded optimiser rules, keeping those the session (`spark-submit --conf`) has."""
    current = [r for r in (session.conf.get(setting, "") or "").split(",") if r]
    session.conf.set(setting, ",".join([*current, *(r for r in rules if r not in current)]))


def active_session() -> SparkSession | None:
    """The session `spark-submit` (or a caller) already started, if any."""
    return SparkSession.getActiveSession()


@contextmanager
def tasks_class_loader(spark: SparkSession) -> Iterator[None]:
    """Inside, the calling thread's JVM peer (pyspark pins one to each Python thread) has the local executor's class
    loader as its context class loader, the one the tasks run with. Spark compiles each whole-stage code twice
    otherwise: once on the driver, where it plans the stage (`WholeStageCodegenExec.doExecute` tries the compile, to
    fall back if it fails), and once in the first task — its compile cache is keyed on the code and the thread's
    context class loader (`CodeGenerator.compile`), and a local executor's is a child of the driver's. With the
    tasks' loader the task finds the driver's class: 52 Janino compilations instead of 68 in a 200k-event check,
    ~0.9 s of compile time (benchmarks/RESULTS.md, issue 33). Only in a local session (a cluster's executors are
    other JVMs); where the loader cannot be found (Spark's internals), nothing changes."""
    loader = _executor_class_loader(spark)
    if loader is None:
        yield
        return
    jvm: Any = spark.sparkContext._jvm
    thread = jvm.java.lang.Thread.currentThread()
    before = thread.getContextClassLoader()
    thread.setContextClassLoader(loader)
    try:
        yield
    finally:
        thread.setContextClassLoader(before)


def _executor_class_loader(spark: SparkSession) -> object | None:
    """The default class loader of the local executor's tasks: the one it gives its serializer (`Executor`'s
    constructor), read from the shared `SparkEnv` by reflection (its methods name classes py4j cannot load)."""
    if not hasattr(spark, "_jsc") or not (spark.sparkContext.master or "").startswith("local"):
        return None
    jvm: Any = spark.sparkContext._jvm
    try:
        field = jvm.java.lang.Class.forName("org.apache.spark.SparkEnv").getDeclaredField("serializer")
        field.setAccessible(True)
        default = field.get(spark.sparkContext._jsc.sc().env()).defaultClassLoader()
        return default.get() if default.isDefined() else None
    except Exception:  # (py4j's errors: a Spark without these internals compiles as before)
        return None
