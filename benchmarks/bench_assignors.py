"""Assignor run times at coordinator scale: 1,000 members x 10,000 partitions (100 topics x 100 partitions).

Run: ``.venv/bin/python benchmarks/bench_assignors.py [--runs 5] [--members 1000] [--topics 100] [--partitions 100]
[--json PATH]``. Each scenario is timed ``--runs`` times and the median is shown, as CPU seconds
(``time.process_time``, robust to other load on the machine) and wall seconds. Only the assignor call is timed
(plus building the ``GroupSpec`` for server-side assignors, which a coordinator does every time); inputs are built
beforehand. Targets: ``uniform`` <= 1 s and classic ``sticky`` <= 2 s on the homogeneous scenarios.

Scenarios: *fresh* (nobody owns anything), *leave* (the previous assignment is current and one member left),
*join* (the previous assignment is current and one member joined), *hetero* (members subscribe to a random 90%
of the topics; previous assignment current, one member left) and *skewed* (after a homogeneous assignment, every
other member shrinks its subscription to 10% of the topics: the general sticky builder's hard case).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kcoord.impl.assignors import (
    ClassicAssignor,
    CooperativeStickyAssignor,
    GroupSpec,
    MemberSpec,
    RangeAssignor,
    RoundRobinAssignor,
    ServerAssignor,
    ServerRangeAssignor,
    StickyAssignor,
    SubscribedTopicDescriber,
    Subscription,
    TargetAssignment,
    TopicMetadata,
    TopicPartition,
    UniformAssignor,
)
from kcoord.impl.assignors.sticky import encode_user_data

TARGETS_S = {"uniform": 1.0, "sticky": 2.0}


@dataclass(frozen=True)
class Row:
    assignor: str
    scenario: str
    cpu_s: float
    wall_s: float

    @property
    def verdict(self) -> str:
        target = TARGETS_S.get(self.assignor)
        if target is None or self.scenario in ("hetero", "skewed"):
            return ""
        return "ok" if self.cpu_s <= target else f"OVER {target:g}s"


def _median(fn: Callable[[], object], runs: int) -> tuple[float, float]:
    cpu, wall = [], []
    for _ in range(runs):
        c0, w0 = time.process_time(), time.perf_counter()
        fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return statistics.median(cpu), statistics.median(wall)


def _member_ids(n: int, rng: random.Random) -> list[str]:
    # Shaped like real ids: client id + "-" + UUID.
    return [f"consumer-{i}-{uuid.UUID(int=rng.getrandbits(128))}" for i in range(n)]


# -- classic ----------------------------------------------------------------------------------------------------------


def classic_scenarios(members: int, topics: int, partitions: int, rng: random.Random
                      ) -> dict[str, tuple[dict[str, int], dict[str, tuple[str, ...]]]]:
    names = [f"topic-{i:03d}" for i in range(topics)]
    counts = dict.fromkeys(names, partitions)
    ids = _member_ids(members + 1, rng)
    everything = tuple(names)
    hetero = {m: tuple(sorted(rng.sample(names, max(1, topics * 9 // 10)))) for m in ids[:members]}
    return {
        "homogeneous": (counts, {m: everything for m in ids[:members]}),
        "joiner": (counts, {ids[members]: everything}),
        "hetero": (counts, hetero),
    }


def bench_classic(members: int, topics: int, partitions: int, runs: int, rng: random.Random) -> list[Row]:
    scenarios = classic_scenarios(members, topics, partitions, rng)
    counts, homogeneous = scenarios["homogeneous"]
    _, joiner = scenarios["joiner"]
    _, hetero = scenarios["hetero"]
    fresh = {m: Subscription(ts) for m, ts in homogeneous.items()}
    rows: list[Row] = []

    def timed(assignor: ClassicAssignor, subs: dict[str, Subscription]) -> tuple[float, float]:
        return _median(lambda: assignor.assign(counts, subs), runs)

    for simple in (RangeAssignor(), RoundRobinAssignor()):
        rows.append(Row(simple.name, "fresh", *timed(simple, fresh)))

    sticky = StickyAssignor()
    previous = {m: a.partitions for m, a in sticky.assign(counts, fresh).items()}
    hetero_previous = {m: a.partitions for m, a in sticky.assign(
        counts, {m: Subscription(ts) for m, ts in hetero.items()}).items()}

    def eager(subs: dict[str, tuple[str, ...]], owned: dict[str, tuple[TopicPartition, ...]]
              ) -> dict[str, Subscription]:
        return {m: Subscription(ts, encode_user_data(owned[m], 7) if m in owned else None, (), 7 if m in owned else -1)
                for m, ts in subs.items()}

    def cooperative(subs: dict[str, tuple[str, ...]], owned: dict[str, tuple[TopicPartition, ...]]
                    ) -> dict[str, Subscription]:
        return {m: Subscription(ts, None, owned.get(m, ()), 7 if m in owned else -1) for m, ts in subs.items()}

    leaver = next(iter(homogeneous))
    without = {m: ts for m, ts in homogeneous.items() if m != leaver}
    hetero_without = {m: ts for m, ts in hetero.items() if m != leaver}
    builders: tuple[tuple[ClassicAssignor, Callable[..., dict[str, Subscription]]], ...] = (
        (sticky, eager), (CooperativeStickyAssignor(), cooperative))
    for assignor, build in builders:
        cases = {
            "fresh": fresh,
            "leave": build(without, previous),
            "join": build({**homogeneous, **joiner}, previous),
            "hetero": build(hetero_without, hetero_previous),
        }
        for scenario, subs in cases.items():
            rows.append(Row(assignor.name, scenario, *timed(assignor, subs)))
    names = sorted(counts)
    skewed = {m: ts if i % 2 else tuple(rng.sample(names, max(1, len(names) // 10)))
              for i, (m, ts) in enumerate(homogeneous.items())}
    rows.append(Row(sticky.name, "skewed", *timed(sticky, eager(skewed, previous))))
    return rows


# -- server-side ------------------------------------------------------------------------------------------------------


def bench_server(members: int, topics: int, partitions: int, runs: int, rng: random.Random) -> list[Row]:
    topic_ids = [uuid.UUID(int=rng.getrandbits(128)) for _ in range(topics)]
    describer = SubscribedTopicDescriber(
        TopicMetadata(t, f"topic-{i:03d}", partitions) for i, t in enumerate(topic_ids)
    )
    ids = _member_ids(members + 1, rng)
    everything = frozenset(topic_ids)
    homogeneous = {m: MemberSpec(everything) for m in ids[:members]}
    hetero = {m: MemberSpec(frozenset(rng.sample(topic_ids, max(1, topics * 9 // 10)))) for m in ids[:members]}

    def adopt(specs: dict[str, MemberSpec], target: TargetAssignment) -> dict[str, MemberSpec]:
        return {m: MemberSpec(s.subscribed_topic_ids, target.get(m, {}), s.instance_id) for m, s in specs.items()}

    rows: list[Row] = []
    uniform = UniformAssignor()
    previous = uniform.assign(GroupSpec(homogeneous), describer)
    hetero_previous = uniform.assign(GroupSpec(hetero), describer)
    leaver = ids[0]

    def few() -> frozenset[uuid.UUID]:
        return frozenset(rng.sample(topic_ids, max(1, topics // 10)))

    cases = {
        "fresh": homogeneous,
        "leave": {m: s for m, s in adopt(homogeneous, previous).items() if m != leaver},
        "join": {**adopt(homogeneous, previous), ids[members]: MemberSpec(everything)},
        "hetero": {m: s for m, s in adopt(hetero, hetero_previous).items() if m != leaver},
        "skewed": {m: MemberSpec(s.subscribed_topic_ids if i % 2 else few(), s.assignment)
                   for i, (m, s) in enumerate(adopt(homogeneous, previous).items())},
    }
    def timed(assignor: ServerAssignor, specs: dict[str, MemberSpec]) -> tuple[float, float]:
        return _median(lambda: assignor.assign(GroupSpec(specs), describer), runs)

    server_range = ServerRangeAssignor()
    for scenario, specs in cases.items():
        rows.append(Row(uniform.name, scenario, *timed(uniform, specs)))
    for scenario in ("fresh", "hetero"):  # range ignores current assignments: leave/join cost the same as fresh
        rows.append(Row("range (server)", scenario, *timed(server_range, cases[scenario])))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--members", type=int, default=1000)
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=100, help="partitions per topic")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    print(f"seed {args.seed}: {args.members} members, {args.topics} topics x {args.partitions} partitions, "
          f"median of {args.runs} runs")
    rng = random.Random(args.seed)
    rows = bench_server(args.members, args.topics, args.partitions, args.runs, rng)
    rows += bench_classic(args.members, args.topics, args.partitions, args.runs, rng)
    print(f"{'assignor':<20}{'scenario':<10}{'cpu s':>9}{'wall s':>9}  target")
    for row in rows:
        print(f"{row.assignor:<20}{row.scenario:<10}{row.cpu_s:>9.3f}{row.wall_s:>9.3f}  {row.verdict}")
    if args.json:
        args.json.write_text(json.dumps([row.__dict__ for row in rows], indent=2) + "\n")


if __name__ == "__main__":
    main()
