"""Bytes of requests being read and not yet answered, across every connection of a server (Kafka's
`queued.max.request.bytes` and its `MemoryPool`): past the cap, no more request bodies are read until memory frees.

Owns `RequestMemory`. A connection asks for a frame's size (`acquire`) as soon as it has read the 4-byte size prefix
and before it reads the body; the frame gives it back once it is answered (`release`). While a connection waits,
nothing more is read from its socket (its stream buffer stops at asyncio's high-water mark, then the kernel's
flow control holds the peer), so a peer that declares a large frame and sends it slowly, or never finishes it, holds
at most its own frame's share.

Two allowances, so that peers stalling in the middle of large requests never hold up the small ones (heartbeats,
commits, fetches — what keeps groups alive): a frame over `SMALL_REQUEST_BYTES` draws on `cap_bytes` (one frame larger
than the cap is read alone, when no other large frame is held, as Kafka's pool lets one allocation overshoot);
smaller frames draw on `min(cap_bytes, SMALL_ALLOWANCE_BYTES)` of their own. At most `cap_bytes` + 16 MiB of request
bodies are held at once, however many connections there are.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import asyncio
from typing import Final

__all__ = ("SMALL_ALLOWANCE_BYTES", "SMALL_REQUEST_BYTES", "RequestMemory")

SMALL_REQUEST_BYTES: Final = 1 << 20  # a producer's default max.request.size: larger ones are "large"
SMALL_ALLOWANCE_BYTES: Final = 16 << 20


class RequestMemory:
    """See the module docstring. Bound to the event loop that uses it (every listener of one server shares it)."""

    __slots__ = ("_large", "_small", "_waiters", "cap_bytes", "small_cap_bytes")

    def __init__(self, cap_bytes: int) -> None:
        if cap_bytes < 1:
            raise ValueError(f"queued_max_request_bytes must be positive, got {cap_bytes}")
        self.cap_bytes = cap_bytes
        self.small_cap_bytes = min(cap_bytes, SMALL_ALLOWANCE_BYTES)
        self._large = 0
        self._small = 0
        self._waiters: list[asyncio.Future[None]] = []

    @property
    def in_use_bytes(self) -> int:
        return self._large + self._small

    @property
    def waiting(self) -> int:
        """Connections waiting for memory now (their sockets are not read)."""
        return sum(1 for waiter in self._waiters if not waiter.done())

    def _fits(self, size: int) -> bool:
        if size > SMALL_REQUEST_BYTES:
            return self._large == 0 or self._large + size <= self.cap_bytes
        return self._small == 0 or self._small + size <= self.small_cap_bytes

    def try_acquire(self, size: int) -> bool:
        """Hold `size` bytes now if they fit; False: `acquire` must wait for them."""
        if not self._fits(size):
            return False
        if size > SMALL_REQUEST_BYTES:
            self._large += size
        else:
            self._small += size
        return True

    async def acquire(self, size: int) -> None:
        """Wait until `size` bytes of request may be held, then hold them."""
        while not self._fits(size):
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
        if size > SMALL_REQUEST_BYTES:
            self._large += size
        else:
            self._small += size

    def release(self, size: int) -> None:
        """Give back what `acquire(size)` took, and let the waiting connections look again."""
        if size > SMALL_REQUEST_BYTES:
            self._large -= size
        else:
            self._small -= size
        assert self._large >= 0 and self._small >= 0, "released more request memory than was acquired"
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
