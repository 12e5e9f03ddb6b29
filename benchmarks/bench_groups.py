"""Group coordinator throughput and latency, in process, on a real `__consumer_offsets` log (per-batch fsync off:
`Durability.group`, flushed by the benchmark, so the numbers are the coordinator's, not the disk's).

Run: ``.venv/bin/python benchmarks/bench_groups.py [--runs 5] [--records 1000000] [--json PATH]``. Each scenario is
timed ``--runs`` times; the table shows the median CPU seconds (``time.process_time``) and the derived rate. Scenarios:

* classic heartbeats/s — a Stable group of 100 members, heartbeats round-robin (traces off, then to a memory sink);
* KIP-848 heartbeats/s — a Stable consumer group of 100 members over 10 topics x 100 partitions, steady heartbeats
  reporting their owned partitions;
* classic rebalance of 1,000 members — from the leader's JoinGroup to the last SyncGroup answer: 1,000 JoinGroups,
  the join phase completing, the leader's assignment written, 1,000 SyncGroups (the leader's assignment bytes are
  precomputed: the client-side assignor is the next row);
* classic sticky assignor, 1,000 members x 10,000 partitions, one member joined (the leader's client-side run;
  target <= 2 s);
* KIP-848 target assignment with `uniform`, 1,000 members x 10,000 partitions — the ConsumerGroupHeartbeat that adds
  member 1,001: group epoch bump, the assignor, the changed target records, the new member's reconciliation
  (target <= 1 s);
* load of a `__consumer_offsets` partition of ``--records`` offset commits (10,000 keys rewritten), records/s.

Recorded (seed 1, 5 runs, one shared 2-core container, Python 3.11):

| scenario | size | CPU s (median) | rate | target |
|---|---|---:|---:|---|
| classic heartbeats | 100 members | 1.319 | 15,165/s |  |
| classic heartbeats (traced) | 100 members | 2.731 | 7,323/s |  |
| KIP-848 heartbeats | 100 members, 1,000 partitions | 4.660 | 4,291/s |  |
| classic rebalance | 1,000 members | 0.904 | 2,212 requests/s |  |
| classic sticky assignor | 1,000 members x 10,000 partitions, one joins | 0.132 |  | ok |
| KIP-848 target assignment (uniform) | 1,000 members x 10,000 partitions, one joins | 0.099 |  | ok |
| load __consumer_offsets | 1,000,000 records | 10.526 | 94,999 records/s |  |
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kcoord.impl.assignors import (
    Assignment,
    GroupSpec,
    MemberSpec,
    StickyAssignor,
    SubscribedTopicDescriber,
    Subscription,
    TopicMetadata,
    TopicPartition,
    UniformAssignor,
    encode_assignment,
    encode_subscription,
)
from kcoord.impl.assignors.sticky import encode_user_data
from kcoord.impl.group import GroupConfig, GroupCoordinator
from kcoord.impl.group import records as recs
from kcoord.impl.group.messages import (
    ConsumerGroupHeartbeatRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    SyncGroupRequest,
)
from kcoord.impl.group.state import ConsumerMember
from kcoord.impl.runtime.clock import ManualClock
from kcoord.impl.runtime.trace import MemorySink, Tracer
from kcoord.impl.storage.group_log_schema import OffsetCommitValue
from kcoord.impl.storage.log import Durability, PartitionLog

TARGETS_S = {"classic sticky assignor": 2.0, "KIP-848 target assignment (uniform)": 1.0}
CONFIG = GroupConfig(num_partitions=1)


@dataclass(frozen=True)
class Row:
    scenario: str
    size: str
    cpu_s: float
    rate: str

    @property
    def verdict(self) -> str:
        target = TARGETS_S.get(self.scenario)
        if target is None:
            return ""
        return "ok" if self.cpu_s <= target else f"OVER {target:g}s"


def median(fn: Callable[[], Any], runs: int, setup: Callable[[], Any] | None = None) -> float:
    """Median CPU seconds (`time.process_time`: robust to other load on the machine; the coordinator is
    single-threaded and the fsyncs are batched into one flush) of `fn(setup())`, setup not timed."""
    times = []
    for _ in range(runs):
        arg = setup() if setup is not None else None
        t0 = time.process_time()
        fn(arg) if setup is not None else fn()
        times.append(time.process_time() - t0)
    return statistics.median(times)


def topics(count: int, partitions: int, rng: random.Random) -> dict[str, TopicMetadata]:
    return {f"topic-{i:03d}": TopicMetadata(uuid.UUID(int=rng.getrandbits(128)), f"topic-{i:03d}", partitions)
            for i in range(count)}


def coordinator(path: Path, described: dict[str, TopicMetadata], *, traced: bool = False,
                clock: ManualClock | None = None) -> GroupCoordinator:
    ids = iter(range(1 << 60))
    c = GroupCoordinator(data_dir=path, clock=clock or ManualClock(1_000_000), topics=described, config=CONFIG,
                         tracer=Tracer(MemorySink() if traced else None),
                         durability=Durability.group(max_delay_ms=1 << 30, max_bytes=1 << 40),
                         new_uuid=lambda: f"u{next(ids)}")
    c.load_all()
    return c


def settle(c: GroupCoordinator, clock: ManualClock | None = None, ms: int = 0) -> None:
    c.flush()
    if clock is not None and ms:
        clock.advance(ms)
    c.poll()
    c.flush()


# ---------------------------------------------------------------------------------------------- classic


def classic_group(path: Path, members: int, *, traced: bool = False) -> tuple[GroupCoordinator, ManualClock,
                                                                                list[str], Any]:
    """A Stable classic group of `members`, built through the protocol (generation 1)."""
    clock = ManualClock(1_000_000)
    described = {"orders": TopicMetadata(uuid.UUID(int=1), "orders", 1000)}
    c = coordinator(path, described, traced=traced, clock=clock)
    protocols = (("range", encode_subscription(Subscription.of(["orders"]))),)
    joins = []
    for _ in range(members):
        first = c.join_group(JoinGroupRequest("g", protocols=protocols, session_timeout_ms=1_800_000,
                                              rebalance_timeout_ms=300_000))
        settle(c)
        joins.append(c.join_group(JoinGroupRequest("g", first.result().member_id, protocols=protocols,
                                                   session_timeout_ms=1_800_000, rebalance_timeout_ms=300_000)))
        settle(c)
    while not joins[-1].done:  # the initial delay (and its one extension) in small steps
        settle(c, clock, 1_000)
    responses = [j.result() for j in joins]
    ids = [r.member_id for r in responses]
    leader = responses[0].leader
    assignment = tuple((m, encode_assignment(Assignment((TopicPartition("orders", i),)))) for i, m in enumerate(ids))
    for m in ids:
        c.sync_group(SyncGroupRequest("g", m, 1, assignments=assignment if m == leader else ()))
    settle(c)
    return c, clock, [leader, *[m for m in ids if m != leader]], assignment


def bench_classic_heartbeats(runs: int, traced: bool) -> Row:
    with tempfile.TemporaryDirectory() as d:
        c, _, ids, _ = classic_group(Path(d), 100, traced=traced)
        n = 20_000
        requests = [HeartbeatRequest("g", ids[i % len(ids)], 1) for i in range(n)]

        def run() -> None:
            for req in requests:
                c.heartbeat(req)

        cpu = median(run, runs)
    return Row(f"classic heartbeats{' (traced)' if traced else ''}", "100 members", cpu, f"{n / cpu:,.0f}/s")


def bench_classic_rebalance(runs: int) -> Row:
    members = 1_000
    with tempfile.TemporaryDirectory() as d:
        c, _, ids, assignment = classic_group(Path(d), members)
        protocols = (("range", encode_subscription(Subscription.of(["orders"]))),)
        generation = [1]

        def rebalance() -> None:
            joins = [c.join_group(JoinGroupRequest("g", m, protocols=protocols, session_timeout_ms=1_800_000,
                                                   rebalance_timeout_ms=300_000)) for m in ids]
            generation[0] = joins[0].result().generation_id
            syncs = [c.sync_group(SyncGroupRequest("g", m, generation[0], assignments=assignment if i == 0 else ()))
                     for i, m in enumerate(ids)]
            c.flush()
            assert all(s.result().error == "NONE" for s in syncs)

        cpu = median(rebalance, runs)
    return Row("classic rebalance", f"{members:,} members", cpu, f"{2 * members / cpu:,.0f} requests/s")


def bench_sticky(runs: int, rng: random.Random) -> Row:
    names = [f"topic-{i:03d}" for i in range(100)]
    counts = dict.fromkeys(names, 100)
    ids = [f"consumer-{i}-{uuid.UUID(int=rng.getrandbits(128))}" for i in range(1_001)]
    sticky = StickyAssignor()
    previous = {m: a.partitions for m, a in sticky.assign(counts, {m: Subscription(tuple(names)) for m in ids[:-1]}
                                                          ).items()}
    subs = {m: Subscription(tuple(names), encode_user_data(previous[m], 7) if m in previous else None, (),
                            7 if m in previous else -1) for m in ids}
    cpu = median(lambda: sticky.assign(counts, subs), runs)
    return Row("classic sticky assignor", "1,000 members x 10,000 partitions, one joins", cpu, "")


# ---------------------------------------------------------------------------------------------- KIP-848


def write_consumer_group(path: Path, described: dict[str, TopicMetadata], members: int, rng: random.Random) -> None:
    """A Stable consumer group written straight into the log (what 1,000 joins would have left there)."""
    ids = [f"member-{i:04d}" for i in range(members)]
    names = tuple(sorted(described))
    every = frozenset(t.topic_id for t in described.values())
    target = UniformAssignor().assign(GroupSpec({m: MemberSpec(every) for m in ids}),
                                      SubscribedTopicDescriber(described.values()))
    log = PartitionLog.open(path / "__consumer_offsets-0", durability=Durability.group(1 << 30, 1 << 40))
    batch = [recs.partition_metadata("cg", described), recs.consumer_group_epoch("cg", 1)]
    for m in ids:
        batch.append(recs.member_metadata("cg", ConsumerMember(m, client_id="bench", client_host="/h",
                                                               subscribed_topic_names=names,
                                                               rebalance_timeout_ms=30_000)))
        batch.append(recs.target_member("cg", m, target[m]))
    batch.append(recs.target_epoch("cg", 1))
    for m in ids:
        batch.append(recs.current_assignment("cg", m, epoch=1, previous_epoch=0, state=0, assigned=target[m],
                                             pending={}))
    for i in range(0, len(batch), 500):
        log.append(batch[i:i + 500], timestamp_ms=1_000_000)
    log.flush()
    log.close()


def bench_target_assignment(runs: int, rng: random.Random) -> Row:
    described = topics(100, 100, rng)

    def setup() -> tuple[GroupCoordinator, str]:
        d = Path(tempfile.mkdtemp())
        write_consumer_group(d, described, 1_000, rng)
        return coordinator(d, described), "newcomer"

    def join(arg: tuple[GroupCoordinator, str]) -> None:
        c, member = arg
        pending = c.consumer_group_heartbeat(ConsumerGroupHeartbeatRequest(
            "cg", member, 0, rebalance_timeout_ms=30_000, subscribed_topic_names=tuple(sorted(described)),
            topic_partitions=(), client_id="bench", client_host="/h"))
        c.flush()
        r = pending.result()
        assert r.error == "NONE" and r.member_epoch == 2, r

    cpu = median(join, runs, setup)
    return Row("KIP-848 target assignment (uniform)", "1,000 members x 10,000 partitions, one joins", cpu, "")


def bench_consumer_heartbeats(runs: int, rng: random.Random) -> Row:
    described = topics(10, 100, rng)
    with tempfile.TemporaryDirectory() as d:
        write_consumer_group(Path(d), described, 100, rng)
        c = coordinator(Path(d), described)
        shard = c.runtime.shard(0)
        owned = {}
        for m in shard.spec.consumer["cg"].members:  # type: ignore[attr-defined]
            inst = shard.get("ConsumerGroupMember", ("cg", m))
            owned[m] = tuple((t, tuple(sorted(ps))) for t, ps in
                             sorted(c.ctx.names.to_assignment(inst["assigned"]).items()))
        n = 20_000
        members = sorted(owned)
        requests = [ConsumerGroupHeartbeatRequest("cg", members[i % len(members)], 1,
                                                  topic_partitions=owned[members[i % len(members)]],
                                                  client_id="bench", client_host="/h")
                    for i in range(n)]
        c.consumer_group_heartbeat(requests[0])  # the first heartbeat after a load refreshes the metadata
        c.flush()

        def run() -> None:
            for req in requests:
                c.consumer_group_heartbeat(req)

        cpu = median(run, runs)
        assert c.consumer_group_heartbeat(requests[0]).result().error == "NONE"
    return Row("KIP-848 heartbeats", "100 members, 1,000 partitions", cpu, f"{n / cpu:,.0f}/s")


# ---------------------------------------------------------------------------------------------- load


def bench_load(runs: int, records: int) -> Row:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d)
        log = PartitionLog.open(path / "__consumer_offsets-0", durability=Durability.group(1 << 30, 1 << 40))
        batch = []
        for i in range(records):
            key = i % 10_000
            batch.append(recs.offset_commit(f"group-{key // 100}", f"topic-{key % 10}", (key // 10) % 10,
                                            OffsetCommitValue(offset=i, metadata="", commit_timestamp=1_000_000)))
            if len(batch) == 1_000:
                log.append(batch, timestamp_ms=1_000_000)
                batch = []
        if batch:
            log.append(batch, timestamp_ms=1_000_000)
        log.flush()
        log.close()

        def load() -> None:
            c = GroupCoordinator(data_dir=path, clock=ManualClock(2_000_000), topics={}, config=CONFIG,
                                 tracer=Tracer(None))
            c.load(0)
            assert len(c.runtime.shard(0).spec.offsets.committed) == 100  # type: ignore[attr-defined]
            c.close()

        cpu = median(load, runs)
    return Row("load __consumer_offsets", f"{records:,} records", cpu, f"{records / cpu:,.0f} records/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    print(f"seed {args.seed}, median of {args.runs} runs (load: {min(args.runs, 3)})\n")
    rows = [
        bench_classic_heartbeats(args.runs, traced=False),
        bench_classic_heartbeats(args.runs, traced=True),
        bench_consumer_heartbeats(args.runs, rng),
        bench_classic_rebalance(args.runs),
        bench_sticky(args.runs, rng),
        bench_target_assignment(args.runs, rng),
        bench_load(min(args.runs, 3), args.records),
    ]
    print("| scenario | size | CPU s (median) | rate | target |")
    print("|---|---|---:|---:|---|")
    for row in rows:
        print(f"| {row.scenario} | {row.size} | {row.cpu_s:.3f} | {row.rate} | {row.verdict} |")
    if args.json:
        args.json.write_text(json.dumps([asdict(r) | {"verdict": r.verdict} for r in rows], indent=2))


if __name__ == "__main__":
    main()
