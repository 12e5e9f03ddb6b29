"""Conformance commands: `kcoord conformance-gen`, `kcoord conformance-run`, `kcoord mutate`; and the demo stage.

Owns only the command line: argument parsing, progress bars, the printed tables and exit codes. The work is in
`kcoord.conformance` (generate, suite, mutate).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.status import Status
from rich.text import Text

if TYPE_CHECKING:
    from kcoord.conformance.runner import Session

# The conformance packages import the whole implementation (about a second); they are imported inside the commands
# so that every other `kcoord` command starts fast.
from .cli import EXIT_PROBLEMS, app, console, err_console, usage_error, write_output

MUTATION_REPORT = Path(__file__).resolve().parent.parent / "conformance" / "MUTATION.md"


def _progress(out: Console) -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=out, transient=True)


def _drivers(names: list[str] | None) -> list[str]:
    from kcoord.conformance.drivers import DRIVERS

    chosen = names or sorted(DRIVERS)
    unknown = [n for n in chosen if n not in DRIVERS]
    if unknown:
        usage_error(f"no conformance driver for {', '.join(unknown)} (drivers: {', '.join(sorted(DRIVERS))})")
    return chosen


def stale_drivers(names: list[str]) -> list[str]:
    """The drivers whose committed files were generated from other inputs than the current ones."""
    from kcoord.conformance import generate as gen
    from kcoord.conformance.drivers import DRIVERS
    from kcoord.conformance.suite import GENERATED
    from kcoord.model.loader import bundled_machines

    machines = bundled_machines()
    out = []
    for name in names:
        spec = DRIVERS[name]
        path = GENERATED / f"{spec.module}.json"
        if not path.exists():
            out.append(name)
            continue
        committed = json.loads(path.read_text(encoding="utf-8")).get("inputs_sha256")
        if committed != gen.inputs_sha256(spec, machines):
            out.append(name)
    return out


@app.command("conformance-gen")
def conformance_gen(
    drivers: Annotated[list[str] | None, typer.Argument(help="Drivers to generate (default: all).",
                                                         show_default=False)] = None,
    check: Annotated[bool, typer.Option("--check", help="Only report generated files made from other inputs "
                                                        "(spec or conformance sources); exit 1 if any.")] = False,
) -> None:
    """Generate the conformance tests (conformance/generated/) by a path search over the implementation.

    \b
    Example: kcoord conformance-gen Transaction     (then commit conformance/generated/)
             kcoord conformance-gen --check         (fail when a generated file is stale)
    """
    from kcoord.conformance import generate as gen
    from kcoord.conformance.coverage import StaleDeclarationError
    from kcoord.conformance.drivers import DRIVERS

    names = _drivers(drivers)
    out = console()
    if check:
        stale = stale_drivers(names)
        for name in stale:
            out.print(f"stale: conformance/generated/{DRIVERS[name].module}.json")
        if stale:
            err_console().print(f"kcoord: {len(stale)} generated conformance file(s) are stale; run "
                                "`kcoord conformance-gen`")
            raise typer.Exit(EXIT_PROBLEMS)
        out.print(f"all {len(names)} generated conformance files are up to date")
        return
    if len(names) > 1:  # each driver in a fresh process: a driver's output must not depend on the drivers before it
        command = [sys.executable, "-c", "from kcoord.cli import main; main()", "conformance-gen"]
        failed = [name for name in names if subprocess.run([*command, name], check=False).returncode]
        if failed:
            raise typer.Exit(EXIT_PROBLEMS)
        return
    problems = 0
    for name in names:
        with out.status(f"{name}: searching paths ...") as status:
            def show(text: str, status: Status = status, n: str = name) -> None:
                status.update(f"{n}: {text}")

            try:
                generated = gen.generate(DRIVERS[name], progress=show)
            except StaleDeclarationError as e:  # a spec change renumbered rows the driver names: say which
                err_console().print(f"kcoord: {e}; update the driver's `unreachable` list")
                raise typer.Exit(EXIT_PROBLEMS) from None
        for path in gen.write(generated):
            out.print(f"wrote {path}")
        out.print(f"{name}: {generated.cases} cases; {len(generated.missing)} reachable items without a case; "
                  f"{len(generated.failures)} divergences found on the way")
        for item in generated.missing[:20]:
            out.print(f"  no case for {list(item)}")
        for failure in generated.failures[:5]:
            out.print(f"  divergence: {failure}")
        problems += len(generated.failures) + sum(1 for i in generated.missing if i[0] != "pair")
    if problems:
        raise typer.Exit(EXIT_PROBLEMS)


def run_generated(out: Console, drivers: list[str] | None = None) -> tuple[bool, Session]:
    """Run the generated cases in process with a progress bar; print failures and the coverage table."""
    from kcoord.conformance.gaps import KNOWN_GAPS
    from kcoord.conformance.runner import Session
    from kcoord.conformance.suite import coverage_rows, coverage_table, load_cases, run_suite

    cases = load_cases(drivers=drivers)
    session = Session()
    with _progress(out) as bar:
        task = bar.add_task("conformance cases", total=len(cases))
        result = run_suite(cases, session=session, progress=lambda done, total: bar.update(task, completed=done))
    for case, why in result.failures[:5]:
        out.print(Text.assemble(("FAILED", "red"), f" {case.driver} {case.id}\n{why}"))
    out.print(f"{result.passed}/{result.ran} generated conformance cases passed")
    out.print(coverage_table(session))
    complete = True
    for name, tallies, _ in coverage_rows(session):
        short = [f"{t.covered}/{t.total} {k}s" for k, t in tallies.items() if k != "pair" and t.percent < 100.0]
        if short and name in KNOWN_GAPS:
            out.print(f"known gap: {name} {', '.join(short)} ({KNOWN_GAPS[name]})")
        elif short:
            out.print(Text.assemble(("below 100%", "red"), f": {name} {', '.join(short)}"))
            complete = False
    return result.ok and complete, session


@app.command("conformance-run")
def conformance_run(
    drivers: Annotated[list[str] | None, typer.Argument(help="Drivers to run (default: all).",
                                                         show_default=False)] = None,
) -> None:
    """Run the generated conformance cases in process (no pytest) and print the coverage table.

    Exit 1 when a case fails or a coordinator machine has less than 100% of its states, transitions or rejections
    (the machines listed in conformance/gaps.py are reported as known gaps instead).

    \b
    Example: kcoord conformance-run ClassicGroup
    """
    ok, _ = run_generated(console(), _drivers(drivers))
    if not ok:
        raise typer.Exit(EXIT_PROBLEMS)


@app.command("mutate")
def mutate(
    machines: Annotated[list[str] | None, typer.Argument(help="Machines whose tables to mutate (default: the "
                                                                "coordinator machines).", show_default=False)] = None,
    kinds: Annotated[str, typer.Option(help="Comma-separated mutant kinds.")] = ",".join(
        ("edge-retarget", "edge-drop", "guard-true", "guard-false", "guard-negate")),
    bugs: Annotated[bool, typer.Option(help="Also run the seeded-bug variants (kcoord.conformance.bugs).")] = True,
    out_path: Annotated[Path, typer.Option("--out", help="Where to write the Markdown report.")] = MUTATION_REPORT,
    target: Annotated[float, typer.Option(help="Exit 1 when the score is below this percentage.", min=0, max=100)]
    = 95.0,
) -> None:
    """Mutation score: single-edge and single-guard mutants of the runtime tables (and the seeded Kafka bugs), each
    run against the generated conformance cases; writes conformance/MUTATION.md.

    \b
    Example: kcoord mutate Transaction --kinds guard-false,edge-retarget
    """
    from kcoord.conformance import mutate as mut
    from kcoord.conformance.coverage import COORDINATOR_MACHINES

    chosen = machines or list(COORDINATOR_MACHINES)
    unknown = [m for m in chosen if m not in mut.MODULES]
    if unknown:
        usage_error(f"no runtime table for {', '.join(unknown)} (machines: {', '.join(sorted(mut.MODULES))})")
    wanted_kinds = [k.strip() for k in kinds.split(",") if k.strip()]
    bad = [k for k in wanted_kinds if k not in mut.KINDS]
    if bad:
        usage_error(f"unknown mutant kind {', '.join(bad)} (kinds: {', '.join(mut.KINDS)})")
    out = console()
    mutants = [m for name in chosen for m in mut.table_mutants(name, wanted_kinds)]
    notes = [f"table mutants of {', '.join(chosen)}: {', '.join(wanted_kinds)}"]
    if bugs:
        seeded, note = mut.seeded_bug_mutants()
        mutants += seeded
        notes.append(note)
    with _progress(out) as bar:
        task = bar.add_task("mutants", total=len(mutants))
        result = mut.run_mutation(mutants, progress=lambda done, total, v: bar.update(task, completed=done))
    result.notes = notes
    report = mut.render_report(result)
    write_output(out_path, report)
    out.print(report)
    out.print(f"wrote {out_path}")
    if result.score < target:
        err_console().print(f"kcoord: the mutation score {result.score:.1f}% is below --target {target:g}%")
        raise typer.Exit(EXIT_PROBLEMS)


def demo_stage(out: Console, workdir: Path) -> bool:
    """The demo's conformance stage: every generated case in process, then the coverage table (`workdir` unused:
    each case runs its own cluster in a private scratch directory)."""
    from kcoord.conformance.coverage import KINDS
    from kcoord.conformance.drivers import DRIVERS

    out.print(f"conformance: running the generated cases of {', '.join(sorted(DRIVERS))} against the implementation, "
              "in lockstep with the spec's reference model")
    ok, _ = run_generated(out)
    out.print(f"kinds: {', '.join(KINDS)}; pairs are reported for Transaction and ClassicGroup only")
    return ok
