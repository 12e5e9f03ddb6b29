"""kcoord's own log lines out of pytest's capture: a Kafka client thread left running by an earlier test (kafka-python
retries a stopped broker in the background) logs ERRORs into the same capture, so tests that count lines count
kcoord's only."""

from __future__ import annotations

import pytest


def kcoord_lines(caplog: pytest.LogCaptureFixture, level: int, *, exact: bool = False) -> list[str]:
    """The messages kcoord logged at `level` or above (only at `level` with `exact`)."""
    return [r.getMessage() for r in caplog.records if r.name.startswith("kcoord")
            and (r.levelno == level if exact else r.levelno >= level)]
