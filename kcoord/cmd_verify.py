"""`kcoord verify`: z3 proofs for CI, in text, JSON, SARIF or JUnit, machines verified in parallel processes."""

from __future__ import annotations

import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from kcoord.model import ir
from kcoord.model.verify import Options, verify_machine
from kcoord.model.verify_report import RENDERERS, exit_code, render_text
from kcoord.model.verify_result import Result, VerifierBug

from .cli import EXIT_USAGE, app, console, err_console, usage_error, write_output
from .specs import SpecFiles, load_or_exit, select

FORMATS = tuple(RENDERERS)


# The machines being verified, set before the worker processes are forked so that they inherit them (loading the
# specs again in every worker cost more than a small machine's proofs).
_FORKED: dict[str, ir.Machine] = {}


def _verify_one(name: str, options: Options) -> list[Result]:
    """Worker: verify one of the machines inherited from the parent."""
    return _verify(_FORKED[name], options)


def _verify(m: ir.Machine, options: Options) -> list[Result]:
    """A machine's obligations; a persisted-step relation is the committed one when it was generated from this spec
    (what the checkers use), else derived for the run."""
    from kcoord.conformance.traces.steps import committed_relation

    return verify_machine(m, options, committed_relation(m) if m.persist is not None else None)


def run_verification(machines: list[ir.Machine], options: Options, jobs: int,
                     show_progress: bool) -> list[Result]:
    results: dict[str, list[Result]] = {}
    with Progress(TextColumn("verifying {task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err_console(), disable=not show_progress, transient=True) as bar:
        task = bar.add_task("machines", total=len(machines))
        if jobs <= 1 or len(machines) == 1:
            for m in machines:
                results[m.name] = _verify(m, options)
                bar.advance(task)
        else:
            ctx = multiprocessing.get_context("fork")
            _FORKED.update((m.name, m) for m in machines)
            try:
                with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
                    # largest first (rows x properties), so the workers finish together
                    order = sorted(machines, key=lambda m: -len(m.rows) * (1 + len(m.invariants) + len(m.steps)))
                    futures = {pool.submit(_verify_one, m.name, options): m.name for m in order}
                    for future in as_completed(futures):
                        results[futures[future]] = future.result()
                        bar.advance(task)
            finally:
                _FORKED.clear()
    return [r for m in machines for r in results[m.name]]


@app.command("verify")
def verify(
    machines: Annotated[list[str] | None, typer.Argument(help="Machines to verify (default: all).",
                                                         show_default=False)] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help=f"One of: {', '.join(FORMATS)}.")] = "text",
    timeout_s: Annotated[float, typer.Option("--timeout-s", help="Solver time limit per obligation, seconds.")] = 10.0,
    depth: Annotated[int, typer.Option(help="Bounded model checking depth for reachability.")] = 8,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Parallel processes (0: one per CPU).", min=0)] = 0,
    spec: SpecFiles = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the report to a file.")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Text: list obligations that hold too.")] = False,
) -> None:
    """Prove with z3 that every invariant is inductive, step properties hold, every state is reachable, nothing
    deadlocks, rows never overlap, requests are always answered, and every record the spec can write is in the
    persisted-step relation; print a counterexample for each failure.

    Exit 0 when everything holds, 1 on a failure, 2 on a usage or spec error, 3 when the solver says unknown.

    \b
    Example: kcoord verify --format sarif -o verify.sarif
             kcoord verify Transaction -v
    """
    if fmt not in FORMATS:
        usage_error(f"unknown format '{fmt}' (choose from {', '.join(FORMATS)})")
    if timeout_s <= 0 or depth < 1:
        usage_error("--timeout-s must be positive and --depth at least 1")
    chosen = select(load_or_exit(spec), machines)
    options = Options(timeout_ms=int(timeout_s * 1000), depth=depth)
    try:
        results = run_verification(chosen, options, jobs or (os.cpu_count() or 1), sys.stderr.isatty())
    except VerifierBug as e:  # our bug, not the user's spec: say so loudly
        err_console().print(f"kcoord: internal error in the verifier: {e}")
        raise typer.Exit(EXIT_USAGE + 2) from e
    text = render_text(results, verbose=verbose) if fmt == "text" else RENDERERS[fmt](results)
    if output is not None:
        write_output(output, text + "\n")
        console().print(render_text(results).rsplit("\n", 1)[-1])
    else:
        console().print(text)
    raise typer.Exit(exit_code(results))
