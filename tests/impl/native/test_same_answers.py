"""The compiled server answers a transactional producer's requests as `kcoord serve` does, byte for byte: set-up,
Transactions V2 transactions of two producers and V1 transactions of a third (commits and aborts), and eleven
errors of those paths, sent to both (`benchmarks/compiled_server/same_answers.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.compiled_server.same_answers import compare


@pytest.mark.wire
def test_the_compiled_server_answers_as_kcoord_serve(native_release: Path) -> None:
    count, difference = compare(str(native_release / "kcoord-native"))
    assert difference is None, difference
    assert count == 50
