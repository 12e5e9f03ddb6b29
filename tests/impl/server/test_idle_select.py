"""`IdleSelect`: a due round starts at a select of the loop's: on the loop's thread when the loop would sleep (a
select that may block) and no socket is readable; on the thread at a socket readable or after `BUSY_SELECTS_MAX`
selects in a row with a callback ready."""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Mapping
from typing import Any

from kcoord.impl.server.idle_select import BUSY_SELECTS_MAX, IdleSelect


class _Inner(selectors.BaseSelector):
    """A selector whose sockets are `readable` (the events every select returns), recording its timeouts."""

    def __init__(self, readable: list[Any]) -> None:
        self.readable = readable
        self.timeouts: list[float | None] = []

    def select(self, timeout: float | None = None) -> list[Any]:
        self.timeouts.append(timeout)
        return list(self.readable)

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        raise NotImplementedError

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        raise NotImplementedError

    def get_map(self) -> Mapping[Any, selectors.SelectorKey]:
        return {}


def _selects(due: bool, readable: list[Any], timeouts: list[float | None]) -> tuple[list[str], list[Any]]:
    """What ran (here: on the loop's thread; elsewhere: handed to the thread) over a run of selects, and the wrapped
    selector's timeouts."""
    ran: list[str] = []
    inner = _Inner(readable)
    wrapped = IdleSelect(inner, lambda: due and not ran, lambda: ran.append("here"),
                         lambda: ran.append("elsewhere"))
    for timeout in timeouts:
        assert wrapped.select(timeout) == readable
    return ran, inner.timeouts


def test_no_round_due_is_the_wrapped_select() -> None:
    assert _selects(False, [], [0.5]) == ([], [0.5])
    assert _selects(False, ["socket"], [None]) == ([], [None])


def test_a_loop_that_would_sleep_with_no_socket_readable_runs_the_round_itself() -> None:
    assert _selects(True, [], [0.5]) == (["here"], [0, 0])  # (never blocks: the round's completions are ready)
    assert _selects(True, [], [None]) == (["here"], [0, 0])
    assert _selects(True, [], [0, 0.5]) == (["here"], [0, 0, 0])  # the loop's own ready callback first


def test_a_loop_with_work_hands_the_round_to_the_thread() -> None:
    assert _selects(True, ["socket"], [0.5]) == (["elsewhere"], [0])  # a socket is readable: never blocked
    assert _selects(True, [], [0] * BUSY_SELECTS_MAX) == (["elsewhere"], [0] * BUSY_SELECTS_MAX)  # callbacks ready


def test_install_wraps_asyncios_selector_loop_and_uninstall_restores_it() -> None:
    loop = asyncio.new_event_loop()
    try:
        inner = loop._selector  # type: ignore[attr-defined]
        wrapped = IdleSelect.install(loop, lambda: False, lambda: None, lambda: None)
        assert wrapped is not None and loop._selector is wrapped  # type: ignore[attr-defined]
        assert loop.run_until_complete(asyncio.sleep(0.01, "slept")) == "slept"
        wrapped.uninstall(loop)
        assert loop._selector is inner  # type: ignore[attr-defined]
    finally:
        loop.close()
    assert IdleSelect.install(object(), lambda: False, lambda: None, lambda: None) is None  # type: ignore[arg-type]
