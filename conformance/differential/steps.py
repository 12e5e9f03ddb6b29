"""What a fuzzer program is made of: steps of raw clients, and the hypothesis strategy that draws programs.

Owns: `Step` (a kind, the actor doing it and two knobs; plain data, so a shrunk program prints as Python that the
regression tests replay), `KINDS` (what each kind sends), `FOCI` and `programs` (a program draws a focus — classic
groups, KIP-848 groups, transactions, or all of them — and then up to `max_steps` steps of that focus; at most one
`wait`, the step that lets session, rebalance and transaction timeouts expire).

Actors: classic members 0-2 (`join` with `flag` = static membership: a group instance id), KIP-848 members 0-1,
producers 0-2 (`init_pid` with `value` 0 or 1: transactional id t0 or t1; 2: an idempotent producer; `flag`: send the
producer id and epoch it has, KIP-360's bump). `value` picks a partition (value % 2) and, where it says so, an
offset or a sequence skew.
Must not import: `kcoord.impl`.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

#: kind -> what it sends
KINDS: dict[str, str] = {
    "join": "JoinGroup (again with the member id when the broker asks for one, as clients do); flag: static",
    "sync": "SyncGroup; the leader sends every member's assignment (partitions round robin by actor)",
    "heartbeat": "Heartbeat",
    "leave": "LeaveGroup (v4, the member and its instance id)",
    "commit": "OffsetCommit of offset `value` on partition value % 2 with the member's generation; flag: as an "
              "admin (generation -1, no member)",
    "fetch_offsets": "OffsetFetch of both partitions; flag: require_stable",
    "describe_group": "DescribeGroups",
    "restart_member": "the member's client restarts: its member id and generation are forgotten",
    "cg_join": "ConsumerGroupHeartbeat with epoch 0 (join, subscribed to the topic); flag: static (decided by the "
               "member's first join: a client's group.instance.id is its configuration)",
    "cg_heartbeat": "ConsumerGroupHeartbeat with the member's epoch and the partitions it owns",
    "cg_leave": "ConsumerGroupHeartbeat with epoch -1 (-2 for a static member)",
    "cg_describe": "ConsumerGroupDescribe",
    "cg_commit": "OffsetCommit v9 of offset `value` with the KIP-848 member's id and epoch",
    "init_pid": "InitProducerId (value 0/1: transactional id t0/t1; 2: idempotent); flag: with its id and epoch",
    "add_partitions": "AddPartitionsToTxn of partition value % 2",
    "produce": "Produce one record to partition value % 2 with the producer's id, epoch and next sequence "
               "(value // 2 % 3: 1 skips a sequence, 2 repeats the last batch); flag: transactional",
    "add_offsets": "AddOffsetsToTxn for the classic group",
    "txn_commit_offsets": "TxnOffsetCommit of offset `value` on partition value % 2; flag: with classic member 0's "
                          "generation and member id",
    "end_txn": "EndTxn; flag: commit (else abort)",
    "list_offsets": "ListOffsets latest of partition value % 2; flag: read_committed (the last stable offset)",
    "restart_producer": "the producer's client restarts: its producer id, epoch and sequences are forgotten",
    "wait": "wait until session, rebalance and transaction timeouts have expired on both brokers",
}

#: the kinds a program of each focus draws from
FOCI: dict[str, tuple[str, ...]] = {
    "classic": ("join", "join", "sync", "sync", "heartbeat", "leave", "commit", "fetch_offsets", "describe_group",
                "restart_member"),
    "consumer": ("cg_join", "cg_heartbeat", "cg_heartbeat", "cg_leave", "cg_describe", "cg_commit",
                 "fetch_offsets"),
    "transactions": ("init_pid", "init_pid", "add_partitions", "produce", "produce", "add_offsets",
                     "txn_commit_offsets", "end_txn", "end_txn", "list_offsets", "restart_producer",
                     "fetch_offsets"),
}
FOCI["mixed"] = tuple(sorted({k for kinds in FOCI.values() for k in kinds}))

ACTORS: dict[str, int] = {"join": 3, "sync": 3, "heartbeat": 3, "leave": 3, "commit": 3, "restart_member": 3,
                          "cg_join": 2, "cg_heartbeat": 2, "cg_leave": 2, "cg_commit": 2, "init_pid": 3,
                          "add_partitions": 3, "produce": 3, "add_offsets": 3, "txn_commit_offsets": 3,
                          "end_txn": 3, "restart_producer": 3}


@dataclass(frozen=True, slots=True)
class Step:
    kind: str
    actor: int = 0
    value: int = 0
    flag: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown step kind {self.kind!r}; kinds: {', '.join(KINDS)}")
        if not 0 <= self.actor < ACTORS.get(self.kind, 1):
            raise ValueError(f"{self.kind}: actor {self.actor} out of range 0..{ACTORS.get(self.kind, 1) - 1}")

    def __repr__(self) -> str:
        extra = "".join(f", {n}={v!r}" for n, v in (("value", self.value), ("flag", self.flag)) if v)
        return f"Step({self.kind!r}, {self.actor}{extra})"


@st.composite
def _step(draw: st.DrawFn, kinds: tuple[str, ...]) -> Step:
    kind = draw(st.sampled_from(kinds))
    actor = draw(st.integers(0, ACTORS.get(kind, 1) - 1))
    value = draw(st.integers(0, 2 if kind == "init_pid" else 11))
    return Step(kind, actor, value, draw(st.booleans()))


@st.composite
def programs(draw: st.DrawFn, max_steps: int = 16, wait_one_in: int = 10) -> tuple[str, list[Step]]:
    """(focus, steps): the steps of one focus, at most one of them a `wait` (in one program out of `wait_one_in`)."""
    focus = draw(st.sampled_from(tuple(FOCI)))
    steps = draw(st.lists(_step(FOCI[focus]), min_size=1, max_size=max_steps))
    if draw(st.sampled_from((False,) * (wait_one_in - 1) + (True,))):  # shrinks towards no wait
        steps.insert(draw(st.integers(0, len(steps))), Step("wait"))
    return focus, steps
