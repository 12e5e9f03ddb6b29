"""A data directory on a disk that can be filled up and freed again, for the full-disk tests.

Two ways, the same interface (`Disk.fill()`, `Disk.free()`):
- `tmpfs`: a real 16 MiB tmpfs mounted on the test's folder (needs root; skipped otherwise): writes fail with the
  kernel's ENOSPC once a filler file has taken every free page (a file's last page may still take a few bytes);
- `seam`: an injected failure at the OS-call seam (`os.write` of a file under the folder raises ENOSPC while the
  disk is "full"), which runs anywhere.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

_CHUNKS = (1 << 20, 64 << 10, 4 << 10, 1)


class Disk:
    def __init__(self, path: Path, fill: Callable[[], None], free: Callable[[], None]) -> None:
        self.path = path
        self.fill = fill
        self.free = free


def _fill_tmpfs(filler: Path) -> None:
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        for chunk in _CHUNKS:
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, bytes(chunk))
    finally:
        os.close(fd)


@contextlib.contextmanager
def tmpfs_disk(folder: Path) -> Iterator[Disk]:
    folder.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (the 'seam' variant runs instead)")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(folder)], capture_output=True,
                             text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {mounted.stderr.strip()}")
    filler = folder / "filler"
    try:
        yield Disk(folder / "data", lambda: _fill_tmpfs(filler), lambda: filler.unlink(missing_ok=True))
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


@contextlib.contextmanager
def seam_disk(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Disk]:
    folder.mkdir()
    full = [False]
    real_write = os.write
    prefix = str(folder.resolve())

    def on_disk(fd: int) -> bool:
        try:
            return os.readlink(f"/proc/self/fd/{fd}").startswith(prefix)
        except OSError:
            return False

    def write(fd: int, data: bytes | memoryview) -> int:  # type: ignore[type-arg]
        if full[0] and len(data) and on_disk(fd):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", write)

    def set_full(value: bool) -> None:
        full[0] = value

    yield Disk(folder / "data", lambda: set_full(True), lambda: set_full(False))


@contextlib.contextmanager
def make_disk(kind: str, folder: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Disk]:
    """A `tmpfs` or `seam` disk on `folder` (made here), for a test fixture."""
    maker = tmpfs_disk(folder) if kind == "tmpfs" else seam_disk(folder, monkeypatch)
    with maker as made:
        yield made
