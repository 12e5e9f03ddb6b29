"""`kcoord demo`: the main job, as `make demo` runs it.

Checks every spec, regenerates the tables and diagrams, and prints a summary per machine. Later stages (verify,
a coordinator workload, Spark trace checking, a real-client run against `kcoord serve`) are added here as they land.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kcoord.model.gen import generate_all, write

from .cli import app, console
from .cmd_spec import summary_table
from .specs import load_or_exit, repo_root


@app.command("demo")
def demo(
    root: Annotated[Path | None, typer.Option(help="Repository root to regenerate into (default: this checkout).")]
    = None,
) -> None:
    """Run the main job: check every spec, regenerate tables and diagrams, print a summary per machine.

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
