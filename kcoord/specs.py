"""Loading specs for the command line: bundled or given files, with diagnostics printed the one way.

Owns: resolving FILES arguments, printing diagnostics to stderr, exiting 2 on spec errors, finding machines by name
(with a suggestion for a near miss), and locating the repository root that `kcoord gen` writes into.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kcoord.model import ir
from kcoord.model.diagnostics import suggest
from kcoord.model.loader import bundled_spec_files, load_files, spec_dir

from .cli import EXIT_USAGE, err_console, usage_error

#: The `--spec FILE` option of every command that reads specs (repeat it for several files).
SpecFiles = Annotated[list[Path] | None, typer.Option(
    "--spec", help="Use these spec files instead of the bundled ones (repeat for several).", show_default=False)]


def spec_paths(files: list[Path] | None) -> list[Path]:
    if not files:
        return bundled_spec_files()
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        usage_error(f"no such spec file: {', '.join(missing)}")
    return list(files)


def load_or_exit(files: list[Path] | None) -> list[ir.Machine]:
    """Load and check specs; print every diagnostic; exit 2 when any spec has an error."""
    machines, diags = load_files(spec_paths(files))
    if len(diags):
        err_console().print(diags.render())
    if diags.has_errors:
        count = sum(1 for d in diags if d.severity == "error")
        err_console().print(f"kcoord: {count} error{'s' if count != 1 else ''} in the spec")
        raise typer.Exit(EXIT_USAGE)
    return machines


def select(machines: list[ir.Machine], names: list[str] | None) -> list[ir.Machine]:
    if not names:
        return machines
    by_name = {m.name: m for m in machines}
    chosen = []
    for name in names:
        if name not in by_name:
            hint = suggest(name, by_name)
            usage_error(f"unknown machine '{name}'" + (f"; did you mean '{hint}'?" if hint else "") +
                        f" (machines: {', '.join(sorted(by_name))})")
        chosen.append(by_name[name])
    return chosen


def repo_root(root: Path | None) -> Path:
    """Where generated files go: --root, else the checkout that holds the bundled `spec/`."""
    if root is not None:
        return root
    candidate = spec_dir().resolve().parent
    if (candidate / "impl" / "_generated").is_dir() and (candidate / "spec").is_dir():
        return candidate
    err_console().print("kcoord: cannot find the kcoord source tree to write into; pass --root DIR")
    raise typer.Exit(EXIT_USAGE)
