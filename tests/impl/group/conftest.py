from __future__ import annotations

from pathlib import Path

import pytest

from kcoord.impl.runtime.shard import Change

from .helpers import Harness


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(tmp_path)


def make_dead(h: Harness, group_id: str) -> None:
    """Put a classic group in Dead in place, as a request racing the partition's unload would find it."""
    shard = h.shard(group_id)
    table = h.c.ctx.tables.classic
    d = table.decide(shard.get("ClassicGroup", (group_id,)), "Unload", {})
    shard.apply(Change(table, (group_id,), d, {}))
