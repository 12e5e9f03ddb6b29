"""`kcoord conformance --bootstrap HOST:PORT`: the wire-level conformance suite against any Kafka-compatible broker.

Runs the scenarios of `kcoord.conformance.wire` (real kafka-python, aiokafka and confluent-kafka clients plus raw wire
requests; nothing reaches into kcoord's internals) and prints a pass/fail table; with `--reference` (e.g. Apache
Kafka), the same scenarios on both brokers and a table of what each showed differently
(`kcoord.conformance.wire.compare`). Scenarios that restart the broker or stop one node run only when the operator
says how (`--restart-command`, `--stop-node-command`, and `--reference-…` for the reference); otherwise they are
skipped, not failed. Exit code 0 when nothing failed and nothing differed, 1 when a
scenario failed or the brokers differed, 2 for usage errors.
"""

from __future__ import annotations

import shlex
import subprocess
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn
from rich.table import Table
from rich.text import Text

from .cli import EXIT_PROBLEMS, app, console, host_ports, unreachable_servers, usage_error

if TYPE_CHECKING:
    from kcoord.conformance.wire.compare import Pair
    from kcoord.conformance.wire.runner import Result
    from kcoord.conformance.wire.scenarios import Scenario
    from kcoord.conformance.wire.target import Target


def _run_command(template: str, what: str, **values: object) -> None:
    command = template.format(**values)
    completed = subprocess.run(shlex.split(command), check=False, capture_output=True, text=True)
    if completed.returncode != 0:
        raise RuntimeError(f"{what} command {command!r} exited {completed.returncode}: {completed.stderr.strip()}")


def _hooks(restart_command: str | None, stop_node_command: str | None) -> dict[str, Any]:
    """The operator hooks a `Target` takes, from the shell commands given (none given: the scenario is skipped)."""
    hooks: dict[str, Any] = {"restart": None, "stop_node": None}
    if restart_command is not None:
        def restart() -> None:
            _run_command(restart_command, "restart")
            time.sleep(0.5)
        hooks["restart"] = restart
    if stop_node_command is not None:
        def stop_node(node: int) -> None:
            _run_command(stop_node_command, "stop-node", node=node)
        hooks["stop_node"] = stop_node
    return hooks


def _reachable(bootstrap: str, option: str) -> None:
    unreachable = unreachable_servers(host_ports(bootstrap, option))
    if unreachable:
        usage_error(f"no broker answers at {option} {bootstrap} ({unreachable}); start one first, e.g. "
                    f"{'kcoord kafka-reference' if option == '--reference' else 'kcoord serve'} --port 9092")


@app.command("conformance")
def conformance(
    bootstrap: Annotated[str | None, typer.Option(
        help="The broker to test: HOST:PORT[,HOST:PORT...] (required unless --list).")] = None,
    reference: Annotated[str | None, typer.Option(
        help="A reference broker (e.g. Apache Kafka: kcoord kafka-reference): run every scenario on both and print "
             "what each showed differently; exit 1 on any difference.")] = None,
    scenario: Annotated[list[str] | None, typer.Option(
        "--scenario", "-s", help="Run only scenarios matching this name or glob (repeatable).")] = None,
    list_only: Annotated[bool, typer.Option("--list", help="List the scenarios and exit.")] = False,
    timeout_s: Annotated[float, typer.Option(help="How long one step of a scenario may wait.")] = 60.0,
    restart_command: Annotated[str | None, typer.Option(
        help="Shell command that restarts the broker and returns once it answers again.")] = None,
    stop_node_command: Annotated[str | None, typer.Option(
        help="Shell command that stops one broker; {node} is replaced by its node id.")] = None,
    reference_restart_command: Annotated[str | None, typer.Option(
        help="--restart-command for the --reference broker.")] = None,
    reference_stop_node_command: Annotated[str | None, typer.Option(
        help="--stop-node-command for the --reference broker.")] = None,
) -> None:
    """Run the wire-level conformance scenarios (consumer groups, static membership, KIP-848, admin answers,
    compression, transactions, fencing, restarts, failover, bad input) against a Kafka-compatible broker and print
    a pass/fail table; --list names them all. With --reference, run them on both brokers and print a table of what
    differs: error codes, group states, generations and epochs as they progress, assignment balance and
    exclusivity, committed offsets, what read_committed readers saw, fencing outcomes (ids, node ids and timestamps
    compared by shape only).

    \b
    Example: kcoord conformance --bootstrap 127.0.0.1:9092 --scenario 'transactions*'
             kcoord conformance --bootstrap 127.0.0.1:9092 --reference 127.0.0.1:19092
             kcoord conformance --list
    """
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
    _reachable(bootstrap, "--bootstrap")
    target = Target(bootstrap, timeout_s=timeout_s, **_hooks(restart_command, stop_node_command))
    if reference is None:
        _run_alone(chosen, target)
        return
    _reachable(reference, "--reference")
    _run_compared(chosen, target, Target(reference, timeout_s=timeout_s,
                                         **_hooks(reference_restart_command, reference_stop_node_command)))


def _run_alone(chosen: list[Scenario], target: Target) -> None:
    from kcoord.conformance.wire.runner import exit_code, run_scenarios

    out = console()
    with _progress(out) as progress:
        task = progress.add_task("wire conformance", total=len(chosen))

        def advance(result: Result) -> None:
            progress.update(task, advance=1, description=escape(f"{result.name}: {result.status}"))

        results = run_scenarios(chosen, target, progress=advance)
    table = Table(title=f"wire conformance against {target.bootstrap}")
    for column in ("scenario", "result", "seconds", "detail"):
        table.add_column(column, overflow="fold")
    for r in results:
        table.add_row(r.name, Text(r.status.upper(), _COLOURS[r.status]), f"{r.seconds:.1f}", r.detail)
    out.print(table)
    out.print(_counts(results))
    if exit_code(results):
        raise typer.Exit(EXIT_PROBLEMS)


def _run_compared(chosen: list[Scenario], tested: Target, reference: Target) -> None:
    from kcoord.conformance.wire.compare import run_pairs

    out = console()
    with _progress(out) as progress:
        task = progress.add_task("wire conformance, both brokers", total=len(chosen))

        def advance(pair: Pair) -> None:
            progress.update(task, advance=1, description=escape(
                f"{pair.tested.name}: {pair.tested.status} / {pair.reference.status}"))

        pairs = run_pairs(chosen, tested, reference, progress=advance)
    if not print_comparison(out, pairs, tested.bootstrap, reference.bootstrap):
        raise typer.Exit(EXIT_PROBLEMS)


def print_comparison(out: Console, pairs: Sequence[Pair], tested: str, reference: str) -> bool:
    """Print each scenario's result on both brokers, then the table of differences; True when there is none."""
    from kcoord.conformance.wire.compare import differences

    table = Table(title=f"wire conformance: {tested} (tested) and {reference} (reference)")
    for column in ("scenario", "tested", "reference", "observations", "differences"):
        table.add_column(column, overflow="fold")
    found = differences(pairs)
    for pair in pairs:
        diffs = sum(1 for d in found if d.scenario == pair.tested.name)
        table.add_row(pair.tested.name, Text(pair.tested.status.upper(), _COLOURS[pair.tested.status]),
                      Text(pair.reference.status.upper(), _COLOURS[pair.reference.status]),
                      f"{len(pair.tested.observations)} / {len(pair.reference.observations)}",
                      Text(str(diffs), "red" if diffs else "green"))
    out.print(table)
    out.print(f"tested: {_counts([p.tested for p in pairs])}; reference: {_counts([p.reference for p in pairs])}")
    if not found:
        out.print(f"no difference in {sum(len(p.tested.observations) for p in pairs)} observations")
        return True
    diff_table = Table(title=f"{len(found)} difference(s)")
    for column in ("scenario", "observed", "tested", "reference"):
        diff_table.add_column(column, overflow="fold")
    for d in found:
        diff_table.add_row(d.scenario, d.what, d.tested, d.reference)
    out.print(diff_table)
    return False


_COLOURS = {"pass": "green", "fail": "red", "skip": "yellow"}


def _counts(results: Sequence[Result]) -> str:
    counts = {s: sum(1 for r in results if r.status == s) for s in ("pass", "fail", "skip")}
    return f"{counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped"


def _progress(out: Console) -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                    console=out, transient=True)
