"""`SyncfsProcess` (a `--durability fsync` round's syncfs in a helper process): it holds its descriptor of the data
directory once started, answers each request with 0 after a syncfs, ends when its stdin closes; one that died reads
as None and takes no request."""

from __future__ import annotations

import os
import select
import signal
from pathlib import Path

from kcoord.impl.server.syncfs_process import SyncfsProcess


def _answer(helper: SyncfsProcess) -> int | None:
    # (poll, not select: select refuses a descriptor >= 1024, which a test process that opened many logs reaches)
    waiting = select.poll()
    waiting.register(helper.result_fd, select.POLLIN)
    assert waiting.poll(10_000), "no answer from the syncfs helper in 10 s"
    return helper.result()


def test_the_helper_holds_the_data_directory_once_started_and_answers_each_request(tmp_path: Path) -> None:
    helper = SyncfsProcess.start(tmp_path)
    try:
        held = {os.readlink(f"/proc/{helper.pid}/fd/{fd}") for fd in os.listdir(f"/proc/{helper.pid}/fd")}
        assert str(tmp_path) in held  # (opened before `start` returned: before any log opens, see the module)
        assert [helper.request(), _answer(helper), helper.request(), _answer(helper)] == [True, 0, True, 0]
        assert helper.requests == 2
    finally:
        helper.close()
    assert helper._process.returncode == 0
    helper.close()  # (again: nothing)


def test_a_helper_that_died_reads_as_none_and_takes_no_request(tmp_path: Path) -> None:
    helper = SyncfsProcess.start(tmp_path)
    try:
        os.kill(helper.pid, signal.SIGKILL)
        helper._process.wait()
        assert _answer(helper) is None
        assert helper.request() is False and helper.requests == 0
    finally:
        helper.close()
