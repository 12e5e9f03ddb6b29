"""`MetricsTap.watches_decision`: the server's metrics tap is shown only the decisions it counts, so it must be shown
every decision whose row `ServerMetrics.observe_row` acts on — checked over every row of every machine it watches."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from kcoord.impl.server.metrics import MetricsTap, ServerMetrics
from kcoord.impl.statemachine import Decision, MachineTable

MACHINES = {"Transaction": "transaction", "ClassicGroup": "classic_group", "ConsumerGroup": "consumer_group",
            "ConsumerGroupMember": "consumer_group_member"}


def _effect(metrics: ServerMetrics) -> tuple[Any, ...]:
    """What `observe_row` may change: every sample of the registry, and the open rebalances' start times."""
    samples = tuple((s.name, tuple(sorted(s.labels.items())), s.value)
                    for family in metrics.registry.collect() for s in family.samples)
    return samples, tuple(sorted(metrics._rebalance_started_ms.items()))


def _decisions(table: MachineTable) -> list[Decision]:
    out = []
    for row in table.rows:
        for source in sorted(row.sources):
            pre = {"state": source}
            post = None if row.kind == "reject" else {"state": row.target or source}
            out.append(Decision(table.name, row.event, row, pre, post))
    return out


@pytest.mark.parametrize("machine", sorted(MACHINES))
def test_the_tap_is_shown_every_decision_the_metrics_count(machine: str) -> None:
    table = MachineTable(importlib.import_module(f"kcoord.impl._generated.{MACHINES[machine]}"))
    metrics = ServerMetrics()
    tap = MetricsTap(metrics, None)
    shown = counted = 0
    for decision in _decisions(table):
        before = _effect(metrics)
        # a rebalance's end counts only after its start: let every row follow each start state of the machine
        metrics.observe_row(machine, {"kind": decision.row.kind, "event": decision.event, "key": "k", "ts_ms": 5,
                                      "from_state": decision.from_state, "to_state": decision.to_state})
        acted = _effect(metrics) != before
        wanted = tap.watches_decision(machine, decision)
        assert wanted or not acted, f"{machine} row {decision.row.index} ({decision.event}) is counted, not shown"
        shown += wanted
        counted += acted
    if machine == "ConsumerGroupMember":
        assert shown == counted == 0  # not watched at all
    else:
        assert counted > 0 and shown >= counted
    if machine == "Transaction":  # the point of the narrower filter: most accepted decisions are not shown
        accepted = sum(d.row.kind != "reject" for d in _decisions(table))
        assert shown < accepted / 2, (shown, accepted)
