"""`kcoord serve --durability fsync` with one syncfs a round (Linux ≥ 5.8, `--fsync-method auto`): the rounds run in
the helper process (`SyncfsProcess`), nothing is answered before the helper's syncfs returned, and a helper that
ends or a syncfs that fails in it leaves the server answering (on the syncfs thread; an fsync per log)."""

from __future__ import annotations

import logging
import os
import signal
import time
from pathlib import Path

import pytest
from test_durability_modes import FsyncCounter, served, transactions

from kcoord.impl.server import syncfs_process
from kcoord.impl.storage.log import Durability

pytestmark = [pytest.mark.wire]

SLOW_S = 0.3
_SLOW_HELPER = syncfs_process._HELPER.replace("    code = 0 if",
                                              f"    __import__('time').sleep({SLOW_S})\n    code = 0 if")
_FAILING_HELPER = syncfs_process._HELPER.replace("code = 0 if syncfs(fd) == 0 else (ctypes.get_errno() or 5)",
                                                 "code = 5")


def test_rounds_run_in_the_helper_and_nothing_is_answered_before_its_syncfs(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    assert _SLOW_HELPER != syncfs_process._HELPER
    monkeypatch.setattr(syncfs_process, "_HELPER", _SLOW_HELPER)  # (each of its syncfs takes 0.3 s more)
    with served(tmp_path, Durability.fsync()) as server:
        transactions(server.bootstrap, "warm", 1, 0, None)
        helper = server.server._syncfs_process
        assert helper is not None
        before = helper.requests
        counter = FsyncCounter(monkeypatch)
        started = time.monotonic()
        transactions(server.bootstrap, "slow", 1, 0, None)  # init, its warm-up and one more: >= 2 rounds each
        elapsed_s = time.monotonic() - started
        rounds, fsyncs = helper.requests - before, counter.count
        assert server.server._syncfs_worker._threads == []  # (no round on the thread)
    assert fsyncs == 0
    assert rounds >= 4
    assert elapsed_s >= 4 * SLOW_S  # (the answers waited for the helper's rounds, one after the other)


def test_a_helper_that_ends_hands_the_rounds_to_the_syncfs_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    with served(tmp_path, Durability.fsync()) as server:
        transactions(server.bootstrap, "warm", 1, 0, None)
        helper = server.server._syncfs_process
        assert helper is not None
        with caplog.at_level(logging.WARNING, logger="kcoord"):
            os.kill(helper.pid, signal.SIGKILL)
            helper._process.wait()
            transactions(server.bootstrap, "after", 3, 0, None)
        assert server.server._syncfs_process is None
        assert server.server._syncfs_worker._threads != []  # (the rounds since: one syncfs on the thread)
        sync = server.server._round_sync
        assert sync is not None and sync.whole_round
    ended = [r.getMessage() for r in caplog.records if "helper process" in r.getMessage()]
    assert ended == [f"--durability fsync: the syncfs helper process {helper.pid} ended; the rounds' syncfs runs on "
                     "a thread of the server from the next round on"]


def test_a_failed_syncfs_in_the_helper_falls_back_to_an_fsync_per_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(syncfs_process, "_HELPER", _FAILING_HELPER)  # (every syncfs fails: EIO)
    counter = FsyncCounter(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="kcoord"), served(tmp_path, Durability.fsync()) as server:
        transactions(server.bootstrap, "failing", 2, 0, None)  # answered: its writes fsynced per log
        sync = server.server._round_sync
        assert sync is not None and not sync.whole_round
        assert server.server._syncfs_process is None
    assert counter.count > 0
    failed = [r.getMessage() for r in caplog.records if r.getMessage().startswith("syncfs of")]
    assert failed == [f"syncfs of {tmp_path} failed (EIO: Input/output error): each log fsynced from the next round "
                      "on, so that each reports its own write-back error (this round's writes wait for it)"]
