"""The same wire scenarios on two brokers, and what differs between what each one showed.

Owns: `Pair` (one scenario's result on the broker under test and on the reference), `run_pairs` (each scenario on the
broker under test, then on the reference), `Difference`, `differences` (a scenario that passed on one broker and not
on the other; an observation made on one side only; an observation whose compared form differs — see
`observe` for the rules) and `render_differences` (the plain-text table; empty input gives "no difference").
Must not import: `kcoord.impl`, `kcoord.cli`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .observe import Observation
from .runner import Result, run_one
from .scenarios import Scenario
from .target import Target

NOT_OBSERVED = "(not observed)"


@dataclass(frozen=True, slots=True)
class Pair:
    tested: Result
    reference: Result


@dataclass(frozen=True, slots=True)
class Difference:
    scenario: str
    what: str
    tested: str
    reference: str


def run_pairs(scenarios: Sequence[Scenario], tested: Target, reference: Target,
              progress: Callable[[Pair], None] | None = None) -> list[Pair]:
    """Each scenario on `tested`, then on `reference` (one broker at a time: a scenario's timings stay its own)."""
    pairs = []
    for scenario in scenarios:
        pair = Pair(run_one(scenario, tested), run_one(scenario, reference))
        pairs.append(pair)
        if progress is not None:
            progress(pair)
    tested.close()
    reference.close()
    return pairs


def _outcome(result: Result) -> str:
    return result.status.upper() if result.status == "pass" else f"{result.status.upper()}: {result.detail}"


def _shown(observation: Observation | None) -> str:
    if observation is None:
        return NOT_OBSERVED
    if observation.compared == observation.seen:
        return observation.seen
    return f"{observation.compared} ({observation.seen})"


def pair_differences(pair: Pair) -> list[Difference]:
    name = pair.tested.name
    out = []
    if pair.tested.status != pair.reference.status:
        out.append(Difference(name, "result", _outcome(pair.tested), _outcome(pair.reference)))
    ours, theirs = dict(_named(pair.tested)), dict(_named(pair.reference))
    both = [*ours, *(n for n in theirs if n not in ours)]
    for what in both:
        a, b = ours.get(what), theirs.get(what)
        if a is None or b is None or a.compared != b.compared:
            out.append(Difference(name, what, _shown(a), _shown(b)))
    return out


def _named(result: Result) -> list[tuple[str, Observation]]:
    return [(o.name, o) for o in result.observations]


def differences(pairs: Sequence[Pair]) -> list[Difference]:
    return [d for pair in pairs for d in pair_differences(pair)]


def render_differences(found: Sequence[Difference], tested: str = "tested", reference: str = "reference",
                       width: int = 60) -> str:
    """One row per difference: scenario, what was observed, the tested broker's answer, the reference's."""
    if not found:
        return "no difference"

    def cut(text: str) -> str:
        return text if len(text) <= width else text[: width - 1] + "…"

    columns = ("scenario", "observed", tested, reference)
    rows = [(d.scenario, d.what, cut(d.tested), cut(d.reference)) for d in found]
    widths = [max(len(r[i]) for r in [columns, *rows]) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.append(f"{len(found)} difference(s) in {len({d.scenario for d in found})} scenario(s)")
    return "\n".join(lines)
