"""Producer-id blocks: durable, never reused; the manager's prefetch, swap, back-off and load-in-progress rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from kcoord.impl.errors import KafkaError
from kcoord.impl.storage.producer_ids import (
    RETRY_BACKOFF_MS,
    BlockCallback,
    CoordinatorLoadInProgressError,
    ProducerIdBlock,
    ProducerIdBlockStore,
    ProducerIdManager,
    ProducerIdStoreError,
    store_requester,
)

from .conftest import ManualClock


def test_store_hands_out_consecutive_blocks_from_zero(tmp_path: Path) -> None:
    store = ProducerIdBlockStore(tmp_path / "producer-ids")
    blocks = [store.allocate() for _ in range(3)]
    assert blocks == [ProducerIdBlock(0), ProducerIdBlock(1000), ProducerIdBlock(2000)]
    assert (blocks[1].first_producer_id, blocks[1].last_producer_id) == (1000, 1999)
    data = (tmp_path / "producer-ids").read_bytes()
    assert data[:4] == b"KPID" and int.from_bytes(data[6:14], "big") == 3000


def test_store_never_reuses_a_block_across_reopen_or_crash(tmp_path: Path) -> None:
    path = tmp_path / "producer-ids"
    seen: list[int] = []
    for _ in range(4):
        store = ProducerIdBlockStore(path)  # "restart"
        seen.append(store.allocate().first_producer_id)
        seen.append(store.allocate().first_producer_id)
        del store  # crash between allocation and use: those blocks are simply never used
    assert seen == [i * 1000 for i in range(8)]
    # A crash during the write (before the rename) leaves a temp file; the last durable value wins.
    (tmp_path / "producer-ids.tmp").write_bytes(b"partial")
    store = ProducerIdBlockStore(path)
    assert store.next_first_id == 8000 and not (tmp_path / "producer-ids.tmp").exists()


@pytest.mark.parametrize("damage", [b"", b"KPID", b"XXXX" + bytes(14)])
def test_store_refuses_to_guess_after_damage(tmp_path: Path, damage: bytes) -> None:
    path = tmp_path / "producer-ids"
    ProducerIdBlockStore(path).allocate()
    path.write_bytes(damage)
    with pytest.raises(ProducerIdStoreError, match="refusing to guess"):
        ProducerIdBlockStore(path)


def test_store_detects_a_flipped_bit(tmp_path: Path) -> None:
    path = tmp_path / "producer-ids"
    ProducerIdBlockStore(path).allocate()
    data = bytearray(path.read_bytes())
    data[10] ^= 0x40
    path.write_bytes(bytes(data))
    with pytest.raises(ProducerIdStoreError):
        ProducerIdBlockStore(path)


def test_store_exhaustion(tmp_path: Path) -> None:
    store = ProducerIdBlockStore(tmp_path / "p", block_size=2**62)
    store.allocate()
    with pytest.raises(ProducerIdStoreError, match="exhausted"):
        store.allocate()


def test_manager_prefetches_at_900_and_swaps_when_exhausted(tmp_path: Path, clock: ManualClock) -> None:
    store = ProducerIdBlockStore(tmp_path / "p")
    manager = ProducerIdManager(store_requester(store), clock_ms=clock)
    ids = [manager.generate_producer_id() for _ in range(900)]
    assert ids == list(range(900))
    assert store.next_first_id == 1000  # only the first block so far
    assert manager.generate_producer_id() == 900  # first + 900: the next block is requested now
    assert store.next_first_id == 2000 and manager.has_valid_block
    more = [manager.generate_producer_id() for _ in range(1600)]
    assert more == list(range(901, 2501))  # swapped to block 1000 at id 1000, prefetched 2000 at 1900
    assert store.next_first_id == 3000


class DelayedRequester:
    """Queues requests; the test decides when (and with what) each completes, like the simulator does."""

    def __init__(self) -> None:
        self.waiting: list[BlockCallback] = []
        self.requests = 0

    def __call__(self, on_complete: BlockCallback) -> None:
        self.requests += 1
        self.waiting.append(on_complete)

    def complete(self, result: ProducerIdBlock | BaseException) -> None:
        self.waiting.pop(0)(result)


def test_manager_without_a_block_answers_load_in_progress(clock: ManualClock) -> None:
    requester = DelayedRequester()
    manager = ProducerIdManager(requester, clock_ms=clock)
    with pytest.raises(CoordinatorLoadInProgressError) as info:
        manager.generate_producer_id()
    assert isinstance(info.value, KafkaError) and info.value.name == "COORDINATOR_LOAD_IN_PROGRESS"
    assert requester.requests == 1 and manager.request_in_flight
    with pytest.raises(CoordinatorLoadInProgressError):
        manager.generate_producer_id()
    assert requester.requests == 1  # one request in flight at a time
    requester.complete(ProducerIdBlock(0, 10))
    assert [manager.generate_producer_id() for _ in range(9)] == list(range(9))
    assert requester.requests == 1
    assert manager.generate_producer_id() == 9  # first + 0.9 * size: handing it out requests the next block
    assert requester.requests == 2
    with pytest.raises(CoordinatorLoadInProgressError):
        manager.generate_producer_id()  # block exhausted, prefetch still outstanding
    requester.complete(ProducerIdBlock(10, 10))
    assert manager.generate_producer_id() == 10


def test_manager_backs_off_after_a_failed_request(clock: ManualClock) -> None:
    requester = DelayedRequester()
    manager = ProducerIdManager(requester, clock_ms=clock)
    with pytest.raises(CoordinatorLoadInProgressError):
        manager.generate_producer_id()
    requester.complete(OSError("controller unavailable"))
    assert isinstance(manager.last_error, OSError) and not manager.request_in_flight
    with pytest.raises(CoordinatorLoadInProgressError):
        manager.generate_producer_id()
    assert requester.requests == 1  # within the 50 ms back-off: no new request
    clock.advance(RETRY_BACKOFF_MS)
    with pytest.raises(CoordinatorLoadInProgressError):
        manager.generate_producer_id()
    assert requester.requests == 2


def test_manager_ignores_a_non_monotonic_block(clock: ManualClock) -> None:
    requester = DelayedRequester()
    manager = ProducerIdManager(requester, clock_ms=clock)
    with pytest.raises(CoordinatorLoadInProgressError):
        manager.generate_producer_id()
    requester.complete(ProducerIdBlock(5000, 10))
    assert [manager.generate_producer_id() for _ in range(10)] == list(range(5000, 5010))  # 5009 prefetches
    requester.complete(ProducerIdBlock(0, 10))  # goes backwards: ignored, back-off starts
    assert not manager.has_valid_block and isinstance(manager.last_error, ValueError)
    with pytest.raises(CoordinatorLoadInProgressError):
        manager.generate_producer_id()
    assert requester.requests == 2  # backing off


def test_manager_over_restarts_never_repeats_an_id(tmp_path: Path, clock: ManualClock) -> None:
    path = tmp_path / "p"
    handed_out: list[int] = []
    for run in range(3):
        manager = ProducerIdManager(store_requester(ProducerIdBlockStore(path)), clock_ms=clock)
        handed_out += [manager.generate_producer_id() for _ in range(450 * (run + 1))]
    assert len(handed_out) == len(set(handed_out))
    assert handed_out[:450] == list(range(450)) and handed_out[450] == 1000  # a restart starts a fresh block


def test_manager_rejects_a_block_overlapping_the_last_id(clock: ManualClock) -> None:
    requester = DelayedRequester()
    manager = ProducerIdManager(requester, clock_ms=clock)
    with pytest.raises(CoordinatorLoadInProgressError):
        manager.generate_producer_id()
    requester.complete(ProducerIdBlock(0, 10))
    assert [manager.generate_producer_id() for _ in range(10)] == list(range(10))
    requester.complete(ProducerIdBlock(9, 10))  # Kafka would accept this and hand out 9 twice
    assert not manager.has_valid_block
