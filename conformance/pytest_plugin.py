"""The pytest side of conformance: the session fixture and the coverage report printed at the end of a run.

Owns: `conformance_session` (one `runner.Session` per pytest session, kept in `config.stash`, so the reference
machines are built once and every lockstep run adds to one `Observation`), `pytest_terminal_summary` (the states,
transitions, pairs and rejections each machine's runs visited, against the universes in the generated files, with
exclusions counted apart; printed once even when several conftest files import it) and `load_universes`.
Imported by `conformance/generated/conftest.py` and `tests/conformance/conftest.py`.
Must not import: kcoord.cli.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .coverage import KINDS, Universe, render_table, tally, visited_items
from .gaps import KNOWN_GAPS
from .runner import Session

GENERATED = Path(__file__).resolve().parent / "generated"
_SESSION = pytest.StashKey[Session]()
_PRINTED = pytest.StashKey[bool]()
_CHECKED = pytest.StashKey[bool]()
_SHORT = pytest.StashKey[list[str]]()


def session_of(config: pytest.Config) -> Session:
    found = config.stash.get(_SESSION, None)
    if found is None:
        found = config.stash[_SESSION] = Session()
    return found


@pytest.fixture(scope="session")
def conformance_session(request: pytest.FixtureRequest) -> Iterator[Session]:
    yield session_of(request.config)


def load_universes(directory: Path = GENERATED) -> dict[str, Universe]:
    """The universes recorded in the generated files: machine → items and exclusions."""
    out: dict[str, Universe] = {}
    for path in sorted(directory.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for name, u in data["universe"].items():
            items = frozenset(tuple(i) for i in u["items"])
            excluded = {tuple(json.loads(k)): v for k, v in u["excluded"].items()}
            out[name] = Universe(name, items, excluded)
    return out


def complete_drivers(session: Session, directory: Path = GENERATED) -> dict[str, tuple[str, ...]]:
    """The drivers whose every generated case ran in this session → the machines they cover (the coverage
    requirement applies to them only: a run of a subset, `-k` or one test, is not held to 100%)."""
    out = {}
    for path in sorted(directory.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        driver = str(data["driver"])
        if session.ran.get(driver, 0) >= len(data["cases"]) > 0:
            out[driver] = tuple(sorted(data["universe"]))
    return out


def shortfalls(session: Session, directory: Path = GENERATED, *, known: bool = False) -> list[str]:
    """Machines of fully-run drivers with less than 100% of their states, transitions or rejections visited (with
    `known`, only those listed in `KNOWN_GAPS`; without, only the others)."""
    visited = visited_items(session.observation)
    universes = load_universes(directory)
    out = []
    for machines in complete_drivers(session, directory).values():
        for name in machines:
            if (name in KNOWN_GAPS) != known:
                continue
            for kind, t in tally(universes[name], visited).items():
                if kind != "pair" and t.percent < 100.0:
                    out.append(f"{name}: {t.covered}/{t.total} {kind}s visited")
    return out


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run when a fully-run driver's machines are not 100% covered (states, transitions, rejections)."""
    found = session.config.stash.get(_SESSION, None)
    if found is None or session.config.stash.get(_CHECKED, False):
        return
    session.config.stash[_CHECKED] = True
    missing = shortfalls(found)
    session.config.stash[_SHORT] = missing
    if missing and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if config.stash.get(_PRINTED, False):
        return
    config.stash[_PRINTED] = True
    session = config.stash.get(_SESSION, None)
    if session is None:
        return
    _print_explored(terminalreporter, session)
    if not session.observation.transitions:
        return
    visited = visited_items(session.observation)
    rows = []
    for name, u in sorted(load_universes().items()):
        if not any(i[1] == name for i in visited):
            continue
        rows.append((name, tally(u, visited), len(u.excluded)))
    if not rows:
        return
    terminalreporter.section("conformance coverage (visited by this run / reachable; excluded: unreachable by "
                             "construction)")
    terminalreporter.write_line(render_table(rows))
    for name, tallies, _ in rows:
        for kind in KINDS:
            missing = tallies[kind].missing
            if missing and kind != "pair":
                shown = ", ".join(str(i[2:]) for i in missing[:8])
                terminalreporter.write_line(f"  {name}: {len(missing)} {kind}s not visited: {shown}"
                                            f"{' ...' if len(missing) > 8 else ''}")
    for line in config.stash.get(_SHORT, []):
        terminalreporter.write_line(f"FAILED conformance coverage below 100%: {line}")
    for line in shortfalls(session, known=True):
        name = line.split(":", 1)[0]
        terminalreporter.write_line(f"KNOWN GAP (not failing the run; see conformance/gaps.py) {line} — "
                                    f"{KNOWN_GAPS[name]}")


def _print_explored(terminalreporter: Any, session: Session) -> None:
    """Visit counts of the hypothesis lockstep machines, per machine: states and transitions (row@state)."""
    obs = session.explored
    if not obs.states:
        return
    terminalreporter.section("lockstep exploration (hypothesis): visits per state and transition")
    for name in sorted({m for m, _ in obs.states}):
        states = sorted(((s, n) for (m, s), n in obs.states.items() if m == name), key=lambda x: -x[1])
        rows = sorted(((f"{r}@{s}", n) for (m, r, s), n in obs.transitions.items() if m == name),
                      key=lambda x: -x[1])
        rejections = sum(n for (m, _, _), n in obs.rejections.items() if m == name)
        terminalreporter.write_line(f"{name}: states " + ", ".join(f"{s}={n}" for s, n in states))
        terminalreporter.write_line(f"{name}: {len(rows)} transitions (row@state=visits) " +
                                    ", ".join(f"{r}={n}" for r, n in rows[:40]) + (" ..." if len(rows) > 40 else "")
                                    + f"; {rejections} rejections")
