"""Fixtures of the in-process tests: every `Cluster` a test started and every coordinator runtime it made is closed
after it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kcoord.impl.cluster import Cluster
from kcoord.impl.runtime.runtime import CoordinatorRuntime


@pytest.fixture(autouse=True)
def _close_started_clusters(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Closes every in-process `Cluster` the test started (its logs' descriptors) and every `CoordinatorRuntime` it
    made (a group or transaction coordinator's: the logs of the partitions it loaded), so that a worker running
    thousands of tests does not accumulate them: the tests that never closed theirs (~57 descriptors a test_cluster
    test; one a test of the group coordinator's `Harness`, 100 a test_integration_txn test) helped leave one xdist
    worker with over 1,023 open, and a later test's `select.select` refused the next (CI12, 2026-11-29). A test that
    closed its own is closed again: nothing happens. The runtimes are closed, not their logs: a `close` of kcoord's
    that forgets a file would still leave it open."""
    started: list[Cluster] = []
    runtimes: list[CoordinatorRuntime] = []
    start = Cluster.start
    make_runtime = CoordinatorRuntime.__init__

    def tracked(self: Cluster, *args: Any, **kwargs: Any) -> Any:
        started.append(self)
        return start(self, *args, **kwargs)

    def tracked_runtime(self: CoordinatorRuntime, *args: Any, **kwargs: Any) -> None:
        runtimes.append(self)
        make_runtime(self, *args, **kwargs)

    monkeypatch.setattr(Cluster, "start", tracked)
    monkeypatch.setattr(CoordinatorRuntime, "__init__", tracked_runtime)
    yield
    for cluster in started:
        cluster.close()
    for runtime in runtimes:
        runtime.close()
