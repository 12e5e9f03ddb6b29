"""`BrokerContext.wait_at_most` (an EndTxn of the fsync mode waits, bounded, for its markers and Complete* record): it
returns once the completion is done or the time is up, whichever comes first, never raises the completion's failure,
and leaves no timer behind."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from kcoord.impl.runtime.completion import Completion
from kcoord.impl.server.broker import BrokerContext


class _Shared:
    def __init__(self) -> None:
        self.kicks = 0

    def kick(self) -> None:
        self.kicks += 1


def _live_timers(loop: asyncio.AbstractEventLoop) -> list[Any]:
    return [h for h in loop._scheduled if not h.cancelled()]  # type: ignore[attr-defined]


def test_returns_when_the_completion_is_done_and_cancels_its_timer() -> None:
    async def main() -> None:
        shared = _Shared()
        ctx = BrokerContext(shared, 0)  # type: ignore[arg-type]
        loop = asyncio.get_running_loop()
        done: Completion[str] = Completion()
        started = time.monotonic()
        waiting = asyncio.ensure_future(ctx.wait_at_most(done, 2.0))
        await asyncio.sleep(0)
        assert not waiting.done() and shared.kicks == 1
        done.set("NONE")
        await asyncio.wait_for(waiting, 5.0)
        assert time.monotonic() - started < 1.0, "released by the completion, not by the timer"
        assert _live_timers(loop) == []

    asyncio.run(main())


def test_returns_when_the_time_is_up_and_ignores_a_later_completion() -> None:
    async def main() -> None:
        ctx = BrokerContext(_Shared(), 0)  # type: ignore[arg-type]
        never: Completion[str] = Completion()
        started = time.monotonic()
        await ctx.wait_at_most(never, 0.05)
        assert time.monotonic() - started >= 0.05
        never.set("NONE")  # after the wait ended: nothing to release
        await asyncio.sleep(0)

    asyncio.run(main())


def test_a_failed_completion_is_not_raised_and_a_done_one_costs_no_wait() -> None:
    async def main() -> None:
        shared = _Shared()
        ctx = BrokerContext(shared, 0)  # type: ignore[arg-type]
        failing: Completion[str] = Completion()
        waiting = asyncio.ensure_future(ctx.wait_at_most(failing, 2.0))
        await asyncio.sleep(0)
        failing.fail(RuntimeError("the coordinator moved"))
        assert await asyncio.wait_for(waiting, 5.0) is None
        await ctx.wait_at_most(Completion.of("NONE"), 2.0)
        assert shared.kicks == 1  # (a done completion: no kick)

    asyncio.run(main())
