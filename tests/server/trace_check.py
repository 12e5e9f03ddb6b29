"""The one adapter between the server tests and the Python trace checker (`kcoord.conformance.traces.pycheck`).

`trace_violations(folder)` checks every trace file under `folder` against the bundled specs and returns a
`TraceCheck`: the rows read per machine, the problems (violations and malformed rows) as one line each, the
violations by (machine, key), and the quarantined rows as (machine, key, reason) read back from the checker's
quarantine folder. It skips the calling test, with the reason, when the checker modules are not there.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

_MODULES = ("kcoord.conformance.traces.pycheck", "kcoord.conformance.traces.job")


@dataclass
class TraceCheck:
    rows: dict[str, int]
    problems: list[str]
    violated_keys: set[tuple[str, str]] = field(default_factory=set)
    quarantined: list[tuple[str, str, str]] = field(default_factory=list)  # (machine, key, reason)


def trace_violations(folder: Path) -> TraceCheck:
    for module in _MODULES:
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"trace checker {module} is not available; traces were recorded but not checked")
    from kcoord.conformance.traces.job import load_machines
    from kcoord.conformance.traces.pycheck import check_paths

    out_dir = folder.parent / "trace-check"
    result = check_paths([str(folder)], load_machines([]), out_dir=str(out_dir))
    problems = [f"{v.check} {v.machine} {v.key} seq {v.seq}: {v.message}" for v in result.violations]
    quarantined = sorted(result.quarantine.counts.items())
    problems += [f"malformed trace rows ({reason}): {count}" for reason, count in quarantined]
    rows = []
    for path in sorted((out_dir / "quarantine").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            raw = json.loads(entry["raw"])
            rows.append((str(entry["machine"]), str(raw.get("key")), str(entry["reason"])))
    return TraceCheck(dict(result.rows_read), problems, {(v.machine, str(v.key)) for v in result.violations}, rows)
