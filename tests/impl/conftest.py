"""Fixtures of the in-process tests: every `Cluster` a test started is closed after it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kcoord.impl.cluster import Cluster


@pytest.fixture(autouse=True)
def _close_started_clusters(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Closes every in-process `Cluster` the test started (its logs' descriptors), so that a worker running thousands
    of tests does not accumulate them: the tests that never closed theirs (~57 descriptors a test_cluster test) helped
    leave one xdist worker with over 1,023 open, and a later test's `select.select` refused the next (CI12, 2026-11-29).
    A test that closed its own is closed again: nothing happens."""
    started: list[Cluster] = []
    start = Cluster.start

    def tracked(self: Cluster, *args: Any, **kwargs: Any) -> Any:
        started.append(self)
        return start(self, *args, **kwargs)

    monkeypatch.setattr(Cluster, "start", tracked)
    yield
    for cluster in started:
        cluster.close()
