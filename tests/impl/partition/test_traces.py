"""The trace rows of a workload replay through `MachineTable.decide`: for every row, deciding its event with its
arguments on the previous row's post-state picks the same spec row, the same answer and the same post-state; `seq`
is dense per instance within a leader epoch; `load` rows after a restart establish the rebuilt state."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from kcoord.impl.statemachine import MachineTable

from .helpers import TP, Env, batch
from .test_recovery import write_history

TABLE = MachineTable.load("partition_producer")
VARIABLES = [v.name for v in TABLE.variables]


def workload(env: Env) -> None:
    """Accepted appends, duplicates, every kind of rejection, markers, expiration and a restart."""
    write_history(env)  # producers 11 (aborted txn), 22 (committed txn), 33 (idempotent)
    env.verifier.add(44)
    answers = [
        env.produce(batch(33, 2, seq=1)).error,  # duplicate
        env.produce(batch(33, 1, seq=2)).error,  # older epoch
        env.produce(batch(33, 2, seq=9)).error,  # gap
        env.produce(batch(55, 0, seq=0, txn=True)).error,  # not verified (unknown producer: seq -1 row)
        env.produce(batch(44, 0, seq=0, txn=True)).error,
        env.produce(batch(44, 0, seq=1, txn=False)).error,  # non-transactional inside the transaction
        env.marker(11, 0, "COMMIT", coordinator_epoch=3)[TP],  # 11 saw coordinator epoch 4
        env.marker(44, 1, "ABORT", coordinator_epoch=4)[TP],
    ]
    assert answers == ["NONE", "INVALID_PRODUCER_EPOCH", "OUT_OF_ORDER_SEQUENCE_NUMBER", "INVALID_TXN_STATE", "NONE",
                       "INVALID_TXN_STATE", "TRANSACTION_COORDINATOR_FENCED", "NONE"]
    env.manager.close()
    env.reopen()
    env.clock.advance(env.config.producer_id_expiration_ms)
    assert env.produce(batch(33, 2, seq=2, ts_ms=env.clock.now_ms())).error == "NONE"  # 33 stays fresh
    assert sorted(env.part.expire_producers()) == [11, 22, 44]
    assert env.produce(batch(11, 0, seq=500)).error == "NONE"  # a new instance after Expired


def replay(rows: list[dict[str, Any]]) -> int:
    """Check every row against `decide`; returns how many rows were decided."""
    by_key: dict[str, list[dict[str, Any]]] = defaultdict(list)
    decided = 0
    for r in rows:
        if r["seq"] == -1:
            fresh = TABLE.fresh({"partition": r["partition"], "producer_id": r["producer_id"]})
            check_row(fresh, r)
            decided += 1
        else:
            by_key[r["key"]].append(r)
    for seq_rows in by_key.values():
        seq_rows.sort(key=lambda r: r["seq"])
        pre: dict[str, Any] | None = None
        prev: dict[str, Any] | None = None
        for r in seq_rows:
            if prev is not None and prev["seq"] >> 32 == r["seq"] >> 32:
                assert r["seq"] == prev["seq"] + 1, (prev, r)  # dense within a leader epoch
            if pre is None or pre["state"] in TABLE.final_states:
                pre = TABLE.fresh({"partition": r["partition"], "producer_id": r["producer_id"]})
            if r["kind"] == "load":
                assert r["from_state"] == r["to_state"]
            else:
                check_row(pre, r)
                decided += 1
            pre = {**{v: r[v] for v in VARIABLES}, "partition": r["partition"], "producer_id": r["producer_id"],
                   "state": r["to_state"]}
            prev = r
    return decided


def check_row(pre: dict[str, Any], row: dict[str, Any]) -> None:
    params = [name for name, _ in TABLE.events[row["event"]][0]]
    args = {name: row[f"arg_{name}"] for name in params}
    decision = TABLE.decide(pre, row["event"], args, strict=True)
    assert (decision.row.index, decision.row.kind, decision.error, decision.from_state, decision.to_state) == (
        row["row"], row["kind"], row["error"], row["from_state"], row["to_state"]), row
    after = decision.post if decision.post is not None else pre
    for v in VARIABLES:
        assert after[v] == row[v], (v, row)


def test_workload_traces_replay_through_decide(env: Env) -> None:
    workload(env)
    rows = env.rows()
    assert replay(rows) == len([r for r in rows if r["kind"] != "load"])
    kinds = {(r["event"], r["kind"], r["error"]) for r in rows}
    assert {("Append", "reject", "NONE"), ("Append", "reject", "INVALID_PRODUCER_EPOCH"),
            ("Append", "reject", "OUT_OF_ORDER_SEQUENCE_NUMBER"), ("Append", "reject", "INVALID_TXN_STATE"),
            ("WriteMarker", "reject", "TRANSACTION_COORDINATOR_FENCED"), ("Expire", "transition", "NONE"),
            ("Load", "load", "NONE"), ("WriteMarker", "transition", "NONE")} <= kinds
    assert [r["seq"] for r in rows if r["key"] == f"{TP}/55"] == [-1]


def test_trace_columns_are_unique_and_carry_the_leader_epoch(env: Env) -> None:
    """Every trace column appears once (the spec's marker epoch is `txn_coordinator_epoch`, apart from the common
    `coordinator_epoch` column, which here holds the partition's leader epoch)."""
    write_history(env)
    columns = [c for c, _ in TABLE.module.TRACE_COLUMNS]
    assert len(columns) == len(set(columns))
    marker_rows = [r for r in env.rows() if r["event"] == "WriteMarker"]
    assert {r["txn_coordinator_epoch"] for r in marker_rows} == {4}  # the markers' epoch
    assert {r["coordinator_epoch"] for r in env.rows()} == {env.part.leader_epoch}
    assert {r["seq"] >> 32 for r in env.rows()} == {env.part.leader_epoch}
