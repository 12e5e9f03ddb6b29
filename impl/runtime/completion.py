"""`Completion`: the result of a request that may only be known later (after a durable append, after a rebalance).

Owns: a minimal single-assignment future usable without an event loop (the simulator polls) and from asyncio (the
server awaits `as_future()`). Callbacks run synchronously when the value is set, in registration order.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Generic, TypeVar

from ..errors import IllegalStateError

T = TypeVar("T")


class Completion(Generic[T]):
    __slots__ = ("_callbacks", "_done", "_error", "_value")

    def __init__(self) -> None:
        self._done = False
        self._value: T | None = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[Completion[T]], None]] | None = None  # created by the first `then`

    @classmethod
    def of(cls, value: T) -> Completion[T]:
        c: Completion[T] = cls()
        c.set(value)
        return c

    @property
    def done(self) -> bool:
        return self._done

    def set(self, value: T) -> None:
        self._finish(value, None)

    def fail(self, error: BaseException) -> None:
        self._finish(None, error)

    def _finish(self, value: T | None, error: BaseException | None) -> None:
        if self._done:
            raise IllegalStateError("a completion is set once")
        self._done, self._value, self._error = True, value, error
        callbacks, self._callbacks = self._callbacks, None
        for callback in callbacks or ():
            callback(self)

    def result(self) -> T:
        if not self._done:
            raise IllegalStateError("the result is not known yet (poll the runtime until the completion is done)")
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]

    def then(self, callback: Callable[[Completion[T]], None]) -> None:
        if self._done:
            callback(self)
        elif self._callbacks is None:
            self._callbacks = [callback]
        else:
            self._callbacks.append(callback)

    def map(self, fn: Callable[[T], object]) -> Completion[object]:
        out: Completion[object] = Completion()

        def forward(c: Completion[T]) -> None:
            try:
                out.set(fn(c.result()))
            except BaseException as e:
                out.fail(e)

        self.then(forward)
        return out

    def as_future(self, loop: asyncio.AbstractEventLoop | None = None) -> asyncio.Future[T]:
        loop = loop or asyncio.get_running_loop()
        fut: asyncio.Future[T] = loop.create_future()

        def forward(c: Completion[T]) -> None:
            if fut.cancelled():
                return
            if c._error is not None:
                fut.set_exception(c._error)
            else:
                fut.set_result(c._value)  # type: ignore[arg-type]

        def hand_over(c: Completion[T]) -> None:
            if not loop.is_running():
                forward(c)
            elif _running_loop() is loop:  # set on the loop's own thread (the cluster loop): the future's own
                forward(c)  # callbacks (the awaiting task's wake-up) are scheduled by it, never run inside this call
            else:
                loop.call_soon_threadsafe(forward, c)

        self.then(hand_over)
        return fut


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
