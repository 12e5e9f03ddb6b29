"""The generated conformance tests share one conformance session (reference machines, coverage observation) and
print the coverage report at the end of the run (`kcoord.conformance.pytest_plugin`)."""

from kcoord.conformance.pytest_plugin import (  # noqa: F401
    conformance_session,
    pytest_sessionfinish,
    pytest_terminal_summary,
)
