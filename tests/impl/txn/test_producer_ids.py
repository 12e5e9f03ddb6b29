"""The ProducerIdManager wiring: an id is taken only when the spec's chosen row uses it; no block → the request is
answered COORDINATOR_LOAD_IN_PROGRESS and nothing is written; blocks roll over without a gap in service."""

from __future__ import annotations

from pathlib import Path

from kcoord.impl.storage.producer_ids import BlockCallback, ProducerIdBlockStore, ProducerIdManager

from .harness import TIMEOUT_MS, Harness

T = "txn-pids"


def next_idempotent_id(h: Harness) -> int:
    r = h.run(h.coordinator.init_producer_id(None, 0))
    assert r.error == "NONE"
    return int(r.producer_id)


def test_ids_are_taken_only_by_rows_that_use_them(h: Harness) -> None:
    first = next_idempotent_id(h)
    r = h.init(T)  # a new transactional id: takes one
    assert r.producer_id == first + 1
    assert h.init(T).producer_epoch == 1  # an epoch bump: takes none
    assert h.init("txn-pids-other", 0).error == "INVALID_TRANSACTION_TIMEOUT"  # a rejection: takes none
    h.add(T, r.producer_id, 1)
    assert h.end(T, r.producer_id, 1, "COMMIT", 5).error == "NONE"  # TV2 without overflow: takes none
    h.settle()
    assert next_idempotent_id(h) == first + 2


def test_no_block_yet_answers_load_in_progress_and_writes_nothing(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    waiting: list[BlockCallback] = []
    store = ProducerIdBlockStore(tmp_path / "controller")
    h.producer_ids = manager = ProducerIdManager(lambda on_complete: waiting.append(on_complete),
                                                 clock_ms=h.clock.now_ms)
    h.coordinator.producer_ids = manager
    h.coordinator.ctx.new_producer_id = manager.generate_producer_id
    mark = h.end_offset(T)
    assert h.init(T).error == "COORDINATOR_LOAD_IN_PROGRESS"
    assert h.run(h.coordinator.init_producer_id(None, 0)).error == "COORDINATOR_LOAD_IN_PROGRESS"
    assert h.records_since(T, mark) == [] and h.get(T) is None
    (deliver,) = waiting  # one request in flight, however many callers asked
    deliver(store.allocate())
    r = h.init(T, TIMEOUT_MS)
    assert (r.error, r.producer_id, r.producer_epoch) == ("NONE", 0, 0)


def test_ids_roll_over_to_the_next_block_and_are_never_reused(h: Harness) -> None:
    ids = [next_idempotent_id(h) for _ in range(2_100)]
    assert len(set(ids)) == len(ids) and ids == sorted(ids)
    assert ids[0] == 1_000 and ids[-1] == 3_099  # blocks 1000-1999, 2000-2999, 3000-...
    assert h.store.next_first_id == 4_000  # block 3000-3999 was prefetched when id 2900 was handed out
