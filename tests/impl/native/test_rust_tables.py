"""Every machine's decision table generated as Rust (impl/_generated/rust/, what the compiled server decides with)
answers as its Python table does: 20,000 random cases per machine (`kcoord.conformance.rust_tables`: instances in any
state, the machine's own constants and their neighbours, mutants of cases that matched a row) decided by both,
the row, the post-state or the reason for a refusal compared case by case by `check-tables`."""

from __future__ import annotations

from pathlib import Path

import pytest

from kcoord.conformance.rust_tables import check
from kcoord.model.loader import bundled_machines

MACHINES = bundled_machines()
CASES = 20_000


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_the_rust_table_answers_as_the_python_table(name: str, native_release: Path) -> None:
    result = check(native_release / "check-tables", MACHINES[name], CASES)
    assert result.returncode == 0, result.stderr or result.stdout
    assert f"{name}: {CASES} cases, the Rust table's answers equal to the Python table's" in result.stdout
