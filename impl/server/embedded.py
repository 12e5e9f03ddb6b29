"""A `KcoordServer` on its own event loop in a background thread: for tests, benchmarks and embedding.

Owns: `ServerThread` (start, stop, `call` a function on the loop thread — the only safe way to look at the cluster
while it serves — and `run` a coroutine there, e.g. `stop_node`).
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import Any, TypeVar

from .serve import KcoordServer, ServeOptions

__all__ = ("ServerThread",)

T = TypeVar("T")
_TIMEOUT_S = 60.0


class ServerThread:
    """`with ServerThread(options) as server:` serves until the block ends; `server.bootstrap` is where."""

    def __init__(self, options: ServeOptions) -> None:
        self.options = options
        self.server = KcoordServer(options)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="kcoord-serve", daemon=True)
        self._started = False

    def start(self) -> ServerThread:
        self._thread.start()
        try:
            self.run(self.server.start())
        except BaseException:
            self._shutdown_loop()
            raise
        self._started = True
        return self

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        try:
            if self._started:
                self.run(self.server.stop())
        finally:
            self._started = False
            self._shutdown_loop()

    def _shutdown_loop(self) -> None:
        async def cancel_the_rest() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        if self._thread.is_alive():
            with contextlib.suppress(Exception):
                self.run(cancel_the_rest(), 10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(_TIMEOUT_S)
        self._loop.close()

    def run(self, coroutine: Coroutine[Any, Any, T], timeout_s: float = _TIMEOUT_S) -> T:
        """Run `coroutine` on the server's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout_s)

    def call(self, fn: Callable[[], T], timeout_s: float = _TIMEOUT_S) -> T:
        """Run `fn()` on the server's loop thread (between two requests) and return its result."""
        async def invoke() -> T:
            return fn()

        return self.run(invoke(), timeout_s)

    @property
    def bootstrap(self) -> str:
        return self.server.bootstrap

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
