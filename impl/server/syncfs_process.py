"""A `--durability fsync` round's syncfs in a helper process (`KcoordServer._start_flush`): `SyncfsProcess`.

Why a process and not a thread: a thread of this process that waits in syncfs must take the GIL back to wake the loop
(after the syscall returns, and again after `call_soon_threadsafe`'s self-pipe write), and takes it when handed its
next round; each time the loop's thread, busy with requests, loses the GIL at its next system call and sleeps until
the thread lets go (a context switch of the loop, ~10-40 CPU-µs on this VM, i31q). The helper shares no GIL: a round
is one byte written to its stdin, and its end is four bytes (0, or the errno of a failed syncfs) on its stdout, a
descriptor the loop watches with its other sockets (`add_reader`): a loop busy with requests sees it in the same epoll
call, an idle one is woken once.

The helper opens the data directory before it says it is ready, and `KcoordServer.start` starts it before any log is
opened: syncfs reports to that descriptor every write-back error of the file system since (as `RoundSync`'s own
descriptor, see `round_sync.py`). It runs the C library's syncfs on that descriptor per byte read, and ends when its
stdin closes (`close`, or this process's death: no helper outlives the server). Its end seen by the loop (`result`
None: it died, or was killed) counts as a failed syncfs: the round's writes stay pending and later rounds are fsynced
per log (`KcoordServer._syncfs_process_done`).
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import IO, Final

__all__ = ("SyncfsProcess",)

_log = logging.getLogger(__name__)
_READY: Final = b"R"
_RESULT_BYTES: Final = 4
#: the helper: -I -S (no site, no environment: starts in ~20 ms and imports only ctypes)
_HELPER: Final = r"""
import ctypes, os, sys
syncfs = ctypes.CDLL(None, use_errno=True).syncfs
syncfs.argtypes = [ctypes.c_int]
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
os.write(1, b"R")
while os.read(0, 1):
    code = 0 if syncfs(fd) == 0 else (ctypes.get_errno() or 5)
    os.write(1, code.to_bytes(4, "little"))
"""


class SyncfsProcess:
    """`start(data_dir)`; then per round `request()`, and `result()` once `result_fd` is readable; `close()`."""

    __slots__ = ("_process", "_stdin", "_stdout", "requests")

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdin is not None and process.stdout is not None
        self._process = process
        self._stdin: IO[bytes] = process.stdin
        self._stdout: IO[bytes] = process.stdout
        self.requests = 0  # rounds handed to it

    @staticmethod
    def start(data_dir: Path) -> SyncfsProcess:
        """The helper, once it holds its descriptor of `data_dir` (before this returns: see the module)."""
        process = subprocess.Popen([sys.executable, "-I", "-S", "-c", _HELPER, str(data_dir)], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, bufsize=0)
        helper = SyncfsProcess(process)
        if os.read(helper.result_fd, 1) != _READY:
            helper.close()
            raise OSError(errno.EIO, f"the syncfs helper process for {data_dir} did not start "
                                     f"(exit code {process.returncode})")
        return helper

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def result_fd(self) -> int:
        """Readable once the round handed over has ended (or the helper has ended)."""
        return self._stdout.fileno()

    def request(self) -> bool:
        """Sync the file system now (everything written before this call); False if the helper is gone."""
        try:
            os.write(self._stdin.fileno(), b"s")
        except OSError:  # (BrokenPipeError: it died)
            return False
        self.requests += 1
        return True

    def result(self) -> int | None:
        """The round's outcome: 0, the errno of a failed syncfs, or None if the helper ended."""
        data = b""
        while len(data) < _RESULT_BYTES:
            chunk = os.read(self.result_fd, _RESULT_BYTES - len(data))  # (written at once: in one read but in theory)
            if not chunk:
                return None
            data += chunk
        return int.from_bytes(data, "little")

    def close(self) -> None:
        """End the helper (after the round it runs, if any) and wait for it."""
        if self._stdin.closed:
            return
        with contextlib.suppress(OSError):
            self._stdin.close()
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            _log.warning("the syncfs helper process %d did not end in 30 s; killed", self._process.pid)
            self._process.kill()
            self._process.wait()
        self._stdout.close()
