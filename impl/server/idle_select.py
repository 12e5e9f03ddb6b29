"""Where the event loop would sleep: `IdleSelect`, the loop's selector wrapped so that a `--durability fsync` round
begun in a turn (`KcoordServer._start_flush`) is started at the loop's next select, on the loop's thread when the loop
has nothing else to do, on the syncfs thread otherwise.

asyncio's selector loop (`BaseSelectorEventLoop._run_once`) selects once an iteration, with a timeout of 0 when a
callback is ready and else until its next timer: a select that may block is the loop about to sleep. If a round is
then due and no socket is readable either (one `select(0)`), the loop would sleep until the round's thread wakes it
(a self-pipe write, an epoll wake-up and a loop turn: ~43 CPU-µs on the benchmark's VM), so the round's syncfs runs
here instead (the GIL released while it blocks) and the round ends at once; the callbacks it readies (the answers
now durable) run in this same iteration, which reads its ready queue after the select. A select that finds a socket
readable hands the round to the thread, as before: the loop goes on with its work while the disk syncs; so does the
`BUSY_SELECTS_MAX`-th select in a row with a callback ready (the loop's own, such as the pump's turn to sleep, are
let run first: they end in a sleep more often than not).
Only asyncio's own selector loops are wrapped (`install` returns None for uvloop's, whose rounds start on the thread
at once). Must not import: `kcoord.model`.
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = ("BUSY_SELECTS_MAX", "IdleSelect")

BUSY_SELECTS_MAX: Final = 2  # selects with a callback ready that a due round waits through before the thread takes it


class IdleSelect(selectors.BaseSelector):
    """The loop's selector with a look at a due round first (`due`, then `here` when the loop would sleep and no
    socket is readable, else `elsewhere`); everything else is the wrapped selector's."""

    def __init__(self, inner: selectors.BaseSelector, due: Callable[[], bool], here: Callable[[], None],
                 elsewhere: Callable[[], None]) -> None:
        self.inner = inner
        self._due = due
        self._here = here
        self._elsewhere = elsewhere
        self._busy_selects = 0  # selects in a row with a callback ready since the round became due

    @staticmethod
    def install(loop: asyncio.AbstractEventLoop, due: Callable[[], bool], here: Callable[[], None],
                elsewhere: Callable[[], None]) -> IdleSelect | None:
        """Wrap `loop`'s selector (None: not a selector loop of asyncio's; `uninstall` restores it)."""
        inner = getattr(loop, "_selector", None)
        if not isinstance(loop, asyncio.selector_events.BaseSelectorEventLoop) or \
                not isinstance(inner, selectors.BaseSelector):
            return None
        wrapped = IdleSelect(inner, due, here, elsewhere)
        loop._selector = wrapped  # type: ignore[attr-defined]
        return wrapped

    def uninstall(self, loop: asyncio.AbstractEventLoop) -> None:
        assert getattr(loop, "_selector", None) is self, "another selector replaced this one"
        loop._selector = self.inner  # type: ignore[attr-defined]

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if not self._due():
            return self.inner.select(timeout)
        events = self.inner.select(0)
        if events:  # a socket to read: the loop has work
            self._busy_selects = 0
            self._elsewhere()
            return events
        if timeout is not None and timeout <= 0:  # a callback is ready
            self._busy_selects += 1
            if self._busy_selects >= BUSY_SELECTS_MAX:
                self._busy_selects = 0
                self._elsewhere()
            return events
        self._busy_selects = 0
        self._here()  # the loop would sleep: the round runs here and ends (its completions now ready callbacks)
        return self.inner.select(0)

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self.inner.register(fileobj, events, data)

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self.inner.unregister(fileobj)

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self.inner.modify(fileobj, events, data)

    def get_key(self, fileobj: Any) -> selectors.SelectorKey:
        return self.inner.get_key(fileobj)

    def get_map(self) -> Mapping[Any, selectors.SelectorKey]:
        return self.inner.get_map()

    def close(self) -> None:
        self.inner.close()
