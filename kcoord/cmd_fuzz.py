"""`kcoord conformance-fuzz --bootstrap A --reference B`: the differential fuzzer between two brokers.

Owns only the command line: options, the seed printed first, one line per program, the totals and the shrunk
difference. The work is in `kcoord.conformance.differential`.
"""

from __future__ import annotations

import random
from typing import Annotated

import typer

from .cli import EXIT_PROBLEMS, app, console, host_ports, unreachable_servers, usage_error


@app.command("conformance-fuzz")
def conformance_fuzz(
    bootstrap: Annotated[str, typer.Option(help="The broker to test: HOST:PORT[,HOST:PORT...].")],
    reference: Annotated[str, typer.Option(help="The reference broker (e.g. kcoord kafka-reference).")],
    examples: Annotated[int, typer.Option(help="How many programs to run (fewer once one differs).", min=1)] = 100,
    seed: Annotated[int | None, typer.Option(help="Seed of the programs (default: random, printed).")] = None,
    max_steps: Annotated[int, typer.Option(help="Longest program.", min=1, max=64)] = 16,
    seconds: Annotated[float | None, typer.Option(
        help="Start no program after this many seconds (at least one runs; default: no limit).", min=1)] = None,
    quiet: Annotated[bool, typer.Option("--quiet", help="Only the totals and the difference.")] = False,
) -> None:
    """Send random programs of group and transaction requests from raw clients (JoinGroup, SyncGroup, Heartbeat,
    LeaveGroup with static and dynamic members, ConsumerGroupHeartbeat, OffsetCommit/Fetch, InitProducerId,
    AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn, Produce with producer ids, epochs and
    sequences, client restarts, waits for timeouts) to both brokers in lockstep and compare every answer (ids by
    order of first appearance, node ids, timestamps and error messages by shape). The first program that differs is
    shrunk to a minimal one and printed as steps to add to conformance/differential/regressions.py; exit 1.

    \b
    Example: kcoord conformance-fuzz --bootstrap 127.0.0.1:9092 --reference 127.0.0.1:19092 --examples 500
    kcoord conformance-fuzz --bootstrap 127.0.0.1:9092 --reference 127.0.0.1:19092 --seconds 600
    """
    from kcoord.conformance.differential.channel import ChannelClosed
    from kcoord.conformance.differential.lockstep import describe_program
    from kcoord.conformance.differential.run import fuzz, sides

    for option, value in (("--bootstrap", bootstrap), ("--reference", reference)):
        unreachable = unreachable_servers(host_ports(value, option))
        if unreachable:
            usage_error(f"no broker answers at {option} {value} ({unreachable})")
    chosen = seed if seed is not None else random.randrange(1 << 32)
    out = console()
    out.print(f"seed {chosen}", highlight=False)
    try:
        tested, ref = sides(bootstrap, reference)
        result = fuzz(tested, ref, examples, chosen, max_steps, seconds=seconds,
                      log=None if quiet else lambda line: out.print(line, markup=False, highlight=False))
    except ChannelClosed as e:
        usage_error(f"a broker stopped answering: {e}")
    out.print(result.totals.summary(), highlight=False)
    if result.shrunk is not None:
        difference = result.shrunk.difference
        again = "" if result.reproducible else " (it did not differ again when rerun: timing)"
        out.print(f"the brokers differ{again}; shrunk program:", highlight=False)
        out.print(describe_program(result.shrunk.steps), markup=False, highlight=False)
        out.print(difference.describe(), markup=False, highlight=False)
        out.print(f"as sent: {difference.as_seen()}", markup=False, highlight=False)
        raise typer.Exit(EXIT_PROBLEMS)
