"""`run_soon` and `Driven`: a dispatch that suspends is resumed by the future it waits for, without an asyncio task."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kcoord.impl.server.peer import Driven, run_soon


class _Outcome:
    def __init__(self) -> None:
        self.done: list[Any] = []
        self.failed: list[BaseException] = []


def _drive(coro: Any) -> tuple[Driven | None, _Outcome]:
    out = _Outcome()
    return run_soon(coro, out.done.append, out.failed.append), out


def _run(main: Any) -> list[dict[str, Any]]:
    """Run `main()` on a new loop; returns what the loop's exception handler was given (a callback that raised)."""
    errors: list[dict[str, Any]] = []

    async def wrapped() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _loop, context: errors.append(context))
        await main()

    asyncio.run(wrapped())
    return errors


def test_a_dispatch_that_needs_no_wait_is_answered_at_once() -> None:
    async def main() -> None:
        async def answer() -> int:
            return 7

        driven, out = _drive(answer())
        assert driven is None and out.done == [7]

    assert _run(main) == []


def test_a_suspended_dispatch_resumes_through_futures_and_bare_yields_then_ends() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        first, second = loop.create_future(), loop.create_future()
        steps: list[str] = []

        async def handler() -> int:
            steps.append("start")
            a = await first
            await asyncio.sleep(0)  # a bare yield
            steps.append("after the bare yield")
            b = await second
            return int(a + b)

        driven, out = _drive(handler())
        assert driven is not None and steps == ["start"] and out.done == []
        finished = driven.finished()
        first.set_result(1)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert steps == ["start", "after the bare yield"] and out.done == []
        second.set_result(2)
        await asyncio.wait_for(finished, 1)
        assert out.done == [3] and out.failed == []
        assert driven.finished().done()

    assert _run(main) == []


def test_an_error_in_the_dispatch_goes_to_failed() -> None:
    async def main() -> None:
        future = asyncio.get_running_loop().create_future()

        async def handler() -> None:
            await future
            raise ValueError("boom")

        driven, out = _drive(handler())
        assert driven is not None
        future.set_result(None)
        await asyncio.wait_for(driven.finished(), 1)
        assert out.done == [] and [type(e) for e in out.failed] == [ValueError]

    assert _run(main) == []


@pytest.mark.parametrize("future_done_first", [False, True], ids=["waiting", "future-done-callback-scheduled"])
def test_cancel_ends_the_dispatch_once_and_a_late_wake_up_resumes_nothing(future_done_first: bool) -> None:
    """The server stops while a request waits: CancelledError is thrown into it at once. If its future was set just
    before (its callback already scheduled), that callback must not resume the ended coroutine."""
    async def main() -> None:
        future = asyncio.get_running_loop().create_future()
        seen: list[str] = []

        async def handler() -> None:
            try:
                await future
            except asyncio.CancelledError:
                seen.append("cancelled")
                raise
            seen.append("resumed")

        driven, out = _drive(handler())
        assert driven is not None
        if future_done_first:
            future.set_result(None)
        driven.cancel()
        driven.cancel()  # (a second cancel of an ended dispatch does nothing)
        for _ in range(3):
            await asyncio.sleep(0)
        assert seen == ["cancelled"] and out.done == []
        assert [type(e) for e in out.failed] == [asyncio.CancelledError]
        assert driven.finished().done()

    assert _run(main) == []
