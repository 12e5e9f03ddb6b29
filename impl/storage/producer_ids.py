"""Producer ids: a durable block allocator and the coordinator-side manager that hands out ids from blocks.

``ProducerIdBlockStore`` plays the KRaft controller's part (``ProducerIdControlManager``): consecutive blocks of
1000 ids starting at 0, the next block start persisted *before* a block is handed out, so no block is ever given
twice, across restarts and crashes (a crash between allocation and use wastes a block, which is harmless).

``ProducerIdManager`` is the broker's ``RPCProducerIdManager``: ids are claimed sequentially from the current
block; when the id just handed out is ``first + 900`` the next block is requested (one request in flight, 50 ms
back-off after a failed one); an exhausted block is swapped for the prefetched one (at most 3 swaps per call); with
no block available the call fails with ``COORDINATOR_LOAD_IN_PROGRESS`` (retriable) and a request is triggered.
Synchronous: the injectable ``BlockRequester`` may deliver a block immediately or later (the simulator delays it).
Two refinements over Kafka: a block delivered synchronously during the call is used by that call, and a new block
must start *after* the current block's last id (Kafka accepts one starting at it, an overlap of one id).
Must not import ``kcoord.model``.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Protocol

from crc32c import crc32c

from ..errors import Errors, KafkaError
from ._files import DamagedFileError, atomic_write, quoted_content

__all__ = [
    "PREFETCH_THRESHOLD",
    "PRODUCER_ID_BLOCK_SIZE",
    "BlockRequester",
    "CoordinatorLoadInProgressError",
    "DamagedProducerIdFile",
    "ProducerIdBlock",
    "ProducerIdBlockStore",
    "ProducerIdManager",
    "ProducerIdStoreError",
    "store_requester",
]

PRODUCER_ID_BLOCK_SIZE: Final = 1000  # ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE
PREFETCH_THRESHOLD: Final = 0.90  # ProducerIdManager.PidPrefetchThreshold
RETRY_BACKOFF_MS: Final = 50
_ITERATION_LIMIT: Final = 3
_INT64_MAX: Final = (1 << 63) - 1

_FILE_MAGIC: Final = b"KPID"
_FILE_VERSION: Final = 0
_FILE_FORMAT = struct.Struct(">4shq")  # magic, version, next block's first producer id; then a CRC-32C (uint32)
_FILE_CRC = struct.Struct(">I")


class CoordinatorLoadInProgressError(KafkaError):
    """No producer-id block is available yet; the client retries (``Errors.COORDINATOR_LOAD_IN_PROGRESS``)."""

    def __init__(self, message: str) -> None:
        super().__init__(Errors.COORDINATOR_LOAD_IN_PROGRESS, message)


class ProducerIdStoreError(Exception):
    """The block store's file is unreadable or the id space is exhausted; never answered by guessing."""


class DamagedProducerIdFile(DamagedFileError, ProducerIdStoreError):
    """The block store's file does not read: the next producer id is never guessed (an id handed out twice would mix
    two producers' sequences and transactions)."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(path, f"not a producer id block file ({problem}); refusing to guess the next block",
                         "restore it from a copy: it must name a producer id above every one handed out (removing it "
                         "starts again at 0 and hands out ids that producers hold)")


@dataclass(frozen=True, slots=True)
class ProducerIdBlock:
    first_producer_id: int
    size: int = PRODUCER_ID_BLOCK_SIZE

    @property
    def last_producer_id(self) -> int:
        return self.first_producer_id + self.size - 1

    @property
    def next_block_first_id(self) -> int:
        return self.first_producer_id + self.size


class ProducerIdBlockStore:
    """Durable, monotonic block allocator persisted in one small file (``atomic_write``: temp, fsync, rename)."""

    def __init__(self, path: str | os.PathLike[str], *, block_size: int = PRODUCER_ID_BLOCK_SIZE) -> None:
        if block_size <= 0:
            raise ValueError(f"block_size must be positive, got {block_size}")
        self.path = Path(path)
        self.block_size = block_size
        self._next_first_id = self._load()

    @property
    def next_first_id(self) -> int:
        """The first id of the block ``allocate`` will hand out next."""
        return self._next_first_id

    def _load(self) -> int:
        self.path.with_name(self.path.name + ".tmp").unlink(missing_ok=True)  # a crash before the rename
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return 0
        if len(data) != _FILE_FORMAT.size + _FILE_CRC.size:
            raise DamagedProducerIdFile(self.path, f"{len(data)} bytes, expected {_FILE_FORMAT.size + _FILE_CRC.size}"
                                                   f" ({quoted_content(data)})")
        magic, version, next_first_id = _FILE_FORMAT.unpack_from(data)
        (stored_crc,) = _FILE_CRC.unpack_from(data, _FILE_FORMAT.size)
        if magic != _FILE_MAGIC or version != _FILE_VERSION or stored_crc != crc32c(data[:_FILE_FORMAT.size]):
            raise DamagedProducerIdFile(self.path, f"bad magic {magic!r}, version {version} or CRC")
        if next_first_id < 0:
            raise DamagedProducerIdFile(self.path, f"negative next producer id {next_first_id}")
        return int(next_first_id)

    def allocate(self) -> ProducerIdBlock:
        """The next block, durably reserved before it is returned. Raises ``ProducerIdStoreError`` when the id
        space is exhausted (Kafka: ``UNKNOWN_SERVER_ERROR``) and ``OSError`` if it cannot be persisted."""
        first = self._next_first_id
        if first > _INT64_MAX - self.block_size:
            raise ProducerIdStoreError(f"producer id space exhausted: next block would start at {first}")
        block = ProducerIdBlock(first, self.block_size)
        header = _FILE_FORMAT.pack(_FILE_MAGIC, _FILE_VERSION, block.next_block_first_id)
        atomic_write(self.path, header + _FILE_CRC.pack(crc32c(header)))
        self._next_first_id = block.next_block_first_id
        return block


BlockCallback = Callable[[ProducerIdBlock | BaseException], None]


class BlockRequester(Protocol):
    """Asks for the next block; calls ``on_complete`` exactly once, now or later, with a block or the error."""

    def __call__(self, on_complete: BlockCallback) -> None: ...


def store_requester(store: ProducerIdBlockStore) -> BlockRequester:
    """A requester that allocates from ``store`` immediately (single-node kcoord)."""

    def request(on_complete: BlockCallback) -> None:
        try:
            block = store.allocate()
        except (OSError, ProducerIdStoreError) as e:
            on_complete(e)
            return
        on_complete(block)

    return request


class ProducerIdManager:
    """Hands out producer ids from blocks; see the module docstring for Kafka's rules it follows."""

    def __init__(self, requester: BlockRequester, *, clock_ms: Callable[[], int]) -> None:
        self._requester = requester
        self._clock_ms = clock_ms
        self._current: ProducerIdBlock | None = None
        self._next_id = 0  # next id to claim from the current block
        self._prefetched: ProducerIdBlock | None = None
        self._request_in_flight = False
        self._backoff_deadline_ms: int | None = None
        self.last_error: BaseException | None = None

    @property
    def has_valid_block(self) -> bool:
        return self._prefetched is not None

    @property
    def request_in_flight(self) -> bool:
        return self._request_in_flight

    def generate_producer_id(self) -> int:
        """The next producer id, or ``CoordinatorLoadInProgressError`` while waiting for a block."""
        for _ in range(_ITERATION_LIMIT):
            block = self._current
            if block is not None and self._next_id <= block.last_producer_id:
                producer_id = self._next_id
                self._next_id += 1
                if producer_id == block.first_producer_id + int(block.size * PREFETCH_THRESHOLD):
                    self._maybe_request_next_block()
                return producer_id
            if self._prefetched is None:
                self._maybe_request_next_block()  # may deliver synchronously
            if self._prefetched is None:
                raise CoordinatorLoadInProgressError("Producer ID block is full. Waiting for next block")
            self._current, self._prefetched = self._prefetched, None
            self._next_id = self._current.first_producer_id
            self._request_in_flight = False
        raise CoordinatorLoadInProgressError("Producer ID block is full. Waiting for next block")

    def _maybe_request_next_block(self) -> None:
        deadline = self._backoff_deadline_ms
        if deadline is not None and self._clock_ms() < deadline:
            return
        if self._prefetched is None and not self._request_in_flight:
            self._request_in_flight = True
            self._backoff_deadline_ms = None
            self._requester(self._on_block)

    def _on_block(self, result: ProducerIdBlock | BaseException) -> None:
        """Kafka's ``handleAllocateProducerIdsResponse``, including its sanity checks on the new block."""
        current_last = -1 if self._current is None else self._current.last_producer_id
        if isinstance(result, BaseException):
            self.last_error = result
        elif result.first_producer_id <= current_last:
            # Kafka's check is `start < current.lastProducerId`, which lets a block start *at* the last id (possibly
            # already handed out); we also reject that one-id overlap.
            self.last_error = ValueError(f"producer id block {result} overlaps or precedes the current block "
                                         f"{self._current}")
        elif result.first_producer_id < 0 or result.size < 0 or result.first_producer_id > _INT64_MAX - result.size:
            self.last_error = ValueError(f"producer id block {result} has an invalid id range")
        else:
            self._prefetched = result
            return
        self._backoff_deadline_ms = self._clock_ms() + RETRY_BACKOFF_MS
        self._request_in_flight = False
