"""Persisted-step relations as data: what `kcoord.model.persisted` derives and the generators and checkers read.

Owns: `Clause` and `Relation` (no z3 here, so the generator and the checkers can use them without the solver).
A relation says which record of a key may follow which: the disjunction of its clauses whose states match the two
records; a clause is a conjunction of atoms over the previous record (plain names) and the next one (primed names)
and the key fields.
Must not import: lark, z3, pyspark.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import ir


@dataclass(frozen=True, slots=True)
class Clause:
    """One way a record can follow another: the rows taken (only the last writes), the two records' states, and the
    atoms that must all hold. Atoms read the previous record as plain names and the next one primed."""

    label: str  # "InitProducerId#11 ; FenceAbort#55"
    rows: tuple[int, ...]
    source: str  # the state the previous record holds (the state the path starts in)
    target: str  # the state the next record holds; a final state for a tombstone
    tombstone: bool
    atoms: tuple[ir.Expr, ...]


@dataclass(frozen=True, slots=True)
class Relation:
    machine: str
    record: str
    fields: tuple[str, ...]  # persisted variables
    state: bool  # the record carries the state (else `source`/`target` are not in the log)
    depth: int
    clauses: tuple[Clause, ...]

    def between(self, source: str | None, target: str | None, tombstone: bool) -> list[Clause]:
        """The clauses for a pair of records (states ignored when the record does not carry them)."""
        return [c for c in self.clauses if c.tombstone == tombstone
                and (not self.state or (c.source == source and (tombstone or c.target == target)))]


def from_module(module: Any, machine: ir.Machine) -> Relation:
    """The relation a generated `<machine>_persisted` module holds (its atoms rebuilt from their data form)."""
    from .irdata import from_data

    clauses = tuple(Clause(label, tuple(rows), source, target, tombstone,
                           tuple(from_data(d, machine) for d in data))
                    for (label, rows, source, target, tombstone, _), data in zip(module.CLAUSES, module.ATOMS,
                                                                                   strict=True))
    return Relation(module.MACHINE, module.RECORD, tuple(module.FIELDS), bool(module.STATE_PERSISTED),
                    int(module.DEPTH), clauses)
