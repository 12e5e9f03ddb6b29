"""`Durability.fsync` rounds in the runtime (`begin_flush` .. `flushed`): a poll after a round looks only at the shards
that may have progress (those whose logs the round covered, and those written since the last look), never at a shard
still waiting for a round; and no answer goes out before its records are durable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kcoord.impl.runtime.clock import ManualClock
from kcoord.impl.runtime.runtime import CoordinatorRuntime
from kcoord.impl.runtime.shard import Shard
from kcoord.impl.storage.log import Durability

from .test_runtime import make_runtime, submit_init


def _count_looks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The partitions whose shard `complete_durable` was called on, in call order."""
    looked: list[int] = []
    complete = Shard.complete_durable

    def counted(self: Shard) -> int:
        looked.append(self.partition)
        return complete(self)

    monkeypatch.setattr(Shard, "complete_durable", counted)
    return looked


def _end_round(rt: CoordinatorRuntime, tickets: list[Any]) -> None:
    """What `Cluster.end_flush` does after the fsync threads: each ticket's fsync ended, then the runtime is told."""
    for ticket in tickets:
        ticket.fsync()
        ticket.log.end_flush(ticket)
    rt.flushed()


def test_a_round_end_looks_only_at_the_shards_it_covered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rt = make_runtime(tmp_path, Durability.fsync())
    shards = [rt.load(p) for p in range(3)]
    while rt.poll():  # (each load's first look: nothing to compact)
        pass
    looked = _count_looks(monkeypatch)
    first = [submit_init(shards[0], "a"), submit_init(shards[1], "b")]
    assert rt.poll() == 2 and sorted(looked) == [0, 1]  # written: appended, not durable, not answered
    assert not any(c.done for c in first)
    tickets = rt.begin_flush()
    assert sorted(t.log.path.name for t in tickets) == ["__transaction_state-0", "__transaction_state-1"]
    late = submit_init(shards[2], "c")  # arrives while the round is in flight: waits for the next one
    looked.clear()
    rt.poll()
    assert looked == [2] and not late.done and not any(c.done for c in first)
    looked.clear()
    assert rt.poll() == 0 and looked == []  # nothing can progress until the round ends: no shard is looked at
    _end_round(rt, tickets)
    looked.clear()
    rt.poll()
    assert sorted(looked) == [0, 1], "the round's end looks at the shards it covered, not at shard 2 still waiting"
    assert all(c.done and c.result()[0] == "NONE" for c in first)
    assert not late.done and shards[2].get("Transaction", ("c",)) is None  # its records are not durable yet
    looked.clear()
    assert rt.poll() == 0 and looked == []
    (ticket,) = rt.begin_flush()
    assert ticket.log is shards[2].log
    _end_round(rt, [ticket])
    rt.poll()
    assert late.done and late.result()[0] == "NONE" and shards[2].log.durable_offset == 1


def test_no_answer_before_its_round_has_made_it_durable(tmp_path: Path) -> None:
    rt = make_runtime(tmp_path, Durability.fsync())
    shard = rt.load(0)
    done = submit_init(shard, "t1")
    for _ in range(3):
        rt.poll()
    assert not done.done and shard.get("Transaction", ("t1",)) is None and shard.log.durable_offset == 0
    (ticket,) = rt.begin_flush()
    ticket.fsync()  # (on disk, but the round has not ended: its end is what makes the answers go)
    rt.poll()
    assert not done.done and shard.get("Transaction", ("t1",)) is None
    ticket.log.end_flush(ticket)
    rt.flushed()
    rt.poll()
    assert done.done and done.result()[0] == "NONE" and shard.get("Transaction", ("t1",)) is not None


def test_other_durabilities_still_look_at_every_busy_shard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Group commit with a linger flushes from `poll` once due: every shard with writes in flight is looked at by every
    poll until then (no round tells the runtime), and answered once its flush was due."""
    clock = ManualClock(1_000)
    rt = make_runtime(tmp_path, Durability.group(max_delay_ms=5, max_bytes=1 << 20), clock=clock)
    shards = [rt.load(p) for p in range(2)]
    while rt.poll():
        pass
    looked = _count_looks(monkeypatch)
    done = [submit_init(s, f"t{s.partition}") for s in shards]
    rt.poll()
    assert sorted(looked) == [0, 1] and not any(c.done for c in done)  # not due yet
    looked.clear()
    clock.advance(5)
    rt.poll()
    assert sorted(looked) == [0, 1] and all(c.done and c.result()[0] == "NONE" for c in done)
