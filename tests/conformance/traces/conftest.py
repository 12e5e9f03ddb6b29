"""Generated traces the DuckDB tests share: test_duckdb_props' mutated traces of a seed (every bundled machine, its
`fenced` property added, ~10 CPU-s to generate and check in Python) are written once a session and read by
test_duckdb_props, test_duckstage and test_duckengine. Their files are made read-only, so that a test writing into
them fails instead of changing another test's input."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from .test_duckdb_props import Found, traces, with_fenced


@pytest.fixture(scope="session")
def mutated_traces(tmp_path_factory: pytest.TempPathFactory) -> Callable[[int], tuple[Path, frozenset[Found]]]:
    """`get(seed)`: where the mutated traces of `seed` are (one folder per machine, typed Parquet), and the Python
    checker's trace-property violations of them."""
    made: dict[int, tuple[Path, frozenset[Found]]] = {}

    def get(seed: int) -> tuple[Path, frozenset[Found]]:
        if seed not in made:
            root = tmp_path_factory.mktemp(f"mutated-{seed}")
            found = frozenset(traces(with_fenced(), seed, root, mutate=True))
            for path in root.rglob("*"):
                if path.is_file():
                    os.chmod(path, 0o444)
            made[seed] = (root, found)
        return made[seed]

    return get
