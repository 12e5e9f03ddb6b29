"""`SyncLater` (fsyncs put off to one sync) and `atomic_write` with it."""

from __future__ import annotations

import ctypes
import errno
import os
from pathlib import Path

import pytest

from kcoord.impl.storage import _files
from kcoord.impl.storage._files import SyncLater, atomic_write


def _record_fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every os.fsync from now on, as the path of the descriptor it was given."""
    seen: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        seen.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return seen


def _two_new_files(tmp_path: Path) -> SyncLater:
    """A SyncLater that noted tmp_path's entries and two new files d/a and d/b."""
    later = SyncLater(tmp_path)
    (tmp_path / "d").mkdir()
    later.directory(tmp_path)
    later.write_new(tmp_path / "d" / "a", b"alpha")
    later.write_new(tmp_path / "d" / "b", b"beta")
    return later


def test_one_syncfs_of_the_anchor_s_file_system_for_every_noted_file(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    real_syncfs = _files._syncfs()
    assert real_syncfs is not None  # (Linux)
    synced: list[str] = []
    monkeypatch.setattr(_files, "_syncfs", lambda: lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")),
                                                               real_syncfs(fd))[1])
    fsyncs = _record_fsyncs(monkeypatch)
    later = _two_new_files(tmp_path)
    assert (tmp_path / "d" / "a").read_bytes() == b"alpha" and fsyncs == [] and synced == []
    later.sync()
    assert synced == [str(tmp_path)] and fsyncs == []
    later.sync()  # nothing noted since: nothing to do
    assert synced == [str(tmp_path)]


def test_without_syncfs_each_file_then_each_directory_is_fsynced_once(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_files, "_syncfs", lambda: None)
    fsyncs = _record_fsyncs(monkeypatch)
    later = _two_new_files(tmp_path)
    (tmp_path / "c").touch()
    later.file(tmp_path / "c")
    later.sync()
    assert fsyncs == [str(tmp_path / "d" / "a"), str(tmp_path / "d" / "b"), str(tmp_path / "c"),
                      str(tmp_path), str(tmp_path / "d")]


def test_a_failed_syncfs_raises_its_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(fd: int) -> int:
        ctypes.set_errno(errno.EIO)
        return -1

    monkeypatch.setattr(_files, "_syncfs", lambda: failing)
    later = SyncLater(tmp_path)
    later.write_new(tmp_path / "a", b"x")
    with pytest.raises(OSError, match=r"syncfs of .*Input/output error") as raised:
        later.sync()
    assert raised.value.errno == errno.EIO


def test_atomic_write_with_later_fsyncs_the_new_content_now_and_the_rename_at_the_sync(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The content is durable before the rename (a crash leaves the old or the new file, never an empty one);
    only the directory's fsync waits."""
    monkeypatch.setattr(_files, "_syncfs", lambda: None)
    (tmp_path / "f").write_bytes(b"old")
    fsyncs = _record_fsyncs(monkeypatch)
    later = SyncLater(tmp_path)
    atomic_write(tmp_path / "f", b"new", later=later)
    assert (tmp_path / "f").read_bytes() == b"new" and fsyncs == [str(tmp_path / "f.tmp")]
    later.sync()
    assert fsyncs == [str(tmp_path / "f.tmp"), str(tmp_path)]
    atomic_write(tmp_path / "f", b"newer")
    assert fsyncs[2:] == [str(tmp_path / "f.tmp"), str(tmp_path)]


def test_fsync_file_and_fsync_dir_with_later_wait_for_the_sync(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_files, "_syncfs", lambda: None)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_bytes(b"x")
    fsyncs = _record_fsyncs(monkeypatch)
    later = SyncLater(tmp_path)
    _files.fsync_file(tmp_path / "d" / "f", later)
    _files.fsync_dir(tmp_path, later)
    assert fsyncs == []
    later.sync()
    assert fsyncs == [str(tmp_path / "d" / "f"), str(tmp_path / "d"), str(tmp_path)]
    _files.fsync_file(tmp_path / "d" / "f")  # without one: now
    assert fsyncs[3:] == [str(tmp_path / "d" / "f")]
