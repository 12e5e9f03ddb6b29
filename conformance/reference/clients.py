"""Apache Kafka's own Java client and command-line tools, driven from Python: the harness of reference clients.

Owns: `JavaHarness` (runs the harness's commands — `conformance/reference/harness/*.java`, compiled by `make` into
`build/kafka/harness/classes` — and returns the JSON lines each prints), `ToolRun`/`ToolResult` and `TOOLS` (Kafka's
command-line tools by their script names, run many to one JVM), and `HarnessError` (one line: what failed and why).
Each command names its broker with `bootstrap`, so the same call runs against `kcoord serve` and the reference Kafka.

Must not import: `kcoord.impl` (Kafka's clients reach a broker through its sockets only).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from .broker import DEFAULT_LIBS, java_binary, kafka_libs

#: where `make` compiles the harness (the repository's ignored build folder)
DEFAULT_CLASSES: Final = Path(__file__).resolve().parents[2] / "build" / "kafka" / "harness" / "classes"
LOG4J_CONFIG: Final = Path(__file__).resolve().parent / "harness" / "log4j2.properties"
#: a client JVM lives seconds: start fast (no C2 compiler, the serial collector) and small
JVM_OPTIONS: Final = ("-Xmx384m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Djava.awt.headless=true")
MAIN_CLASS: Final = "kcoord.harness.Harness"

#: Kafka's tools by the name of their script in Kafka's bin/, and the main class the script runs (Kafka 4.0)
TOOLS: Final[Mapping[str, str]] = {
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-transactions": "org.apache.kafka.tools.TransactionsCommand",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-dump-log": "kafka.tools.DumpLogSegments",
    "kafka-configs": "kafka.admin.ConfigCommand",
    "kafka-features": "org.apache.kafka.tools.FeatureCommand",
}


class HarnessError(Exception):
    """A harness command failed: one line saying which and why (the error it reported, or its stderr's end)."""


@dataclass(frozen=True, slots=True)
class ToolRun:
    """One run of a Kafka tool: its script name (`TOOLS`), its arguments, what it reads on stdin."""

    tool: str
    args: tuple[str, ...]
    stdin: str = ""

    def __post_init__(self) -> None:
        if self.tool not in TOOLS:
            raise ValueError(f"unknown Kafka tool {self.tool!r}: expected one of {', '.join(sorted(TOOLS))}")


@dataclass(frozen=True, slots=True)
class ToolResult:
    run: ToolRun
    exit_code: int  # -1: still running after the timeout
    stdout: str
    stderr: str

    @property
    def lines(self) -> list[str]:
        return self.stdout.splitlines()


class JavaHarness:
    """Runs the compiled harness with Kafka's jars on the class path."""

    def __init__(self, libs: Path | None = None, classes: Path | None = None) -> None:
        self.libs = kafka_libs(libs or DEFAULT_LIBS)
        self.classes = classes or DEFAULT_CLASSES
        if not (self.classes / "kcoord" / "harness" / "Harness.class").exists():
            raise HarnessError(f"the Java harness is not compiled in {self.classes}: run make")
        self.java = java_binary()

    def command_line(self, command: str, options: Mapping[str, object]) -> list[str]:
        argv = [self.java, *JVM_OPTIONS, "-cp", f"{self.classes}:{self.libs}/*",
                f"-Dlog4j2.configurationFile={LOG4J_CONFIG}", MAIN_CLASS, command]
        for name, value in options.items():
            argv += [f"--{name.replace('_', '-')}", str(value).lower() if isinstance(value, bool) else str(value)]
        return argv

    def run(self, command: str, *, stdin: str = "", timeout_s: float = 180.0, **options: object
            ) -> list[dict[str, Any]]:
        """Run one harness command (`producer`, `zombie`, `restart`, `ctp`, `read`, `group`, `tools`, `batch`); its
        events, in order. Options are the command's `--name value` pairs (`transactional_id=` is
        `--transactional-id`)."""
        argv = self.command_line(command, options)
        try:
            done = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired as e:
            raise HarnessError(f"harness {command} did not finish within {timeout_s:.0f} s; it printed: "
                               f"{_text(e.stdout)[-400:]!r}") from None
        events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        errors = [e for e in events if e.get("event") == "error"]
        if done.returncode != 0 or errors:
            why = (f"{errors[-1]['type']}: {errors[-1]['message']}" if errors
                   else (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1])
            raise HarnessError(f"harness {command} failed: {why}")
        return events

    def batch(self, steps: Sequence[tuple[str, Mapping[str, object]]], *, timeout_s: float = 300.0
              ) -> list[list[dict[str, Any]]]:
        """Several commands (`(command, options)`) one after another in one JVM; the events of each, in order. The
        first failure fails the batch (`HarnessError`)."""
        lines = "".join(json.dumps({"command": command, "options": {
            name.replace("_", "-"): str(value).lower() if isinstance(value, bool) else str(value)
            for name, value in options.items()}}) + "\n" for command, options in steps)
        events = self.run("batch", stdin=lines, timeout_s=timeout_s)
        out: list[list[dict[str, Any]]] = [[]]
        for event in events:
            if event.get("event") == "done":
                out.append([])
            else:
                out[-1].append(event)
        if len(out) != len(steps) + 1 or out[-1]:
            raise HarnessError(f"harness batch finished {len(out) - 1} of {len(steps)} commands")
        return out[:-1]

    @contextlib.contextmanager
    def hold(self, *, timeout_s: float = 120.0, **options: object) -> Iterator[list[dict[str, Any]]]:
        """The `hold` command in the background: members of a group that join, own every partition between them
        and stay until the block ends; yields the events up to "settled"."""
        process = subprocess.Popen(self.command_line("hold", options), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, text=True)
        assert process.stdin is not None and process.stdout is not None
        try:
            events: list[dict[str, Any]] = []
            deadline = time.monotonic() + timeout_s
            while not events or events[-1].get("event") != "settled":
                line = process.stdout.readline()  # (the harness's own timeout ends it, and with it this read)
                if not line or time.monotonic() > deadline:
                    raise HarnessError(f"harness hold ended before its group settled: {events[-3:]}")
                if line.startswith("{"):
                    events.append(json.loads(line))
                    if events[-1].get("event") == "error":
                        raise HarnessError(f"harness hold failed: {events[-1]['type']}: {events[-1]['message']}")
            yield events
        finally:
            process.stdin.close()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def tools(self, runs: Sequence[ToolRun], *, timeout_s: float = 60.0) -> list[ToolResult]:
        """Run Kafka's tools one after another in one JVM; one result per run, in order. A run still going after
        `timeout_s` is reported with exit code -1."""
        lines = "".join(json.dumps({"main": TOOLS[r.tool], "args": list(r.args), "stdin": r.stdin}) + "\n"
                        for r in runs)
        events = self.run("tools", stdin=lines, timeout_s=timeout_s * len(runs) + 60,
                          timeout_ms=int(timeout_s * 1000))
        results = [e for e in events if e.get("event") == "tool"]
        if len(results) != len(runs):
            raise HarnessError(f"harness tools answered {len(results)} of {len(runs)} runs")
        return [ToolResult(run, int(e["exit"]), e["stdout"], e["stderr"]) for run, e in zip(runs, results, strict=True)]


def _text(output: str | bytes | None) -> str:
    if isinstance(output, bytes):
        return output.decode(errors="replace")
    return output or ""
