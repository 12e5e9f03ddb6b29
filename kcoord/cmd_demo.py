"""`kcoord demo`: the main job, as `make demo` runs it.

Checks every spec, regenerates the tables and diagrams, verifies every machine with z3, prints a summary per machine;
then runs the coordinators (a transactional workload, a classic and a KIP-848 group), simulates a mixed workload with
faults and checks its traces on local Spark (clean, then with a seeded Kafka bug that must be caught), serves the
Kafka protocol to a real client and checks that run's traces, runs the generated conformance suite, and checks the
coordinator logs of a real Apache Kafka 4.0.2 broker after a mixed workload (clean, then a damaged copy caught). Exits
non-zero if any stage finds a problem.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

from kcoord.model.gen import generate_all, write
from kcoord.model.verify import Options
from kcoord.model.verify_report import exit_code, render_text

from .cli import EXIT_PROBLEMS, app, console, usage_error
from .cmd_conformance import demo_stage as conformance_demo
from .cmd_serve import demo_stage as serve_demo
from .cmd_simulate import demo_bug_stage
from .cmd_simulate import demo_stage as simulate_demo
from .cmd_spec import summary_table
from .cmd_traces import demo_check
from .cmd_verify import run_verification
from .specs import load_or_exit, repo_root

DEMO_BUG = "KAFKA-16147"


@app.command("demo")
def demo(
    root: Annotated[Path | None, typer.Option(help="Repository root to regenerate into (default: this checkout).")]
    = None,
    workdir: Annotated[Path | None, typer.Option(
        help="Where the workloads keep their logs and traces (default: build/demo under the root). Emptied first, so "
             "it must be new, empty or an earlier demo's.")]
    = None,
) -> None:
    """Run the main job: check every spec, regenerate tables and diagrams, verify every machine with z3, print a
    summary per machine; run both coordinators, a simulation with faults checked on Spark (clean, then a seeded bug
    caught), a real Kafka client against kcoord serve, the generated conformance suite, and a real Apache Kafka 4.0.2
    broker's coordinator logs after a workload (clean on Spark, a damaged copy caught).

    \b
    Example: kcoord demo --workdir /tmp/kcoord-demo
    """
    from kcoord.model.persisted import derive_all

    from .demo_coordinators import group_stage, txn_stage  # the whole implementation: only when the demo runs
    from .demo_kafka import kafka_logs_stage

    target = repo_root(root)
    work = workdir if workdir is not None else target / "build" / "demo"
    if workdir is not None and not _ours_to_empty(workdir):
        usage_error(f"--workdir {workdir} holds files an earlier demo did not write, and the demo empties it first: "
                    f"choose a new or empty folder")
    out = console()
    out.rule("1. check the specs")
    machines = load_or_exit(None)
    out.print(f"{len(machines)} machines checked clean")
    out.rule("2. regenerate runtime tables, persisted-step relations and diagrams")
    files = generate_all(machines, relations=derive_all(machines))
    changed = write(files, target)
    out.print(f"{len(files)} generated files, {len(changed)} changed; diagrams in {target / 'diagrams'}")
    out.print(summary_table(machines))
    out.rule("3. verify every machine with z3")
    results = run_verification(machines, Options(), os.cpu_count() or 1, show_progress=True)
    out.print(render_text(results, warnings=False))
    ok = exit_code(results) == 0
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    (work / _MARKER).write_text("written by kcoord demo: it empties this folder when it runs again\n")
    out.rule("4. the transaction coordinator: a short transactional workload")
    ok &= _stage(out, "transactions", txn_stage(out, work / "transactions"))
    out.rule("5. the group coordinator: a classic group and a KIP-848 group")
    ok &= _stage(out, "groups", group_stage(out, work / "groups"))
    out.rule("6. simulate a mixed workload with faults, check its traces on local Spark")
    ok &= _stage(out, "simulation", _simulate_and_check(out, work / "simulation"))
    out.rule("7. kcoord serve: a real Kafka client (kafka-python) against the server, then its traces checked")
    ok &= _stage(out, "server", _serve_and_check(out, work / "serve"))
    out.rule("8. generated conformance tests: every transition and rejection, in lockstep with the reference model")
    ok &= _stage(out, "conformance", conformance_demo(out, work / "conformance"))
    out.rule("9. Apache Kafka 4.0.2: a workload on the real broker, its coordinator logs checked on Spark")
    ok &= _stage(out, "kafka logs", kafka_logs_stage(out, work / "kafka-logs"))
    if not ok:
        raise typer.Exit(EXIT_PROBLEMS)


_MARKER = ".kcoord-demo"  # in a workdir the demo made: the next demo may empty it


def _ours_to_empty(folder: Path) -> bool:
    """A folder the demo may empty: not there yet, empty, or one an earlier demo wrote (it holds the marker)."""
    return not folder.exists() or (folder.is_dir() and (not any(folder.iterdir()) or (folder / _MARKER).is_file()))


def _simulate_and_check(out: Console, work: Path) -> bool:
    """The simulator's mixed workload is clean on Spark; the same run with a seeded Kafka bug is caught."""
    clean = simulate_demo(out, work)
    found = demo_check(out, [clean], report_dir=work / "report-clean")
    out.print(f"simulated traces: {found} violations (expected 0)")
    buggy = demo_bug_stage(out, work, DEMO_BUG)
    caught = demo_check(out, [buggy], report_dir=work / "report-bug")
    out.print(f"with the seeded bug {DEMO_BUG}: {caught} violations (expected > 0: the bug is caught)")
    return found == 0 and caught > 0


def _serve_and_check(out: Console, work: Path) -> bool:
    if not serve_demo(out, work):
        return False
    found = demo_check(out, [work / "traces"], engine="python", report_dir=work / "report")
    out.print(f"the server's traces: {found} violations (expected 0)")
    return found == 0


def _stage(out: Console, name: str, passed: bool) -> bool:
    out.print(Text(f"✓ {name} stage passed", "green") if passed else Text(f"✗ {name} stage failed", "red"))
    return passed
