"""Run wire scenarios one after the other and report each as pass, fail or skip.

Owns: `Result` (status, detail and what the scenario observed), `run_scenarios` (a failing scenario never stops the
run; an unexpected exception in a scenario is a failure with its type and message), `render_table` (plain-text
table, the same columns as the CLI's) and `exit_code` (1 if anything failed).
Must not import: `kcoord.impl`, `kcoord.cli`.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from .observe import Observation, Observations
from .scenarios import Scenario
from .target import ScenarioFailed, ScenarioSkipped, Target

_log = logging.getLogger(__name__)
Status = Literal["pass", "fail", "skip"]


@dataclass(frozen=True, slots=True)
class Result:
    name: str
    status: Status
    seconds: float
    detail: str
    observations: tuple[Observation, ...] = ()


def run_one(scenario: Scenario, target: Target) -> Result:
    started = time.monotonic()
    target.observations = Observations()
    try:
        detail = scenario.run(target)
        status: Status = "pass"
    except ScenarioSkipped as e:
        status, detail = "skip", str(e)
    except ScenarioFailed as e:
        status, detail = "fail", str(e)
    except Exception as e:
        _log.debug("scenario %s raised:\n%s", scenario.name, traceback.format_exc())
        status, detail = "fail", f"{type(e).__name__}: {e} ({_where(e)})"
    finally:
        target.reset_admin()
    return Result(scenario.name, status, time.monotonic() - started, detail, tuple(target.observations.items))


def _where(e: BaseException) -> str:
    """Where in the conformance suite an unexpected exception came from: the innermost frame of ours."""
    frames = [f for f in traceback.extract_tb(e.__traceback__) if "/conformance/" in f.filename]
    if not frames:
        return "outside the suite"
    last = frames[-1]
    return f"at {last.filename.rsplit('/conformance/', 1)[-1]}:{last.lineno} in {last.name}"


def run_scenarios(scenarios: Sequence[Scenario], target: Target,
                  progress: Callable[[Result], None] | None = None) -> list[Result]:
    results = []
    for scenario in scenarios:
        result = run_one(scenario, target)
        results.append(result)
        if progress is not None:
            progress(result)
    target.close()
    return results


def render_table(results: Sequence[Result], detail_width: int = 100) -> str:
    width = max([len(r.name) for r in results] + [8])
    lines = [f"{'scenario':<{width}}  result  seconds  detail", f"{'-' * width}  ------  -------  {'-' * 6}"]
    for r in results:
        detail = r.detail if len(r.detail) <= detail_width else r.detail[: detail_width - 1] + "…"
        lines.append(f"{r.name:<{width}}  {r.status.upper():<6}  {r.seconds:7.1f}  {detail}")
    counts = {s: sum(1 for r in results if r.status == s) for s in ("pass", "fail", "skip")}
    lines.append(f"{counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped")
    return "\n".join(lines)


def exit_code(results: Sequence[Result]) -> int:
    return 1 if any(r.status == "fail" for r in results) else 0
