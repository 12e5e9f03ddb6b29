"""The runtime's write path on real logs: durability before apply and answer, pending semantics, waiting, failures,
load by replay, coordinator epochs and trace rows. Uses the Transaction table with a small JSON record format."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from kcoord.impl.errors import KafkaError
from kcoord.impl.runtime.clock import ManualClock
from kcoord.impl.runtime.runtime import CoordinatorRuntime
from kcoord.impl.runtime.shard import Change, Plan, RecordBytes, Shard
from kcoord.impl.runtime.trace import MemorySink, Tracer
from kcoord.impl.statemachine import MachineTable
from kcoord.impl.storage.batch import RecordBatch
from kcoord.impl.storage.log import Durability

TX = MachineTable.load("transaction")


def encode(instance: Mapping[str, Any]) -> RecordBytes:
    value = {k: sorted(v) if isinstance(v, frozenset) else v for k, v in instance.items()}
    return instance["transactional_id"].encode(), json.dumps(value).encode()


class JsonSpec:
    def __init__(self) -> None:
        self.tables = {"Transaction": TX}
        self.checked = 0
        self.replayed: dict[str, dict[str, Any] | None] = {}

    def replay(self, shard: Shard, batch: RecordBatch, key: bytes | None, value: bytes | None, offset: int) -> None:
        assert key is not None
        instance = None
        if value is not None:
            instance = json.loads(value)
            instance["partitions"] = frozenset(instance["partitions"])
        self.replayed[key.decode()] = instance

    def check_record(self, change: Change, record: RecordBytes) -> None:
        assert change.decision.post is not None and record == encode(change.decision.post)
        self.checked += 1

    def on_loaded(self, shard: Shard) -> None:
        replayed, self.replayed = self.replayed, {}
        for txn_id, instance in replayed.items():
            shard.install(TX, (txn_id,), instance)


def make_runtime(tmp_path: Path, durability: Durability | None = None, sink: MemorySink | None = None,
                 clock: ManualClock | None = None) -> CoordinatorRuntime:
    return CoordinatorRuntime(topic="__transaction_state", data_dir=tmp_path, spec_factory=lambda p: JsonSpec(),
                              clock=clock or ManualClock(1_000), tracer=Tracer(sink), num_partitions=3,
                              durability=durability)


def init_plan(shard: Shard, txn_id: str, now_ms: int = 1, pid: int = 7) -> Plan:
    key = (txn_id,)
    inst = shard.instance_or_fresh(TX, key)
    args = dict(expected_producer_id=-1, expected_epoch=-1, timeout_ms=60000, max_timeout_ms=900000,
                new_producer_id=pid, now_ms=now_ms)
    pending = shard.pending("Transaction", key)
    d = TX.decide(inst, "InitProducerId", args, pending=pending)
    change = Change(TX, key, d, args, pending, record=0 if d.accepted else None)
    records = [encode(d.post)] if d.post is not None else []
    return Plan([change], records, response=lambda: (d.error, shard.get("Transaction", key)))


def submit_init(shard: Shard, txn_id: str, **kw: Any) -> Any:
    return shard.submit([("Transaction", (txn_id,))], lambda: init_plan(shard, txn_id, **kw))


def test_partition_for_matches_kafka() -> None:
    rt = CoordinatorRuntime(topic="t", data_dir=Path("/nonexistent"), spec_factory=lambda p: JsonSpec(),
                            clock=ManualClock())
    assert rt.partition_for("polygenelubricants") == 0 and rt.partition_for("test-txn") == 31


def test_not_owned_and_loading_errors(tmp_path: Path) -> None:
    rt = make_runtime(tmp_path)
    with pytest.raises(KafkaError) as e:
        rt.shard(0)
    assert e.value.name == "NOT_COORDINATOR"
    rt.load(0, wait=False)
    with pytest.raises(KafkaError) as e:
        rt.shard(0)
    assert e.value.name == "COORDINATOR_LOAD_IN_PROGRESS"
    rt.poll()
    assert rt.shard(0).partition == 0


def test_a_runtime_without_record_checks_applies_without_checking(tmp_path: Path) -> None:
    rt = CoordinatorRuntime(topic="__transaction_state", data_dir=tmp_path, spec_factory=lambda p: JsonSpec(),
                            clock=ManualClock(1_000), tracer=Tracer(None), num_partitions=3, check_records=False)
    shard = rt.load(0)
    assert not shard.check_records
    done = submit_init(shard, "t1")
    assert done.result()[0] == "NONE" and shard.get("Transaction", ("t1",)) is not None
    assert shard.spec.checked == 0


def test_per_batch_write_is_applied_and_answered_once_durable(tmp_path: Path) -> None:
    sink = MemorySink()
    rt = make_runtime(tmp_path, sink=sink)
    shard = rt.load(0)
    done = submit_init(shard, "t1")
    assert done.done
    error, instance = done.result()
    assert error == "NONE" and instance["producer_id"] == 7 and instance["producer_epoch"] == 0
    assert shard.log.durable_offset == 1 and shard.spec.checked == 1
    (row,) = sink.rows["Transaction"]
    assert (row["kind"], row["event"], row["from_state"], row["to_state"], row["seq"]) == \
        ("transition", "InitProducerId", "Empty", "Empty", 0)
    assert row["arg_new_producer_id"] == 7 and row["producer_epoch"] == 0 and row["partitions"] == []


def test_group_commit_holds_state_and_answer_until_the_flush(tmp_path: Path) -> None:
    clock = ManualClock(1_000)
    rt = make_runtime(tmp_path, Durability.group(max_delay_ms=5, max_bytes=1 << 20), clock=clock)
    shard = rt.load(0)
    done = submit_init(shard, "t1")
    assert not done.done and shard.get("Transaction", ("t1",)) is None
    assert shard.pending("Transaction", ("t1",))
    second = submit_init(shard, "t1")  # answer mode: sees the write in flight
    assert second.done and second.result()[0] == "CONCURRENT_TRANSACTIONS"
    rt.poll()
    assert not done.done  # not due yet
    clock.advance(5)
    rt.poll()
    assert done.done and done.result()[0] == "NONE" and not shard.pending("Transaction", ("t1",))


def test_wait_mode_runs_the_handler_after_the_write_in_flight(tmp_path: Path) -> None:
    clock = ManualClock(1_000)
    rt = make_runtime(tmp_path, Durability.group(max_delay_ms=5, max_bytes=1 << 20), clock=clock)
    shard = rt.load(0)
    first = submit_init(shard, "t1", pid=7)
    second = shard.submit([("Transaction", ("t1",))], lambda: init_plan(shard, "t1"), when_pending="wait")
    assert not first.done and not second.done
    clock.advance(5)
    rt.poll()
    assert first.done
    rt.flush()
    assert second.done and second.result()[1]["producer_epoch"] == 1  # ran on the state after the first write


def test_failed_append_applies_nothing_and_uses_the_fallback(tmp_path: Path) -> None:
    rt = make_runtime(tmp_path)
    shard = rt.load(0)
    shard.log.fail_next_append()

    def plan() -> Plan:
        p = init_plan(shard, "t1")
        p.on_failure = lambda e: Plan([], [], response=("COORDINATOR_NOT_AVAILABLE", None))
        return p

    done = shard.submit([("Transaction", ("t1",))], plan)
    assert done.result() == ("COORDINATOR_NOT_AVAILABLE", None)
    assert shard.get("Transaction", ("t1",)) is None and shard.log.log_end_offset == 0
    assert submit_init(shard, "t1").result()[0] == "NONE"  # the shard goes on


def test_reload_replays_the_log_with_a_higher_epoch(tmp_path: Path) -> None:
    sink = MemorySink()
    rt = make_runtime(tmp_path, sink=sink)
    shard = rt.load(0)
    submit_init(shard, "t1").result()
    submit_init(shard, "t1").result()
    assert shard.coordinator_epoch == 0
    rt.unload(0)
    with pytest.raises(KafkaError):
        rt.shard(0)
    again = rt.load(0)
    assert again.coordinator_epoch == 1
    assert again.get("Transaction", ("t1",))["producer_epoch"] == 1
    loads = [r for r in sink.rows["Transaction"] if r["kind"] == "load"]
    assert [(r["from_state"], r["to_state"], r["producer_epoch"], r["seq"] >> 32) for r in loads] == \
        [("Empty", "Empty", 1, 1)]  # the spec installs each key's last value, in the new epoch


def test_rejection_on_a_missing_instance_has_no_seq(tmp_path: Path) -> None:
    sink = MemorySink()
    rt = make_runtime(tmp_path, sink=sink)
    shard = rt.load(0)

    def plan() -> Plan:
        key = ("nobody",)
        args = dict(pid=5, epoch=0, parts=frozenset({"a-0"}), txn_version=0, now_ms=1)
        d = TX.decide(shard.instance_or_fresh(TX, key), "AddPartitions", args)
        return Plan([Change(TX, key, d, args)], [], response=d.error)

    assert shard.submit([("Transaction", ("nobody",))], plan).result() == "INVALID_PRODUCER_ID_MAPPING"
    (row,) = sink.rows["Transaction"]
    assert row["seq"] == -1 and row["kind"] == "reject" and shard.get("Transaction", ("nobody",)) is None


def test_unload_fails_requests_in_flight(tmp_path: Path) -> None:
    rt = make_runtime(tmp_path, Durability.group(max_delay_ms=50, max_bytes=1 << 20))
    shard = rt.load(0)
    done = submit_init(shard, "t1")
    rt.unload(0)
    with pytest.raises(KafkaError) as e:
        done.result()
    assert e.value.name == "NOT_COORDINATOR"


# ------------------------------------------------------------ group commit: one batch per turn of the loop


def test_group_commit_writes_the_plans_of_one_turn_as_one_batch(tmp_path: Path) -> None:
    clock = ManualClock(1_000)
    rt = make_runtime(tmp_path, Durability.group(max_delay_ms=5, max_bytes=1 << 20), clock=clock)
    shard = rt.load(0)
    plans: list[Plan] = []

    def keep(txn_id: str, pid: int) -> Plan:
        plans.append(init_plan(shard, txn_id, pid=pid))
        return plans[-1]

    done = [shard.submit([("Transaction", (f"t{i}",))], lambda i=i: keep(f"t{i}", 10 + i)) for i in range(5)]
    assert shard.in_flight == 5 and shard.log.log_end_offset == 0  # lingering in the open batch, not written
    assert rt.next_deadline_ms() == clock.now_ms()  # the next poll writes them
    clock.advance(5)  # the group-commit delay counts from the first submit, not from the write
    rt.poll()
    assert all(d.done for d in done) and [d.result()[1]["producer_id"] for d in done] == [10, 11, 12, 13, 14]
    (batch,) = list(shard.log.read(0))
    assert [r.offset for r in batch.records] == [0, 1, 2, 3, 4]
    assert [r.key for r in batch.records] == [f"t{i}".encode() for i in range(5)]
    assert [(p.appended.base_offset, p.appended.last_offset) for p in plans if p.appended] == \
        [(i, i) for i in range(5)]
    assert shard.spec.checked == 5 and shard.in_flight == 0


def test_a_failed_coalesced_batch_answers_every_plan_with_its_fallback(tmp_path: Path) -> None:
    rt = make_runtime(tmp_path, Durability.group(max_delay_ms=0, max_bytes=1 << 20))
    shard = rt.load(0)

    def plan(txn_id: str) -> Plan:
        p = init_plan(shard, txn_id)
        p.on_failure = lambda e: Plan([], [], response=("COORDINATOR_NOT_AVAILABLE", txn_id))
        return p

    done = [shard.submit([("Transaction", (t,))], lambda t=t: plan(t)) for t in ("a", "b", "c")]
    waiting = shard.submit([("Transaction", ("b",))], lambda: init_plan(shard, "b", pid=9), when_pending="wait")
    shard.log.fail_next_append()
    rt.poll()
    assert [d.result() for d in done] == [("COORDINATOR_NOT_AVAILABLE", t) for t in ("a", "b", "c")]
    assert shard.log.log_end_offset == 0 and shard.get("Transaction", ("a",)) is None
    assert not any(shard.pending("Transaction", (t,)) for t in ("a", "c"))
    rt.poll()  # the waiting request ran once "b" was released, and its own write went through
    assert waiting.result()[1]["producer_id"] == 9 and shard.log.log_end_offset == 1


def test_a_batch_with_producer_fields_goes_after_the_open_batch(tmp_path: Path) -> None:
    from kcoord.impl.runtime.shard import BatchAttributes

    rt = make_runtime(tmp_path, Durability.group(max_delay_ms=0, max_bytes=1 << 20))
    shard = rt.load(0)
    first = submit_init(shard, "t1", pid=7)

    def transactional() -> Plan:
        p = init_plan(shard, "t2", pid=8)
        p.batch = BatchAttributes(producer_id=8, producer_epoch=0)
        return p

    second = shard.submit([("Transaction", ("t2",))], transactional)
    rt.poll()
    assert first.result()[0] == "NONE" and second.result()[0] == "NONE"
    batches = list(shard.log.read(0))
    assert [(b.base_offset, b.producer_id, b.is_transactional) for b in batches] == [(0, -1, False), (1, 8, True)]


def test_unload_fails_plans_still_in_the_open_batch(tmp_path: Path) -> None:
    rt = make_runtime(tmp_path, Durability.group(max_delay_ms=0, max_bytes=1 << 20))
    shard = rt.load(0)
    done = submit_init(shard, "t1")
    assert shard.log.log_end_offset == 0
    rt.unload(0)
    with pytest.raises(KafkaError) as e:
        done.result()
    assert e.value.name == "NOT_COORDINATOR"
    assert list(rt.load(0).log.read(0)) == []  # nothing was written


def test_a_write_a_timer_makes_is_written_and_answered(tmp_path: Path) -> None:
    # A timer whose callback writes (a session expiry, a regex resolution: `submit_internal`) opens a batch while
    # the runtime fires timers inside `poll`; that shard must stay among those the next polls write and flush
    # (it was forgotten, and the write never completed: the group's key stayed pending and its heartbeats waited
    # forever).
    clock = ManualClock(1_000)
    rt = make_runtime(tmp_path, Durability.group(max_delay_ms=0, max_bytes=1 << 20), clock=clock)
    shard = rt.load(0)
    rt.poll()
    made: list[Any] = []
    shard.schedule("expire", clock.now_ms() + 10, lambda: made.append(submit_init(shard, "t1")))
    clock.advance(10)
    rt.poll()
    assert len(made) == 1
    for _ in range(3):
        rt.poll()
    assert made[0].done and made[0].result()[0] == "NONE"
    assert not shard.pending("Transaction", ("t1",))


# ------------------------------------------------------------ a lone request's flush looks at the shards it must


class _LookedAt(Shard):
    """A shard that counts how often its runtime looks at it (`in_flight`: the first thing every pass over the
    shards reads)."""

    looks = 0

    @property
    def in_flight(self) -> int:
        self.looks += 1
        return super().in_flight


def test_flush_looks_only_at_the_shards_with_plans_in_flight(tmp_path: Path) -> None:
    """Shards written since the last poll but settled since (their plans answered by a flush) are not looked at by
    the next `flush`, `write_open` or `logs_to_flush` (with `os` durability polls are rare: most requests flush
    alone); the shard with a plan in flight is, and its plan is answered."""
    rt = make_runtime(tmp_path, Durability.os())
    shards = [rt.load(p) for p in range(3)]
    first = [submit_init(shards[0], "a"), submit_init(shards[1], "b")]
    assert rt.flush() == 2 and all(d.done for d in first)
    for shard in shards[:2]:
        shard.__class__ = _LookedAt  # (written since the last poll, settled since)
    done = [submit_init(shards[2], "c")]
    assert rt.write_open() == 1 and done[0].done
    done.append(submit_init(shards[2], "d"))
    assert rt.logs_to_flush() == []  # (os: written is durable)
    assert rt.flush() == 1 and done[1].done
    assert rt.flush() == 0 and rt.write_open() == 0 and rt.logs_to_flush() == []
    assert [s.looks for s in shards[:2]] == [0, 0]  # type: ignore[attr-defined]
    assert [(d.result()[0], d.result()[1]["producer_id"]) for d in (*first, *done)] == [("NONE", 7)] * 4
    rt.poll()  # (a poll still looks at every shard written since the last one: its cleaning checks)
    assert all(s.looks > 0 for s in shards[:2])  # type: ignore[attr-defined]


def test_a_plan_submitted_while_a_flush_completes_another_is_answered_by_the_next_flush(tmp_path: Path) -> None:
    """A shard that starts a write while `flush` completes another shard's plan (a completion callback submits
    to it) stays to be flushed: the flush that runs it or the next one answers it."""
    rt = make_runtime(tmp_path, Durability.os())
    shards = [rt.load(p) for p in range(3)]
    later: list[Any] = []
    for index in (0, 2):  # the callback's shard both before and after the completing one in the runtime's order
        first = submit_init(shards[1], f"first-{index}", pid=10 + index)
        first.then(lambda _, index=index: later.append(submit_init(shards[index], f"then-{index}", pid=20 + index)))
        rt.flush()
        assert first.done and len(later) == (1 if index == 0 else 2)
        rt.flush()
        assert later[-1].done and later[-1].result()[0] == "NONE"
        assert later[-1].result()[1]["producer_id"] == 20 + index
    assert all(s.in_flight == 0 for s in shards)
