"""Trace rows (MemorySink) of a workload that touches every Transaction event replay cleanly through
`MachineTable.decide`: for each row, deciding its event with its arguments on the previous row's state (per key)
picks the same spec row, gives the same answer and reproduces the row's post-state."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kcoord.impl.runtime.trace import MemorySink
from kcoord.impl.statemachine import MachineTable
from kcoord.impl.txn import LogAppendError

from .harness import PARTS, TIMEOUT_MS, Harness

TX = MachineTable.load("transaction")
SET_VARIABLES = {v.name for v in TX.variables if v.type.startswith("set")}


def never_read() -> int:
    raise AssertionError("a lazy argument the original decision did not read was read on replay")


def workload(h: Harness) -> None:
    a, b, c = "tr-a", "tr-b", "tr-c"
    r = h.init(a)
    h.add(a, r.producer_id, r.producer_epoch)
    h.add(a, r.producer_id, r.producer_epoch)  # already added: a rejection row with NONE
    h.end(a, r.producer_id, r.producer_epoch, "COMMIT", 3)
    h.settle()
    h.end(a, r.producer_id, r.producer_epoch, "COMMIT", 3)  # retry
    h.end(a, r.producer_id, r.producer_epoch, "ABORT", 5)  # TV2 abort with nothing added
    h.settle()
    h.run(h.coordinator.verify_partition(a, r.producer_id, r.producer_epoch, PARTS[0]))
    h.describe(a)
    h.describe("tr-nobody")
    r = h.init(b)
    h.add(b, r.producer_id, r.producer_epoch)
    shard = h.shard(b)
    append = shard.log.append

    def failing(*args: object, **kw: object) -> object:
        shard.log.append = append  # type: ignore[method-assign]
        raise LogAppendError("NOT_ENOUGH_REPLICAS")

    shard.log.append = failing  # type: ignore[method-assign]
    h.init(b)  # fence fails: FenceFailed
    h.init(b)  # fence again: InitProducerId + FenceAbort
    h.settle()
    h.init(b)
    h.init(b, pid=-1, epoch=3)  # INVALID_REQUEST
    r = h.init(c)
    h.add(c, r.producer_id, r.producer_epoch, [PARTS[2]])
    h.clock.advance(TIMEOUT_MS + 10_000)
    h.settle()  # the timeout abort: TimeoutExpired + FenceAbort, then CompleteTxn
    h.coordinator.unload(h.partition(c))
    h.coordinator.load(h.partition(c))  # load rows
    h.clock.advance(8 * 24 * 3600 * 1000)
    h.settle()  # expiration: Expire → Dead


def plain_state(row: Mapping[str, Any]) -> dict[str, Any]:
    state = {name: row[name] for name in (v.name for v in TX.variables)}
    for name in SET_VARIABLES:
        state[name] = frozenset(state[name])
    state["transactional_id"] = row["transactional_id"]
    state["state"] = row["to_state"]
    return state


def event_args(row: Mapping[str, Any]) -> dict[str, Any]:
    params, _ = TX.events[row["event"]]
    args: dict[str, Any] = {}
    for name, kind in params:
        value = row[f"arg_{name}"]
        if value is None and name == "new_producer_id":
            value = never_read
        elif kind.startswith("set"):
            value = frozenset(value)
        args[name] = value
    return args


def test_trace_rows_replay_through_decide(tmp_path: Path) -> None:
    sink = MemorySink()
    h = Harness(tmp_path, sink=sink)
    workload(h)
    rows = sink.rows["Transaction"]
    current: dict[str, dict[str, Any]] = {}
    seen_events: set[str] = set()
    last_seq: dict[str, int] = {}
    for row in rows:
        key = row["key"]
        if row["seq"] >= 0:
            assert row["seq"] > last_seq.get(key, -1), row
            last_seq[key] = row["seq"]
        if row["kind"] == "load":
            current[key] = plain_state(row)
            continue
        pre = current.get(key) or TX.fresh({"transactional_id": key})
        assert row["from_state"] == pre["state"], row
        decision = TX.decide(pre, row["event"], event_args(row), pending=row["pending"], strict=True)
        assert (decision.row.index, decision.error, decision.to_state) == (row["row"], row["error"], row["to_state"])
        after = decision.post if decision.post is not None else pre
        assert {k: after[k] for k in plain_state(row)} == plain_state(row), row
        if decision.post is not None:
            if decision.to_state in TX.final_states:
                current.pop(key, None)
            else:
                current[key] = dict(decision.post)
        seen_events.add(row["event"])
    assert seen_events == set(TX.events), set(TX.events) - seen_events
    assert any(r["kind"] == "load" for r in rows)
