"""Generated traces the DuckDB tests share: test_duckdb_props' mutated traces of a seed (every bundled machine, its
`fenced` property added, ~10 CPU-s to generate and check in Python) are written once a session and read by
test_duckdb_props, test_duckstage and test_duckengine. Their files are made read-only, so that a test writing into
them fails instead of changing another test's input. The generated rows they start from are kept too: test_duckdb_props'
clean traces of the same seeds start from them."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from .test_duckdb_props import Found, generated, traces, with_fenced


@pytest.fixture(scope="session")
def generated_traces() -> Callable[[int], Mapping[str, list[dict[str, Any]]]]:
    """`get(seed)`: the generated rows the mutated and the clean traces of `seed` start from (every machine, its
    `fenced` property added; ~4 CPU-s a seed), generated once; users copy them (`test_duckdb_props.traces`)."""
    made: dict[int, Mapping[str, list[dict[str, Any]]]] = {}

    def get(seed: int) -> Mapping[str, list[dict[str, Any]]]:
        if seed not in made:
            made[seed] = generated(with_fenced(), seed)
        return made[seed]

    return get


@pytest.fixture(scope="session")
def mutated_traces(tmp_path_factory: pytest.TempPathFactory,
                   generated_traces: Callable[[int], Mapping[str, list[dict[str, Any]]]]
                   ) -> Callable[[int], tuple[Path, frozenset[Found]]]:
    """`get(seed)`: where the mutated traces of `seed` are (one folder per machine, typed Parquet), and the Python
    checker's trace-property violations of them."""
    made: dict[int, tuple[Path, frozenset[Found]]] = {}

    def get(seed: int) -> tuple[Path, frozenset[Found]]:
        if seed not in made:
            root = tmp_path_factory.mktemp(f"mutated-{seed}")
            found = frozenset(traces(with_fenced(), seed, root, mutate=True, made=generated_traces(seed)))
            for path in root.rglob("*"):
                if path.is_file():
                    os.chmod(path, 0o444)
            made[seed] = (root, found)
        return made[seed]

    return get
