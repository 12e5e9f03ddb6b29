"""Shared fixtures: one local SparkSession for the whole test session (starting one costs 5–10 s)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from kcoord.conformance.traces.session import local_session

    session = local_session("local[2]", shuffle_partitions=2)
    yield session
    session.stop()
    # py4j closes its connections in `__del__` at interpreter exit and logs that at INFO, through handlers whose
    # streams pytest has closed by then ("--- Logging error ---" after the summary); nothing after this needs it
    logging.getLogger("py4j").setLevel(logging.WARNING)
