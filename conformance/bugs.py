"""The catalogue of seeded bugs: known Kafka coordinator bugs (and protocol mistakes) re-introduced on purpose, so that
the trace checkers can be shown to catch them — Hypothesis's `quality/` tests play the same role.

Owns: `KnownBug` (the `kcoord.impl.seeded.SeededBug` that switches it on, where the bug is described, what it is,
which check must report it, and a documented seed on which a short simulation makes it fire), `BUGS`, `bug(name)` and
`enable(name, config)`. Each is a real behavioural change in a coordinator, off by default: a member of
`ClusterConfig.seeded_bugs`, which the coordinator applies through its one hook module (`impl/txn/seeded.py`,
`impl/group/seeded.py`).

The seeds and run lengths are checked by `tests/conformance/test_bugs.py` (the bug fires and the Python reference
checker reports it; the same seed without the bug gives no violation).
Must not import: pyspark, kcoord.cli.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from kcoord.impl.cluster import ClusterConfig
from kcoord.impl.seeded import SeededBug


@dataclass(frozen=True, slots=True)
class KnownBug:
    bug: SeededBug  # the switch
    reference: str  # where the bug is described
    description: str
    machine: str  # the machine whose trace shows it
    checks: tuple[tuple[str, str], ...]  # (check, name) pairs that report it; name "" = any property of that check
    seed: int  # a seed on which a short simulation makes it fire
    events: int  # how many trace rows that simulation writes
    workload: dict[str, Any] = field(default_factory=dict)  # SimConfig overrides that make it fire early

    @property
    def name(self) -> str:
        """What `kcoord simulate --bug NAME` takes."""
        return self.bug.value

    @property
    def switch(self) -> str:
        return f"SeededBug.{self.bug.name}"

    def enable(self, config: ClusterConfig) -> ClusterConfig:
        """`config` with this bug switched on."""
        return replace(config, seeded_bugs=config.seeded_bugs | {self.bug})


#: producers that crash mid-transaction and come back (their InitProducerId fences the open transaction), and the
#: fence's append to the coordinator log fails
_FENCING = {"faults": frozenset({"client_crash", "disk_append_error"}),
            "fault_interval_ms": {"client_crash": 600, "disk_append_error": 100_000_000}, "fence_disk_error_share": 1.0}

BUGS: dict[str, KnownBug] = {b.name: b for b in (
    KnownBug(
        SeededBug.KAFKA_17507, "https://issues.apache.org/jira/browse/KAFKA-17507",
        "The group coordinator answers a COMMIT marker for __consumer_offsets before the transaction's offsets are "
        "materialised; the transaction coordinator then writes CompleteCommit while the offsets are still pending, and "
        "the producer's next TxnOffsetCommit is not held back (the old marker materialises it too).",
        "Transaction", (("before", "commit_after_markers"),), 3, 1_500,
        {"producers": 0, "classic_consumers": 0, "consumers": 0, "streams": 2, "veterans": 0, "faults": frozenset()}),
    KnownBug(
        SeededBug.KAFKA_16147, "https://issues.apache.org/jira/browse/KAFKA-16147",
        "A KIP-848 consumer group hands a partition to a member while another member still owns it or has it pending "
        "revocation (the other members' holdings are not looked at), so two members hold it at once.",
        "ConsumerGroupMember",
        (("exclusive", "exclusive_partition_epochs"), ("exclusive", "exclusive_assignment")), 1, 1_500,
        {"producers": 0, "classic_consumers": 0, "consumers": 6, "streams": 0, "veterans": 0,
         "faults": frozenset()}),
    KnownBug(
        SeededBug.KAFKA_9666, "https://issues.apache.org/jira/browse/KAFKA-9666",
        "A fence (InitProducerId on an open transaction) whose PrepareAbort append fails keeps the bumped epoch in "
        "memory without remembering that the fence failed, so every retry bumps the epoch again, and a reload goes "
        "back to the epoch on disk.",
        "Transaction", (("effect_mismatch", "has_failed_epoch_fence"), ("frame_mismatch", "")), 1, 3_000,
        {"producers": 4, "classic_consumers": 0, "consumers": 0, "streams": 0, "veterans": 0, **_FENCING}),
    KnownBug(
        SeededBug.FENCE_WITHOUT_BUMP, "kafka-reference.md §1 (prepareFenceProducerEpoch)",
        "A fence (InitProducerId or a timeout on an open transaction) keeps the producer epoch instead of bumping it, "
        "so the old producer is not fenced by the fence itself.",
        "Transaction", (("step", "fence_bumps"),), 1, 3_000,
        {"producers": 4, "classic_consumers": 0, "consumers": 0, "streams": 0, "veterans": 0,
         "faults": frozenset({"client_crash"}), "fault_interval_ms": {"client_crash": 600}}),
    KnownBug(
        SeededBug.ENDTXN_RETRY_COMMITS_LATER, "KIP-890; Jepsen's Kafka analysis (2022)",
        "Transactions V2: a late copy of the previous transaction's EndTxn (its epoch one behind) is taken for the "
        "transaction open now and commits it, with whatever it holds so far.",
        "Transaction", (("guard_false", ""), ("wrong_error", "")), 1, 2_000,
        {"producers": 4, "classic_consumers": 0, "consumers": 0, "streams": 0, "veterans": 0,
         "faults": frozenset({"request_duplicate"}), "duplicate_share": 0.5}),
    KnownBug(
        SeededBug.EPOCH_OVERFLOW_NO_ROTATION,
        "KIP-890 (epoch overflow); kafka-reference.md §1 (prepareProducerIdRotation)",
        "When the producer epoch is exhausted the coordinator bumps it to the maximum on the same producer id instead "
        "of rotating to a new producer id, so later fences cannot move the epoch.",
        "Transaction", (("effect_mismatch", "next_producer_id"),), 1, 2_000,
        {"producers": 0, "classic_consumers": 0, "consumers": 0, "streams": 0, "veterans": 2, "faults": frozenset()}),
)}


def bug(name: str) -> KnownBug:
    """The bug called `name` (case-insensitive); ValueError listing the known names otherwise."""
    found = {b.lower(): v for b, v in BUGS.items()}.get(name.strip().lower())
    if found is None:
        raise ValueError(f"unknown bug {name!r}; known: {', '.join(BUGS)}")
    return found


def enable(name: str, config: ClusterConfig) -> ClusterConfig:
    return bug(name).enable(config)
