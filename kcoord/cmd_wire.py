"""`kcoord conformance --bootstrap HOST:PORT`: the wire-level conformance suite against any Kafka-compatible broker.

Runs the scenarios of `kcoord.conformance.wire` (real kafka-python, aiokafka and confluent-kafka clients plus raw wire
requests; nothing reaches into kcoord's internals) and prints a pass/fail table. Scenarios that restart the broker or
stop one node run only when the operator says how (`--restart-command`, `--stop-node-command`); otherwise they are
skipped, not failed. Exit code 0 when nothing failed, 1 when a scenario failed, 2 for usage errors.
"""

from __future__ import annotations

import shlex
import subprocess
import time
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn
from rich.table import Table
from rich.text import Text

from .cli import EXIT_PROBLEMS, app, console, host_ports, unreachable_servers, usage_error


def _run_command(template: str, what: str, **values: object) -> None:
    command = template.format(**values)
    completed = subprocess.run(shlex.split(command), check=False, capture_output=True, text=True)
    if completed.returncode != 0:
        raise RuntimeError(f"{what} command {command!r} exited {completed.returncode}: {completed.stderr.strip()}")


@app.command("conformance")
def conformance(
    bootstrap: Annotated[str | None, typer.Option(
        help="The broker to test: HOST:PORT[,HOST:PORT...] (required unless --list).")] = None,
    scenario: Annotated[list[str] | None, typer.Option(
        "--scenario", "-s", help="Run only scenarios matching this name or glob (repeatable).")] = None,
    list_only: Annotated[bool, typer.Option("--list", help="List the scenarios and exit.")] = False,
    timeout_s: Annotated[float, typer.Option(help="How long one step of a scenario may wait.")] = 60.0,
    restart_command: Annotated[str | None, typer.Option(
        help="Shell command that restarts the broker and returns once it answers again.")] = None,
    stop_node_command: Annotated[str | None, typer.Option(
        help="Shell command that stops one broker; {node} is replaced by its node id.")] = None,
) -> None:
    """Run the wire-level conformance scenarios (consumer groups, static membership, KIP-848, admin answers,
    compression, transactions, fencing, restarts, failover, bad input) against a Kafka-compatible broker and print
    a pass/fail table; --list names them all.

    \b
    Example: kcoord conformance --bootstrap 127.0.0.1:9092 --scenario 'transactions*'
             kcoord conformance --list
    """
    from kcoord.conformance.wire.runner import Result, exit_code, run_scenarios
    from kcoord.conformance.wire.scenarios import select
    from kcoord.conformance.wire.target import Target

    try:
        chosen = select(scenario or [])
    except ValueError as e:
        usage_error(str(e))
    out = console()
    if list_only:
        for s in chosen:
            out.print(f"{s.name}: {s.summary}", markup=False, highlight=False)
        return
    if bootstrap is None:
        usage_error("missing option --bootstrap HOST:PORT (the broker to test; only --list runs without one)")
    servers = host_ports(bootstrap, "--bootstrap")
    unreachable = unreachable_servers(servers)
    if unreachable:
        usage_error(f"no broker answers at --bootstrap {bootstrap} ({unreachable}); start one first, e.g. "
                    f"kcoord serve --port 9092")
    restart = None
    if restart_command is not None:
        def restart() -> None:
            _run_command(restart_command, "--restart-command")
            time.sleep(0.5)
    stop_node = None
    if stop_node_command is not None:
        def stop_node(node: int) -> None:
            _run_command(stop_node_command, "--stop-node-command", node=node)
    target = Target(bootstrap, timeout_s=timeout_s, restart=restart, stop_node=stop_node)
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  console=out, transient=True) as progress:
        task = progress.add_task("wire conformance", total=len(chosen))

        def advance(result: Result) -> None:
            progress.update(task, advance=1, description=escape(f"{result.name}: {result.status}"))

        results = run_scenarios(chosen, target, progress=advance)
    table = Table(title=f"wire conformance against {bootstrap}")
    for column in ("scenario", "result", "seconds", "detail"):
        table.add_column(column, overflow="fold")
    colours = {"pass": "green", "fail": "red", "skip": "yellow"}
    for r in results:
        table.add_row(r.name, Text(r.status.upper(), colours[r.status]), f"{r.seconds:.1f}", r.detail)
    out.print(table)
    counts = {s: sum(1 for r in results if r.status == s) for s in ("pass", "fail", "skip")}
    out.print(f"{counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped")
    if exit_code(results):
        raise typer.Exit(EXIT_PROBLEMS)
