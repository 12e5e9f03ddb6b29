"""A `kcoord serve` cluster for integration tests: real listeners on free loopback ports, short timeouts, restart and
stop-node hooks, and the conformance suite's `Target` pointing at it.

Owns: `ServedCluster` (start, `restart` on the same ports and data directory, `stop_node`, `call` on the server's loop,
the trace directory), `free_port_block`, `fast_cluster_config` (Kafka's timeouts scaled down so a rebalance takes
milliseconds, not seconds) and `target_for`. Used by every module in tests/server (one server per module).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from kcoord.conformance.ports import free_port_block, port_free
from kcoord.conformance.wire.target import Target, Tuning
from kcoord.impl.cluster import ClusterConfig
from kcoord.impl.group.config import GroupConfig
from kcoord.impl.server.embedded import ServerThread
from kcoord.impl.server.serve import ServeOptions
from kcoord.impl.storage.log import Durability
from kcoord.impl.txn.config import TxnConfig

T = TypeVar("T")

# Clients tuned for quick rebalances; session timeouts stay at Kafka's minimum so a member that is merely slow on a
# loaded machine is not expelled.
FAST_TUNING = Tuning(heartbeat_interval_ms=200, session_timeout_ms=6_000, max_poll_interval_ms=20_000,
                     request_timeout_ms=10_000)


def fast_cluster_config(**txn: Any) -> ClusterConfig:
    """Kafka 4.0's defaults with the waits that only slow tests down made short."""
    return ClusterConfig(
        groups=GroupConfig(initial_rebalance_delay_ms=0, consumer_heartbeat_interval_ms=300,
                           consumer_session_timeout_ms=6_000,
                           offsets_retention_check_interval_ms=86_400_000),  # no cleanup tick in a run (conftest.py)
        txn=TxnConfig(**{"abort_interval_ms": 1_000, **txn}),
        durability=Durability.group(2, 1 << 20),  # group commit: still nothing acknowledged before it is on disk
    )


class ServedCluster:
    """`kcoord serve` in a background thread, restartable on the same ports and data."""

    def __init__(self, root: Path, nodes: int = 1, *, metrics: bool = False, trace: bool = True,
                 config: ClusterConfig | None = None, max_frame_bytes: int | None = None) -> None:
        self.root = root
        self.data_dir = root / "data"
        self.trace_dir = root / "traces"
        self.nodes = nodes
        self.port = free_port_block(nodes)
        extra: dict[str, Any] = {} if max_frame_bytes is None else {"max_frame_bytes": max_frame_bytes}
        self.options = ServeOptions(data_dir=self.data_dir, port=self.port, nodes=nodes,
                                    trace_out=self.trace_dir if trace else None, metrics_port=0 if metrics else None,
                                    cluster=config or fast_cluster_config(), **extra)
        self.thread: ServerThread | None = None
        self.restarts = 0

    def start(self) -> ServedCluster:
        # every run of the server appends its own part files to the same machine folders of `trace_dir`
        self.thread = ServerThread(self.options).start()
        return self

    def stop(self) -> None:
        if self.thread is not None:
            self.thread.stop()
            self.thread = None

    def restart(self) -> None:
        """Stop (flushing everything) and start again on the same ports and data directory."""
        self.stop()
        deadline = time.monotonic() + 10
        while not all(port_free(self.port + i) for i in range(self.nodes)):
            if time.monotonic() > deadline:
                raise RuntimeError(f"ports {self.port}..{self.port + self.nodes - 1} still busy after the stop")
            time.sleep(0.05)
        self.start()
        self.restarts += 1

    def stop_node(self, node_id: int) -> None:
        assert self.thread is not None
        self.thread.run(self.thread.server.stop_node(node_id))

    def call(self, fn: Callable[[], T]) -> T:
        """Run `fn` on the server's loop thread (the only safe place to look at the cluster)."""
        assert self.thread is not None
        return self.thread.call(fn)

    @property
    def server(self) -> Any:
        assert self.thread is not None
        return self.thread.server

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{self.port + i}" for i in range(self.nodes))

    def target(self, *, restart: bool = True, stop_node: bool = False) -> Target:
        return Target(self.bootstrap, timeout_s=60.0, tuning=FAST_TUNING,
                      restart=self.restart if restart else None, stop_node=self.stop_node if stop_node else None)

    def __enter__(self) -> ServedCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            self.stop()
