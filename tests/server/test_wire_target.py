"""The wire suite's `Target` leaves no client behind: a copy with other client settings closes its own admin client.

A scenario's admin client left open keeps an IO thread that reconnects to a stopped broker for the rest of the test
session, drawing its back-off jitter from the global `random` module while later property tests run (Hypothesis
then warns that a strategy used `random`).
"""

from __future__ import annotations

import threading
from pathlib import Path

from served_cluster import ServedCluster


def _admin_threads(client_id: str) -> int:
    return sum(1 for t in threading.enumerate() if t.is_alive() and t.name == f"kafka-io-{client_id}")


def test_a_tuned_target_has_its_own_admin_client_and_closes_it(tmp_path: Path) -> None:
    with ServedCluster(tmp_path, 1, trace=False) as served:
        base = served.target(restart=False)
        client_id = base.name("admin")
        try:
            assert base.brokers() == [0]
            assert _admin_threads(client_id) == 1
            with base.tuned(session_timeout_ms=20_000, request_timeout_ms=30_000) as tuned:
                assert (tuned.tuning.session_timeout_ms, tuned.tuning.request_timeout_ms) == (20_000, 30_000)
                assert base.tuning.session_timeout_ms != 20_000 and tuned.run_id == base.run_id
                assert tuned.brokers() == [0]
                assert tuned.admin() is not base.admin()
                assert _admin_threads(client_id) == 2
            assert _admin_threads(client_id) == 1, "the tuned copy's admin client is still running"
            assert base.brokers() == [0]  # the original's admin client was not closed with the copy's
        finally:
            base.close()
        assert _admin_threads(client_id) == 0
