"""What a simulation runs: the workload, the faults and the seeded bugs, as one frozen value.

Owns: `SimConfig` (the seed, the event budget, how many clients of each kind, which faults fire and how often),
`FAULTS` (the names `--faults` accepts) and `parse_faults`. Nothing here reads the environment or the wall clock.
Must not import: `kcoord.model`, `kcoord.conformance`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

#: every fault the simulator can inject, each switchable on its own
FAULTS: tuple[str, ...] = (
    "client_crash",  # a client process dies; a new incarnation starts after a while
    "zombie_producer",  # a crashed producer's old incarnation keeps sending at its old epoch
    "coordinator_failover",  # a coordinator partition moves to another node (mid-transaction, mid-rebalance)
    "marker_response_lost",  # a WriteTxnMarkers response never arrives (the marker was written): the channel retries
    "marker_response_delayed",  # a WriteTxnMarkers response arrives late
    "disk_append_error",  # the next append to a coordinator log fails (EIO)
    "clock_jump",  # the clock jumps forward
    "request_duplicate",  # a client's EndTxn response is lost: it retries, and the first request arrives again later
)

#: mean simulated time between two occurrences of each fault (ms); the injector draws exponential gaps
DEFAULT_FAULT_INTERVAL_MS: dict[str, int] = {
    "client_crash": 4_000,
    "zombie_producer": 0,  # not a timer: a share of producer crashes leave a zombie
    "coordinator_failover": 5_000,
    "marker_response_lost": 1_500,
    "marker_response_delayed": 1_000,
    "disk_append_error": 2_500,
    "clock_jump": 6_000,
    "request_duplicate": 0,  # not a timer: a share of EndTxn requests lose their response
}


def parse_faults(text: str) -> frozenset[str]:
    """`all`, `none`, or a comma-separated list of fault names; unknown names raise ValueError naming them."""
    text = text.strip()
    if text == "all":
        return frozenset(FAULTS)
    if text in ("none", ""):
        return frozenset()
    names = [n.strip().replace("-", "_") for n in text.split(",") if n.strip()]
    unknown = sorted(set(names) - set(FAULTS))
    if unknown:
        raise ValueError(f"unknown fault(s) {', '.join(unknown)}; expected all, none or some of {', '.join(FAULTS)}")
    return frozenset(names)


@dataclass(frozen=True, slots=True)
class SimConfig:
    """One simulation. The same config (seed included) gives byte-identical traces."""

    seed: int = 0
    events: int = 5_000  # trace rows to write; the run stops at the first step that reaches it
    producers: int = 3  # transactional producers (half TV2, half TV1 clients)
    classic_consumers: int = 3  # members of classic groups (JoinGroup/SyncGroup/Heartbeat, client-side assignor)
    consumers: int = 3  # members of KIP-848 consumer groups (ConsumerGroupHeartbeat, server-side assignor)
    streams: int = 2  # consume-transform-produce tasks (transactions with offsets, TV2)
    veterans: int = 1  # transactional ids that come from an older log with an almost exhausted epoch
    nodes: int = 3
    txn_partitions: int = 5  # __transaction_state partitions
    group_partitions: int = 5  # __consumer_offsets partitions
    topic_partitions: int = 4  # partitions of each data topic
    faults: frozenset[str] = frozenset(FAULTS)
    fault_interval_ms: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_FAULT_INTERVAL_MS))
    zombie_share: float = 0.5  # of producer crashes, with zombie_producer on
    duplicate_share: float = 0.15  # of EndTxn requests, with request_duplicate on
    fence_disk_error_share: float = 0.3  # of restarts after a crash mid-transaction, with disk_append_error on: the
    # fence's append fails
    txn_timeout_ms: int = 10_000
    materialize_delay_ms: tuple[int, int] = (1, 15)  # how long the group coordinator takes to materialise offsets
    tick_ms: int = 5  # the loop's time granularity: events due within one tick run together, then the cluster settles
    max_steps: int = 50_000_000  # a bound on scheduler steps (a run that makes no trace progress stops here)

    def __post_init__(self) -> None:
        if self.events <= 0:
            raise ValueError(f"events must be positive, got {self.events}")
        if self.tick_ms < 1:
            raise ValueError(f"tick_ms must be at least 1, got {self.tick_ms}")
        if self.nodes < 1:
            raise ValueError(f"nodes must be at least 1, got {self.nodes}")
        counts = (self.producers, self.classic_consumers, self.consumers, self.streams, self.veterans)
        if min(counts) < 0 or sum(counts) == 0:
            raise ValueError("client counts must be >= 0 and at least one client is needed")
        unknown = sorted(set(self.faults) - set(FAULTS))
        if unknown:
            raise ValueError(f"unknown fault(s): {', '.join(unknown)}")

    def with_faults(self, faults: Iterable[str]) -> SimConfig:
        from dataclasses import replace

        return replace(self, faults=frozenset(faults))
