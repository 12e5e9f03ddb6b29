"""Generators: everything that is written from the IR (runtime tables in Python and in Rust, diagrams, generated
tests), and the `Errors` enum of the implementation (from `kcoord.model.kafka_errors`).

Owns: `generate_all` (the committed outputs for a set of machines — runtime tables, their Rust twins, diagrams,
persisted-step relations — and the errors files), `write` and `stale` (the freshness check used by `kcoord gen
--check` and the test suite). Each output kind lives in its own module.
Must not import: z3, pyspark.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from .. import ir
from ..steprel import Relation
from .common import GeneratedFile
from .diagrams import diagram_files
from .errors import errors_file, errors_rust_file
from .persisted import persisted_file
from .rust import rust_files
from .tables import table_file


def generate_all(machines: Iterable[ir.Machine], *, svg: bool = True,
                 relations: Mapping[str, Relation] | None = None) -> list[GeneratedFile]:
    """Every committed generated file, sorted by path. `relations` are the persisted-step relations of the machines
    with a `persist` declaration (`kcoord.model.persisted.derive_all`: derived with z3, which this package does not
    import); a machine with one and no relation given gets no relation module."""
    machines = list(machines)
    formats = ("dot", "svg", "mermaid") if svg else ("dot", "mermaid")
    files: list[GeneratedFile] = [errors_file(), errors_rust_file()]
    for m in sorted(machines, key=lambda m: m.name):
        files.append(table_file(m))
        files.extend(diagram_files(m, formats))
        relation = (relations or {}).get(m.name)
        if relation is not None:
            files.append(persisted_file(m, relation))
    files.extend(rust_files(machines))
    return sorted(files, key=lambda f: f.path)


def stale(files: Iterable[GeneratedFile], root: Path) -> list[str]:
    """Paths whose committed content differs from what the generator produces now (or that are missing)."""
    out = []
    for f in files:
        target = root / f.path
        if not target.exists() or target.read_bytes() != f.content:
            out.append(f.path)
    return out


def write(files: Iterable[GeneratedFile], root: Path) -> list[str]:
    """Write the files that changed; returns their paths."""
    changed = stale(files, root)
    wanted = {f.path: f for f in files}
    for path in changed:
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(wanted[path].content)
    return changed
