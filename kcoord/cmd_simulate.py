"""`kcoord simulate`: the deterministic simulator — many simulated clients and faults driving the real coordinators,
writing traces for `kcoord check-traces`; `--bug NAME` runs a seeded-bug variant of a coordinator.

The work is in `kcoord.impl.sim` (the simulation) and `kcoord.conformance.bugs` (the seeded bugs); this module parses
options, prints the seed first, draws the progress bar, prints the summary and maps outcomes to exit codes (0 the run
finished, 1 a coordinator broke its own assertions — a bug in kcoord, reported with the seed that replays it —,
2 usage error). Also the two `make demo` stages.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from .cli import EXIT_PROBLEMS, app, console, err_console, usage_error, write_output

if TYPE_CHECKING:
    from kcoord.impl.cluster import ClusterConfig
    from kcoord.impl.sim import SimConfig, Summary

FORMATS = ("jsonl", "parquet")


@app.command("simulate")
def simulate(
    seed: Annotated[int | None, typer.Option(help="The seed (default: a random one, printed first).")] = None,
    events: Annotated[int, typer.Option(help="Trace rows to write.")] = 10_000,
    producers: Annotated[int, typer.Option(help="Transactional producers (alternately TV2 and TV1 clients).")] = 3,
    classic: Annotated[int, typer.Option(help="Members of classic consumer groups.")] = 3,
    consumers: Annotated[int, typer.Option(help="Members of KIP-848 consumer groups.")] = 3,
    streams: Annotated[int, typer.Option(help="Streams-like consume-transform-produce tasks.")] = 2,
    veterans: Annotated[int, typer.Option(help="Transactional ids with an almost exhausted epoch.")] = 1,
    clients: Annotated[str | None, typer.Option(help="All client counts at once, e.g. "
                                                     "producers=8,classic=3,consumers=6,streams=4,veterans=1 (the "
                                                     "kinds not named keep their option's value).")] = None,
    nodes: Annotated[int, typer.Option(help="Brokers in the simulated cluster.")] = 3,
    faults: Annotated[str, typer.Option(help="all, none, or a comma-separated list of fault names.")] = "all",
    bug: Annotated[str | None, typer.Option(help="Run a seeded-bug variant of a coordinator (see --list-bugs).")
                   ] = None,
    list_bugs: Annotated[bool, typer.Option("--list-bugs", help="List the seeded bugs and exit.")] = False,
    fmt: Annotated[str, typer.Option("--format", "-f", help="Trace format: jsonl or parquet.")] = "jsonl",
    out: Annotated[Path, typer.Option("--out", "-o", help="Trace folder (<out>/<Machine>/part-*.<ext>).")
                   ] = Path("traces"),
    data_dir: Annotated[Path | None, typer.Option(help="Coordinator logs (default: a temporary folder, removed "
                                                       "after the run).")] = None,
    summary_json: Annotated[Path | None, typer.Option("--summary-json", help="Also write the summary here.")] = None,
) -> None:
    """Simulate clients (transactional producers, classic and KIP-848 consumers, Streams-like tasks) driving the
    real coordinators on a simulated clock, with faults; write the coordinators' traces. The same seed gives
    byte-identical traces. Exit 0 when the run finished, 1 when a coordinator broke its own assertions (replay
    with the printed seed), 2 on a usage error.

    \b
    Example: kcoord simulate --seed 42 --events 100000 --faults all --format parquet --out traces/
             kcoord simulate --seed 1 --events 1500 --bug KAFKA-16147 --out bug/ && kcoord check-traces bug/
    """
    from kcoord.conformance.bugs import BUGS
    from kcoord.conformance.bugs import bug as find_bug
    from kcoord.impl.errors import IllegalStateError
    from kcoord.impl.sim import SimConfig, default_cluster_config, parse_faults

    if list_bugs:
        for b in BUGS.values():
            console().print(Text.assemble((b.name, "bold"), f" ({b.reference}; {b.switch})\n  {b.description}\n"
                                          f"  fires with: kcoord simulate --seed {b.seed} --events {b.events} "
                                          f"--bug {b.name}"))
        return
    if fmt not in FORMATS:
        usage_error(f"unknown format '{fmt}' (choose from {', '.join(FORMATS)})")
    try:
        counts = {"producers": producers, "classic": classic, "consumers": consumers, "streams": streams,
                  "veterans": veterans} | parse_clients(clients or "")
        fault_set = parse_faults(faults)
        seeded = find_bug(bug) if bug is not None else None
        if seed is None:
            import secrets

            seed = secrets.randbelow(2**31)
        config = SimConfig(seed=seed, events=events, producers=counts["producers"], classic_consumers=counts["classic"],
                           consumers=counts["consumers"], streams=counts["streams"], veterans=counts["veterans"],
                           nodes=nodes, faults=fault_set)
    except ValueError as e:
        usage_error(str(e))
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        usage_error(f"{out} is not an empty folder (traces of different runs would mix); choose another --out")
    if data_dir is not None and data_dir.exists() and (not data_dir.is_dir() or any(data_dir.iterdir())):
        usage_error(f"{data_dir} is not an empty folder (a simulation starts from a fresh cluster)")
    console().print(f"seed {seed}" + (f" (bug {seeded.name})" if seeded else ""))
    cluster_config = default_cluster_config(config)
    if seeded is not None:
        cluster_config = seeded.enable(cluster_config)
    scratch = None
    if data_dir is None:
        scratch = Path(tempfile.mkdtemp(prefix="kcoord-sim-", dir=_fast_tmp()))
    from kcoord.impl.runtime.process import restore_gc, tune_gc

    previous_gc = tune_gc()  # the simulator is a long run of the coordinators' request path (impl/runtime/process.py)
    try:
        summary = _run(config, out, data_dir or scratch, fmt, cluster_config)
    except IllegalStateError as e:
        err_console().print(Text.assemble(("a coordinator broke its own assertions", "red"),
                                          f" (seed {seed}; replay with --seed {seed}): {e}"))
        raise typer.Exit(EXIT_PROBLEMS) from e
    finally:
        restore_gc(previous_gc)
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    print_summary(console(), summary.as_dict())
    if summary_json is not None:
        write_output(summary_json, json.dumps(summary.as_dict(), indent=2) + "\n")


CLIENT_KINDS = ("producers", "classic", "consumers", "streams", "veterans")


def parse_clients(text: str) -> dict[str, int]:
    """`producers=8,classic=3` → {"producers": 8, "classic": 3}; ValueError naming what is wrong."""
    out: dict[str, int] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        kind, _, count = part.partition("=")
        kind = kind.strip()
        if kind not in CLIENT_KINDS:
            raise ValueError(f"--clients: unknown client kind {kind!r}; expected some of {', '.join(CLIENT_KINDS)}")
        if not count.strip().isdigit():
            raise ValueError(f"--clients: {kind} needs a count >= 0, got {count.strip()!r}")
        out[kind] = int(count)
    return out


def _fast_tmp() -> str | None:
    """tmpfs when the machine has one: coordinator logs fsync every batch, which costs nothing there."""
    return "/dev/shm" if Path("/dev/shm").is_dir() else None


def _run(config: SimConfig, out: Path, data_dir: Path | None, fmt: str, cluster_config: ClusterConfig) -> Summary:
    from kcoord.impl.sim.simulation import simulate as run_simulation

    assert data_dir is not None
    with Progress(TextColumn("simulating"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err_console(), transient=True) as bar:
        task = bar.add_task("rows", total=config.events)
        return run_simulation(config, out, data_dir, fmt=fmt, cluster_config=cluster_config,
                              progress=lambda done, total: bar.update(task, completed=done))


def print_summary(out: Console, summary: dict[str, object]) -> None:
    rows = summary["rows"]
    faults = summary["faults"]
    assert isinstance(rows, dict) and isinstance(faults, dict)
    table = Table(title=f"seed {summary['seed']}: {summary['events']} trace rows, "
                        f"{int(summary['simulated_ms']) // 1000} s simulated", show_header=True)  # type: ignore[call-overload]
    table.add_column("events per machine")
    table.add_column("rows", justify="right")
    for machine, count in rows.items():
        table.add_row(machine, str(count))
    out.print(table)
    injected = ", ".join(f"{name} {count}" for name, count in faults.items()) or "none"
    out.print(f"faults injected: {injected}")
    out.print(f"transactions: {summary['txns_committed']} committed, {summary['txns_aborted']} aborted; "
              f"rebalances: {summary['rebalances']}")
    if summary.get("trace_dir"):
        out.print(f"traces: {summary['trace_dir']}")


# ---------------------------------------------------------------------------------------------- make demo


DEMO_SEED = 2026
DEMO_EVENTS = 4_000


def _demo_run(out: Console, workdir: Path, name: str, bug: str | None) -> Path:
    from kcoord.conformance.bugs import bug as find_bug
    from kcoord.impl.sim import SimConfig, default_cluster_config
    from kcoord.impl.sim.simulation import simulate as run_simulation

    seeded = find_bug(bug) if bug is not None else None
    if seeded is not None:
        config = SimConfig(seed=seeded.seed, events=seeded.events, **seeded.workload)
    else:
        config = SimConfig(seed=DEMO_SEED, events=DEMO_EVENTS)
    cluster_config = default_cluster_config(config)
    if seeded is not None:
        cluster_config = seeded.enable(cluster_config)
    traces = workdir / name
    shutil.rmtree(traces, ignore_errors=True)
    data = Path(tempfile.mkdtemp(prefix="kcoord-demo-sim-", dir=_fast_tmp()))
    try:
        out.print(f"seed {config.seed}: simulating {config.events} trace rows"
                  + (f" with seeded bug {seeded.name} ({seeded.switch})" if seeded else ", every fault on"))
        summary = run_simulation(config, traces, data, fmt="parquet", cluster_config=cluster_config)
    finally:
        shutil.rmtree(data, ignore_errors=True)
    print_summary(out, summary.as_dict())
    return traces


def demo_stage(out: Console, workdir: Path) -> Path:
    """`make demo`: a mixed workload with every fault, a few thousand rows of Parquet traces in `workdir/traces`;
    returns that folder (the lead chains it into the checker, which must find nothing)."""
    return _demo_run(out, workdir, "traces", None)


def demo_bug_stage(out: Console, workdir: Path, bug: str = "KAFKA-16147") -> Path:
    """`make demo`: the same with one seeded bug, on the seed its catalogue entry documents, in
    `workdir/traces-<bug>`; returns that folder (the checker must catch the bug)."""
    return _demo_run(out, workdir, f"traces-{bug.lower()}", bug)
