"""The persisted-step relations the checkers use: the committed generated one, or derived when there is none.

Owns: `relation_for(machine)` — the relation of a machine with a `persist` declaration: the module `kcoord gen` wrote
(`kcoord.impl._generated.<machine>_persisted`) when it was generated from this very spec (same sha256), else derived
now with z3 (a spec given with `--spec`, or a bundled spec edited without `kcoord gen`: a few seconds).
Must not import: pyspark, kcoord.cli.
"""

from __future__ import annotations

import functools
import importlib

from kcoord.model import ir
from kcoord.model.check import snake_case
from kcoord.model.steprel import Relation, from_module


def committed_relation(m: ir.Machine) -> Relation | None:
    """The generated relation of `m`, if one was generated from this spec text."""
    try:
        module = importlib.import_module(f"kcoord.impl._generated.{snake_case(m.name)}_persisted")
    except ModuleNotFoundError:
        return None
    if getattr(module, "SPEC_SHA256", None) != m.source_sha256:
        return None
    return from_module(module, m)


@functools.lru_cache(maxsize=16)
def relation_for(m: ir.Machine) -> Relation | None:
    """`m`'s relation (None without a `persist` declaration)."""
    if m.persist is None:
        return None
    committed = committed_relation(m)
    if committed is not None:
        return committed
    from kcoord.model.persisted import derive

    return derive(m)
