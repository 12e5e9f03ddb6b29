"""The coordinator stages of `kcoord demo`: a short transactional workload and a group's life, on a real in-process
cluster (logs on disk, fsync per batch, the spec-driven tables), with a manual clock so the run is the same every time.

Each stage prints what a user wants to see — the transactions' outcomes and the trace summary, the groups'
assignments and committed offsets — and returns False when something did not turn out as Kafka would have it.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from rich.console import Console
from rich.table import Table

from kcoord.impl.assignors import (
    Subscription,
    classic_assignor,
    decode_assignment,
    encode_assignment,
    encode_subscription,
)
from kcoord.impl.assignors import (
    TopicPartition as AssignedPartition,
)
from kcoord.impl.cluster import Cluster, ClusterConfig
from kcoord.impl.group.config import GroupConfig
from kcoord.impl.group.messages import (
    ConsumerGroupHeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    MemberIdentity,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
    TxnOffsetCommitRequest,
)
from kcoord.impl.interfaces import TopicPartition
from kcoord.impl.partition import IsolationLevel, committed_records
from kcoord.impl.runtime.clock import ManualClock
from kcoord.impl.runtime.completion import Completion
from kcoord.impl.runtime.trace import JsonlSink
from kcoord.impl.storage.batch import Record, RecordBatch
from kcoord.impl.txn.config import TxnConfig

T = TypeVar("T")
TOPIC = "orders"
PARTITIONS = 6


def _cluster(workdir: Path, traces: Path) -> Cluster:
    config = ClusterConfig(nodes=1, txn=TxnConfig(num_partitions=3, offsets_num_partitions=3),
                           groups=GroupConfig(num_partitions=3, initial_rebalance_delay_ms=100))
    cluster = Cluster(workdir, ManualClock(1_700_000_000_000), config=config, sink=JsonlSink(traces))
    cluster.start()
    cluster.create_topics([(TOPIC, PARTITIONS)])
    return cluster


def _wait(cluster: Cluster, done: Completion[T]) -> T:
    cluster.run_until(lambda: done.done)
    return done.result()


def _advance(cluster: Cluster, ms: int) -> None:
    clock = cluster.clock
    assert isinstance(clock, ManualClock)
    for _ in range(0, ms, 50):
        clock.advance(50)
        cluster.poll()


def _trace_summary(traces: Path) -> Table:
    """Rows per machine and the most frequent state changes, read back from the JSONL trace files."""
    import json

    moves: Counter[tuple[str, str, str]] = Counter()
    rows: Counter[str] = Counter()
    for path in sorted(traces.rglob("*.jsonl")):
        with path.open(encoding="utf-8") as f:
            for line in f:
                row = json.loads(line)
                rows[row["machine"]] += 1
                if row.get("kind") == "transition":
                    moves[(row["machine"], row["from_state"], row["to_state"])] += 1
    table = Table(title=f"trace summary ({sum(rows.values())} rows in {traces})")
    for column in ("machine", "rows", "state changes (count)"):
        table.add_column(column)
    for machine, n in sorted(rows.items()):
        changes = sorted(((c, f"{a}→{b}") for (m, a, b), c in moves.items() if m == machine), reverse=True)
        table.add_row(machine, str(n), ", ".join(f"{edge} ({c})" for c, edge in changes[:6]))
    return table


# ---------------------------------------------------------------------------------------------- transactions


def _add_partitions(cluster: Cluster, txn_id: str, pid: int, epoch: int, partition: int
                    ) -> Mapping[TopicPartition, str]:
    """AddPartitionsToTxn, retried on CONCURRENT_TRANSACTIONS (the previous transaction's markers are still out), as
    clients do."""
    txn = cluster.node_for_coordinator("transaction", txn_id).txn
    for _ in range(50):
        added = _wait(cluster, txn.add_partitions(txn_id, pid, epoch, [TopicPartition(TOPIC, partition)]))
        if set(added.values()) != {"CONCURRENT_TRANSACTIONS"}:
            break
        _advance(cluster, 20)
    return added


def _transaction(cluster: Cluster, txn_id: str, pid: int, epoch: int, seq: int, values: list[str], offset: int,
                 commit: bool) -> str:
    """One consume-transform-produce transaction (TV1): produce to orders-0, send offsets for group `etl`, end it."""
    txn = cluster.node_for_coordinator("transaction", txn_id).txn
    added = _add_partitions(cluster, txn_id, pid, epoch, 0)
    if set(added.values()) != {"NONE"}:
        return f"AddPartitionsToTxn: {sorted(set(added.values()))}"
    batch = RecordBatch.of([Record(i, 0, b"k", v.encode()) for i, v in enumerate(values)], producer_id=pid,
                           producer_epoch=epoch, base_sequence=seq, is_transactional=True)
    produced = _wait(cluster, cluster.partitions.produce(TOPIC, 0, batch, transactional_id=txn_id))
    if produced.error != "NONE":
        return f"Produce: {produced.error}"
    added_offsets = _wait(cluster, txn.add_offsets(txn_id, pid, epoch, "etl"))
    if added_offsets != "NONE":
        return f"AddOffsetsToTxn: {added_offsets}"
    groups = cluster.node_for_coordinator("group", "etl").groups
    _wait(cluster, groups.txn_offset_commit(TxnOffsetCommitRequest(
        txn_id, pid, epoch, "etl", ((TOPIC, (OffsetCommitPartition(0, offset),)),))))
    return _wait(cluster, txn.end_txn(txn_id, pid, epoch, "COMMIT" if commit else "ABORT", 3)).error


def txn_stage(out: Console, workdir: Path) -> bool:
    """Three producers run committed and aborted transactions; a second producer with the same transactional.id
    fences the first, whose open transaction is aborted. Prints outcomes, the read_committed view and the traces."""
    traces = workdir / "traces"
    cluster = _cluster(workdir / "data", traces)
    ok = True
    outcomes = Table(title="transactions")
    for column in ("transactional.id", "step", "answer"):
        outcomes.add_column(column)
    try:
        ids: dict[str, tuple[int, int]] = {}
        for name in ("etl-a", "etl-b", "etl-c"):
            init = _wait(cluster, cluster.node_for_coordinator("transaction", name).txn.init_producer_id(name, 60_000))
            ids[name] = (init.producer_id, init.producer_epoch)
            outcomes.add_row(name, "InitProducerId", f"{init.error} pid={init.producer_id} epoch={init.producer_epoch}")
        for i, (name, (pid, epoch)) in enumerate(ids.items()):
            commit = i != 1
            answer = _transaction(cluster, name, pid, epoch, 0, [f"{name}-{i}"], 10 * (i + 1), commit)
            outcomes.add_row(name, "EndTxn(" + ("COMMIT" if commit else "ABORT") + ")", answer)
            ok &= answer == "NONE"
        # a zombie: etl-a opens a transaction, then a new instance of etl-a initialises and fences it
        pid, epoch = ids["etl-a"]
        txn = cluster.node_for_coordinator("transaction", "etl-a").txn
        opened = _add_partitions(cluster, "etl-a", pid, epoch, 1)
        outcomes.add_row("etl-a", "AddPartitionsToTxn(orders-1), left open", ", ".join(sorted(set(opened.values()))))
        fresh = _wait(cluster, txn.init_producer_id("etl-a", 60_000))
        while fresh.error == "CONCURRENT_TRANSACTIONS":
            _advance(cluster, 20)
            fresh = _wait(cluster, txn.init_producer_id("etl-a", 60_000))
        outcomes.add_row("etl-a", "InitProducerId (new instance)", f"{fresh.error} epoch={fresh.producer_epoch}")
        zombie = _wait(cluster, txn.end_txn("etl-a", pid, epoch, "COMMIT", 3)).error
        outcomes.add_row("etl-a", "EndTxn(COMMIT) from the old instance", zombie)
        ok &= fresh.error == "NONE" and fresh.producer_epoch > epoch and zombie == "PRODUCER_FENCED"
        _advance(cluster, 500)
        described = _wait(cluster, txn.describe_transactions(list(ids)))
        fetched = cluster.partitions.fetch(TOPIC, 0, 0, isolation_level=IsolationLevel.READ_COMMITTED)
        visible = [r.value.decode() for r in committed_records(fetched) if r.value is not None]
        out.print(outcomes)
        out.print("final states: " + ", ".join(f"{d.transactional_id}={d.state}" for d in described))
        out.print(f"read_committed view of {TOPIC}-0: {visible}  (etl-b aborted, so its record is hidden)")
        ok &= visible == ["etl-a-0", "etl-c-2"]
    finally:
        cluster.close()
        if cluster.sink is not None:
            cluster.sink.close()
    out.print(_trace_summary(traces))
    return ok


# ---------------------------------------------------------------------------------------------- groups


def _classic_round(cluster: Cluster, group: str, members: dict[str, str]) -> dict[str, list[AssignedPartition]]:
    """Every member in `members` (instance name → member id, "" for new) joins; the leader assigns with `range`;
    everyone syncs. Updates the member ids in place and returns each instance's partitions."""
    groups = cluster.node_for_coordinator("group", group).groups
    subscription = encode_subscription(Subscription.of([TOPIC]))

    def join(member_id: str) -> Completion[JoinGroupResponse]:
        return groups.join_group(JoinGroupRequest(group, member_id, protocols=(("range", subscription),),
                                                  session_timeout_ms=6_000, rebalance_timeout_ms=1_000))

    parked: dict[str, Completion[JoinGroupResponse]] = {}
    for name, member_id in members.items():
        if not member_id:
            first = _wait(cluster, join(""))
            members[name] = first.member_id
        parked[name] = join(members[name])
    cluster.run_until(lambda: all(p.done for p in parked.values()) or _tick(cluster))
    joined = {name: p.result() for name, p in parked.items()}
    leader = next(r for r in joined.values() if r.leader == r.member_id)
    plan = classic_assignor("range").assign(
        {TOPIC: PARTITIONS}, {m.member_id: Subscription.of([TOPIC]) for m in leader.members})
    assignments = tuple((m, encode_assignment(a)) for m, a in plan.items())
    syncs = {name: groups.sync_group(SyncGroupRequest(group, r.member_id, r.generation_id,
                                                      assignments=assignments if r is leader else ()))
             for name, r in joined.items()}
    cluster.run_until(lambda: all(s.done for s in syncs.values()))
    return {name: sorted(decode_assignment(s.result().assignment).partitions) for name, s in syncs.items()}


def _tick(cluster: Cluster) -> bool:
    _advance(cluster, 50)
    return False


def _show(title: str, assignment: dict[str, list[Any]]) -> Table:
    table = Table(title=title)
    table.add_column("member")
    table.add_column("partitions")
    for name, parts in sorted(assignment.items()):
        table.add_row(name, ", ".join(f"{tp.topic}-{tp.partition}" for tp in parts))
    return table


def _exclusive(assignment: dict[str, list[Any]]) -> bool:
    owned = [(tp.topic, tp.partition) for parts in assignment.values() for tp in parts]
    return len(owned) == len(set(owned)) == PARTITIONS


def group_stage(out: Console, workdir: Path) -> bool:
    """A classic group of three forms, loses a member and rebalances, commits offsets; a KIP-848 consumer group of
    three reconciles to the `uniform` target assignment. Prints the assignments and the committed offsets."""
    traces = workdir / "traces"
    cluster = _cluster(workdir / "data", traces)
    try:
        members = {"c1": "", "c2": "", "c3": ""}
        first = _classic_round(cluster, "classic-demo", members)
        out.print(_show("classic group 'classic-demo', generation 1 (range)", first))
        groups = cluster.node_for_coordinator("group", "classic-demo").groups
        _wait(cluster, groups.leave_group(LeaveGroupRequest("classic-demo", (MemberIdentity(members.pop("c3")),))))
        second = _classic_round(cluster, "classic-demo", members)
        out.print(_show("after c3 leaves: generation 2", second))
        committed = _commit_positions(cluster, "classic-demo", second, members)
        out.print(f"committed offsets: {committed}")
        consumer = _consumer_group(cluster, "kip848-demo", ["m1", "m2", "m3"])
        out.print(_show("KIP-848 group 'kip848-demo' after reconciliation (uniform)", consumer))
        (described,) = groups.describe_groups(["classic-demo"])
        out.print(f"DescribeGroups classic-demo: state={described.state} members={len(described.members)}")
        return (_exclusive(first) and _exclusive(second) and _exclusive(consumer) and len(committed) == PARTITIONS
                and described.state == "Stable")
    finally:
        cluster.close()
        if cluster.sink is not None:
            cluster.sink.close()


def _commit_positions(cluster: Cluster, group: str, assignment: dict[str, list[AssignedPartition]],
                      members: dict[str, str]) -> dict[str, int]:
    """Each member commits position 100 + partition for its partitions; returns what OffsetFetch reads back."""
    groups = cluster.node_for_coordinator("group", group).groups
    generation = _generation(cluster, group)
    for name, parts in assignment.items():
        request = OffsetCommitRequest(group, ((TOPIC, tuple(OffsetCommitPartition(tp.partition, 100 + tp.partition)
                                                            for tp in parts)),), members[name], generation)
        _wait(cluster, groups.offset_commit(request))
    fetched = _wait(cluster, groups.offset_fetch(OffsetFetchRequest(group, None)))
    return {f"{topic}-{p.partition}": p.offset for topic, parts in fetched.topics for p in parts if p.offset >= 0}


def _generation(cluster: Cluster, group: str) -> int:
    shard = cluster.node_for_coordinator("group", group).groups.runtime.shard_for(group)
    instance = shard.get("ClassicGroup", (group,))
    assert instance is not None
    return int(instance["generation"])


def _consumer_group(cluster: Cluster, group: str, names: list[str]) -> dict[str, list[TopicPartition]]:
    """KIP-848 members heartbeat until their assignment equals the target (revocations first), as the client does."""
    groups = cluster.node_for_coordinator("group", group).groups
    topic = cluster.describe_for_assignors(TOPIC)
    assert topic is not None
    state: dict[str, tuple[str, int, tuple[Any, ...]]] = {}

    def beat(name: str) -> None:
        # From v1 the client generates its member id (Kafka 4.0 refuses an empty one with INVALID_REQUEST).
        member_id, epoch, owned = state.get(name, (str(uuid.uuid5(uuid.NAMESPACE_OID, f"{group}/{name}")), 0, ()))
        request = ConsumerGroupHeartbeatRequest(group, member_id, epoch, rebalance_timeout_ms=5_000,
                                                subscribed_topic_names=(TOPIC,) if epoch == 0 else None,
                                                server_assignor="uniform" if epoch == 0 else None,
                                                topic_partitions=owned)
        answer = _wait(cluster, groups.consumer_group_heartbeat(request))
        assert answer.error == "NONE", answer
        assigned = owned if answer.assignment is None else answer.assignment
        state[name] = (answer.member_id or member_id, answer.member_epoch, assigned)

    for name in names:
        beat(name)
    for _ in range(10):
        _advance(cluster, 100)
        for name in names:
            beat(name)
    return {name: [TopicPartition(TOPIC, p) for tid, parts in owned for p in parts if tid == topic.topic_id]
            for name, (_, _, owned) in state.items()}


StageFn = Callable[[Console, Path], bool]
