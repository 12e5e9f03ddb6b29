"""Finding, parsing and checking spec files.

Owns: locating the bundled specs (`kcoord.spec` package data, shown as `spec/<file>.sm`), loading any list of files,
and the project-level checks that need every machine at once (trace properties naming another machine). All
diagnostics of all files are collected before anything fails.
Must not import: z3, pyspark.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path

from . import ir
from .check import check_machine
from .diagnostics import Diagnostics, SourceFile, Span, SpecError, suggest, unknown_name_message
from .parser import parse_source


def spec_dir() -> Path:
    """The folder holding the bundled `*.sm` files (the repository's `spec/`)."""
    return Path(str(resources.files("kcoord.spec")))


def bundled_spec_files() -> list[Path]:
    return sorted(spec_dir().glob("*.sm"))


def display_path(path: Path) -> str:
    """`spec/transaction.sm` for bundled specs; otherwise relative to the working directory when inside it (so
    messages and golden files do not depend on where the checkout lives), else the path as given."""
    resolved = path.resolve()
    try:
        return f"spec/{resolved.relative_to(spec_dir().resolve())}"
    except ValueError:
        pass
    try:
        return str(resolved.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def load_sources(sources: Iterable[SourceFile]) -> tuple[list[ir.Machine], Diagnostics]:
    """Parse and check every source; returns the machines that checked clean and every diagnostic."""
    diags = Diagnostics()
    machines: list[ir.Machine] = []
    for source in sources:
        syntax = parse_source(source, diags)
        if syntax is None:
            continue
        machine = check_machine(syntax, source.text, diags)
        if machine is not None and not any(d.span.path == source.path and d.severity == "error" for d in diags.items):
            machines.append(machine)
    _check_names_unique(machines, diags)
    return _check_cross_references(machines, diags), diags


def load_files(paths: Sequence[Path]) -> tuple[list[ir.Machine], Diagnostics]:
    """Load and check spec files; a file that cannot be read or is not UTF-8 text is a diagnostic too (one line
    naming where it stops), and the other files are still checked."""
    unreadable = Diagnostics()
    sources = []
    for path in paths:
        source = _read_source(path, unreadable)
        if source is not None:
            sources.append(source)
    machines, diags = load_sources(sources)
    diags.extend(unreadable)
    return machines, diags


def _read_source(path: Path, diags: Diagnostics) -> SourceFile | None:
    shown = display_path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        diags.error(Span.point(shown, 1, 1), f"cannot read the file: {e.strerror or e}")
        return None
    try:
        return SourceFile(shown, data.decode("utf-8"))
    except UnicodeDecodeError as e:
        line_start = data.rfind(b"\n", 0, e.start) + 1
        line = data.count(b"\n", 0, e.start) + 1
        column = len(data[line_start:e.start].decode("utf-8")) + 1
        diags.error(Span.point(shown, line, column),
                    f"not UTF-8 text: byte 0x{data[e.start]:02x}: {e.reason} (save the file as UTF-8)")
        return None


def load(paths: Sequence[Path] | None = None) -> list[ir.Machine]:
    """Load and check specs (the bundled ones by default); raises `SpecError` with every diagnostic on failure."""
    machines, diags = load_files(list(paths) if paths is not None else bundled_spec_files())
    if diags.has_errors:
        raise SpecError(diags)
    return machines


@functools.cache
def bundled_machines() -> dict[str, ir.Machine]:
    """The bundled machines by name, loaded once per process (they are immutable)."""
    return {m.name: m for m in load()}


def _check_names_unique(machines: list[ir.Machine], diags: Diagnostics) -> None:
    seen: dict[str, ir.Machine] = {}
    for m in machines:
        if m.name in seen:
            diags.error(m.span, f"machine '{m.name}' is also declared in {seen[m.name].path}")
        seen[m.name] = m


def _check_cross_references(machines: list[ir.Machine], diags: Diagnostics) -> list[ir.Machine]:
    """`before` and `fenced` trace properties name another machine's event or variable; returns the machines
    whose references all resolve (a machine with a bad reference is not clean)."""
    by_name = {m.name: m for m in machines}
    clean = []
    for m in machines:
        problems = [(prop.span, p) for prop in m.traces if prop.form in ("before", "fenced")
                    for p in _reference_problems(m, prop, by_name)]
        for span, message in problems:
            diags.error(span, message)
        if not problems:
            clean.append(m)
    return clean


def _bundled_machine_names() -> set[str]:
    """The machine names the bundled specs declare (read off their `machine NAME` lines, without parsing them)."""
    names = set()
    for path in bundled_spec_files():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("machine "):
                names.add(line.split()[1])
    return names


def _reference_problems(m: ir.Machine, prop: ir.TraceProperty, by_name: dict[str, ir.Machine]) -> list[str]:
    other_name, member = prop.subject[-2], prop.subject[-1]  # before: M.S N.E; fenced: M.E.p N.v
    other = by_name.get(other_name)
    if other is None and other_name in _bundled_machine_names() - set(by_name):
        return []  # a bundled machine not loaded with this one (a spec checked alone): checked when loaded together
    if other is None:
        message, _ = unknown_name_message("machine", other_name, by_name)
        return [f"trace property '{prop.name}': {message} (or that machine's spec has errors)"]
    out = []
    if prop.form == "before" and member not in {e.name for e in other.events}:
        hint = suggest(member, [e.name for e in other.events])
        out.append(f"trace property '{prop.name}': machine {other_name} has no event '{member}'"
                   + (f"; did you mean '{hint}'?" if hint else ""))
    if prop.form == "fenced" and member not in {v.name for v in other.variables}:
        hint = suggest(member, [v.name for v in other.variables])
        out.append(f"trace property '{prop.name}': machine {other_name} has no variable '{member}'"
                   + (f"; did you mean '{hint}'?" if hint else ""))
    mine = {f.name for f in (*m.keys, *m.variables)}
    theirs = {f.name for f in (*other.keys, *other.variables)}
    for key in prop.per:
        if key not in mine or key not in theirs:
            where = m.name if key not in mine else other_name
            out.append(f"trace property '{prop.name}': '{key}' is not a key field or variable of {where}")
    return out
