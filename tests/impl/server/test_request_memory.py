"""`RequestMemory`: the cap on bytes of requests held across connections, and the allowance of small requests."""

from __future__ import annotations

import asyncio

import pytest

from kcoord.impl.server.request_memory import SMALL_REQUEST_BYTES, RequestMemory

MiB = 1 << 20


async def _acquired(memory: RequestMemory, size: int, within_s: float = 0.05) -> bool:
    try:
        await asyncio.wait_for(memory.acquire(size), within_s)
    except TimeoutError:
        return False
    return True


def test_large_requests_wait_past_the_cap_and_small_ones_do_not() -> None:
    async def scenario() -> None:
        memory = RequestMemory(10 * MiB)
        assert await _acquired(memory, 6 * MiB) and await _acquired(memory, 4 * MiB)  # 10 of 10 MiB
        waiting = asyncio.ensure_future(memory.acquire(2 * MiB))
        await asyncio.sleep(0.01)
        assert not waiting.done() and memory.waiting == 1
        assert await _acquired(memory, SMALL_REQUEST_BYTES)  # heartbeats and commits still go
        memory.release(4 * MiB)
        await asyncio.wait_for(waiting, 1)
        assert memory.in_use_bytes == 6 * MiB + 2 * MiB + SMALL_REQUEST_BYTES and memory.waiting == 0

    asyncio.run(scenario())


def test_a_frame_larger_than_the_cap_is_read_alone() -> None:
    """As Kafka's pool lets one allocation overshoot: a frame over the cap waits until no other large one is held."""
    async def scenario() -> None:
        memory = RequestMemory(4 * MiB)
        assert await _acquired(memory, 2 * MiB)
        assert not await _acquired(memory, 8 * MiB)
        memory.release(2 * MiB)
        assert await _acquired(memory, 8 * MiB)
        assert not await _acquired(memory, 2 * MiB)

    asyncio.run(scenario())


def test_small_requests_have_their_own_bounded_allowance() -> None:
    async def scenario() -> None:
        memory = RequestMemory(100 * MiB)
        for _ in range(16):
            assert await _acquired(memory, SMALL_REQUEST_BYTES)
        assert not await _acquired(memory, 1)  # 16 MiB of small requests held
        assert await _acquired(memory, 50 * MiB)

    asyncio.run(scenario())


def test_a_cap_must_be_positive() -> None:
    with pytest.raises(ValueError, match="must be positive"):
        RequestMemory(0)
