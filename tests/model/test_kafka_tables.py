"""The generated valid-previous-state sets equal Kafka's, transcribed in tests/model/kafka_tables/.

A spec edge that Kafka does not have (or a missing one) fails this test; `test_flipped_edge_is_caught` shows it
on a temporary copy of a spec with one transition's target changed.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from types import ModuleType

import pytest

from kcoord.model import ir
from kcoord.model.diagnostics import SourceFile
from kcoord.model.loader import bundled_machines, load_sources

from . import kafka_tables


def reference_tables() -> list[ModuleType]:
    return [importlib.import_module(f"{kafka_tables.__name__}.{info.name}")
            for info in pkgutil.iter_modules(kafka_tables.__path__)]


def table_diff(machine: ir.Machine, reference: ModuleType) -> list[str]:
    """Differences between the spec's valid-previous sets and Kafka's, restricted to the states Kafka names.

    With `EXACT = True` (the default) the spec must also have exactly Kafka's states. `CREATED` (target -> sources)
    lists the spec's edges that stand for an object Kafka creates in that state, not for a transition.
    """
    kafka: dict[str, frozenset[str]] = reference.VALID_PREVIOUS
    known = set(kafka)
    ours = {st.name for st in machine.states}
    problems = []
    if getattr(reference, "EXACT", True) and ours != known:
        problems.append(f"states differ: spec has {sorted(ours - known)} extra, {sorted(known - ours)} missing")
    for target, allowed in sorted(kafka.items()):
        if target not in ours:
            problems.append(f"{target}: not a state of the spec")
            continue
        generated = (machine.valid_previous(target) - getattr(reference, "CREATED", {}).get(target, frozenset())) \
            & known
        if generated != allowed:
            problems.append(f"{target}: spec allows {sorted(generated)}, Kafka allows {sorted(allowed)}")
    return problems


@pytest.mark.parametrize("reference", reference_tables(), ids=lambda m: m.MACHINE)
def test_generated_table_equals_kafka(reference: ModuleType) -> None:
    machines = bundled_machines()
    assert reference.MACHINE in machines, f"no spec for {reference.MACHINE}"
    assert table_diff(machines[reference.MACHINE], reference) == []


def test_every_state_machine_kafka_defines_is_transcribed() -> None:
    assert {"Transaction", "ClassicGroup", "ConsumerGroupMember", "ProducerClient", "StreamsTask"} <= \
        {r.MACHINE for r in reference_tables()}


def _flip(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, f"{old!r} must occur once in the spec"
    return text.replace(old, new)


@pytest.mark.parametrize(("machine", "old", "new"), [
    ("Transaction", "from PrepareEpochFence -> PrepareAbort when server_txn_version < 2",
     "from PrepareEpochFence -> PrepareCommit when server_txn_version < 2"),
    ("Transaction", "from Empty, CompleteCommit, CompleteAbort -> Dead",
     "from Empty, Ongoing, CompleteCommit, CompleteAbort -> Dead"),
])
def test_flipped_edge_is_caught(machine: str, old: str, new: str) -> None:
    """On a temporary copy of the spec with one edge flipped (still a clean spec), the diff against Kafka's table
    is not empty."""
    m = bundled_machines()[machine]
    text = (Path(__file__).resolve().parents[2] / m.path).read_text()
    mutated, diags = load_sources([SourceFile(m.path, _flip(text, old, new))])
    assert not diags.has_errors, diags.render()
    (reference,) = [r for r in reference_tables() if machine == r.MACHINE]
    assert table_diff(mutated[0], reference) != []
