"""`kcoord check-traces`, `kcoord replay`, `kcoord gen-traces`: recorded executions checked against the spec; and
`kcoord spark-archive`, the Spark driver's class-data archive (`sparkcds`).

The work is in `kcoord.conformance.traces` (the job, the checkers, the generator, replay); this module parses
options, draws the progress bar and maps outcomes to exit codes (0 clean, 1 violations, 2 usage error).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from kcoord.conformance.traces import MAX_ROWS_IN_MEMORY

from .cli import app, console, err_console, host_ports, unreachable_servers, usage_error, write_output
from .specs import SpecFiles, load_or_exit

ENGINES = ("auto", "spark", "python")


@app.command("check-traces")
def check_traces(
    paths: Annotated[list[Path], typer.Argument(help="Trace folders (<dir>/<Machine>/*.jsonl|*.parquet), machine "
                                                     "folders, files, or coordinator log directories "
                                                     "(__transaction_state-N, __consumer_offsets-N, or a data "
                                                     "directory holding them).", show_default=False)],
    master: Annotated[str, typer.Option(help="Spark master: local[*], spark://HOST:PORT, yarn.")] = "local[*]",
    remote: Annotated[str | None, typer.Option(
        help="A Spark Connect server, sc://HOST:PORT[/;param=value...], instead of a master: the check runs there "
             "(the paths are read and --out is written by the server: give paths it sees).")] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write violations (Parquet), quarantine, summary "
                                                                 "and report here.")] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="text, json or junit.")] = "text",
    engine: Annotated[str, typer.Option(help="auto (the Python reference checker for small inputs, Spark for large "
                                              "ones, or when --master is not local; the choice is printed), spark "
                                              "or python.")] = "auto",
    spec: SpecFiles = None,
    max_witnesses: Annotated[int, typer.Option(help="Violations that get a witness (the first ones).", min=0)] = 1000,
    max_rows_in_memory: Annotated[int, typer.Option(
        min=1, help="--engine python: a machine with more rows is spilled to disk by key (beside --out, else in the "
                    "temporary folder) and checked a bucket at a time, so memory stays bounded; in memory a "
                    "Transaction row takes ~1.2 KB.")] = MAX_ROWS_IN_MEMORY,
) -> None:
    """Check recorded traces against the spec: table, continuity, guards, effects and frame, error table,
    invariants, step and trace properties. Malformed rows are quarantined, never fatal.

    Exit 0 when nothing is violated, 1 when something is, 2 on a usage error, when the paths hold no trace file
    or coordinator log, when every row read was quarantined (nothing checked: e.g. traces of machines --spec does
    not have), or on an input file Spark cannot read (a Parquet file broken partway; files that cannot be opened
    at all are quarantined).

    \b
    Examples: kcoord check-traces traces/ --out check-out
              kcoord check-traces traces/ --engine python --format junit
              kcoord check-traces /var/lib/kafka/data --master spark://host:7077
              kcoord check-traces /shared/traces --remote sc://host:15002 --out /shared/check-out
    """
    from kcoord.conformance.traces.job import CannotCheck, Config, run
    from kcoord.conformance.traces.output import FORMATS

    if fmt not in FORMATS:
        usage_error(f"unknown format '{fmt}' (choose from {', '.join(FORMATS)})")
    if engine not in ENGINES:
        usage_error(f"unknown engine '{engine}' (choose from {', '.join(ENGINES)})")
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        usage_error(f"no such path: {', '.join(missing)}")
    if remote is not None:
        _check_remote(remote, master, engine)
    if engine != "python" and master.startswith("spark://"):  # a standalone master: seconds, not a minute of retries
        unreachable = unreachable_servers(host_ports(master, "--master", 7077, scheme="spark://"))
        if unreachable:
            usage_error(f"no Spark master answers at --master {master} ({unreachable})")
    machines = {m.name: m for m in load_or_exit(spec)}
    config = Config([str(p) for p in paths], str(out) if out else None, engine, master, fmt,
                    max_witnesses=max_witnesses, max_rows_in_memory=max_rows_in_memory, remote=remote)
    if ARCHIVE_VARIABLE in os.environ:  # (another folder than build/spark-cds, or none: "")
        config.spark_archive = os.environ[ARCHIVE_VARIABLE] or None
    with Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(), console=err_console(),
                  transient=True) as bar:
        task = bar.add_task("starting", total=None)

        def progress(stage: str, done: int, total: int) -> None:
            bar.update(task, description=stage, completed=done, total=total)

        def say(choice: str) -> None:
            bar.console.print(choice)

        try:
            outcome = run(config, machines, progress, say=say)
        except CannotCheck as e:
            bar.stop()
            usage_error(str(e))
    console().print(outcome.report)
    raise typer.Exit(outcome.exit_code)


#: the folder of the Spark driver's class-data archive (`kcoord spark-archive`), when not the default; empty: none
ARCHIVE_VARIABLE = "KCOORD_SPARK_ARCHIVE"


@app.command("spark-archive")
def spark_archive(
    folder: Annotated[Path | None, typer.Option(help="Where to write it (default: build/spark-cds of this "
                                                     "checkout, else ~/.cache/kcoord/spark-cds).")] = None,
) -> None:
    """Build the class-data-sharing archive of the Spark driver JVM for this JDK and these Spark jars, unless it is
    there already (`make setup` runs this). A local `check-traces` on Spark then starts ~2.5 JVM CPU-s faster; without
    the archive (or with a damaged one, said in one line) it starts as before. The first build runs a small check
    and takes ~1-2 min and ~160 MB.

    \b
    Examples: kcoord spark-archive
              KCOORD_SPARK_ARCHIVE=/tmp/cds kcoord spark-archive --folder /tmp/cds
    """
    from kcoord.conformance.traces import sparkcds

    target = folder if folder is not None else Path(os.environ.get(ARCHIVE_VARIABLE) or sparkcds.default_folder())
    try:
        archive, built = sparkcds.build(target)
    except sparkcds.CannotBuild as e:
        err_console().print(f"spark-archive: not built: {e} (checks start Spark without it)")
        raise typer.Exit(1) from None
    size_mb = archive.jsa.stat().st_size / 1e6
    console().print(f"{'built' if built else 'present'}: {archive.jsa} ({size_mb:,.0f} MB)")


def _check_remote(remote: str, master: str, engine: str) -> None:
    """--remote: an sc:// address that answers, with no other master and the Spark engine."""
    if not remote.startswith("sc://"):
        usage_error(f"--remote {remote!r}: expected sc://HOST:PORT")
    if master != "local[*]":
        usage_error("--remote and --master cannot be combined (the Spark Connect server has its own master)")
    if engine == "python":
        usage_error("--remote runs the check on Spark: it cannot be combined with --engine python")
    authority = remote.removeprefix("sc://").partition("/")[0]
    unreachable = unreachable_servers(host_ports(authority, "--remote", 15002))
    if unreachable:
        usage_error(f"no Spark Connect server answers at --remote {remote} ({unreachable})")


@app.command("replay")
def replay(
    violation: Annotated[str, typer.Argument(help="A violation id (from a report), or a JSON file of one violation.",
                                             show_default=False)],
    violations: Annotated[Path, typer.Option("--violations", help="The violations table (a check-traces --out "
                                             "folder or its violations/).")] = Path("check-out"),
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the test here (default: "
                                                "test_replay_<id>.py).")] = None,
    files: SpecFiles = None,
) -> None:
    """Turn a violation's witness into a pytest file that replays its rows against the runtime tables: it fails on
    the recorded trace and passes on a corrected one.

    \b
    A machine of your own spec (checked with --spec) needs the same --spec here: the test builds its table from
    that file each time it runs.

    \b
    Examples: kcoord replay 3f2a9c0d11e4 --violations check-out
              kcoord replay 3f2a9c0d11e4 --violations check-out --spec door.sm
    """
    from kcoord.conformance.traces.output import UnreadableViolations, read_violations
    from kcoord.conformance.traces.replay import Unsupported, find, render_test

    source = Path(violation)
    try:
        if source.suffix == ".json":
            if not source.is_file():
                usage_error(f"no such file: {source}")
            items = read_violations(str(source))
            if not items:
                usage_error(f"{source} holds no violation")
            chosen = items[0]
        else:
            table = violations / "violations" if (violations / "violations").is_dir() else violations
            if not table.exists():
                usage_error(f"no violations table at {violations} (run check-traces --out first)")
            chosen = find(read_violations(str(table)), violation)
        given = {m.name: m for m in load_or_exit(files)} if files else {}
        text = render_test(chosen, given.get(chosen.machine))
    except (Unsupported, UnreadableViolations) as e:
        usage_error(str(e))
    target = output or Path(f"test_replay_{chosen.id}.py")
    write_output(target, text)
    console().print(f"wrote {target}: {chosen.check} on {chosen.machine} key {chosen.key} seq {chosen.seq}")


@app.command("gen-traces")
def gen_traces(
    out: Annotated[Path, typer.Argument(help="Folder to write <Machine>/part-0.<format> into.", show_default=False)],
    seed: Annotated[int, typer.Option(help="Random seed (same seed, same traces).")] = 1,
    keys: Annotated[int, typer.Option(help="Keys per machine.", min=1)] = 20,
    rows: Annotated[int, typer.Option(help="Rows per machine (about).", min=1)] = 400,
    fmt: Annotated[str, typer.Option("--format", "-f", help="jsonl or parquet.")] = "jsonl",
    mutate: Annotated[list[str] | None, typer.Option(help="Apply a mutation to every machine's trace (drop_row, "
                                                          "duplicate_row, swap_rows, corrupt_variable, "
                                                          "non_edge_target, change_error).")] = None,
    files: SpecFiles = None,
) -> None:
    """Write random valid traces of every bundled machine, or of the machines of --spec (optionally broken by
    mutations), in the layout `kcoord check-traces` reads.

    \b
    Examples: kcoord gen-traces traces/ --format parquet --rows 10000
              kcoord gen-traces broken/ --mutate drop_row
              kcoord gen-traces door-traces/ --spec door.sm
    """
    import random

    from kcoord.conformance.traces.checks import Spec
    from kcoord.conformance.traces.generate import Options, generate
    from kcoord.conformance.traces.mutations import MUTATIONS
    from kcoord.conformance.traces.writers import write_jsonl, write_parquet

    unknown = [m for m in mutate or [] if m not in MUTATIONS]
    if unknown:
        usage_error(f"unknown mutation {', '.join(unknown)} (choose from {', '.join(MUTATIONS)})")
    if fmt not in ("jsonl", "parquet"):
        usage_error(f"unknown format '{fmt}' (choose from jsonl, parquet)")
    machines = {m.name: m for m in load_or_exit(files)}
    console().print(f"seed {seed}")
    traces, stats = generate(machines, seed, Options(keys=keys, rows=rows))
    rng = random.Random(seed)
    for name in mutate or []:
        mutated = {m: MUTATIONS[name](rows_, Spec.of(machines[m]), rng) for m, rows_ in traces.items()}
        unchanged = sorted(m for m in traces if mutated[m] == traces[m])
        if unchanged:  # a machine too small for it (no key with two rows, no state that is not a target...)
            err_console().print(f"{name} changed nothing in {', '.join(unchanged)}: no row of theirs it can break")
        traces = mutated
    if fmt == "jsonl":
        write_jsonl(traces, str(out))
    else:
        write_parquet(traces, machines, str(out))
    console().print(f"wrote {stats.rows} rows to {out}")
    if stats.dropped:
        skipped = ", ".join(f"{why} {n}" for why, n in sorted(stats.dropped.items()))
        err_console().print(f"skipped {sum(stats.dropped.values())} random candidate rows that would have broken a "
                            f"check (the traces written are valid): {skipped}")


# ---------------------------------------------------------------- `make demo`


def demo_check(out: Console, paths: list[Path], engine: str = "spark", *, report_dir: Path | None = None,
               shown: int = 3) -> int:
    """Check trace folders (e.g. the simulator's) on local Spark (or the Python checker), print the report, and
    return the number of violations."""
    from kcoord.conformance.traces.job import Config, run
    from kcoord.model.loader import bundled_machines

    config = Config([str(p) for p in paths], str(report_dir) if report_dir else None, engine, "local[*]", "text",
                    max_witnesses=shown)
    with out.status(f"checking {', '.join(str(p) for p in paths)} ({engine})"):
        outcome = run(config, dict(bundled_machines()))
    out.print(outcome.report)
    return outcome.summary.violations_total


DEMO_MACHINES = ("Transaction", "PartitionProducer")


def demo_stage(out: Console, workdir: Path) -> bool:
    """The trace-checking stage of `make demo`: random valid traces of the transactional machines are clean on local
    Spark, and the same traces with one illegal edge and one lost row are caught (True when both hold). Two machines
    only: Spark's cost is mostly fixed per machine (planning the compiled checks), so the simulator's traces of every
    machine are the lead's `demo_check` call."""
    import random

    from kcoord.conformance.traces.checks import Spec
    from kcoord.conformance.traces.generate import Options, generate
    from kcoord.conformance.traces.mutations import drop_row, non_edge_target
    from kcoord.conformance.traces.writers import write_parquet
    from kcoord.model.loader import bundled_machines

    machines = {name: m for name, m in bundled_machines().items() if name in DEMO_MACHINES}
    seed = 7
    out.print(f"seed {seed}: random valid traces of {', '.join(sorted(machines))} (Parquet)")
    traces, _ = generate(machines, seed, Options(keys=8, rows=200))
    clean, broken = workdir / "traces-clean", workdir / "traces-broken"
    write_parquet(traces, machines, str(clean))
    rng = random.Random(seed)
    name = "Transaction"
    spec = Spec.of(machines[name])
    mutated = dict(traces) | {name: drop_row(non_edge_target(traces[name], spec, rng), spec, rng)}
    write_parquet(mutated, machines, str(broken))
    found_clean = demo_check(out, [clean], report_dir=workdir / "check-clean")
    out.print(f"clean traces: {found_clean} violations (expected 0)")
    found_broken = demo_check(out, [broken], report_dir=workdir / "check-broken", shown=1)
    out.print(f"traces with an illegal edge and a lost row: {found_broken} violations (expected > 0)")
    return found_clean == 0 and found_broken > 0
