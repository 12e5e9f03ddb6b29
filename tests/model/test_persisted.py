"""The persisted-step relation: derived from the spec, committed, proved sound, and changed by a changed spec.

- `kcoord verify`'s obligations hold for the committed Transaction relation (every writing path of up to DEPTH + 1
  transitions lands in it).
- Each clause is inhabited by a real write: z3 finds two records the clause accepts and a path of the spec that writes
  the second after the first; firing that path with the Python evaluator gives a post-state the generated Python
  atoms accept (the generated code, z3 and the evaluator agree).
- Mutating the spec (an effect, a `writes` flag) changes the derivation, and the committed relation then fails the
  mutant's obligations with a counterexample.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest
import z3

from kcoord.model import ir
from kcoord.model.diagnostics import SourceFile
from kcoord.model.loader import bundled_machines, load_sources
from kcoord.model.persisted import DEPTH, Deriver, derive, path_formula, writing_paths
from kcoord.model.pretty import render
from kcoord.model.pyexpr import PythonEvaluator
from kcoord.model.steprel import Relation, from_module
from kcoord.model.verify_persisted import _readable_model, persisted_results
from kcoord.model.z3backend import frame_values

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def transaction() -> ir.Machine:
    return bundled_machines()["Transaction"]


@pytest.fixture(scope="module")
def committed(transaction: ir.Machine) -> Relation:
    module = importlib.import_module("kcoord.impl._generated.transaction_persisted")
    assert transaction.source_sha256 == module.SPEC_SHA256, "stale: run `kcoord gen`"
    return from_module(module, transaction)


def test_every_writing_path_is_in_the_committed_relation(transaction: ir.Machine, committed: Relation) -> None:
    results = persisted_results(transaction, committed)
    assert len(results) == len(list(writing_paths(transaction, DEPTH + 1)))
    assert [r.title for r in results if r.status != "holds"] == []
    assert any("one transition longer than derived" in r.title for r in results)


def test_the_relation_reads_like_the_spec(committed: Relation) -> None:
    """A few clauses, as a person would check them against spec/transaction.sm."""
    by_label = {(c.source, c.target, c.label): [render(a) for a in c.atoms] for c in committed.clauses}
    add = by_label[("Ongoing", "Ongoing", "AddPartitions#19")]
    assert "partitions subset partitions'" in add and "producer_epoch' == producer_epoch" in add
    bump = by_label[("Empty", "Empty", "InitProducerId#8")]
    assert "producer_epoch' == producer_epoch + 1" in bump and "producer_id' == producer_id" in bump
    fences = [atoms for (source, target, label), atoms in by_label.items()
              if (source, target) == ("Ongoing", "PrepareAbort") and "FenceAbort" in label]
    # the abort after a fence keeps the fence's epoch under every version (KAFKA-19367): one bump in all, never two
    assert any("producer_epoch' == producer_epoch + 1" in atoms for atoms in fences)
    assert not any("producer_epoch' == producer_epoch + 2" in atoms for atoms in fences)
    assert ("CompleteCommit", "Dead", "Expire#63") in by_label  # a tombstone


def _inhabitant(d: Deriver, committed: Relation, clause_index: int) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """A concrete path of the spec whose first and written records satisfy the clause: (pre-state, post-state)."""
    clause = committed.clauses[clause_index]
    m = d.m
    assert m.persist is not None
    for start, rows in writing_paths(m, DEPTH):
        if start != clause.source or tuple(t.index for t in rows) != clause.rows:
            continue
        f = path_formula(d.enc, m.persist, start, rows)
        solver = z3.Solver(ctx=d.enc.ctx)
        solver.add(f.body)
        solver.add(d.clause_term(clause, f.pre, f.post))
        if solver.check() != z3.sat:
            return None
        model = _readable_model(d.enc, solver, f)
        py = PythonEvaluator()
        first, _ = frame_values(d.enc, model, f.steps[0][0])
        state: dict[str, Any] = first
        for step, event, t in f.steps:
            _, args = frame_values(d.enc, model, step, event)
            assert py.holds(t.guard, state, args), f"{t.label}: z3's arguments do not enable it in Python"
            state = py.fire(t, state, args)
        return first, state
    return None


def test_every_clause_is_a_real_write_and_the_generated_atoms_agree(transaction: ir.Machine,
                                                                     committed: Relation) -> None:
    module = importlib.import_module("kcoord.impl._generated.transaction_persisted")
    d = Deriver(transaction)
    for i, clause in enumerate(committed.clauses):
        found = _inhabitant(d, committed, i)
        assert found is not None, f"clause {clause.label} ({clause.source} -> {clause.target}) has no real write"
        before, after = found
        assert after["state"] == clause.target
        if clause.tombstone:
            continue
        generated = module.CLAUSES[i][5]
        failing = [text for text, fn in generated if not fn(before, after)]
        assert failing == [], f"{clause.label}: the generated atoms {failing} reject a write the spec makes"


def _mutant(machine: ir.Machine, old: str, new: str) -> ir.Machine:
    text = (ROOT / machine.path).read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    machines, diags = load_sources([SourceFile(machine.path, text.replace(old, new))])
    assert not diags.has_errors, diags.render()
    (mutant,) = machines
    return mutant


def test_a_changed_effect_changes_the_derivation_and_fails_the_old_relation(transaction: ir.Machine,
                                                                             committed: Relation) -> None:
    old = ("    from Ongoing -> PrepareCommit \"bump the epoch; on exhaustion also pick the next producer id\" when "
           "result == COMMIT\n      writes\n      ensures producer_epoch' == bumped_epoch,")
    mutant = _mutant(transaction, old, old.replace("== bumped_epoch", "== producer_epoch"))
    derived = derive(mutant)
    label = next(t.label for t in mutant.transitions if t.event == "EndTxnV2" and t.target == "PrepareCommit")
    before = {render(a) for c in committed.clauses if c.label.startswith(label) for a in c.atoms}
    after = {render(a) for c in derived.clauses if c.label.startswith(label) for a in c.atoms}
    assert "producer_epoch' == producer_epoch + 1" in before - after
    failed = [r for r in persisted_results(mutant, committed) if r.status == "fails"]
    assert failed and all(r.counterexample is not None for r in failed)
    assert any(label in r.title for r in failed)


def test_a_write_flag_changes_the_derivation(transaction: ir.Machine, committed: Relation) -> None:
    """FenceFailed writing its in-memory bump would let an Ongoing record follow another with only the epoch bumped."""
    old = ("    from Ongoing -> Ongoing when server_txn_version < 2\n      ensures producer_epoch' == fenced_epoch, "
           "last_producer_epoch' == NO_EPOCH, has_failed_epoch_fence' == true")
    mutant = _mutant(transaction, old, old.replace("< 2\n", "< 2\n      writes\n"))
    derived = derive(mutant)
    fence_failed = next(t.index for t in mutant.transitions if t.event == "FenceFailed")  # (the TV<2 edge, first)
    assert not any(c.rows == (fence_failed,) for c in committed.clauses)
    assert any(c.rows == (fence_failed,) and (c.source, c.target) == ("Ongoing", "Ongoing") for c in derived.clauses)
    failed = [r for r in persisted_results(mutant, committed) if r.status == "fails"]
    assert any("FenceFailed" in r.title for r in failed)
