"""The catalogue of seeded bugs: known Kafka coordinator bugs (and protocol mistakes) re-introduced on purpose, so that
the trace checkers can be shown to catch them — Hypothesis's `quality/` tests play the same role.

Owns: `SeededBug` (name, what the bug is, the switch that turns it on, which check must report it, and a documented
seed on which a short simulation makes it fire), `BUGS`, `bug(name)` and `enable(name, config)`. Each switch is a
real behavioural change in a coordinator, off by default: a flag of `ClusterConfig`, `TxnConfig` or `GroupConfig`
that the coordinator reads only in the one branch that deviates.

The seeds and run lengths are checked by `tests/conformance/test_bugs.py` (the bug fires and the Python reference
checker reports it; the same seed without the bug gives no violation).
Must not import: pyspark, kcoord.cli.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from kcoord.impl.cluster import ClusterConfig


@dataclass(frozen=True, slots=True)
class SeededBug:
    name: str  # what `kcoord simulate --bug NAME` takes
    reference: str  # where the bug is described
    description: str
    switch: str  # the config flag that turns it on
    machine: str  # the machine whose trace shows it
    checks: tuple[tuple[str, str], ...]  # (check, name) pairs that report it; name "" = any property of that check
    seed: int  # a seed on which a short simulation makes it fire
    events: int  # how many trace rows that simulation writes
    workload: dict[str, Any] = field(default_factory=dict)  # SimConfig overrides that make it fire early

    def enable(self, config: ClusterConfig) -> ClusterConfig:
        """`config` with this bug switched on."""
        owner, flag = self.switch.split(".")
        on: dict[str, Any] = {flag: True}
        if owner == "ClusterConfig":
            return replace(config, **on)
        if owner == "TxnConfig":
            return replace(config, txn=replace(config.txn, **on))
        if owner == "GroupConfig":
            return replace(config, groups=replace(config.groups, **on))
        raise ValueError(f"{self.name}: unknown switch owner {owner!r}")


#: producers that crash mid-transaction and come back (their InitProducerId fences the open transaction), and the
#: fence's append to the coordinator log fails
_FENCING = {"faults": frozenset({"client_crash", "disk_append_error"}),
            "fault_interval_ms": {"client_crash": 600, "disk_append_error": 100_000_000}, "fence_disk_error_share": 1.0}

BUGS: dict[str, SeededBug] = {b.name: b for b in (
    SeededBug(
        "KAFKA-17507", "https://issues.apache.org/jira/browse/KAFKA-17507",
        "The group coordinator answers a COMMIT marker for __consumer_offsets before the transaction's offsets are "
        "materialised; the transaction coordinator then writes CompleteCommit while the offsets are still pending, and "
        "the producer's next TxnOffsetCommit is not held back (the old marker materialises it too).",
        "ClusterConfig.bug_kafka_17507", "Transaction", (("before", "commit_after_markers"),), 3, 1_500,
        {"producers": 0, "classic_consumers": 0, "consumers": 0, "streams": 2, "veterans": 0, "faults": frozenset()}),
    SeededBug(
        "KAFKA-16147", "https://issues.apache.org/jira/browse/KAFKA-16147",
        "A KIP-848 consumer group hands a partition to a member while another member still owns it or has it pending "
        "revocation (the other members' holdings are not looked at), so two members hold it at once.",
        "GroupConfig.bug_kafka_16147", "ConsumerGroupMember",
        (("exclusive", "exclusive_partition_epochs"), ("exclusive", "exclusive_assignment")), 1, 1_500,
        {"producers": 0, "classic_consumers": 0, "consumers": 6, "streams": 0, "veterans": 0,
         "faults": frozenset()}),
    SeededBug(
        "KAFKA-9666", "https://issues.apache.org/jira/browse/KAFKA-9666",
        "A fence (InitProducerId on an open transaction) whose PrepareAbort append fails keeps the bumped epoch in "
        "memory without remembering that the fence failed, so every retry bumps the epoch again, and a reload goes "
        "back to the epoch on disk.",
        "TxnConfig.bug_kafka_9666", "Transaction",
        (("effect_mismatch", "has_failed_epoch_fence"), ("frame_mismatch", "")), 1,
        3_000, {"producers": 4, "classic_consumers": 0, "consumers": 0, "streams": 0, "veterans": 0,
                       **_FENCING}),
    SeededBug(
        "fence-without-bump", "kafka-reference.md §1 (prepareFenceProducerEpoch)",
        "A fence (InitProducerId or a timeout on an open transaction) keeps the producer epoch instead of bumping it, "
        "so the old producer is not fenced by the fence itself.",
        "TxnConfig.bug_fence_without_bump", "Transaction", (("step", "fence_bumps"),), 1, 3_000,
        {"producers": 4, "classic_consumers": 0, "consumers": 0, "streams": 0, "veterans": 0,
         "faults": frozenset({"client_crash"}), "fault_interval_ms": {"client_crash": 600}}),
    SeededBug(
        "endtxn-retry-commits-later", "KIP-890; Jepsen's Kafka analysis (2022)",
        "Transactions V2: a late copy of the previous transaction's EndTxn (its epoch one behind) is taken for the "
        "transaction open now and commits it, with whatever it holds so far.",
        "TxnConfig.bug_endtxn_retry_commits_later", "Transaction", (("guard_false", ""), ("wrong_error", "")),
        1, 2_000,
        {"producers": 4, "classic_consumers": 0, "consumers": 0, "streams": 0, "veterans": 0,
         "faults": frozenset({"request_duplicate"}), "duplicate_share": 0.5}),
    SeededBug(
        "epoch-overflow-no-rotation", "KIP-890 (epoch overflow); kafka-reference.md §1 (prepareProducerIdRotation)",
        "When the producer epoch is exhausted the coordinator bumps it to the maximum on the same producer id instead "
        "of rotating to a new producer id, so later fences cannot move the epoch.",
        "TxnConfig.bug_epoch_overflow_no_rotation", "Transaction", (("effect_mismatch", "next_producer_id"),),
        1, 2_000,
        {"producers": 0, "classic_consumers": 0, "consumers": 0, "streams": 0, "veterans": 2, "faults": frozenset()}),
)}


def bug(name: str) -> SeededBug:
    """The bug called `name` (case-insensitive); ValueError listing the known names otherwise."""
    found = {b.lower(): v for b, v in BUGS.items()}.get(name.strip().lower())
    if found is None:
        raise ValueError(f"unknown bug {name!r}; known: {', '.join(BUGS)}")
    return found


def enable(name: str, config: ClusterConfig) -> ClusterConfig:
    return bug(name).enable(config)
