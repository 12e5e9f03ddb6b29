"""The conformance tests under tests/ share the conformance session of the generated suite (reference machines,
observations) and its end-of-run report (`kcoord.conformance.pytest_plugin`)."""

from kcoord.conformance.pytest_plugin import (  # noqa: F401
    conformance_session,
    pytest_sessionfinish,
    pytest_terminal_summary,
)
