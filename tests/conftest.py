"""Shared fixtures: one local SparkSession for the whole test session (starting one costs 5–10 s); logging errors
of background threads after a test are not reported."""

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


def pytest_configure(config: pytest.Config) -> None:
    """Background threads of the clients and of py4j log after pytest has closed the streams it captured for a test
    (a reconnect attempt once a test's server stopped, py4j closing its connections at interpreter exit); logging
    then prints "--- Logging error ---" with a traceback for each. Those are not the tests' findings: drop them."""
    logging.raiseExceptions = False
