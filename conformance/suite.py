"""The generated suite, run in process (no pytest): for `kcoord mutate`, the demo and the smoke tests.

Owns: `load_cases` (the committed cases of every driver, from `conformance/generated/<driver>.json`), `run_suite`
(every case through `runner.run_case` with one shared `Session`, optionally stopping at the first failure, with an
order hint so the cases most likely to fail run first) and `SuiteResult`. A case fails when `run_case` raises
anything (a `Divergence`, a failed assertion, or an internal error of the implementation); the failure text is the
case's program in the spec's event names.
Must not import: kcoord.cli.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .coverage import Tally, render_table, tally, visited_items
from .pytest_plugin import load_universes
from .runner import Session, run_case

GENERATED = Path(__file__).resolve().parent / "generated"


@dataclass(frozen=True, slots=True)
class SuiteCase:
    driver: str  # the driver's machine name (DRIVERS key)
    data: Mapping[str, Any]  # the case as committed: id, item, path, expect

    @property
    def id(self) -> str:
        return str(self.data["id"])

    def events(self) -> set[str]:
        """The action names of the case's program (spec events or environment steps)."""
        return {str(a["action"]) for a in self.data["path"]}

    def rows(self) -> set[tuple[str, int]]:
        """(machine, row) of the rows its last step fired."""
        return {(str(e[0]), int(e[2])) for e in self.data["expect"]}


@dataclass(slots=True)
class SuiteResult:
    ran: int = 0
    passed: int = 0
    failures: list[tuple[SuiteCase, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures


def load_cases(directory: Path = GENERATED, drivers: Iterable[str] | None = None) -> list[SuiteCase]:
    wanted = set(drivers) if drivers is not None else None
    out: list[SuiteCase] = []
    for path in sorted(directory.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        driver = str(data["driver"])
        if wanted is not None and driver not in wanted:
            continue
        out += [SuiteCase(driver, c) for c in data["cases"]]
    return out


def run_suite(cases: Sequence[SuiteCase], *, session: Session | None = None, stop_at_first_failure: bool = False,
              first: Callable[[SuiteCase], bool] | None = None, progress: Callable[[int, int], None] | None = None
              ) -> SuiteResult:
    """Run `cases` (those for which `first` holds before the others); `progress(done, total)` after each."""
    session = session or Session()
    ordered = sorted(cases, key=lambda c: 0 if first is not None and first(c) else 1)
    result = SuiteResult()
    for i, case in enumerate(ordered, 1):
        result.ran += 1
        try:
            run_case(case.driver, case.data, session)
        except Exception as e:  # any failure kills: a divergence, an assertion or an internal error
            result.failures.append((case, f"{type(e).__name__}: {e}"))
            if stop_at_first_failure:
                break
        else:
            result.passed += 1
        if progress is not None:
            progress(i, len(ordered))
    return result


def coverage_rows(session: Session, directory: Path = GENERATED) -> list[tuple[str, dict[str, Tally], int]]:
    """The coverage table rows (machine, tallies, excluded) of what `session` visited."""
    visited = visited_items(session.observation)
    rows = []
    for name, u in sorted(load_universes(directory).items()):
        if any(i[1] == name for i in visited):
            rows.append((name, tally(u, visited), len(u.excluded)))
    return rows


def coverage_table(session: Session, directory: Path = GENERATED) -> str:
    return render_table(coverage_rows(session, directory))
