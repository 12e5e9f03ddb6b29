"""Spec commands: `kcoord check-spec`, `kcoord gen`, `kcoord diagrams`, `kcoord show`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from kcoord.model import ir
from kcoord.model.gen import generate_all, stale, write
from kcoord.model.gen.diagrams import EXTENSIONS, FORMATS, DotNotFoundError, diagram_files
from kcoord.model.gen.rust import NoRustError
from kcoord.model.pretty import render, render_value

from .cli import EXIT_PROBLEMS, app, console, err_console, usage_error
from .specs import SpecFiles, load_or_exit, repo_root, select

FilesArg = Annotated[list[Path] | None, typer.Argument(help="Spec files (default: every bundled spec in spec/).",
                                                       show_default=False)]


def summary_table(machines: list[ir.Machine], title: str = "machines") -> Table:
    table = Table(title=title, title_justify="left")
    for column in ("machine", "kind", "states", "events", "transitions", "rejections", "invariants", "steps",
                   "trace props"):
        table.add_column(column, justify="left" if column in ("machine", "kind") else "right", overflow="fold")
    for m in sorted(machines, key=lambda m: m.name):
        table.add_row(m.name, m.kind, str(len(m.states)), str(len(m.events)), str(len(m.transitions)),
                      str(len(m.rejections)), str(len(m.invariants)), str(len(m.steps)), str(len(m.traces)))
    return table


@app.command("check-spec")
def check_spec(files: FilesArg = None) -> None:
    """Parse and check spec files; print every problem as `file:line:col: error: ...` with a caret.

    Exit 0 when all specs are clean, 2 when any has an error.

    \b
    Example: kcoord check-spec spec/transaction.sm
    """
    machines = load_or_exit(files)
    console().print(summary_table(machines, title=f"{len(machines)} spec(s) checked, no errors"))


@app.command("gen")
def gen(
    check: Annotated[bool, typer.Option("--check", help="Only report stale generated files; exit 1 if any.")] = False,
    root: Annotated[Path | None, typer.Option(help="Repository root to write into (default: this checkout).")] = None,
) -> None:
    """Regenerate the runtime tables (impl/_generated/, in Python and, for the compiled server, in Rust under
    impl/_generated/rust/), the persisted-step relations and the diagrams (diagrams/) from the specs.

    \b
    Example: kcoord gen            (then commit the changed files)
             kcoord gen --check    (in CI: fail when a generated file is stale)
    """
    from kcoord.model.persisted import DerivationError, derive_all

    machines = load_or_exit(None)
    target = repo_root(root)
    try:
        relations = derive_all(machines)
    except DerivationError as e:
        usage_error(f"cannot derive a persisted-step relation: {e}")
    try:
        files = generate_all(machines, relations=relations)
    except DotNotFoundError as e:
        usage_error(str(e))
    except NoRustError as e:
        usage_error(f"cannot write a Rust table: {e}")
    if check:
        out_of_date = stale(files, target)
        for path in out_of_date:
            console().print(f"stale: {path}")
        if out_of_date:
            err_console().print(f"kcoord: {len(out_of_date)} generated file(s) are stale; run `kcoord gen`")
            raise typer.Exit(EXIT_PROBLEMS)
        console().print(f"all {len(files)} generated files are up to date")
        return
    changed = write(files, target)
    for path in changed:
        console().print(f"wrote {path}")
    console().print(f"{len(changed)} of {len(files)} generated files changed")


@app.command("diagrams")
def diagrams(
    machines: Annotated[list[str] | None, typer.Argument(help="Machines to draw (default: all).",
                                                         show_default=False)] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help=f"One of: {', '.join(FORMATS)}.")] = "svg",
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder.")] = Path("diagrams"),
    files: SpecFiles = None,
) -> None:
    """Draw state diagrams from the specs: initial, final and pending states look different, edges carry events
    and guards, a note lists the invariants.

    \b
    Examples: kcoord diagrams Transaction --format png --out /tmp/diagrams
              kcoord diagrams --spec my_machine.sm
    """
    if fmt not in FORMATS:
        usage_error(f"unknown format '{fmt}' (choose from {', '.join(FORMATS)})")
    chosen = select(load_or_exit(files), machines)
    out.mkdir(parents=True, exist_ok=True)
    for m in chosen:
        try:
            (generated,) = diagram_files(m, (fmt,), folder=".")
        except DotNotFoundError as e:
            usage_error(str(e))
        path = out / Path(generated.path).name
        path.write_bytes(generated.content)
        console().print(f"wrote {path}")
    _ = EXTENSIONS


@app.command("show")
def show(
    machine: Annotated[str, typer.Argument(help="Machine name, e.g. Transaction.")],
    files: SpecFiles = None,
) -> None:
    """Print a machine as readable tables: states, variables, transitions, rejections, invariants, properties.

    \b
    Example: kcoord show ClassicGroup
    """
    (m,) = select(load_or_exit(files), [machine])
    out = console()
    keys = ", ".join(f"{k.name}: {k.type}" for k in m.keys)
    out.print(Text.assemble((m.name, "bold"), f" ({m.kind}, {m.path}) — key {keys}"))
    if m.doc:
        out.print(m.doc)
    out.print(_states_table(m))
    out.print(_variables_table(m))
    out.print(_rows_table(m))
    out.print(_properties_table(m))


def _states_table(m: ir.Machine) -> Table:
    t = Table(title="states", title_justify="left")
    for c in ("state", "flags", "valid previous states", "doc"):
        t.add_column(c, overflow="fold")
    for st in m.states:
        t.add_row(st.name, ", ".join(st.flags), ", ".join(sorted(m.valid_previous(st.name))), st.doc)
    return t


def _variables_table(m: ir.Machine) -> Table:
    t = Table(title="variables", title_justify="left")
    for c in ("variable", "type", "default", "doc"):
        t.add_column(c, overflow="fold")
    for v in m.variables:
        t.add_row(v.name, str(v.type), render_value(v.default), v.doc)
    return t


def _rows_table(m: ir.Machine) -> Table:
    t = Table(title="rows (checks first, then the table; conditions as written)", title_justify="left")
    requires = any(row.assumes != ir.TRUE for row in m.rows)  # the event's `requires` that concern the row
    for c in ("#", "event", "in", "when", *(("requires",) if requires else ()), "outcome"):
        t.add_column(c, overflow="fold")
    for row in m.rows:
        sources = "every state" if len(row.sources) == len([s for s in m.states if not s.final]) else \
            ", ".join(row.sources)
        if isinstance(row, ir.Transition):
            outcome = (f"→ {row.target}" if row.target else "stays") + \
                (f" (answer {row.answer})" if row.answer != "NONE" else "")
        else:
            outcome = f"{row.error}" + (" (check)" if row.origin == "check" else "")
        assumes = (render(row.assumes) if row.assumes != ir.TRUE else "",) if requires else ()
        t.add_row(str(row.index), row.event, sources, row.condition_text, *assumes, outcome)
    return t


def _properties_table(m: ir.Machine) -> Table:
    t = Table(title="properties", title_justify="left")
    for c in ("kind", "name", "property"):
        t.add_column(c, overflow="fold")
    for inv in m.invariants:
        t.add_row("invariant", inv.name, render(inv.expr))
    for st in m.steps:
        t.add_row("step", st.name, render(st.expr))
    for tr in m.traces:
        t.add_row(f"trace ({tr.form})", tr.name, tr.doc)
    return t


def problems_exit() -> None:
    raise typer.Exit(EXIT_PROBLEMS)
