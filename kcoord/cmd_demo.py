"""`kcoord demo`: the main job, as `make demo` runs it.

Checks every spec, regenerates the tables and diagrams, verifies every machine with z3, and prints a summary per
machine. Later stages (a coordinator workload, Spark trace checking, a real-client run against `kcoord serve`) are
added here as they land. Exits non-zero if any stage finds a problem.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from kcoord.model.gen import generate_all, write
from kcoord.model.verify import Options
from kcoord.model.verify_report import exit_code, render_text

from .cli import EXIT_PROBLEMS, app, console
from .cmd_spec import summary_table
from .cmd_verify import run_verification
from .demo_coordinators import group_stage, txn_stage
from .specs import load_or_exit, repo_root, spec_paths


@app.command("demo")
def demo(
    root: Annotated[Path | None, typer.Option(help="Repository root to regenerate into (default: this checkout).")]
    = None,
    workdir: Annotated[Path | None, typer.Option(
        help="Where the workloads keep their logs and traces (emptied first; default: build/demo under the root).")]
    = None,
) -> None:
    """Run the main job: check every spec, regenerate tables and diagrams, verify every machine with z3, print a
    summary per machine.

    Example: kcoord demo
    """
    out = console()
    out.rule("1. check the specs")
    machines = load_or_exit(None)
    out.print(f"{len(machines)} machines checked clean")
    out.rule("2. regenerate runtime tables and diagrams")
    target = repo_root(root)
    files = generate_all(machines)
    changed = write(files, target)
    out.print(f"{len(files)} generated files, {len(changed)} changed; diagrams in {target / 'diagrams'}")
    out.print(summary_table(machines))
    out.rule("3. verify every machine with z3")
    results = run_verification(machines, spec_paths(None), Options(), os.cpu_count() or 1, show_progress=True)
    out.print(render_text(results, warnings=False), markup=False)
    ok = exit_code(results) == 0
    work = workdir if workdir is not None else target / "build" / "demo"
    shutil.rmtree(work, ignore_errors=True)
    out.rule("4. the transaction coordinator: a short transactional workload")
    ok &= _stage(out, "transactions", txn_stage(out, work / "transactions"))
    out.rule("5. the group coordinator: a classic group and a KIP-848 group")
    ok &= _stage(out, "groups", group_stage(out, work / "groups"))
    if not ok:
        raise typer.Exit(EXIT_PROBLEMS)


def _stage(out: Console, name: str, passed: bool) -> bool:
    out.print(f"[green]✓ {name} stage passed[/green]" if passed else f"[red]✗ {name} stage failed[/red]")
    return passed
