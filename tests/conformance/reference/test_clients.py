"""The driver of Kafka's Java client and tools (conformance/reference/clients.py), without a broker: a failing harness
command is one HarnessError line, a tool's exit code and output are reported as the tool gave them (its Exit.exit
does not end the JVM that runs the next tool), and a batch hands back each command's events."""

from __future__ import annotations

import pytest

from kcoord.conformance.reference.clients import TOOLS, HarnessError, JavaHarness, ToolRun


@pytest.fixture(scope="module")
def harness() -> JavaHarness:
    return JavaHarness()


def test_a_failing_command_is_one_line(harness: JavaHarness) -> None:
    with pytest.raises(HarnessError, match=r"^harness nosuch failed: IllegalArgumentException: unknown command "
                                           r"nosuch$"):
        harness.run("nosuch")
    with pytest.raises(HarnessError, match="missing --topic"):
        harness.run("read", bootstrap="127.0.0.1:1")


def test_tools_run_one_after_another_with_their_own_exit_codes(harness: JavaHarness) -> None:
    usage, version, bad = harness.tools([
        ToolRun("kafka-topics", ("--list",)),  # no --bootstrap-server: a usage error, exit 1
        ToolRun("kafka-topics", ("--version",)),
        ToolRun("kafka-consumer-groups", ("--bootstrap-server", "127.0.0.1:1", "--list", "--describe")),
    ], timeout_s=30)
    assert usage.exit_code == 1 and "--bootstrap-server must be specified" in usage.stdout + usage.stderr
    assert version.exit_code == 0 and version.stdout.startswith("4.0.2")
    assert bad.exit_code == 1 and "Option [describe] takes one of these options" in bad.stderr
    assert "ExitCalled" not in usage.stderr + version.stderr + bad.stderr


def test_a_batch_hands_back_each_commands_events(harness: JavaHarness) -> None:
    with pytest.raises(HarnessError, match="tools reads stdin: it cannot run in a batch"):
        harness.batch([("tools", {})])


def test_unknown_tools_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown Kafka tool 'kafka-nothing'"):
        ToolRun("kafka-nothing", ())
    assert TOOLS["kafka-dump-log"] == "kafka.tools.DumpLogSegments"
