"""Traces: every group and member decision is a trace row (rejections included), and the rows describe a run the
spec allows — each transition an edge of the table, each row starting where the key's previous row ended, every
step property holding between consecutive rows of a key."""

from __future__ import annotations

from typing import Any

from kcoord.impl.group.messages import ConsumerGroupHeartbeatRequest
from kcoord.impl.statemachine import MachineTable

from .helpers import Harness
from .test_offsets import FakeVerifier, marker, txn_commit


def busy_run(h: Harness) -> None:
    a, b = h.stable_group("g", 2)
    h.join("g", a), h.join("g", b)
    h.sync("g", b, 2), h.sync("g", a, 2, [(a, b"x")])
    h.hb("g", "ghost", 2)
    h.leave("g", (b, None), ("nobody", None))
    h.advance(40_000)
    h.commit("g", {("orders", 0): 3}, member_id="x", generation=9)
    r = h.cg("cg", "m1", 0)
    h.cg("cg", "m2", 0, instance="host-2")
    h.cg("cg", "m1", 1, owned=r.assignment)
    h.cg("cg", "m1", 7)
    h.c.consumer_group_heartbeat(ConsumerGroupHeartbeatRequest("cg", "m2", -2, "host-2")).result()
    h.cg("cg", "m3", 0, instance="host-2")
    txn_commit(h, "g", {("orders", 1): 4}, pid=5)
    marker(h, 5, "COMMIT")


def as_state(row: dict[str, Any], table: MachineTable) -> dict[str, Any]:
    """A row's variables as an instance (lists back to sets)."""
    state = {"state": row["to_state"], **{k: row[k] for k, _ in table.keys}}
    for v in table.variables:
        value = row[v.name]
        state[v.name] = frozenset(value) if isinstance(value, list) else value
    return state


def test_every_decision_is_traced_and_the_trace_follows_the_spec(tmp_path: Any) -> None:
    h = Harness(tmp_path, verifier=FakeVerifier())
    busy_run(h)
    tables = h.c.ctx.tables.by_name()
    assert set(h.sink.rows) == set(tables)
    for machine, rows in h.sink.rows.items():
        table = tables[machine]
        last: dict[str, dict[str, Any]] = {}
        for row in rows:
            if row["kind"] == "transition":
                assert row["from_state"] in table.valid_previous[row["to_state"]], row
            if row["kind"] != "reject":
                assert not table.violated_invariants(as_state(row, table)), row
            previous = last.get(row["key"])
            if previous is not None and row["seq"] >= 0:
                assert row["seq"] > previous["seq"], (previous, row)
                assert row["from_state"] == previous["to_state"], (previous, row)
                if row["kind"] != "reject":
                    broken = table.violated_steps(as_state(previous, table), as_state(row, table))
                    assert not broken, (broken, previous, row)
            if row["seq"] >= 0:
                last[row["key"]] = row
    kinds = {(r["machine"], r["kind"]) for r in h.sink.all_rows()}
    assert {("ClassicGroup", "reject"), ("ClassicGroup", "transition"), ("ClassicGroup", "stay"),
            ("ConsumerGroup", "reject"), ("ConsumerGroupMember", "reject"),
            ("PartitionProducer", "transition")} <= kinds


def test_rejections_carry_the_error_and_the_arguments(h: Harness) -> None:
    h.stable_group("g", 1)
    assert h.hb("g", "ghost", 1) == "UNKNOWN_MEMBER_ID"
    row = h.rows("ClassicGroup", "g")[-1]
    assert (row["kind"], row["event"], row["error"], row["arg_member_id"], row["from_state"], row["to_state"]) == \
        ("reject", "Heartbeat", "UNKNOWN_MEMBER_ID", "ghost", "Stable", "Stable")
